# SPDX-License-Identifier: Apache-2.0
"""``forkkit rebase``: move the patch series onto a newer upstream.

Both pristine trees live as root commits in one persistent repo
(``<workdir>/rebase/repo``), with the series applied to the old base, so
3-way merges find the preimage blobs and ``git rerere`` keeps its cache
(``.git/rr-cache``) across rebases. Per patch, in order
(:mod:`forkkit.services.rebase.steps`): textual absorption (patch-id,
reverse-apply), ``git am``, cherry-pick (3-way, rerere replay), and semantic
absorption (its FAIL_TO_PASS tests already pass on the new upstream with only
its test changes). The refreshed series goes to ``<workdir>/rebase/out``;
``--apply`` writes it to patches/ and re-pins fork.toml
(:mod:`forkkit.services.rebase.apply`) only when the whole rebase succeeded
and red/green proved it, or with ``--apply-unproven`` when only the proof is
missing (the report then says unproven).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.fork import state as forkstate
from forkkit.fork.fixes import focused_targets
from forkkit.fork.pristine import resolved
from forkkit.fork.tree import apply_series, make_base, materialize
from forkkit.line import Line
from forkkit.output.progress import say
from forkkit.patches.fixes import Fix
from forkkit.patches.retired import RETIRED_FILE, render_retired
from forkkit.services.proof.doc import ProofDoc, proof_doc
from forkkit.services.proof.render import render_markdown
from forkkit.services.proof.run import prove, resolve_parallel
from forkkit.services.rebase.absorb import drop_fix_tables, patch_targets, repin_toml
from forkkit.services.rebase.apply import (
    SERIES,
    NewSeries,
    export_new,
    unknown_patches,
)
from forkkit.services.rebase.model import (
    Options,
    PatchResult,
    RebaseResult,
    Target,
    fix_verdicts,
    retired_records,
)
from forkkit.services.rebase.pending import (
    conflict_on_top,
    pending_patches,
    rebuild_all,
    to_wait,
    unbuilt,
    waiting_focused,
    with_pending,
)
from forkkit.services.rebase.replayed import port_for, with_files
from forkkit.services.rebase.steps import (
    BRANCH,
    Job,
    Replay,
    open_repo,
    prune_tests_only,
)
from forkkit.services.rebase.taken import first_taken
from forkkit.services.rebase.takeover import conflict_again, leave_out
from forkkit.services.rebase.write import apply_result
from forkkit.upstream.release import release_version
from forkkit.upstream.trust import trusted_sdist
from forkkit.vcs import Repo, fetch_commit, merge

__all__ = ["Options", "RebaseResult", "Target", "rebase", "resolve_target"]

DEFAULT_OPTIONS = Options()  # a dry run with every check

# --- target resolution ------------------------------------------------------


def resolve_target(
    line: Line,
    onto: str | None = None,
    *,
    onto_rev: str | None = None,
    sha256: str | None = None,
) -> Target:
    """The new upstream: a PyPI version (sha256 trusted on first use, unless
    ``--sha256`` pins it) or a git revision."""
    up = line.upstream
    if onto_rev:
        return Target.git(line.upstream.target(onto_rev))
    if not onto:
        raise ForkkitError(
            "rebase needs a target: 'forkkit rebase --onto NAME==VERSION' "
            "or 'forkkit rebase --onto-rev REV'"
        )
    version = release_version(onto, name=up.name, option="--onto", bare=True)
    sdist = trusted_sdist(
        up,
        version=version,
        sha256=sha256 or "",
        pin_hint="forkkit rebase --sha256 HEX",
        tofu_note="review before --apply commits it to fork.toml",
    )
    spec = sdist.spec
    pin = spec.pin_fields() | {"sdist_url": spec.release.sdist_url}
    return Target(spec, sdist.trust, pin, optional=("sdist_url",))


def _resolved(repo: Repo, target: Target) -> Target:
    """A git target named by its commit (fetched once when only a branch or
    tag names it): the pin ``--apply`` writes is that commit."""
    spec = resolved(repo, target.spec)
    return target if spec is target.spec else Target.git(spec)


# --- the rebase ---------------------------------------------------------------


def _prove(
    job: Job, new: NewSeries, targets: list[str], *, out_dir: Path
) -> tuple[ProofDoc | None, str, bool | None]:
    """Red/green on the refreshed series over the new upstream."""
    new_line = job.line.at(job.target.spec, series_file=new.folder / SERIES)
    tree = materialize(
        new_line.config, dest=job.line.work.rebase_dir("fork"), force=True
    )
    result = prove(
        new_line,
        tree,
        tests=targets or None,
        pytest_args=list(job.opts.pytest_args),
        related=job.opts.related,
        out_dir=out_dir,
        timeout=job.opts.timeout,
        parallel=resolve_parallel(job.opts.parallel),
    )
    return proof_doc(result), render_markdown(result), bool(result.valid)


def _targets(job: Job, result: RebaseResult, focused: Sequence[str]) -> list[str]:
    """The focused tests of the patches still carried."""
    targets: list[str] = []
    for patch, r in zip(job.series.patches, result.patches, strict=True):
        if r.carries:
            targets += [
                t for t in patch_targets(focused, patch.files) if t not in targets
            ]
    return targets


def _move(
    job: Job, old_base: str, new_base: str
) -> tuple[list[PatchResult], str, tuple[str, ...]]:
    """Apply the series to the old base, then move each patch onto the new one
    (one :class:`Replay`), and after them each pending patch, rebuilt on its
    own pin; return the verdicts, the old series' HEAD and the fixes' focused
    tests there."""
    repo, series = job.repo, job.series
    old = _from_fork(job, old_base)
    if old is None:
        repo.detach(old_base)
        label = f"{job.line.upstream.label} (the current pin)"
        old = apply_series(repo, job.line.carried, label)
    old_head = merge.head(repo)
    carried = job.line.carried_fixes
    focused = focused_targets(
        repo, carried, carried.whole(), head=old_head, commits=dict(old)
    )
    waiting = rebuild_all(repo, job.line)
    focused += waiting_focused(repo, job.line, waiting)
    bases = [old_base] * len(old) + [w.base for w in waiting.values()]
    old += [(name, w.commit) for name, w in waiting.items()]
    repo.force_checkout(branch=BRANCH, rev=new_base)
    results: list[PatchResult] = []
    first: tuple[str, int] | None = None  # HEAD before the first conflict
    renames = repo.renamed_paths(old_base, new_base)
    port = port_for(job, new_base)
    with Replay(job, focused=focused, port=port) as replay:
        for i, patch in enumerate(series.patches):
            say(f"rebasing {i + 1}/{len(series.patches)}: {patch.name}")
            head = merge.head(repo)
            w = waiting.get(patch.name)
            res = (
                unbuilt(patch, w)
                if w and not w.commit
                else replay.apply_one(
                    patch, old[i][1], old_base=bases[i], new_base=new_base
                )
            )
            res = dataclasses.replace(res, from_pin=w.label) if w else res
            say(f"{patch.name}: {res.status} {res.detail}".rstrip())
            pair = (bases[i], new_base)
            results.append(with_files(job, patch, res, bases=pair, renames=renames))
            if res.status == "conflict" and old[i][1]:  # left out: the next on HEAD
                first = first or (head, i)
                leave_out(repo, head)
        if first is not None:  # the first conflict, for resolution (rerere)
            head, i = first
            conflict_again(repo, series.patches[i], old[i][1], head=head)
    return results, old_head, focused


def _from_fork(job: Job, old_base: str) -> list[tuple[str, str]] | None:
    """The series' commits on the old pin as the line's fork tree holds them,
    fetched instead of applied again: materialize made them from the same
    pristine commit, identity and dates, so they are the very commits
    :func:`apply_series` would make. None when the fork tree is of another
    pin or series (or not there); HEAD is then left alone."""
    path = job.line.work.fork
    if not Repo.is_repo_root(path):
        return None
    tree = forkstate.read(Repo(path)).tree
    carried = job.line.carried  # the pending patches are rebuilt apart
    names = [p.name for p in carried.patches]
    if (
        tree is None
        or tree.base != old_base
        or tree.series_digest != carried.digest
        or tree.stopped_at is not None
        or [n for n, _ in tree.patch_commits] != names
    ):
        return None
    last = tree.patch_commits[-1][1] if tree.patch_commits else old_base
    if not fetch_commit(job.repo, url=str(path), commit=last):
        return None
    job.repo.detach(last)
    say(f"the series on {job.line.upstream.label}: the fork tree's commits")
    return list(tree.patch_commits)


def _owners(job: Job) -> dict[str, Fix]:
    """Each patch's fix."""
    return {n: f for f in job.line.fixes.fixes for n in f.patches}


def _without_retired_fixes(
    job: Job, results: Sequence[PatchResult], toml: str
) -> tuple[Job, str]:
    """The job and the new fork.toml without the ``[[fix]]`` of every fix none
    of whose patches stays in the series (not its runtime change, not its
    tests): retired with its patches, so nothing in fork.toml goes stale."""
    fixes = job.line.fixes
    stays = {r.name for r in results if r.new_commit or r.status == "conflict"}
    gone = [f.id for f in fixes.fixes if not stays & set(f.patches)]
    if not gone:
        return job, toml
    say(f"retired with all their patches: fix(es) {', '.join(gone)}")
    return dataclasses.replace(job, line=job.line.without_fixes(gone)), drop_fix_tables(
        toml, gone
    )


def _export(
    job: Job,
    base: RebaseResult,
    *,
    old: tuple[str, str],
    new_base: str,
    toml: str,
) -> tuple[RebaseResult, NewSeries, str, Job]:
    """Export the rebased series (and the new fork.toml) to the out folder;
    the fork.toml text and the job as they are without the retired fixes."""
    repo = job.repo
    results = prune_tests_only(
        repo, new_base, base.patches, keep_all=job.opts.keep_tests
    )
    owners = _owners(job)  # before the retired fixes leave the config
    job, toml = _without_retired_fixes(job, results, toml)
    new_head = merge.head(repo)
    out = job.line.work.rebase_dir("out")
    new = export_new(
        repo,
        base=new_base,
        head=new_head,
        folder=out / "patches",
        old_text=job.series_text,
        kept=[r.name for r in results if r.new_commit],
    )
    range_diff = merge.range_diff(repo, old=old, new=(new_base, new_head))
    digests = {
        p.name: hashlib.sha256(p.path.read_bytes()).hexdigest()
        for p in job.series.patches
    }
    retired = retired_records(
        dataclasses.replace(base, patches=tuple(results)),
        digests=digests,
        fixes=owners,
    )
    if retired:
        (out / "patches" / RETIRED_FILE).write_text(render_retired(retired))
    (out / "fork.toml").write_text(toml)
    (out / "range-diff.txt").write_text(range_diff + "\n")
    result = dataclasses.replace(
        base,
        patches=tuple(results),
        out_dir=str(out),
        new_series=new.names,
        range_diff=range_diff,
        retired=retired,
    )
    return result, new, toml, job


def _proven(
    job: Job,
    result: RebaseResult,
    new: NewSeries,
    *,
    focused: Sequence[str],
    reports: Path | None,
) -> RebaseResult:
    """The result with its red/green on the new upstream."""
    red_green = reports or job.line.work.rebase_dir("red-green")
    targets = _targets(job, result, focused)
    proof, proof_md, valid = _prove(job, new, targets, out_dir=red_green)
    return dataclasses.replace(
        result, proof=proof, proof_markdown=proof_md, proof_valid=valid
    )


def _taken(
    job: Job, results: Sequence[PatchResult], *, ups: tuple[str | None, str | None]
) -> dict[str, str]:
    """Where upstream took each absorbed patch, for the records ``--apply``
    writes, on a git upstream (both pins name upstream commits); {} on
    releases and in a dry run (it fetches the history between the pins)."""
    if None in ups or not job.opts.apply:  # what the records will say
        return {}
    pins = (job.line.upstream.commit_pin, job.target.spec.commit_pin)
    history = job.line.work.rebase_dir("history")
    return first_taken(job.repo, results, pins=pins, commits=ups, history_repo=history)


def rebase(
    line: Line,
    target: Target,
    opts: Options = DEFAULT_OPTIONS,
    *,
    reports: Path | None = None,
) -> RebaseResult:
    """Rebase the series onto ``target``; write back only when proven.

    The red/green proof's reports go to ``reports`` (default: under the
    rebase folder of the workdir).
    """
    series_text = line.series_file.read_text()
    if line.pending and not line.extra:  # each waiting patch, tried again
        line = line.with_extra(pending_patches(line))
    series = line.series
    repo, recorded = open_repo(line.work.rebase_repo)
    target = _resolved(repo, target)
    old_base, old_up = make_base(repo, line.upstream, line.work)
    new_base, new_up = make_base(repo, target.spec, line.work)
    pin = dict(target.pin)
    new_toml = repin_toml(line.path.read_text(), pin, target.optional)
    job = Job(line, target, opts, repo, series, series_text)
    notes: list[str] = []
    if recorded:
        notes.append(f"recorded {recorded} resolution(s) made after the last run")
    results, old_head, focused = _move(job, old_base, new_base)
    owners = {n: fix.id for n, fix in _owners(job).items()}
    base = RebaseResult(
        old_label=line.upstream.label,
        new_label=target.spec.label,
        new_pin=pin,
        trust=target.trust,
        patches=tuple(results),
        repo=str(repo.path),
        fixes=fix_verdicts(results, owners),
        taken=_taken(job, results, ups=(old_up, new_up)),
    )
    waiting, why = to_wait(
        repo, line, base, owners=_owners(job), old_base=old_base, apply=opts.apply
    )
    if waiting is None:
        return dataclasses.replace(base, notes=(*notes, *([why] if why else [])))
    result, new, new_toml, job = _export(
        job, base, old=(old_base, old_head), new_base=new_base, toml=new_toml
    )
    result = with_pending(result, waiting, folder=new.folder)
    untested = all(f.untested for f in line.fixes.fixes)  # nothing to run
    if result.new_series and opts.red_green and untested:
        notes.append("no red/green: every fix is carried without a test")
    elif result.new_series and opts.red_green:
        result = _proven(job, result, new, focused=focused, reports=reports)
    for path in unknown_patches(line.patches_dir, [p.name for p in series.patches]):
        say(f"left alone: {path} (not in the series; forkkit did not write it)")
        notes.append(f"`{path.name}` in patches/ is not in the series: left alone")
    if opts.apply:
        result, said = apply_result(job, result, new, toml=new_toml)
        notes += said
    conflict_on_top(repo, line, result)
    return dataclasses.replace(result, notes=tuple(notes))
