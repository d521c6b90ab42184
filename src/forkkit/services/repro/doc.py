# SPDX-License-Identifier: Apache-2.0
"""``repro.json`` as pr-body reads it: the types of what
:meth:`forkkit.services.repro.model.ReproResult.to_json` writes (the fields
a reader uses; others are ignored). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class ResendRowDoc:
    """One resend, base vs fix (cached prompt tokens)."""

    prompt_len: int
    kind: str  # "identical", "extended", "last_token_changed"
    resend_tokens: int
    base_cached: int | None = None
    fix_cached: int | None = None
    gained: int | None = None


@dataclass(frozen=True)
class ReproDoc:
    """The resend reproduction's report."""

    upstream: str = ""
    mode: Literal["cpu", "gpu"] = "cpu"
    complete: bool = False
    rerun: tuple[str, ...] = ()  # the options that rerun it
    fix_tree: str | None = None
    base_tree: str | None = None
    rows: tuple[ResendRowDoc, ...] = ()
