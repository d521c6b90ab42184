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
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple


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
    for pid, p in _processes(proc).items():
        if p.parent == me:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
                killed.append(pid)
    return killed


class Proc(NamedTuple):
    """One process in /proc: its parent, and the CPU clock ticks it and its
    reaped children used so far (user + system, every thread)."""

    parent: int
    ticks: int


def _processes(proc: Path) -> dict[int, Proc]:
    """Every process in ``proc`` by pid. Empty where there is no /proc."""
    found: dict[int, Proc] = {}
    try:
        entries = [e for e in os.listdir(proc) if e.isdigit()]
    except OSError:
        return found
    for entry in entries:
        try:
            # after the command name: state, ppid, ..., utime, stime, cutime,
            # cstime (fields 14 to 17 of proc(5))
            fields = (proc / entry / "stat").read_text().rsplit(")", 1)[1].split()
            ticks = sum(int(f) for f in fields[11:15])
            found[int(entry)] = Proc(parent=int(fields[1]), ticks=ticks)
        except (OSError, ValueError, IndexError):
            continue
    return found


def _tree_ticks(processes: dict[int, Proc], *, root: int) -> int:
    """The CPU ticks of ``root`` and of every process descended from it. A
    child that ends and is reaped moves its ticks to its parent's (cutime),
    so the sum only grows by what the tree ran."""
    children: dict[int, list[int]] = {}
    for pid, p in processes.items():
        children.setdefault(p.parent, []).append(pid)
    seen: set[int] = set()
    todo, total = [root], 0
    while todo:
        pid = todo.pop()
        if pid in processes and pid not in seen:
            seen.add(pid)
            total += processes[pid].ticks
            todo.extend(children.get(pid, ()))
    return total


def _cpu_times(stat: str) -> tuple[int, int]:
    """(busy, total) jiffies from the aggregate ``cpu`` line of /proc/stat."""
    fields = [int(x) for x in stat.splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already counted in user
    return total - idle, total


@dataclass(frozen=True)
class CpuSample:
    """CPUs busy over a short sample: in all, and with this process and its
    descendants (our own background work: a venv build, a digest)."""

    busy: float
    own: float = 0.0

    @property
    def others(self) -> float:
        """CPUs other processes keep busy: what running side by side competes
        with."""
        return max(0.0, self.busy - self.own)


def cpu_sample(
    *,
    sample_s: float = 0.5,
    stat: Path = Path("/proc/stat"),
    proc: Path = Path("/proc"),
    cpus: int | None = None,
) -> CpuSample:
    """How many CPUs are busy now, sampled over ``sample_s`` from ``stat``,
    and how many of them run this process's own tree (from ``proc``).

    Unlike the load average, this does not remember work that finished a
    minute ago (a previous run of our own). Where /proc/stat is missing
    (macOS), the 1-minute load average stands in (``own`` unknown: 0)."""
    n = cpus if cpus is not None else os.cpu_count() or 1
    me = os.getpid()
    try:
        busy0, total0 = _cpu_times(stat.read_text())
        own0 = _tree_ticks(_processes(proc), root=me)
        time.sleep(sample_s)
        busy1, total1 = _cpu_times(stat.read_text())
        own1 = _tree_ticks(_processes(proc), root=me)
    except (OSError, ValueError, IndexError):
        return CpuSample(busy=os.getloadavg()[0])
    if total1 <= total0:
        return CpuSample(busy=0.0)
    scale = n / (total1 - total0)
    return CpuSample(busy=scale * (busy1 - busy0), own=scale * max(0, own1 - own0))


def busy_cpus(
    *,
    sample_s: float = 0.5,
    stat: Path = Path("/proc/stat"),
    proc: Path = Path("/proc"),
    cpus: int | None = None,
) -> float:
    """How many CPUs other processes keep busy now (:func:`cpu_sample`): our
    own background work, such as the next line's venv build under
    ``red-green --all-lines``, is not a reason to run one at a time (a
    build waits mostly on the network and the disk; its short bytecode
    compile then shares the cores with the runs)."""
    return cpu_sample(sample_s=sample_s, stat=stat, proc=proc, cpus=cpus).others


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
