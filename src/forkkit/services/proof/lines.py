# SPDX-License-Identifier: Apache-2.0
"""Every fix on every upstream line, in one table.

A fork may carry its fixes on several upstream lines (``[line] also`` in
``fork.toml`` names the other lines' configs; each line keeps its own fork
tree and reports under the workdir, see :class:`forkkit.workdir.Workdir`).
``forkkit red-green --all-lines`` proves each line as ``red-green`` does and
writes ``reports/lines/summary.{md,json}``: one row per fix, one column per
line, each cell the fix's verdict there (red/green, guard, or why not),
linking the line's own summary. The exit code is the worst line's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from forkkit.output.report import LINES, Report, md_table
from forkkit.services.proof.summary import FixRow, SummaryDoc

LINES_STEM = "summary"


@dataclass(frozen=True)
class LineDoc:
    """One line: its name, its upstream, where its summary is, its fixes."""

    line: str
    upstream: str
    summary: str  # the line's summary.md, relative to the lines summary
    valid: bool
    fixes: tuple[FixRow, ...] = ()


@dataclass(frozen=True)
class LinesDoc(Report):
    """``reports/lines/summary.json``: every fix on every line."""

    DOC = LINES

    valid: bool
    lines: tuple[LineDoc, ...] = ()


def line_doc(
    line: str, summary: SummaryDoc, *, summary_file: Path, folder: Path
) -> LineDoc:
    """A line's entry; ``folder``: where the lines summary is written."""
    return LineDoc(
        line=line,
        upstream=summary.upstream_label,
        summary=os.path.relpath(summary_file, folder),
        valid=summary.valid,  # every fix of the line
        fixes=summary.fixes,
    )


def _cell(row: FixRow | None) -> str:
    if row is None:
        return "not carried"
    if row.declared:
        return "⚪ unproven (declared)"
    if row.waiting:
        return "⏸ waiting (conflicts)"
    if row.mode == "error":
        return "⚠️ not measured"
    if not row.valid:
        return "❌ invalid"
    if row.mode == "guard":
        return f"✅ guard ({row.passed} pass)"
    return f"✅ red/green ({row.fail_to_pass} FAIL_TO_PASS)"


def _name(line: LineDoc) -> str:
    """A line's column: its name and upstream (the upstream alone when it is
    the name, as for the project's default line)."""
    return line.line if line.line == line.upstream else f"{line.line} ({line.upstream})"


def render_lines(doc: LinesDoc) -> str:
    """The table: a row per fix, a column per line (linking its summary)."""
    ids = list(dict.fromkeys(r.fix for line in doc.lines for r in line.fixes))
    by_line = [{r.fix: r for r in line.fixes} for line in doc.lines]
    heads = ["fix", *(f"[{_name(ln)}]({ln.summary})" for ln in doc.lines)]
    rows = [[f"`{fid}`", *(_cell(rows.get(fid)) for rows in by_line)] for fid in ids]
    head = (
        "✅ every fix proven on every line"
        if doc.valid
        else "❌ not every line is proven"
    )
    return f"# Every fix on every line\n\n{head}.\n\n{md_table(heads, rows)}"


def lines_of(docs: Sequence[LineDoc]) -> LinesDoc:
    return LinesDoc(valid=bool(docs) and all(d.valid for d in docs), lines=tuple(docs))
