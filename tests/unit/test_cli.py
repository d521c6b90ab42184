"""The ``forkkit`` command line on a toy fork project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forkkit.cli import main
from forkkit.config import ForkConfig
from forkkit.testing.junit import parse_junit
from forkkit.vcs.git import Git
from tests.synthetic import FIXED_CALC

RENAME_MSG = "[Misc] rename\n\nSigned-off-by: t <t@t>\nForkkit-Fix: toy-fix"


def _forkkit(cfg: ForkConfig, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess (environment from the fixture)."""
    return subprocess.run(
        [sys.executable, "-m", "forkkit", "--config", str(cfg.path), *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )


def test_user_error_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "forkkit",
            "--config",
            str(tmp_path / "nope.toml"),
            "fetch",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("forkkit: error: ")
    assert "nope.toml: not found" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_failing_patch_error_from_the_cli(
    toy_project: ForkConfig, capsys: pytest.CaptureFixture[str]
) -> None:
    patch = next(toy_project.patches_dir.glob("0001-*.patch"))
    patch.write_text(
        patch.read_text().replace("-    return n - 1", "-    return n - 2")
    )
    rc = main(["--config", str(toy_project.path), "materialize"])
    err = capsys.readouterr().err.splitlines()
    assert rc == 2
    errors = [line for line in err if line.startswith("forkkit:")]
    assert errors == [
        f"forkkit: error: {patch.name}: hunk 1/1 of toy/calc.py (@@ -1,5 +1,5 @@) "
        "does not apply to toy 1.0; refresh the patch (CONTRIBUTING.md, "
        "'Refreshing a patch')"
    ]


def test_materialize_json(toy_project: ForkConfig) -> None:
    proc = _forkkit(toy_project, "materialize", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    dest = toy_project.workdir / "fork"
    git = Git(dest)
    assert data["path"] == str(dest)
    assert data["head"] == git.rev("HEAD")
    assert data["base"] == git.rev("base")
    assert data["upstream_label"] == "toy 1.0"
    assert [name for name, _ in data["patch_commits"]] == [
        "0001-Bugfix-limit-reaches-n.patch"
    ]
    assert "[forkkit]" in proc.stderr  # progress goes to stderr only
    # again: the same tree, via the fast path
    again = _forkkit(toy_project, "fork", "--json")
    assert json.loads(again.stdout) == data
    assert "up to date" in again.stderr


def test_materialize_git_source_and_dest(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    dest = tmp_path / "gitfork"
    proc = _forkkit(toy_project, "materialize", "--rev", "v1.0", "--dest", str(dest))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(dest)
    assert (dest / "toy/calc.py").read_text() == FIXED_CALC


def test_export_from_the_cli(toy_project: ForkConfig) -> None:
    assert _forkkit(toy_project, "materialize").returncode == 0
    tree = toy_project.workdir / "fork"
    (tree / "toy/other.py").write_text("def name():\n    return 'fork'\n")
    Git(tree).run(
        "commit",
        "-q",
        "-a",
        "-m",
        RENAME_MSG,
    )
    proc = _forkkit(toy_project, "export")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [
        "0001-Bugfix-limit-reaches-n.patch",
        "0002-Misc-rename.patch",
    ]
    assert toy_project.series_file.read_text().split() == proc.stdout.split()


@pytest.mark.e2e
def test_suites_on_fork_and_pristine(toy_project: ForkConfig, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    proc = _forkkit(toy_project, "suites", "--pristine", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    base = parse_junit(out / "suites.xml")
    assert sorted(base.tests) == [
        "tests.test_other::test_double",
        "tests.test_other::test_name",
    ]
    # the tree is back on the fork afterwards
    git = Git(toy_project.workdir / "fork")
    assert git.out("rev-parse", "--abbrev-ref", "HEAD") == "fork"
    assert git.is_clean()
    proc = _forkkit(toy_project, "suites", "--out", str(out), "tests/test_fix.py")
    assert proc.returncode == 0, proc.stderr
    fork = parse_junit(out / "suites.xml")
    assert [t.outcome for t in fork.tests.values()] == ["passed"]
    # a failing suite is exit 1 (not a user error)
    proc = _forkkit(
        toy_project, "suites", "--pristine", "--out", str(out), "tests/test_fix.py"
    )
    assert proc.returncode != 0


@pytest.mark.e2e
def test_suites_test_local_edits_as_they_are(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    out = tmp_path / "reports"
    assert _forkkit(toy_project, "materialize").returncode == 0
    calc = toy_project.workdir / "fork" / "toy" / "calc.py"
    calc.write_text(FIXED_CALC.replace("return n\n", "return n + 1\n"))
    proc = _forkkit(toy_project, "suites", "--out", str(out), "tests/test_fix.py")
    assert proc.returncode == 1  # the edit breaks the fix's test: it ran on it
    assert "testing the tree as it is" in proc.stderr
    assert parse_junit(out / "suites.xml").summary()["failed"] == 1
    assert "return n + 1" in calc.read_text()  # untouched
    # --pristine tests base in a scratch worktree: the edit stays, untested
    proc = _forkkit(toy_project, "suites", "--pristine", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert parse_junit(out / "suites.xml").summary()["passed"] == 2
    assert "return n + 1" in calc.read_text()
    assert not (toy_project.workdir / ".forkkit-worktrees").exists()


@pytest.mark.e2e
def test_suites_honour_testenv_deselect(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    toml = toy_project.path.read_text().replace(
        "[testenv]\n", '[testenv]\ndeselect = ["tests/test_other.py::test_name"]\n'
    )
    toy_project.path.write_text(toml)
    out = tmp_path / "reports"
    proc = _forkkit(toy_project, "suites", "--pristine", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert list(parse_junit(out / "suites.xml").tests) == [
        "tests.test_other::test_double"
    ]
