"""Pure analysis for ``forkkit reconcile``: diffs, overlap and the behaviour matrix.

Nothing here touches git, the network or pytest: inputs are diff text, file
contents and parsed JUnit reports; outputs are typed values (rendered as
Markdown and JSON by :mod:`forkkit.commands.reconcile.render`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from forkkit.patches.diff import Diff, DiffHunk
from forkkit.patches.paths import is_test_module
from forkkit.patches.symbols import Symbol, enclosing, hunk_symbols, python_symbols
from forkkit.patches.testids import (
    belongs_to,
    junit_module,
    qualname_node,
    target_file,
)
from forkkit.testing.classify import CATEGORIES, Classification, classify
from forkkit.testing.junit import JunitReport, TestOutcome

# Changes this many lines apart or closer are reported as overlapping hunks:
# git's default context, i.e. where a 3-way merge starts to see a conflict.
NEAR = 3
Side = Literal["ours", "theirs"]


# --------------------------------------------------------------------------
# Overlap
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class HunkRef:
    """A hunk as the overlap report names it."""

    index: int
    count: int
    header: str
    span: tuple[int, int]
    symbols: tuple[str, ...]

    def describe(self) -> str:
        return f"hunk {self.index}/{self.count} (lines {self.span[0]}-{self.span[1]})"


@dataclass(frozen=True)
class HunkPair:
    """Our hunk and their hunk changing the same or neighbouring base lines."""

    ours: HunkRef
    theirs: HunkRef
    distance: int  # 0: the changed lines intersect

    @property
    def relation(self) -> str:
        return "overlapping" if self.distance == 0 else f"{self.distance} line(s) apart"


@dataclass(frozen=True)
class FileOverlap:
    """One file both sides touch."""

    path: str
    ours: tuple[HunkRef, ...]
    theirs: tuple[HunkRef, ...]
    pairs: tuple[HunkPair, ...]
    shared_symbols: tuple[str, ...]


@dataclass(frozen=True)
class Overlap:
    """Files, functions and hunks touched by both sides."""

    files: tuple[FileOverlap, ...]
    ours_only: tuple[str, ...]
    theirs_only: tuple[str, ...]

    @property
    def kind(self) -> Literal["disjoint", "same-files", "overlapping"]:
        if not self.files:
            return "disjoint"
        if any(f.pairs for f in self.files):
            return "overlapping"
        return "same-files"

    @property
    def shared_symbols(self) -> tuple[str, ...]:
        return tuple(f"{f.path}::{s}" for f in self.files for s in f.shared_symbols)

    @property
    def pairs(self) -> tuple[tuple[str, HunkPair], ...]:
        return tuple((f.path, p) for f in self.files for p in f.pairs)


def _distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, max(a[0], b[0]) - min(a[1], b[1]))


def _refs(hunks: Sequence[DiffHunk], symbols: Sequence[Symbol]) -> list[HunkRef]:
    return [
        HunkRef(h.index, h.count, h.header, h.span, hunk_symbols(h, symbols))
        for h in hunks
    ]


def compute_overlap(
    ours: Diff, theirs: Diff, base_sources: Mapping[str, str | None]
) -> Overlap:
    """Compare two diffs of the same base; ``base_sources`` maps path -> base text.

    Both diffs must be cumulative (one entry per file, as ``git diff`` gives).
    Python files are mapped to functions/classes with :mod:`ast`.
    """
    shared = sorted(set(ours.paths) & set(theirs.paths))
    files = []
    for path in shared:
        src = base_sources.get(path)
        syms = python_symbols(src) if src is not None and path.endswith(".py") else ()
        o = _refs(ours.hunks(path), syms)
        t = _refs(theirs.hunks(path), syms)
        pairs = tuple(
            HunkPair(a, b, d)
            for a in o
            for b in t
            if (d := _distance(a.span, b.span)) <= NEAR
        )
        common = sorted(
            {s for h in o for s in h.symbols} & {s for h in t for s in h.symbols}
        )
        files.append(FileOverlap(path, tuple(o), tuple(t), pairs, tuple(common)))
    return Overlap(
        files=tuple(files),
        ours_only=tuple(p for p in ours.paths if p not in shared),
        theirs_only=tuple(p for p in theirs.paths if p not in shared),
    )


# --------------------------------------------------------------------------
# Which tests each side brings
# --------------------------------------------------------------------------


def changed_test_modules(diff: Diff) -> tuple[str, ...]:
    """The pytest modules a diff adds or modifies (removed ones cannot run)."""
    return tuple(
        f.path for f in diff.files if f.status != "removed" and is_test_module(f.path)
    )


def touched_tests(
    diff: Diff,
    base_sources: Mapping[str, str | None],
    new_sources: Mapping[str, str | None] | None = None,
) -> tuple[str, ...]:
    """The tests a diff adds or changes, as pytest targets.

    A new test module is one whole target; in a modified module each test
    function whose lines change (``ast`` on the base and new files) is one
    node id. Helper-only or import-only edits select no test.
    """
    targets: list[str] = []
    for f in diff.files:
        if f.status == "removed" or not is_test_module(f.path):
            continue
        if f.status == "added" or base_sources.get(f.path) is None:
            targets.append(f.path)
            continue
        names: set[str] = set()
        old_syms = python_symbols(base_sources.get(f.path) or "")
        for h in f.hunks:
            names.update(hunk_symbols(h, old_syms))
        new_src = (new_sources or {}).get(f.path)
        if new_src is not None:
            new_syms = python_symbols(new_src)
            for h in f.hunks:
                for line in h.added_lines:
                    sym = enclosing(new_syms, line)
                    if sym is not None:
                        names.add(sym.qualname)
        for name in sorted(names):
            node = qualname_node(f.path, name)
            if node:
                targets.append(node)
    return tuple(dict.fromkeys(targets))


def merge_targets(*groups: Iterable[str]) -> tuple[str, ...]:
    """Union of pytest targets; node ids inside a whole-file target are dropped."""
    flat = list(dict.fromkeys(t for g in groups for t in g))
    files = {t for t in flat if "::" not in t}
    return tuple(t for t in flat if "::" not in t or target_file(t) not in files)


def target_folders(targets: Iterable[str]) -> tuple[str, ...]:
    """The folders of some pytest targets, e.g. ``tests/v1/core``."""
    return tuple(sorted({posixpath.dirname(target_file(t)) for t in targets}))


def in_folders(paths: Iterable[str], folders: Iterable[str]) -> tuple[str, ...]:
    """The paths directly inside one of ``folders`` (not in subfolders)."""
    wanted = set(folders)
    return tuple(p for p in paths if posixpath.dirname(p) in wanted)


# --------------------------------------------------------------------------
# Behaviour matrix
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


_LOAD_KINDS = ("import", "collection", "conflict")  # a test that could not load


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
            kind = t.kind if t.kind in _LOAD_KINDS else "setup"
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
    if out.outcome == "error" and out.kind in _LOAD_KINDS:
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


# --------------------------------------------------------------------------
# What was measured (``forkkit reconcile`` exits 0 only when all of it was)
# --------------------------------------------------------------------------

Verdict = Literal["measured", "partial", "nothing"]


@dataclass(frozen=True)
class Gap:
    """A cell of the behaviour matrix that holds no measurement, and why."""

    side: Side
    runtime: str
    reason: str

    def describe(self) -> str:
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

    def summary(self) -> str:
        """One line: the verdict and every cell that holds no measurement."""
        total = len(self.cells) + len(self.gaps)
        gaps = "; ".join(g.describe() for g in self.gaps)
        if self.verdict == "measured":
            return f"measured: all {total} cell(s) of the behaviour matrix"
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
        or (o.outcome == "error" and o.kind not in _LOAD_KINDS)
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


# --------------------------------------------------------------------------
# The result (rendered by :mod:`forkkit.commands.reconcile.render`)
# --------------------------------------------------------------------------


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

    @property
    def measurement(self) -> Measurement:
        """Which cells of the matrix hold a measurement (the exit code)."""
        return measure(self.sides, self.runtimes, self.cells)
