# SPDX-License-Identifier: Apache-2.0
"""Bisect an absorption: the first upstream commit where a fix's
FAIL_TO_PASS tests pass without its runtime change.

The fix's FAIL_TO_PASS tests are measured on the fork as every proof does
(its red commit against HEAD); each probe is upstream commit ``C`` with the
fix's test files as they are at HEAD (their current text, refreshed for
renamed APIs, not the text of the first pin), run in the rebase's scratch
worktree through the result cache. The commits come from the line's git
upstream, fetched down to the pinned one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from forkkit.config import ForkConfig, load_config
from forkkit.errors import ForkkitError
from forkkit.fork.fixes import (
    FixSet,
    focused_targets,
    load_fixes,
    red_commit,
    runtime_diffs,
    test_diffs,
)
from forkkit.fork.state import ForkTree
from forkkit.fork.tree import materialize
from forkkit.output.progress import say
from forkkit.patches.fixes import Fix
from forkkit.patches.retired import RETIRED_FILE, parse_retired
from forkkit.patches.testids import node_id
from forkkit.pin import GitPin, public_url
from forkkit.services.bisect.model import BisectResult, Step, first_absorbed
from forkkit.services.bisect.record import record_answers
from forkkit.services.bisect.releases import release_chain
from forkkit.services.rebase.absorb import semantic_verdict
from forkkit.services.rebase.model import Options
from forkkit.services.rebase.semantic import SemanticBench
from forkkit.testing.classify import classify
from forkkit.vcs import Repo, fetch_history, fetch_rev
from forkkit.vcs.overlay import apply_patches_commit

_BAD_REF = "refs/forkkit/bisect/bad"


@dataclass(frozen=True, kw_only=True)
class BisectOptions:
    """What to bisect: one fix, between two upstream revisions."""

    fix: str | None = None  # the series' only fix when None
    good: str = ""  # default: the line's pinned commit
    bad: str = ""  # default: the head of the branch the line follows
    # the fix's test files as another line carries them (its fork.toml): the
    # current text, refreshed for upstream's renamed test helpers
    tests_from: Path | None = None
    # over releases instead of git commits: every release on the index after
    # the (sdist) pin, up to this one (NAME==VERSION), one commit each
    until: str = ""
    timeout: float | None = None
    record: bool = False  # write a measured answer into patches/retired.toml


def _range(repo: Repo, git: GitPin, opts: BisectOptions) -> tuple[str, str, list[str]]:
    """The good and bad commits (fetched, the history down to good) and the
    first-parent commits after good up to bad, oldest first."""
    good = opts.good or git.commit
    if not good:
        raise ForkkitError("bisect: the line pins no commit; pass --good REV")
    say(f"fetching {git.url} from {good[:12]} to {opts.bad or git.rev}")
    good = fetch_rev(repo, url=git.url, rev=good)  # the history stops there
    bad = fetch_history(repo, url=git.url, rev=opts.bad or git.rev, ref=_BAD_REF)
    if not repo.is_ancestor(good, bad):
        raise ForkkitError(
            f"bisect: {good[:12]} is not an ancestor of {bad[:12]}; pass a --good "
            "the fix is needed on and a later --bad"
        )
    return good, bad, repo.commits(f"{good}..{bad}", first_parent=True)


def _fail_to_pass(
    bench: SemanticBench, red: str, green: str, *, fix: Fix, targets: Sequence[str]
) -> tuple[str, ...]:
    """The fix's FAIL_TO_PASS tests on its pin: its red against the fork."""
    f2p = classify(
        bench.run_tests(red, targets, f"{fix.id}-red"),
        bench.run_tests(green, targets, f"{fix.id}-green"),
    ).ids("FAIL_TO_PASS")
    if not f2p:
        raise ForkkitError(
            f"fix {fix.id}: no FAIL_TO_PASS test on the pin, so nothing "
            "tells where upstream took it; prove it first (forkkit red-green)"
        )
    return tuple(f2p)


@dataclass(frozen=True, kw_only=True)
class TestText:
    """One text of the fix's tests: where it comes from, its test changes
    (each patch's diff of the test files, applied to the probed commit as a
    patch, so upstream's own changes to those files stay) and the pytest
    targets of its FAIL_TO_PASS tests."""

    label: str  # "the pin's" or the other line's fork.toml
    diffs: tuple[str, ...]
    targets: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class _Prober:
    """One proof of the bisection: upstream ``commit`` with the fix's tests,
    in the first of their texts that measures anything there."""

    repo: Repo
    bench: SemanticBench
    fix: str
    texts: tuple[TestText, ...]
    fail_to_pass: tuple[str, ...]
    # the other fixes' runtime changes, per patch in series order: the fix is
    # measured as its red is, with every other fix kept where it applies
    others: tuple[tuple[str, str], ...] = ()

    def __call__(self, commit: str) -> Step:
        subject = self.repo.message(commit).split("\n", 1)[0]
        say(f"proving {commit[:12]} {subject}")
        kept = apply_patches_commit(
            self.repo,
            onto=commit,
            patches=[diff for _, diff in self.others],
            message=f"bisect: the other fixes on upstream {commit[:12]}\n",
        )
        missing = tuple(self.others[i][0] for i in kept.missing)
        step = None
        for text in self.texts:
            step = self._run(
                commit, subject, base=kept.commit, text=text, missing=missing
            )
            if not step.broken:
                break
            say(f"{commit[:12]}: {text.label} tests prove nothing ({step.broken})")
        assert step is not None
        return step

    def _run(
        self,
        commit: str,
        subject: str,
        *,
        base: str,
        text: TestText,
        missing: tuple[str, ...],
    ) -> Step:
        which = "pin" if text is self.texts[0] else "current"
        f2p = self.fail_to_pass
        name = f"bisect-{self.fix}-{commit[:12]}-{which}"
        tested = apply_patches_commit(
            self.repo,
            onto=base,
            patches=text.diffs,
            message=f"bisect: fix {self.fix}'s tests on upstream {commit[:12]}\n",
        )
        if tested.missing:
            why = "its test changes do not apply there"
            return Step(commit, subject, False, (), f2p, broken=why, tests=text.label)
        probe = tested.commit
        try:
            run = self.bench.run_tests(probe, text.targets, name)
        except ForkkitError:  # not even collected: an import broke
            why = "its tests are not collected there: see the run's log"
            return Step(commit, subject, False, (), f2p, broken=why, tests=text.label)
        check = semantic_verdict(f2p, f2p, run)
        broken = ""
        if check.broken and not check.failed:
            broken = f"{len(check.broken)} fail otherwise than by an assertion"
        elif check.failed and missing:
            broken = "other fixes' patches do not apply there: " + ", ".join(missing)
        return Step(
            commit=commit,
            subject=subject,
            absorbed=check.absorbed,
            passed=check.passed,
            failed=check.failed + check.broken,
            broken=broken,
            tests=text.label,
        )


def _commits(
    cfg: ForkConfig, repo: Repo, opts: BisectOptions
) -> tuple[str, str, list[str], str]:
    """Good, bad, the commits after good up to bad, and where they come from
    (the releases on the index, or the line's git upstream)."""
    if opts.until:
        good, bad, commits = release_chain(cfg, repo, until=opts.until)
        return (
            good,
            bad,
            commits,
            f"the releases on {public_url(cfg.upstream.index_url)}",
        )
    git = cfg.upstream.commit_pin
    if not git.url:
        raise ForkkitError(
            f"{cfg.path.name} [upstream]: no git_url to bisect; set it, or "
            "bisect over releases (--until NAME==VERSION)"
        )
    good, bad, commits = _range(repo, git, opts)
    return good, bad, commits, public_url(git.url)


def bisect(cfg: ForkConfig, opts: BisectOptions) -> BisectResult:
    """Find the first commit in good..bad that absorbs the fix."""
    tree = materialize(cfg)
    repo = Repo(tree.path)
    fixes = load_fixes(cfg)
    fix = fixes.get(opts.fix) if opts.fix else fixes.one()
    good, bad, commits, where = _commits(cfg, repo, opts)
    with SemanticBench(cfg=cfg, opts=Options(timeout=opts.timeout), repo=repo) as bench:
        targets = focused_targets(tree, fixes, fix, head=tree.head)
        f2p = _fail_to_pass(
            bench,
            red_commit(tree, fixes, fix, head=tree.head),
            tree.head,
            fix=fix,
            targets=targets,
        )
        texts = [_text(tree, fixes, fix, f2p=f2p, targets=targets, label="the pin's")]
        if opts.tests_from is not None:
            line_tree, line_fixes = _test_source(repo, other=opts.tests_from)
            label = _shown(cfg, opts.tests_from)
            theirs = line_fixes.get(fix.id)
            texts.append(
                _text(
                    line_tree,
                    line_fixes,
                    theirs,
                    f2p=f2p,
                    targets=targets,
                    label=label,
                )
            )
        probe = _Prober(
            repo=repo,
            bench=bench,
            fix=fix.id,
            texts=tuple(texts),
            fail_to_pass=f2p,
            others=_other_fixes(tree, fixes, fix),
        )
        found = first_absorbed(commits, probe)
    by_commit = {s.commit: s for s in found.steps}
    first = None if found.index is None else by_commit[commits[found.index]]
    return BisectResult(
        fix=fix.id,
        url=where,
        releases=bool(opts.until),
        good=good,
        bad=bad,
        commits=len(commits),
        fail_to_pass=f2p,
        steps=found.steps,
        first=first,
        unmeasured=tuple(by_commit[commits[i]] for i in found.unmeasured),
        tests_from=_shown(cfg, opts.tests_from),
        recorded=_recorded(_records_of(cfg, opts), fix.id),
    )


def _records_of(cfg: ForkConfig, opts: BisectOptions) -> ForkConfig:
    """The config whose patches/retired.toml holds the fix's records: the
    line the tests come from (the project, where the fix was retired), or
    this one."""
    return load_config(opts.tests_from) if opts.tests_from else cfg


def _recorded(cfg: ForkConfig, fid: str) -> str:
    """Where ``cfg``'s retirement records say upstream took the fix ("": it
    has none)."""
    path = cfg.patches_dir / RETIRED_FILE
    if not path.is_file():
        return ""
    found = {
        r.applied_upstream
        for r in parse_retired(path.read_text(), where=str(path))
        if r.fix == fid
    }
    return ", ".join(sorted(found))


def _other_fixes(
    tree: ForkTree, fixes: FixSet, fix: Fix
) -> tuple[tuple[str, str], ...]:
    """Every other fix's runtime change, per patch, in series order."""
    diffs = {
        patch.name: diff
        for other in fixes.fixes
        if other.id != fix.id
        for patch, diff in runtime_diffs(tree, fixes, other)
    }
    return tuple((p.name, diffs[p.name]) for p in fixes.patches if p.name in diffs)


def _text(
    tree: ForkTree,
    fixes: FixSet,
    fix: Fix,
    *,
    f2p: Sequence[str],
    targets: Sequence[str],
    label: str,
) -> TestText:
    """The series' test changes as ``tree`` carries them (every fix's, as the
    fix's red has them: a test file may hold several fixes' tests), and the
    targets of ``fix``'s FAIL_TO_PASS tests (its focused targets where an id
    names no file)."""
    nodes = [node_id(t, set(fix.test_files)) for t in f2p]
    return TestText(
        label=label,
        diffs=tuple(diff for _, diff in test_diffs(tree, fixes, fixes.whole())),
        targets=tuple(targets) if None in nodes else tuple(n for n in nodes if n),
    )


def _test_source(repo: Repo, *, other: Path) -> tuple[ForkTree, FixSet]:
    """Another line that carries the fix: its fork tree (its commits fetched
    into this repository, for 3-way merges of its test changes) and fixes."""
    line = load_config(other)
    tree = materialize(line)
    say(f"the fix's tests as {line.line_label} carries them ({tree.head[:12]})")
    fetch_rev(repo, url=str(tree.path), rev=tree.head)
    return tree, load_fixes(line)


def _shown(cfg: ForkConfig, other: Path | None) -> str:
    """The other line's config, relative to this one's folder."""
    if other is None:
        return ""
    return os.path.relpath(other.absolute(), cfg.root)


def bisect_fixes(cfg: ForkConfig, opts: BisectOptions) -> tuple[BisectResult, ...]:
    """``opts.fix``, or every fix of the series, each bisected alone."""
    ids = [opts.fix] if opts.fix else [f.id for f in load_fixes(cfg).pick(None)]
    results = tuple(bisect(cfg, replace(opts, fix=fid)) for fid in ids)
    if not opts.record:
        return results
    return record_answers(_records_of(cfg, opts), results, held=cfg.root)
