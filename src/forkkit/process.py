# SPDX-License-Identifier: Apache-2.0
"""Facts about other processes: alive (for cleaning up after killed runs),
and how busy the CPUs are (for running tests side by side)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists (ours or another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _cpu_times(stat: str) -> tuple[int, int]:
    """(busy, total) jiffies from the aggregate ``cpu`` line of /proc/stat."""
    fields = [int(x) for x in stat.splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already counted in user
    return total - idle, total


def busy_cpus(
    *, sample_s: float = 0.5, stat: Path = Path("/proc/stat"), cpus: int | None = None
) -> float:
    """How many CPUs are busy now: sampled over ``sample_s`` from ``stat``.

    Unlike the load average, this does not remember work that finished a
    minute ago (a previous run of our own). Where /proc/stat is missing
    (macOS), the 1-minute load average stands in.
    """
    n = cpus if cpus is not None else os.cpu_count() or 1
    try:
        busy0, total0 = _cpu_times(stat.read_text())
        time.sleep(sample_s)
        busy1, total1 = _cpu_times(stat.read_text())
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0]
    if total1 <= total0:
        return 0.0
    return n * (busy1 - busy0) / (total1 - total0)
