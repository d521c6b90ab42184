# SPDX-License-Identifier: Apache-2.0
"""``watch.json``: the watch report, one type that writes it
(:func:`watch_doc`) and reads it (``WatchDoc.read``); its history rows are
also what the history cache stores (:func:`row_doc`, :func:`row_of_doc`).
Pure."""

from __future__ import annotations

from dataclasses import dataclass

from forkkit.output.report import WATCH, Report
from forkkit.services.rebase.model import FixVerdict
from forkkit.services.watch.history import (
    HISTORY_FORMAT,
    Applies,
    History,
    HistoryCell,
    HistoryRow,
    Need,
)
from forkkit.services.watch.model import Verdict, WatchResult


@dataclass(frozen=True)
class CellDoc:
    """One patch on one release."""

    patch: str
    applies: Applies
    need: Need
    label: str = ""
    detail: str = ""
    failing_without: int = 0  # FAIL_TO_PASS tests failing there without it
    fail_to_pass_old: int = 0  # FAIL_TO_PASS tests measured on the old pin


@dataclass(frozen=True)
class RowDoc:
    """One release of the history."""

    release: str
    outcome: str
    cells: tuple[CellDoc, ...] = ()
    proof_valid: bool | None = None
    cached: bool = False  # read back from the history cache


@dataclass(frozen=True)
class HistoryDoc:
    """``watch --all``: every release newer than the pin, each patch."""

    package: str
    pin: str
    format: int = HISTORY_FORMAT
    patches: tuple[str, ...] = ()
    releases: tuple[str, ...] = ()
    rows: tuple[RowDoc, ...] = ()
    first_absorbed: dict[str, str] | None = None
    unmeasured: dict[str, tuple[str, ...]] | None = None
    fixes: dict[str, tuple[str, ...]] | None = None
    fix_first_absorbed: dict[str, str] | None = None


@dataclass(frozen=True)
class PatchLineDoc:
    name: str
    status: str
    detail: str = ""


@dataclass(frozen=True)
class WatchRebaseDoc:
    """What the dry-run rebase said (its own report lies beside watch.md)."""

    outcome: str
    proof_valid: bool | None = None
    can_retire: bool = False
    patches: tuple[PatchLineDoc, ...] = ()
    fixes: tuple[FixVerdict, ...] = ()


@dataclass(frozen=True)
class WatchDoc(Report):
    """The release checked, the verdict and its exit code."""

    DOC = WATCH

    package: str
    pin: str
    verdict: Verdict
    exit_code: int
    reason: str = ""
    index_url: str = ""
    follows: str = ""
    skipped: tuple[str, ...] = ()  # newer releases with no sdist: not checked
    newer: tuple[str, ...] = ()
    checked: str = ""
    rebase_report: str = ""
    history: HistoryDoc | None = None
    rebase: WatchRebaseDoc | None = None


def row_doc(row: HistoryRow) -> RowDoc:
    """A history row as the report (and the history cache) holds it."""
    cells = tuple(
        CellDoc(
            patch=c.patch,
            applies=c.applies,
            need=c.need,
            label=c.label,
            detail=c.detail,
            failing_without=c.failing,
            fail_to_pass_old=c.fail_to_pass,
        )
        for c in row.cells
    )
    return RowDoc(row.release, row.outcome, cells, row.proof_valid, row.cached)


def row_of_doc(doc: RowDoc, *, cached: bool) -> HistoryRow:
    """The history row a stored document holds."""
    cells = tuple(
        HistoryCell(
            c.patch, c.applies, c.need, c.detail, c.failing_without, c.fail_to_pass_old
        )
        for c in doc.cells
    )
    return HistoryRow(doc.release, doc.outcome, cells, doc.proof_valid, cached)


def history_doc(h: History) -> HistoryDoc:
    """The whole history as the report shows it."""
    return HistoryDoc(
        package=h.package,
        pin=h.pin,
        patches=h.patches,
        releases=tuple(r.release for r in h.rows),
        rows=tuple(row_doc(r) for r in h.rows),
        first_absorbed=h.first_absorbed(),
        unmeasured={p: tuple(r) for p, r in h.unmeasured().items()},
        fixes=dict(h.fixes),
        fix_first_absorbed=h.fix_first_absorbed(),
    )


def watch_doc(result: WatchResult) -> WatchDoc:
    """``result`` as its report's document."""
    r = result.rebase
    rebase = None
    if r is not None:
        rebase = WatchRebaseDoc(
            outcome=r.outcome,
            proof_valid=r.proof_valid,
            can_retire=r.can_retire,
            patches=tuple(PatchLineDoc(p.name, p.status, p.detail) for p in r.patches),
            fixes=r.fixes,
        )
    history = result.history
    return WatchDoc(
        package=result.package,
        pin=result.pin,
        verdict=result.verdict,
        exit_code=result.exit_code,
        reason=result.reason,
        index_url=result.index_url,
        follows=result.follows,
        skipped=result.skipped,
        newer=result.newer,
        checked=result.checked,
        rebase_report=result.rebase_report,
        history=None if history is None else history_doc(history),
        rebase=rebase,
    )
