# SPDX-License-Identifier: Apache-2.0
"""``forkkit rebase --apply``: the gate before the write (proven, or
``--apply-unproven``) and the notes after it (what waits in
``patches/pending.toml``)."""

from __future__ import annotations

import dataclasses

from forkkit.output.progress import say
from forkkit.services.rebase.apply import NewSeries, write_back
from forkkit.services.rebase.model import RebaseResult
from forkkit.services.rebase.steps import Job


def apply_result(
    job: Job, result: RebaseResult, new: NewSeries, *, toml: str
) -> tuple[RebaseResult, list[str]]:
    """``--apply``: write the result back when it is proven (or, with
    ``--apply-unproven``, when only the proof is missing); and its notes."""
    if result.proof_valid is False:
        return result, ["--apply: nothing written (the rebase is not proven)"]
    unproven = result.unproven
    if unproven and not job.opts.apply_unproven:
        why = (
            "--apply: nothing written: the result is unproven (no valid red/green "
            "on it); rerun without --no-red-green, or as 'forkkit rebase "
            "--apply-unproven'"
        )
        say(why)
        return result, [why]
    old = [p.name for p in job.series.patches]
    write_back(
        job.line,
        job.repo,
        new,
        old=old,
        toml=toml,
        retired=result.retired,
        pending=result.pending,
    )
    flag = " (UNPROVEN: --apply-unproven)" if unproven else ""
    say(f"wrote {len(new.names)} patch(es) to {job.line.patches_dir}; re-pinned{flag}")
    if not result.pending:
        return dataclasses.replace(result, written=True), []
    wait = (
        f"--apply: {len(result.pending)} conflicting patch(es) wait in "
        f"patches/pending.toml; resolve the first in {job.repo.path}, then "
        f"rerun 'forkkit rebase' onto {result.new_label} with --apply"
    )
    say(wait)
    return dataclasses.replace(result, written=True), [wait]
