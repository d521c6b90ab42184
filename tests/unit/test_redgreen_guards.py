# SPDX-License-Identifier: Apache-2.0
"""The red/green proof's guards (issue 13) on toy forks: a FAIL_TO_PASS test
unresolved on green, pytest's exit code against its JUnit, and red failing
for the wrong reason."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from forkkit.cli import main
from forkkit.config import ForkConfig, load_config
from forkkit.fork.tree import materialize
from forkkit.line import Line
from forkkit.services.proof.render import render_markdown
from forkkit.services.proof.run import prove
from tests.synthetic import FIX_TEST, SyntheticUpstream
from tests.synthetic import fixed_fork as fork

FIX_ID = "tests.test_fix::test_limit_reaches_n"

# Beside a real FAIL_TO_PASS test, three that fail on base and, on the fix,
# are skipped, xfailed and xpassed: none of them is resolved.
UNRESOLVED_TEST = FIX_TEST + textwrap.dedent(
    """\

    import pytest


    def test_skips_on_fix():
        if limit(3) == 3:
            pytest.skip("fixed")
        assert limit(3) == 3


    def test_xfails_on_fix():
        if limit(3) == 3:
            pytest.xfail("fixed")
        assert limit(3) == 3


    @pytest.mark.xfail(reason="known bug")
    def test_xpasses_on_fix():
        assert limit(3) == 3
    """
)
# A fixture asserts what the fix changes: red is a setup error, not a failure
# of the test itself.
SETUP_ERROR_TEST = textwrap.dedent(
    """\
    import pytest

    from toy.calc import limit


    @pytest.fixture
    def fixed():
        assert limit(3) == 3


    def test_limit_reaches_n(fixed):
        assert limit(16000) == 16000
    """
)
# pytest's exit status turned upside down: 0 when tests failed, 1 when none did.
LYING_CONFTEST = textwrap.dedent(
    """\
    import pytest


    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(session, exitstatus):
        session.exitstatus = 0 if session.testsfailed else 1
    """
)


@pytest.mark.e2e
def test_unresolved_fail_to_pass_is_invalid(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    cfg, out = fork(tmp_path, toy_upstream, {"tests/test_fix.py": UNRESOLVED_TEST})
    result = prove(
        Line.of(cfg), materialize(cfg), related=False, out_dir=out, stream=False
    )
    assert not result.valid
    problem = next(p for p in result.problems if "not resolved" in p)
    for name in ("test_skips_on_fix", "test_xfails_on_fix", "test_xpasses_on_fix"):
        assert name in problem
    assert "skipped" in problem and "xfailed" in problem and "xpassed" in problem
    # xfail-marked: it xfails on base (a skip) and xpasses on the fix
    assert result.classification.ids("FAIL_TO_PASS") == [FIX_ID]
    assert result.red.report is not None and result.green.report is not None
    xpass = "tests.test_fix::test_xpasses_on_fix"
    assert result.red.report.tests[xpass].mark == "xfailed"
    assert result.green.report.tests[xpass].mark == "xpassed"
    data = json.loads((out / "red_green.json").read_text())
    guard = next(g for g in data["guards"] if g["guard"] == "unresolved")
    assert guard["blocking"] is True and len(guard["tests"]) == 3


@pytest.mark.e2e
def test_exit_code_that_contradicts_junit_is_invalid(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    tests = {"tests/test_fix.py": FIX_TEST, "tests/conftest.py": LYING_CONFTEST}
    cfg, out = fork(tmp_path, toy_upstream, tests)
    result = prove(
        Line.of(cfg), materialize(cfg), related=False, out_dir=out, stream=False
    )
    assert not result.valid
    assert result.classification.ids("FAIL_TO_PASS") == [FIX_ID]
    assert any(
        "red_green_red: pytest exited 0 but its JUnit has 1 failure" in p
        for p in result.problems
    ), result.problems
    assert any(
        "red_green_green: pytest exited 1 but its JUnit records no failure" in p
        for p in result.problems
    ), result.problems
    md = render_markdown(result)
    assert "pytest exited 0" in md


@pytest.mark.e2e
def test_setup_error_on_red_is_the_wrong_reason(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    cfg, out = fork(tmp_path, toy_upstream, {"tests/test_fix.py": SETUP_ERROR_TEST})
    tree = materialize(cfg)
    result = prove(Line.of(cfg), tree, related=False, out_dir=out, stream=False)
    assert result.classification.ids("FAIL_TO_PASS") == [FIX_ID]
    assert not result.valid
    problem = next(p for p in result.problems if "wrong reason" in p)
    assert "setup error" in problem and "raises" not in problem


# red: limit("16000") is "16000" - 1, a TypeError raised in toy/calc.py (the
# fix's runtime file); the fix returns n
THROUGH_RUNTIME_TEST = textwrap.dedent(
    """\
    from toy.calc import limit


    def test_limit_reaches_n():
        assert limit("16000") == "16000"
    """
)
# red: a KeyError raised in the test itself (limit(16000) is 15999 on base)
OUTSIDE_TEST = textwrap.dedent(
    """\
    from toy.calc import limit


    def test_limit_reaches_n():
        assert {16000: "ok"}[limit(16000)] == "ok"
    """
)


@pytest.mark.e2e
def test_an_exception_raised_through_the_runtime_file_shows_the_bug(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    """#47 item 3: a red failure whose traceback passes through the fix's
    runtime files is the bug's (a request rejected with an exception), with
    no flag."""
    tests = {"tests/test_fix.py": THROUGH_RUNTIME_TEST}
    cfg, out = fork(tmp_path, toy_upstream, tests)
    result = prove(
        Line.of(cfg), materialize(cfg), related=False, out_dir=out, stream=False
    )
    assert result.valid, result.problems
    assert result.red.report is not None
    assert result.red.report.tests[FIX_ID].kind == "TypeError"


@pytest.mark.e2e
def test_a_fix_declares_the_exception_that_is_its_bug(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    """An exception raised wholly in the test is the wrong reason, and the
    finding names the fork.toml field; with ``raises`` declared it counts."""
    cfg, out = fork(tmp_path, toy_upstream, {"tests/test_fix.py": OUTSIDE_TEST})
    result = prove(
        Line.of(cfg), materialize(cfg), related=False, out_dir=out, stream=False
    )
    assert not result.valid
    problem = next(p for p in result.problems if "wrong reason" in p)
    assert '[[fix]] raises = "KeyError"' in problem
    text = cfg.path.read_text()
    cfg.path.write_text(text.replace("[[fix]]\n", '[[fix]]\nraises = "KeyError"\n', 1))
    cfg = load_config(cfg.path)
    result = prove(
        Line.of(cfg), materialize(cfg), related=False, out_dir=out, stream=False
    )
    assert result.valid, result.problems
    assert not [g for g in result.guards if g.guard == "wrong_reason"]


def test_the_old_flag_says_where_the_rule_went(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["red-green", "--allow-wrong-reason"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "raises = " in err
