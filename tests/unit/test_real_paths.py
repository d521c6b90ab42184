# SPDX-License-Identifier: Apache-2.0
"""Paths people really have (issue 24, 5): a checkout and a workdir with
spaces and non-ASCII letters, $HOME unset, a run from a subdirectory, a
read-only checkout. Each works, or gives one line (real processes)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from tests.synthetic import SyntheticUpstream, make_project, toy_testenv_python

SRC = str(Path(__file__).parents[2] / "src")


def _forkkit(
    cfg: ForkConfig, *args: str, cwd: Path | None = None, **env: str | None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("FORKKIT_")}
    base["PYTHONPATH"] = SRC
    base["FORKKIT_TESTENV_PYTHON"] = toy_testenv_python()  # no venv build
    for key, value in env.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return subprocess.run(
        [sys.executable, "-m", "forkkit", *args],
        cwd=cwd or cfg.root,
        env=base,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def odd(tmp_path: Path, toy_upstream: SyntheticUpstream) -> Iterator[ForkConfig]:
    """The toy project in a folder with a space and non-ASCII letters."""
    cfg = make_project(tmp_path / "my fork ü 日本", toy_upstream, "1.0")
    yield cfg
    for p in (cfg.root, *cfg.root.rglob("*")):
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | stat.S_IRWXU)


@pytest.mark.e2e
def test_spaces_and_non_ascii_in_the_checkout_and_the_workdir(
    odd: ForkConfig, tmp_path: Path
) -> None:
    work = str(tmp_path / "work dir ö")
    for args in (["materialize"], ["red-green", "--no-related"], ["status"]):
        proc = _forkkit(odd, *args, FORKKIT_WORKDIR=work)
        assert proc.returncode == 0, proc.stderr
    assert (
        Path(work) / "reports" / "red_green" / "toy-fix" / "red_green.json"
    ).is_file()
    body = _forkkit(odd, "pr-body", FORKKIT_WORKDIR=work)
    assert body.returncode == 0 and "work dir" not in body.stdout  # portable


@pytest.mark.e2e
def test_home_unset_and_a_run_from_a_subdirectory(odd: ForkConfig) -> None:
    sub = odd.root / "patches"
    proc = _forkkit(odd, "--config", str(odd.path), "status", cwd=sub, HOME=None)
    assert proc.returncode == 0, proc.stderr
    proc = _forkkit(odd, "red-green", "--no-related", cwd=sub, HOME=None)
    lines = [x for x in proc.stderr.splitlines() if x.startswith("forkkit: error")]
    assert proc.returncode == 0 or (proc.returncode == 2 and len(lines) == 1), (
        proc.stderr
    )
    assert "Traceback" not in proc.stderr


@pytest.mark.e2e
def test_a_read_only_checkout(odd: ForkConfig, tmp_path: Path) -> None:
    """Proving writes only the workdir: it works; export would write
    patches/, and says so in one line."""
    work = str(tmp_path / "wd")
    assert _forkkit(odd, "materialize", FORKKIT_WORKDIR=work).returncode == 0
    for p in (odd.root, *odd.root.rglob("*")):
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    proc = _forkkit(odd, "red-green", "--no-related", FORKKIT_WORKDIR=work)
    assert proc.returncode == 0, proc.stderr
    if os.geteuid() == 0:
        return  # root writes anyway: the export refusal cannot be seen here
    proc = _forkkit(odd, "export", FORKKIT_WORKDIR=work)
    lines = [x for x in proc.stderr.splitlines() if x.startswith("forkkit: error")]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
