# SPDX-License-Identifier: Apache-2.0
"""Bisect an absorption: the first upstream commit (or release) where a
fix's FAIL_TO_PASS tests pass without its runtime change.

The fix's FAIL_TO_PASS tests are measured on the fork as every proof does
(its red commit against HEAD). Each probe is built as that red is: upstream
commit ``C``, every other fix's runtime change where it applies, and the
series' test changes applied as patches (as the pin carries them, or, where
those prove nothing, as another line carries them now), run in one scratch
worktree through the result cache. The range (a git line's commits, fetched
down to the pinned one, or the releases after an sdist pin), the other
line's tests and the retirement records are read once for every fix.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from forkkit.config import load_config
from forkkit.errors import ForkkitError
from forkkit.fork.fixes import (
    FixSet,
    changed_classes,
    focused_targets,
    red_commit,
    runtime_diffs,
    test_diffs,
)
from forkkit.fork.state import ForkTree
from forkkit.fork.tree import materialize
from forkkit.line import Line
from forkkit.output.progress import say
from forkkit.patches.fixes import Fix
from forkkit.patches.retired import RETIRED_FILE, parse_retired
from forkkit.patches.testids import node_id
from forkkit.pin import GitPin, public_url
from forkkit.services.bisect.model import BisectResult, first_absorbed
from forkkit.services.bisect.probe import Prober, TestText
from forkkit.services.bisect.record import record_answers
from forkkit.services.bisect.releases import release_chain
from forkkit.services.rebase.model import Options
from forkkit.services.rebase.semantic import SemanticBench
from forkkit.testing.classify import Reason, classify
from forkkit.vcs import Repo, fetch_history, fetch_rev

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
class _Span:
    """What every fix of one bisection is searched over."""

    good: str
    bad: str
    commits: tuple[str, ...]  # after good up to bad, oldest first
    where: str  # how reports name where they come from
    releases: bool


def _commits(line: Line, repo: Repo, opts: BisectOptions) -> _Span:
    """The range every fix is searched over: the releases after the pin on
    the index (``--until``), or the line's git upstream (``--good/--bad``)."""
    if opts.until:
        good, bad, commits = release_chain(line, repo, until=opts.until)
        where = f"the releases on {public_url(line.upstream.index_url)}"
        return _Span(
            good=good, bad=bad, commits=tuple(commits), where=where, releases=True
        )
    git = line.upstream.commit_pin
    if not git.url:
        raise ForkkitError(
            f"{line.path.name} [upstream]: no git_url to bisect; set it, or "
            "bisect over releases (--until NAME==VERSION)"
        )
    good, bad, commits = _range(repo, git, opts)
    return _Span(
        good=good,
        bad=bad,
        commits=tuple(commits),
        where=public_url(git.url),
        releases=False,
    )


@dataclass(frozen=True, kw_only=True)
class _Bisection:
    """What the fixes of one bisection share: the fork, its range, the other
    line's tests, the records and the bench the proofs run on."""

    line: Line
    opts: BisectOptions
    tree: ForkTree
    fixes: FixSet
    span: _Span
    bench: SemanticBench
    current: tuple[ForkTree, FixSet] | None  # the line of --tests-from
    recorded: Mapping[str, str]  # fix id -> applied_upstream in retired.toml

    def one(self, fix: Fix) -> BisectResult:
        """Find the first commit of the range that absorbs ``fix``."""
        tree, fixes, span = self.tree, self.fixes, self.span
        targets = focused_targets(tree, fixes, fix, head=tree.head)
        red = red_commit(tree, fixes, fix, head=tree.head)
        f2p = _fail_to_pass(self.bench, red, tree.head, fix=fix, targets=targets)
        texts = [_text(tree, fixes, fix, f2p=f2p, targets=targets, label="the pin's")]
        if self.current is not None:
            line_tree, line_fixes = self.current
            theirs = line_fixes.get(fix.id)
            label = _shown(self.line, self.opts.tests_from)
            texts.append(
                _text(
                    line_tree, line_fixes, theirs, f2p=f2p, targets=targets, label=label
                )
            )
        probe = Prober(
            repo=tree.repo,
            bench=self.bench,
            fix=fix.id,
            texts=tuple(texts),
            fail_to_pass=f2p,
            reason=Reason(
                runtime=fix.runtime_files,
                raises=fix.raises,
                classes=changed_classes(tree, fixes, fix),
            ),
            others=_other_fixes(tree, fixes, fix),
            runtime=tuple(d for _, d in reversed(runtime_diffs(tree, fixes, fix))),
        )
        found = first_absorbed(span.commits, probe)
        by_commit = {s.commit: s for s in found.steps}
        first = None if found.index is None else by_commit[span.commits[found.index]]
        return BisectResult(
            fix=fix.id,
            url=span.where,
            releases=span.releases,
            good=span.good,
            bad=span.bad,
            commits=len(span.commits),
            fail_to_pass=f2p,
            tests=tuple(node_id(t, set(fix.test_files)) or t for t in f2p),
            steps=found.steps,
            first=first,
            unmeasured=tuple(by_commit[span.commits[i]] for i in found.unmeasured),
            tests_from=_shown(self.line, self.opts.tests_from),
            recorded=self.recorded.get(fix.id, ""),
        )


def bisect(line: Line, opts: BisectOptions) -> tuple[BisectResult, ...]:
    """``opts.fix``, or every fix of the series, each bisected alone over the
    same range; with ``opts.record``, the answers go into the records."""
    tree = materialize(line.config)
    fixes = line.fixes
    chosen = (fixes.get(opts.fix),) if opts.fix else fixes.pick(None)
    span = _commits(line, tree.repo, opts)
    # the line --tests-from names also holds the fix's retirement records
    other = Line.of(load_config(opts.tests_from)) if opts.tests_from else None
    current = _test_source(tree.repo, line=other) if other else None
    records = other or line
    with SemanticBench(
        line=line, opts=Options(timeout=opts.timeout), repo=tree.repo
    ) as bench:
        run = _Bisection(
            line=line,
            opts=opts,
            tree=tree,
            fixes=fixes,
            span=span,
            bench=bench,
            current=current,
            recorded=_recorded(records),
        )
        results = tuple(run.one(fix) for fix in chosen)
    if not opts.record:
        return results
    return record_answers(records, results, held=line.root)


def _recorded(line: Line) -> dict[str, str]:
    """Where ``line``'s retirement records say upstream took each fix (fix
    id -> applied_upstream; several records of one fix joined)."""
    path = line.patches_dir / RETIRED_FILE
    if not path.is_file():
        return {}
    found: dict[str, set[str]] = {}
    for r in parse_retired(path.read_text(), where=str(path)):
        found.setdefault(r.fix, set()).add(r.applied_upstream)
    return {fix: ", ".join(sorted(seen)) for fix, seen in found.items()}


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


def _test_source(repo: Repo, *, line: Line) -> tuple[ForkTree, FixSet]:
    """Another line that carries the fix: its fork tree (its commits fetched
    into this repository, for 3-way merges of its test changes) and fixes."""
    tree = materialize(line.config)
    say(f"the fix's tests as {line.name} carries them ({tree.head[:12]})")
    fetch_rev(repo, url=str(tree.path), rev=tree.head)
    return tree, line.fixes


def _shown(line: Line, other: Path | None) -> str:
    """The other line's config, relative to this one's folder."""
    if other is None:
        return ""
    return os.path.relpath(other.absolute(), line.root)
