# SPDX-License-Identifier: Apache-2.0
"""The PR body's "Competing change" section, from a reconcile report's JSON:
the answers (each approach on the other's tests, stacking, the resend table)
and each side's classification. Pure; fields read through
:func:`forkkit.docpath.get`, missing ones shown as ``?``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forkkit.commands.prbody.model import strings
from forkkit.docpath import get
from forkkit.output.report import md_table
from forkkit.testing.classify import CATEGORIES

_WHO = {"ours": "our", "theirs": "their"}


def reconcile_md(doc: Mapping[str, Any]) -> list[str]:
    """The comparison with a competing change."""
    out = [
        "### Competing change",
        "",
        f"Compared with {get(doc, 'competitor.kind') or 'change'} "
        f"`{get(doc, 'competitor.ref')}` on {doc.get('base', '?')}: overlap "
        f"{get(doc, 'overlap.kind') or '?'}; "
        f"{get(doc, 'measurement.summary') or 'nothing measured'}.",
        "",
        *_answers(doc),
    ]
    rows = []
    for side in doc.get("sides") or []:
        by_cat = side.get("classification") if isinstance(side, Mapping) else None
        if isinstance(by_cat, Mapping):
            rows.append([side.get("label") or side.get("side"), *_cat_counts(by_cat)])
    if rows:
        out += [md_table(["Side", *CATEGORIES], rows), ""]
    return out


def _cat_counts(by_cat: Mapping[str, Any]) -> list[int]:
    return [len(strings(by_cat.get(c))) for c in CATEGORIES]


def _cross(c: Mapping[str, Any]) -> str:
    """``our tests on theirs: 5/7 pass (FAIL_TO_PASS 1/3)``."""
    who = _WHO.get(str(c.get("tests")), str(c.get("tests")))
    where = f"{who} tests on `{c.get('runtime')}`"
    if c.get("not_measured"):
        return f"{where}: not measured ({c.get('not_measured')})"
    f2p = _ints(c.get("fail_to_pass"))
    f2p_text = f" (FAIL_TO_PASS {f2p[0]}/{f2p[1]})" if len(f2p) == 2 and f2p[1] else ""
    return f"{where}: {_num(c.get('passed'))}/{_num(c.get('total'))} pass{f2p_text}"


def _ints(value: Any) -> list[int]:
    """A JSON list of integers (nothing for anything else)."""
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return list(value)
    return []


def _num(value: Any) -> str:
    """An integer as ``1,234``; anything else as ``?``."""
    ok = isinstance(value, int) and not isinstance(value, bool)
    return f"{value:,}" if ok else "?"


def _rows(cell: Any) -> list[Mapping[str, Any]]:
    """A resend cell's rows that are objects."""
    rows = cell.get("rows") if isinstance(cell, Mapping) else None
    return [r for r in rows if isinstance(r, Mapping)] if isinstance(rows, list) else []


def _answers(doc: Mapping[str, Any]) -> list[str]:
    """Cross passes, whether the two stack, and the resend table."""
    cross = [c for c in get(doc, "answers.cross") or [] if isinstance(c, Mapping)]
    out = [f"- {_cross(c)}" for c in cross]
    verdict = get(doc, "answers.stack.verdict")
    if verdict:
        out.append(f"- Do they stack (3-way, both orders)? {verdict}")
    return [*out, "", *_resend(doc)] if out else []


def _resend(doc: Mapping[str, Any]) -> list[str]:
    """Cached (recomputed) tokens per resend kind and runtime."""
    runtimes = strings(get(doc, "answers.resend.runtimes"))
    cells = [
        c for c in get(doc, "answers.resend.cells") or [] if isinstance(c, Mapping)
    ]
    if not runtimes or not cells:
        return []
    by = {str(c.get("runtime")): c for c in cells}
    kinds: list[str] = []
    for c in cells:
        kinds += [str(r.get("kind")) for r in _rows(c) if r.get("kind")]
    rows = []
    for kind in dict.fromkeys(kinds):
        rows.append(
            [kind.replace("_", " "), *(_cell(by.get(k), kind) for k in runtimes)]
        )
    setup = get(doc, "answers.resend.setup") or "?"
    return [
        f"Resend reproduction on CPU: cached prompt tokens (recomputed); {setup}.",
        "",
        md_table(["resend", *runtimes], rows or [["(none)", *["?"] * len(runtimes)]]),
        "",
    ]


def _cell(cell: Mapping[str, Any] | None, kind: str) -> str:
    rows = [r for r in _rows(cell) if r.get("kind") == kind]
    if not rows:
        return "not measured"
    r = rows[0]
    return f"{_num(r.get('cached_tokens'))} ({_num(r.get('recomputed_prompt_tokens'))})"
