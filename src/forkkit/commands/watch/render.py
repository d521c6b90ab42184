# SPDX-License-Identifier: Apache-2.0
"""The ``forkkit watch`` report: Markdown for an issue, a PR or a job summary."""

from __future__ import annotations

from forkkit.commands.watch.model import WatchResult
from forkkit.commands.watch.render_history import render_history
from forkkit.output.report import md_table

_PROOF = {True: "valid", False: "**not valid**", None: "not run"}


def _next_step(result: WatchResult) -> str:
    """What a maintainer does about the verdict."""
    cmd = f"./dev -s rebase -- --onto {result.package}=={result.checked}"
    r = result.rebase
    if result.verdict == "current":
        return "Nothing to do: the pin is the newest release."
    if result.verdict == "carries":
        return (
            f"Move the pin: `{cmd} --apply` rewrites patches/ and fork.toml "
            "after the same proof; commit them in a PR."
        )
    if result.verdict == "absorbed":
        return (
            f"{result.package} {result.checked} fixes the bug itself: the fork can "
            f"retire (depend on upstream), or `{cmd} --apply` drops the "
            "absorbed patches."
        )
    if r is not None and r.conflicted:
        return (
            f"Refresh the series: run `{cmd}`, resolve the conflict markers in the "
            "rebase repo and rerun it (git rerere keeps the resolution); see "
            "CONTRIBUTING.md, *Refreshing a patch*."
        )
    return (
        "The refreshed series applies but does not prove the fix: read the "
        "red/green section of the rebase report and refresh the patch or its tests."
    )


def render_markdown(result: WatchResult) -> str:
    """The watch report (its links are relative to its folder)."""
    head = f"{result.package} {result.pin}"
    if result.checked:
        head += f" → {result.checked}"
    out = [
        f"# Upstream watch: {head}\n",
        f"**Verdict: `{result.verdict}`** (exit {result.exit_code}): "
        f"{result.reason}.\n",
        f"- Pinned: `{result.package}=={result.pin}` (fork.toml)",
        f"- Index: {result.index_url}",
    ]
    if result.newer:
        out.append(
            "- Releases newer than the pin: "
            + ", ".join(result.newer)
            + f" (checked the newest: {result.checked})"
        )
    r = result.rebase
    if r is not None:
        out.append(
            f"- Rebase onto {r.new_label}: dry run, patches/ and fork.toml "
            f"untouched; outcome `{r.outcome}`, red/green proof "
            f"{_PROOF[r.proof_valid]}"
        )
        out.append(f"- Rebase report: [{result.rebase_report}]({result.rebase_report})")
        rows: list[list[object]] = []
        for p in r.patches:
            detail = p.detail
            if p.semantic:
                detail = f"{detail}; {p.semantic.note}".strip("; ")
            rows.append([p.name, p.subject, p.status, detail])
        if r.fixes:
            fixes = [[f"`{f.fix}`", f.verdict, ", ".join(f.patches)] for f in r.fixes]
            out += ["", "## Fixes\n", md_table(["fix", "verdict", "patches"], fixes)]
        out += [
            "",
            "## Patches\n",
            md_table(["patch", "subject", "result", "detail"], rows),
        ]
    if result.history is not None:
        out += ["", render_history(result.history)]
    out += ["## Next step\n", _next_step(result), ""]
    return "\n".join(out) + "\n"
