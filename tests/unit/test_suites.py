# SPDX-License-Identifier: Apache-2.0
"""``run_suites``: a fresh run folder per run, naming the tree that ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from forkkit.fork.tree import materialize
from forkkit.testing.junit import parse_junit
from forkkit.testing.suites import SuitesDoc, run_suites
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
    doc = SuitesDoc.read(out / "suites.json", hint="run forkkit suites")
    assert doc.pristine and doc.tree == tree.base_tree  # one type reads it back
    assert not scratch_root(tree.path).exists()
    # Local edits are tested as they are (a snapshot commit on HEAD, checked
    # out on its own), and listed; an ignored file Python could load is not
    # part of it (#34 item 1: suites run as red-green's runs do).
    calc = tree.path / "toy/calc.py"
    calc.write_text(FIXED_CALC.replace("return n\n", "return n + 1\n"))
    exclude = tree.repo.git_dir() / "info" / "exclude"
    exclude.write_text("sitecustomize.py\n")
    (tree.path / "tests" / "conftest.py").write_text("")  # untracked: taken
    (tree.path / "sitecustomize.py").write_text(
        "import toy.calc\ntoy.calc.limit = lambda n: n\n"
    )
    run = run_suites(toy_project, tree.path, ["tests/test_fix.py"], out=out)
    assert run.returncode == 1
    data = json.loads((out / "suites.json").read_text())
    assert data["uncommitted"] == ["tests/conftest.py", "toy/calc.py"]
    snapshot = data["commit"]
    assert tree.repo.rev(f"{snapshot}^") == tree.repo.rev("HEAD")
    assert data["tree"] == tree.repo.tree(snapshot) != tree.repo.tree("HEAD")
    assert tree.repo.blob(snapshot, "sitecustomize.py") is None
    assert parse_junit(out / "suites.xml").summary()["failed"] == 1
    (tree.path / "sitecustomize.py").unlink()
    (tree.path / "tests" / "conftest.py").unlink()
    # Default: <workdir>/reports/suites, holding this run's files only.
    run = run_suites(toy_project, tree.path, ["tests/test_other.py"])
    published = toy_project.work.report_dir("suites")
    assert run.returncode == 0 and run.junit == published / "suites.xml"
    assert sorted(p.name for p in published.iterdir()) == [
        "suites.json",
        "suites.log",
        "suites.xml",
    ]
