"""Run upstream pytest suites in a tree, recording JUnit XML.

Callers pass a fresh run folder as ``out_dir`` (see
:meth:`forkkit.workdir.Workdir.run_folder`), so a run only ever reads the
JUnit XML it wrote itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.testenv import TestEnv

# Live pytest processes, so an interrupted caller can stop all of them (the
# runs of ``--parallel`` happen in worker threads that never see a signal).
_LIVE: set[subprocess.Popen[str]] = set()
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


def pytest_command(
    env: TestEnv, targets: list[str], junit: Path, extra: list[str]
) -> list[str]:
    """The exact pytest command line (also shown in reports)."""
    return [
        str(env.python),
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
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
    out_dir: Path,
    name: str,
    extra: list[str] | None = None,
    stream: bool = True,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
) -> PytestRun:
    """Run pytest on ``targets`` from ``tree``; output is teed to a log file.

    ``timeout`` kills pytest after that many seconds (``timed_out`` is then
    set and no JUnit XML exists). A set ``cancel`` event refuses to start, and
    :func:`kill_running` stops every run in flight.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    junit = out_dir / f"{name}.xml"
    log = out_dir / f"{name}.log"
    junit.unlink(missing_ok=True)
    cmd = pytest_command(env, targets, junit, list(extra or []))
    start = time.monotonic()
    fired = threading.Event()
    with log.open("w") as fh:
        with _LOCK:
            if cancel is not None and cancel.is_set():
                raise KeyboardInterrupt(f"{name}: cancelled before start")
            proc = _start(cmd, tree, env)
            _LIVE.add(proc)

        def expire() -> None:
            fired.set()
            _kill(proc)

        timer = threading.Timer(timeout, expire) if timeout else None
        assert proc.stdout is not None
        try:
            if timer:
                timer.daemon = True
                timer.start()
            for line in proc.stdout:
                fh.write(line)
                if stream:
                    sys.stderr.write(line)
            rc = proc.wait()
        except BaseException:
            _kill(proc)
            proc.wait()
            raise
        finally:
            if timer:
                timer.cancel()
            with _LOCK:
                _LIVE.discard(proc)
        if fired.is_set():
            fh.write(f"\n[forkkit] pytest killed after the {timeout:g}s timeout\n")
    shown = " ".join(["python", *cmd[1:]]).replace(str(junit), f"{name}.xml")
    seconds = time.monotonic() - start
    return PytestRun(
        tuple(targets), rc, junit, log, seconds, shown, timed_out=fired.is_set()
    )


def _start(cmd: list[str], tree: Path, env: TestEnv) -> subprocess.Popen[str]:
    """Start pytest in its own process group (a kill takes its children too)."""
    try:
        return subprocess.Popen(
            cmd,
            cwd=tree,
            env=env.environ(tree),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    except OSError as exc:
        raise ForkkitError(
            f"{env.python}: cannot start pytest ({exc.strerror or exc}); rebuild the "
            "test venv (forkkit testenv) or fix FORKKIT_TESTENV_PYTHON"
        ) from None


def kill_running() -> int:
    """Kill every pytest started by :func:`run_pytest` still running; count them."""
    with _LOCK:
        live = list(_LIVE)
    for proc in live:
        _kill(proc)
    return len(live)


def _kill(proc: subprocess.Popen[str]) -> None:
    """SIGKILL pytest and everything it started (its process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
