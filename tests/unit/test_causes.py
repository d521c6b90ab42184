"""Related-suite failures grouped by cause, with the deselect lines to paste."""

from __future__ import annotations

from forkkit.testing.causes import deselect_lines, failure_causes, summary
from forkkit.testing.junit import parse_junit_text

HUB = (
    "OSError: We couldn't connect to 'https://huggingface.co' to load the files; "
    "can't load the configuration of 'Qwen/Qwen3-0.6B'"
)
# as vLLM's ModelConfig says it, offline (measured on vLLM 0.30.0's suites)
REPO_ID = (
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for "
    "ModelConfig Value error, Invalid repository ID or local directory "
    "specified: 'facebook/opt-125m'. Please verify: 1. Provide a valid Hugging "
    "Face repository ID."
)
TRITON = "RuntimeError: vLLM on x86 CPUs requires Triton (triton-cpu)"
CASES = [
    ("tests.test_a", "test_one", HUB),
    ("tests.test_a", "test_two", HUB),
    ("tests.test_b", "test_tri", TRITON),
    ("tests.test_b", "test_bug", "AssertionError: assert 1 == 2"),
    ("tests.test_c", "test_opt", REPO_ID),
]
XML = (
    '<testsuites><testsuite name="pytest">'
    + "".join(
        f'<testcase classname="{c}" name="{n}"><failure message="{m}">x</failure>'
        "</testcase>"
        for c, n, m in CASES
    )
    + "</testsuite></testsuites>"
)


def test_failures_are_grouped_by_cause_most_first() -> None:
    report = parse_junit_text(XML)
    causes = failure_causes(report, list(report.tests))
    assert [(c.label, c.count, c.environment) for c in causes] == [
        ("cannot reach the Hub: Qwen/Qwen3-0.6B", 2, True),
        ("AssertionError", 1, False),
        ("cannot reach the Hub: facebook/opt-125m", 1, True),
        ("needs Triton (the CPU venv has none)", 1, True),
    ]
    assert summary(causes).startswith(
        "2 \u00d7 cannot reach the Hub: Qwen/Qwen3-0.6B; 1 \u00d7 AssertionError"
    )
    node = {
        "tests.test_a::test_one": "tests/test_a.py::test_one",
        "tests.test_a::test_two": "tests/test_a.py::test_two",
        "tests.test_b::test_tri": "tests/test_b.py::test_tri",
    }
    assert deselect_lines(causes, lambda t: node.get(t, t)) == [
        "    # cannot reach the Hub: Qwen/Qwen3-0.6B",
        '    "tests/test_a.py::test_one",',
        '    "tests/test_a.py::test_two",',
        "    # cannot reach the Hub: facebook/opt-125m",
        '    "tests.test_c::test_opt",',
        "    # needs Triton (the CPU venv has none)",
        '    "tests/test_b.py::test_tri",',
    ]
