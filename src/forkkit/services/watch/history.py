# SPDX-License-Identifier: Apache-2.0
"""The per-release history of the series (``forkkit watch --all``), pure.

For each release newer than the pin, the series is rebased onto it as a dry
run (straight from the pin, like Linux stable's ``audit-range``); each patch
gets one cell: how it applies there and whether upstream still needs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from forkkit.services.rebase.model import PatchResult, RebaseResult

# applies cleanly / 3-way / with a recorded resolution / conflicts / absorbed
# / not tried
Applies = Literal["clean", "3way", "resolved", "conflict", "absorbed", "not-tried"]
# still needed (its FAIL_TO_PASS tests fail there without it), absorbed
# (they pass there without it), unknown (not measured, or tests cannot run)
Need = Literal["needed", "absorbed", "unknown"]

HISTORY_FORMAT = 1  # bump when a cached row's meaning changes


@dataclass(frozen=True)
class HistoryCell:
    """One patch on one release."""

    patch: str
    applies: Applies
    need: Need
    detail: str = ""  # the conflict's file and hunks, or the semantic note
    failing: int = 0  # FAIL_TO_PASS tests failing there without the patch
    fail_to_pass: int = 0  # FAIL_TO_PASS tests measured on the old pin
    transient: bool = False  # the check failed (test env, timeout): not kept

    @property
    def label(self) -> str:
        """The cell as a maintainer reads it."""
        applies = {
            "clean": "applies cleanly",
            "3way": "applies 3-way",
            "resolved": "applies with a recorded resolution",
            "conflict": "CONFLICTS",
            "absorbed": "absorbed",
            "not-tried": "not tried",
        }[self.applies]
        if self.applies in ("absorbed", "not-tried"):
            return applies
        need = {
            "needed": f"still needed ({self.failing}/{self.fail_to_pass} "
            "FAIL_TO_PASS fail without it)",
            "absorbed": "absorbed (its tests pass without it)",
            "unknown": "need not measured",
        }[self.need]
        return f"{applies}; {need}"


def cell_of(p: PatchResult) -> HistoryCell:
    """The history cell of one patch's rebase verdict."""
    sem = p.semantic
    f2p = len(sem.fail_to_pass) if sem else 0
    if p.absorbed:
        why = sem.note if sem else p.detail
        return HistoryCell(p.name, "absorbed", "absorbed", why, 0, f2p)
    if p.status == "not-tried":
        return HistoryCell(p.name, "not-tried", "unknown", "an earlier patch conflicts")
    kinds: dict[str, Applies] = {
        "clean": "clean",
        "conflict": "conflict",
        "rerere": "resolved",
        "resolved-from": "resolved",
    }
    applies: Applies = kinds.get(p.status, "3way")
    detail = "; ".join(c.describe() for c in p.conflicts) if p.conflicts else ""
    if sem is None:
        return HistoryCell(p.name, applies, "unknown", detail, 0, f2p)
    detail = "; ".join(x for x in (detail, sem.note) if x)
    need: Need = "unknown"
    if sem.fail_to_pass and sem.failed:
        need = "needed"
    elif sem.fail_to_pass and sem.absorbed:
        need = "absorbed"
    failing = len(sem.failed) if sem.fail_to_pass else 0
    return HistoryCell(p.name, applies, need, detail, failing, f2p, sem.error)


@dataclass(frozen=True)
class HistoryRow:
    """One release: its cells, the rebase's outcome, and where the row came from."""

    release: str
    outcome: str  # RebaseResult.outcome
    cells: tuple[HistoryCell, ...]
    proof_valid: bool | None = None  # red/green on the refreshed series
    cached: bool = False  # read back from the history cache

    @property
    def complete(self) -> bool:
        """Worth keeping: no cell's check failed for a passing reason (a test
        env, a timeout). Tests that cannot run on a release stay unknown on
        every rerun, so such a row is kept."""
        return not any(c.transient for c in self.cells)


def row_of(release: str, result: RebaseResult) -> HistoryRow:
    """The history row of a dry-run rebase onto ``release``."""
    return HistoryRow(
        release=release,
        outcome=result.outcome,
        cells=tuple(cell_of(p) for p in result.patches),
        proof_valid=result.proof_valid,
    )


def error_row(release: str, patches: tuple[str, ...], *, why: str) -> HistoryRow:
    """A release the dry run failed on (a download, a test env): every
    patch unmeasured there, and the row measured again next time."""
    cell = "not measured: " + why
    return HistoryRow(
        release=release,
        outcome="error",
        cells=tuple(
            HistoryCell(p, "not-tried", "unknown", cell, transient=True)
            for p in patches
        ),
    )


def _state(row: HistoryRow, patch: str) -> Need:
    """Whether upstream had the patch's behaviour on this release."""
    cell = next((c for c in row.cells if c.patch == patch), None)
    if cell is None:
        return "unknown"
    if cell.applies == "absorbed":
        return "absorbed"
    return cell.need


def first_absorbed(rows: Sequence[HistoryRow], patch: str) -> str:
    """The oldest release (rows oldest first) that has the patch's behaviour
    with no later release measured without it; "" when none. A release where
    it was not measured (not tried, its tests cannot run) breaks nothing."""
    first = ""
    for row in rows:
        state = _state(row, patch)
        if state == "absorbed" and not first:
            first = row.release
        elif state == "needed":
            first = ""
    return first


def unmeasured_around(
    rows: Sequence[HistoryRow], patch: str, release: str
) -> list[str]:
    """The releases not measured just before ``release`` (upstream may have
    taken the patch there already) and after it."""
    before: list[str] = []
    after: list[str] = []
    seen = False
    for row in rows:
        if row.release == release:
            seen = True
            continue
        unknown = _state(row, patch) == "unknown"
        if seen:
            after += [row.release] if unknown else []
        else:
            before = [*before, row.release] if unknown else []
    return before + after


@dataclass(frozen=True)
class History:
    """The whole audit: the pin, the releases (oldest first), each patch."""

    package: str
    pin: str
    patches: tuple[str, ...]
    rows: tuple[HistoryRow, ...]
    fixes: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (fix id, its patches)

    def first_absorbed(self) -> dict[str, str]:
        return {p: first_absorbed(self.rows, p) for p in self.patches}

    def fix_first_absorbed(self) -> dict[str, str]:
        """Per fix, the oldest release that has the behaviour of every one of
        its patches (the latest of their first releases); "" when not all."""
        first = self.first_absorbed()
        order = [r.release for r in self.rows]
        out = {}
        for fid, names in self.fixes:
            got = [first.get(n, "") for n in names]
            done = bool(got) and all(got)
            out[fid] = max(got, key=order.index) if done else ""
        return out

    def unmeasured(self) -> dict[str, list[str]]:
        """Per patch, the unmeasured releases around its first absorbed one."""
        first = self.first_absorbed()
        return {
            p: unmeasured_around(self.rows, p, first[p]) if first[p] else []
            for p in self.patches
        }
