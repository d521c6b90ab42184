# SPDX-License-Identifier: Apache-2.0
"""Combining changes for ``forkkit reconcile``: 3-way applies in a scratch
worktree, fetching a change with its history, reading files at a revision.

The work trees these functions write to are forkkit's own scratch worktrees
(see :meth:`forkkit.vcs.Repo.worktree`); none of them touches a user's tree.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.vcs.apply import ApplyResult, apply_result
from forkkit.vcs.git import operand
from forkkit.vcs.repo import Repo


class FetchError(ForkkitError):
    """``git fetch`` failed; ``reason`` is git's last line (``fatal:`` dropped)."""

    def __init__(self, url: str, ref: str, reason: str) -> None:
        self.url = url
        self.ref = ref
        self.reason = reason
        super().__init__(f"{url}: cannot fetch {ref!r} ({reason})")


def fetch_ref(repo: Repo, *, url: str, ref: str, dest: str) -> str:
    """Fetch ``ref`` of ``url`` with its history into ref ``dest``; its commit.

    Unlike :func:`forkkit.vcs.fetch_rev` this is never shallow: the merge
    base of two fetched revisions must be computable.
    """
    operand(url, what="git URL")
    operand(ref, what="git ref")
    proc = repo._git.run(
        "fetch", "-q", "--no-tags", check=False, operands=[url, f"+{ref}:{dest}"]
    )
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        why = lines[-1].removeprefix("fatal: ") if lines else f"exit {proc.returncode}"
        raise FetchError(url, ref, why)
    sha = repo.rev(dest)
    if sha is None:
        raise FetchError(url, ref, f"{ref} is not a commit")
    return sha


def merge_base(repo: Repo, a: str, b: str) -> str | None:
    """The best common ancestor of two commits, or None (no common history)."""
    proc = repo._git.run("merge-base", check=False, operands=[a, b])
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def show_text(repo: Repo, rev: str, path: str) -> str | None:
    """The text of ``path`` at ``rev`` (None when it is not there)."""
    proc = repo._git.run("show", check=False, operands=[f"{rev}:{path}"])
    return proc.stdout if proc.returncode == 0 else None


def apply_3way(repo: Repo, patch: Path) -> ApplyResult:
    """Apply a diff to the work tree and index, falling back to a 3-way merge.

    On a conflict the result is not ``ok`` and :meth:`Repo.unmerged` names
    the conflicted paths (conflict markers are in the work tree).
    """
    args = ("apply", "--3way", "--whitespace=nowarn", str(patch))
    proc = repo._git.run(*args, check=False)
    if proc.returncode == 0:
        return ApplyResult(ok=True)
    return apply_result(proc.stderr + proc.stdout)


def am_3way(repo: Repo, patch: Path) -> ApplyResult:
    """Apply a mail-format patch as a commit (3-way); aborted when it fails."""
    proc = repo._git.run("am", "-q", "--3way", "--keep-cr", str(patch), check=False)
    if proc.returncode == 0:
        return ApplyResult(ok=True)
    repo._git.run("am", "--abort", check=False)
    return apply_result(proc.stderr + proc.stdout)


def commit_index(repo: Repo, message: str) -> str:
    """Commit the index on HEAD (empty allowed); return the new commit."""
    repo._git.run("commit", "-q", "--allow-empty", "-m", message)
    sha = repo.rev("HEAD")
    assert sha is not None
    return sha


def restore_paths(repo: Repo, rev: str, paths: Sequence[str]) -> None:
    """Put ``paths`` back as they are at ``rev`` (work tree and index)."""
    if paths:
        repo._git.run("checkout", "-q", "-f", operand(rev), "--", *paths)


def unstage_paths(repo: Repo, paths: Sequence[str]) -> None:
    """Drop ``paths`` from the index (missing ones are ignored)."""
    if paths:
        args = ("rm", "-q", "-f", "--cached", "--ignore-unmatch", "--", *paths)
        repo._git.run(*args)


def worktree_tree(repo: Repo) -> str:
    """The tree of the work tree as it is now (stages every change first)."""
    repo._git.run("add", "-A", ".")
    return repo._git.out("write-tree")
