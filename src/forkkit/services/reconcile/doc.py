# SPDX-License-Identifier: Apache-2.0
"""``reconcile.json`` as pr-body reads it: the types of what
:func:`forkkit.services.reconcile.render.to_json` writes (the fields a reader
uses; others are ignored). Pure."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CompetitorDoc:
    ref: str = ""  # what --with named
    kind: str = ""  # "patch", "git", "release"


@dataclass(frozen=True)
class OverlapDoc:
    kind: str = ""


@dataclass(frozen=True)
class MeasurementDoc:
    summary: str = ""


@dataclass(frozen=True)
class SideDoc:
    """One side's tests and their classification (None: not classified)."""

    side: str
    label: str = ""
    classification: dict[str, tuple[str, ...]] | None = None


@dataclass(frozen=True)
class CrossDoc:
    """One side's tests on a runtime."""

    tests: str  # whose tests: "ours" or "theirs"
    runtime: str
    total: int = 0
    passed: int = 0
    fail_to_pass: tuple[int, ...] = ()  # (passed, total)
    not_measured: str = ""  # why there is no measurement (empty: measured)


@dataclass(frozen=True)
class StackDoc:
    verdict: str = ""


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
    rows: tuple[ResendRowDoc, ...] = ()


@dataclass(frozen=True)
class ResendDoc:
    setup: str = ""
    runtimes: tuple[str, ...] = ()
    cells: tuple[ResendCellDoc, ...] = ()


@dataclass(frozen=True)
class AnswersDoc:
    cross: tuple[CrossDoc, ...] = ()
    stack: StackDoc = StackDoc()
    resend: ResendDoc = ResendDoc()


@dataclass(frozen=True)
class ReconcileDoc:
    """The comparison with a competing change."""

    base: str = ""  # the upstream both sides were measured on
    competitor: CompetitorDoc = CompetitorDoc()
    overlap: OverlapDoc = OverlapDoc()
    measurement: MeasurementDoc = MeasurementDoc()
    sides: tuple[SideDoc, ...] = ()
    answers: AnswersDoc = field(default_factory=AnswersDoc)
