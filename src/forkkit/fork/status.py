# SPDX-License-Identifier: Apache-2.0
"""``forkkit status``: what the fork tree holds, read-only (never locks)."""

from __future__ import annotations

from pathlib import Path

from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork import state as forkstate
from forkkit.fork.seriesfiles import load_series, read_pending
from forkkit.fork.tree import FORK_BRANCH
from forkkit.patches.pending import PENDING_FILE
from forkkit.vcs import Repo


def _building(cfg: ForkConfig, repo: Repo, marker: str) -> str:
    """A build that runs now, one that stopped before the work tree, or one
    interrupted while it rewrote it."""
    busy = cfg.work.busy()
    if busy:
        return f"a build in progress ({busy})"
    if not forkstate.building(repo, marker).touched:
        return (
            "a build that stopped before it touched the work tree (a failed "
            "download or pin); the next command builds it"
        )
    return "interrupted build (the next command rebuilds it)"


def _head_state(repo: Repo, built: str, head: str | None) -> str:
    """Where HEAD is, when it is not the built series' head."""
    if head is None:
        return "no commit checked out"
    branch = repo.branch()
    where = f"branch {branch}" if branch else f"{head[:12]} (detached)"
    if repo.is_ancestor(built, head):
        n = len(repo.commits(f"{built}..{head}"))
        on = "" if branch == FORK_BRANCH else f" (HEAD at {where})"
        return f"{n} commit(s) on top of the built series{on}"
    if repo.is_ancestor(head, built):
        return f"HEAD at an older commit of the built series ({where})"
    return f"HEAD at {where}, not on the built series"


def fork_status(cfg: ForkConfig, *, dest: Path | None) -> dict[str, object]:
    """The fork tree's recorded state against ``patches/`` and its work tree."""
    path = (dest or cfg.work.fork).absolute()
    waits = _waiting(cfg)
    if not Repo.is_repo_root(path):
        return {
            "path": str(path),
            "state": "absent",
            "pending": waits,
            "summary": f"{path}: no fork tree{_wait_note(waits)}",
        }
    repo = Repo(path)
    rec = forkstate.read(repo)
    try:
        digest: str | None = load_series(cfg.series_file, cfg.patches_dir).digest
    except ForkkitError:
        digest = None
    head = repo.rev("HEAD")
    dirty = repo.dirty()
    tree = rec.tree
    if rec.building:
        state = _building(cfg, repo, rec.building)
    elif tree is None:
        state = "not built by forkkit" if not rec.ours else "built by an older forkkit"
    elif tree.stopped_at:
        state = f"stopped at {tree.stopped_at}"
    elif head != tree.head:
        state = _head_state(repo, tree.head, head)
    elif tree.series_digest != digest or tree.upstream != cfg.upstream.ident:
        state = "stale (patches/ or the pin changed)"
    else:
        state = "up to date"
    if dirty:
        state += f"; {len(dirty)} uncommitted or untracked file(s)"
    return {
        "path": str(path),
        "state": state,
        "head": head,
        "branch": repo.branch(),
        "built": tree.to_json() if tree else None,
        "dirty": dirty,
        "pending": waits,
        "summary": f"{path}: {state}{_wait_note(waits)}",
    }


def _waiting(cfg: ForkConfig) -> list[str]:
    """The patches that wait in ``patches/pending.toml`` (none when unreadable:
    the command that needs them says why)."""
    try:
        return [p.name for p in read_pending(cfg.patches_dir / PENDING_FILE)]
    except ForkkitError:
        return []


def _wait_note(waits: list[str]) -> str:
    if not waits:
        return ""
    return f"; {len(waits)} patch(es) wait in patches/{PENDING_FILE} (conflicts)"
