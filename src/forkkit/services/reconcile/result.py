# SPDX-License-Identifier: Apache-2.0
"""The whole reconcile result (rendered by :mod:`.render`): pure values, no
I/O. Above :mod:`.model`, :mod:`.answers` and :mod:`.matrix`, which it joins;
none of them imports it back."""

from __future__ import annotations

from dataclasses import dataclass

from forkkit.patches.diff import Diff
from forkkit.services.reconcile.answers import Trees
from forkkit.services.reconcile.matrix import Matrix
from forkkit.services.reconcile.model import (
    RESEND,
    Cell,
    Gap,
    Measurement,
    Runtime,
    SideTests,
    measure,
)
from forkkit.services.reconcile.overlap import Overlap


@dataclass(frozen=True)
class ReconcileResult:
    """Everything the reconcile report says."""

    title: str
    competitor: str  # what --with named
    competitor_kind: str  # "patch", "git", "release"
    base_label: str
    ours: Diff
    theirs: Diff
    overlap: Overlap
    sides: tuple[SideTests, ...]
    runtimes: tuple[Runtime, ...]
    cells: dict[tuple[str, str], Cell]
    matrix: Matrix
    notes: tuple[str, ...] = ()
    trees: Trees | None = None  # stacks as built; the resend table
    fixes: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (our fix, its files)

    def fix_overlap(self) -> list[tuple[str, tuple[str, ...]]]:
        """Each of our fixes and the runtime files of it the competitor
        changes too (none: the two do not meet on that fix)."""
        theirs = set(self.theirs.paths)
        return [
            (fid, tuple(f for f in files if f in theirs)) for fid, files in self.fixes
        ]

    @property
    def measurement(self) -> Measurement:
        """Which cells of the matrix and of the resend table hold a
        measurement (the exit code)."""
        m = measure(self.sides, self.runtimes, self.cells)
        if not m.cells and not m.gaps:
            return m  # neither side brings a test: nothing to weigh
        asked = self.trees.runtimes if self.trees else ()
        gaps = dict(self.trees.gaps()) if self.trees else {}
        done = tuple((RESEND, k) for k in asked if k not in gaps)
        extra = tuple(Gap(RESEND, k, why) for k, why in gaps.items())
        return Measurement(cells=m.cells + done, gaps=m.gaps + extra)
