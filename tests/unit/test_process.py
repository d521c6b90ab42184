# SPDX-License-Identifier: Apache-2.0
"""How busy the CPUs are, measured now (not the load average's last minute)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forkkit.process import _cpu_times, busy_cpus, cpu_sample

STAT = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n"


def test_cpu_times_count_iowait_as_idle() -> None:
    assert _cpu_times(STAT) == (150, 1000)


SPIN = "import time\nend = time.time() + 20\nwhile time.time() < end: pass"


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="Linux only")
def test_a_spinning_process_is_busy_at_once() -> None:
    """Another process (not ours: its parent exited) spinning counts."""
    sh = f'{sys.executable} -c "$SPIN" >/dev/null 2>&1 & echo $!'
    out = subprocess.run(
        ["sh", "-c", sh], env={**os.environ, "SPIN": SPIN}, capture_output=True
    )
    pid = int(out.stdout)
    try:
        # the 1-minute load average would still say ~0 a second after start
        assert busy_cpus(sample_s=0.5) >= 0.6
    finally:
        os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="Linux only")
def test_our_own_work_is_not_another_process_busy() -> None:
    """red-green --all-lines builds the next line's venv while it decides
    whether to run side by side: a child of ours spinning is our own work,
    not a reason to run one at a time."""
    spin = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        time.sleep(0.1)
        got = cpu_sample(sample_s=1.0)
        # counted as ours, so not in got.others; it gets less than a core
        # when the other test worker and a third process share the two
        # (measured: 0.51), and about 0 were it not counted as ours
        assert got.own >= 0.3, got
    finally:
        spin.kill()
        spin.wait()


def test_without_proc_stat_the_load_average_stands_in(tmp_path: Path) -> None:
    load = os.getloadavg()[0]
    got = busy_cpus(sample_s=0, stat=tmp_path / "missing")
    assert abs(got - load) < 1.0


def test_end_children_ends_what_this_process_started() -> None:
    """red-green --all-lines ends its background builds (git, pip, uv) when
    the command stops: SIGTERM, so a git removes its lock files."""
    from forkkit.process import end_children

    child = subprocess.Popen(["sleep", "60"])
    outer = subprocess.Popen(["sh", "-c", "sleep 60 & wait"])
    try:
        ended = end_children()
        assert child.pid in ended and outer.pid in ended
        assert child.wait(timeout=5) == -signal.SIGTERM
        assert outer.wait(timeout=5) == -signal.SIGTERM
        assert end_children() == []
    finally:
        for p in (child, outer):
            p.kill()
            p.wait()


Ticks = tuple[int, int, int, int]


def _stat(pid: int, parent: int, ticks: Ticks, name: str) -> str:
    """A /proc/PID/stat line: utime, stime, cutime and cstime are fields 14
    to 17 (proc(5)); the command name may hold spaces and parentheses."""
    middle = " ".join(["0"] * 9)  # pgrp ... cmajflt
    times = " ".join(map(str, ticks))
    return f"{pid} ({name}) S {parent} {middle} {times} 20 0 1 0\n"


def _fake_proc(root: Path, procs: dict[int, tuple[int, Ticks, str]]) -> None:
    for pid, (parent, ticks, name) in procs.items():
        (root / str(pid)).mkdir(parents=True, exist_ok=True)
        (root / str(pid) / "stat").write_text(_stat(pid, parent, ticks, name))


def test_own_work_is_read_from_proc_across_a_reaped_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our tree (this process, a child with an odd name, a grandchild) is
    ours; an unrelated process is another's; a child that ends and is reaped
    within the sample moves its ticks to its parent (cutime), so only what
    the tree ran in the sample counts."""
    me = os.getpid()
    proc, stat = tmp_path / "proc", tmp_path / "stat"
    (tmp_path / "proc").mkdir()
    (proc / "self").mkdir()  # not a pid: skipped
    _fake_proc(
        proc,
        {
            me: (1, (100, 10, 0, 0), "python"),
            9001: (me, (50, 0, 0, 0), "uv ) (pip"),
            9002: (9001, (30, 0, 0, 0), "git"),
            9003: (1, (500, 0, 0, 0), "other"),
        },
    )
    (proc / "9004").mkdir()  # ended between listing and reading: skipped
    stat.write_text("cpu  1000 0 0 9000 0 0 0 0 0 0\n")

    def tick(_: float) -> None:  # 100 ticks of 2 CPUs pass
        stat.write_text("cpu  1120 0 0 9080 0 0 0 0 0 0\n")
        (proc / "9002").joinpath("stat").unlink()
        (proc / "9002").rmdir()
        _fake_proc(
            proc,
            {
                me: (1, (110, 10, 0, 0), "python"),  # +10
                9001: (me, (60, 0, 35, 0), "uv ) (pip"),  # +10, reaped git: 30+5
                9003: (1, (600, 0, 0, 0), "other"),
            },
        )

    monkeypatch.setattr("forkkit.process.time.sleep", tick)
    got = cpu_sample(sample_s=1, stat=stat, proc=proc, cpus=2)
    assert got.busy == pytest.approx(2 * 120 / 200)
    assert got.own == pytest.approx(2 * (10 + 10 + 5) / 200)
    assert got.others == pytest.approx(got.busy - got.own)
