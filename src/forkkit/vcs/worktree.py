"""Scratch ``git worktree``s: test another state of a fork without touching it."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from forkkit.output.progress import say
from forkkit.process import pid_alive
from forkkit.vcs.git import Git

SCRATCH_DIR = ".forkkit-worktrees"

# ``git worktree add/remove/prune`` read every entry under .git/worktrees and
# fail on one a sibling is still creating ("failed to read .../commondir"), so
# this process makes and drops its worktrees one at a time. (Processes never
# share a fork: forkkit's lock keeps a second one out.)
_ADMIN = threading.RLock()


def scratch_root(repo: Path) -> Path:
    """Where scratch worktrees of ``repo`` live: a hidden sibling folder."""
    return repo.parent / SCRATCH_DIR


def prune_stale(git: Git) -> list[Path]:
    """Remove scratch worktrees left behind by a killed forkkit (dead pid)."""
    removed: list[Path] = []
    root = scratch_root(git.cwd)
    with _ADMIN:
        if root.is_dir():
            for wt in sorted(root.glob(f"{git.cwd.name}-*-*")):
                pid = wt.name.rsplit("-", 1)[-1]
                if pid.isdigit() and not pid_alive(int(pid)):
                    _remove(git, wt)
                    removed.append(wt)
            if removed:
                with suppress(OSError):
                    root.rmdir()  # only when no other scratch worktree is left
        git.run("worktree", "prune", check=False)
    return removed


def _remove(git: Git, path: Path) -> None:
    """Drop a worktree and its admin entry, even if ``add`` was killed midway."""
    git.run("worktree", "unlock", str(path), check=False)  # 'add' locks while busy
    git.run("worktree", "remove", "--force", "--force", str(path), check=False)
    shutil.rmtree(path, ignore_errors=True)


@contextmanager
def scratch_worktree(git: Git, rev: str, tag: str) -> Iterator[Git]:
    """A detached worktree of ``rev``, removed on exit however the block ends."""
    with _ADMIN:
        for old in prune_stale(git):
            say(f"removed stale worktree {old}")
        path = _free_path(git, tag)
        path.parent.mkdir(parents=True, exist_ok=True)
        # A placeholder claims the name at once: no sibling thread takes it.
        path.mkdir()
    try:
        with _ADMIN:
            git.run(
                "worktree",
                "add",
                "-q",
                "--detach",
                "--force",
                operands=[str(path), rev],
            )
        yield Git(path)
    finally:
        with _ADMIN:
            _remove(git, path)
            git.run("worktree", "prune", check=False)
            with suppress(OSError):
                path.parent.rmdir()  # only when no other scratch worktree is left


def _free_path(git: Git, tag: str) -> Path:
    """An unused scratch worktree path for ``tag`` in this process."""
    root, pid = scratch_root(git.cwd), os.getpid()
    path, n = root / f"{git.cwd.name}-{tag}-{pid}", 1
    while path.exists():  # the same tag already in use in this process
        n += 1
        path = root / f"{git.cwd.name}-{tag}{n}-{pid}"
    return path
