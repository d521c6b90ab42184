# SPDX-License-Identifier: Apache-2.0
"""A pristine upstream revision fetched from git."""

from __future__ import annotations

from forkkit.config import check_git_url
from forkkit.errors import ForkkitError
from forkkit.output.progress import step
from forkkit.vcs import Repo, fetch_rev


def fetch_git_rev(repo: Repo, url: str, rev: str) -> str:
    """Fetch ``rev`` of ``url`` into ``repo``; return its commit id."""
    if not url or not rev:
        raise ForkkitError(
            "upstream: a git source needs git_url and git_rev; set both in "
            "fork.toml [upstream]"
        )
    check_git_url(url, "upstream git_url")
    with step(f"fetching {rev} from {url}"):
        return fetch_rev(repo, url=url, rev=rev)
