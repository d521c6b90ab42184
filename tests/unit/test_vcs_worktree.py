# SPDX-License-Identifier: Apache-2.0
"""Scratch worktrees made and removed from many threads at once (real git)."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from forkkit.config import ForkConfig
from forkkit.fork.tree import materialize
from forkkit.vcs import Repo, scratch_root


def _use(*, repo: Repo, n: int) -> str:
    with repo.worktree("HEAD", f"t{n % 3}") as wt:
        return (wt.path / "toy/calc.py").read_text()


def test_threads_share_worktree_admin_without_races(toy_project: ForkConfig) -> None:
    """``git worktree add`` reads every admin entry; a half-made one from a
    sibling thread used to fail it ("failed to read .../commondir")."""
    repo = materialize(toy_project).repo
    want = (repo.path / "toy/calc.py").read_text()
    with ThreadPoolExecutor(6) as pool:
        texts = list(pool.map(lambda n: _use(repo=repo, n=n), range(60)))
    assert texts == [want] * 60
    assert not (repo.git_dir() / "worktrees").exists() or not list(
        (repo.git_dir() / "worktrees").iterdir()
    )
    assert not scratch_root(repo.path).exists()


def test_git_housekeeping_is_done_when_the_git_command_returns(
    tmp_path: Path,
) -> None:
    """``gc --auto`` after a commit runs in the foreground: a detached one
    kept a core busy after a fresh fork's first commits, so ``--parallel
    auto`` saw a busy machine and ran the proof on one core."""
    repo = Repo.init(tmp_path / "r")
    where = ["git", "-C", str(repo.path)]
    subprocess.run([*where, "config", "gc.auto", "1"], check=True)
    for i in range(600):  # enough for gc --auto's estimate of loose objects
        (repo.path / f"f{i}.txt").write_text(f"{i}\n")
    subprocess.run([*where, "add", "-A"], check=True)
    repo._git.run("commit", "-q", "-m", "many loose objects")
    git_dir = repo.path / ".git"
    assert not (git_dir / "gc.pid").exists()  # no gc still running behind
    assert list((git_dir / "objects" / "pack").glob("*.pack"))
