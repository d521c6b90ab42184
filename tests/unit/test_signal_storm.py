# SPDX-License-Identifier: Apache-2.0
"""A storm of Ctrl-C on a real ``forkkit red-green`` process.

The first SIGINT lands while red runs; more follow every few milliseconds
until the process has exited, so some land during the cleanup (the scratch
worktree, the pytest child), some during publishing (``FAILED.txt``), and some
after ``cli.main`` returned. One handler for the whole command means none of
them may cut the cleanup short or print a traceback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from forkkit.fork.tree import materialize
from tests.synthetic import SyntheticUpstream, make_project, toy_slow_red_changes
from tests.unit.test_redgreen import assert_fork_intact, start_until_red

SRC = str(Path(__file__).parents[2] / "src")


def _storm(proc: subprocess.Popen[str], *, every: float) -> int:
    """SIGINT ``proc`` every ``every`` seconds until it exits; how many sent."""
    sent = 0
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            proc.send_signal(signal.SIGINT)
        except ProcessLookupError:
            break
        sent += 1
        time.sleep(every)
    return sent


@pytest.mark.e2e
@pytest.mark.parametrize("every", [0.002, 0.02])
def test_ctrl_c_storm_during_cleanup_and_publishing(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    every: float,
) -> None:
    cfg = make_project(
        tmp_path / "proj", toy_upstream, "1.0", changes=toy_slow_red_changes()
    )
    tree = materialize(cfg)
    proc, pid, cwd = start_until_red(cfg, tmp_path, parallel="off")
    try:
        sent = _storm(proc, every=every)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert sent > 1, "the storm needs more than one signal"
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.count("forkkit: interrupted") == 1, err
    folder = cfg.work.report_dir("red_green")
    assert "Interrupted: SIGINT" in (folder / "FAILED.txt").read_text()
    assert not (folder / "red_green.json").exists()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)  # the hanging pytest is gone, not orphaned
    assert not Path(cwd).exists()
    assert_fork_intact(tree)
    # the next plain command recovers: the workdir lock was released
    status = [sys.executable, "-m", "forkkit", "--config", str(cfg.path), "status"]
    env = {**os.environ, "PYTHONPATH": SRC}
    again = subprocess.run(status, env=env, capture_output=True, text=True, check=False)
    assert again.returncode == 0, again.stderr
