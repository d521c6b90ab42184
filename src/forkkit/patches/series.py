# SPDX-License-Identifier: Apache-2.0
"""The patch series: ``patches/series`` plus git-format patches (pure parsing)."""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass
from email.header import decode_header, make_header
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.patches.diff import DiffHunk, parse_diff


@dataclass(frozen=True)
class Patch:
    """One git-format patch of the series."""

    path: Path
    subject: str
    files: tuple[str, ...]
    hunks: tuple[DiffHunk, ...]
    message: str = ""  # the commit message's body (trailers included)
    added: tuple[str, ...] = ()  # the files the patch creates
    sha256: str = ""  # of the patch's text
    old_paths: tuple[str, ...] = ()  # the old path of each file it renames

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class Series:
    """The ordered patches and a digest of their exact bytes."""

    patches: tuple[Patch, ...]
    digest: str


def parse_patch_text(text: str, path: Path) -> Patch:
    """Parse the subject, touched files and hunks of a git-format patch."""
    subject = ""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Subject: "):
            subject = line[len("Subject: ") :]
            j = i + 1
            while j < len(lines) and lines[j].startswith(" "):
                subject += lines[j]
                j += 1
            if "=?" in subject:  # RFC 2047 encoded words (non-ASCII subjects)
                subject = str(make_header(decode_header(subject)))
            subject = re.sub(r"^\[PATCH[^\]]*\]\s*", "", subject)
            break
    if not re.search(r"^diff --git ", text, re.M):
        raise ForkkitError(f"{path}: not a git-format patch (no 'diff --git' lines)")
    diff = parse_diff(text, str(path))
    refuse_outside_links(text, path)
    files = tuple(f.path for f in diff.files)
    return Patch(
        path=path,
        subject=subject,
        files=files,
        hunks=diff.all_hunks,
        message=_body(lines),
        added=tuple(f.path for f in diff.files if f.status == "added"),
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        old_paths=tuple(f.old_path for f in diff.files if f.status == "renamed"),
    )


_GIT_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)
_LINK_MODE = re.compile(r"^(?:new file mode|new mode) 120000$", re.M)


def refuse_outside_links(text: str, path: Path) -> None:
    """One line for a symlink the patch makes that points outside the tree
    (an absolute target, or one that climbs above the top with ``..``): a
    test behind it would run code from outside the commit."""
    starts = list(_GIT_FILE.finditer(text))
    for i, m in enumerate(starts):
        block = text[m.end() : starts[i + 1].start() if i + 1 < len(starts) else None]
        if not _LINK_MODE.search(block):
            continue
        added = [
            ln[1:]
            for ln in block.splitlines()
            if ln.startswith("+") and not ln.startswith("+++")
        ]
        target = added[0] if added else ""
        where = posixpath.normpath(
            posixpath.join(posixpath.dirname(m.group(2)), target)
        )
        if target.startswith("/") or where == ".." or where.startswith("../"):
            raise ForkkitError(
                f"{path}: {m.group(2)} is a symlink to {target!r}, outside the "
                "tree; commit the file itself (a run tests only what the commit holds)"
            )


def _body(lines: list[str]) -> str:
    """The message body of a mail: after the headers' blank line, up to the
    ``---`` line that starts the diffstat (or the first ``diff --git``)."""
    try:
        start = lines.index("") + 1
    except ValueError:
        return ""
    out = []
    for line in lines[start:]:
        if line == "---" or line.startswith("diff --git "):
            break
        out.append(line)
    return "\n".join(out).strip() + "\n"


def hunk_at(patch: Patch, path: str, line: int) -> DiffHunk | None:
    """The hunk of ``patch`` in ``path`` whose old range starts at ``line``.

    ``git apply`` reports a failing hunk by its old start line; fall back to
    the hunk whose range contains it, then to the file's first hunk.
    """
    cands = [h for h in patch.hunks if h.path == path]
    for h in cands:
        if h.old_start == line:
            return h
    for h in cands:
        if h.old_start <= line < h.old_start + max(h.old_len, 1):
            return h
    return cands[0] if cands else None


def failed_hunk(patch: Patch, path: str, line: int) -> str:
    """Names the hunk ``git apply`` stopped at (``path``, old start ``line``)."""
    hunk = hunk_at(patch, path, line)
    return hunk.describe() if hunk else f"{path} line {line}"


def series_entries(text: str) -> list[tuple[int, str]]:
    """``(line number, patch name)`` of a quilt-style ``series`` file; each
    name is a file of ``patches/`` itself (one line otherwise)."""
    entries = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line:
            name = line.split()[0]
            if "/" in name or "\\" in name or name in (".", ".."):
                raise ForkkitError(
                    f"series:{lineno}: '{name}' is not a file name in patches/; "
                    "name a patch file of patches/ itself (no folders, no '..')"
                )
            entries.append((lineno, name))
    return entries


def parse_series_file(text: str) -> list[str]:
    """Patch names from a quilt-style ``series`` file (comments, blanks ignored)."""
    return [name for _, name in series_entries(text)]


def rewrite_series_text(old_text: str, names: list[str]) -> str:
    """``old_text`` with its patch entries replaced by ``names``, comments kept.

    Comment and blank lines stay where they are; the i-th entry line becomes
    the i-th new name; surplus old entries are dropped and surplus new names
    follow the last entry (or the end when there was none).
    """
    lines = old_text.splitlines()
    entry_lines = {lineno - 1 for lineno, _ in series_entries(old_text)}
    out: list[str] = []
    todo = list(names)
    last_entry = -1
    for i, line in enumerate(lines):
        if i not in entry_lines:
            out.append(line)
            continue
        if todo:
            comment = line.split("#", 1)[1] if "#" in line else None
            name = todo.pop(0)
            out.append(name if comment is None else f"{name}  #{comment}")
            last_entry = len(out) - 1
    at = last_entry + 1 if last_entry >= 0 else len(out)
    out[at:at] = todo
    return "".join(f"{line}\n" for line in out)
