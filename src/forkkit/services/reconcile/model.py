# SPDX-License-Identifier: Apache-2.0
"""What ``forkkit reconcile`` works with and concludes: pure values, no I/O.

The competitor and the options; the runtime columns and the cells of the
behaviour matrix (one side's tests on one runtime); each side's tests and
their classification; what was measured (the exit code); the whole result
(the whole result is :mod:`.result`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from forkkit.patches.diff import Diff
from forkkit.patches.testids import belongs_to, junit_module
from forkkit.testing.classify import Classification, classify
from forkkit.testing.junit import JunitReport, TestOutcome
from forkkit.upstream.trust import TrustedSdist

Side = Literal["ours", "theirs"]
Kind = Literal["patch", "git", "release"]
REF_PREFIX = "refs/forkkit-reconcile"
STEM = "reconcile"  # reports/reconcile/reconcile.{md,json}
THEIR_TESTS = {
    "files": "test modules their change adds/changes, whole (default)",
    "changed": "only the tests their change adds/changes",
    "shared": "only those, in test files our patches touch too",
}
LOAD_KINDS = ("import", "collection", "conflict")  # a test that could not load
RESEND = "resend"  # the resend table's row of gaps in a Measurement


@dataclass(frozen=True)
class Competitor:
    """What ``--with`` names."""

    ref: str
    kind: Kind
    name: str = ""  # release: project name
    version: str = ""  # release: version
    sdist: TrustedSdist | None = None  # release: its verified sdist, once trusted


@dataclass(frozen=True)
class Release:
    """A newer release committed whole, plus its label."""

    commit: str
    label: str

    @property
    def key(self) -> str:
        """The column name of the release tree, e.g. ``0.32.0``."""
        return self.label.split()[-1]


@dataclass(frozen=True)
class Options:
    """What ``forkkit reconcile`` was asked to do besides ``--with``."""

    sha256: str = ""  # release pin (default: the index's hash)
    sdist_url: str = ""  # release download URL (default: the index)
    their_tests: str = "files"  # "files", "changed" or "shared" (THEIR_TESTS)
    their_tree: bool = True  # release: also run in the release's full tree
    pytest_args: tuple[str, ...] = ()
    timeout: float | None = None
    out_dir: Path | None = None  # the report folder (default: reports/reconcile)
    fresh: bool = False  # ignore pytest runs cached by earlier reconciles
    resend: str = ""  # the repro preset of the resend table ("": no table)
    eagle_mode: str = "default"  # the resend's EAGLE mode: "default" or "drop"


# --------------------------------------------------------------------------
# Runtime columns, cells and each side's tests
# --------------------------------------------------------------------------

CellStatus = Literal["ran", "conflict", "not-applicable"]


@dataclass(frozen=True)
class Runtime:
    """A column: the runtime code the tests run against."""

    key: str  # "base", "ours", "theirs", "both", ...
    label: str
    tree: str  # the tree the column lives in (e.g. "vllm 0.30.0")


@dataclass(frozen=True)
class Cell:
    """One side's tests run on one runtime."""

    side: Side
    runtime: str
    status: CellStatus
    report: JunitReport | None = None
    # dotted module -> "import" or "collection": modules pytest could not load
    broken_modules: dict[str, str] = field(default_factory=dict)
    conflict: tuple[str, ...] = ()  # what did not apply: files/hunks
    command: str = ""
    seconds: float = 0.0
    note: str = ""
    reused: str = ""  # "SIDE@RUNTIME" of an identical tree already run
    skipped_files: tuple[str, ...] = ()  # test files that did not apply here
    cached: bool = False  # result of an earlier reconcile of the same tree
    finished: bool = True  # pytest wrote its JUnit report (no crash, no timeout)


@dataclass(frozen=True)
class SideTests:
    """The tests one side brings and how they classify (base vs own runtime)."""

    side: Side
    label: str
    targets: tuple[str, ...]
    base_runtime: str
    own_runtime: str
    classification: Classification | None = None
    note: str = ""


def collection_kind(text: str) -> str:
    """``import`` for a module that failed to import, else ``collection``."""
    return (
        "import"
        if re.search(r"ImportError|ModuleNotFoundError", text)
        else "collection"
    )


def effective_outcomes(cell: Cell, test_ids: Iterable[str]) -> dict[str, TestOutcome]:
    """Outcomes of ``test_ids`` in a cell; tests whose module failed to load count
    as errors (kind ``import``/``collection``) instead of silently missing."""
    out: dict[str, TestOutcome] = {}
    tests = cell.report.tests if cell.report else {}
    skipped = {junit_module(p): p for p in cell.skipped_files}
    for tid in test_ids:
        if tid in tests:
            out[tid] = tests[tid]
            continue
        mod = next((m for m in skipped if belongs_to(tid, m)), None)
        if mod is not None:
            msg = f"{skipped[mod]}: does not apply here"
            out[tid] = TestOutcome(tid, "error", 0.0, "conflict", msg)
            continue
        for mod, kind in cell.broken_modules.items():
            if belongs_to(tid, mod):
                out[tid] = TestOutcome(tid, "error", 0.0, kind, f"{mod}: {kind} error")
                break
    return out


def side_test_ids(cells: Iterable[Cell], side: Side) -> tuple[str, ...]:
    """Every test id a side's tests produced in any cell."""
    ids: set[str] = set()
    for c in cells:
        if c.side == side and c.report is not None:
            ids.update(c.report.tests)
    return tuple(sorted(ids))


def classify_side(side: SideTests, cells: Mapping[tuple[str, str], Cell]) -> SideTests:
    """F2P/P2P of a side's tests: its base-runtime cell vs its own-runtime cell."""
    red = cells.get((side.side, side.base_runtime))
    green = cells.get((side.side, side.own_runtime))
    if red is None or green is None or red.report is None or green.report is None:
        return replace(side, classification=None, note="not classified: no run")
    ids = side_test_ids([red, green], side.side)
    r = replace(red.report, tests=effective_outcomes(red, ids))
    g = replace(green.report, tests=effective_outcomes(green, ids))
    return replace(side, classification=classify(r, g))


def failure_kinds(cell: Cell) -> dict[str, int]:
    """Exception kinds of a cell's failed/errored tests, most common first."""
    counts: dict[str, int] = {}
    for t in cell.report.tests.values() if cell.report else ():
        if t.outcome in ("failed", "error"):
            counts[t.kind or "unknown"] = counts.get(t.kind or "unknown", 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass(frozen=True)
class Layer:
    """A diff applied on top of a tree (one side's runtime or tests part).

    A runtime layer applies whole or not at all; a test layer applies file by
    file, so one conflicting test file does not hide the others.
    """

    name: str
    side: Side
    parts: tuple[tuple[str, str], ...]  # (path, its diff), in path order
    diff: Diff | None
    per_file: bool = False

    @property
    def text(self) -> str:
        return "".join(t for _, t in self.parts)


@dataclass(frozen=True)
class Plan:
    """Everything needed to run one cell."""

    side: Side
    runtime: Runtime
    root: str
    layers: tuple[Layer, ...]
    targets: tuple[str, ...]


# --------------------------------------------------------------------------
# What was measured (``forkkit reconcile`` exits 0 only when all of it was)
# --------------------------------------------------------------------------

Verdict = Literal["measured", "partial", "nothing"]


@dataclass(frozen=True)
class Gap:
    """A cell of the behaviour matrix (or of the resend table: side
    ``resend``) that holds no measurement, and why."""

    side: str
    runtime: str
    reason: str

    def describe(self) -> str:
        if self.side == RESEND:
            return f"resend reproduction on {self.runtime} ({self.reason})"
        return f"{self.side} tests on {self.runtime} ({self.reason})"


@dataclass(frozen=True)
class Measurement:
    """Which cells of the behaviour matrix hold a measurement.

    The matrix has a cell for each side that brings tests (``targets``) on
    each runtime column. A cell is *measured* when all of these hold:

    1. pytest ran that side's tests in that column's tree (status ``ran``,
       or reusing an identical tree that ran): not a ``conflict`` (the tree
       could not be assembled), not ``not-applicable`` (none of the tests is
       in that tree), not absent (never run);
    2. pytest ran to the end: it wrote its JUnit report and was not killed
       by the timeout (``Cell.finished``);
    3. it gave at least one of the side's tests an outcome other than "its
       file did not apply": passed, failed, skipped or an error, a module
       that fails to import included (a test that needs the other side's
       code is meant not to load without it);
    4. some test of that side *executed* in some measured cell (passed,
       failed, or errored in setup or call; neither skipped nor a load
       error): a side whose tests never ran anywhere measured nothing.

    Verdict: ``measured`` when every cell is, ``partial`` when only some
    are, ``nothing`` when none is (or when neither side brings a test).
    """

    cells: tuple[tuple[str, str], ...]  # (side, runtime) of the measured cells
    gaps: tuple[Gap, ...]

    @property
    def verdict(self) -> Verdict:
        if not self.cells:
            return "nothing"
        return "partial" if self.gaps else "measured"

    @property
    def what(self) -> str:
        """What the cells belong to: the matrix, and the resend table if asked."""
        cells = [side for side, _ in self.cells] + [g.side for g in self.gaps]
        return "matrix and resend table" if RESEND in cells else "behaviour matrix"

    def summary(self) -> str:
        """One line: the verdict and every cell that holds no measurement."""
        total = len(self.cells) + len(self.gaps)
        gaps = "; ".join(g.describe() for g in self.gaps)
        if self.verdict == "measured":
            return f"measured: all {total} cell(s) of the {self.what}"
        if not total:
            return "nothing measured: neither side brings a test to run"
        if self.verdict == "nothing":
            return f"nothing measured: {gaps}"
        done = f"{len(self.cells)} of {total} cell(s) measured"
        return f"partial: {done}; not measured: {gaps}"


def cell_gap(cell: Cell | None, test_ids: Sequence[str]) -> str:
    """Why a cell holds no measurement (points 1-3 of :class:`Measurement`);
    empty when it holds one."""
    if cell is None:
        return "not run"
    if cell.status == "conflict":
        return "conflict"
    if cell.status == "not-applicable":
        return "its tests are not in this tree"
    if not cell.finished:
        return "pytest did not finish"
    outs = effective_outcomes(cell, test_ids).values()
    if all(o.outcome == "error" and o.kind == "conflict" for o in outs):
        broken = len(cell.broken_modules)
        why = f": {broken} module(s) did not load" if broken else ""
        return f"no test result{why}"
    return ""


def executed(cell: Cell, test_ids: Sequence[str]) -> bool:
    """Whether some test ran in ``cell`` (not skipped, not a load error)."""
    outs = effective_outcomes(cell, test_ids).values()
    return any(
        o.outcome in ("passed", "failed")
        or (o.outcome == "error" and o.kind not in LOAD_KINDS)
        for o in outs
    )


def measure(
    sides: Sequence[SideTests],
    runtimes: Sequence[Runtime],
    cells: Mapping[tuple[str, str], Cell],
) -> Measurement:
    """Which cells of the behaviour matrix hold a measurement."""
    measured: list[tuple[str, str]] = []
    gaps: list[Gap] = []
    for side in sides:
        if not side.targets:
            continue
        ids = side_test_ids(cells.values(), side.side)
        mine = {rt.key: cells.get((side.side, rt.key)) for rt in runtimes}
        why = {key: cell_gap(cell, ids) for key, cell in mine.items()}
        ok = [key for key, reason in why.items() if not reason]
        if not any(executed(c, ids) for k, c in mine.items() if k in ok and c):
            why.update(dict.fromkeys(ok, "no test ran: only skips or load errors"))
            ok = []
        measured += [(side.side, key) for key in ok]
        gaps += [Gap(side.side, k, r) for k, r in why.items() if r]
    return Measurement(cells=tuple(measured), gaps=tuple(gaps))
