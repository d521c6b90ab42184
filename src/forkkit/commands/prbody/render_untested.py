# SPDX-License-Identifier: Apache-2.0
"""The description of a fix carried without a test (``proof = "none"``):
no red/green exists, so it says so first ("not proven: no test", with the
reason fork.toml declares), then what the fix changes and where it is from.
Pure: it renders the fix's declaration."""

from __future__ import annotations

from collections.abc import Mapping

from forkkit.commands.prbody.model import AI_DISCLOSURE, portable, purpose_head
from forkkit.output.mdtext import md_text
from forkkit.patches.fixes import Fix


def render_untested(
    fix: Fix, *, purpose: str, upstream: str, roots: Mapping[str, str]
) -> str:
    """The whole description of an untested fix (no test plan: none ran)."""
    files = ", ".join(f"`{md_text(f)}`" for f in fix.runtime_files) or "(none)"
    out = purpose_head(
        fix.title, prompt="The bug, who hits it, and what the fix changes."
    )
    if purpose:
        out += [purpose, ""]
    out += [f"Files changed: {files}.", ""]
    if fix.provenance:
        out += [f"Provenance: {md_text(fix.provenance)}.", ""]
    out += [
        "## Test Plan",
        "",
        f"**Not proven: no test.** The fix is carried without a test, as "
        f'fork.toml declares (`proof = "none"`): {md_text(fix.untested)}.',
        "No red/green ran; a reviewer has only the change itself to go by.",
        "",
        "## Test Result",
        "",
        "None: no test exercises this change.",
        "",
        "### Provenance",
        "",
        f"- Upstream: {md_text(upstream)}",
        "- Patches: " + ", ".join(f"`{md_text(p)}`" for p in fix.patches),
        "",
        AI_DISCLOSURE,
    ]
    return portable("\n".join(out), roots)
