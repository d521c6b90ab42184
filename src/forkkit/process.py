# SPDX-License-Identifier: Apache-2.0
"""Facts about other processes (for cleaning up after killed runs)."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists (ours or another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
