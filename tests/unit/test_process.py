# SPDX-License-Identifier: Apache-2.0
"""How busy the CPUs are, measured now (not the load average's last minute)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from forkkit.process import _cpu_times, busy_cpus

STAT = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n"


def test_cpu_times_count_iowait_as_idle() -> None:
    assert _cpu_times(STAT) == (150, 1000)


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="Linux only")
def test_a_spinning_process_is_busy_at_once() -> None:
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        # the 1-minute load average would still say ~0 a second after start
        assert busy_cpus(sample_s=0.5) >= 0.6
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
    import signal

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
