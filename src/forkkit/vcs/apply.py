# SPDX-License-Identifier: Apache-2.0
"""What a failed ``git apply``/``git am`` says: the one parser of its errors."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

FailureKind = Literal["hunk", "missing", "exists", "other"]


@dataclass(frozen=True)
class ApplyResult:
    """The outcome of applying (or checking) a patch.

    On failure, ``path`` and ``line`` name where git stopped: ``kind`` is
    ``hunk`` (context mismatch at ``line``), ``missing`` (the file is not
    there), ``exists`` (a new file is already there) or ``other``.
    """

    ok: bool
    kind: FailureKind | None = None
    path: str = ""
    line: int = 0
    message: str = ""


_HUNK = re.compile(r"error: patch failed: (.+):(\d+)")
_MISSING = re.compile(r"error: (.+?): (does not exist in index|No such file)")
_EXISTS = re.compile(r"error: (.+?): already exists")


def apply_result(text: str) -> ApplyResult:
    """Parse git's error output into an :class:`ApplyResult` (``ok`` False)."""
    last = text.strip().splitlines()[-1] if text.strip() else "git apply failed"
    m = _HUNK.search(text)
    if m:
        return ApplyResult(
            ok=False, kind="hunk", path=m.group(1), line=int(m.group(2)), message=last
        )
    m = _MISSING.search(text)
    if m:
        return ApplyResult(ok=False, kind="missing", path=m.group(1), message=last)
    m = _EXISTS.search(text)
    if m:
        return ApplyResult(ok=False, kind="exists", path=m.group(1), message=last)
    return ApplyResult(ok=False, kind="other", message=last)
