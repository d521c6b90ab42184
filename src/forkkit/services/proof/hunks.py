# SPDX-License-Identifier: Apache-2.0
"""The hunk matrix (``--hunks``): is every runtime hunk of the fix needed?

For each hunk of ``git diff base..HEAD -- <runtime files>``, the fix with
only that hunk reverted (``git apply -R`` in a scratch index, committed, run
in a scratch worktree) runs the FAIL_TO_PASS tests; the tests that fail
there need the hunk. Runs come from the result cache by tree id and go side
by side when cores are free.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from forkkit.fork.tree import ForkTree
from forkkit.output.progress import say
from forkkit.patches.diff import DiffHunk, parse_diff
from forkkit.patches.symbols import hunk_symbols, python_symbols
from forkkit.patches.testids import node_id
from forkkit.process import busy_cpus
from forkkit.services.proof.model import STEM, HunkCheck
from forkkit.services.proof.plan import ProofSpec
from forkkit.testing.forkruns import ForkRuns
from forkkit.testing.logged import side_by_side
from forkkit.vcs import Repo
from forkkit.vcs.overlay import revert_hunk_commit


@dataclass(frozen=True)
class _Target:
    """One hunk to revert and what to call it."""

    hunk: DiffHunk
    symbol: str
    name: str  # file stem of its JUnit XML / log


def runtime_hunks(repo: Repo, plan: ProofSpec) -> list[_Target]:
    """Every hunk of the fix in the runtime files, with its enclosing symbols."""
    text = repo.diff(a=plan.base, b=plan.head, paths=plan.runtime)
    if not text.strip():
        return []
    out: list[_Target] = []
    for f in parse_diff(text, "runtime diff").files:
        base = repo.blob(plan.base, f.old_path)
        source = repo.read_blob(base).decode(errors="replace") if base else ""
        symbols = python_symbols(source) if f.path.endswith(".py") else ()
        for h in f.hunks:
            names = (
                ", ".join(hunk_symbols(h, symbols)) if f.path.endswith(".py") else ""
            )
            out.append(_Target(h, names, f"{STEM}_hunk{len(out) + 1}"))
    return out


def _selection(repo: Repo, plan: ProofSpec, f2p: Sequence[str]) -> list[str]:
    """The FAIL_TO_PASS tests' node ids; the focused targets when one of them
    has no node id (only the FAIL_TO_PASS outcomes are read either way)."""
    tracked = frozenset(repo.ls_tree(plan.head, []))
    nodes = [node_id(t, tracked) for t in f2p]
    if all(nodes):
        return sorted({n for n in nodes if n})
    return list(plan.targets)


def hunk_workers(count: int, *, parallel: bool) -> int:
    """Side by side as many as there are free cores (at least 2) when
    ``parallel``; one at a time otherwise."""
    if not parallel or count < 2:
        return 1
    n = os.cpu_count() or 1
    return max(2, min(count, round(n - busy_cpus(cpus=n))))


def hunk_matrix(
    tree: ForkTree,
    plan: ProofSpec,
    settings: ForkRuns,
    *,
    f2p: Sequence[str],
    parallel: bool,
) -> tuple[HunkCheck, ...]:
    """Revert each runtime hunk alone and run the FAIL_TO_PASS tests ``f2p``."""
    targets = runtime_hunks(tree.repo, plan)
    if not targets or not f2p:
        return ()
    workers = hunk_workers(len(targets), parallel=parallel)
    say(f"hunks: {len(targets)} runtime hunk(s), {workers} at a time")

    def check(t: _Target) -> Callable[[threading.Event], HunkCheck]:
        return lambda cancel: _check(
            tree, plan, settings, target=t, f2p=f2p, cancel=cancel
        )

    jobs = [check(t) for t in targets]
    return tuple(side_by_side(jobs, workers=workers, name="hunks"))


def _check(
    tree: ForkTree,
    plan: ProofSpec,
    settings: ForkRuns,
    *,
    target: _Target,
    f2p: Sequence[str],
    cancel: threading.Event,
) -> HunkCheck:
    """The FAIL_TO_PASS tests on the fix without ``target``'s hunk."""
    h, repo = target.hunk, tree.repo
    row = HunkCheck(
        hunk=h.describe(), path=h.path, symbol=target.symbol, reverted=False
    )
    message = f"forkkit {target.name}: {h.describe()} reverted\n"
    rev = revert_hunk_commit(repo, onto=plan.head, patch=h.text, message=message)
    if not rev.applied.ok:
        return dataclasses.replace(row, note=f"git apply -R: {rev.applied.message}")
    at = dataclasses.replace(settings, head=rev.commit)
    nodes = _selection(repo, plan, f2p)
    run = at.run(tree, rev.commit, nodes, name=target.name, cancel=cancel)
    row = dataclasses.replace(
        row, reverted=True, tree=rev.tree, cached=run.cached, seconds=run.run.seconds
    )
    if run.report is None:
        return dataclasses.replace(row, note=f"no results: {run.problem}")
    red: list[tuple[str, str]] = []
    for t in f2p:
        outcome = run.report.tests.get(t)
        if outcome is None:
            red.append((t, "missing"))
        elif outcome.outcome in ("failed", "error"):
            red.append((t, outcome.kind or outcome.outcome))
    note = ""
    if run.report.collection_errors:
        first = run.report.collection_errors[0]
        note = f"does not import without it ({first.test_id}: {first.message[:80]})"
    return dataclasses.replace(
        row,
        turns_red=tuple(t for t, _ in red),
        kinds=tuple(k for _, k in red),
        note=note,
    )
