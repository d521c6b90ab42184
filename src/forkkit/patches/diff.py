# SPDX-License-Identifier: Apache-2.0
"""The one diff model: files and hunks of a unified diff, parsed with unidiff.

Accepts ``git format-patch`` mails (several in a row), ``git diff`` and plain
``diff -u`` output. Every hunk also carries its standalone patch text (its
file's header plus the hunk) for per-hunk ``git apply`` checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk as UnidiffHunk
from unidiff.patch import PatchedFile, PatchSet

from forkkit.errors import ForkkitError
from forkkit.patches.paths import is_test_path

_DEF = re.compile(r"^(\s*)(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")
_LINES = re.compile(r"[^\n]*\n|[^\n]+\Z")

FileStatus = Literal["added", "removed", "modified", "renamed"]


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
    header_line: str = ""  # the ``@@`` line exactly as the diff writes it
    text: str = ""  # a standalone patch of this hunk: file header + hunk

    @property
    def header(self) -> str:
        """The ``@@`` line with both counts written out."""
        head = (
            f"@@ -{self.old_start},{self.old_len} +{self.new_start},{self.new_len} @@"
        )
        return f"{head} {self.section}".rstrip()

    def describe(self) -> str:
        return f"hunk {self.index}/{self.count} of {self.path} ({self.header_line})"


@dataclass(frozen=True)
class FileDiff:
    """All hunks of one file."""

    path: str  # new path (old path for a removal)
    old_path: str
    status: FileStatus
    hunks: tuple[DiffHunk, ...]


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

    @property
    def all_hunks(self) -> tuple[DiffHunk, ...]:
        return tuple(h for f in self.files for h in f.hunks)

    def hunks(self, path: str) -> tuple[DiffHunk, ...]:
        return tuple(h for f in self.files if f.path == path for h in f.hunks)

    def stats(self) -> dict[str, int]:
        hunks = self.all_hunks
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


@dataclass(frozen=True)
class _Change:
    """What a hunk's body changes, line by line."""

    span: tuple[int, int]
    new_defs: tuple[tuple[int, str], ...]
    added_lines: tuple[int, ...]
    indented: bool


def _change(h: UnidiffHunk) -> _Change:
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
    return _Change(span, tuple(new_defs), tuple(added_lines), bool(indented))


def _hunk_lines(lines: list[str], h: UnidiffHunk) -> tuple[int, int]:
    """0-based [first, end) of a hunk in ``lines``: its ``@@`` line to its last
    body line, a trailing ``\\ No newline at end of file`` included."""
    numbered = [ln.diff_line_no for ln in h if ln.diff_line_no]
    if not numbered:
        return 0, 0
    first, end = numbered[0] - 2, numbered[-1]
    while end < len(lines) and lines[end].startswith("\\"):
        end += 1
    return first, end


def _file_hunks(pf: PatchedFile, path: str, lines: list[str]) -> tuple[DiffHunk, ...]:
    ranges = [_hunk_lines(lines, h) for h in pf]
    start = (pf.diff_line_no or 1) - 1
    if start > 0 and lines[start].startswith("+++ ") and lines[start - 1][:4] == "--- ":
        start -= 1  # a plain diff: the file starts at its "---" line
    head = "".join(lines[start : ranges[0][0]]) if ranges else ""
    out = []
    for i, (h, (a, b)) in enumerate(zip(pf, ranges, strict=True), 1):
        c = _change(h)
        out.append(
            DiffHunk(
                path=path,
                index=i,
                count=len(pf),
                old_start=h.source_start,
                old_len=h.source_length,
                new_start=h.target_start,
                new_len=h.target_length,
                section=h.section_header.strip(),
                added=h.added,
                removed=h.removed,
                span=c.span,
                new_defs=c.new_defs,
                added_lines=c.added_lines,
                indented=c.indented,
                header_line=lines[a].rstrip() if b else "",
                text=head + "".join(lines[a:b]),
            )
        )
    return tuple(out)


def _file(pf: PatchedFile, lines: list[str]) -> FileDiff:
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
    hunks = _file_hunks(pf, path, lines)
    return FileDiff(path=path, old_path=old, status=status, hunks=hunks)


def parse_diff(text: str, source: str = "diff") -> Diff:
    """Parse a unified diff (also several ``git format-patch`` mails in a row)."""
    try:
        patch_set = PatchSet(text)
    except UnidiffParseError as exc:
        crlf = " (its lines end in CRLF: convert them to LF)" if "\r\n" in text else ""
        raise ForkkitError(
            f"{source}: not a unified diff ({' '.join(str(exc).split())}){crlf}; "
            "pass git format-patch output or a plain 'diff -u'/'git diff'"
        ) from None
    lines = _LINES.findall(text)
    files = tuple(_file(pf, lines) for pf in patch_set)
    if not files:
        raise ForkkitError(
            f"{source}: contains no file changes; pass a patch with 'diff' hunks"
        )
    return Diff(files=files)


def split_hunks(text: str) -> tuple[DiffHunk, ...]:
    """Every hunk of a patch; each one's ``text`` is ``git apply``-able alone."""
    return parse_diff(text, "patch").all_hunks
