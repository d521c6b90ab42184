# SPDX-License-Identifier: Apache-2.0
"""Whole-tree resolutions of a conflicted cherry-pick (real git)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from forkkit.vcs import Repo, merge, resolution


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "HOME": str(repo),
        "PATH": "/usr/bin:/bin",
    }
    proc = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


def _commit(repo: Path, files: dict[str, str | None], msg: str) -> str:
    for name, text in files.items():
        if text is None:
            _git(repo, "rm", "-q", name)
        else:
            (repo / name).write_text(text)
            _git(repo, "add", name)
    _git(repo, "commit", "-qm", msg)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def picked(tmp_path: Path) -> tuple[Repo, str, str]:
    """A repo whose main line deletes b.txt and rewrites a.txt, and a side
    commit editing both: (repo, the side commit, the main line's HEAD)."""
    path = tmp_path / "r"
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    base = _commit(path, {"a.txt": "one\n", "b.txt": "bee\n"}, "base")
    _git(path, "checkout", "-q", "-b", "side")
    side = _commit(path, {"a.txt": "two\n", "b.txt": "bee!\n"}, "side")
    _git(path, "checkout", "-q", "main")
    _commit(path, {"a.txt": "three\n", "b.txt": None}, "main")
    assert base
    repo = Repo(path)
    assert not merge.cherry_pick(repo, side).ok
    return repo, side, _git(path, "rev-parse", "HEAD")


def test_nothing_is_recorded_until_every_conflict_is_resolved(
    picked: tuple[Repo, str, str],
) -> None:
    repo, side, head = picked
    path = repo.path
    assert resolution.record(repo) is False  # markers in a.txt
    (path / "a.txt").write_text("two and three\n")
    # b.txt: modify/delete, no markers anywhere, yet not resolved
    assert resolution.record(repo) is False
    (path / "b.txt").write_text("<<<<<<< HEAD\n=======\nbee!\n>>>>>>> side\n")
    _git(path, "add", "b.txt")  # staged with markers: still a conflict
    assert resolution.record(repo) is False
    (path / "b.txt").write_text("bee!\n")
    _git(path, "add", "b.txt")
    (path / "c.txt").write_text("a new file the resolution needs\n")
    assert resolution.record(repo) is True

    # replayed whole onto the same tree, the new file included
    merge.abort_pick(repo)
    _git(path, "clean", "-qfd")
    assert _git(path, "rev-parse", "HEAD") == head
    assert not merge.cherry_pick(repo, side).ok
    assert resolution.replay(repo, side)
    merge.continue_pick(repo)
    assert (path / "a.txt").read_text() == "two and three\n"
    assert (path / "b.txt").read_text() == "bee!\n"
    assert (path / "c.txt").is_file()
