# SPDX-License-Identifier: Apache-2.0
"""The first lines of the reconcile report: the maintainers' questions
answered (:mod:`forkkit.commands.reconcile.answers`), Markdown and JSON. Pure."""

from __future__ import annotations

from typing import Any

from forkkit.commands.reconcile.answers import (
    OURS_ON_THEIRS,
    STACKS,
    THEIRS_ON_OURS,
    CrossPass,
    ResendCell,
    Trees,
    cross_pass,
    stacks_cleanly,
)
from forkkit.commands.reconcile.model import ReconcileResult, SideTests
from forkkit.output.report import md_table

SHOWN_FAILING = 4  # test names listed per answer (JSON has all)
_WHO = {"ours": "our", "theirs": "their"}


def _short(test_id: str) -> str:
    module, sep, rest = test_id.partition("::")
    return module.rsplit(".", 1)[-1] + sep + rest


def _side(res: ReconcileResult, name: str) -> SideTests | None:
    return next((s for s in res.sides if s.side == name and s.targets), None)


def _stack_keys(res: ReconcileResult) -> list[str]:
    """The stack columns worth a line: both orders unless they built one tree."""
    builds = {b.runtime: b for b in res.trees.builds} if res.trees else {}
    a, b = builds.get(OURS_ON_THEIRS), builds.get(THEIRS_ON_OURS)
    if a and b and a.tree and a.tree == b.tree:
        return [OURS_ON_THEIRS]
    return [k for k in STACKS if any(rt.key == k for rt in res.runtimes)]


def crosses(res: ReconcileResult) -> list[CrossPass]:
    """Each side's tests on the other side's runtime, then on the stack(s)."""
    out: list[CrossPass] = []
    pairs = [("theirs", "ours"), ("ours", "theirs")]
    pairs += [(side, k) for k in _stack_keys(res) for side in ("ours", "theirs")]
    for side_name, runtime in pairs:
        side = _side(res, side_name)
        if side is not None and any(rt.key == runtime for rt in res.runtimes):
            out.append(cross_pass(side, runtime, res.cells))
    return out


def _failing(c: CrossPass) -> str:
    if not c.failing or c.gap:
        return ""
    names = ", ".join(f"`{_short(t)}`" for t in c.failing[:SHOWN_FAILING])
    more = len(c.failing) - SHOWN_FAILING
    return f"; not passing: {names}" + (f" +{more}" if more > 0 else "")


def answers_md(res: ReconcileResult) -> list[str]:
    """The answers, as the report's first section."""
    out = ["### Answers\n"]
    found = crosses(res)
    for runtime, label in (("ours", "Our approach"), ("theirs", "Their approach")):
        c = next((x for x in found if x.runtime == runtime), None)
        if c is None:
            other = "their" if runtime == "ours" else "our"
            out.append(f"- **{label}** vs {other} tests: {other} side brings none.")
            continue
        out.append(
            f"- **{label}** passes {_WHO[c.side]} tests: {c.describe()}{_failing(c)}."
        )
    trees = res.trees or Trees()
    out.append(f"- **Do they stack?** {stacks_cleanly(trees.builds)}.")
    for c in (x for x in found if x.runtime in STACKS):
        out.append(
            f"  - the stack `{c.runtime}` passes {_WHO[c.side]} tests: "
            f"{c.describe()}{_failing(c)}"
        )
    ours, theirs = set(res.ours.runtime_paths), set(res.theirs.runtime_paths)
    out.append(
        f"- **Runtime files**: ours {len(ours)}, theirs {len(theirs)}, "
        f"{len(ours & theirs)} shared; every column starts from pristine "
        f"{res.base_label}, so base has all {len(ours | theirs)} as released."
    )
    out += _resend_md(trees)
    return [*out, ""]


def _cell(c: ResendCell | None, kind: str) -> str:
    row = c.row(kind) if c else None
    if row is None:
        return "not measured"
    return f"{row.cached_tokens:,} ({row.recomputed_prompt_tokens:,})"


def _resend_md(trees: Trees) -> list[str]:
    """The resend table: one row per resend kind, one column per runtime."""
    if not trees.runtimes:
        return ["- **Resend reproduction**: not run (`--resend off`)."]
    by = {c.runtime: c for c in trees.resend}
    first = next((c.run for c in trees.resend if c.run), None)
    kinds = [r.kind for r in first.rows] if first else []
    out = [
        "- **Resend reproduction** on CPU: cached prompt tokens of the resend "
        f"(recomputed); {trees.setup}.\n",
    ]
    rows = []
    for kind in kinds or ["(none)"]:
        row = first.row(first.rows[0].prompt_len, kind) if first else None
        tokens = f"{row.resend_tokens:,}" if row else "?"
        cells = [_cell(by.get(k), kind) for k in trees.runtimes]
        rows.append([kind.replace("_", " "), tokens, *cells])
    out.append(md_table(["resend", "tokens", *trees.runtimes], rows))
    same = [f"{c.runtime} = {c.reused}" for c in trees.resend if c.reused]
    errors = [
        f"{c.runtime}: {c.error}" for c in trees.resend if c.error and not c.reused
    ]
    if same:
        out.append("\nSame tree, run once: " + "; ".join(same) + ".")
    if errors:
        out.append("\nNot measured:\n")
        out += [f"- {e}" for e in errors]
    return out


def answers_json(res: ReconcileResult) -> dict[str, Any]:
    """The answers for machines: cross passes, stacking, the resend cells."""
    trees = res.trees or Trees()
    return {
        "cross": [
            {
                "tests": c.side,
                "runtime": c.runtime,
                "total": c.total,
                "passed": c.passed,
                "fail_to_pass": [c.f2p_passed, c.f2p_total],
                "not_passing": list(c.failing),
                "not_measured": c.gap,
            }
            for c in crosses(res)
        ],
        "runtime_files": {
            "ours": list(res.ours.runtime_paths),
            "theirs": list(res.theirs.runtime_paths),
            "union": sorted(
                set(res.ours.runtime_paths) | set(res.theirs.runtime_paths)
            ),
        },
        "stack": {
            "verdict": stacks_cleanly(trees.builds),
            "builds": [
                {"runtime": b.runtime, "tree": b.tree, "conflict": list(b.conflict)}
                for b in trees.builds
            ],
        },
        "resend": {
            "setup": trees.setup,
            "runtimes": list(trees.runtimes),
            "cells": [_resend_json(c) for c in trees.resend],
        },
    }


def _resend_json(c: ResendCell) -> dict[str, Any]:
    rows = c.run.rows if c.run else ()
    return {
        "runtime": c.runtime,
        "tree": c.tree,
        "reused": c.reused,
        "error": c.error,
        "command": c.command,
        "rows": [
            {
                "prompt_len": r.prompt_len,
                "kind": r.kind,
                "resend_tokens": r.resend_tokens,
                "cached_tokens": r.cached_tokens,
                "recomputed_prompt_tokens": r.recomputed_prompt_tokens,
            }
            for r in rows
        ],
    }
