# SPDX-License-Identifier: Apache-2.0
"""``repro.json``: the resend reproduction's report, one type that writes it
(:func:`repro_doc`) and reads it (``ReproDoc.read``, e.g. pr-body). Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from forkkit.output.report import REPRO, Report
from forkkit.services.repro.model import (
    ReproOptions,
    ReproResult,
    ResendRow,
    rerun_args,
)


@dataclass(frozen=True)
class ResendRowDoc:
    """One resend, base vs fix (cached prompt tokens)."""

    prompt_len: int
    kind: str  # "identical", "extended", "last_token_changed"
    resend_tokens: int
    base_cached: int | None = None
    fix_cached: int | None = None
    base_match: bool | None = None  # GPU: warm output ids == cold ones
    fix_match: bool | None = None
    base_recomputed: int | None = None
    fix_recomputed: int | None = None
    gained: int | None = None


@dataclass(frozen=True)
class ReproDoc(Report):
    """The resend reproduction's report."""

    DOC = REPRO

    title: str = ""
    upstream: str = ""
    mode: Literal["cpu", "gpu"] = "cpu"
    options: ReproOptions = field(default_factory=ReproOptions)
    rerun: tuple[str, ...] = ()  # the options that rerun it
    fix_commit: str = ""
    base_commit: str = ""
    fix_tree: str | None = None  # the trees the two runs ran on
    base_tree: str | None = None
    complete: bool = False
    runtime_files: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    script_config: dict[str, Any] | None = None
    rows: tuple[ResendRowDoc, ...] = ()
    fix: tuple[ResendRow, ...] = ()  # each script run's own rows
    base: tuple[ResendRow, ...] | None = None


def repro_doc(result: ReproResult) -> ReproDoc:
    """``result`` as its report's document."""
    rows = tuple(
        ResendRowDoc(
            prompt_len=c.prompt_len,
            kind=c.kind,
            resend_tokens=c.resend_tokens,
            base_cached=c.base_cached,
            fix_cached=c.fix_cached,
            base_match=c.base_match,
            fix_match=c.fix_match,
            base_recomputed=c.base_recomputed,
            fix_recomputed=c.fix_recomputed,
            gained=c.gained,
        )
        for c in result.comparisons
    )
    return ReproDoc(
        title=result.title,
        upstream=result.upstream,
        mode="gpu" if result.gpu else "cpu",
        options=result.options,
        rerun=tuple(rerun_args(result.options, gpu=result.gpu)),
        fix_commit=result.fix_commit,
        base_commit=result.base_commit,
        fix_tree=result.fix_tree,
        base_tree=result.base_tree,
        complete=result.complete,
        runtime_files=result.runtime_files,
        commands=result.commands,
        script_config=result.fix.config,
        rows=rows,
        fix=result.fix.rows,
        base=result.base.rows if result.base else None,
    )
