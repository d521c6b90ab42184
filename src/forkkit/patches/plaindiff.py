# SPDX-License-Identifier: Apache-2.0
"""A plain unified diff as vendors carry it (``git diff``, ``diff -ruN``, a
``-p0`` diff with labels such as ``(v0.19.0 upstream)``), made into the
series' mails (pure: no I/O).

git itself reads the diff (``git apply``, by :mod:`forkkit.vcs`) onto the
fork's HEAD; what it gives is cut into parts (one per file, or per top-level
folder) and each part becomes one format-patch mail whose message names its
source and part.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from forkkit.errors import ForkkitError

Split = Literal["none", "files", "dirs"]
DEFAULT_AUTHOR = "forkkit import <import@forkkit.invalid>"
# every imported mail has this date: the same diff gives the same patches
MAIL_DATE = "Thu, 1 Jan 1970 00:00:00 +0000"

_MAIL_FROM = re.compile(r"^From [0-9a-f]{40}(?:[0-9a-f]{24})? ", re.M)
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@", re.M)


@dataclass(frozen=True, kw_only=True)
class Import:
    """How a plain diff becomes patches: its mails' author, subject and
    message (defaults name the source file), and how it is cut."""

    author: str = DEFAULT_AUTHOR
    subject: str = ""  # default: "Import SOURCE"
    message: str = ""  # default: "Imported from SOURCE, a plain diff."
    split: Split = "none"


@dataclass(frozen=True)
class Part:
    """One patch of a split diff: a name and the paths it holds."""

    name: str
    paths: tuple[str, ...]


def is_mail(text: str) -> bool:
    """Whether ``text`` is git format-patch output (or an mbox of it): a
    mail's ``From <sha>`` line, or a ``Subject:`` header before the diff."""
    if _MAIL_FROM.search(text):
        return True
    head = re.split(r"^(?:diff |--- )", text, maxsplit=1, flags=re.M)[0]
    return re.search(r"^Subject: ", head, re.M) is not None


def check_plain(text: str, *, where: str) -> None:
    """One line unless ``text`` is a unified diff git can read as it is."""
    # a file's own CRLF lines are its content; a header's mean the whole diff
    # was converted (an editor, git's autocrlf), and git would misread it
    if re.search(r"^(?:diff |--- |\+\+\+ |@@ ).*\r$", text, re.M):
        raise ForkkitError(
            f"{where}: its lines end in CRLF; convert them to LF (e.g. dos2unix) "
            "and add it again"
        )
    if not _HUNK.search(text) and not re.search(r"^diff --git ", text, re.M):
        raise ForkkitError(
            f"{where}: not a diff (no '@@' hunk, no 'diff --git' line); pass a "
            "unified diff (git diff, diff -ruN) or git format-patch output"
        )


_LABEL = re.compile(r"^(---|\+\+\+) (\S+) \([^()\t]*\)$")


def unlabelled(text: str) -> str:
    """``text`` with the labels of its file headers dropped (``--- PATH
    (v0.19.0 upstream)``: ``--- PATH``), which git would read as part of
    the name; a tab-separated timestamp stays (git reads it)."""
    lines = text.split("\n")
    for i in range(len(lines) - 1):
        old, new = lines[i], lines[i + 1]
        if not (old.startswith("--- ") and new.startswith("+++ ")):
            continue
        lines[i], lines[i + 1] = _LABEL.sub(r"\1 \2", old), _LABEL.sub(r"\1 \2", new)
    return "\n".join(lines)


def check_field(value: str, *, option: str) -> str:
    """A mail header's value from the command line: one line, not empty."""
    if not value.strip() or "\n" in value or "\r" in value:
        raise ForkkitError(f"{option} {value!r}: give one non-empty line")
    return value.strip()


def check_message(value: str) -> str:
    """A commit message from the command line: no line a mail would read as
    the end of the message (``---``, ``diff ...``)."""
    if re.search(r"^(?:---|diff )", value, re.M) or "\r" in value:
        raise ForkkitError(
            "--message: a line of it reads as the start of the diff ('---' or "
            "'diff ...'); reword it"
        )
    return value.strip()


def raw_hunk(text: str, path: str, line: int) -> str:
    """``PATH @@ ... @@``: the hunk of ``path`` in a plain diff whose old
    range starts at ``line`` (``git apply`` names a failing hunk so)."""
    sections = re.split(r"^(?=diff |--- )", text, flags=re.M)
    for section in sections:
        names = re.findall(r"^(?:---|\+\+\+) (\S+)", section, re.M)
        if not any(n == path or n.endswith("/" + path) for n in names):
            continue
        for m in _HUNK.finditer(section):
            if int(m.group(1)) == line:
                return f"{path} {m.group(0)}"
    return f"{path} line {line}"


def parts(paths: Sequence[str], split: Split) -> list[Part]:
    """The patches a diff of ``paths`` is cut into: one (``none``), one per
    file, or one per top-level folder (files at the top: one each)."""
    ordered = sorted(paths)
    if split == "none":
        return [Part("", tuple(ordered))]
    if split == "files":
        return [Part(p, (p,)) for p in ordered]
    groups: dict[str, list[str]] = {}
    for p in ordered:
        top = p.split("/", 1)[0] if "/" in p else p
        groups.setdefault(top, []).append(p)
    return [Part(top, tuple(ps)) for top, ps in groups.items()]


def part_mail(
    diff: str, *, how: Import, source: str, part: Part, index: tuple[int, int]
) -> str:
    """One part's format-patch mail: its message names the source file and
    the part (``i/n``); ``Forkkit-Fix`` is added later, as for any patch."""
    i, n = index
    subject = (how.subject or f"Import {source}") + (f": {part.name}" if n > 1 else "")
    message = how.message or f"Imported from {source}, a plain diff."
    body = (
        f"{message}\n\nPart {i} of {n} of {source}: {part.name}.\n"
        if n > 1
        else message
    )
    return (
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        f"From: {how.author}\nDate: {MAIL_DATE}\nSubject: [PATCH] {subject}\n\n"
        f"{body.rstrip()}\n---\n{diff}"
    )
