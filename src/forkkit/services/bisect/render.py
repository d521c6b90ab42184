# SPDX-License-Identifier: Apache-2.0
"""The bisection report: Markdown for an issue or a PR, one line for the console."""

from __future__ import annotations

from collections.abc import Sequence

from forkkit.output.report import md_table
from forkkit.services.bisect.model import BisectResult


def render_line(result: BisectResult) -> str:
    """The verdict in one line."""
    proofs = f"{len(result.steps)} proof(s) over {result.commits} commit(s)"
    end = result.steps[0] if result.steps else None
    measured = next((s for s in result.steps if not s.broken), None)
    if result.first is None and measured is not None and end is not None and end.broken:
        return (
            f"fix {result.fix}: still needed at {measured.commit[:12]}, the newest "
            f"commit its tests measure; not measured after it up to "
            f"{result.bad[:12]} ({end.broken}), so it may be absorbed there: pass "
            f"--tests-from the fork.toml of a line that carries their current text "
            f"({proofs})"
        )
    if result.first is None and end is not None and end.broken:
        return (
            f"fix {result.fix}: its FAIL_TO_PASS tests prove nothing at "
            f"{result.bad[:12]} ({end.broken}); pass --tests-from the fork.toml "
            f"of a line that carries their current text ({proofs})"
        )
    if result.first is None:
        return (
            f"fix {result.fix}: still needed at {result.bad[:12]}, so no commit "
            f"in the range absorbed it ({proofs})"
        )
    line = (
        f"fix {result.fix}: absorbed by {result.applied_upstream} "
        f"{result.first.subject!r} ({proofs})"
    )
    if not result.agrees:
        line += f"; patches/retired.toml says {result.recorded}"
    if result.unmeasured:
        names = ", ".join(s.commit[:12] for s in result.unmeasured)
        line += f"; not measured right before it: {names}, so it may be earlier"
    return line


def render_markdown(result: BisectResult) -> str:
    """The whole report: where, how it was measured, every proof."""
    out = [f"# Where upstream took fix `{result.fix}`\n", render_line(result) + ".\n"]
    if result.recorded:
        agrees = "agrees" if result.agrees else "**differs**"
        out.append(f"- Recorded in patches/retired.toml: {result.recorded} ({agrees})")
    if result.first is not None:
        pr = f", PR #{result.pr}" if result.pr is not None else ""
        out.append(
            f"- First commit without the need: `{result.first.commit}` "
            f"({result.first.subject}{pr})"
        )
    out += [
        f"- Range: `{result.good[:12]}` (needed: the pin) .. `{result.bad[:12]}` "
        f"of {result.url}, {result.commits} commit(s) on the first-parent path",
        "- Absorbed at a commit: every FAIL_TO_PASS test of the fix (measured "
        "red to green on its pin) passes on that upstream commit with only the "
        "fix's test files added (and every other fix's runtime change, where "
        "it applies, as in the fix's red), as the pin carries them"
        + (
            f", or, where those prove nothing, as `{result.tests_from}` carries "
            "them (their current text)"
            if result.tests_from
            else ""
        ),
        "- FAIL_TO_PASS: " + ", ".join(f"`{t}`" for t in result.fail_to_pass),
        "",
        "## Proofs, in the order they ran\n",
    ]
    rows = [
        [
            f"`{s.commit[:12]}`",
            s.subject,
            "absorbed" if s.absorbed else ("not measured" if s.broken else "needed"),
            f"{len(s.passed)} pass, {len(s.failed)} fail"
            + (f" ({s.broken})" if s.broken else ""),
            s.tests,
        ]
        for s in result.steps
    ]
    heads = ["commit", "subject", "fix", "FAIL_TO_PASS", "tests"]
    out.append(md_table(heads, rows))
    return "\n".join(out) + "\n"


def render_all(results: Sequence[BisectResult]) -> str:
    """Every fix's answer in one table, then each fix's report."""
    if len(results) == 1:
        return render_markdown(results[0])
    rows = [
        [
            f"`{r.fix}`",
            r.applied_upstream or "not found",
            (r.recorded + ("" if r.agrees else " (**differs**)")) or "-",
            str(len(r.steps)),
        ]
        for r in results
    ]
    head = [
        "# Where upstream took each fix\n",
        md_table(["fix", "absorbed by", "retired.toml says", "proofs"], rows),
        "",
    ]
    body = [render_markdown(r).replace("# Where", "## Where", 1) for r in results]
    return (
        "\n".join(head)
        + "\n"
        + "\n".join(b.replace("\n## Proofs", "\n### Proofs") for b in body)
    )
