# SPDX-License-Identifier: Apache-2.0
"""Commits of yours on top of an interrupted build: kept, then replayed.

A build interrupted half-way leaves forkkit's commits of some of the patches.
Commits you make on top of that (say, while you look at why it stopped) are
your work, not the build's. The next ``materialize`` keeps them at
``refs/forkkit/kept`` before it touches anything, finishes the build, and
picks them onto the finished series, each with its author and committer as
they were; then ``export`` turns them into patches as usual. A pick that
does not apply leaves them at the ref, named in one line.

Crash-safe by order: the ref is written before the rebuild, the picks happen
in a scratch worktree, the fork branch moves forward in one step, and the
ref goes last. A run killed anywhere leaves the commits reachable.
"""

from __future__ import annotations

from forkkit.errors import ForkkitError, first_few
from forkkit.fork.state import ForkTree
from forkkit.output.progress import say
from forkkit.vcs import BOT_EMAIL, RefUpdate, Repo
from forkkit.vcs.merge import replay

KEPT_REF = "refs/forkkit/kept"


def yours_on_top(repo: Repo, *, base: str, head: str) -> list[str]:
    """Your commits on top of forkkit's in ``base..head`` (oldest first);
    empty when the history is not forkkit's commits followed by yours
    (one of yours below one of forkkit's, or a merge)."""
    if repo.commits(f"{base}..{head}", merges_only=True):
        return []
    listed = repo.committers(f"{base}..{head}")
    first = next((i for i, (_, who) in enumerate(listed) if who != BOT_EMAIL), None)
    if first is None or any(who == BOT_EMAIL for _, who in listed[first:]):
        return []
    return [commit for commit, _ in listed[first:]]


def keep(repo: Repo, head: str) -> None:
    """Point :data:`KEPT_REF` at ``head`` (before a rebuild moves HEAD)."""
    repo.update_refs([RefUpdate(KEPT_REF, head)])


def drop(repo: Repo) -> None:
    """Forget the kept commits (``--force`` discards them)."""
    if repo.rev(KEPT_REF) is not None:
        repo.update_refs([RefUpdate(KEPT_REF, "")])


def replay_kept(repo: Repo, tree: ForkTree) -> None:
    """Pick the kept commits onto the finished build ``tree``, if any."""
    kept = repo.rev(KEPT_REF)
    if kept is None:
        return
    if repo.rev("HEAD") != tree.head:  # picked already, or your work since
        drop(repo)
        return
    mine = yours_on_top(repo, base=tree.base, head=kept)
    done = replay(repo, mine, onto=tree.head)
    if done.head is None:
        raise ForkkitError(
            f"{repo.path}: your commit {done.failed[:12]} (on top of an interrupted "
            f"build) does not apply to the finished series (conflict in "
            f"{first_few(list(done.unmerged)) or 'the tree'}); your {len(mine)} "
            f"commit(s) are kept at {KEPT_REF}: pick them by hand (git cherry-pick "
            f"{mine[0][:12]}^..{KEPT_REF}), or drop them with "
            "'forkkit materialize --force'"
        )
    repo.fast_forward(done.head)
    drop(repo)
    say(
        f"kept {len(mine)} commit(s) of yours from the interrupted build, now on "
        "top of the finished series: 'forkkit export' writes them as patches"
    )
