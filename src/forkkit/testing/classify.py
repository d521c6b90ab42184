"""SWE-bench-style classification of a red (base) run against a green (fix) run."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from forkkit.errors import first_few
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


def failing(run: JunitReport) -> list[str]:
    """The tests that failed or errored in ``run``: only these can be
    FAIL_TO_PASS when ``run`` is red."""
    return [test_id for test_id, t in run.tests.items() if _bad(t)]


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


@dataclass(frozen=True, kw_only=True)
class Reason:
    """When a FAIL_TO_PASS test's red failure shows the bug: the test's own
    check failed (an assertion, ``pytest.fail``), or its traceback passes
    through one of the fix's ``runtime`` files (the bug raised there), or it
    raised the exception the fix declares as the bug (``[[fix]] raises``).
    An error at import, collection or fixture setup never does."""

    runtime: tuple[str, ...] = ()
    raises: str = ""  # the bug is this exception (its class name)
    # the classes the runtime files define: a validation error of one of
    # them (pydantic's "1 validation error for ChatMessage") is the bug's,
    # though the library raises it (its traceback never enters those files)
    classes: tuple[str, ...] = ()

    def shows_bug(self, t: TestOutcome) -> bool:
        """Whether ``t``'s red failure is the bug's."""
        if t.outcome != "failed":  # a setup error, or not a failure at all
            return False
        if t.is_assertion or (self.raises and t.kind == self.raises):
            return True
        if any(_in(frame, self.runtime) for frame in t.frames):
            return True
        about = _VALIDATION.search(t.message)
        return bool(about and about.group(1) in self.classes)


_VALIDATION = re.compile(r"\bvalidation errors? for (\w+)")
_ASSERTION = Reason()  # no runtime file, no declared exception


def _in(frame: str, runtime: Sequence[str]) -> bool:
    """Whether a traceback's file is one of ``runtime`` (tree-relative paths;
    a native traceback names them absolute)."""
    return any(frame == r or frame.endswith("/" + r) for r in runtime)


def load_problem(errors: Sequence[TestOutcome]) -> str:
    """A run's modules that could not be collected, in one line: the first
    module by its file and cause (the module the CPU venv lacks), and what to
    do."""
    first = errors[0]
    where = first.test_id
    if "::" not in where:  # a module's own collection error: its file
        where = where.replace(".", "/") + ".py"
    more = f" (and {len(errors) - 1} more module(s))" if len(errors) > 1 else ""
    cause = first.message or first.kind
    todo = (
        "add it to [testenv] extra, or leave the module out of the fix's suites"
        if cause.startswith("missing module")
        else "fix the module, or leave it out of the fix's suites"
    )
    return f"{where} cannot be collected: {cause}{more}; {todo}"


def run_problems(label: str, run: JunitReport) -> list[str]:
    """A run that cannot count: collection errors, or no test executed."""
    out = []
    if run.collection_errors:
        out.append(f"{label} run: {load_problem(run.collection_errors)}")
    if run.executed == 0:
        out.append(f"{label} run executed no tests")
    return out


def classify(
    red: JunitReport, green: JunitReport, *, reason: Reason | None = _ASSERTION
) -> Classification:
    """Classify all tests and list every reason the proof is not valid.

    A valid proof: both runs executed tests, nothing failed to collect, at
    least one FAIL_TO_PASS whose red failure shows the bug (``reason``; by
    default an assertion; ``None`` leaves that to :func:`wrong_reason`), and
    no PASS_TO_FAIL / FAIL_TO_FAIL.
    """
    groups: dict[str, list[str]] = {}
    for test_id in sorted(set(red.tests) | set(green.tests)):
        cat = classify_test(red.tests.get(test_id), green.tests.get(test_id))
        groups.setdefault(cat, []).append(test_id)
    problems: list[str] = []
    for label, run in (("red", red), ("green", green)):
        problems += run_problems(label, run)
    f2p = groups.get("FAIL_TO_PASS", [])
    if not f2p and red.executed:
        problems.append("no FAIL_TO_PASS test: the tests do not demonstrate the bug")
    crashed = [t for t in f2p if reason and not reason.shows_bug(red.tests[t])]
    if crashed:
        kinds = sorted({red.tests[t].kind for t in crashed})
        problems.append(
            f"{len(crashed)} FAIL_TO_PASS test(s) fail on base with "
            f"{', '.join(kinds)}, not an assertion (e.g. {crashed[0]})"
        )
    for bad in ("PASS_TO_FAIL", "FAIL_TO_FAIL", "MISSING"):
        if groups.get(bad):
            problems.append(f"{len(groups[bad])} {bad} test(s), e.g. {groups[bad][0]}")
    return Classification(by_category=groups, problems=tuple(problems))


GuardName = Literal["unresolved", "exit_code", "wrong_reason", "flaky"]
SHOWN_TESTS = 5  # tests named in a guard's message


@dataclass(frozen=True)
class GuardFinding:
    """What one guard found; ``blocking`` findings make the proof invalid."""

    guard: GuardName
    message: str
    tests: tuple[str, ...] = ()
    blocking: bool = True


def _green_state(t: TestOutcome | None) -> str:
    """``skipped``/``xfailed``/``xpassed`` when green did not resolve a test."""
    if t is None:
        return ""
    if t.mark:
        return t.mark
    return "skipped" if t.outcome == "skipped" else ""


def unresolved(red: JunitReport, green: JunitReport) -> GuardFinding | None:
    """Tests that fail on base (or xfail there) and, with the fix, are skipped,
    xfailed or xpassed: not resolved (SWE-bench counts them so)."""
    found: list[tuple[str, str]] = []
    for test_id, r in sorted(red.tests.items()):
        state = _green_state(green.tests.get(test_id))
        if state and (_bad(r) or r.mark == "xfailed"):
            found.append((test_id, state))
    if not found:
        return None
    return GuardFinding(
        "unresolved",
        f"{len(found)} test(s) that fail on base are not resolved on the fix "
        f"(skipped, xfailed or xpassed count as not resolved): "
        + first_few([f"{t} ({state})" for t, state in found], SHOWN_TESTS),
        tuple(t for t, _ in found),
    )


def _reason(t: TestOutcome) -> str:
    if t.outcome == "error":
        return f"setup error ({t.kind or 'unknown'})"
    return t.kind or "unknown"


def wrong_reason(
    red: JunitReport, f2p: list[str], *, reason: Reason
) -> GuardFinding | None:
    """FAIL_TO_PASS tests whose red failure is not the bug (:class:`Reason`):
    an error at import, collection or fixture setup, or an exception raised
    wholly outside the fix's runtime files."""
    wrong = [t for t in f2p if not reason.shows_bug(red.tests[t])]
    if not wrong:
        return None
    reasons = sorted({_reason(red.tests[t]) for t in wrong})
    kinds = sorted(
        {red.tests[t].kind for t in wrong if red.tests[t].outcome == "failed"}
    )
    hint = (
        f'; if the bug is that exception, declare it: [[fix]] raises = "{kinds[0]}"'
        if kinds
        else ""
    )
    return GuardFinding(
        "wrong_reason",
        f"{len(wrong)} FAIL_TO_PASS test(s) fail on base for the wrong reason "
        f"({', '.join(reasons)}): not an assertion, nor an exception raised "
        f"through the fix's runtime files (e.g. {wrong[0]}){hint}",
        tuple(wrong),
    )


def exit_code(name: str, returncode: int, report: JunitReport) -> GuardFinding | None:
    """pytest's exit status against its JUnit: non-zero with no failure
    recorded, or 0 with failures, make the run's results untrustworthy."""
    c = report.summary()
    bad = c["failed"] + c["error"] + c["collection_errors"]
    if returncode == 0 and bad:
        why = f"exited 0 but its JUnit has {bad} failure(s)/error(s)"
    elif returncode not in (0, 5) and not bad:
        why = f"exited {returncode} but its JUnit records no failure"
    else:
        return None
    return GuardFinding(
        "exit_code",
        f"{name}: pytest {why}: its results cannot be trusted (see its log)",
    )


def flaky(reports: list[JunitReport]) -> GuardFinding | None:
    """Tests whose outcome differs between runs of the same tree (absent counts)."""
    ids = sorted({t for r in reports for t in r.tests})
    mixed = [
        t
        for t in ids
        if len({r.tests[t].outcome if t in r.tests else None for r in reports}) > 1
    ]
    if not mixed:
        return None
    return GuardFinding(
        "flaky",
        f"{len(mixed)} FLAKY test(s): outcomes differ across {len(reports)} runs of "
        f"the fix: {first_few(mixed, SHOWN_TESTS)}",
        tuple(mixed),
    )
