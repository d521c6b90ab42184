# SPDX-License-Identifier: Apache-2.0
"""A verdict for every file of every patch of a rebase, and for a conflict
its kind: what upstream did to the file (pure: no I/O).

A vendor series is a few big patches or many one-file ones; either way the
maintainer asks of each file whether it applies (``clean``, ``3way``),
whether upstream has it already (``absorbed``) or what stands in the way
(``conflict``: ``content``, ``deleted-upstream``, ``added-upstream``,
``renamed``, as git's own rename detection says).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

FileVerdictName = Literal["clean", "3way", "absorbed", "conflict"]
ConflictKind = Literal["", "content", "deleted-upstream", "added-upstream", "renamed"]


@dataclass(frozen=True)
class FileVerdict:
    """One file of one patch on the new upstream."""

    path: str
    verdict: FileVerdictName
    kind: ConflictKind = ""  # a conflict's: what upstream did to the file
    new_path: str = ""  # where upstream moved it (git's rename detection)
    differ: int = 0  # added-upstream: the lines ours and upstream's differ by
    # a content conflict: the patch's hunks of the file (1-based) that the
    # new upstream has already (each reverse-applies there), of ``hunks``
    taken: tuple[int, ...] = ()
    hunks: int = 0

    @property
    def proposal(self) -> str:
        """What ``--take-upstream`` would do with a conflict of this kind;
        for a content conflict upstream partly took, what to resolve it to."""
        if self.kind == "deleted-upstream":
            return "drop it: upstream deleted the file"
        if self.kind == "added-upstream":
            return f"take upstream's file ({self.differ} line(s) differ from ours)"
        if self.kind == "content" and self.taken:
            which = ", ".join(str(n) for n in self.taken)
            rest = self.hunks - len(self.taken)
            keep = f"keep only the other {rest}" if rest else "nothing of ours is left"
            return (
                f"drop hunk(s) {which} of {self.hunks}: upstream has them already "
                f"(each reverse-applies there); {keep}"
            )
        return ""


@dataclass(frozen=True)
class Moves:
    """What upstream did between the old pin and the new one, for the files
    of one patch: which it has at the new pin, which it renamed (old path ->
    new), which existed at the old pin."""

    present: frozenset[str]  # the patch's files the new upstream has
    before: frozenset[str]  # the patch's files the old upstream had
    renamed: Mapping[str, str] = field(default_factory=dict)


def conflict_kind(path: str, *, added: bool, moves: Moves) -> tuple[ConflictKind, str]:
    """Why ``path`` conflicts, and its new name when upstream moved it."""
    if path in moves.renamed:
        return "renamed", moves.renamed[path]
    if added and path in moves.present:
        return "added-upstream", ""
    if path in moves.before and path not in moves.present:
        return "deleted-upstream", ""
    return "content", ""


def file_verdicts(
    files: Sequence[str],
    *,
    status: str,
    absorbed: bool,
    added: Sequence[str],
    moved: Sequence[str],
    conflicted: Sequence[str],
    moves: Moves,
) -> tuple[FileVerdict, ...]:
    """Each file's verdict, from the patch's ``status``, the files whose
    hunks moved (``moved``: applied 3-way) and the unmerged paths a conflict
    left (``conflicted``, their names at the new pin)."""
    out = []
    for path in files:
        new = moves.renamed.get(path, "")
        if absorbed:
            kind: ConflictKind = status if status in _TAKEOVER else ""  # type: ignore[assignment]
            out.append(FileVerdict(path, "absorbed", kind))
        elif path in conflicted or (new and new in conflicted):
            kind, new = conflict_kind(path, added=path in added, moves=moves)
            out.append(FileVerdict(path, "conflict", kind, new))
        elif status != "clean" and (path in moved or new):
            out.append(FileVerdict(path, "3way", new_path=new))
        else:
            out.append(FileVerdict(path, "clean", new_path=new))
    return tuple(out)


_TAKEOVER = ("deleted-upstream", "added-upstream")


def file_counts(verdicts: Sequence[FileVerdict]) -> dict[str, int]:
    """How many files have each verdict, and each conflict kind
    (``conflict/renamed``), in a stable order."""
    found: Counter[str] = Counter(v.verdict for v in verdicts)
    found.update(f"conflict/{v.kind}" for v in verdicts if v.verdict == "conflict")
    order = ["clean", "3way", "absorbed", "conflict"]
    kinds = ["content", "deleted-upstream", "added-upstream", "renamed"]
    order += [f"conflict/{k}" for k in kinds]
    return {k: found[k] for k in order if found[k]}
