"""Run upstream pytest suites in a tree, recording JUnit XML.

Callers pass a fresh run folder as ``out_dir`` (see
:meth:`forkkit.workdir.Workdir.new_report_folder`), so a run only ever reads the
JUnit XML it wrote itself. pytest's output goes to the run's log file only;
the console gets one live progress line (:mod:`forkkit.output.runprogress`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from forkkit.errors import ForkkitError
from forkkit.output.runprogress import (
    LIVE,
    PLUGIN,
    PLUGIN_DIR,
    PROGRESS_ENV,
    ProgressTail,
)
from forkkit.testing.env import TestEnv

# Loaded in every run: marks xpassed tests in the JUnit, and orders the tests
# when $FORKKIT_TEST_ORDER says so (``scripts/forkkit_guard.py``).
GUARD_PLUGIN = "forkkit_guard"
ORDER_ENV = "FORKKIT_TEST_ORDER"

# Live pytest processes, so an interrupted caller can stop all of them (the
# runs of ``--parallel`` happen in worker threads that never see a signal).
_LIVE: set[subprocess.Popen[bytes]] = set()
_LOCK = threading.Lock()


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


def pytest_command(
    env: TestEnv, targets: list[str], junit: Path, *, extra: list[str]
) -> list[str]:
    """The exact pytest command line (also shown in reports). It runs in the
    tree, and the tree is its rootdir and the top of its conftest.py files:
    a folder above it (the checkout the workdir sits in, with its own pytest
    configuration or conftest.py) never changes the test ids or the run."""
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
) -> PytestRun:
    """Run pytest on ``targets`` from ``tree``; its output goes to a log file.

    ``stream``: a live progress line on stderr. ``timeout`` kills pytest
    after that many seconds (``timed_out``, no JUnit XML). A set ``cancel``
    refuses to start; :func:`kill_running` stops every run in flight."""
    out_dir.mkdir(parents=True, exist_ok=True)
    junit, log = out_dir / f"{name}.xml", out_dir / f"{name}.log"
    progress = out_dir / f".{name}.progress"
    junit.unlink(missing_ok=True)
    cmd = pytest_command(env, targets, junit, extra=list(extra or []))
    environ = _with_plugins(cmd, env.environ(tree))
    if stream:
        _with_progress(cmd, environ, progress)
    start = time.monotonic()
    fired = threading.Event()
    with log.open("w") as fh:
        with _LOCK:
            if cancel is not None and cancel.is_set():
                raise KeyboardInterrupt(f"{name}: cancelled before start")
            proc = _start(cmd, tree, environ, log=fh)
            _LIVE.add(proc)

        def expire() -> None:
            fired.set()
            _kill(proc)

        timer = threading.Timer(timeout, expire) if timeout else None
        try:
            if timer:
                timer.daemon = True
                timer.start()
            rc = _wait(proc, name, progress if stream else None)
        except BaseException:
            _kill(proc)
            proc.wait()
            raise
        finally:
            if timer:
                timer.cancel()
            with _LOCK:
                _LIVE.discard(proc)
            progress.unlink(missing_ok=True)
        if fired.is_set():
            fh.write(f"\n[forkkit] pytest killed after the {timeout:g}s timeout\n")
    shown = " ".join(["python", *cmd[1:]]).replace(str(junit), f"{name}.xml")
    shown = shown.replace(f" -p {PLUGIN}", "").replace(f" -p {GUARD_PLUGIN}", "")
    secs = time.monotonic() - start
    return PytestRun(tuple(targets), rc, junit, log, secs, shown, fired.is_set())


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


def _wait(proc: subprocess.Popen[bytes], name: str, progress: Path | None) -> int:
    """Wait for pytest, showing its progress on the live line when asked."""
    if progress is None:
        return proc.wait()
    tail = ProgressTail(progress)
    LIVE.begin(name)
    try:
        while True:
            try:
                rc = proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                rc = None
            tail.poll()
            LIVE.update(name, done=tail.done, failed=tail.failed, total=tail.total)
            if rc is not None:
                return rc
    finally:
        LIVE.end(name)


def _start(
    cmd: list[str], tree: Path, environ: dict[str, str], *, log: IO[str]
) -> subprocess.Popen[bytes]:
    """Start pytest in its own process group (a kill takes its children too)."""
    try:
        return subprocess.Popen(
            cmd,
            cwd=tree,
            env=environ,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        raise ForkkitError(
            f"{cmd[0]}: cannot start pytest ({exc.strerror or exc}); rebuild the "
            "test venv (forkkit testenv) or fix FORKKIT_TESTENV_PYTHON"
        ) from None


def kill_running() -> int:
    """Kill every pytest started by :func:`run_pytest` still running; count them."""
    with _LOCK:
        live = list(_LIVE)
    for proc in live:
        _kill(proc)
    return len(live)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL pytest and everything it started (its process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
