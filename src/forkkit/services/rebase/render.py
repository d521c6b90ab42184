# SPDX-License-Identifier: Apache-2.0
"""The reports of ``forkkit rebase``: the verdict line and the Markdown report
(the JSON report is :func:`forkkit.services.rebase.doc.rebase_doc`)."""

from __future__ import annotations

import re

from forkkit.output.report import md_table
from forkkit.services.rebase.files import file_counts
from forkkit.services.rebase.model import PatchResult, RebaseResult

_STATUS_TEXT: dict[str, str] = {
    "clean": "applied cleanly",
    "3way": "applied with a 3-way merge",
    "rerere": "3-way; conflicts replayed from a recorded resolution",
    "resolved-from": "3-way; conflicts resolved from --resolve-from",
    "conflict": "CONFLICT",
    "absorbed-textual": "absorbed upstream (textually)",
    "absorbed-semantic": "absorbed upstream (semantically)",
    "deleted-upstream": "upstream deleted its files: dropped (--take-upstream)",
    "added-upstream": "upstream added its files itself: theirs taken (--take-upstream)",
    "not-tried": "not tried (an earlier patch conflicts)",
}
_SEMANTIC_COLUMNS = [
    "patch",
    "targets",
    "FAIL_TO_PASS (old)",
    "pass without fix (new)",
    "fail without fix (new)",
    "cannot run (new)",
    "not checked (conflict)",
    "other failures (new)",
    "absorbed",
]


def verdict_line(result: RebaseResult) -> str:
    """One sentence: what the rebase means for the fork."""
    absorbed = ", ".join(p.name for p in result.absorbed) or "none"
    carried = ", ".join(p.name for p in result.carried) or "none"
    if not result.patches:
        return f"The series is empty: nothing to carry onto {result.new_label}."
    if result.outcome == "conflict" and result.written:
        return (
            f"Rebased onto {result.new_label} in part: {len(result.carried)} "
            f"patch(es) carried, {len(result.absorbed)} absorbed, "
            f"{len(result.pending)} conflicting wait in patches/pending.toml."
        )
    if result.outcome == "conflict":
        names = ", ".join(p.name for p in result.conflicted)
        return f"Rebase onto {result.new_label} stopped: {names} conflicts."
    if result.can_retire and result.outcome == "proof-failed":
        return (
            f"Every patch is absorbed by {result.new_label}, but the tests kept "
            "as a tests-only series fail there (see the guard below)."
        )
    if result.can_retire:
        if result.new_series:
            return (
                f"Every patch is absorbed by {result.new_label}: the fix retires; "
                f"its tests stay as {len(result.new_series)} tests-only patch(es) "
                "that guard upstream's fix."
            )
        return (
            f"Every patch is absorbed by {result.new_label}: the fork can retire "
            "(drop the series, depend on upstream)."
        )
    return (
        f"Still carried on {result.new_label}: {carried}. "
        f"Absorbed upstream: {absorbed}. The fork cannot retire yet."
    )


def _summary(result: RebaseResult) -> list[str]:
    """The title, the verdict and the list of facts under it."""
    out = [
        f"# Rebase: {result.old_label} → {result.new_label}\n",
        f"**{verdict_line(result)}**\n",
        f"- New pin: {', '.join(f'{k} `{v}`' for k, v in result.new_pin.items())}",
        f"- Trust: {result.trust}",
        f"- Rebase repo (rerere cache in .git/rr-cache): `{result.repo}`",
    ]
    if result.out_dir:
        out.append(f"- Refreshed series: `{result.out_dir}`")
    written = "yes" if result.written else "no (dry run, not successful, or unproven)"
    out.append(f"- Written to patches/ and fork.toml: {written}")
    if result.unproven:
        out.append("- Proof: **unproven**: no valid red/green on the refreshed series")
    if result.pending:
        names = ", ".join(f"`{p.name}`" for p in result.pending)
        out.append(
            f"- Waiting in patches/pending.toml (each as it was on its pin): {names}"
        )
    counts = file_counts([f for p in result.patches for f in p.files])
    if counts:
        shown = ", ".join(
            f"{n} {k.replace('conflict/', 'conflict: ')}" for k, n in counts.items()
        )
        out.append(f"- Files: {shown}")
    return out


def _proposals(result: RebaseResult) -> list[str]:
    """What upstream took over, and the resolution ``--take-upstream`` makes."""
    rows = [
        [p.name, f"`{f.path}`", f.kind, f.proposal]
        for p in result.patches
        for f in p.files
        if f.verdict == "conflict" and f.proposal
    ]
    if not rows:
        return []
    head = ["patch", "file", "upstream", "proposed resolution"]
    return [
        "",
        "## Proposals: what upstream took over\n",
        "`forkkit rebase ... --take-upstream` takes upstream's side of a file "
        "it deleted or added itself (a patch whose every conflict is one of "
        "those leaves the series, retired with that kind). Of a file upstream "
        "partly took, git's 3-way merge takes the hunks upstream has without "
        "a marker: the conflict left in the rebase repo is the rest.\n",
        md_table(head, rows),
    ]


def _files(result: RebaseResult) -> list[str]:
    """Every file of every patch: its verdict, and a conflict's kind."""
    rows = [
        [
            p.name,
            f"`{f.path}`",
            f.verdict,
            f.kind,
            f"`{f.new_path}`" if f.new_path else "",
        ]
        for p in result.patches
        for f in p.files
    ]
    if not rows:
        return []
    head = ["patch", "file", "verdict", "conflict kind", "upstream moved it to"]
    return ["", "## Files\n", md_table(head, rows)]


def _patch_table(result: RebaseResult) -> str:
    rows = []
    for p in result.patches:
        detail = p.detail
        if p.semantic:
            detail = f"{detail}; {p.semantic.note}".strip("; ")
        rows.append([p.name, p.subject, _STATUS_TEXT[p.status], detail])
    return md_table(["patch", "subject", "result", "detail"], rows)


def _conflicts(result: RebaseResult) -> list[str]:
    out: list[str] = []
    for p in result.conflicted:
        out.append(f"## Conflict in {p.name}\n")
        out += [f"- {c.describe()}" for c in p.conflicts]
    if result.conflicted:
        first = result.conflicted[0].name
        out.append(
            f"\nEvery patch was tried; each conflicting one was left out and the "
            f"rest replayed without it. The first, `{first}`, is left in "
            f"`{result.repo}`: resolve its markers (edit the files; no need to "
            "commit; other files of the patch may change too, e.g. its tests for "
            "an API upstream renamed), then rerun the same command: the whole "
            "resolution is recorded (git rerere and refs/forkkit/resolved) and "
            "replayed, and the next conflict is left there.\n"
        )
    return out


def _semantic_row(p: PatchResult) -> list[object]:
    s = p.semantic
    assert s is not None
    counts = (s.fail_to_pass, s.passed, s.failed, s.broken, s.unchecked)
    return [
        p.name,
        ", ".join(s.targets),
        *(len(c) for c in counts),
        len(s.others_failing),
        "yes" if s.absorbed else "no",
    ]


def _semantic(result: RebaseResult) -> list[str]:
    sem = [p for p in result.patches if p.semantic]
    if not sem:
        return []
    return [
        "## Semantic absorption checks\n",
        "Tests run on the new upstream with only the patch's test changes "
        "(runtime fix not applied).\n",
        md_table(_SEMANTIC_COLUMNS, [_semantic_row(p) for p in sem]),
    ]


def _retired(result: RebaseResult) -> list[str]:
    """Where each absorbed patch went (``patches/retired.toml`` on --apply)."""
    if not result.retired:
        return []
    rows = [
        [r.name, r.applied_upstream, _STATUS_TEXT.get(r.how, r.how), r.evidence]
        for r in result.retired
    ]
    where = "patches/retired.toml" if result.written else "retired.toml (out folder)"
    return [
        "## Retired: absorbed upstream\n",
        f"Recorded in `{where}` with the sha256 of each patch as it last was.\n",
        md_table(["patch", "applied upstream", "how", "evidence"], rows),
    ]


def _tail(result: RebaseResult) -> list[str]:
    """The range-diff, the red/green proof and the notes."""
    out: list[str] = []
    if result.range_diff:
        out += [
            "## Range-diff (old series vs new)\n",
            "```",
            result.range_diff.rstrip(),
            "```\n",
        ]
    if result.proof_markdown:
        # nest the red/green report's headings under this section
        proof = re.sub(
            r"^(#{1,5}) ", r"#\1 ", result.proof_markdown.rstrip(), flags=re.M
        )
        out += ["## Red/green on the rebased series\n", proof, ""]
    elif result.proof_valid is None and not result.conflicted and result.carried:
        out.append("## Red/green on the rebased series\n\nNot run: unproven.\n")
    if result.notes:
        out.append("## Notes\n")
        out += [f"- {n}" for n in result.notes]
        out.append("")
    return out


def _fixes(result: RebaseResult) -> list[str]:
    """One row per fix: its verdict (the worst of its patches') and patches."""
    if not result.fixes:
        return []
    rows = [[f"`{f.fix}`", f.verdict, ", ".join(f.patches)] for f in result.fixes]
    return ["", "## Fixes\n", md_table(["Fix", "Verdict", "Patches"], rows)]


def render_markdown(result: RebaseResult) -> str:
    """The PR-ready Markdown report."""
    out = [*_summary(result), *_fixes(result), "", "## Patches\n"]
    out.append(_patch_table(result))
    out += _proposals(result) + _files(result)
    out += _conflicts(result) + _retired(result) + _semantic(result)
    out += _tail(result)
    return "\n".join(out) + "\n"
