# SPDX-License-Identifier: Apache-2.0
"""Scratch worktrees made and removed from many threads at once (real git)."""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

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


def test_an_object_found_is_asked_once_and_a_new_repository_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lookup by full object id names the same object for as long as the
    repository exists: git is asked once per process. A repository made
    anew in the same folder is asked again (it may not have the object)."""
    trace = tmp_path / "git.trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))

    def repo_with(text: str) -> tuple[Repo, str]:
        repo = Repo.init(tmp_path / "r")
        (tmp_path / "r" / "f.txt").write_text(text)
        subprocess.run(["git", "add", "f.txt"], cwd=tmp_path / "r", check=True)
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"],
            cwd=tmp_path / "r",
            check=True,
        )
        head = repo.rev("HEAD")
        assert head is not None
        return repo, head

    def asked() -> int:
        return trace.read_text().count("rev-parse") if trace.exists() else 0

    repo, head = repo_with("a\n")
    blob = repo.blob(head, "f.txt")
    before = asked()
    assert repo.blob(head, "f.txt") == blob and repo.rev(head) == head
    assert repo.rev(head) == head and asked() == before + 1  # rev once, blob kept
    shutil.rmtree(tmp_path / "r")
    other, other_head = repo_with("b\n")
    assert other_head != head
    assert other.rev(head) is None and other.blob(head, "f.txt") is None
