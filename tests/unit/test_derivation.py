# SPDX-License-Identifier: Apache-2.0
"""#47 item 5: the derivation is exact. A test a patch adds at the end of a
test file is a target even when the patch was made on another base (it
applies at an offset, and its hunks' line numbers name other lines of the
release's file). Real git, a real ``fix add`` and ``red-green``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from forkkit import cli
from tests.synthetic import (
    BUGGY,
    FIXED_CALC,
    SyntheticUpstream,
    make_patches,
    toy_testenv_python,
)

NEW_TEST = textwrap.dedent(
    """\


    def test_limit_reaches_n():
        from toy.calc import limit

        assert limit(16000) == 16000
    """
)


@pytest.mark.e2e
def test_a_test_added_at_the_end_of_a_file_is_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    up = SyntheticUpstream(tmp_path / "up")
    # the release's test file grew at its top since the patch's base
    grown = "# upstream's header\n" * 6 + BUGGY["tests/test_other.py"]
    up.publish("1.0", {**BUGGY, "tests/test_other.py": grown})
    other = BUGGY["tests/test_other.py"] + NEW_TEST
    (patch,) = make_patches(
        BUGGY,
        [("[Bugfix] limit", {"toy/calc.py": FIXED_CALC, "tests/test_other.py": other})],
        tmp_path / "mine",
        fix_ids=[""],
    )
    proj = tmp_path / "proj"
    index = (up.root / "index").as_uri()
    assert cli.main(["init", "toy==1.0", "--dir", str(proj), "--index-url", index]) == 0
    conf = ["--config", str(proj / "fork.toml")]
    add = [*conf, "fix", "add", "limit", str(tmp_path / "mine" / patch)]
    assert cli.main([*add, "--related", "tests/test_other.py"]) == 0
    assert cli.main([*conf, "red-green", "--parallel", "off"]) == 0
    report = proj / ".forkkit" / "reports" / "red_green" / "limit" / "red_green.json"
    doc = json.loads(report.read_text())
    assert doc["tests"] == ["tests/test_other.py::test_limit_reaches_n"]
    assert doc["valid"] is True
