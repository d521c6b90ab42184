# SPDX-License-Identifier: Apache-2.0
"""Fetching a revision from another repository."""

from __future__ import annotations

from forkkit.errors import ForkkitError
from forkkit.vcs.repo import Repo


def fetch_rev(repo: Repo, *, url: str, rev: str) -> str:
    """Fetch ``rev`` of ``url`` into ``repo``; return its commit id.

    Tries a shallow fetch of just that revision (a SHA, branch, tag or a
    GitHub-style ``pull/N/head``), then falls back to fetching branches and
    tags (servers that refuse fetching an unadvertised SHA).
    """
    git = repo._git
    if git.ok("fetch", "-q", "--depth=1", url, rev):
        sha = git.rev("FETCH_HEAD")
        if sha:
            return sha
    proc = git.run(
        "fetch",
        "-q",
        url,
        "+refs/heads/*:refs/forkkit-src/heads/*",
        "+refs/tags/*:refs/forkkit-src/tags/*",
        check=False,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["fetch failed"])[-1]
        raise ForkkitError(f"{url}: cannot fetch ({last}); check the URL and network")
    for cand in (rev, f"refs/forkkit-src/heads/{rev}", f"refs/forkkit-src/tags/{rev}"):
        sha = git.rev(cand)
        if sha:
            return sha
    raise ForkkitError(
        f"{url}: revision {rev!r} not found; check the revision (git_rev in fork.toml)"
    )
