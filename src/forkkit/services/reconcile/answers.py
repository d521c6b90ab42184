# SPDX-License-Identifier: Apache-2.0
"""The maintainers' questions, answered from a reconcile's cells: pure, no I/O.

1. Which of the other side's tests each approach passes (:class:`CrossPass`).
2. Whether the two stack, 3-way, in both orders (:class:`StackBuild`), and
   what the stack passes.
3. The CPU resend reproduction on base, ours, theirs and the stack
   (:class:`ResendCell`): cached and recomputed prompt tokens per resend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from forkkit.services.reconcile.model import (
    Cell,
    SideTests,
    cell_gap,
    effective_outcomes,
    side_test_ids,
)
from forkkit.services.repro.model import ResendRow, ScriptRun

OURS_ON_THEIRS = "ours+theirs"  # their runtime, ours merged on top
THEIRS_ON_OURS = "theirs+ours"  # our runtime, theirs merged on top
STACKS = (OURS_ON_THEIRS, THEIRS_ON_OURS)
RESEND_RUNTIMES = ("base", "ours", "theirs", *STACKS)


@dataclass(frozen=True)
class StackBuild:
    """A runtime column's tree as assembled: its git tree, or the conflict."""

    runtime: str
    tree: str = ""  # empty when a runtime layer did not merge
    conflict: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResendCell:
    """The resend reproduction on one runtime column."""

    runtime: str
    run: ScriptRun | None = None
    tree: str = ""
    command: str = ""
    error: str = ""  # why nothing was measured
    reused: str = ""  # the runtime whose identical tree ran

    def row(self, kind: str, prompt_len: int | None = None) -> ResendRow | None:
        """The measured resend of ``kind`` (of ``prompt_len``, else the first)."""
        rows = self.run.rows if self.run else ()
        return next(
            (r for r in rows if r.kind == kind and prompt_len in (None, r.prompt_len)),
            None,
        )


def resend_keys(cells: Sequence[ResendCell]) -> list[tuple[int, str]]:
    """Every (prompt length, resend kind) any column measured, in order."""
    keys: dict[tuple[int, str], None] = {}
    for c in cells:
        for r in c.run.rows if c.run else ():
            keys[(r.prompt_len, r.kind)] = None
    return list(keys)


@dataclass(frozen=True)
class Trees:
    """The resend columns' trees as built, and the resend table in them."""

    builds: tuple[StackBuild, ...] = ()
    resend: tuple[ResendCell, ...] = ()
    runtimes: tuple[str, ...] = ()  # columns asked to reproduce on ("": none)
    setup: str = ""  # the preset and what it simulates

    def gaps(self) -> list[tuple[str, str]]:
        """(runtime, why) for each asked column that holds no measurement."""
        return resend_gaps(self.resend, self.runtimes)


@dataclass(frozen=True)
class CrossPass:
    """One side's tests on a runtime: how many pass, FAIL_TO_PASS apart."""

    side: str  # whose tests
    runtime: str
    total: int
    passed: int
    f2p_total: int
    f2p_passed: int
    failing: tuple[str, ...]  # tests that did not pass, sorted
    gap: str = ""  # why the cell holds no measurement (empty: measured)

    def describe(self) -> str:
        """``5/7 pass (FAIL_TO_PASS 1/3)`` or why it was not measured."""
        if self.gap:
            return f"not measured ({self.gap})"
        f2p = f" (FAIL_TO_PASS {self.f2p_passed}/{self.f2p_total})"
        return f"{self.passed}/{self.total} pass" + (f2p if self.f2p_total else "")


def cross_pass(
    side: SideTests, runtime: str, cells: Mapping[tuple[str, str], Cell]
) -> CrossPass:
    """``side``'s tests on ``runtime``: counted from that cell's outcomes."""
    ids = side_test_ids(cells.values(), side.side)
    cell = cells.get((side.side, runtime))
    by_category = side.classification.by_category if side.classification else {}
    f2p = set(by_category.get("FAIL_TO_PASS", ()))
    gap = cell_gap(cell, ids)
    outs = effective_outcomes(cell, ids) if cell is not None and not gap else {}
    passed = {t for t, o in outs.items() if o.outcome == "passed"}
    return CrossPass(
        side=side.side,
        runtime=runtime,
        total=len(ids),
        passed=len(passed),
        f2p_total=len(f2p),
        f2p_passed=len(f2p & passed),
        failing=tuple(sorted(set(ids) - passed)) if not gap else (),
        gap=gap,
    )


def stacks_cleanly(builds: Sequence[StackBuild]) -> str:
    """One sentence: whether both orders merge, and into one tree."""
    by = {b.runtime: b for b in builds if b.runtime in STACKS}
    if len(by) < len(STACKS):
        return "not built"
    a, b = by[OURS_ON_THEIRS], by[THEIRS_ON_OURS]
    if a.conflict or b.conflict:
        bad = [k for k in STACKS if by[k].conflict]
        return "no: " + ", ".join(f"{k} conflicts" for k in bad)
    same = "the same tree" if a.tree == b.tree else "two different trees"
    return f"yes: both orders merge 3-way cleanly, into {same}"


def resend_gaps(
    cells: Sequence[ResendCell], runtimes: Sequence[str]
) -> list[tuple[str, str]]:
    """(runtime, why) for each resend column that holds no measurement."""
    by = {c.runtime: c for c in cells}
    gaps: list[tuple[str, str]] = []
    for key in runtimes:
        c = by.get(key)
        if c is None:
            gaps.append((key, "not run"))
        elif c.run is None or not c.run.rows:
            gaps.append((key, c.error or "no rows"))
    return gaps
