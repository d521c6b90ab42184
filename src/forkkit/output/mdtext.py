# SPDX-License-Identifier: Apache-2.0
"""User prose in Markdown a reviewer reads (pure: no I/O)."""

from __future__ import annotations

import re

_UNSAFE_LINK = re.compile(
    r"\[([^\]]*)\]\(\s*<?\s*(?:javascript|vbscript|data)\s*:"
    r"(?:[^()]|\([^()]*\))*\)",
    re.I,
)


def md_text(value: str) -> str:
    """User prose (a fix title, a patch subject) as Markdown text: HTML
    escaped, so no tag or comment opens, and a link to a ``javascript:``,
    ``vbscript:`` or ``data:`` URL reduced to its text."""
    text = _UNSAFE_LINK.sub(lambda m: m.group(1), value)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
