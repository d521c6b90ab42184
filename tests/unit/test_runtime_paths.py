# SPDX-License-Identifier: Apache-2.0
"""#46 item 6: documentation, CI, Docker and requirement files are carried
and rebased, but they are not runtime: red never reverts them. Real git on
a toy upstream."""

from __future__ import annotations

from pathlib import Path

import pytest

from forkkit.fork.fixes import red_commit
from forkkit.fork.tree import materialize
from forkkit.line import Line
from forkkit.patches.paths import is_runtime_path
from forkkit.vcs import Repo
from tests.synthetic import FIX_TEST, FIXED_CALC, SyntheticUpstream, make_project

NOT_RUNTIME = {
    "docs/features/fp8.md": "# fp8\n",
    "README.md": "# toy\n",
    ".github/workflows/ci.yaml": "on: push\n",
    ".buildkite/run.sh": "echo\n",
    "docker/Dockerfile.xpu": "FROM x\n",
    "Dockerfile": "FROM y\n",
    "requirements/xpu.txt": "torch\n",
    ".gitignore": "*.pyc\n",
}


@pytest.mark.parametrize("path", sorted(NOT_RUNTIME))
def test_carried_files_are_not_runtime(path: str) -> None:
    assert not is_runtime_path(path)


@pytest.mark.parametrize("path", ["toy/calc.py", "vllm/platforms/xpu.py", "setup.py"])
def test_code_is_runtime(path: str) -> None:
    assert is_runtime_path(path)


def test_red_reverts_the_code_and_keeps_the_docs(
    toy_upstream: SyntheticUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    change = {"toy/calc.py": FIXED_CALC, "tests/test_fix.py": FIX_TEST, **NOT_RUNTIME}
    cfg = make_project(
        tmp_path / "p", toy_upstream, "1.0", [("[Bugfix] limit", change)]
    )
    line = Line.of(cfg)
    (fix,) = line.fixes.fixes
    assert fix.runtime_files == ("toy/calc.py",)
    tree = materialize(cfg)
    red = red_commit(tree, line.fixes, fix, head=tree.head)
    repo = Repo(tree.path)
    assert repo.blob(red, "toy/calc.py") != repo.blob(tree.head, "toy/calc.py")
    for path in NOT_RUNTIME:
        assert repo.blob(red, path) == repo.blob(tree.head, path), path
