# SPDX-License-Identifier: Apache-2.0
"""The PR body's "Competing change" section, from a reconcile report
(:class:`~forkkit.services.reconcile.doc.ReconcileDoc`): the answers (each
approach on the other's tests, stacking, the resend table) and each side's
classification. Pure; what the report does not say is shown as ``?``."""

from __future__ import annotations

from forkkit.output.report import md_table
from forkkit.services.reconcile.doc import CrossDoc, ReconcileDoc, ResendCellDoc
from forkkit.testing.classify import CATEGORIES

_WHO = {"ours": "our", "theirs": "their"}


def reconcile_md(doc: ReconcileDoc) -> list[str]:
    """The comparison with a competing change."""
    out = [
        "### Competing change",
        "",
        f"Compared with {doc.competitor.kind or 'change'} "
        f"`{doc.competitor.ref}` on {doc.base or '?'}: overlap "
        f"{doc.overlap.kind or '?'}; "
        f"{doc.measurement.summary or 'nothing measured'}.",
        "",
        *_answers(doc),
    ]
    rows = [
        [
            side.label or side.side,
            *(len(side.classification.get(c, ())) for c in CATEGORIES),
        ]
        for side in doc.sides
        if side.classification is not None
    ]
    if rows:
        out += [md_table(["Side", *CATEGORIES], rows), ""]
    return out


def _cross(c: CrossDoc) -> str:
    """``our tests on theirs: 5/7 pass (FAIL_TO_PASS 1/3)``."""
    where = f"{_WHO.get(c.tests, c.tests)} tests on `{c.runtime}`"
    if c.not_measured:
        return f"{where}: not measured ({c.not_measured})"
    f2p = c.fail_to_pass
    f2p_text = f" (FAIL_TO_PASS {f2p[0]}/{f2p[1]})" if len(f2p) == 2 and f2p[1] else ""
    return f"{where}: {_num(c.passed)}/{_num(c.total)} pass{f2p_text}"


def _num(value: int | None) -> str:
    """An integer as ``1,234``; nothing as ``?``."""
    return f"{value:,}" if value is not None else "?"


def _answers(doc: ReconcileDoc) -> list[str]:
    """Cross passes, whether the two stack, and the resend table."""
    out = [f"- {_cross(c)}" for c in doc.answers.cross]
    verdict = doc.answers.stack.verdict
    if verdict:
        out.append(f"- Do they stack (3-way, both orders)? {verdict}")
    return [*out, "", *_resend(doc)] if out else []


def _resend(doc: ReconcileDoc) -> list[str]:
    """Cached (recomputed) tokens per resend kind and runtime."""
    resend = doc.answers.resend
    if not resend.runtimes or not resend.cells:
        return []
    by = {c.runtime: c for c in resend.cells}
    kinds = dict.fromkeys(r.kind for c in resend.cells for r in c.rows if r.kind)
    rows = [
        [kind.replace("_", " "), *(_cell(by.get(k), kind) for k in resend.runtimes)]
        for kind in kinds
    ]
    empty = [["(none)", *["?"] * len(resend.runtimes)]]
    return [
        "Resend reproduction on CPU: cached prompt tokens (recomputed); "
        f"{resend.setup or '?'}.",
        "",
        md_table(["resend", *resend.runtimes], rows or empty),
        "",
    ]


def _cell(cell: ResendCellDoc | None, kind: str) -> str:
    rows = [r for r in (cell.rows if cell else ()) if r.kind == kind]
    if not rows:
        return "not measured"
    r = rows[0]
    return f"{_num(r.cached_tokens)} ({_num(r.recomputed_prompt_tokens)})"
