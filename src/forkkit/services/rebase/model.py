# SPDX-License-Identifier: Apache-2.0
"""The vocabulary of ``forkkit rebase``: options, per-patch verdicts, the result.

Pure dataclasses; :mod:`forkkit.services.rebase.absorb` holds the pure
analysis, :mod:`forkkit.services.rebase.run` does the I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from forkkit.patches.fixes import Fix
from forkkit.patches.pending import Pending
from forkkit.patches.retired import Retired
from forkkit.patches.testids import node_id, target_file
from forkkit.pin import UpstreamSpec
from forkkit.services.proof.doc import ProofDoc
from forkkit.services.rebase.files import FileVerdict

Status = Literal[
    "clean",  # git am applied it as is (offsets allowed, no fuzz)
    "3way",  # applied with a 3-way merge against the old base blobs
    "rerere",  # 3-way with conflicts that a recorded resolution replayed
    "resolved-from",  # 3-way with conflicts the vendor's own port resolves
    "conflict",  # 3-way left conflict markers: resolve, then rerun
    "absorbed-textual",  # upstream already has this exact change
    "absorbed-semantic",  # upstream fixed it differently: tests pass without it
    "deleted-upstream",  # upstream deleted its files: dropped (--take-upstream)
    "added-upstream",  # upstream added its files itself: taken (--take-upstream)
    "not-tried",  # reports made before the replay went on past a conflict
]
ABSORBED: tuple[Status, ...] = (
    "absorbed-textual",
    "absorbed-semantic",
    "deleted-upstream",
    "added-upstream",
)
APPLIED: tuple[Status, ...] = ("clean", "3way", "rerere", "resolved-from")
Outcome = Literal["rebased", "retire", "conflict", "proof-failed"]


@dataclass(frozen=True)
class Target:
    """The upstream to rebase onto and the fork.toml lines that would pin it."""

    spec: UpstreamSpec
    trust: str
    pin: dict[str, str]
    optional: tuple[str, ...] = ()

    @classmethod
    def git(cls, spec: UpstreamSpec) -> Target:
        """A git revision: trusted as its commit id, pinned by exactly the
        git fields (``git_rev``, ``git_commit``) and ``source``."""
        return cls(spec, spec.commit_pin.trust, spec.pin_fields())


@dataclass(frozen=True)
class Options:
    """How far the rebase goes."""

    apply: bool = False
    apply_unproven: bool = False  # --apply without a valid red/green proof
    keep_tests: bool = False  # absorbed patches' tests stay (a tests-only guard)
    semantic: bool = True
    red_green: bool = True
    related: bool = True
    pytest_args: tuple[str, ...] = ()
    timeout: float | None = None  # seconds each pytest run may take
    # the proof's runs side by side: on, off, or auto (when 2+ cores are
    # free as the proof starts)
    parallel: str = "off"
    # --resolve-from: the vendor's own port to the new upstream (a diff)
    resolve_from: Path | None = None
    # --take-upstream: a patch whose every conflict is a file upstream deleted
    # or added itself leaves the series (retired, how = that kind)
    take_upstream: bool = False


@dataclass(frozen=True)
class SemanticCheck:
    """Whether a patch's FAIL_TO_PASS tests pass on the new upstream without it."""

    targets: tuple[str, ...]
    fail_to_pass: tuple[str, ...]  # measured on the old base (red -> green)
    passed: tuple[str, ...] = ()  # of those, passing on new upstream + tests only
    failed: tuple[str, ...] = ()  # failing on an assertion: the bug is there
    broken: tuple[str, ...] = ()  # failing otherwise (e.g. AttributeError)
    unchecked: tuple[str, ...] = ()  # not run: their test file conflicts
    others_failing: tuple[str, ...] = ()  # other tests of the run failing there
    note: str = ""
    error: bool = False  # the check itself failed (a test env, a timeout)

    @property
    def absorbed(self) -> bool:
        return bool(self.passed) and not (self.failed or self.broken or self.unchecked)


@dataclass(frozen=True)
class Conflict:
    """One conflicted file left in the rebase worktree."""

    path: str
    regions: tuple[tuple[int, int], ...]  # conflict-marker line ranges
    hunks: tuple[str, ...]  # the patch's hunks that do not apply there

    def describe(self) -> str:
        where = ", ".join(f"lines {a}-{b}" for a, b in self.regions) or "no markers"
        return f"{self.path} ({where}); " + ("; ".join(self.hunks) or "whole file")


@dataclass(frozen=True)
class PatchResult:
    """What happened to one patch of the series."""

    name: str
    subject: str
    status: Status
    detail: str = ""
    old_commit: str = ""
    new_commit: str = ""
    conflicts: tuple[Conflict, ...] = ()
    semantic: SemanticCheck | None = None
    moved: tuple[str, ...] = ()  # files whose hunks applied 3-way (or not at all)
    files: tuple[FileVerdict, ...] = ()  # each file's verdict and conflict kind
    # a pending patch tried again (patches/pending.toml): the pin its text
    # applies to ("" for a patch of the series)
    from_pin: str = ""

    @property
    def absorbed(self) -> bool:
        return self.status in ABSORBED

    @property
    def carries(self) -> bool:
        return self.status in APPLIED


FixVerdictName = Literal["carried", "absorbed", "conflict", "not-tried"]


@dataclass(frozen=True)
class FixVerdict:
    """What a rebase says of one fix: the worst of its patches."""

    fix: str
    verdict: FixVerdictName
    patches: tuple[str, ...]


def fix_verdicts(
    patches: Sequence[PatchResult], owners: Mapping[str, str]
) -> tuple[FixVerdict, ...]:
    """Each fix's verdict from its patches' (``owners``: patch -> fix id):
    a conflict, or not tried, if one of them is; absorbed when all are;
    carried otherwise (a fix that only carries tests is carried: a guard)."""
    by_fix: dict[str, list[PatchResult]] = {}
    for p in patches:
        by_fix.setdefault(owners.get(p.name, ""), []).append(p)
    out = []
    for fid, mine in by_fix.items():
        statuses = {p.status for p in mine}
        verdict: FixVerdictName = "carried"
        if "conflict" in statuses:
            verdict = "conflict"
        elif "not-tried" in statuses:
            verdict = "not-tried"
        elif all(p.absorbed for p in mine):
            verdict = "absorbed"
        out.append(FixVerdict(fid, verdict, tuple(p.name for p in mine)))
    return tuple(out)


@dataclass(frozen=True)
class RebaseResult:
    """The whole rebase: per-patch verdicts, the new series, the proof."""

    old_label: str
    new_label: str
    new_pin: dict[str, str]
    trust: str
    patches: tuple[PatchResult, ...]
    repo: str
    out_dir: str = ""
    new_series: tuple[str, ...] = ()
    range_diff: str = ""
    proof: ProofDoc | None = None  # the red/green report of the result
    proof_markdown: str = ""
    proof_valid: bool | None = None  # None: not run
    written: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    retired: tuple[Retired, ...] = ()  # absorbed patches, with provenance
    fixes: tuple[FixVerdict, ...] = ()  # each fix's verdict, from its patches
    # patch name -> the first upstream commit that took it (a git upstream)
    taken: Mapping[str, str] = field(default_factory=dict)
    # the conflicting patches a partial --apply leaves waiting (pending.toml)
    pending: tuple[Pending, ...] = ()

    @property
    def absorbed(self) -> list[PatchResult]:
        return [p for p in self.patches if p.absorbed]

    @property
    def carried(self) -> list[PatchResult]:
        return [p for p in self.patches if p.carries]

    @property
    def conflicted(self) -> list[PatchResult]:
        return [p for p in self.patches if p.status == "conflict"]

    @property
    def can_retire(self) -> bool:
        return bool(self.patches) and all(p.absorbed for p in self.patches)

    @property
    def outcome(self) -> Outcome:
        if self.conflicted:
            return "conflict"
        if self.proof_valid is False:  # a kept tests-only series fails too
            return "proof-failed"
        if self.can_retire:
            return "retire"
        return "rebased"

    @property
    def ok(self) -> bool:
        return self.outcome in ("rebased", "retire")

    @property
    def unproven(self) -> bool:
        """A refreshed series (whole, or in part while conflicting patches
        wait) that no red/green ran on: nothing shows the carried series
        works. A failed proof is not unproven: it is ``proof-failed``."""
        return bool(self.new_series) and self.proof_valid is None


def _node_ids(check: SemanticCheck) -> tuple[str, ...]:
    """The check's FAIL_TO_PASS tests as pytest node ids."""
    files = {target_file(t) for t in check.targets}
    return tuple(node_id(t, files) or t for t in check.fail_to_pass)


def retired_records(
    result: RebaseResult,
    *,
    digests: dict[str, str],
    fixes: Mapping[str, Fix] | None = None,
) -> tuple[Retired, ...]:
    """The provenance of each patch the rebase found absorbed
    (``digests``: patch name -> sha256 of its file; ``fixes``: patch name ->
    its fix). ``result`` holds the
    pruned verdicts: an absorbed patch whose tests a later patch builds on
    keeps them as a tests-only patch, and its record says so."""
    out = []
    for p in result.absorbed:
        evidence = p.semantic.note if p.semantic and p.semantic.note else p.detail
        if p.new_commit:
            evidence += "; its test changes stay in the series as a tests-only patch"
        fix = (fixes or {}).get(p.name)
        out.append(
            Retired(
                name=p.name,
                subject=p.subject,
                applied_upstream=result.taken.get(p.name, result.new_label),
                how=p.status,
                evidence=evidence,
                retired_from=p.from_pin or result.old_label,
                sha256=digests.get(p.name, ""),
                fix=fix.id if fix else "",
                forwarded=fix.forwarded if fix else "",
                tests=_node_ids(p.semantic) if p.semantic else (),
                upstream_pr=fix.upstream_pr if fix else "",
                advisory=fix.advisory if fix else "",
            )
        )
    return tuple(out)
