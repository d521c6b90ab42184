# SPDX-License-Identifier: Apache-2.0
"""The history report of ``forkkit watch --all``: one row per release."""

from __future__ import annotations

from forkkit.output.report import md_table
from forkkit.services.watch.history import History


def render_history(history: History) -> str:
    """Markdown: the table of releases and patches, where each patch was absorbed,
    and the details (conflicting hunks, semantic notes) under it."""
    first = history.first_absorbed()
    out = [
        f"## History: the series of {history.package} {history.pin} on every "
        "newer release\n",
        "Each release is a dry-run rebase straight from the pin; *still needed* "
        "means the patch's FAIL_TO_PASS tests (red → green on the pin) fail on "
        "that release without it, *absorbed* that they pass there without it.\n",
    ]
    rows = [
        [
            r.release + (" (cached)" if r.cached else ""),
            *(c.label for c in r.cells),
        ]
        for r in history.rows
    ]
    out.append(md_table(["release", *history.patches], rows))
    out.append("**Where upstream took each patch's behaviour:**\n")
    unmeasured = history.unmeasured()
    for patch in history.patches:
        where = first[patch]
        line = f"absorbed since {where}" if where else "not absorbed by any release"
        if unmeasured[patch]:
            line += (
                f" (not measured on {', '.join(unmeasured[patch])}: not tried, "
                "or its tests cannot run there; see the details)"
            )
        out.append(f"- {patch}: {line}")
    fixed = history.fix_first_absorbed()
    if fixed:
        out.append("\n**Where upstream took each fix** (all of its patches):\n")
        out += [
            f"- `{fid}`: " + (f"absorbed since {at}" if at else "still carried")
            for fid, at in fixed.items()
        ]
    details = [
        f"- {r.release} · {c.patch}: {c.detail}"
        for r in history.rows
        for c in r.cells
        if c.detail
    ]
    if details:
        out += ["", "### Details\n", *details]
    return "\n".join(out) + "\n"
