# SPDX-License-Identifier: Apache-2.0
"""Scratch worktrees made and removed from many threads at once (real git)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

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
