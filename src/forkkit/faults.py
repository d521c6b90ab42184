# SPDX-License-Identifier: Apache-2.0
"""Fault injection for the crash contract (tests/unit/test_crash_points.py).

Every place where forkkit writes something that outlives the process (the
user's files through the journal, git objects, refs and work trees, report
folders, the result cache, the sdist cache and its extraction) calls
:func:`point` first. It does nothing unless ``FORKKIT_FAULT`` is set:

- ``count:FILE``: append one line per write point reached to ``FILE``;
- ``kill:N``: SIGKILL this process at its Nth write point;
- ``int2:N``: SIGINT at the Nth write point, and a second SIGINT at once
  (Ctrl-C twice: the cleanup the first one starts must not be cut short).
"""

from __future__ import annotations

import os
import signal

_SPEC = os.environ.get("FORKKIT_FAULT", "")
_SEEN = [0]


def point(what: str) -> None:
    """A write point named ``what``: count it, or die at it (see above)."""
    if not _SPEC:
        return
    _SEEN[0] += 1
    kind, _, arg = _SPEC.partition(":")
    if kind == "count":
        with open(arg, "a", encoding="utf-8") as fh:
            fh.write(f"{_SEEN[0]} {what}\n")
    elif kind in ("kill", "int2") and _SEEN[0] == int(arg):
        if kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
