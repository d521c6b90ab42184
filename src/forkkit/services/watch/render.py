# SPDX-License-Identifier: Apache-2.0
"""The ``forkkit watch`` report: Markdown for an issue, a PR or a job summary."""

from __future__ import annotations

from typing import assert_never

from forkkit.output.report import md_table
from forkkit.services.watch.model import WatchResult
from forkkit.services.watch.render_history import render_history

_PROOF = {True: "valid", False: "**not valid**", None: "not run"}


def _short(result: WatchResult, what: str) -> str:
    """A release as it is; a commit by its first 12 digits."""
    return what[:12] if result.follows else what


def _next_step(result: WatchResult) -> str:
    """What a maintainer does about the verdict."""
    cmd = f"forkkit rebase --onto {result.package}=={result.checked}"
    if result.follows:
        cmd = f"forkkit rebase --onto-rev {result.checked}"
    r = result.rebase
    match result.verdict:
        case "current":
            newest = (
                "the head of " + result.follows if result.follows else "newest release"
            )
            return f"Nothing to do: the pin is the {newest}."
        case "carries":
            return (
                f"Move the pin: `{cmd} --apply` rewrites patches/ and fork.toml "
                "after the same proof; commit them in a PR."
            )
        case "absorbed":
            return (
                f"{result.package} {_short(result, result.checked)} fixes the bug "
                "itself: the fork can retire (depend on upstream), or "
                f"`{cmd} --apply` drops the absorbed patches; `forkkit bisect` "
                "names where upstream took each fix."
            )
        case "conflict" if r is not None and r.conflicted:
            return (
                f"Refresh the series: run `{cmd}`, resolve the conflict markers in "
                "the rebase repo and rerun it (git rerere keeps the resolution); "
                "see CONTRIBUTING.md, *Refreshing a patch*."
            )
        case "conflict":
            return (
                "The refreshed series applies but does not prove the fix: read the "
                "red/green section of the rebase report and refresh the patch or "
                "its tests."
            )
        case _:
            assert_never(result.verdict)


def _pin_lines(result: WatchResult) -> list[str]:
    """The pin and what is newer: releases on the index, or the commits the
    followed branch gained."""
    if not result.follows:
        out = [
            f"- Pinned: `{result.package}=={result.pin}` (fork.toml)",
            f"- Index: {result.index_url}",
        ]
        if result.newer:
            out.append(
                "- Releases newer than the pin: "
                + ", ".join(result.newer)
                + f" (checked the newest: {result.checked})"
            )
        if result.skipped:
            out.append(
                "- Skipped, wheels only (no sdist to build the fork from): "
                + ", ".join(result.skipped)
            )
        return out
    out = [
        f"- Pinned: commit `{result.pin}` (fork.toml git_commit)",
        f"- Follows: {result.follows}",
    ]
    if result.newer:
        shown = ", ".join(f"`{c[:12]}`" for c in result.newer[:10])
        more = len(result.newer) - 10
        out.append(
            f"- New commits since the pin: {len(result.newer)} ({shown}"
            + (f" and {more} more" if more > 0 else "")
            + f"); checked the head, `{result.checked[:12]}`"
        )
    return out


def render_markdown(result: WatchResult) -> str:
    """The watch report (its links are relative to its folder)."""
    head = f"{result.package} {_short(result, result.pin)}"
    if result.checked:
        head += f" → {_short(result, result.checked)}"
    out = [
        f"# Upstream watch: {head}\n",
        f"**Verdict: `{result.verdict}`** (exit {result.exit_code}): "
        f"{result.reason}.\n",
    ]
    out += _pin_lines(result)
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
