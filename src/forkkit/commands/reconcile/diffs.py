"""Pure analysis for ``forkkit reconcile``: diffs, overlap and the behaviour matrix.

Nothing here touches git, the network or pytest: inputs are diff text, file
contents and parsed JUnit reports; outputs are typed values (rendered as
Markdown and JSON by :mod:`forkkit.commands.reconcile.render`).
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk as UnidiffHunk
from unidiff.patch import PatchSet

from forkkit.errors import ForkkitError
from forkkit.patches.paths import is_test_module, is_test_path
from forkkit.testing.classify import CATEGORIES, Classification, classify
from forkkit.testing.junit import JunitReport, TestOutcome

# Changes this many lines apart or closer are reported as overlapping hunks:
# git's default context, i.e. where a 3-way merge starts to see a conflict.
NEAR = 3
MODULE_LEVEL = "<module>"
_DEF = re.compile(r"^(\s*)(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")

FileStatus = Literal["added", "removed", "modified", "renamed"]
Side = Literal["ours", "theirs"]


# --------------------------------------------------------------------------
# Diffs
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class DiffHunk:
    """One hunk of one file, in the coordinates of the old (base) file."""

    path: str
    index: int  # 1-based within its file
    count: int  # hunks in that file
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    section: str  # git's function context after the second ``@@``
    added: int
    removed: int
    span: tuple[int, int]  # old lines the change touches (insertion: both sides)
    new_defs: tuple[tuple[int, str], ...] = ()  # (indent, name) of added defs
    added_lines: tuple[int, ...] = ()  # new-file line numbers of added lines
    indented: bool = False  # the first added code line is indented

    @property
    def header(self) -> str:
        head = (
            f"@@ -{self.old_start},{self.old_len} +{self.new_start},{self.new_len} @@"
        )
        return f"{head} {self.section}".rstrip()

    def describe(self) -> str:
        return f"hunk {self.index}/{self.count} of {self.path} ({self.header})"


@dataclass(frozen=True)
class FileDiff:
    """All hunks of one file."""

    path: str  # new path (old path for a removal)
    old_path: str
    status: FileStatus
    hunks: tuple[DiffHunk, ...]

    @property
    def is_test(self) -> bool:
        return is_test_path(self.path)


@dataclass(frozen=True)
class Diff:
    """A parsed unified diff (git format-patch, mbox or plain ``diff -u``)."""

    files: tuple[FileDiff, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(sorted({f.path for f in self.files}))

    @property
    def runtime_paths(self) -> tuple[str, ...]:
        return tuple(p for p in self.paths if not is_test_path(p))

    @property
    def test_paths(self) -> tuple[str, ...]:
        return tuple(p for p in self.paths if is_test_path(p))

    def file(self, path: str) -> FileDiff | None:
        return next((f for f in self.files if f.path == path), None)

    def hunks(self, path: str) -> tuple[DiffHunk, ...]:
        return tuple(h for f in self.files if f.path == path for h in f.hunks)

    def stats(self) -> dict[str, int]:
        hunks = [h for f in self.files for h in f.hunks]
        return {
            "files": len(self.paths),
            "runtime_files": len(self.runtime_paths),
            "test_files": len(self.test_paths),
            "hunks": len(hunks),
            "added": sum(h.added for h in hunks),
            "removed": sum(h.removed for h in hunks),
        }


def _strip_prefix(name: str) -> str:
    return name[2:] if name[:2] in ("a/", "b/") else name


def _hunk(path: str, index: int, count: int, h: UnidiffHunk) -> DiffHunk:
    changed: list[int] = []
    insert_after: list[int] = []
    old_no, new_no = h.source_start, h.target_start
    new_defs: list[tuple[int, str]] = []
    added_lines: list[int] = []
    indented: bool | None = None
    for line in h:
        if line.is_removed:
            changed.append(old_no)
            old_no += 1
        elif line.is_context:
            old_no += 1
            new_no += 1
        elif line.is_added:
            insert_after.append(old_no - 1)
            added_lines.append(new_no)
            new_no += 1
            if indented is None and line.value.strip():
                indented = line.value[:1].isspace()
            m = _DEF.match(line.value)
            if m:
                new_defs.append((len(m.group(1)), m.group(2)))
    if changed:
        span = (min(changed), max(changed))
    elif insert_after:
        # A pure insertion between old lines k and k+1 touches both.
        span = (min(insert_after), max(insert_after) + 1)
    else:
        span = (h.source_start, h.source_start)
    return DiffHunk(
        path=path,
        index=index,
        count=count,
        old_start=h.source_start,
        old_len=h.source_length,
        new_start=h.target_start,
        new_len=h.target_length,
        section=h.section_header.strip(),
        added=h.added,
        removed=h.removed,
        span=span,
        new_defs=tuple(new_defs),
        added_lines=tuple(added_lines),
        indented=bool(indented),
    )


def parse_diff(text: str, source: str = "diff") -> Diff:
    """Parse a unified diff (also several ``git format-patch`` mails in a row)."""
    try:
        patch_set = PatchSet(text)
    except UnidiffParseError as exc:
        raise ForkkitError(
            f"{source}: not a unified diff ({exc}); pass git format-patch output "
            "or a plain 'diff -u'/'git diff'"
        ) from None
    files: list[FileDiff] = []
    for pf in patch_set:
        old = _strip_prefix(pf.source_file)
        new = _strip_prefix(pf.target_file)
        status: FileStatus
        if pf.is_added_file:
            status, path, old = "added", new, new
        elif pf.is_removed_file:
            status, path, new = "removed", old, old
        elif pf.is_rename or old != new:
            status, path = "renamed", new
        else:
            status, path = "modified", new
        hunks = tuple(_hunk(path, i, len(pf), h) for i, h in enumerate(pf, 1))
        files.append(FileDiff(path=path, old_path=old, status=status, hunks=hunks))
    if not files:
        raise ForkkitError(
            f"{source}: contains no file changes; pass a patch with 'diff' hunks"
        )
    return Diff(files=tuple(files))


# --------------------------------------------------------------------------
# Python symbols
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Symbol:
    """A function or class of a Python file, with its full line range."""

    qualname: str
    kind: Literal["function", "class"]
    start: int  # first decorator line
    end: int


def python_symbols(source: str) -> tuple[Symbol, ...]:
    """Every def/class of ``source`` (empty when it is not valid Python)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    out: list[Symbol] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qual = f"{prefix}{child.name}"
                start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                kind: Literal["function", "class"] = (
                    "class" if isinstance(child, ast.ClassDef) else "function"
                )
                out.append(Symbol(qual, kind, start, child.end_lineno or child.lineno))
                visit(child, qual + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return tuple(out)


def enclosing(symbols: Sequence[Symbol], line: int) -> Symbol | None:
    """The innermost symbol whose lines contain ``line``."""
    inside = [s for s in symbols if s.start <= line <= s.end]
    return max(inside, key=lambda s: (s.start, -s.end), default=None)


def hunk_symbols(hunk: DiffHunk, symbols: Sequence[Symbol]) -> tuple[str, ...]:
    """Qualified names of the functions/classes a hunk changes (base file).

    A change outside every def is ``<module>``; defs the hunk adds count too,
    qualified by where they are inserted.
    """
    lo, hi = hunk.span
    names: set[str] = set()
    if hunk.removed:
        for line in range(lo, hi + 1):
            sym = enclosing(symbols, line)
            names.add(sym.qualname if sym else MODULE_LEVEL)
    scope = ""
    if hunk.added:
        a, b = enclosing(symbols, lo), enclosing(symbols, hi)
        common = a if a is not None and a == b else None
        if common is None and hunk.indented and not hunk.removed:
            # lines appended at the end of a body: the def of the line above
            common = a
        if common is not None:
            names.add(common.qualname)
            scope = common.qualname + "."
        elif not hunk.removed and not hunk.new_defs:
            names.add(MODULE_LEVEL)
    names.update((scope if indent else "") + name for indent, name in hunk.new_defs)
    return tuple(sorted(names))


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


def _node_id(path: str, qualname: str) -> str | None:
    """``path::Class::test`` of the test a qualname lies in, else None."""
    parts = qualname.split(".")
    for i in range(len(parts), 0, -1):
        head = parts[:i]
        if head[-1].startswith("test") and all(p.startswith("Test") for p in head[:-1]):
            return "::".join([path, *head])
    return None


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
            node = _node_id(f.path, name)
            if node:
                targets.append(node)
    return tuple(dict.fromkeys(targets))


def merge_targets(*groups: Iterable[str]) -> tuple[str, ...]:
    """Union of pytest targets; node ids inside a whole-file target are dropped."""
    flat = list(dict.fromkeys(t for g in groups for t in g))
    files = {t for t in flat if "::" not in t}
    return tuple(t for t in flat if "::" not in t or target_file(t) not in files)


def target_file(target: str) -> str:
    """The file of a pytest target (``path.py::node`` -> ``path.py``)."""
    return target.split("::", 1)[0]


def target_folders(targets: Iterable[str]) -> tuple[str, ...]:
    """The folders of some pytest targets, e.g. ``tests/v1/core``."""
    return tuple(sorted({posixpath.dirname(target_file(t)) for t in targets}))


def in_folders(paths: Iterable[str], folders: Iterable[str]) -> tuple[str, ...]:
    """The paths directly inside one of ``folders`` (not in subfolders)."""
    wanted = set(folders)
    return tuple(p for p in paths if posixpath.dirname(p) in wanted)


def junit_module(path: str) -> str:
    """JUnit's dotted module name of a test file (``tests/a/test_b.py``)."""
    return path.removesuffix(".py").replace("/", ".")


def belongs_to(test_id: str, module: str) -> bool:
    """Whether a JUnit test id is in dotted ``module`` (maybe inside a class)."""
    head = test_id.split("::", 1)[0]
    return head == module or head.startswith(module + ".")


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
