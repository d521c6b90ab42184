# SPDX-License-Identifier: Apache-2.0
"""Merging for ``forkkit rebase``: cherry-picks with rerere, overlays, range-diff.

These work on forkkit's own scratch repositories (the rebase repo), which
only forkkit writes, under the workdir lock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.vcs.repo import Repo

_RERERE = (
    ("rerere.enabled", "true"),
    ("rerere.autoupdate", "true"),
    ("gc.rerereResolved", "3650"),
    ("gc.rerereUnresolved", "3650"),
)


@dataclass(frozen=True)
class Entry:
    """One file of a tree or an index: its mode and blob."""

    mode: str
    blob: str


@dataclass(frozen=True)
class PickResult:
    """The outcome of a cherry-pick.

    On failure: ``unmerged`` lists the conflicted paths; with none, either
    the change is already there (``empty``) or rerere resolved every
    conflict from a recorded resolution (``replayed``).
    """

    ok: bool
    unmerged: tuple[str, ...] = ()
    empty: bool = False
    replayed: bool = False
    message: str = ""


def head(repo: Repo) -> str:
    """The commit HEAD names (the repository must have one)."""
    sha = repo.rev("HEAD")
    if sha is None:
        raise ForkkitError(f"{repo.path}: no commit checked out; delete the folder")
    return sha


def clear_stale_locks(repo: Repo) -> list[Path]:
    """Remove lock files a killed git left behind (index, HEAD, refs).

    Only for repositories that forkkit alone writes, under the workdir lock:
    no other git process can be running there.
    """
    git_dir = repo.git_dir()
    locks = [
        git_dir / "index.lock",
        git_dir / "HEAD.lock",
        git_dir / "packed-refs.lock",
    ]
    locks += sorted((git_dir / "refs").rglob("*.lock"))
    removed = [p for p in locks if p.is_file()]
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


def enable_rerere(repo: Repo) -> None:
    """Record conflict resolutions and keep them (about ten years)."""
    for key, value in _RERERE:
        repo.set_config(key, value)


def record_resolutions(repo: Repo) -> int:
    """Let rerere record conflicts resolved by hand since the last run.

    Returns how many resolutions it recorded.
    """
    if not (repo.git_dir() / "MERGE_RR").exists():
        return 0
    proc = repo._git.run("rerere", check=False)
    return (proc.stdout + proc.stderr).count("Recorded resolution for")


def reset_scratch(repo: Repo) -> None:
    """Abort half-done operations, discard edits and untracked files."""
    repo.abort_operations()
    if repo.rev("HEAD"):
        repo.reset_hard()
    repo._git.run("clean", "-qfd")


def cherry_pick(repo: Repo, commit: str) -> PickResult:
    """Cherry-pick ``commit`` onto HEAD (3-way, rerere replays resolutions)."""
    proc = repo._git.run("cherry-pick", check=False, operands=[commit])
    if proc.returncode == 0:
        return PickResult(ok=True)
    text = proc.stdout + proc.stderr
    unmerged = tuple(repo.unmerged())
    return PickResult(
        ok=False,
        unmerged=unmerged,
        empty=not unmerged and repo.nothing_staged(),
        replayed=not unmerged and "previous resolution" in text,
        message=(text.strip().splitlines() or ["cherry-pick failed"])[-1],
    )


def continue_pick(repo: Repo) -> None:
    """Commit a cherry-pick whose conflicts are resolved (message unchanged)."""
    repo._git.run("cherry-pick", "--continue", extra_env={"GIT_EDITOR": "true"})


def skip_pick(repo: Repo) -> None:
    """Drop the cherry-pick in progress (an empty one)."""
    repo._git.run("cherry-pick", "--skip", check=False)


def abort_pick(repo: Repo) -> None:
    """Abort the cherry-pick in progress, restoring HEAD."""
    repo._git.run("cherry-pick", "--abort", check=False)


def entries(
    repo: Repo, paths: Sequence[str], *, rev: str | None
) -> dict[str, Entry | None]:
    """Each path's entry at ``rev`` (``None``: the index, stage 0); None if absent."""
    found: dict[str, Entry | None] = dict.fromkeys(paths)
    if not paths:
        return found
    if rev is None:
        out = repo._git.out("ls-files", "-s", "--", *paths)
    else:
        out = repo._git.run("ls-tree", "-r", operands=[rev], paths=paths).stdout.strip()
    for line in out.splitlines():
        meta, path = line.split("\t", 1)
        fields = meta.split()
        if rev is None and fields[2] != "0":
            continue  # a conflict stage
        blob = fields[1] if rev is None else fields[2]
        found[path] = Entry(mode=fields[0], blob=blob)
    return found


def overlay(
    repo: Repo, *, base: str, files: Mapping[str, Entry | None], message: str
) -> str:
    """A commit on ``base`` with ``files`` replaced (None: removed)."""
    with repo.scratch_index("overlay") as index:
        index.read_tree(base)
        for path, entry in files.items():
            if entry is None:
                index.set_entry(path, None)
            else:
                index.set_entry(path, entry.blob, entry.mode)
        tree = index.write_tree()
    return repo.commit_tree(tree=tree, message=message + "\n", parents=[base])


def range_diff(repo: Repo, *, old: tuple[str, str], new: tuple[str, str]) -> str:
    """``git range-diff`` of the commits ``old`` (base, head) against ``new``."""
    old_range = f"{old[0]}..{old[1]}"
    if new[0] != new[1]:
        return repo._git.out("range-diff", "--no-color", old_range, "..".join(new))
    # git refuses an empty range: every old commit was dropped
    return "\n".join(
        f"{n}:  {sha} < -:  ------- {subject}"
        for n, (sha, _, subject) in enumerate(
            (line.partition(" ") for line in repo.subjects(old_range)), 1
        )
    )


@dataclass(frozen=True)
class Replayed:
    """``commits`` picked onto ``onto``: the last new commit, or why not."""

    head: str | None  # None: a pick did not apply
    failed: str = ""  # the commit that did not apply
    unmerged: tuple[str, ...] = ()


def replay(repo: Repo, commits: Sequence[str], *, onto: str) -> Replayed:
    """Pick ``commits`` (oldest first) onto ``onto`` in a scratch worktree,
    each keeping its author and its committer (name, e-mail, date): the
    commits stay the user's. The repository's own work tree, index and
    branches are left alone; the new commits are reachable from nothing
    until the caller moves a branch to ``head``."""
    with repo.worktree(onto, "replay") as wt:
        for commit in commits:
            who = wt._git.out("log", "-1", "--format=%cn%x00%ce%x00%cI", commit)
            name, email, date = who.split("\0")
            proc = wt._git.run(
                "cherry-pick",
                "--allow-empty",
                commit,
                check=False,
                extra_env={
                    "GIT_COMMITTER_NAME": name,
                    "GIT_COMMITTER_EMAIL": email,
                    "GIT_COMMITTER_DATE": date,
                },
            )
            if proc.returncode != 0:
                unmerged = tuple(wt.unmerged())
                abort_pick(wt)
                return Replayed(None, failed=commit, unmerged=unmerged)
        return Replayed(wt.rev("HEAD"))
