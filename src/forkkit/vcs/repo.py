# SPDX-License-Identifier: Apache-2.0
"""``Repo``: the typed git operations the rest of forkkit may use, one part
per git concept: the object store (:mod:`.objects`), refs (:mod:`.refs`) and
the work tree with its index (:mod:`.checkout`).

Every method is one git concept (a ref, a tree, a checkout, a patch); none
of them exposes the git command line. Operations that rewrite a work tree
say so in their names (``force_checkout``, ``reset_hard``).
"""

from __future__ import annotations

from pathlib import Path

from forkkit.vcs.checkout import WorkTree
from forkkit.vcs.git import Git, GitError
from forkkit.vcs.objects import Identity, Objects
from forkkit.vcs.refs import ZERO, Refs, RefUpdate


class Repo(Objects, Refs, WorkTree):
    """One git repository (or worktree) on disk."""

    def __repr__(self) -> str:
        return f"Repo({str(self.path)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Repo) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    @classmethod
    def init(cls, path: Path, *, bare: bool = False) -> Repo:
        """Create an empty repository (branch ``main``) at ``path``."""
        Git.init(path, bare=bare)
        return cls(path)

    @staticmethod
    def is_repo_root(path: Path) -> bool:
        """Whether ``path`` is the top of a work tree (a ``.git`` entry)."""
        return (path / ".git").exists()


__all__ = ["ZERO", "GitError", "Identity", "RefUpdate", "Repo"]
