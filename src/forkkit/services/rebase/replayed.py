# SPDX-License-Identifier: Apache-2.0
"""What the rebase repository says of each file of a replayed patch: its
verdict and a conflict's kind (:mod:`.files`), and the port the replay
resolves from."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from forkkit.patches.series import Patch
from forkkit.services.rebase.files import FileVerdict, Moves, file_verdicts
from forkkit.services.rebase.model import PatchResult
from forkkit.services.rebase.steps import Job
from forkkit.services.rebase.takeover import Port, port_of
from forkkit.vcs import Repo
from forkkit.vcs.overlay import reverse_applies


def port_for(job: Job, new_base: str) -> Port | None:
    """``--resolve-from``'s port on the new upstream (None: not given)."""
    if job.opts.resolve_from is None:
        return None
    label = job.target.spec.label
    return port_of(job.repo, job.opts.resolve_from, new_base=new_base, label=label)


def with_files(
    job: Job,
    patch: Patch,
    res: PatchResult,
    *,
    bases: tuple[str, str],
    renames: Mapping[str, str],
) -> PatchResult:
    """``res`` with each of the patch's files' verdict (and conflict kind)."""
    repo, (old_base, new_base) = job.repo, bases
    moves = Moves(
        present=frozenset(repo.ls_tree(new_base, patch.files)),
        before=frozenset(repo.ls_tree(old_base, patch.files)),
        renamed={f: renames[f] for f in patch.files if f in renames},
    )
    files = file_verdicts(
        patch.files,
        status=res.status,
        absorbed=res.absorbed,
        added=patch.added,
        moved=res.moved,
        conflicted=[c.path for c in res.conflicts],
        moves=moves,
    )
    files = tuple(
        dataclasses.replace(
            f, differ=_differ(repo, f.path, ours=res.old_commit, theirs=new_base)
        )
        if f.kind == "added-upstream" and f.verdict == "conflict"
        else _taken_hunks(repo, patch, f, new_base=new_base)
        if f.kind == "content" and f.verdict == "conflict"
        else f
        for f in files
    )
    return dataclasses.replace(res, files=files)


def _taken_hunks(
    repo: Repo, patch: Patch, f: FileVerdict, *, new_base: str
) -> FileVerdict:
    """A content conflict with the patch's hunks of the file that the new
    upstream has already (each reverse-applies on its own there)."""
    hunks = [h for h in patch.hunks if h.path == f.path]
    has = reverse_applies(repo, new_base, [h.text for h in hunks])
    taken = tuple(n for n, yes in enumerate(has, 1) if yes)
    return dataclasses.replace(f, taken=taken, hunks=len(hunks))


def _differ(repo: Repo, path: str, *, ours: str, theirs: str) -> int:
    """How many lines ``path`` differs by between two commits."""
    text = repo.diff(a=ours, b=theirs, paths=[path])
    return sum(
        1
        for ln in text.splitlines()
        if ln[:1] in "+-" and not ln.startswith(("+++", "---"))
    )
