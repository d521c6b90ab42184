# SPDX-License-Identifier: Apache-2.0
"""Reading the user's ``patches/series`` and the patches it names.

The parsing is pure (:mod:`forkkit.patches.series`); this module does the
file reads and turns every bad path or encoding into a one-line error.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.patches.pending import Pending, parse_pending
from forkkit.patches.retired import Retired, parse_retired
from forkkit.patches.series import Series, parse_patch_text, series_entries


def read_series_text(series_file: Path) -> str:
    """The text of ``series_file``; one-line errors for a bad path or encoding."""
    if not series_file.exists():
        raise ForkkitError(
            f"{series_file}: missing; list the patches to apply, one per line"
        )
    if not series_file.is_file():
        raise ForkkitError(
            f"{series_file}: not a file; the series lists the patches to apply, "
            "one per line"
        )
    data = _read_bytes(series_file)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ForkkitError(
            f"{series_file}: not UTF-8 (byte {exc.start}); save it as UTF-8"
        ) from None


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ForkkitError(
            f"{path}: cannot read ({exc.strerror}); fix its permissions"
        ) from None


def load_series(series_file: Path, patches_dir: Path) -> Series:
    """Read and parse every patch named by ``series_file``, in order."""
    entries = series_entries(read_series_text(series_file))
    h = hashlib.sha256()
    patches = []
    seen: set[str] = set()
    for lineno, name in entries:
        if name in seen:
            raise ForkkitError(
                f"{series_file.name}:{lineno}: patch '{name}' is listed twice; "
                "remove the duplicate line"
            )
        seen.add(name)
        p = (patches_dir / name).absolute()
        if not p.is_file():
            raise ForkkitError(
                f"{series_file.name}:{lineno}: patch '{name}' not found in "
                f"{patches_dir}; add the file or remove the line"
            )
        data = _read_bytes(p)
        h.update(name.encode() + b"\0" + data + b"\0")
        patches.append(parse_patch_text(data.decode("utf-8", "replace"), p))
    return Series(patches=tuple(patches), digest=h.hexdigest())


def _record_text(path: Path, what: str) -> str | None:
    """A record file's text (None when it is absent); one-line errors."""
    try:
        return path.read_bytes().decode()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ForkkitError(
            f"{path}: cannot read the {what} patches ({exc}); restore it from git"
        ) from None


def read_retired(path: Path) -> tuple[Retired, ...]:
    """The entries of ``path`` (none when it is absent); one-line errors."""
    text = _record_text(path, "retired")
    return () if text is None else parse_retired(text, where=str(path))


def read_pending(path: Path) -> tuple[Pending, ...]:
    """The entries of ``path`` (none when it is absent); one-line errors."""
    text = _record_text(path, "pending")
    return () if text is None else parse_pending(text, where=str(path))
