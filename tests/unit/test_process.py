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
        got = cpu_sample(sample_s=0.5)
        assert got.own >= 0.6, got
        assert got.others == pytest.approx(max(0.0, got.busy - got.own))
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
