# SPDX-License-Identifier: Apache-2.0
"""The first lines of the reconcile report: the maintainers' questions
answered (:mod:`forkkit.services.reconcile.answers`), Markdown and JSON. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from forkkit.output.report import md_table
from forkkit.patches.testids import short_id
from forkkit.services.reconcile.answers import (
    OURS_ON_THEIRS,
    STACKS,
    THEIRS_ON_OURS,
    CrossPass,
    ResendCell,
    Trees,
    cross_pass,
    resend_keys,
    stacks_cleanly,
)
from forkkit.services.reconcile.model import SideTests
from forkkit.services.reconcile.result import ReconcileResult

SHOWN_FAILING = 4  # test names listed per answer (JSON has all)
_WHO = {"ours": "our", "theirs": "their"}


def _side(res: ReconcileResult, name: str) -> SideTests | None:
    return next((s for s in res.sides if s.side == name and s.targets), None)


def _stack_keys(res: ReconcileResult) -> list[str]:
    """The stack columns worth a line: both orders unless they built one
    tree, and a release with our change merged in (``0.32.0+ours``)."""
    builds = {b.runtime: b for b in res.trees.builds} if res.trees else {}
    a, b = builds.get(OURS_ON_THEIRS), builds.get(THEIRS_ON_OURS)
    keys = [rt.key for rt in res.runtimes]
    stacks = [k for k in STACKS if k in keys]
    if a and b and a.tree and a.tree == b.tree:
        stacks = [OURS_ON_THEIRS]
    return stacks + [k for k in keys if k.endswith("+ours") and k not in STACKS]


@dataclass(frozen=True)
class Crosses:
    """Each approach on the other side's tests, and both sides on the stacks."""

    ours: CrossPass | None  # their tests on our runtime
    theirs: CrossPass | None  # our tests on their own runtime (a release: its tree)
    stacks: tuple[CrossPass, ...]

    def all(self) -> list[CrossPass]:
        return [c for c in (self.ours, self.theirs) if c] + list(self.stacks)


def crosses(res: ReconcileResult) -> Crosses:
    """Count each side's tests on the other side's runtime and on the stacks."""
    keys = {rt.key for rt in res.runtimes}
    theirs_side = next((s for s in res.sides if s.side == "theirs"), None)
    their_runtime = theirs_side.own_runtime if theirs_side else "theirs"

    def on(side_name: str, runtime: str) -> CrossPass | None:
        side = _side(res, side_name)
        if side is None or runtime not in keys:
            return None
        return cross_pass(side, runtime, res.cells)

    stacks = [on(s, k) for k in _stack_keys(res) for s in ("ours", "theirs")]
    return Crosses(
        ours=on("theirs", "ours"),
        theirs=on("ours", their_runtime),
        stacks=tuple(c for c in stacks if c),
    )


def _failing(c: CrossPass) -> str:
    if not c.failing or c.gap:
        return ""
    names = ", ".join(f"`{short_id(t)}`" for t in c.failing[:SHOWN_FAILING])
    more = len(c.failing) - SHOWN_FAILING
    return f"; not passing: {names}" + (f" +{more}" if more > 0 else "")


def answers_md(res: ReconcileResult) -> list[str]:
    """The answers, as the report's first section."""
    out = ["### Answers\n"]
    found = crosses(res)
    mine = (found.ours, "Our approach", "their")
    theirs = (found.theirs, "Their approach", "our")
    for c, label, other in (mine, theirs):
        if c is None:
            out.append(f"- **{label}** vs {other} tests: the {other} side brings none.")
            continue
        where = "" if c.runtime in ("ours", "theirs") else f" (in `{c.runtime}`)"
        out.append(
            f"- **{label}**{where} passes {_WHO[c.side]} tests: "
            f"{c.describe()}{_failing(c)}."
        )
    trees = res.trees or Trees()
    out.append(f"- **Do they stack?** {stacks_cleanly(trees.builds)}.")
    for c in found.stacks:
        out.append(
            f"  - the stack `{c.runtime}` passes {_WHO[c.side]} tests: "
            f"{c.describe()}{_failing(c)}"
        )
    ours, theirs_rt = set(res.ours.runtime_paths), set(res.theirs.runtime_paths)
    out.append(
        f"- **Runtime files**: ours {len(ours)}, theirs {len(theirs_rt)}, "
        f"{len(ours & theirs_rt)} shared; the base column is pristine "
        f"{res.base_label}, so it has all {len(ours | theirs_rt)} as released."
    )
    out += resend_md(trees)
    return [*out, ""]


def _cell(c: ResendCell | None, key: tuple[int, str]) -> str:
    row = c.row(key[1], key[0]) if c else None
    if row is None:
        return "not measured"
    return f"{row.cached_tokens:,} ({row.recomputed_prompt_tokens:,})"


def resend_md(trees: Trees) -> list[str]:
    """The resend table: one row per prompt length and resend kind, one
    column per runtime."""
    if not trees.runtimes:
        return ["- **Resend reproduction**: not run (`--resend off`)."]
    by = {c.runtime: c for c in trees.resend}
    keys = resend_keys(trees.resend)
    several = len({n for n, _ in keys}) > 1
    out = [
        "- **Resend reproduction** on CPU: cached prompt tokens of the resend "
        f"(recomputed); {trees.setup}.\n",
    ]
    rows = []
    for n, kind in keys:
        sent = next((r for c in trees.resend if (r := c.row(kind, n))), None)
        label = kind.replace("_", " ") + (f" ({n:,})" if several else "")
        tokens = f"{sent.resend_tokens:,}" if sent else "?"
        rows.append(
            [label, tokens, *(_cell(by.get(k), (n, kind)) for k in trees.runtimes)]
        )
    if not rows:
        rows.append(["(none)", "?", *["not measured"] * len(trees.runtimes)])
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
