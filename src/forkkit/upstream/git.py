# SPDX-License-Identifier: Apache-2.0
"""A pristine upstream revision fetched from git."""

from __future__ import annotations

from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.output.progress import step
from forkkit.pin import GitPin, check_git_url
from forkkit.vcs import Repo, fetch_history, fetch_rev, remote_head


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


def branch_moved(repo_path: Path, pin: GitPin) -> tuple[str, tuple[str, ...]] | None:
    """Where the followed branch (or tag) is now and its new commits since
    the pinned one (newest first), fetched into the repository at
    ``repo_path``; None when it has not moved."""
    repo = Repo(repo_path) if Repo.is_repo_root(repo_path) else Repo.init(repo_path)
    with step(f"asking {pin.url} where {pin.rev} is"):
        head = remote_head(repo, url=pin.url, rev=pin.rev)
    if head is None:
        raise ForkkitError(
            f"{pin.url}: no branch or tag {pin.rev!r}; set git_rev in fork.toml "
            "to the branch this line follows"
        )
    if head == pin.commit:
        return None
    with step(f"fetching {pin.rev} ({head[:12]}) from {pin.url}"):
        fetch_rev(repo, url=pin.url, rev=pin.commit)  # the history stops there
        fetch_history(repo, url=pin.url, rev=pin.rev, ref=_watch_ref(pin))
    return head, tuple(reversed(repo.commits(f"{pin.commit}..{head}")))


def _watch_ref(pin: GitPin) -> str:
    return "refs/forkkit/watch/" + pin.rev.replace("/", "-")
