# SPDX-License-Identifier: Apache-2.0
"""``rebase.json``: the rebase report, one type that writes it
(:func:`rebase_doc`) and reads it (``RebaseDoc.read``, e.g. pr-body). Pure."""

from __future__ import annotations

from dataclasses import dataclass

from forkkit.output.report import REBASE, Report
from forkkit.patches.pending import Pending
from forkkit.patches.retired import Retired
from forkkit.services.proof.doc import ProofDoc
from forkkit.services.rebase.files import FileVerdict, file_counts
from forkkit.services.rebase.model import (
    Conflict,
    FixVerdict,
    PatchResult,
    RebaseResult,
    SemanticCheck,
)


@dataclass(frozen=True)
class SemanticDoc:
    """A patch's semantic check: its FAIL_TO_PASS tests on the new upstream
    without the patch."""

    targets: tuple[str, ...] = ()
    fail_to_pass_old: tuple[str, ...] = ()
    pass_without_fix_new: tuple[str, ...] = ()
    fail_without_fix_new: tuple[str, ...] = ()
    broken_new: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()
    others_failing_new: tuple[str, ...] = ()
    absorbed: bool = False
    note: str = ""
    error: bool = False


@dataclass(frozen=True)
class PatchDoc:
    """What happened to one patch of the series."""

    name: str
    subject: str = ""
    status: str = ""
    detail: str = ""
    absorbed: bool = False
    carries: bool = False
    old_commit: str = ""
    new_commit: str = ""
    conflicts: tuple[Conflict, ...] = ()
    semantic: SemanticDoc | None = None
    files: tuple[FileVerdict, ...] = ()  # each file's verdict (and kind)
    from_pin: str = ""  # a pending patch tried again: the pin it waited on


@dataclass(frozen=True)
class RebaseDoc(Report):
    """A rebase: from which pin to which release, each patch, the proof."""

    DOC = REBASE

    old: str = ""  # the pin it started from, e.g. "vllm 0.30.0"
    new: str = ""  # the release it moved onto
    new_pin: dict[str, str] | None = None
    trust: str = ""
    outcome: str = ""  # rebased, retire, conflict, proof-failed
    ok: bool = False
    can_retire: bool = False  # upstream has every patch
    absorbed: tuple[str, ...] = ()
    carried: tuple[str, ...] = ()
    patches: tuple[PatchDoc, ...] = ()
    repo: str = ""
    out_dir: str = ""
    new_series: tuple[str, ...] = ()
    range_diff: str = ""
    proof_valid: bool | None = None  # None: not run
    unproven: bool = False
    proof: ProofDoc | None = None  # the red/green report of the result
    written: bool = False  # --apply wrote the new series
    notes: tuple[str, ...] = ()
    retired: tuple[Retired, ...] = ()  # the patches that left the series
    # the conflicting patches a partial --apply left waiting (pending.toml)
    pending: tuple[Pending, ...] = ()
    fixes: tuple[FixVerdict, ...] = ()
    # how many files have each verdict and conflict kind ("conflict/renamed")
    file_counts: dict[str, int] | None = None


def semantic_doc(check: SemanticCheck) -> SemanticDoc:
    """A semantic check as the report shows it."""
    return SemanticDoc(
        targets=check.targets,
        fail_to_pass_old=check.fail_to_pass,
        pass_without_fix_new=check.passed,
        fail_without_fix_new=check.failed,
        broken_new=check.broken,
        unchecked=check.unchecked,
        others_failing_new=check.others_failing,
        absorbed=check.absorbed,
        note=check.note,
        error=check.error,
    )


def patch_doc(p: PatchResult) -> PatchDoc:
    """One patch's verdict as the report shows it."""
    return PatchDoc(
        name=p.name,
        subject=p.subject,
        status=p.status,
        detail=p.detail,
        absorbed=p.absorbed,
        carries=p.carries,
        old_commit=p.old_commit,
        new_commit=p.new_commit,
        conflicts=p.conflicts,
        semantic=semantic_doc(p.semantic) if p.semantic else None,
        files=p.files,
        from_pin=p.from_pin,
    )


def rebase_doc(result: RebaseResult) -> RebaseDoc:
    """``result`` as its report's document."""
    return RebaseDoc(
        old=result.old_label,
        new=result.new_label,
        new_pin=dict(result.new_pin),
        trust=result.trust,
        outcome=result.outcome,
        ok=result.ok,
        can_retire=result.can_retire,
        absorbed=tuple(p.name for p in result.absorbed),
        carried=tuple(p.name for p in result.carried),
        patches=tuple(patch_doc(p) for p in result.patches),
        repo=result.repo,
        out_dir=result.out_dir,
        new_series=result.new_series,
        range_diff=result.range_diff,
        proof_valid=result.proof_valid,
        unproven=result.unproven,
        proof=result.proof,
        written=result.written,
        notes=result.notes,
        retired=result.retired,
        pending=result.pending,
        fixes=result.fixes,
        file_counts=file_counts([f for p in result.patches for f in p.files]),
    )
