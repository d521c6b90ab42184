# SPDX-License-Identifier: Apache-2.0
"""#45: one fix proven on a second interpreter (a GPU runner's venv) beside
its CPU proof, each in its own report folder with its own timings: real git
and real pytest on a two-fix toy line, the second interpreter a wrapper that
marks each start."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from forkkit.cli import main
from tests.synthetic import SyntheticUpstream, make_two_fix_project, toy_testenv_python


def _second_interpreter(folder: Path, mark: Path) -> Path:
    """``folder/gpu/bin/python``: this interpreter, behind a script that
    appends one line to ``mark`` per start (so a run on it is seen)."""
    python = folder / "gpu" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(
        f'#!/bin/sh\necho started >> "{mark}"\nexec "{sys.executable}" "$@"\n'
    )
    python.chmod(0o755)
    return python


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.e2e
def test_a_fix_proven_on_a_second_interpreter_beside_its_cpu_proof(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "wd"
    monkeypatch.setenv("FORKKIT_WORKDIR", str(work))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    cfg = make_two_fix_project(
        tmp_path / "p", SyntheticUpstream(tmp_path / "up"), "1.0"
    )
    args = ["--config", str(cfg.path), "red-green", "--fix", "limit"]
    assert main([*args, "--parallel", "off"]) == 0
    reports, timings = work / "reports", work / "timings"
    cpu = _files(reports / "red_green")
    cpu_times = _files(timings)
    assert "limit/red_green.json" in cpu and cpu_times

    mark = tmp_path / "starts"
    gpu = _second_interpreter(tmp_path, mark)
    assert main([*args, "--parallel", "off", "--python", str(gpu)]) == 0
    assert mark.is_file()  # the runs were the second interpreter's
    # its own folder (named after its venv), its own timings; the CPU
    # proof's report and timings are byte for byte what they were
    doc = json.loads(
        (reports / "red_green@gpu" / "limit" / "red_green.json").read_text()
    )
    assert doc["valid"] and doc["testenv"]["key"] == "external:gpu"
    assert (reports / "red_green@gpu" / "summary.json").is_file()
    assert _files(reports / "red_green") == cpu
    assert {k: v for k, v in _files(timings).items() if k in cpu_times} == cpu_times
    assert any(name.endswith("_gpu.json") for name in _files(timings))

    # and the CPU proof again: the GPU bench's report stays
    gpu_report = _files(reports / "red_green@gpu")
    assert main([*args, "--parallel", "off", "--fresh"]) == 0
    assert _files(reports / "red_green@gpu") == gpu_report


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--bench", "gpu"], "--bench names the bench of --python"),
        (["--python", "/no/such/python"], "not an executable interpreter"),
        (["--python", sys.executable, "--bench", "../up"], "a bench name is"),
        (["--python", sys.executable, "--all-lines"], "drop --fix"),
    ],
)
def test_a_bad_bench_is_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    says: str,
) -> None:
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    cfg = make_two_fix_project(
        tmp_path / "p", SyntheticUpstream(tmp_path / "up"), "1.0"
    )
    assert main(["--config", str(cfg.path), "red-green", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert os.path.isdir(tmp_path / "wd") is False or not any(
        (tmp_path / "wd" / "reports").glob("red_green*")
    )
