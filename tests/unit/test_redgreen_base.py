# SPDX-License-Identifier: Apache-2.0
"""``forkkit red-green --base REV`` / ``--base-patch``: one patch of the series
proven alone (red = the tree after the previous patch)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from forkkit import cli
from forkkit.config import ForkConfig
from forkkit.fork.tree import materialize
from forkkit.services.proof.model import base_label, patch_commit
from tests.synthetic import (
    SyntheticUpstream,
    make_two_fix_project,
    toy_testenv_python,
)

LIMIT = "tests/test_fix.py::test_limit_reaches_n"
COUNT = "tests/test_count.py::test_count_all"
PATCHES = (("0001-Bugfix-limit.patch", "a" * 40), ("0002-Bugfix-count.patch", "b" * 40))


@pytest.fixture
def two_patch_fork(
    toy_upstream: SyntheticUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> ForkConfig:
    """Toy 1.1 with two bugs; patch 1 fixes ``limit``, patch 2 ``count``."""
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    return make_two_fix_project(tmp_path / "two", toy_upstream, "1.1")


def _red_green(
    cfg: ForkConfig, out: Path, *args: str, fix: str = "count"
) -> tuple[int, dict[str, Any]]:
    argv = ["--config", str(cfg.path), "red-green", "--no-related", "--out", str(out)]
    rc = cli.main([*argv, "--parallel", "off", *args])
    return rc, json.loads((out / fix / "red_green.json").read_text())


@pytest.mark.e2e
def test_each_fix_is_proven_alone_with_the_other_kept(
    two_patch_fork: ForkConfig, tmp_path: Path
) -> None:
    cfg = two_patch_fork
    tree = materialize(cfg)
    (p1, _), (_, c2) = tree.patch_commits
    rc, limit = _red_green(cfg, tmp_path / "each", fix="limit")
    assert rc == 0, limit["problems"]
    count = json.loads((tmp_path / "each" / "count" / "red_green.json").read_text())
    assert limit["classification"]["FAIL_TO_PASS"] == [LIMIT]
    assert count["classification"]["FAIL_TO_PASS"] == [COUNT]
    assert (limit["fix"]["id"], limit["fix"]["patches"]) == ("limit", [p1])
    assert limit["fix"]["runtime_files"] == ["toy/calc.py"]
    assert limit["base_label"] == "HEAD without fix 'limit'"
    # limit's red: calc.py as released, count.py still fixed (the other fix kept)
    repo = tree.repo
    red = limit["red"]["tree"]
    assert repo.blob(red, "toy/calc.py") == repo.blob(tree.base, "toy/calc.py")
    assert repo.blob(red, "toy/count.py") == repo.blob(tree.head, "toy/count.py")
    assert limit["red_recipe"] == {"kind": "revert-hunks", "fix": "limit", "rev": ""}
    # each fix its own green on HEAD: the same invocation as its red, only
    # its own targets (#44); the related run is shared
    assert limit["green"]["tree"] == count["green"]["tree"]
    assert limit["green"]["targets"] == limit["red"]["targets"]
    assert count["green"]["targets"] == count["red"]["targets"]
    assert limit["green"]["targets"] != count["green"]["targets"]
    assert not count["green"]["cached"] and count["green"]["started_at"] > 0
    summary = json.loads((tmp_path / "each" / "summary.json").read_text())
    assert summary["schema"] == "forkkit.red-green-summary"
    assert [(f["fix"], f["valid"], f["fail_to_pass"]) for f in summary["fixes"]] == [
        ("limit", True, 1),
        ("count", True, 1),
    ]
    md = (tmp_path / "each" / "summary.md").read_text()
    assert "[limit](limit/red_green.md)" in md and "[count](count/red_green.md)" in md
    assert (
        f"git show --format= {c2[:12]} -- toy/count.py | git apply -R"
        in (tmp_path / "each" / "count" / "red_green.md").read_text()
    )


@pytest.mark.e2e
def test_base_at_patch_one_proves_patch_two_alone(
    two_patch_fork: ForkConfig, tmp_path: Path
) -> None:
    cfg = two_patch_fork
    tree = materialize(cfg)
    (p1, c1), _ = tree.patch_commits
    rc, whole = _red_green(cfg, tmp_path / "whole", "--fix", "count")
    assert rc == 0, whole["problems"]
    assert whole["classification"]["FAIL_TO_PASS"] == [COUNT]

    rc, alone = _red_green(cfg, tmp_path / "alone", "--fix", "count", "--base", c1[:12])
    assert rc == 0, alone["problems"]
    assert alone["classification"]["FAIL_TO_PASS"] == [COUNT]
    assert alone["base"]["commit"] == c1
    assert alone["base_label"] == f"{p1} (commit {c1[:12]})"
    assert alone["upstream_base"]["commit"] == tree.base
    assert alone["red"]["runtime_rev"] == c1
    # count.py at patch 1 is count.py as released: the same red tree as the
    # fix's own red (HEAD without it), so the same run, from the cache
    assert alone["red"]["tree"] == whole["red"]["tree"]
    assert alone["red"]["cached"] and alone["green"]["cached"]
    md = (tmp_path / "alone" / "count" / "red_green.md").read_text()
    assert f"runtime after `{p1}` (`{c1[:12]}`)" in md
    assert f"git checkout {c1[:12]} -- toy/count.py" in md
    assert f"runtime files restored to {p1} (commit {c1[:12]})" in md
    assert "base runtime" not in md

    # --base-patch names the same commit: the same red tree, from the cache.
    rc, named = _red_green(
        cfg, tmp_path / "named", "--fix", "count", "--base-patch", "0001"
    )
    assert rc == 0, named["problems"]
    assert named["classification"] == alone["classification"]
    assert named["red"]["tree"] == alone["red"]["tree"] and named["red"]["cached"]

    # verify replays a --base report on its own base, not as "another pin"
    report = tmp_path / "alone" / "count" / "red_green.json"
    assert cli.main(["--config", str(cfg.path), "verify", str(report)]) == 0


@pytest.mark.e2e
def test_base_must_be_a_commit_of_the_fork(
    two_patch_fork: ForkConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = two_patch_fork
    tree = materialize(cfg)
    argv = ["--config", str(cfg.path), "red-green", "--no-related"]
    assert cli.main([*argv, "--base", "nosuchrev"]) == 2
    assert "--base nosuchrev: no such commit in" in capsys.readouterr().err
    assert cli.main([*argv, "--base", tree.head]) == 2
    assert "is the fork's HEAD" in capsys.readouterr().err
    assert cli.main([*argv, "--base-patch", "9"]) == 2
    err = capsys.readouterr().err
    assert "--base-patch 9: no such patch" in err and "0002-" in err


def test_patch_commit_by_name_prefix_or_index() -> None:
    assert patch_commit(PATCHES, "0002-Bugfix-count.patch") == PATCHES[1]
    assert patch_commit(PATCHES, "0001") == PATCHES[0]
    assert patch_commit(PATCHES, "2") == PATCHES[1]
    for bad in ("3", "nope"):
        with pytest.raises(ValueError, match="no such patch"):
            patch_commit(PATCHES, bad)
    for vague in ("0", "000"):
        with pytest.raises(ValueError, match="names 2 patches"):
            patch_commit(PATCHES, vague)


def test_base_label() -> None:
    up = "c" * 40
    assert base_label(up, rev="base", upstream_base=up, patches=PATCHES) == (
        "upstream base"
    )
    assert base_label("b" * 40, rev="x", upstream_base=up, patches=PATCHES) == (
        f"0002-Bugfix-count.patch (commit {'b' * 12})"
    )
    assert base_label("d" * 40, rev="v1", upstream_base=up, patches=PATCHES) == (
        f"v1 (commit {'d' * 12})"
    )
    assert base_label("d" * 40, rev="d" * 40, upstream_base=up, patches=()) == (
        f"commit {'d' * 12}"
    )
