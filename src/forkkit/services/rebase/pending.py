# SPDX-License-Identifier: Apache-2.0
"""A partial ``rebase --apply``: the patches that conflict wait in
``patches/pending.toml`` (:mod:`forkkit.patches.pending`) while the rest is
written; the next rebase tries each again from the pin its text applies to.

A patch may wait only when it stands alone: it applies by itself on the pin
it was carried on (the next rebase rebuilds it from that pin and nothing
else), and it is not one part of a tested fix whose other parts move on (a
proof of half a fix proves nothing).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.fork.fixes import focused_targets
from forkkit.fork.tree import make_base
from forkkit.line import Line
from forkkit.output.progress import say
from forkkit.patches.fixes import Fix
from forkkit.patches.pending import PENDING_FILE, Pending, render_pending
from forkkit.patches.series import Patch, parse_patch_text
from forkkit.pin import upstream_from_fields
from forkkit.services.rebase.model import PatchResult, RebaseResult
from forkkit.services.rebase.takeover import conflict_again
from forkkit.vcs import Repo, merge


def pending_patches(line: Line) -> tuple[Patch, ...]:
    """The patches ``patches/pending.toml`` names, read from patches/."""
    out = []
    for rec in line.pending:
        path = (line.patches_dir / rec.name).absolute()
        if not path.is_file():
            raise ForkkitError(
                f"{line.patches_dir / PENDING_FILE}: {rec.name} is not in "
                f"{line.patches_dir}; restore the patch from git, or its record"
            )
        out.append(parse_patch_text(path.read_bytes().decode("utf-8", "replace"), path))
    return tuple(out)


@dataclass(frozen=True)
class Waiting:
    """A pending patch rebuilt on its own pin in the rebase repo."""

    base: str  # the root commit of its pin's pristine tree
    commit: str  # the patch applied alone there ("" when it does not apply)
    label: str  # its pin, as reports name it


def rebuild(repo: Repo, line: Line, *, rec: Pending, patch: Patch) -> Waiting:
    """``patch`` applied alone on the pin ``rec`` records (HEAD moves)."""
    where = f"{line.patches_dir / PENDING_FILE} [{rec.name}]"
    spec = upstream_from_fields(dict(rec.pin), where=where)
    base, _ = make_base(repo, spec, line.work)
    repo.detach(base)
    commit = merge.head(repo) if repo.am(patch.path).ok else ""
    return Waiting(base=base, commit=commit, label=rec.applies_on)


def _applies_alone(repo: Repo, patch: Patch, *, base: str) -> bool:
    with repo.scratch_index("pending-alone") as index:
        index.read_tree(base)
        return index.apply(patch.path, check=True).ok


def refusal(
    repo: Repo,
    results: Sequence[PatchResult],
    *,
    patches: Mapping[str, Patch],
    owners: Mapping[str, Fix],
    old_base: str,
) -> str:
    """Why a conflicting patch of ``results`` cannot wait ("" when every one
    can): the first that cannot, and what to do. One already pending waits on."""
    carried = {r.name for r in results if r.new_commit}
    if not carried and not any(r.absorbed for r in results):
        return "no patch moved (each conflicts): resolve the first and rerun"
    for r in results:
        if r.status != "conflict":
            continue
        fix = owners.get(r.name)
        moved = [n for n in (fix.patches if fix else ()) if n in carried]
        if fix and not fix.untested and moved:
            return (
                f"fix {fix.id}: {r.name} conflicts while {moved[0]} rebased; a "
                "fix with tests moves whole: resolve the conflict and rerun"
            )
        if not r.from_pin and not _applies_alone(repo, patches[r.name], base=old_base):
            return (
                f"{r.name}: does not apply alone on its pin (it builds on an "
                "earlier patch), so it cannot wait: resolve the conflict and rerun"
            )
    return ""


def records(
    results: Sequence[PatchResult],
    *,
    line: Line,
    owners: Mapping[str, Fix],
    new_label: str,
) -> tuple[Pending, ...]:
    """The ``pending.toml`` records of the conflicting patches: one waiting
    already keeps its pin; a new one waits on ``line``'s."""
    earlier = {p.name: p for p in line.pending}
    pin = {k: v for k, v in line.upstream.fields().items() if v}
    out = []
    for r in results:
        if r.status != "conflict":
            continue
        files = tuple(c.path for c in r.conflicts)
        if r.name in earlier:
            old = earlier[r.name]
            out.append(replace(old, conflicts_on=new_label, files=files or old.files))
            continue
        data = (line.patches_dir / r.name).read_bytes()
        fix = owners.get(r.name)
        out.append(
            Pending(
                name=r.name,
                subject=r.subject,
                fix=fix.id if fix else "",
                applies_on=line.upstream.label,
                conflicts_on=new_label,
                sha256=hashlib.sha256(data).hexdigest(),
                files=files,
                pin=pin,
            )
        )
    return tuple(out)


def rebuild_all(repo: Repo, line: Line) -> dict[str, Waiting]:
    """Each pending patch of ``line`` (its :attr:`Line.extra`) rebuilt on
    its own pin, in order."""
    recs = {p.name: p for p in line.pending}
    return {p.name: rebuild(repo, line, rec=recs[p.name], patch=p) for p in line.extra}


def waiting_focused(
    repo: Repo, line: Line, waiting: Mapping[str, Waiting]
) -> tuple[str, ...]:
    """The focused tests of the pending patches' fixes, each read where its
    patches were rebuilt."""
    fixes = line.fixes
    out: list[str] = []
    for fid in dict.fromkeys(p.fix for p in line.pending):
        fix = next((f for f in fixes.fixes if f.id == fid), None)
        got = {n: waiting[n].commit for n in fix.patches if n in waiting} if fix else {}
        if fix is None or len(got) != len(fix.patches) or not all(got.values()):
            continue  # a fix in part carried, or a patch that cannot be rebuilt
        head = list(got.values())[-1]
        out += focused_targets(repo, fixes, fix, head=head, commits=got)
    return tuple(dict.fromkeys(out))


def unbuilt(patch: Patch, waiting: Waiting) -> PatchResult:
    """A pending patch that does not apply alone on its own pin: a conflict
    no rebase can rebuild."""
    return PatchResult(
        patch.name,
        patch.subject,
        "conflict",
        detail=f"does not apply alone on {waiting.label}, the pin it waits on; "
        "carry it again with 'forkkit fix add'",
    )


def to_wait(
    repo: Repo,
    line: Line,
    result: RebaseResult,
    *,
    owners: Mapping[str, Fix],
    old_base: str,
    apply: bool,
) -> tuple[tuple[Pending, ...] | None, str]:
    """The records of the conflicting patches when the rebase goes on to a
    partial ``--apply`` (() when none conflicts); else None, and why (""
    in a dry run, which stops at the verdicts)."""
    if not result.conflicted:
        return (), ""
    for p in result.conflicted:
        for c in p.conflicts:
            say(f"CONFLICT {p.name}: {c.describe()}")
    if not apply:
        return None, ""
    patches = {p.name: p for p in line.series.patches}
    why = refusal(
        repo, result.patches, patches=patches, owners=owners, old_base=old_base
    )
    if why:
        say(f"--apply: nothing written: {why}")
        return None, f"--apply: nothing written: {why}"
    return records(
        result.patches, line=line, owners=owners, new_label=result.new_label
    ), ""


def with_pending(
    result: RebaseResult, waiting: Sequence[Pending], *, folder: Path
) -> RebaseResult:
    """``result`` with the patches that wait, recorded beside the new series
    in ``folder`` (its line reads them: their fixes wait with them)."""
    if waiting:
        (folder / PENDING_FILE).write_text(render_pending(waiting))
    return replace(result, pending=tuple(waiting))


def conflict_on_top(repo: Repo, line: Line, result: RebaseResult) -> None:
    """Bring the first conflict that can be resolved back into the rebase
    repo's work tree, on top of the new series: where the next rebase tries
    the patch again (and rerere records its resolution)."""
    patches = {p.name: p for p in line.series.patches}
    for p in result.conflicted:
        if p.old_commit:
            conflict_again(repo, patches[p.name], p.old_commit, head=merge.head(repo))
            return
