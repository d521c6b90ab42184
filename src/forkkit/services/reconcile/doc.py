# SPDX-License-Identifier: Apache-2.0
"""``reconcile.json``: the comparison with a competing change, one type that
writes it (:func:`reconcile_doc`) and reads it (``ReconcileDoc.read``, e.g.
pr-body). Pure."""

from __future__ import annotations

from dataclasses import dataclass, field

from forkkit.output.report import RECONCILE, Report
from forkkit.patches.diff import Diff
from forkkit.services.reconcile.answers import ResendCell, Trees, stacks_cleanly
from forkkit.services.reconcile.model import Cell, Measurement, failure_kinds
from forkkit.services.reconcile.overlap import Overlap
from forkkit.services.reconcile.render_answers import crosses
from forkkit.services.reconcile.result import ReconcileResult


@dataclass(frozen=True)
class CompetitorDoc:
    ref: str = ""  # what --with named
    kind: str = ""  # "patch", "git", "release"


@dataclass(frozen=True)
class HunkSpanDoc:
    header: str
    span: tuple[int, int]


@dataclass(frozen=True)
class DiffFileDoc:
    path: str
    status: str
    hunks: tuple[HunkSpanDoc, ...] = ()


@dataclass(frozen=True)
class DiffDoc:
    """One side's change: its stats and its files' hunks."""

    stats: dict[str, int] | None = None
    files: tuple[DiffFileDoc, ...] = ()


@dataclass(frozen=True)
class PairDoc:
    ours: str
    theirs: str
    distance: int  # 0: the changed lines intersect
    symbols: tuple[str, ...] = ()


@dataclass(frozen=True)
class OverlapFileDoc:
    path: str
    our_hunks: tuple[str, ...] = ()
    their_hunks: tuple[str, ...] = ()
    shared_symbols: tuple[str, ...] = ()
    pairs: tuple[PairDoc, ...] = ()


@dataclass(frozen=True)
class OverlapDoc:
    kind: str = ""  # disjoint, same-files, overlapping
    files: tuple[OverlapFileDoc, ...] = ()
    ours_only: tuple[str, ...] = ()
    theirs_only: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuntimeDoc:
    key: str
    label: str
    tree: str


@dataclass(frozen=True)
class SideDoc:
    """One side's tests and their classification (None: not classified)."""

    side: str
    label: str = ""
    targets: tuple[str, ...] = ()
    classified_on: tuple[str, ...] = ()  # base runtime, own runtime
    classification: dict[str, tuple[str, ...]] | None = None
    problems: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class MatrixRowDoc:
    side: str
    category: str
    tests: tuple[str, ...] = ()
    cells: dict[str, str] | None = None  # runtime key -> cell


@dataclass(frozen=True)
class CellDoc:
    """One side's tests on one runtime."""

    side: str
    runtime: str
    status: str
    finished: bool = True
    summary: dict[str, int] | None = None
    outcomes: dict[str, str] | None = None
    broken_modules: dict[str, str] | None = None
    conflict: tuple[str, ...] = ()
    skipped_files: tuple[str, ...] = ()
    failure_kinds: dict[str, int] | None = None
    command: str = ""
    seconds: float = 0.0
    note: str = ""
    reused: str = ""
    cached: bool = False


@dataclass(frozen=True)
class GapDoc:
    side: str
    runtime: str
    reason: str


@dataclass(frozen=True)
class MeasurementDoc:
    verdict: str = ""
    summary: str = ""
    measured: tuple[str, ...] = ()  # SIDE@RUNTIME
    not_measured: tuple[GapDoc, ...] = ()


@dataclass(frozen=True)
class CrossDoc:
    """One side's tests on a runtime."""

    tests: str  # whose tests: "ours" or "theirs"
    runtime: str
    total: int = 0
    passed: int = 0
    fail_to_pass: tuple[int, ...] = ()  # (passed, total)
    not_passing: tuple[str, ...] = ()
    not_measured: str = ""  # why there is no measurement (empty: measured)


@dataclass(frozen=True)
class BuildDoc:
    runtime: str
    tree: str = ""
    conflict: tuple[str, ...] = ()


@dataclass(frozen=True)
class StackDoc:
    verdict: str = ""
    builds: tuple[BuildDoc, ...] = ()


@dataclass(frozen=True)
class ResendRowDoc:
    kind: str
    prompt_len: int | None = None
    resend_tokens: int | None = None
    cached_tokens: int | None = None
    recomputed_prompt_tokens: int | None = None


@dataclass(frozen=True)
class ResendCellDoc:
    runtime: str
    tree: str = ""
    reused: str = ""
    error: str = ""
    command: str = ""
    rows: tuple[ResendRowDoc, ...] = ()


@dataclass(frozen=True)
class ResendDoc:
    setup: str = ""
    runtimes: tuple[str, ...] = ()
    cells: tuple[ResendCellDoc, ...] = ()


@dataclass(frozen=True)
class AnswersDoc:
    cross: tuple[CrossDoc, ...] = ()
    runtime_files: dict[str, tuple[str, ...]] | None = None
    stack: StackDoc = StackDoc()
    resend: ResendDoc = ResendDoc()


@dataclass(frozen=True)
class FixOverlapDoc:
    fix: str
    shared_runtime_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReconcileDoc(Report):
    """The comparison with a competing change."""

    DOC = RECONCILE

    title: str = ""
    base: str = ""  # the upstream both sides were measured on
    competitor: CompetitorDoc = CompetitorDoc()
    ours: DiffDoc = DiffDoc()
    theirs: DiffDoc = DiffDoc()
    overlap: OverlapDoc = OverlapDoc()
    runtimes: tuple[RuntimeDoc, ...] = ()
    sides: tuple[SideDoc, ...] = ()
    matrix: tuple[MatrixRowDoc, ...] = ()
    cells: tuple[CellDoc, ...] = ()
    notes: tuple[str, ...] = ()
    measurement: MeasurementDoc = MeasurementDoc()
    answers: AnswersDoc = field(default_factory=AnswersDoc)
    fixes: tuple[FixOverlapDoc, ...] = ()


def reconcile_doc(res: ReconcileResult) -> ReconcileDoc:
    """``res`` as its report's document."""
    keys = [rt.key for rt in res.runtimes]
    return ReconcileDoc(
        title=res.title,
        base=res.base_label,
        competitor=CompetitorDoc(res.competitor, res.competitor_kind),
        ours=_diff(res.ours),
        theirs=_diff(res.theirs),
        overlap=_overlap(res.overlap),
        runtimes=tuple(RuntimeDoc(r.key, r.label, r.tree) for r in res.runtimes),
        sides=tuple(
            SideDoc(
                side=s.side,
                label=s.label,
                targets=s.targets,
                classified_on=(s.base_runtime, s.own_runtime),
                classification={
                    k: tuple(v) for k, v in s.classification.by_category.items()
                }
                if s.classification
                else None,
                problems=tuple(s.classification.problems) if s.classification else (),
                note=s.note,
            )
            for s in res.sides
        ),
        matrix=tuple(
            MatrixRowDoc(
                r.side, r.category, r.tests, dict(zip(keys, r.cells, strict=True))
            )
            for r in res.matrix.rows
        ),
        cells=tuple(_cell(c) for c in res.cells.values()),
        notes=tuple(res.notes),
        measurement=_measurement(res.measurement),
        answers=_answers(res),
        fixes=tuple(
            FixOverlapDoc(fid, tuple(files)) for fid, files in res.fix_overlap()
        ),
    )


def _diff(d: Diff) -> DiffDoc:
    files = tuple(
        DiffFileDoc(
            f.path, f.status, tuple(HunkSpanDoc(h.header, h.span) for h in f.hunks)
        )
        for f in d.files
    )
    return DiffDoc(stats=d.stats(), files=files)


def _overlap(ov: Overlap) -> OverlapDoc:
    files = tuple(
        OverlapFileDoc(
            path=f.path,
            our_hunks=tuple(h.describe() for h in f.ours),
            their_hunks=tuple(h.describe() for h in f.theirs),
            shared_symbols=tuple(f.shared_symbols),
            pairs=tuple(
                PairDoc(
                    p.ours.describe(),
                    p.theirs.describe(),
                    p.distance,
                    tuple(sorted(set(p.ours.symbols) | set(p.theirs.symbols))),
                )
                for p in f.pairs
            ),
        )
        for f in ov.files
    )
    return OverlapDoc(ov.kind, files, tuple(ov.ours_only), tuple(ov.theirs_only))


def _cell(c: Cell) -> CellDoc:
    report = c.report
    return CellDoc(
        side=c.side,
        runtime=c.runtime,
        status=c.status,
        finished=c.finished,
        summary=report.summary() if report else None,
        outcomes={k: v.outcome for k, v in sorted(report.tests.items())}
        if report
        else {},
        broken_modules=dict(c.broken_modules),
        conflict=c.conflict,
        skipped_files=c.skipped_files,
        failure_kinds=failure_kinds(c),
        command=c.command,
        seconds=round(c.seconds, 1),
        note=c.note,
        reused=c.reused,
        cached=c.cached,
    )


def _measurement(m: Measurement) -> MeasurementDoc:
    return MeasurementDoc(
        verdict=m.verdict,
        summary=m.summary(),
        measured=tuple(f"{side}@{runtime}" for side, runtime in m.cells),
        not_measured=tuple(GapDoc(g.side, g.runtime, g.reason) for g in m.gaps),
    )


def _answers(res: ReconcileResult) -> AnswersDoc:
    """The answers for machines: cross passes, stacking, the resend cells."""
    trees = res.trees or Trees()
    cross = tuple(
        CrossDoc(
            tests=c.side,
            runtime=c.runtime,
            total=c.total,
            passed=c.passed,
            fail_to_pass=(c.f2p_passed, c.f2p_total),
            not_passing=c.failing,
            not_measured=c.gap,
        )
        for c in crosses(res).all()
    )
    ours, theirs = res.ours.runtime_paths, res.theirs.runtime_paths
    builds = tuple(BuildDoc(b.runtime, b.tree, tuple(b.conflict)) for b in trees.builds)
    return AnswersDoc(
        cross=cross,
        runtime_files={
            "ours": tuple(ours),
            "theirs": tuple(theirs),
            "union": tuple(sorted(set(ours) | set(theirs))),
        },
        stack=StackDoc(stacks_cleanly(trees.builds), builds),
        resend=ResendDoc(
            trees.setup, tuple(trees.runtimes), tuple(_resend(c) for c in trees.resend)
        ),
    )


def _resend(c: ResendCell) -> ResendCellDoc:
    rows = tuple(
        ResendRowDoc(
            kind=r.kind,
            prompt_len=r.prompt_len,
            resend_tokens=r.resend_tokens,
            cached_tokens=r.cached_tokens,
            recomputed_prompt_tokens=r.recomputed_prompt_tokens,
        )
        for r in (c.run.rows if c.run else ())
    )
    return ResendCellDoc(c.runtime, c.tree, c.reused, c.error, c.command, rows)
