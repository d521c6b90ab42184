"""The real fork: pinned vLLM 0.30.0 (sha256-verified), materialized and tested.

The fork tree is the session's shared one (tests/integration/conftest.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from forkkit.fork.fixes import load_fixes
from forkkit.fork.tree import BASE_TAG, ForkTree, materialize
from forkkit.testing.junit import parse_junit
from tests.integration.projects import PIN_030

pytestmark = pytest.mark.integration

# The pristine tree of vllm-0.30.0.tar.gz (sha256 5f8f4e89...) and the root
# commit forkkit makes of it: the same on every machine.
BASE_TREE = "2de7921afb47dc65d6ae5be1c4c1ca849bc0435e"
BASE_COMMIT = "b0d5a0185986488bef6c9b70d1f551e8ba3bf95c"
QUICK_SUITE = "tests/v1/core/test_single_type_kv_cache_manager.py"


@pytest.fixture
def cfg(real_cfg: ForkConfig) -> ForkConfig:
    return real_cfg


@pytest.fixture
def fork(real_fork: ForkTree) -> ForkTree:
    return real_fork


def test_pinned_base_is_stable(cfg: ForkConfig, fork: ForkTree) -> None:
    assert cfg.upstream.release.version == "0.30.0"
    assert fork.base_tree == BASE_TREE
    assert fork.base == BASE_COMMIT
    assert fork.repo.rev(BASE_TAG) == BASE_COMMIT
    assert fork.upstream == cfg.upstream.ident
    for path in (*load_fixes(cfg).runtime_files, "requirements/common.txt"):
        assert fork.repo.blob(BASE_TAG, path), f"{path} missing at base"
    # one commit per patch on top, and the fast path gives the same tree
    assert len(fork.patch_commits) == len(fork.repo.commits(f"{BASE_TAG}..HEAD"))
    assert materialize(cfg, dest=fork.path) == fork


def test_pristine_suite_passes(fork: ForkTree, tmp_path: Path) -> None:
    """``forkkit suites --pristine`` on the unpatched tree (one quick file)."""
    out = tmp_path / "reports"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "forkkit",
            "--config",
            str(PIN_030),
            "suites",
            "--pristine",
            "--dest",
            str(fork.path),
            "--out",
            str(out),
            QUICK_SUITE,
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=3000,  # the first run may build the CPU test venv
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = parse_junit(out / "suites.xml")
    assert report.collection_errors == ()
    assert report.summary()["passed"] == len(report.tests) == 22
    assert all(t.startswith("tests.v1.core.") for t in report.tests)
    assert fork.repo.rev("HEAD") == fork.head  # back on the fork afterwards
    assert fork.repo.dirty() == []  # and clean: the next tests share this tree
