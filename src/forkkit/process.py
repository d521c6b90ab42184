# SPDX-License-Identifier: Apache-2.0
"""Facts about other processes: alive (for cleaning up after killed runs),
how busy the CPUs are (for running tests side by side), and one at a time
where two may build the same thing (:func:`exclusive`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


def end_children(*, proc: Path = Path("/proc")) -> list[int]:
    """SIGTERM every process this one started that still runs (its direct
    children, found in ``/proc``; none where there is no /proc); their pids.
    A terminated git removes its lock files; pip or uv leave a venv without
    its done-marker, built again by the next command."""
    me, killed = os.getpid(), []
    try:
        entries = [e for e in os.listdir(proc) if e.isdigit()]
    except OSError:
        return []
    for pid in map(int, entries):
        try:
            stat = (proc / str(pid) / "stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == me:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
                killed.append(pid)
    return killed


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


@contextmanager
def exclusive(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_file`` (created if missing) for
    the block. The kernel drops it when the holder dies, so a killed build
    never blocks the next one; threads each get their own lock too."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
