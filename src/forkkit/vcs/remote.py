# SPDX-License-Identifier: Apache-2.0
"""Fetching a revision from another repository."""

from __future__ import annotations

from forkkit.errors import ForkkitError
from forkkit.vcs.git import operand
from forkkit.vcs.repo import Repo


def fetch_commit(repo: Repo, *, url: str, commit: str) -> bool:
    """Fetch ``commit`` and the history it needs from the repository at
    ``url`` (a whole fetch, never shallow); whether it is here now."""
    git = repo._git
    operand(url, what="git URL")
    operand(commit, what="git commit")
    if git.rev(commit) != commit:
        git.run("fetch", "-q", "--no-tags", check=False, operands=[url, commit])
    return git.rev(commit) == commit


def fetch_rev(repo: Repo, *, url: str, rev: str) -> str:
    """Fetch ``rev`` of ``url`` into ``repo``; return its commit id.

    Tries a shallow fetch of just that revision (a SHA, branch, tag or a
    GitHub-style ``pull/N/head``), then falls back to fetching branches and
    tags (servers that refuse fetching an unadvertised SHA).
    """
    git = repo._git
    operand(url, what="git URL")
    operand(rev, what="git revision")
    if _is_commit(rev) and git.rev(rev) == rev:
        return rev  # already here: a commit id names its content
    if (
        git.run("fetch", "-q", "--depth=1", check=False, operands=[url, rev]).returncode
        == 0
    ):
        sha = git.rev("FETCH_HEAD")
        if sha:
            return sha
    proc = git.run(
        "fetch",
        "-q",
        check=False,
        operands=[
            url,
            "+refs/heads/*:refs/forkkit-src/heads/*",
            "+refs/tags/*:refs/forkkit-src/tags/*",
        ],
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


def _is_commit(rev: str) -> bool:
    return len(rev) in (40, 64) and all(c in "0123456789abcdef" for c in rev)


def remote_head(repo: Repo, *, url: str, rev: str) -> str | None:
    """The commit branch or tag ``rev`` of ``url`` is at now (``git
    ls-remote``, nothing fetched); None when the remote has no such ref."""
    operand(url, what="git URL")
    operand(rev, what="git revision")
    proc = repo._git.run("ls-remote", check=False, operands=[url, rev, f"{rev}^{{}}"])
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["ls-remote failed"])[-1]
        raise ForkkitError(f"{url}: cannot list its refs ({last}); check the URL")
    refs: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        sha, _, name = line.partition("\t")
        refs[name] = sha
    for name in (f"refs/heads/{rev}", f"refs/tags/{rev}^{{}}", f"refs/tags/{rev}", rev):
        if name in refs:
            return refs[name]
    return None


def fetch_history(repo: Repo, *, url: str, rev: str, ref: str) -> str:
    """Fetch ``rev`` of ``url`` with its history (down to what ``repo`` has)
    into ``ref``; return its commit. For counting and bisecting commits."""
    operand(url, what="git URL")
    operand(rev, what="git revision")
    proc = repo._git.run(
        "fetch", "-q", "--no-tags", check=False, operands=[url, f"+{rev}:{ref}"]
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["fetch failed"])[-1]
        raise ForkkitError(f"{url}: cannot fetch {rev} ({last}); check the URL")
    sha = repo._git.rev(ref)
    if sha is None:
        raise ForkkitError(f"{url}: fetching {rev} gave no commit")
    return sha
