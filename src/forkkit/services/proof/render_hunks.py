# SPDX-License-Identifier: Apache-2.0
"""The hunk matrix (``--hunks``) in the red/green report: Markdown and JSON."""

from __future__ import annotations

from collections.abc import Sequence

from forkkit.output.report import md_table
from forkkit.services.proof.model import HunkCheck, RedGreenResult
from forkkit.testing.forkruns import SuiteRun

Result = RedGreenResult[SuiteRun]
SHOWN_RED = 3  # tests named per hunk in the hunk matrix (all of them in JSON)


def _red_cell(r: Result, c: HunkCheck) -> str:
    shown = [f"`{r.node(t)}`" for t in c.turns_red[:SHOWN_RED]]
    more = len(c.turns_red) - SHOWN_RED
    return (
        f"{len(c.turns_red)}: " + ", ".join(shown) + (f" +{more}" if more > 0 else "")
    )


def _hunk_verdict(c: HunkCheck) -> str:
    if not c.reverted:
        return f"cannot be reverted alone ({c.note})"
    if c.untested:
        return "⚠️ untested: every FAIL_TO_PASS test passes without it"
    return f"needed; {c.note}" if c.note else "needed"


def _grouped(checks: Sequence[HunkCheck]) -> list[HunkCheck]:
    """Hunks in diff order, those of one function together (at its first)."""
    first: dict[tuple[str, str], int] = {}
    for i, c in enumerate(checks):
        first.setdefault((c.path, c.symbol), i)
    return sorted(checks, key=lambda c: first[(c.path, c.symbol)])


def hunk_section(r: Result) -> list[str]:
    """The hunk matrix: each runtime hunk reverted alone, grouped by function."""
    if r.hunks is None:
        return []
    out = ["### Hunk matrix", ""]
    if not r.hunks:
        return [*out, "No runtime hunk to check (or no FAIL_TO_PASS test).", ""]
    needed = sum(1 for c in r.hunks if c.turns_red)
    out += [
        f"Each runtime hunk reverted alone, the FAIL_TO_PASS tests run: "
        f"{needed} of {len(r.hunks)} hunk(s) needed by at least one test.",
        "",
    ]
    rows = [
        [
            f"`{c.symbol}`" if c.symbol else "-",
            c.hunk,
            _red_cell(r, c) if c.turns_red else "-",
            _hunk_verdict(c),
        ]
        for c in _grouped(r.hunks)
    ]
    return [*out, md_table(["Function", "Hunk", "Turns red", "Verdict"], rows)]
