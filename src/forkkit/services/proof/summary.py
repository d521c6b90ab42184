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

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.line import Line
from forkkit.output.progress import say
from forkkit.output.report import SUMMARY, Report, md_table, write_reports
from forkkit.patches.fixes import Fix
from forkkit.services.proof.doc import ProofDoc, proof_doc
from forkkit.services.proof.model import STEM, RedGreenResult
from forkkit.services.proof.render import render_markdown
from forkkit.testing.forkruns import SuiteRun

SUMMARY_STEM = "summary"
Result = RedGreenResult[SuiteRun]


@dataclass(frozen=True)
class FixRow:
    """One fix's line of the summary."""

    fix: str
    title: str
    mode: str  # "red-green", "guard", or "error" (nothing was measured)
    valid: bool
    fail_to_pass: int = 0
    pass_to_pass: int = 0
    passed: int = 0  # a guard: its carried tests that passed
    problems: tuple[str, ...] = ()
    report: str = ""  # the fix's Markdown report, relative to the summary
    forwarded: str = ""
    tree: str = ""  # the fork HEAD's tree the proof ran on
    declared: str = ""  # carried without a test (proof = "none"): why
    provenance: str = ""  # its advisory and the upstream PR it backports
    # its patches wait in patches/pending.toml: the pin they conflict on
    waiting: str = ""

    @property
    def counts(self) -> bool:
        """Whether the line's verdict waits on this row: a fix declared
        without a test, or one whose patches wait out of the series, never
        makes it fail, and is never called proven."""
        return not (self.declared or self.waiting)


@dataclass(frozen=True)
class SummaryDoc(Report):
    """``red_green/summary.json``: every fix's verdict on one pin."""

    DOC = SUMMARY

    upstream: str
    upstream_label: str = ""
    line: str = ""  # the line's name (its upstream label when it has none)
    head_tree: str = ""
    valid: bool = False
    fixes: tuple[FixRow, ...] = ()
    waiting: int = 0  # patches out of the series (patches/pending.toml)


def row_of(doc: ProofDoc, fix: Fix) -> FixRow:
    """A fix's row, from its proof's document."""
    guard = doc.mode == "guard"
    return FixRow(
        fix=fix.id,
        title=doc.title or fix.title,
        mode=doc.mode,
        valid=doc.valid,
        fail_to_pass=len(doc.ids("FAIL_TO_PASS")),
        pass_to_pass=len(doc.ids("PASS_TO_PASS")),
        passed=doc.green.counts.get("passed", 0) if guard else 0,
        problems=doc.problems,
        report=f"{fix.id}/{STEM}.md",
        forwarded=fix.forwarded,
        tree=doc.fork_head.tree or "",
        provenance=fix.provenance,
    )


def error_row(fix: Fix, why: str) -> FixRow:
    """A fix nothing could be measured of, and why (one line)."""
    return FixRow(
        fix=fix.id,
        title=fix.title,
        mode="error",
        valid=False,
        problems=(why,),
        forwarded=fix.forwarded,
    )


def declared_row(fix: Fix) -> FixRow:
    """A fix carried without a test (``proof = "none"``): unproven, said so."""
    return FixRow(
        fix=fix.id,
        title=fix.title,
        mode="declared",
        valid=False,
        forwarded=fix.forwarded,
        declared=fix.untested,
        provenance=fix.provenance,
    )


def waiting_rows(line: Line) -> list[FixRow]:
    """A row for each fix whose every patch waits in ``patches/pending.toml``
    (it conflicts on this pin: not part of the line until resolved)."""
    carried = {f.id for f in line.fixes.fixes}
    out: dict[str, FixRow] = {}
    for p in line.pending:
        if p.fix not in carried and p.fix not in out:
            out[p.fix] = FixRow(
                fix=p.fix,
                title=p.subject,
                mode="waiting",
                valid=False,
                waiting=p.conflicts_on,
            )
    return list(out.values())


def summary_doc(
    first: Result | None, rows: Sequence[FixRow], *, line: Line
) -> SummaryDoc:
    """The summary of ``rows`` (the fixes declared without a test, and those
    that wait out of the series, first); valid when every other fix is
    proven. ``first``: a proof's result, for the pin and tree it ran on
    (None: nothing was proven)."""
    rows = [*rows, *waiting_rows(line)]
    counted = [r for r in rows if r.counts]
    return SummaryDoc(
        upstream=first.upstream if first else line.upstream.ident,
        upstream_label=first.upstream_label if first else line.upstream.label,
        line=line.name,
        head_tree=first.head_tree if first else "",
        valid=bool(rows) and all(r.valid for r in counted),
        fixes=(*(r for r in rows if not r.counts), *counted),
        waiting=len(line.pending),
    )


def _verdict(row: FixRow, head_tree: str) -> str:
    if row.declared:
        return f"⚪ unproven (declared: {row.declared})"
    if row.waiting:
        return (
            f"⏸ waiting: conflicts on {row.waiting} (patches/pending.toml); "
            "resolve it, then 'forkkit rebase --apply'"
        )
    if row.mode == "error":
        return f"⚠️ not measured: {row.problems[0]}"
    if row.tree and head_tree and row.tree != head_tree:
        return "⚠️ an earlier proof, of another fork HEAD: prove it again"
    if not row.valid:
        return f"❌ invalid: {row.problems[0] if row.problems else 'see its report'}"
    if row.mode == "guard":
        return f"✅ guard valid ({row.passed} carried tests pass)"
    return f"✅ red/green valid ({row.fail_to_pass} FAIL_TO_PASS)"


def render_summary(doc: SummaryDoc) -> str:
    """The summary's Markdown: one row per fix, each linking its report."""
    head = "✅ every fix proven" if doc.valid else "❌ not every fix is proven"
    if doc.valid and not any(r.counts for r in doc.fixes):
        head = "⚪ nothing to prove: no fix here has a test"
    rows = [
        [
            f"[{r.fix}]({r.report})" if r.report else r.fix,
            f"{r.title} ({r.provenance})" if r.provenance else r.title,
            _verdict(r, doc.head_tree),
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
    waits = (
        f"\n\n⏸ {doc.waiting} patch(es) wait in patches/pending.toml: they "
        "conflict on this pin and are not part of it until resolved "
        "('forkkit rebase --apply' onto it again)."
        if doc.waiting
        else ""
    )
    return (
        f"# Red/green of every fix on {doc.upstream_label}\n\n{head} "
        f"({len(doc.fixes)} fix(es); each proven alone: red is the fork with "
        f"that fix's runtime hunks reverted, every other fix kept).\n\n{table}"
        f"{waits}"
    )


@dataclass(frozen=True)
class Proven:
    """What ``red-green`` proved: the summary and each fix's result."""

    summary: SummaryDoc
    results: tuple[Result, ...]
    folder: Path  # where the summary is published
    only: bool = False  # one fix asked for (--fix): its verdict is the exit's

    @property
    def valid(self) -> bool:
        """What the exit code says: every fix proven (or the one asked for)."""
        if self.only:
            return all(r.valid for r in self.results)
        return self.summary.valid

    @property
    def markdown(self) -> str:
        parts = [render_summary(self.summary)]
        parts += [render_markdown(r) for r in self.results]
        return "\n\n".join(parts)


ProveOne = Callable[[Fix, Path], Result]


def _each(
    chosen: Sequence[Fix], folder: Path, prove_one: ProveOne
) -> tuple[list[Result], dict[str, FixRow], list[str]]:
    """Prove each fix into ``folder/<id>``; a fix that cannot be measured (one
    line) is an error row, and the others are still proven."""
    results: list[Result] = []
    rows: dict[str, FixRow] = {}
    errors: list[str] = []
    for n, fix in enumerate(chosen, 1):
        say(f"fix {n}/{len(chosen)}: {fix.id} ({', '.join(fix.patches)})")
        if fix.untested:
            say(f"{fix.id}: carried without a test ({fix.untested}): not proven")
            rows[fix.id] = declared_row(fix)
            continue
        try:
            result = prove_one(fix, folder / fix.id)
        except ForkkitError as exc:
            rows[fix.id] = error_row(fix, str(exc))
            errors.append(f"fix '{fix.id}': {exc}")
            continue
        results.append(result)
        rows[fix.id] = row_of(proof_doc(result), fix)
    return results, rows, errors


def _write_summary(folder: Path, doc: SummaryDoc) -> None:
    write_reports(
        folder,
        SUMMARY_STEM,
        markdown=render_summary(doc),
        report=doc,
    )


def _raise_errors(errors: list[str]) -> None:
    if errors:
        more = f" (and {len(errors) - 1} more fix(es), see the summary)"
        raise ForkkitError(errors[0] + (more if len(errors) > 1 else ""))


def prove_fixes(
    line: Line,
    chosen: Sequence[Fix],
    *,
    out: Path | None,
    prove_one: ProveOne,
    ahead: Callable[[], None] | None = None,
) -> Proven:
    """Prove each of ``chosen`` into ``<folder>/<fix-id>`` with ``prove_one``,
    then write the summary; the folder is published as ``reports/red_green``
    (or ``out``). ``ahead`` runs first, in the folder's lifetime (an
    interrupt there leaves FAILED.txt too). A fix that cannot be measured is
    a row of the summary, and the command's one-line error once every other
    fix is proven."""
    with line.work.report_folder(STEM, out=out) as folder:
        if ahead is not None:
            ahead()
        results, rows, errors = _each(chosen, folder.path, prove_one)
        if not results:
            _raise_errors(errors)
        first = results[0] if results else None
        doc = summary_doc(first, [rows[f.id] for f in chosen], line=line)
        _write_summary(folder.path, doc)
        dest = folder.dest
        _raise_errors(errors)
    say(f"{sum(r.valid for r in rows.values())} of {len(rows)} fix(es) proven")
    return Proven(summary=doc, results=tuple(results), folder=dest)


def prove_one_fix(
    line: Line,
    fix: Fix,
    every: Sequence[Fix],
    *,
    out: Path | None,
    prove_one: ProveOne,
) -> Proven:
    """``red-green --fix ID``: prove that fix into ``<folder>/<id>`` alone (the
    other fixes' reports stay), then write the summary again from every
    fix's latest report (one made on another fork HEAD says so)."""
    folder = out or line.work.report_dir(STEM)
    if fix.untested:
        say(f"{fix.id}: carried without a test ({fix.untested}): not proven")
        result = None
    else:
        result = prove_one(fix, line.work.proof_dir(fix.id, out=folder))
    rows = [
        _row(f, line, folder=folder, new=result if f == fix else None) for f in every
    ]
    doc = summary_doc(result, rows, line=line)
    _write_summary(folder, doc)
    results = (result,) if result else ()
    return Proven(summary=doc, results=results, folder=folder, only=True)


def _row(fix: Fix, line: Line, *, folder: Path, new: Result | None) -> FixRow:
    """A fix's row: declared, from the proof just made, or its latest report."""
    if fix.untested:
        return declared_row(fix)
    if new is not None:
        return row_of(proof_doc(new), fix)
    return _earlier(line.work.proof_report(fix.id, out=folder), fix)


def _earlier(path: Path, fix: Fix) -> FixRow:
    """A fix's row from its report at ``path``, if there is one."""
    try:
        doc = ProofDoc.of(json.loads(path.read_text()), where=str(path))
    except (OSError, ValueError):
        return error_row(fix, f"not proven yet: run 'forkkit red-green --fix {fix.id}'")
    return row_of(doc, fix)
