# SPDX-License-Identifier: Apache-2.0
"""The steps of ``forkkit rebase`` on its persistent repo: moving one patch
onto the new upstream (``git am``, cherry-pick with rerere), judging it
(textual and semantic absorption), and pruning tests-only commits.

:class:`Replay` is one rebase's transaction over that repo; its semantic
checks run in :mod:`forkkit.services.rebase.semantic`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forkkit.errors import ForkkitError
from forkkit.line import Line
from forkkit.output.progress import say
from forkkit.patches.diff import split_hunks
from forkkit.patches.retired import TESTS_ONLY_TRAILER
from forkkit.patches.series import Patch, Series
from forkkit.services.rebase.absorb import (
    conflict_regions,
)
from forkkit.services.rebase.model import (
    Conflict,
    Options,
    PatchResult,
    Status,
    Target,
)
from forkkit.services.rebase.semantic import SemanticBench
from forkkit.services.rebase.takeover import Port, from_port, take_upstream
from forkkit.vcs import Repo, merge, resolution

BRANCH = "rebase"


def open_repo(path: Path) -> tuple[Repo, int]:
    """The persistent rebase repo, rerere on; salvage a previous conflict.

    A conflict left by an earlier run may have been resolved by hand since:
    ``git rerere`` records that resolution before the repo is reset, so this
    run replays it. Returns the repo and how many resolutions were recorded.
    """
    repo = Repo(path) if Repo.is_repo_root(path) else Repo.init(path)
    for lock in merge.clear_stale_locks(repo):
        say(f"removed {lock} (left by an interrupted run)")
    for old in repo.prune_stale_worktrees():  # a killed run's scratch worktrees
        say(f"removed stale worktree {old}")
    merge.enable_rerere(repo)
    whole = resolution.record(repo)  # before rerere marks the files resolved
    recorded = max(merge.record_resolutions(repo), int(whole))
    if recorded:
        say(f"recorded {recorded} conflict resolution(s) from the previous run")
    merge.reset_scratch(repo)
    return repo, recorded


def _failing_hunks(repo: Repo, patch: Patch) -> dict[str, list[str]]:
    """Per file, the patch's hunks that do not apply to the worktree."""
    bad: dict[str, list[str]] = {}
    for hunk in split_hunks(patch.path.read_text(errors="replace")):
        if not repo.check_patch(hunk.text).ok:
            bad.setdefault(hunk.path, []).append(hunk.describe())
    return bad


# --- one rebase ---------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """What one rebase works on (read once at its start)."""

    line: Line
    target: Target
    opts: Options
    repo: Repo
    series: Series
    series_text: str  # patches/series as read at the start, comments and all


class Replay(AbstractContextManager["Replay"]):
    """The move of a series onto the new upstream, one patch at a time, in
    the rebase repo. Not a transaction (nothing here commits or aborts; the
    all-or-nothing write of the user's files is ``txn.FileTransaction``): a
    context that owns the scratch worktree its semantic checks run in, gone
    when it exits. Each step returns its verdict; HEAD of the repo is the
    only thing a step leaves behind."""

    def __init__(
        self, job: Job, *, focused: Sequence[str] = (), port: Port | None = None
    ) -> None:
        self.job, self.repo, self.port = job, job.repo, port
        self.taken: tuple[str, ...] = ()  # the files the port resolved last
        self.bench = SemanticBench(
            line=job.line, opts=job.opts, repo=job.repo, focused=tuple(focused)
        )

    def __enter__(self) -> Replay:
        self.bench.__enter__()
        return self

    def __exit__(self, *exc: Any) -> bool | None:
        return self.bench.__exit__(*exc)

    # -- applying ------------------------------------------------------------

    def _conflicts(self, bad: dict[str, list[str]]) -> tuple[Conflict, ...]:
        found = []
        for path in self.repo.unmerged():
            f = self.repo.path / path
            text = f.read_text(errors="replace") if f.is_file() else ""
            found.append(
                Conflict(path, tuple(conflict_regions(text)), tuple(bad.get(path, [])))
            )
        return tuple(found)

    def _tests_only(self, old_commit: str, red: str) -> str:
        """Replace HEAD by a commit of only the patch's tests (``red``'s tree).

        Later patches may build on those tests; :func:`prune_tests_only`
        drops the commit again where nothing does.
        """
        repo = self.repo
        msg = (
            f"[Tests] {repo.message(old_commit)}\n{TESTS_ONLY_TRAILER}: runtime "
            f"change absorbed by {self.job.target.spec.label}\n"
        )
        parent = repo.rev(f"{red}^")
        assert parent  # an overlay commit has one
        tree = repo.tree(red)
        if tree == repo.tree(parent):
            repo.reset_hard(parent)
            return ""  # its tests are upstream's already
        author = repo.author(old_commit)
        sha = repo.commit_tree(tree=tree, message=msg, parents=[parent], author=author)
        repo.reset_hard(sha)
        return sha

    def _textually_absorbed(
        self, patch: Patch, old_commit: str, *, old_base: str, new_base: str
    ) -> str:
        """Why the patch is already in the new upstream ("" if it is not)."""
        repo = self.repo
        mine = repo.patch_id(repo.diff(a=f"{old_commit}^", b=old_commit))
        theirs = repo.patch_id(repo.diff(a=old_base, b=new_base, paths=patch.files))
        if mine and mine == theirs:
            return "patch-id equals upstream's change to " + ", ".join(patch.files)
        if repo.check_patch(patch.path, reverse=True).ok:
            return "already in the new upstream (the patch reverse-applies)"
        return ""

    def _pick(
        self, patch: Patch, res: PatchResult, *, head: str, bad: dict[str, list[str]]
    ) -> Status | PatchResult:
        """Cherry-pick (3-way, rerere): the status, or the final verdict."""
        repo = self.repo
        pick = merge.cherry_pick(repo, res.old_commit)
        if pick.ok:
            return "3way"
        if not pick.empty and resolution.replay(repo, res.old_commit):
            merge.continue_pick(repo)
            return "rerere"
        if pick.empty:
            merge.skip_pick(repo)
            repo.reset_hard(head)
            return dataclasses.replace(
                res,
                status="absorbed-textual",
                detail="applying it to the new upstream changes nothing",
            )
        if pick.replayed:
            merge.continue_pick(repo)
            return "rerere"
        if not pick.unmerged:
            raise ForkkitError(
                f"{patch.name}: cherry-pick of {res.old_commit[:12]} failed "
                f"({pick.message}); inspect {repo.path}"
            )
        conflicts = self._conflicts(bad)
        if self._from_port([c.path for c in conflicts]):
            return "resolved-from"
        taken = self._take_upstream(patch, res, conflicts, head=head)
        if taken is not None:
            return taken
        judged = self.bench.judge(
            patch, res.old_commit, new_prev=head, test_source=None
        )
        red = judged.absorbed_red
        if red:
            merge.abort_pick(repo)
            return dataclasses.replace(
                res,
                status="absorbed-semantic",
                detail="conflicts with upstream's own change, which already fixes it",
                semantic=judged.check,
                new_commit=self._tests_only(res.old_commit, red),
            )
        return dataclasses.replace(
            res, status="conflict", conflicts=conflicts, semantic=judged.check,
            detail=f"{len(conflicts)} conflicted file(s)",
        )  # fmt: skip

    def _take_upstream(
        self,
        patch: Patch,
        res: PatchResult,
        conflicts: Sequence[Conflict],
        *,
        head: str,
    ) -> PatchResult | None:
        """``--take-upstream`` (:func:`take_upstream`): out, or None."""
        paths = [c.path for c in conflicts]
        if not self.job.opts.take_upstream:
            return None
        kind = take_upstream(self.repo, patch, paths, head=head)
        if kind is None:
            return None
        verb = "deleted" if kind == "deleted-upstream" else "added"
        why = f"upstream {verb} {', '.join(paths)}: its side taken (--take-upstream)"
        return dataclasses.replace(res, status=kind, detail=why)

    def _from_port(self, paths: Sequence[str]) -> bool:
        """Resolve the conflicted ``paths`` from ``--resolve-from``'s port."""
        done = self.port is not None and from_port(self.repo, self.port, paths)
        self.taken = tuple(paths) if done else self.taken
        return done

    def apply_one(
        self, patch: Patch, old_commit: str, *, old_base: str, new_base: str
    ) -> PatchResult:
        """Move one patch onto HEAD and judge it.

        HEAD advances by the rebased commit, or by a tests-only commit when
        the patch is absorbed semantically (later patches may need its tests).
        """
        repo = self.repo
        res = PatchResult(patch.name, patch.subject, "clean", old_commit=old_commit)
        head = merge.head(repo)
        why = self._textually_absorbed(
            patch, old_commit, old_base=old_base, new_base=new_base
        )
        if why:
            return dataclasses.replace(res, status="absorbed-textual", detail=why)
        status: Status = "clean"
        bad: dict[str, list[str]] = {}
        if not (repo.check_patch(patch.path).ok and repo.am(patch.path).ok):
            bad = _failing_hunks(repo, patch)
            res = dataclasses.replace(res, moved=tuple(bad))
            picked = self._pick(patch, res, head=head, bad=bad)
            if isinstance(picked, PatchResult):
                return picked
            status = picked
        new_commit = merge.head(repo)
        detail = {
            "clean": "",
            "3way": "hunks moved: " + "; ".join(h for v in bad.values() for h in v),
            "rerere": "replayed the recorded resolution (.git/rr-cache, "
            "refs/forkkit/resolved)",
            "resolved-from": f"resolved from {self.port.source if self.port else ''}: "
            + ", ".join(self.taken),
        }[status]
        judged = self.bench.judge(
            patch, old_commit, new_prev=head, test_source=new_commit
        )
        red = judged.absorbed_red
        if red:
            return dataclasses.replace(
                res,
                status="absorbed-semantic",
                detail=f"applies ({status}) but upstream already fixes it differently",
                semantic=judged.check,
                new_commit=self._tests_only(old_commit, red),
            )
        return dataclasses.replace(
            res,
            status=status,
            detail=detail,
            new_commit=new_commit,
            semantic=judged.check,
        )


def prune_tests_only(
    repo: Repo, new_base: str, results: Sequence[PatchResult], *, keep_all: bool = False
) -> list[PatchResult]:
    """Drop the tests-only commits of absorbed patches that nothing builds on.

    Each is dropped (last first) when every later commit still cherry-picks
    cleanly without it; otherwise it stays and the result says which patch
    needs it. With nothing carried, all go: the fork can retire. ``keep_all``
    (``--keep-tests``) keeps them all: the tests guard upstream's fix.
    """
    out = list(results)
    chain = [i for i, r in enumerate(out) if r.new_commit]
    if keep_all:
        head = out[chain[-1]].new_commit if chain else new_base
        repo.force_checkout(branch=BRANCH, rev=head)
        return out
    if not any(out[i].carries for i in chain):
        for i in chain:
            out[i] = dataclasses.replace(out[i], new_commit="")
        chain = []
    for idx in reversed([i for i in chain if out[i].absorbed]):
        keep = [i for i in chain if i != idx]
        repo.force_checkout(branch=BRANCH, rev=new_base)
        picked: dict[int, str] = {}
        for i in keep:
            if not merge.cherry_pick(repo, out[i].new_commit).ok:
                merge.abort_pick(repo)
                out[idx] = dataclasses.replace(
                    out[idx],
                    detail=f"{out[idx].detail}; its test changes stay as a "
                    f"tests-only patch: {out[i].name} builds on them",
                )
                break
            picked[i] = merge.head(repo)
        else:
            out[idx] = dataclasses.replace(out[idx], new_commit="")
            for i, sha in picked.items():
                out[i] = dataclasses.replace(out[i], new_commit=sha)
            chain = keep
    head = out[chain[-1]].new_commit if chain else new_base
    repo.force_checkout(branch=BRANCH, rev=head)
    return out
