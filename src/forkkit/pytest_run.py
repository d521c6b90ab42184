"""Run upstream pytest suites in a tree, recording JUnit XML."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from forkkit.testenv import TestEnv


@dataclass(frozen=True)
class PytestRun:
    """One pytest invocation and where its results are."""

    args: tuple[str, ...]
    returncode: int
    junit: Path
    log: Path
    seconds: float
    command: str


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
) -> PytestRun:
    """Run pytest on ``targets`` from ``tree``; output is teed to a log file."""
    out_dir.mkdir(parents=True, exist_ok=True)
    junit = out_dir / f"{name}.xml"
    log = out_dir / f"{name}.log"
    junit.unlink(missing_ok=True)
    cmd = pytest_command(env, targets, junit, list(extra or []))
    start = time.monotonic()
    with log.open("w") as fh:
        proc = subprocess.Popen(
            cmd,
            cwd=tree,
            env=env.environ(tree),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                fh.write(line)
                if stream:
                    sys.stderr.write(line)
            rc = proc.wait(timeout=timeout)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    shown = " ".join(["python", *cmd[1:]]).replace(str(junit), f"{name}.xml")
    return PytestRun(tuple(targets), rc, junit, log, time.monotonic() - start, shown)
