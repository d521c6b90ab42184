# SPDX-License-Identifier: Apache-2.0
"""The reconcile report: :class:`~forkkit.services.reconcile.result.ReconcileResult`
as Markdown (for a PR thread) and JSON. Pure: no git, no pytest, no files."""

from __future__ import annotations

from collections.abc import Iterable

from forkkit.output.report import md_table
from forkkit.patches.testids import short_id
from forkkit.services.reconcile.model import (
    Cell,
    Measurement,
    failure_kinds,
)
from forkkit.services.reconcile.overlap import Overlap
from forkkit.services.reconcile.render_answers import answers_md
from forkkit.services.reconcile.result import ReconcileResult

MAX_DETAILS = 40  # per-test rows in the Markdown (JSON has all)
_OVERLAP = {
    "disjoint": "The two changes touch **no common file**.",
    "same-files": "Both sides touch the same file(s) but **no hunks overlap**.",
    "overlapping": "Both sides change **the same code** (overlapping hunks).",
}
_MATRIX_INTRO = (
    "Rows: each side's tests, classified SWE-bench style on base runtime vs "
    "that side's runtime (UNCLASSIFIED: tests that only exist in some "
    "columns). Columns: the runtime they run on; the tests always come from "
    "the row's side.\n"
)


def render_markdown(res: ReconcileResult) -> str:
    """The PR-thread report."""
    out = [f"## Reconcile: {res.title or 'our fix'} vs {res.competitor}\n"]
    out += answers_md(res)
    o, t = res.ours.stats(), res.theirs.stats()
    out.append(
        f"Base: **{res.base_label}**. Competitor ({res.competitor_kind}): "
        f"`{res.competitor}`. Ours: {o['files']} file(s), {o['hunks']} hunk(s) "
        f"(+{o['added']}/-{o['removed']}); theirs: {t['files']} file(s), "
        f"{t['hunks']} hunk(s) (+{t['added']}/-{t['removed']}).\n"
    )
    out += _measurement_md(res.measurement)
    out += _fixes_md(res)
    out += _overlap_md(res.overlap)
    out += _matrix_md(res)
    out += _cells_md(res)
    out += _conflicts_md(res.cells.values())
    if res.notes:
        out.append("\n### Notes\n")
        out += [f"- {n}" for n in res.notes]
        out.append("")
    cmds = [c for c in res.cells.values() if c.command and not c.reused]
    if cmds:
        out.append("\n<details><summary>Commands</summary>\n")
        for c in cmds:
            out.append(
                f"- {c.side} tests on {c.runtime} ({c.seconds:.0f}s): `{c.command}`"
            )
        out.append("\n</details>\n")
    return "\n".join(out).rstrip() + "\n"


def _measurement_md(m: Measurement) -> list[str]:
    """What the matrix measured: the first thing a reader (and CI) must know."""
    total = len(m.cells) + len(m.gaps)
    if m.verdict == "measured":
        return [f"**Measured**: all {total} cell(s) of the {m.what}.\n"]
    if not total:
        return ["**Nothing measured**: neither side brings a test to run.\n"]
    head = "Nothing measured" if m.verdict == "nothing" else "Partial"
    return [
        f"**{head}**: {len(m.cells)} of {total} cell(s) of the {m.what} "
        "measured (exit status 1). Not measured:\n",
        *[f"- {g.describe()}" for g in m.gaps],
        "",
    ]


def _overlap_md(ov: Overlap) -> list[str]:
    out = ["### Overlap\n", _OVERLAP[ov.kind] + "\n"]
    if ov.files:
        rows = [
            [
                f"`{f.path}`",
                len(f.ours),
                len(f.theirs),
                ", ".join(f"`{s}`" for s in f.shared_symbols) or "-",
                len(f.pairs),
            ]
            for f in ov.files
        ]
        heads = ["file", "our hunks", "their hunks", "functions both change"]
        out.append(md_table([*heads, "overlapping hunk pairs"], rows))
    if ov.pairs:
        out.append("\nOverlapping hunks (base-file lines):\n")
        pairs = [
            [
                f"`{path}`",
                p.ours.describe(),
                p.theirs.describe(),
                p.relation,
                ", ".join(sorted(set(p.ours.symbols) | set(p.theirs.symbols))),
            ]
            for path, p in ov.pairs
        ]
        out.append(md_table(["file", "ours", "theirs", "relation", "functions"], pairs))
    only = [("ours only", ov.ours_only), ("theirs only", ov.theirs_only)]
    for label, paths in only:
        if paths:
            out.append(f"\n{label}: " + ", ".join(f"`{p}`" for p in paths) + "\n")
    return out


def _matrix_md(res: ReconcileResult) -> list[str]:
    out = ["\n### Behaviour matrix\n", _MATRIX_INTRO]
    out += [f"- **{rt.key}**: {rt.label} (tree: {rt.tree})" for rt in res.runtimes]
    out.append("")
    keys = [rt.key for rt in res.runtimes]
    rows = [[r.label, *r.cells] for r in res.matrix.rows]
    out.append(md_table(["tests", *keys], rows))
    patterns = res.matrix.patterns()
    if patterns:
        out.append("\nOutcome patterns (all but PASS_TO_PASS; every test in JSON):\n")
        rows_ = [
            [
                side,
                cat,
                len(tests),
                *marks,
                ", ".join(f"`{short_id(t)}`" for t in tests[:2])
                + (f" +{len(tests) - 2}" if len(tests) > 2 else ""),
            ]
            for side, cat, marks, tests in patterns[:MAX_DETAILS]
        ]
        out.append(md_table(["side", "category", "tests", *keys, "e.g."], rows_))
        if len(patterns) > MAX_DETAILS:
            out.append(f"\n... and {len(patterns) - MAX_DETAILS} more pattern(s).\n")
    out.append("")
    return out


def _cells_md(res: ReconcileResult) -> list[str]:
    """Each side's targets and problems, then what each cell noted."""
    out: list[str] = []
    for side in res.sides:
        targets = ", ".join(f"`{t}`" for t in side.targets) or "none"
        out.append(
            f"- **{side.side}** tests ({side.label}), classified on "
            f"{side.base_runtime} vs {side.own_runtime}: {targets}"
        )
        problems = side.classification.problems if side.classification else ()
        out += [f"  - {p}" for p in problems]
        if side.note:
            out.append(f"  - {side.note}")
    for c in res.cells.values():
        if c.reused:
            src_side, _, src_rt = c.reused.partition("@")
            out.append(
                f"- {c.side} tests on {c.runtime}: same tree as {src_side} tests on "
                f"{src_rt}, not run again"
            )
            continue
        kinds = failure_kinds(c)
        said = [c.note] if c.note else []
        if kinds:
            top = ", ".join(f"{k} x{n}" for k, n in list(kinds.items())[:4])
            said.insert(0, f"failures by kind: {top}")
        if said:
            out.append(f"- {c.side} tests on {c.runtime}: " + "; ".join(said))
    return out


def _conflicts_md(cells: Iterable[Cell]) -> list[str]:
    conflicts: dict[tuple[str, ...], list[str]] = {}
    for c in cells:
        if c.conflict:
            runtimes = conflicts.setdefault(c.conflict, [])
            if c.runtime not in runtimes:
                runtimes.append(c.runtime)
    if not conflicts:
        return []
    out = ["\n### Conflicts\n"]
    for lines, runtimes in conflicts.items():
        where = ", ".join(f"**{r}**" for r in runtimes)
        out.append(f"- {where}: " + "; ".join(lines))
    out.append("")
    return out


def _fixes_md(res: ReconcileResult) -> list[str]:
    """Which of our fixes the competing change meets (shares a runtime file)."""
    rows = [
        [f"`{fid}`", ", ".join(f"`{f}`" for f in files) or "none: disjoint"]
        for fid, files in res.fix_overlap()
    ]
    if not rows:
        return []
    head = ["our fix", "its runtime files the competitor changes too"]
    return ["### Our fixes\n", md_table(head, rows)]
