# SPDX-License-Identifier: Apache-2.0
"""The quiet console: one live progress line per run, short failure summaries."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from forkkit.fork.tree import materialize
from forkkit.line import Line
from forkkit.output.runprogress import (
    PLUGIN,
    PLUGIN_DIR,
    LiveLine,
    ProgressTail,
    short_summary,
)
from forkkit.services.proof.run import prove

LOG = """\
.F.E                                                   [100%]
==================================== FAILURES ====================================
___________________________________ test_bad ____________________________________

    def test_bad():
>       assert 1 == 2
E       assert 1 == 2

tests/test_a.py:5: AssertionError
============================ short test summary info =============================
FAILED tests/test_a.py::test_bad - assert 1 == 2
ERROR tests/test_a.py::test_err - RuntimeError: boom
1 failed, 2 passed, 1 error in 0.12s
"""


def test_short_summary_keeps_only_the_failure_lines() -> None:
    assert short_summary(LOG) == [
        "FAILED tests/test_a.py::test_bad - assert 1 == 2",
        "ERROR tests/test_a.py::test_err - RuntimeError: boom",
    ]
    many = LOG.replace(
        "FAILED tests/test_a.py::test_bad - assert 1 == 2\n",
        "".join(f"FAILED t.py::t{i}\n" for i in range(30)),
    )
    lines = short_summary(many, limit=5)
    assert lines[:5] == [f"FAILED t.py::t{i}" for i in range(5)]
    assert lines[5] == "... and 26 more (see the log)"
    assert short_summary("3 passed in 0.1s\n") == []


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_tty_progress_is_one_updating_line() -> None:
    out, clock = io.StringIO(), Clock()
    live = LiveLine(out, tty=True, clock=clock)
    live.begin("red")
    live.begin("fix")
    live.update("red", done=1, failed=1, total=1)
    clock.now += 3
    live.update("fix", done=2, failed=0, total=40, running="tests/a/test_b.py::t[1]")
    text = out.getvalue()
    assert "\n" not in text and text.count("\r") >= 2
    last = text.rsplit("\r", 1)[-1]
    assert "red 1/1 (1 failed)" in last and "3s" in last
    assert "fix 2/40 tests/a/test_b.py" in last  # the file running, not the id
    live.end("red")
    live.end("fix")
    assert out.getvalue().endswith("\r\x1b[K")  # the line is cleared at the end


def test_notes_print_above_the_live_line() -> None:
    out, clock = io.StringIO(), Clock()
    live = LiveLine(out, tty=True, clock=clock)
    live.begin("fix")
    live.update("fix", done=1, failed=0, total=3)
    live.note("[forkkit] red: 1 failed")
    text = out.getvalue()
    assert "\r\x1b[K[forkkit] red: 1 failed\n\r[forkkit] fix 1/3" in text


def test_non_tty_progress_prints_a_line_every_ten_seconds() -> None:
    out, clock = io.StringIO(), Clock()
    live = LiveLine(out, tty=False, clock=clock, every=10.0)
    live.begin("fix")
    for i in range(1, 50):
        clock.now += 0.5
        live.update("fix", done=i, failed=0, total=49)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert len(lines) == 2, lines  # at 10 s and 20 s of 24.5 s
    assert lines[0] == "[forkkit] fix 20/49 · 10s"


def test_plugin_appends_one_line_per_finished_test(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\ndef test_a():\n    pass\n\ndef test_b():\n    assert 0\n\n"
        "@pytest.mark.skip\ndef test_c():\n    pass\n"
    )
    progress = tmp_path / "p.txt"
    env = {
        **os.environ,
        "PYTHONPATH": str(PLUGIN_DIR),
        "FORKKIT_PROGRESS_FILE": str(progress),
    }
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", PLUGIN, "-p", "no:cacheprovider"]
    subprocess.run([*cmd, "test_x.py"], cwd=tmp_path, env=env, capture_output=True)
    assert progress.read_text().splitlines() == [
        "collected 3",
        "start test_x.py::test_a",
        "passed test_x.py::test_a",
        "start test_x.py::test_b",
        "failed test_x.py::test_b",
        "start test_x.py::test_c",
        "skipped test_x.py::test_c",
    ]
    tail = ProgressTail(progress)
    assert tail.poll() and (tail.total, tail.done, tail.failed) == (3, 3, 1)
    assert tail.running == ""  # each test that started is done
    with progress.open("a") as fh:
        fh.write("start test_y.py::test_hangs\n")
    assert tail.poll() and tail.running == "test_y.py::test_hangs"


@pytest.mark.e2e
def test_console_shows_progress_and_short_summary_not_tracebacks(
    toy_project: ForkConfig, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    tree = materialize(toy_project)
    out = tmp_path / "r"
    prove(Line.of(toy_project), tree, out_dir=out, stream=True)
    err = capfd.readouterr().err
    assert "FAILED tests/test_fix.py::test_limit_reaches_n" in err
    assert "E       assert" not in err and "def test_limit_reaches_n" not in err
    assert "E       assert" in (out / "red_green_red.log").read_text()
    assert "red_green_red: 1 failed in " in err  # the final count line
    assert str(out / "red_green_red.log") in err
