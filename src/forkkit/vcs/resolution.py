# SPDX-License-Identifier: Apache-2.0
"""Whole-tree resolutions of a cherry-pick, kept across rebase runs.

``git rerere`` replays the resolution of each conflicted hunk, and nothing
else. Resolving a patch onto a newer upstream often needs more: its tests
call an API upstream renamed, in a file that merged cleanly. A cherry-pick
left in progress and resolved by hand is therefore also recorded whole: the
tree of every tracked and new file (ignore rules apply) as a commit under
``refs/forkkit/resolved/KEY``, where KEY covers the tree it was resolved on
(HEAD) and the patch-id of the picked change. The next pick of the same
change onto the same tree checks that tree out instead of leaving conflicts.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from forkkit.vcs.repo import RefUpdate, Repo

RESOLVED_NS = "refs/forkkit/resolved/"
_MARKERS = ("<<<<<<< ", ">>>>>>> ")


def _key(repo: Repo, commit: str) -> str:
    """The key of picking ``commit`` onto HEAD: HEAD's tree + the patch-id."""
    pid = repo.patch_id(repo.diff(a=f"{commit}^", b=commit))
    text = f"{repo.tree('HEAD')}\0{pid}"
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _has_markers(path: Path) -> bool:
    if not path.is_file():
        return False
    lines = path.read_text(errors="replace").splitlines()
    return any(line.startswith(_MARKERS) for line in lines)


def picking(repo: Repo) -> str | None:
    """The commit of the cherry-pick in progress, if any."""
    head = repo.git_dir() / "CHERRY_PICK_HEAD"
    return head.read_text().strip() if head.is_file() else None


def record(repo: Repo) -> bool:
    """Record a cherry-pick in progress whose conflicts were resolved by hand.

    Nothing is recorded while any changed file still holds a marker, while
    a modify/delete conflict is left unresolved (it has no markers), nor
    when no cherry-pick is in progress. Returns whether one was recorded.
    """
    commit = picking(repo)
    if commit is None or not repo.rev("HEAD"):
        return False
    stages = repo.conflict_stages()
    if any(not {2, 3} <= s for s in stages.values()):
        return False  # a modify/delete conflict: resolved only by git add/rm
    if any(_has_markers(repo.path / p) for p in {*stages, *repo.dirty()}):
        return False  # still conflicted (git add of a file keeps its markers)
    with repo.scratch_index("resolved") as index:
        index.read_tree("HEAD")
        index.add_directory(repo.path, force=False)
        tree = index.write_tree()
    head = repo.rev("HEAD")
    assert head is not None
    message = f"forkkit: resolution of {repo.message(commit).splitlines()[0]}\n"
    sha = repo.commit_tree(tree=tree, message=message, parents=[head])
    repo.update_refs([RefUpdate(RESOLVED_NS + _key(repo, commit), sha)])
    return True


def replay(repo: Repo, commit: str) -> bool:
    """During a conflicted pick of ``commit``: check out its recorded whole
    resolution (index and files) when there is one; return whether it was."""
    recorded = repo.rev(RESOLVED_NS + _key(repo, commit))
    if recorded is None:
        return False
    repo.read_tree_into_worktree(recorded)
    return True


def fingerprint(path: Path) -> str:
    """A digest of every resolution recorded in the repository at ``path``
    (rerere's postimages and the whole-tree records); "" when it has none.
    A result that a recorded resolution decided is only as current as this.
    """
    if not Repo.is_repo_root(path):
        return ""
    repo = Repo(path)
    digest = hashlib.sha256()
    rr_cache = repo.git_dir() / "rr-cache"
    posts = sorted(rr_cache.glob("*/postimage*")) if rr_cache.is_dir() else []
    for post in posts:
        digest.update(f"{post.parent.name}/{post.name}\0".encode())
        digest.update(post.read_bytes())
    refs = repo.refs(RESOLVED_NS)
    for ref, sha in sorted(refs.items()):
        digest.update(f"{ref} {sha}\n".encode())
    return digest.hexdigest() if posts or refs else ""
