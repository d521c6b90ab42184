"""SWE-bench-style classification of a red (base) run against a green (fix) run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from forkkit.testing.junit import JunitReport, TestOutcome

Category = Literal[
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "PASS_TO_FAIL",
    "FAIL_TO_FAIL",
    "SKIPPED",
    "MISSING",
]
# Every category, in report order.
CATEGORIES: tuple[Category, ...] = get_args(Category)


def _ok(t: TestOutcome | None) -> bool:
    return t is not None and t.outcome == "passed"


def _bad(t: TestOutcome | None) -> bool:
    return t is not None and t.outcome in ("failed", "error")


def classify_test(red: TestOutcome | None, green: TestOutcome | None) -> Category:
    """One test's category from its red and green outcomes."""
    if red is None or green is None:
        return "MISSING"
    if red.outcome == "skipped" or green.outcome == "skipped":
        return "SKIPPED"
    if _bad(red) and _ok(green):
        return "FAIL_TO_PASS"
    if _ok(red) and _ok(green):
        return "PASS_TO_PASS"
    if _ok(red) and _bad(green):
        return "PASS_TO_FAIL"
    return "FAIL_TO_FAIL"


@dataclass(frozen=True)
class Classification:
    """Every test id grouped by category, and the verdict on the proof."""

    by_category: dict[str, list[str]] = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.problems

    def ids(self, category: Category) -> list[str]:
        return self.by_category.get(category, [])


def classify(red: JunitReport, green: JunitReport) -> Classification:
    """Classify all tests and list every reason the proof is not valid.

    A valid proof: both runs executed tests, nothing failed to collect, at
    least one FAIL_TO_PASS whose red failure is an assertion (not an import or
    other crash), and no PASS_TO_FAIL / FAIL_TO_FAIL.
    """
    groups: dict[str, list[str]] = {}
    for test_id in sorted(set(red.tests) | set(green.tests)):
        cat = classify_test(red.tests.get(test_id), green.tests.get(test_id))
        groups.setdefault(cat, []).append(test_id)
    problems: list[str] = []
    for label, run in (("red", red), ("green", green)):
        if run.collection_errors:
            first = run.collection_errors[0]
            problems.append(
                f"{label} run: {len(run.collection_errors)} collection error(s), "
                f"e.g. {first.test_id}: {first.message or first.kind}"
            )
        if run.executed == 0:
            problems.append(f"{label} run executed no tests")
    f2p = groups.get("FAIL_TO_PASS", [])
    if not f2p and red.executed:
        problems.append("no FAIL_TO_PASS test: the tests do not demonstrate the bug")
    crashes = [t for t in f2p if not red.tests[t].is_assertion]
    if crashes:
        kinds = sorted({red.tests[t].kind for t in crashes})
        problems.append(
            f"{len(crashes)} FAIL_TO_PASS test(s) fail on base with "
            f"{', '.join(kinds)}, not an assertion (e.g. {crashes[0]})"
        )
    for bad in ("PASS_TO_FAIL", "FAIL_TO_FAIL", "MISSING"):
        if groups.get(bad):
            problems.append(f"{len(groups[bad])} {bad} test(s), e.g. {groups[bad][0]}")
    return Classification(by_category=groups, problems=tuple(problems))
