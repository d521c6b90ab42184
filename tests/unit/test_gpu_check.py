# SPDX-License-Identifier: Apache-2.0
"""scripts/gpu_check.py on a toy project: without a GPU nothing is measured and
it says so (exit 3); with one it runs the suites and the repro (exit 0/1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from forkkit.config import ForkConfig

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_check.py"


def gpu_check(cfg: ForkConfig, **env: str) -> tuple[int, dict[str, Any], str]:
    """Run the script; its exit code, published JSON and stderr."""
    environ = {**os.environ, **env}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--config", str(cfg.path), "--timeout", "120"],
        capture_output=True,
        text=True,
        env={k: v for k, v in environ.items() if v != "<unset>"},
        timeout=600,
        check=False,
    )
    report = cfg.work.report_dir("gpu_check") / "gpu_check.json"
    doc = json.loads(report.read_text()) if report.exists() else {}
    return proc.returncode, doc, proc.stderr


def test_no_gpu_measures_nothing_and_exits_3(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    summary = tmp_path / "summary.md"
    rc, doc, err = gpu_check(toy_project, GITHUB_STEP_SUMMARY=str(summary))
    assert rc == 3, err
    assert doc["verdict"].startswith("nothing measured: no CUDA GPU")
    assert doc["steps"] == {} and doc["environment"]["cuda_available"] is False
    assert "nothing measured" in summary.read_text()
    assert not toy_project.work.report_dir("suites").exists()  # nothing ran


def test_unset_python_is_not_started(toy_project: ForkConfig) -> None:
    rc, doc, _ = gpu_check(toy_project, FORKKIT_TESTENV_PYTHON="<unset>")
    assert rc == 2
    assert doc["verdict"] == "not started: FORKKIT_TESTENV_PYTHON is not set"


@pytest.fixture
def fake_cuda_python(tmp_path: Path) -> Path:
    """The toy's python, except that the probe sees one CUDA device."""
    probe = {"torch": "0+fake", "cuda_available": True, "devices": ["Fake GPU"]}
    stub = tmp_path / "cuda-python"
    stub.write_text(
        "#!/bin/sh\n"
        'case "$2" in *cuda_available*) '
        f"echo '{json.dumps(probe)}'; exit 0;; esac\n"
        f'exec {sys.executable} "$@"\n'
    )
    stub.chmod(0o755)
    return stub


@pytest.mark.e2e
def test_with_a_gpu_runs_suites_and_repro(
    toy_project: ForkConfig, fake_cuda_python: Path
) -> None:
    """The toy suites pass; the toy has no GPU repro script, so that step fails."""
    rc, doc, err = gpu_check(toy_project, FORKKIT_TESTENV_PYTHON=str(fake_cuda_python))
    assert rc == 1, err
    suites, repro = doc["steps"]["suites"], doc["steps"]["repro"]
    assert suites["ok"] and suites["tests"]["passed"] > 0, suites
    assert suites["tests"]["failed"] == 0
    assert repro["returncode"] == 2 and not repro["ok"]
    assert "gpu_resend_repro.py: missing" in repro["failed"]
    assert doc["verdict"] == "failed: repro"
    assert doc["environment"]["devices"] == ["Fake GPU"]


def test_an_external_interpreter_keeps_the_callers_device(
    toy_project: ForkConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller's VLLM_TARGET_DEVICE wins over fork.toml's CPU setting."""
    import dataclasses

    from forkkit.testing.env import ensure_testenv

    testenv = dataclasses.replace(
        toy_project.testenv, env={"VLLM_TARGET_DEVICE": "cpu"}
    )
    cfg = dataclasses.replace(toy_project, testenv=testenv)
    monkeypatch.delenv("VLLM_TARGET_DEVICE", raising=False)
    env = ensure_testenv(cfg, toy_project.root)
    assert env.environ(toy_project.root)["VLLM_TARGET_DEVICE"] == "cpu"
    monkeypatch.setenv("VLLM_TARGET_DEVICE", "cuda")
    env = ensure_testenv(cfg, toy_project.root)
    assert env.environ(toy_project.root)["VLLM_TARGET_DEVICE"] == "cuda"
