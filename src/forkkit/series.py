"""The patch series: ``patches/series`` plus git-format patches (pure parsing)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from forkkit.errors import ForkkitError

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")


@dataclass(frozen=True)
class Hunk:
    """One hunk of one file in a patch."""

    path: str
    index: int  # 1-based within its file
    count: int  # hunks in that file
    old_start: int
    old_len: int
    header: str

    def describe(self) -> str:
        return f"hunk {self.index}/{self.count} of {self.path} ({self.header.strip()})"


@dataclass(frozen=True)
class Patch:
    """One git-format patch of the series."""

    path: Path
    subject: str
    files: tuple[str, ...]
    hunks: tuple[Hunk, ...]

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
            subject = re.sub(r"^\[PATCH[^\]]*\]\s*", "", subject)
            break
    files: list[str] = []
    raw_hunks: list[tuple[str, int, int, str]] = []
    current = ""
    for line in lines:
        if line.startswith("diff --git "):
            m = re.match(r"diff --git a/(.*) b/(.*)$", line)
            current = m.group(2) if m else line.split()[-1]
            files.append(current)
        elif line.startswith("+++ ") and line != "+++ /dev/null" and current:
            # the b/ path is authoritative for renames
            current = line[len("+++ b/") :] if line.startswith("+++ b/") else current
        elif (m := _HUNK.match(line)) and current:
            raw_hunks.append((current, int(m.group(1)), int(m.group(2) or 1), line))
    if not files:
        raise ForkkitError(f"{path}: not a git-format patch (no 'diff --git' lines)")
    per_file: dict[str, int] = {}
    for f, *_ in raw_hunks:
        per_file[f] = per_file.get(f, 0) + 1
    seen: dict[str, int] = {}
    hunks = []
    for f, start, length, header in raw_hunks:
        seen[f] = seen.get(f, 0) + 1
        hunks.append(Hunk(f, seen[f], per_file[f], start, length, header))
    return Patch(path=path, subject=subject, files=tuple(files), hunks=tuple(hunks))


def hunk_at(patch: Patch, path: str, line: int) -> Hunk | None:
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


def parse_series_file(text: str) -> list[str]:
    """Patch names from a quilt-style ``series`` file (comments, blanks ignored)."""
    names = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            names.append(line.split()[0])
    return names


def load_series(series_file: Path, patches_dir: Path) -> Series:
    """Read and parse every patch named by ``series_file``, in order."""
    if not series_file.exists():
        raise ForkkitError(
            f"{series_file}: missing; list the patches to apply, one per line"
        )
    names = parse_series_file(series_file.read_text())
    h = hashlib.sha256()
    patches = []
    for lineno, name in enumerate(names, 1):
        p = patches_dir / name
        if not p.is_file():
            raise ForkkitError(
                f"{series_file.name}:{lineno}: patch '{name}' not found in "
                f"{patches_dir}; add the file or remove the line"
            )
        data = p.read_bytes()
        h.update(name.encode() + b"\0" + data + b"\0")
        patches.append(parse_patch_text(data.decode("utf-8", "replace"), p))
    return Series(patches=tuple(patches), digest=h.hexdigest())
