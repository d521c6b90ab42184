# SPDX-License-Identifier: Apache-2.0
"""The behaviour matrix: each side's tests by category (rows) on each runtime
(columns), one summary per cell and one mark per test. Pure, no I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from forkkit.services.reconcile.model import (
    LOAD_KINDS,
    Cell,
    Runtime,
    Side,
    SideTests,
    effective_outcomes,
    side_test_ids,
)
from forkkit.testing.classify import CATEGORIES


@dataclass(frozen=True)
class MatrixRow:
    """A group of one side's tests (one category) across all runtimes."""

    side: Side
    category: str
    tests: tuple[str, ...]
    cells: tuple[str, ...]  # one per runtime column

    @property
    def label(self) -> str:
        return f"{self.side}: {self.category} ({len(self.tests)})"


@dataclass(frozen=True)
class Matrix:
    """Which approach passes which tests."""

    runtimes: tuple[Runtime, ...]
    rows: tuple[MatrixRow, ...]
    # (side, category, test, per-runtime marks) for all but PASS_TO_PASS
    details: tuple[tuple[str, str, str, tuple[str, ...]], ...]

    def patterns(self) -> list[tuple[str, str, tuple[str, ...], list[str]]]:
        """Tests grouped by identical outcomes: (side, category, marks, tests)."""
        groups: dict[tuple[str, str, tuple[str, ...]], list[str]] = {}
        for side, cat, test, marks in self.details:
            groups.setdefault((side, cat, marks), []).append(test)
        return [(s, c, m, tests) for (s, c, m), tests in groups.items()]


ROW_ORDER = (*CATEGORIES, "UNCLASSIFIED")


def cell_summary(cell: Cell | None, test_ids: Sequence[str]) -> str:
    """One matrix cell: ``3/3 pass``, ``conflict``, ``error (import)`` ..."""
    if cell is None or cell.status == "not-applicable":
        return "n/a"
    if cell.status == "conflict":
        return "conflict"
    if not test_ids:
        return "-"
    outs = effective_outcomes(cell, test_ids)
    passed = sum(1 for t in outs.values() if t.outcome == "passed")
    failed = sum(1 for t in outs.values() if t.outcome == "failed")
    skipped = sum(1 for t in outs.values() if t.outcome == "skipped")
    errors: dict[str, int] = {}
    for t in outs.values():
        if t.outcome == "error":
            kind = t.kind if t.kind in LOAD_KINDS else "setup"
            errors[kind] = errors.get(kind, 0) + 1
    missing = len(test_ids) - len(outs)
    if len(errors) == 1 and sum(errors.values()) == len(test_ids):
        kind = next(iter(errors))
        return "conflict" if kind == "conflict" else f"error ({kind})"
    parts = [f"{passed}/{len(test_ids)} pass"]
    if failed:
        parts.append(f"{failed} fail")
    parts += [
        f"{n} conflict" if k == "conflict" else f"{n} error ({k})"
        for k, n in sorted(errors.items())
    ]
    if skipped:
        parts.append(f"{skipped} skip")
    if missing:
        parts.append(f"{missing} absent")
    return ", ".join(parts)


def outcome_mark(cell: Cell | None, test_id: str) -> str:
    """One per-test cell of the detail table."""
    if cell is None or cell.status == "not-applicable":
        return "n/a"
    if cell.status == "conflict":
        return "conflict"
    out = effective_outcomes(cell, [test_id]).get(test_id)
    if out is None:
        return "-"
    if out.outcome == "error" and out.kind == "conflict":
        return "conflict"
    if out.outcome == "error" and out.kind in LOAD_KINDS:
        return f"error ({out.kind})"
    return {"passed": "pass", "failed": "FAIL", "error": "error", "skipped": "skip"}[
        out.outcome
    ]


def build_matrix(
    runtimes: Sequence[Runtime],
    sides: Sequence[SideTests],
    cells: Mapping[tuple[str, str], Cell],
) -> Matrix:
    """Rows: each side's tests by category; columns: runtimes."""
    rows: list[MatrixRow] = []
    details: list[tuple[str, str, str, tuple[str, ...]]] = []
    for side in sides:
        groups: dict[str, list[str]] = {}
        if side.classification is not None:
            for cat, cat_ids in side.classification.by_category.items():
                groups[cat] = list(cat_ids)
        seen = {t for ids in groups.values() for t in ids}
        rest = [t for t in side_test_ids(cells.values(), side.side) if t not in seen]
        if rest:
            groups["UNCLASSIFIED"] = rest
        if not groups:
            groups["UNCLASSIFIED"] = []
        for cat in ROW_ORDER:
            if cat not in groups:
                continue
            row_ids = tuple(groups[cat])
            row_cells = tuple(
                cell_summary(cells.get((side.side, r.key)), row_ids) for r in runtimes
            )
            rows.append(MatrixRow(side.side, cat, row_ids, row_cells))
            if cat != "PASS_TO_PASS":
                for tid in row_ids:
                    marks = tuple(
                        outcome_mark(cells.get((side.side, r.key)), tid)
                        for r in runtimes
                    )
                    details.append((side.side, cat, tid, marks))
    return Matrix(runtimes=tuple(runtimes), rows=tuple(rows), details=tuple(details))
