# SPDX-License-Identifier: Apache-2.0
"""Overlay commits: one revision's tree with some files taken from another.

Red runs the fork's tests with the runtime files of ``base``. That tree is
written here as a real commit (no ref names it), so a scratch worktree of it
is exactly the tree the report names, and nothing is checked out by hand.
The hunk matrix of red/green runs the fix with one hunk reverted: the same
kind of commit, built with ``git apply -R`` (:func:`revert_hunk_commit`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from forkkit.errors import ForkkitError
from forkkit.vcs.apply import ApplyResult
from forkkit.vcs.git import kept_for_the_process
from forkkit.vcs.repo import Repo


def snapshot_commit(repo: Repo, *, message: str) -> tuple[str, str]:
    """The work tree as it is now (edits and untracked files; ignored files
    not), as a commit on HEAD: ``(commit, tree)``. Built in a scratch index,
    so a file flagged skip-worktree or assume-unchanged is taken as it is in
    the work tree; the index, the refs and the files are left alone."""
    head = repo.rev("HEAD")
    if head is None:
        raise ForkkitError(f"{repo.path}: no HEAD; materialize first")
    with repo.scratch_index(f"snapshot-{threading.get_ident()}") as index:
        index.read_tree(head)
        index.add_directory(repo.path, force=False)
        tree = index.write_tree()
    if tree == repo.tree(head):
        return head, tree
    return repo.commit_tree(tree=tree, message=message, parents=[head]), tree


@dataclass(frozen=True)
class Overlay:
    """A commit on top of ``onto`` whose ``paths`` are as at ``source``."""

    commit: str
    tree: str
    onto: str
    source: str
    paths: tuple[str, ...]


def file_entries(
    repo: Repo, rev: str, paths: Sequence[str]
) -> dict[str, tuple[str, str]]:
    """``path -> (mode, blob id)`` of exactly ``paths`` at ``rev`` (absent ones:
    left out)."""
    if not paths:
        return {}
    out = repo._git.run("ls-tree", "-z", operands=[rev], paths=paths).stdout
    entries: dict[str, tuple[str, str]] = {}
    for item in out.split("\0"):
        if not item:
            continue
        meta, path = item.split("\t", 1)
        mode, kind, obj = meta.split()
        if path in paths and kind == "blob":
            entries[path] = (mode, obj)
    return entries


def overlay_commit(
    repo: Repo, *, onto: str, source: str, paths: Sequence[str], message: str
) -> Overlay:
    """Commit ``onto``'s tree with ``paths`` (mode and content) as at ``source``.

    A path ``source`` lacks is removed. The work tree, the index and every
    ref are left alone: the tree is built in a scratch index.
    """
    onto_id, source_id = repo.rev(onto), repo.rev(source)
    if onto_id is None or source_id is None:
        missing = onto if onto_id is None else source
        raise ForkkitError(f"{repo.path}: no revision {missing!r}; materialize first")
    # the commit is a function of its inputs (a fixed author, committer and
    # date): the same inputs in this process give the same one
    key = ("overlay", onto_id, source_id, tuple(paths), message)
    return kept_for_the_process(
        repo.path,
        key,
        lambda: _overlaid(
            repo, onto_id=onto_id, source_id=source_id, paths=paths, message=message
        ),
    )


def _overlaid(
    repo: Repo, *, onto_id: str, source_id: str, paths: Sequence[str], message: str
) -> Overlay:
    want = file_entries(repo, source_id, paths)
    with repo.scratch_index(f"overlay-{threading.get_ident()}") as index:
        index.read_tree(onto_id)
        for path in paths:
            entry = want.get(path)
            if entry is None:
                index.set_entry(path, None)
            else:
                index.set_entry(path, entry[1], entry[0])
        tree = index.write_tree()
    commit = repo.commit_tree(tree=tree, message=message, parents=[onto_id])
    return Overlay(
        commit=commit, tree=tree, onto=onto_id, source=source_id, paths=tuple(paths)
    )


@dataclass(frozen=True)
class HunkRevert:
    """``onto`` with one hunk reverse-applied, as a commit (``applied.ok``), or
    where git stopped."""

    applied: ApplyResult
    commit: str = ""
    tree: str = ""


def revert_hunk_commit(
    repo: Repo, *, onto: str, patch: str, message: str
) -> HunkRevert:
    """Commit ``onto``'s tree with ``patch`` (one hunk's standalone patch text)
    reverse-applied (``git apply --cached -R`` in a scratch index); the work
    tree, the index and every ref are left alone."""
    done = revert_patches_commit(repo, onto=onto, patches=[patch], message=message)
    return HunkRevert(done.applied, done.commit, done.tree)


@dataclass(frozen=True)
class SeriesRevert:
    """``onto`` with several patches reverse-applied, as a commit, or the index
    (into ``patches``) of the first one git could not reverse."""

    commit: str = ""
    tree: str = ""
    failed: int = -1
    applied: ApplyResult = field(default_factory=lambda: ApplyResult(ok=True))


def revert_patches_commit(
    repo: Repo, *, onto: str, patches: Sequence[str], message: str
) -> SeriesRevert:
    """Commit ``onto``'s tree with each of ``patches`` (patch texts: a hunk's,
    or a commit's diff) reverse-applied in the order given, in one scratch
    index; the work tree, the index and every ref are left alone."""
    onto_id = repo.rev(onto)
    if onto_id is None:
        raise ForkkitError(f"{repo.path}: no revision {onto!r}; materialize first")
    # the same inputs give the same commit; a failure is tried again
    return kept_for_the_process(
        repo.path,
        ("revert", onto_id, tuple(patches), message),
        lambda: _reverted(repo, onto_id=onto_id, patches=patches, message=message),
        keep=lambda made: made.failed == -1,
    )


def _reverted(
    repo: Repo, *, onto_id: str, patches: Sequence[str], message: str
) -> SeriesRevert:
    with repo.scratch_index(f"revert-fix-{threading.get_ident()}") as index:
        index.read_tree(onto_id)
        for i, text in enumerate(patches):
            applied = index.apply(text, reverse=True)
            if not applied.ok:
                return SeriesRevert(failed=i, applied=applied)
        tree = index.write_tree()
    commit = repo.commit_tree(tree=tree, message=message, parents=[onto_id])
    return SeriesRevert(commit=commit, tree=tree)


@dataclass(frozen=True)
class SeriesApplied:
    """``onto`` with several patches applied where they apply, as a commit:
    which were applied, which upstream already has (they reverse-apply), and
    which do neither (indexes into the patches given)."""

    commit: str
    applied: tuple[int, ...]
    present: tuple[int, ...]
    missing: tuple[int, ...]


def apply_patches_commit(
    repo: Repo, *, onto: str, patches: Sequence[str], message: str
) -> SeriesApplied:
    """Commit ``onto``'s tree with each of ``patches`` applied in order where
    it applies (each atomically, with a 3-way merge where its context moved,
    in one scratch index); one that does not apply is left out, as present
    when it reverse-applies. The work tree,
    the index and every ref are left alone."""
    onto_id = repo.rev(onto)
    if onto_id is None:
        raise ForkkitError(f"{repo.path}: no revision {onto!r}; fetch it first")
    done: dict[str, list[int]] = {"applied": [], "present": [], "missing": []}
    with repo.scratch_index(f"apply-fixes-{threading.get_ident()}") as index:
        index.read_tree(onto_id)
        for i, text in enumerate(patches):
            before = index.write_tree()
            if index.apply(text).ok or index.apply(text, three_way=True).ok:
                done["applied"].append(i)
                continue
            index.read_tree(before)  # a failed 3-way merge may leave stages
            if index.apply(text, reverse=True, check=True).ok:
                done["present"].append(i)
            else:
                done["missing"].append(i)
        tree = index.write_tree()
    commit = repo.commit_tree(tree=tree, message=message, parents=[onto_id])
    return SeriesApplied(
        commit=commit,
        applied=tuple(done["applied"]),
        present=tuple(done["present"]),
        missing=tuple(done["missing"]),
    )


def has_changes(repo: Repo, commit: str, diffs: Sequence[str]) -> tuple[bool, bool]:
    """Whether ``commit`` has every one of ``diffs`` (each reverse-applies as
    it is, in order from the last), and whether it lacks every one (each
    applies as it is, in order); no 3-way merge: that takes a change twice."""
    with repo.scratch_index(f"bisect-textual-{threading.get_ident()}") as index:
        index.read_tree(commit)
        has = all(index.apply(d, reverse=True).ok for d in reversed(diffs))
        index.read_tree(commit)
        lacks = not has and all(index.apply(d).ok for d in diffs)
    return has, lacks


def reverse_applies(repo: Repo, commit: str, diffs: Sequence[str]) -> list[bool]:
    """For each of ``diffs`` alone: whether ``commit`` has it (it reverse-
    applies as it is, no 3-way merge); one scratch index, checks only."""
    with repo.scratch_index(f"reverse-{threading.get_ident()}") as index:
        index.read_tree(commit)
        return [index.apply(d, reverse=True, check=True).ok for d in diffs]
