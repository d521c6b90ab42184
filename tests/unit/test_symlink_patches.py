# SPDX-License-Identifier: Apache-2.0
"""A patch that adds a symlink pointing outside the tree is refused in one
line (#44 N8): by ``fix add``, and by every command that reads the series."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from forkkit import cli
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.patches.series import parse_patch_text
from forkkit.vcs.git import Git
from tests.synthetic import BUGGY, write_files


def _link_patch(
    tmp_path: Path, target: str, *, name: str = "tests/test_link.py"
) -> Path:
    """``git format-patch`` of one commit: a change of toy/other.py plus a
    test that is a symlink to ``target``."""
    work = tmp_path / "work"
    git = Git.init(work)
    write_files(work, BUGGY)
    git.run("add", "-A")
    git.run("commit", "-q", "-m", "base")
    write_files(work, {"toy/other.py": BUGGY["toy/other.py"].replace("toy", "toy!")})
    os.symlink(target, work / name)
    git.run("add", "-A")
    git.run("commit", "-q", "-m", "[Bugfix] limit\n\nSigned-off-by: t <t@t>")
    out = tmp_path / "out"
    git.run("format-patch", "-q", "--zero-commit", "-o", str(out), "-1")
    return next(out.glob("*.patch"))


@pytest.mark.parametrize(
    "target", ["/tmp/elsewhere/test_evil.py", "../../evil.py", "../.."]
)
def test_a_link_outside_the_tree_is_refused(tmp_path: Path, target: str) -> None:
    patch = _link_patch(tmp_path, target)
    with pytest.raises(ForkkitError) as exc:
        parse_patch_text(patch.read_text(), patch)
    msg = str(exc.value)
    assert "tests/test_link.py is a symlink to" in msg and "outside the tree" in msg
    assert "\n" not in msg


def test_a_link_inside_the_tree_is_carried(tmp_path: Path) -> None:
    patch = _link_patch(tmp_path, "test_other.py")
    assert "tests/test_link.py" in parse_patch_text(patch.read_text(), patch).files


def test_fix_add_and_a_run_refuse_it(
    toy_project: ForkConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "evil.py"
    outside.write_text("def test_evil():\n    assert True\n")
    patch = _link_patch(tmp_path, str(outside))
    conf = ["--config", str(toy_project.path)]
    before = toy_project.path.read_bytes()
    capsys.readouterr()
    assert cli.main([*conf, "fix", "add", "evil", str(patch)]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert len(err) == 1 and "outside the tree" in err[0]
    assert toy_project.path.read_bytes() == before
    # the same patch put in the series by hand: every run refuses the series
    dest = toy_project.patches_dir / patch.name
    dest.write_text(patch.read_text())
    series = toy_project.patches_dir / "series"
    series.write_text(series.read_text() + f"{patch.name}\n")
    for command in (["materialize"], ["red-green"]):
        assert cli.main([*conf, *command]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("forkkit: error:") and "outside the tree" in err[-1]


def test_export_refuses_a_committed_link_outside_the_tree(
    toy_project: ForkConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = ["--config", str(toy_project.path)]
    assert cli.main([*conf, "materialize"]) == 0
    fork = toy_project.work.fork
    os.symlink(str(tmp_path / "evil.py"), fork / "tests" / "test_link.py")
    git = Git(fork)
    git.run("add", "-A")
    git.run("commit", "-q", "-m", "[Bugfix] link\n\nForkkit-Fix: toy-fix")
    before = {p.name: p.read_bytes() for p in toy_project.patches_dir.iterdir()}
    capsys.readouterr()
    assert cli.main([*conf, "export"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert len(err) == 1 and "outside the tree" in err[0], err
    after = {p.name: p.read_bytes() for p in toy_project.patches_dir.iterdir()}
    assert after == before
