# SPDX-License-Identifier: Apache-2.0
"""``run_suites``: a fresh run folder per run, naming the tree that ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from forkkit.fork.tree import materialize
from forkkit.testing.junit import parse_junit
from forkkit.testing.suites import run_suites
from forkkit.vcs import scratch_root
from tests.synthetic import FIXED_CALC


@pytest.mark.e2e
def test_suites_publish_one_run_and_name_the_tree(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    tree = materialize(toy_project)
    out = tmp_path / "suites"
    run = run_suites(toy_project, tree.path, ["tests"], pristine=True, out=out)
    assert run.returncode == 0 and run.junit == out / "suites.xml"
    assert parse_junit(run.junit).summary()["passed"] == 2  # base has no fix test
    data = json.loads((out / "suites.json").read_text())
    assert data["pristine"] and data["tree"] == tree.base_tree
    assert not scratch_root(tree.path).exists()
    # Local edits are tested as they are, and listed.
    calc = tree.path / "toy/calc.py"
    calc.write_text(FIXED_CALC.replace("return n\n", "return n + 1\n"))
    run = run_suites(toy_project, tree.path, ["tests/test_fix.py"], out=out)
    assert run.returncode == 1
    data = json.loads((out / "suites.json").read_text())
    assert data["uncommitted"] == ["toy/calc.py"] and data["tree"] == tree.repo.tree(
        "HEAD"
    )
    assert parse_junit(out / "suites.xml").summary()["failed"] == 1
    # Default: <workdir>/reports/suites, holding this run's files only.
    run = run_suites(toy_project, tree.path, ["tests/test_other.py"])
    published = toy_project.work.report_dir("suites")
    assert run.returncode == 0 and run.junit == published / "suites.xml"
    assert sorted(p.name for p in published.iterdir()) == [
        "suites.json",
        "suites.log",
        "suites.xml",
    ]
