# SPDX-License-Identifier: Apache-2.0
"""The classification that decides whether a red/green proof is valid: each
category, each problem, and the failure kinds read from pytest's JUnit."""

from __future__ import annotations

import pytest

from forkkit.testing import junit
from forkkit.testing.classify import Category, classify, classify_test
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
                "red run: 1 collection error(s), e.g. m::broken: collection",
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
    ],
)
def test_failure_kind(message: str, text: str, kind: str) -> None:
    assert failure_kind(message, text) == kind
