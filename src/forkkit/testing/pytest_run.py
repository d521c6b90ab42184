"""Run upstream pytest suites in a tree, recording JUnit XML.

Callers pass a fresh run folder as ``out_dir`` (see
:meth:`forkkit.workdir.Workdir.report_folder`), so a run only ever reads the
JUnit XML it wrote itself. pytest's output goes to the run's log file only;
the console gets one live progress line (:mod:`forkkit.output.runprogress`).
"""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from forkkit.output.runprogress import (
    LIVE,
    PLUGIN,
    PLUGIN_DIR,
    PROGRESS_ENV,
    ProgressTail,
    running_test,
)
from forkkit.testing.env import TestEnv
from forkkit.testing.logged import run_logged

# Loaded in every run: marks xpassed tests in the JUnit, and orders the tests
# when $FORKKIT_TEST_ORDER says so (``scripts/forkkit_guard.py``).
GUARD_PLUGIN = "forkkit_guard"
ORDER_ENV = "FORKKIT_TEST_ORDER"


@dataclass(frozen=True)
class PytestRun:
    """One pytest invocation and where its results are."""

    args: tuple[str, ...]
    returncode: int
    junit: Path
    log: Path
    seconds: float
    command: str
    timed_out: bool = False
    cached: bool = False  # results reused from the result cache, nothing ran
    started: float = 0.0  # when it started (epoch seconds; 0: it did not run now)
    running: str = ""  # timed out: the test that was running (its node id)


def pytest_command(
    env: TestEnv, targets: list[str], junit: Path, *, extra: list[str]
) -> list[str]:
    """The exact pytest command line (also shown in reports). It runs in the
    tree, and the tree is its rootdir and the top of its conftest.py files:
    a folder above it (the checkout the workdir sits in, with its own pytest
    configuration or conftest.py) never changes the test ids or the run. A
    module that cannot be collected is an error of its own, and the other
    modules still run (``--continue-on-collection-errors``)."""
    return [
        str(env.python),
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--rootdir=.",
        "--confcutdir=.",
        "-q",
        "-rfE",
        "--continue-on-collection-errors",
        f"--junitxml={junit}",
        "-o",
        "junit_family=xunit2",
        *(f"--deselect={node}" for node in env.deselect),
        *extra,
        *targets,
    ]


def run_pytest(
    env: TestEnv,
    tree: Path,
    targets: list[str],
    *,
    out_dir: Path,
    name: str,
    extra: list[str] | None = None,
    stream: bool = True,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
    place: str = "",
) -> PytestRun:
    """Run pytest on ``targets`` from ``tree``; its output goes to a log file.

    ``stream``: a live progress line on stderr. ``timeout`` kills pytest
    after that many seconds (``timed_out``, no JUnit XML). A set ``cancel``
    refuses to start; :func:`kill_running` stops every run in flight.
    ``place`` (default: ``name``) names every path the process is given (its
    JUnit XML, its progress file): two runs of one place get the same
    command line and environment, whatever their names; the JUnit is then
    moved to ``NAME.xml``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    junit, log = out_dir / f"{name}.xml", out_dir / f"{name}.log"
    written = out_dir / f".{place}.junit.xml" if place else junit
    progress = out_dir / f".{place or name}.progress"
    junit.unlink(missing_ok=True)
    written.unlink(missing_ok=True)
    cmd = pytest_command(env, targets, written, extra=list(extra or []))
    environ = _with_plugins(cmd, env.environ(tree))
    _with_progress(cmd, environ, progress)  # the live line; what a timeout cut
    try:
        done = run_logged(
            cmd,
            cwd=tree,
            environ=environ,
            log=log,
            name=name,
            timeout=timeout,
            cancel=cancel,
            wait=(lambda proc: _wait(proc, name, progress)) if stream else None,
        )
    finally:
        running = running_test(progress)
        progress.unlink(missing_ok=True)
        if written != junit and written.exists():
            os.replace(written, junit)
    shown = " ".join(["python", *cmd[1:]]).replace(str(written), f"{name}.xml")
    shown = shown.replace(f" -p {PLUGIN}", "").replace(f" -p {GUARD_PLUGIN}", "")
    return PytestRun(
        tuple(targets),
        done.returncode,
        junit,
        log,
        done.seconds,
        shown,
        done.timed_out,
        started=done.started,
        running=running if done.timed_out else "",
    )


def _with_plugins(cmd: list[str], environ: dict[str, str]) -> dict[str, str]:
    """Put forkkit's plugin folder on the path and load the guard plugin."""
    environ["PYTHONPATH"] += os.pathsep + str(PLUGIN_DIR)
    cmd[3:3] = ["-p", GUARD_PLUGIN]
    return environ


def _with_progress(cmd: list[str], environ: dict[str, str], progress: Path) -> None:
    """Load the progress plugin (first, from its folder on the path)."""
    progress.unlink(missing_ok=True)
    environ[PROGRESS_ENV] = str(progress)
    cmd[3:3] = ["-p", PLUGIN]


def _wait(proc: subprocess.Popen[bytes], name: str, progress: Path) -> int:
    """Wait for pytest, showing its progress on the live line."""
    tail = ProgressTail(progress)
    LIVE.begin(name)
    try:
        while True:
            try:
                rc = proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                rc = None
            tail.poll()
            LIVE.update(
                name,
                done=tail.done,
                failed=tail.failed,
                total=tail.total,
                running=tail.running,
            )
            if rc is not None:
                return rc
    finally:
        LIVE.end(name)
