# SPDX-License-Identifier: Apache-2.0
"""One child process whose output goes to a log file: how forkkit runs
pytest and the resend script in a test venv.

The child runs in its own process group, so a timeout, a cancel or an
interrupt kills it with everything it started; :func:`kill_running` stops
every one still running (the side-by-side runs of ``--parallel`` happen in
worker threads that never see a signal).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar

from forkkit.errors import ForkkitError

_LIVE: set[subprocess.Popen[bytes]] = set()
_LOCK = threading.Lock()

# Waits for the child: returns its exit code (the default: Popen.wait).
Waiter = Callable[[subprocess.Popen[bytes]], int]


@dataclass(frozen=True)
class Finished:
    """How a logged child ended."""

    returncode: int
    seconds: float
    timed_out: bool  # killed by the timeout (its note is at the log's end)
    started: float = 0.0  # when it started (seconds since the epoch)


def run_logged(
    cmd: list[str],
    *,
    cwd: Path,
    environ: dict[str, str],
    log: Path,
    name: str,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
    wait: Waiter | None = None,
) -> Finished:
    """Run ``cmd`` in ``cwd`` with its output in ``log``; kill it (and its
    children) after ``timeout`` seconds or when the caller is interrupted.
    A set ``cancel`` refuses to start (KeyboardInterrupt naming ``name``)."""
    start, started = time.monotonic(), time.time()
    fired = threading.Event()
    with log.open("w") as fh:
        with _LOCK:
            if cancel is not None and cancel.is_set():
                raise KeyboardInterrupt(f"{name}: cancelled before start")
            proc = _start(cmd, cwd, environ, log=fh)
            _LIVE.add(proc)

        def expire() -> None:
            fired.set()
            _kill(proc)

        timer = threading.Timer(timeout, expire) if timeout else None
        try:
            if timer:
                timer.daemon = True
                timer.start()
            rc = wait(proc) if wait else proc.wait()
            _end_leftovers(proc)
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
            fh.write(f"\n[forkkit] {name} killed after the {timeout:g}s timeout\n")
    return Finished(rc, time.monotonic() - start, fired.is_set(), started)


def _start(
    cmd: list[str], cwd: Path, environ: dict[str, str], *, log: IO[str]
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own process group (a kill takes its children too)."""
    try:
        return subprocess.Popen(
            cmd,
            cwd=cwd,
            env=environ,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        raise ForkkitError(
            f"{cmd[0]}: cannot start it ({exc.strerror or exc}); rebuild the "
            "test venv (forkkit testenv) or fix FORKKIT_TESTENV_PYTHON"
        ) from None


T = TypeVar("T")


def side_by_side(
    jobs: Sequence[Callable[[threading.Event], T]], *, workers: int, name: str
) -> list[T]:
    """Run ``jobs`` on ``workers`` threads and return their results in order.

    Each job gets one shared cancel event for its :func:`run_logged` calls.
    The first failure, or an interrupt of the caller (the threads never see
    a signal), sets it and kills every child still running, then propagates.
    """
    cancel = threading.Event()
    with ThreadPoolExecutor(workers, thread_name_prefix=name) as pool:
        try:
            futures = [pool.submit(job, cancel) for job in jobs]
            wait(futures, return_when=FIRST_EXCEPTION)
            return [f.result() for f in futures]
        except BaseException:
            cancel.set()
            kill_running()
            raise


def kill_running() -> int:
    """Kill every child :func:`run_logged` started that still runs; count them."""
    with _LOCK:
        live = list(_LIVE)
    for proc in live:
        _kill(proc)
    return len(live)


def _end_leftovers(proc: subprocess.Popen[bytes]) -> None:
    """Kill what an ended run left running in its process group (a server a
    test started and never stopped, say): a run leaves nothing behind."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child and everything it started (its process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
