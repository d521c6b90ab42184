# SPDX-License-Identifier: Apache-2.0
"""Pure analysis of the two changes: where they overlap, which tests they bring.

Inputs are parsed diffs (:mod:`forkkit.patches.diff`) and file contents;
Python files are mapped to functions/classes with :mod:`ast`. No I/O.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from forkkit.patches.diff import Diff, DiffHunk
from forkkit.patches.paths import is_test_module
from forkkit.patches.symbols import Symbol, enclosing, hunk_symbols, python_symbols
from forkkit.patches.testids import qualname_node, target_file

# Changes this many lines apart or closer are reported as overlapping hunks:
# git's default context, i.e. where a 3-way merge starts to see a conflict.
NEAR = 3


@dataclass(frozen=True)
class HunkRef:
    """A hunk of :mod:`forkkit.patches.diff` and the functions it changes."""

    hunk: DiffHunk
    symbols: tuple[str, ...]

    @property
    def span(self) -> tuple[int, int]:
        return self.hunk.span

    def describe(self) -> str:
        h = self.hunk
        return f"hunk {h.index}/{h.count} (lines {h.span[0]}-{h.span[1]})"


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
    return [HunkRef(h, hunk_symbols(h, symbols)) for h in hunks]


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
