# SPDX-License-Identifier: Apache-2.0
"""pr-body's "What upstream already has": patches that left the series
(``patches/retired.toml``) and what the latest rebase found absorbed on a
newer release (a dry run: not yet applied). Pure."""

from __future__ import annotations

from collections.abc import Sequence

from forkkit.output.mdtext import md_text
from forkkit.output.report import md_table
from forkkit.patches.retired import Retired
from forkkit.services.rebase.doc import RebaseDoc

_HOW = {
    "absorbed-textual": "the same change is upstream",
    "absorbed-semantic": "its FAIL_TO_PASS tests pass upstream without it",
}


def _rows(entries: Sequence[Retired]) -> list[list[object]]:
    return [
        [
            md_text(e.subject or e.name),
            e.applied_upstream,
            _HOW.get(e.how, e.how),
            e.evidence,
        ]
        for e in entries
    ]


def upstream_md(retired: Sequence[Retired], rebase: RebaseDoc | None) -> list[str]:
    """The section, or nothing when upstream has none of the series."""
    pending = list(rebase.retired) if rebase else []
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
        new = rebase.new or "a newer release"
        verdict = (
            f"has every patch: the fork can retire on {new}"
            if rebase.can_retire
            else f"has {len(pending)} of the patches"
        )
        how = "applied" if rebase.written else "a dry run, not applied"
        out += [
            f"The latest `forkkit rebase` onto {new} ({how}) "
            f"found that upstream {verdict}:",
            "",
            md_table(headers, _rows(pending)),
        ]
    return out
