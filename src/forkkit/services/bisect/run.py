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
from collections.abc import Mapping, Sequence
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
)
from forkkit.fork.state import ForkTree
from forkkit.fork.tree import materialize
from forkkit.output.progress import say
from forkkit.patches.fixes import Fix
from forkkit.patches.testids import node_id
from forkkit.pin import GitPin, public_url
from forkkit.services.bisect.model import BisectResult, Step, first_absorbed
from forkkit.services.bisect.releases import release_chain
from forkkit.services.rebase.absorb import semantic_verdict
from forkkit.services.rebase.model import Options
from forkkit.services.rebase.semantic import SemanticBench
from forkkit.testing.classify import classify
from forkkit.vcs import Repo, fetch_history, fetch_rev, merge
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
class _Prober:
    """One proof of the bisection: upstream ``commit`` with the fix's tests."""

    repo: Repo
    bench: SemanticBench
    fix: str
    tests: Mapping[str, merge.Entry | None]
    targets: Sequence[str]
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
        msg = f"bisect: fix {self.fix}'s tests on upstream {commit[:12]}"
        probe = merge.overlay(
            self.repo, base=kept.commit, files=self.tests, message=msg
        )
        f2p = self.fail_to_pass
        try:
            run = self.bench.run_tests(probe, self.targets, f"bisect-{commit[:12]}")
        except ForkkitError:  # not even collected: an import broke
            why = "its tests are not collected there: see the run's log"
            return Step(commit, subject, False, (), f2p, broken=why)
        check = semantic_verdict(f2p, f2p, run)
        missing = [self.others[i][0] for i in kept.missing]
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
        )


def bisect(cfg: ForkConfig, opts: BisectOptions) -> BisectResult:
    """Find the first commit in good..bad that absorbs the fix."""
    tree = materialize(cfg)
    repo = Repo(tree.path)
    fixes = load_fixes(cfg)
    fix = fixes.get(opts.fix) if opts.fix else fixes.one()
    if opts.until:
        good, bad, commits = release_chain(cfg, repo, until=opts.until)
        where = f"the releases on {public_url(cfg.upstream.index_url)}"
    else:
        git = cfg.upstream.commit_pin
        if not git.url:
            raise ForkkitError(
                f"{cfg.path.name} [upstream]: no git_url to bisect; set it, or "
                "bisect over releases (--until NAME==VERSION)"
            )
        good, bad, commits = _range(repo, git, opts)
        where = public_url(git.url)
    with SemanticBench(cfg=cfg, opts=Options(timeout=opts.timeout), repo=repo) as bench:
        targets = focused_targets(tree, fixes, fix, head=tree.head)
        f2p = _fail_to_pass(
            bench,
            red_commit(tree, fixes, fix, head=tree.head),
            tree.head,
            fix=fix,
            targets=targets,
        )
        source, files = _test_source(repo, tree.head, fix, other=opts.tests_from)
        nodes = [node_id(t, set(files)) for t in f2p]
        probe = _Prober(
            repo=repo,
            bench=bench,
            fix=fix.id,
            tests=merge.entries(repo, list(files), rev=source),
            targets=targets if None in nodes else tuple(n for n in nodes if n),
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
    )


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


def _test_source(
    repo: Repo, head: str, fix: Fix, *, other: Path | None
) -> tuple[str, tuple[str, ...]]:
    """Where the probes' test files come from: this fork's HEAD, or the HEAD
    of another line that carries the fix (fetched into this repository)."""
    if other is None:
        return head, fix.test_files
    line = load_config(other)
    tree = materialize(line)
    theirs = load_fixes(line).get(fix.id)
    say(f"the fix's tests as {line.line_label} carries them ({tree.head[:12]})")
    commit = fetch_rev(repo, url=str(tree.path), rev=tree.head)
    return commit, theirs.test_files


def _shown(cfg: ForkConfig, other: Path | None) -> str:
    """The other line's config, relative to this one's folder."""
    if other is None:
        return ""
    return os.path.relpath(other.absolute(), cfg.root)


def bisect_fixes(cfg: ForkConfig, opts: BisectOptions) -> tuple[BisectResult, ...]:
    """``opts.fix``, or every fix of the series, each bisected alone."""
    ids = [opts.fix] if opts.fix else [f.id for f in load_fixes(cfg).pick(None)]
    return tuple(bisect(cfg, replace(opts, fix=fid)) for fid in ids)
