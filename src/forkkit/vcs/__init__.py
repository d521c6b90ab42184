# SPDX-License-Identifier: Apache-2.0
"""The only layer that speaks git.

``Repo`` offers typed operations; ``ScratchIndex`` builds trees without
touching a repository's index; ``ApplyResult`` says where a patch failed.
No module outside this package starts a git process (a test enforces it).
"""

from forkkit.vcs.apply import ApplyResult
from forkkit.vcs.git import BOT_EMAIL, BOT_NAME, FIXED_DATE, GitError
from forkkit.vcs.index import ScratchIndex
from forkkit.vcs.remote import fetch_commit, fetch_history, fetch_rev, remote_head
from forkkit.vcs.repo import ZERO, Identity, RefUpdate, Repo
from forkkit.vcs.worktree import SCRATCH_DIR, scratch_root

__all__ = [
    "BOT_EMAIL",
    "BOT_NAME",
    "FIXED_DATE",
    "SCRATCH_DIR",
    "ZERO",
    "ApplyResult",
    "GitError",
    "Identity",
    "RefUpdate",
    "Repo",
    "ScratchIndex",
    "fetch_commit",
    "fetch_history",
    "fetch_rev",
    "remote_head",
    "scratch_root",
]
