# SPDX-License-Identifier: Apache-2.0
"""``forkkit status``: what the fork tree holds, read-only (never locks)."""

from __future__ import annotations

from pathlib import Path

from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork import state as forkstate
from forkkit.fork.seriesfiles import load_series
from forkkit.vcs import Repo


def fork_status(cfg: ForkConfig, *, dest: Path | None) -> dict[str, object]:
    """The fork tree's recorded state against ``patches/`` and its work tree."""
    path = (dest or cfg.work.fork).absolute()
    if not Repo.is_repo_root(path):
        return {
            "path": str(path),
            "state": "absent",
            "summary": f"{path}: no fork tree",
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
        state = "interrupted build (the next command rebuilds it)"
    elif tree is None:
        state = "not built by forkkit" if not rec.ours else "built by an older forkkit"
    elif tree.stopped_at:
        state = f"stopped at {tree.stopped_at}"
    elif head != tree.head:
        state = "commits on top of the built series"
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
        "summary": f"{path}: {state}",
    }
