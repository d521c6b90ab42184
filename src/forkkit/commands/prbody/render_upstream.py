# SPDX-License-Identifier: Apache-2.0
"""pr-body's "What upstream already has": patches that left the series
(``patches/retired.toml``) and what the latest rebase found absorbed on a
newer release (a dry run: not yet applied). Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from forkkit.output.report import md_table
from forkkit.patches.retired import Retired, retired_of

_HOW = {
    "absorbed-textual": "the same change is upstream",
    "absorbed-semantic": "its FAIL_TO_PASS tests pass upstream without it",
}


def _rows(entries: Sequence[Retired]) -> list[list[object]]:
    return [
        [e.subject or e.name, e.applied_upstream, _HOW.get(e.how, e.how), e.evidence]
        for e in entries
    ]


def _rebase_entries(doc: Mapping[str, Any]) -> list[Retired]:
    """The absorbed patches of a rebase report's JSON (malformed: none)."""
    out = []
    for raw in doc.get("retired") or []:
        if isinstance(raw, Mapping):
            try:
                out.append(retired_of(raw))
            except TypeError:
                continue
    return out


def upstream_md(
    retired: Sequence[Retired], rebase: Mapping[str, Any] | None
) -> list[str]:
    """The section, or nothing when upstream has none of the series."""
    pending = _rebase_entries(rebase) if rebase else []
    if not retired and not pending:
        return []
    out = ["## What upstream already has", ""]
    headers = ["patch", "upstream release", "how forkkit knows", "evidence"]
    if retired:
        out += [
            "Retired from the series (`patches/retired.toml`):",
            "",
            md_table(headers, _rows(retired)),
        ]
    if pending and rebase is not None:
        new = str(rebase.get("new") or "a newer release")
        verdict = (
            f"has every patch: the fork can retire on {new}"
            if rebase.get("can_retire")
            else f"has {len(pending)} of the patches"
        )
        how = "applied" if rebase.get("written") else "a dry run, not applied"
        out += [
            f"The latest `forkkit rebase` onto {new} ({how}) "
            f"found that upstream {verdict}:",
            "",
            md_table(headers, _rows(pending)),
        ]
    return out
