# SPDX-License-Identifier: Apache-2.0
"""The refs of a repository: reading them, moving them in one transaction,
tags and the local config (a part of :class:`~forkkit.vcs.repo.Repo`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from forkkit.vcs.git import GitBound

ZERO = "0" * 40


@dataclass(frozen=True)
class RefUpdate:
    """Set ``ref`` to ``new`` (delete when empty) iff it now holds ``old``.

    ``old`` None: no expectation; ``old`` ``ZERO``: the ref must not exist.
    """

    ref: str
    new: str
    old: str | None = None


class Refs(GitBound):
    """Refs, tags and config."""

    def refs(self, prefix: str) -> dict[str, str]:
        """``ref -> object id`` of the refs under ``prefix``."""
        out = self._git.out("for-each-ref", "--format=%(refname) %(objectname)", prefix)
        return dict(line.split(" ", 1) for line in out.splitlines() if line)

    def update_refs(self, updates: Sequence[RefUpdate]) -> None:
        """Apply ``updates`` in one transaction: all of them or none.

        Raises :class:`GitError` when a ref does not hold its expected value.
        """
        lines = ["start"]
        for u in updates:
            old = "" if u.old is None else f" {u.old}"
            if u.new:
                lines.append(f"update {u.ref} {u.new}{old}")
            else:
                lines.append(f"delete {u.ref}{old}")
        lines += ["prepare", "commit", ""]
        self._git.run("update-ref", "--stdin", input="\n".join(lines))

    def tag(self, name: str, rev: str) -> None:
        """Point lightweight tag ``name`` at ``rev`` (moving it if present)."""
        self._git.run("tag", "-f", operands=[name, rev])

    def branch(self) -> str | None:
        """The checked-out branch, or None when HEAD is detached."""
        proc = self._git.run("symbolic-ref", "-q", "--short", "HEAD", check=False)
        return proc.stdout.strip() or None

    def set_config(self, key: str, value: str) -> None:
        """Set a repository-local config value."""
        self._git.run("config", key, value)
