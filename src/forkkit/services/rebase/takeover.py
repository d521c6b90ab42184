# SPDX-License-Identifier: Apache-2.0
"""Resolutions a rebase takes from elsewhere: upstream's own side where it
took a file over (``--take-upstream``), and the vendor's own port to the new
upstream (``--resolve-from``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from forkkit.errors import ForkkitError
from forkkit.patches.plaindiff import check_plain, unlabelled
from forkkit.patches.series import Patch
from forkkit.vcs import Repo, merge

Takeover = Literal["deleted-upstream", "added-upstream"]


@dataclass(frozen=True)
class Port:
    """The vendor's own port to the new upstream (``--resolve-from``): the
    tree it gives there and the files it changes."""

    source: str  # the file's name, as the report shows it
    tree: str
    files: frozenset[str]


def port_of(repo: Repo, path: Path, *, new_base: str, label: str) -> Port:
    """``path`` (a plain diff or format-patch file) read onto the new upstream
    by git (``-p1``, else ``-p0``); one line when it does not apply there."""
    try:
        text = path.read_bytes().decode()
    except (OSError, UnicodeDecodeError) as exc:
        raise ForkkitError(f"--resolve-from {path}: cannot read it ({exc})") from None
    check_plain(text, where=f"--resolve-from {path}")
    text = unlabelled(text)
    tree, tried = repo.tree_with(new_base, text)
    if tree is None:
        why = tried[0]
        raise ForkkitError(
            f"--resolve-from {path}: does not apply to {label} "
            f"({why.path or why.message}); give the port made for {label}"
        )
    return Port(path.name, tree, frozenset(repo.files_changed(new_base, tree)))


def from_port(repo: Repo, port: Port, paths: Sequence[str]) -> bool:
    """Resolve the conflicted ``paths`` by the port's version of each, when
    it covers every one of them, and go on with the pick."""
    if not paths or not set(paths) <= port.files:
        return False
    repo.take(port.tree, paths)
    merge.continue_pick(repo)
    return True


def take_upstream(
    repo: Repo, patch: Patch, paths: Sequence[str], *, head: str
) -> Takeover | None:
    """When every conflicted file is one upstream deleted (or every one it
    added itself) and taking upstream's side leaves the patch nothing to
    change, the pick is dropped and the kind returned; else None."""
    have = repo.ls_tree(head, patch.files)
    kinds = {
        "added-upstream" if p in patch.added and p in have else
        "deleted-upstream" if p not in have else "content"
        for p in paths
    }  # fmt: skip
    if not paths or len(kinds) != 1 or kinds == {"content"}:
        return None
    repo.take(head, paths)
    if not repo.nothing_staged():  # it changes more than what upstream took
        return None
    merge.skip_pick(repo)
    repo.reset_hard(head)
    return "deleted-upstream" if kinds == {"deleted-upstream"} else "added-upstream"


def leave_out(repo: Repo, head: str) -> None:
    """Drop a conflicted pick: HEAD is ``head`` again, the last good state,
    and the replay goes on with the next patch."""
    merge.abort_pick(repo)
    repo.reset_hard(head)


def conflict_again(repo: Repo, patch: Patch, old_commit: str, *, head: str) -> None:
    """Bring ``patch``'s conflict on ``head`` back into the work tree, where
    it is resolved (and rerere records the resolution for the next run)."""
    repo.reset_hard(head)
    if not repo.am(patch.path).ok:
        merge.cherry_pick(repo, old_commit)
