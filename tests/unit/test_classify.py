# SPDX-License-Identifier: Apache-2.0
"""The classification that decides whether a red/green proof is valid: each
category, each problem, and the failure kinds read from pytest's JUnit."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from forkkit.testing import junit
from forkkit.testing.classify import (
    Category,
    Reason,
    classify,
    classify_test,
    exit_code,
    flaky,
    run_problems,
    unresolved,
    wrong_reason,
)
from forkkit.testing.junit import JunitReport, Outcome, failure_kind


def outcome(name: str, result: Outcome, kind: str = "") -> junit.TestOutcome:
    if result in ("failed", "error") and not kind:
        kind = "AssertionError"
    return junit.TestOutcome(f"m::{name}", result, 0.0, kind)


def report(
    *tests: junit.TestOutcome, collection: tuple[junit.TestOutcome, ...] = ()
) -> JunitReport:
    by_id = {t.test_id: t for t in tests}
    return JunitReport(tests=by_id, collection_errors=collection)


@pytest.mark.parametrize(
    ("red", "green", "category"),
    [
        ("failed", "passed", "FAIL_TO_PASS"),
        ("error", "passed", "FAIL_TO_PASS"),
        ("passed", "passed", "PASS_TO_PASS"),
        ("passed", "failed", "PASS_TO_FAIL"),
        ("passed", "error", "PASS_TO_FAIL"),
        ("failed", "failed", "FAIL_TO_FAIL"),
        ("error", "failed", "FAIL_TO_FAIL"),
        ("skipped", "passed", "SKIPPED"),
        ("failed", "skipped", "SKIPPED"),
        ("skipped", "skipped", "SKIPPED"),
        (None, "passed", "MISSING"),
        ("failed", None, "MISSING"),
        (None, None, "MISSING"),
    ],
)
def test_classify_test(
    red: Outcome | None, green: Outcome | None, category: Category
) -> None:
    r = outcome("t", red) if red else None
    g = outcome("t", green) if green else None
    assert classify_test(r, g) == category


F2P = (outcome("fix", "failed"), outcome("fix", "passed"))
P2P = (outcome("ok", "passed"), outcome("ok", "passed"))
COLLECT = outcome("broken", "error", "collection")


@pytest.mark.parametrize(
    ("red", "green", "problems"),
    [
        pytest.param(report(F2P[0], P2P[0]), report(F2P[1], P2P[1]), [], id="valid"),
        pytest.param(
            report(P2P[0]),
            report(P2P[1]),
            ["no FAIL_TO_PASS test: the tests do not demonstrate the bug"],
            id="no-f2p",
        ),
        pytest.param(
            report(outcome("fix", "failed", "ImportError")),
            report(F2P[1]),
            [
                "1 FAIL_TO_PASS test(s) fail on base with ImportError, "
                "not an assertion (e.g. m::fix)"
            ],
            id="f2p-crash",
        ),
        pytest.param(
            report(F2P[0], outcome("p", "passed")),
            report(F2P[1], outcome("p", "failed")),
            ["1 PASS_TO_FAIL test(s), e.g. m::p"],
            id="p2f",
        ),
        pytest.param(
            report(F2P[0], outcome("f", "failed")),
            report(F2P[1], outcome("f", "error")),
            ["1 FAIL_TO_FAIL test(s), e.g. m::f"],
            id="f2f",
        ),
        pytest.param(
            report(F2P[0], outcome("gone", "passed")),
            report(F2P[1]),
            ["1 MISSING test(s), e.g. m::gone"],
            id="missing",
        ),
        pytest.param(
            report(collection=(COLLECT,)),
            report(F2P[1]),
            [
                "red run: m::broken cannot be collected: collection; fix the "
                "module, or leave it out of the fix's suites",
                "red run executed no tests",
                "1 MISSING test(s), e.g. m::fix",
            ],
            id="red-collection",
        ),
        pytest.param(
            report(F2P[0]),
            report(outcome("fix", "skipped")),
            [
                "green run executed no tests",
                "no FAIL_TO_PASS test: the tests do not demonstrate the bug",
            ],
            id="green-all-skipped",
        ),
        pytest.param(
            report(),
            report(),
            ["red run executed no tests", "green run executed no tests"],
            id="nothing-ran",
        ),
    ],
)
def test_classify_problems(
    red: JunitReport, green: JunitReport, problems: list[str]
) -> None:
    c = classify(red, green)
    assert list(c.problems) == problems
    assert c.valid is (not problems)


def test_classify_groups_sorted_ids() -> None:
    red = report(outcome("b", "failed"), outcome("a", "failed"), P2P[0])
    green = report(outcome("a", "passed"), outcome("b", "passed"), P2P[1])
    c = classify(red, green)
    assert c.ids("FAIL_TO_PASS") == ["m::a", "m::b"]
    assert c.ids("PASS_TO_PASS") == ["m::ok"] and c.ids("SKIPPED") == []


@pytest.mark.parametrize(
    ("message", "text", "kind"),
    [
        ("collection failure", "", "collection"),
        ("", "ERROR collecting tests/test_x.py", "collection"),
        ("boom", "E   ValueError: bad\nE   AssertionError: x", "AssertionError"),
        ("", "E   pkg.errors.CustomError: no", "CustomError"),
        ("", "E   KeyboardInterrupt", "KeyboardInterrupt"),
        ("", "E   _pytest.outcomes.Failed: DID NOT RAISE", "Failed"),
        ("assert 1 == 2", "", "AssertionError"),
        ("AssertionError: values differ", "", "AssertionError"),
        ("ModuleNotFoundError: No module named 'x'", "", "ModuleNotFoundError"),
        ("torch.cuda.OutOfMemoryError: CUDA", "", "OutOfMemoryError"),
        ("", "    def test():\nE       assert 0\n", "AssertionError"),
        ("Segmentation fault", "Fatal Python error", "unknown"),
        ("", "", "unknown"),
        # an assertion whose diff shows another exception's line is an assertion
        ("assert 'a' == 'b'", "E     ValueError: shown in a diff\n", "AssertionError"),
        ("Failed: DID NOT RAISE <class 'ValueError'>", "", "Failed"),
        ("", "E   Error: a bare word is no exception's name", "unknown"),
    ],
)
def test_failure_kind(message: str, text: str, kind: str) -> None:
    assert failure_kind(message, text) == kind


def test_unresolved_guard() -> None:
    red = report(
        outcome("skip", "failed"),
        outcome("xf", "failed"),
        outcome("xp", "failed"),
        junit.TestOutcome("m::both", "skipped", 0.0, mark="xfailed"),
        outcome("ok", "failed"),
    )
    green = report(
        outcome("skip", "skipped"),
        junit.TestOutcome("m::xf", "skipped", 0.0, mark="xfailed"),
        junit.TestOutcome("m::xp", "passed", 0.0, mark="xpassed"),
        junit.TestOutcome("m::both", "passed", 0.0, mark="xpassed"),
        outcome("ok", "passed"),
    )
    g = unresolved(red, green)
    assert g is not None and g.blocking
    assert g.tests == ("m::both", "m::skip", "m::xf", "m::xp")
    assert "m::xp (xpassed)" in g.message and "m::skip (skipped)" in g.message
    assert unresolved(report(F2P[0]), report(F2P[1])) is None


def test_wrong_reason_guard() -> None:
    red = report(
        outcome("a", "failed"),
        outcome("b", "failed", "NameError"),
        outcome("c", "error", "AssertionError"),
    )
    g = wrong_reason(red, ["m::a", "m::b", "m::c"], reason=Reason())
    assert g is not None and g.blocking and g.tests == ("m::b", "m::c")
    assert "(NameError, setup error (AssertionError))" in g.message
    assert '[[fix]] raises = "NameError"' in g.message
    declared = wrong_reason(red, ["m::b", "m::c"], reason=Reason(raises="NameError"))
    assert declared is not None and declared.tests == ("m::c",)
    assert wrong_reason(red, ["m::a"], reason=Reason()) is None


RIGHT_REASON_TESTS = """\
import pytest

from toy.calc import limit


@pytest.fixture
def fixed():
    assert limit(3) == 3


def test_assertion():
    assert limit(3) == 3


def test_did_not_raise():
    with pytest.raises(ValueError):
        limit(3)


def test_through_runtime():
    assert limit("3") == "3"


def test_outside():
    assert {3: "ok"}[limit(3)] == "ok"


def test_import():
    from toy.calc import limit_v2

    assert limit_v2(3) == 3


def test_fixture(fixed):
    assert limit(3) == 3
"""
CALC = "def limit(n):\n    return n - 1\n"


@pytest.mark.parametrize("tb", ["auto", "short", "long", "native"])
def test_a_red_failure_shows_the_bug_by_where_it_comes_from(
    tmp_path: Path, tb: str
) -> None:
    """#47 item 3, with real pytest (each traceback style): an assertion, and
    an exception raised through the fix's runtime file, show the bug; an
    exception raised wholly in the test, an import error and a fixture error
    do not, unless the fix declares that exception (never a setup error)."""
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "__init__.py").write_text("")
    (tmp_path / "toy" / "calc.py").write_text(CALC)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "test_fix.py").write_text(RIGHT_REASON_TESTS)
    xml = tmp_path / "junit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--rootdir=.", f"--tb={tb}", f"--junitxml={xml}", "tests"],
        cwd=tmp_path, capture_output=True, check=False,
    )  # fmt: skip
    red = junit.parse_junit(xml)
    reason = Reason(runtime=("toy/calc.py",))

    def shows(name: str, why: Reason = reason) -> bool:
        return why.shows_bug(red.tests[f"tests.test_fix::{name}"])

    assert shows("test_assertion") and shows("test_did_not_raise")
    assert shows("test_through_runtime")
    assert not shows("test_outside") and not shows("test_import")
    assert not shows("test_fixture")
    assert shows("test_outside", Reason(runtime=("toy/calc.py",), raises="KeyError"))
    assert not shows("test_fixture", Reason(raises="AssertionError"))
    assert not shows("test_through_runtime", Reason(runtime=("toy/other.py",)))


@pytest.mark.parametrize(
    ("rc", "outcomes", "why"),
    [
        (0, ("passed",), None),
        (1, ("passed", "failed"), None),
        (5, (), None),
        (0, ("failed",), "exited 0 but its JUnit has 1 failure(s)/error(s)"),
        (1, ("passed",), "exited 1 but its JUnit records no failure"),
        (2, ("passed", "skipped"), "exited 2 but its JUnit records no failure"),
    ],
)
def test_exit_code_guard(
    rc: int, outcomes: tuple[Outcome, ...], why: str | None
) -> None:
    rep = report(*(outcome(f"t{i}", o) for i, o in enumerate(outcomes)))
    g = exit_code("red", rc, rep)
    assert (g.message if g else None) == (
        f"red: pytest {why}" + GUARD_TAIL if why else None
    )


GUARD_TAIL = ": its results cannot be trusted (see its log)"


def test_flaky_guard() -> None:
    a = report(outcome("x", "passed"), outcome("y", "passed"))
    b = report(outcome("x", "failed"), outcome("y", "passed"))
    c = report(outcome("y", "passed"))
    assert flaky([a, a]) is None
    g = flaky([a, b, c])
    assert g is not None and g.tests == ("m::x",) and "across 3 runs" in g.message


def test_a_module_that_does_not_import_is_one_line_naming_what_it_lacks(
    tmp_path: Path,
) -> None:
    """Real pytest: a test module whose import needs a module the venv lacks
    is named by its file and that module, with what to do."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_audio.py").write_text(
        "import forkkit_no_such_audio_lib\n\ndef test_x():\n    pass\n"
    )
    (tests / "test_ok.py").write_text("def test_y():\n    pass\n")
    xml = tmp_path / "junit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--continue-on-collection-errors",
         f"--junitxml={xml}", "tests"],
        cwd=tmp_path, capture_output=True, check=False,
    )  # fmt: skip
    problems = run_problems("related", junit.parse_junit(xml))
    assert problems == [
        "related run: tests/test_audio.py cannot be collected: missing module "
        "'forkkit_no_such_audio_lib'; add it to [testenv] extra, or leave the "
        "module out of the fix's suites"
    ]


def test_a_validation_error_of_a_class_the_fix_changes_shows_the_bug() -> None:
    """pydantic raises it from its own code (the traceback never enters the
    fix's files), but it names the model: one the fix's change lies in."""
    message = (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for "
        "ChatMessage\nannotations\n  Input should be a valid dictionary"
    )
    frames = ("tests/test_x.py", "/venv/lib/pydantic/main.py")
    red = junit.TestOutcome(
        "m::t", "failed", 0.0, "ValidationError", message, "", frames
    )
    reason = Reason(runtime=("vllm/protocol.py",), classes=("ChatMessage",))
    assert reason.shows_bug(red)
    assert not Reason(runtime=("vllm/protocol.py",), classes=("Other",)).shows_bug(red)
    setup = dataclasses.replace(red, outcome="error")
    assert not reason.shows_bug(setup)
