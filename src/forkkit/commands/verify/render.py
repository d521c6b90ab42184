# SPDX-License-Identifier: Apache-2.0
"""``forkkit verify``'s verdict: one line per difference."""

from __future__ import annotations

from typing import assert_never

from forkkit.commands.verify.model import VerifyResult


def render_text(r: VerifyResult) -> str:
    """The verdict, then each difference on its own line."""
    match r.verdict:
        case "same":
            lines = [
                f"verify: {r.report}: the replay matches the report "
                f"({r.tests} classified test(s), same trees and counts)"
            ]
        case "differs":
            lines = [
                f"verify: {r.report}: the replay differs from the report in "
                f"{len(r.differences)} place(s):",
                *(f"- {d}" for d in r.differences),
            ]
        case _:
            assert_never(r.verdict)
    lines += [f"note: {what} was not replayed" for what in r.skipped]
    return "\n".join(lines)
