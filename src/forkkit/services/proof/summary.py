# SPDX-License-Identifier: Apache-2.0
"""Every fix proven alone, and one summary of them.

``forkkit red-green`` proves each fix of the series on its own (red: HEAD
with that fix's runtime hunks reverted, every other fix kept; green: HEAD),
each into its own report folder ``red_green/<fix-id>/``, and writes
``red_green/summary.{md,json}``: a table fix, verdict, FAIL_TO_PASS with a
link to each report. Every fix's green is read from the one run on HEAD (the
related suites plus every fix's focused tests), which the result cache holds
after the first fix, so N fixes cost N reds and one run on the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forkkit.config import ForkConfig
from forkkit.output.doc import from_json, to_json
from forkkit.output.progress import say
from forkkit.output.report import SUMMARY, md_table, write_reports
from forkkit.patches.fixes import Fix
from forkkit.services.proof.model import STEM, RedGreenResult
from forkkit.services.proof.render import render_markdown
from forkkit.testing.suiterun import SuiteRun, report_folder

SUMMARY_STEM = "summary"
Result = RedGreenResult[SuiteRun]


@dataclass(frozen=True)
class FixRow:
    """One fix's line of the summary."""

    fix: str
    title: str
    mode: str  # "red-green" or "guard"
    valid: bool
    fail_to_pass: int = 0
    pass_to_pass: int = 0
    passed: int = 0  # a guard: its carried tests that passed
    problems: tuple[str, ...] = ()
    report: str = ""  # the fix's Markdown report, relative to the summary
    forwarded: str = ""


@dataclass(frozen=True)
class SummaryDoc:
    """``red_green/summary.json``: every fix's verdict on one pin."""

    upstream: str
    upstream_label: str = ""
    head_tree: str = ""
    valid: bool = False
    fixes: tuple[FixRow, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = to_json(self)
        return data


def read_summary(data: Mapping[str, Any], *, where: str) -> SummaryDoc:
    """A ``summary.json`` (stamped ``forkkit.red-green-summary`` v1) as types;
    ValueError names the file and what is wrong."""
    why = SUMMARY.refusal(dict(data))
    if why:
        raise ValueError(f"{where}: {why}")
    return from_json(SummaryDoc, data, where=where)


def _row(r: Result) -> FixRow:
    fix = r.fix
    c = r.classification
    return FixRow(
        fix=fix.id if fix else "",
        title=r.title,
        mode=r.mode,
        valid=r.valid,
        fail_to_pass=len(c.ids("FAIL_TO_PASS")),
        pass_to_pass=len(c.ids("PASS_TO_PASS")),
        passed=(r.green.counts().get("passed", 0) if r.mode == "guard" else 0),
        problems=tuple(r.problems),
        report=f"{fix.id if fix else STEM}/{STEM}.md",
        forwarded=fix.forwarded if fix else "",
    )


def summary_doc(results: Sequence[Result]) -> SummaryDoc:
    first = results[0]
    return SummaryDoc(
        upstream=first.upstream,
        upstream_label=first.upstream_label,
        head_tree=first.head_tree,
        valid=all(r.valid for r in results),
        fixes=tuple(_row(r) for r in results),
    )


def _verdict(row: FixRow) -> str:
    if not row.valid:
        return f"❌ invalid: {row.problems[0] if row.problems else 'see its report'}"
    if row.mode == "guard":
        return f"✅ guard valid ({row.passed} carried tests pass)"
    return f"✅ red/green valid ({row.fail_to_pass} FAIL_TO_PASS)"


def render_summary(doc: SummaryDoc) -> str:
    """The summary's Markdown: one row per fix, each linking its report."""
    head = "✅ every fix proven" if doc.valid else "❌ not every fix is proven"
    rows = [
        [
            f"[{r.fix}]({r.report})",
            r.title,
            _verdict(r),
            r.fail_to_pass,
            r.pass_to_pass,
            r.forwarded or "(not forwarded)",
        ]
        for r in doc.fixes
    ]
    table = md_table(
        ["fix", "title", "verdict", "FAIL_TO_PASS", "PASS_TO_PASS", "forwarded"],
        rows,
    )
    return (
        f"# Red/green of every fix on {doc.upstream_label}\n\n{head} "
        f"({len(doc.fixes)} fix(es); each proven alone: red is the fork with "
        f"that fix's runtime hunks reverted, every other fix kept).\n\n{table}"
    )


@dataclass(frozen=True)
class Proven:
    """What ``red-green`` proved: the summary and each fix's result."""

    summary: SummaryDoc
    results: tuple[Result, ...]
    folder: Path  # where the summary is published

    @property
    def markdown(self) -> str:
        parts = [render_summary(self.summary)]
        parts += [render_markdown(r) for r in self.results]
        return "\n\n".join(parts)


def prove_fixes(
    cfg: ForkConfig,
    chosen: Sequence[Fix],
    *,
    out: Path | None,
    prove_one: Callable[[Fix, Path], Result],
) -> Proven:
    """Prove each of ``chosen`` into ``<folder>/<fix-id>`` with ``prove_one``,
    then write the summary; the folder is published as ``reports/red_green``
    (or ``out``)."""
    with report_folder(cfg, STEM, out) as folder:
        results = []
        for n, fix in enumerate(chosen, 1):
            say(f"fix {n}/{len(chosen)}: {fix.id} ({', '.join(fix.patches)})")
            results.append(prove_one(fix, folder.path / fix.id))
        doc = summary_doc(results)
        write_reports(
            folder.path,
            SUMMARY_STEM,
            markdown=render_summary(doc),
            data=doc.to_json(),
            doc=SUMMARY,
        )
        dest = folder.dest
    say(f"{sum(r.valid for r in results)} of {len(results)} fix(es) proven")
    return Proven(summary=doc, results=tuple(results), folder=dest)
