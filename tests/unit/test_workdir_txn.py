# SPDX-License-Identifier: Apache-2.0
"""The workdir lock, run folders, and all-or-nothing file transactions."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forkkit import txn
from forkkit.errors import ForkkitError
from forkkit.txn import FileTransaction
from forkkit.workdir import Workdir, WorkdirBusy
from tests.synthetic import dead_pid

HOLD = """
import sys, time
from pathlib import Path
from forkkit.workdir import Workdir
with Workdir(Path(sys.argv[1])).lock(command="forkkit red-green"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _holder(root: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(root), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_fails_at_once_naming_the_holder(tmp_path: Path) -> None:
    work = Workdir(tmp_path / "wd")
    proc = _holder(work.root, 30)
    try:
        start = time.monotonic()
        with (
            pytest.raises(WorkdirBusy, match=rf"pid {proc.pid} \(forkkit red-green\)"),
            work.lock(command="forkkit export"),
        ):
            pass
        assert time.monotonic() - start < 2
    finally:
        proc.kill()
        proc.wait()
    with work.lock(command="forkkit export"):  # a killed holder frees it
        pass


@pytest.mark.e2e
def test_wait_blocks_until_the_holder_is_done(tmp_path: Path) -> None:
    work = Workdir(tmp_path / "wd")
    proc = _holder(work.root, 1.5)
    start = time.monotonic()
    with work.lock(command="forkkit export", wait=True):
        assert proc.poll() is not None or time.monotonic() - start > 1
    proc.wait()


def test_read_only_status_never_blocks(toy_project_cli: Path, tmp_path: Path) -> None:
    work = Workdir(Path(os.environ["FORKKIT_WORKDIR"]))
    proc = _holder(work.root, 30)
    try:
        out = subprocess.run(
            [sys.executable, "-m", "forkkit", "status"],
            cwd=toy_project_cli,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert out.returncode == 0, out.stderr
        busy = subprocess.run(
            [sys.executable, "-m", "forkkit", "materialize"],
            cwd=toy_project_cli,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert busy.returncode == 2
        assert busy.stderr.count("\n") == 1 and "rerun with --wait" in busy.stderr
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def toy_project_cli(toy_project: object, tmp_path: Path) -> Path:
    return tmp_path / "project"


def test_run_folder_replaces_the_report_even_when_the_run_fails(tmp_path: Path) -> None:
    work = Workdir(tmp_path / "wd")
    with work.report_folder("red_green") as run:
        (run.path / "red_green.md").write_text("valid\n")
    assert (work.report_dir("red_green") / "red_green.md").read_text() == "valid\n"
    with pytest.raises(ForkkitError), work.report_folder("red_green") as run:
        (run.path / "red.xml").write_text("<testsuite/>")
        raise ForkkitError("pytest did not start")
    report = work.report_dir("red_green")
    assert not (report / "red_green.md").exists()
    assert "pytest did not start" in (report / "FAILED.txt").read_text()
    assert list(work.runs.iterdir()) == []


def test_transaction_is_all_or_nothing_across_a_crash(tmp_path: Path) -> None:
    a, b, gone = tmp_path / "a.patch", tmp_path / "series", tmp_path / "old.patch"
    a.write_text("old a\n")
    b.write_text("old series\n")
    gone.write_text("old\n")
    t = FileTransaction(root=tmp_path)
    t.write(a, "new a\n")
    t.write(b, "new series\n")
    t.delete(gone)
    t.commit()
    assert (a.read_text(), b.read_text(), gone.exists()) == (
        "new a\n",
        "new series\n",
        False,
    )
    assert not (tmp_path / txn.JOURNAL).exists()
    # A crash after the commit point: the next command finishes the update.
    (tmp_path / ".a.patch.forkkit-new").write_text("newer a\n")
    (tmp_path / txn.JOURNAL).write_text(
        f'{{"state": "commit", "writes": ["{a}"], "deletes": ["{b}"]}}'
    )
    assert txn.recover(tmp_path) == "finished"
    assert a.read_text() == "newer a\n" and not b.exists()
    # A crash before it: the staged files are dropped, the targets untouched.
    (tmp_path / ".a.patch.forkkit-new").write_text("never\n")
    (tmp_path / txn.JOURNAL).write_text(
        f'{{"state": "staging", "writes": ["{a}"], "deletes": []}}'
    )
    assert txn.recover(tmp_path) == "discarded"
    assert a.read_text() == "newer a\n"
    assert not (tmp_path / ".a.patch.forkkit-new").exists()
    assert txn.recover(tmp_path) is None


def test_a_read_only_folder_changes_nothing(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores folder permissions")
    target = tmp_path / "ro" / "series"
    target.parent.mkdir()
    target.write_text("old\n")
    target.parent.chmod(0o555)
    try:
        t = FileTransaction(root=tmp_path)
        t.write(target, "new\n")
        with pytest.raises(ForkkitError, match="nothing was changed"):
            t.commit()
        assert target.read_text() == "old\n"
    finally:
        target.parent.chmod(0o755)


def test_recovery_removes_what_a_killed_staging_left(tmp_path: Path) -> None:
    """Issue 25, 7: a kill -9 inside a staged write (or the journal's own)
    left '.NAME.tmp-PID' files in patches/ that no command removed."""
    patches = tmp_path / "patches"
    patches.mkdir()
    a = patches / "0001-a.patch"
    a.write_text("a\n")
    dead, alive = dead_pid(), os.getpid()
    left = [
        tmp_path / f".{txn.JOURNAL}.tmp-{dead}",  # killed writing the journal
        patches / f"..0001-a.patch.forkkit-new.tmp-{dead}",  # ... a staged file
    ]
    for p in left:
        p.write_text("partial")
    busy = patches / f"..0001-a.patch.forkkit-new.tmp-{alive}"  # a live writer's
    busy.write_text("in progress")
    mine = patches / ".notes.tmp-1"  # not forkkit's naming: never touched
    mine.write_text("mine")
    (tmp_path / txn.JOURNAL).write_text(
        f'{{"state": "staging", "writes": ["{a}"], "deletes": []}}'
    )
    assert txn.recover(tmp_path) == "discarded"
    assert not any(p.exists() for p in left)
    assert busy.exists() and mine.read_text() == "mine" and a.read_text() == "a\n"
    # with no journal at all (killed while writing it), the temp file goes too
    left[0].write_text("partial")
    assert txn.recover(tmp_path) is None and not left[0].exists()


CHECKOUT_HOLD = """
import sys, time
from pathlib import Path
from forkkit import txn
with txn.checkout_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(30)
"""


@pytest.mark.e2e
def test_two_workdirs_never_write_one_checkout_at_once(
    toy_project_cli: Path, tmp_path: Path
) -> None:
    """Issue 25, 7: the journal is per checkout but the lock was per workdir,
    so a second command with another FORKKIT_WORKDIR wrote the same patches/
    (and journal) at the same time."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHECKOUT_HOLD, str(toy_project_cli)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        env = {**os.environ, "FORKKIT_WORKDIR": str(tmp_path / "other-wd")}
        run = subprocess.run(
            [sys.executable, "-m", "forkkit", "export"],
            cwd=toy_project_cli,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 2, run.stderr
        lines = [x for x in run.stderr.splitlines() if x.startswith("forkkit: error")]
        assert len(lines) == 1 and "is writing this checkout" in lines[0]
    finally:
        proc.kill()
        proc.wait()


def test_a_line_report_folder_on_a_fresh_workdir(tmp_path: Path) -> None:
    """A line's first command may open its report folder before anything
    made ``lines/NAME`` (forkkit bisect does): the run folder is created
    with its parents."""
    work = Workdir(tmp_path / "wd", line="0.30")
    with work.report_folder("bisect") as folder:
        (folder.path / "bisect.md").write_text("x\n")
    assert (tmp_path / "wd" / "lines" / "0.30" / "reports" / "bisect").is_dir()
