"""Read pytest's JUnit XML into typed outcomes (never scrape terminal text)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from forkkit.errors import ForkkitError
from forkkit.patches.testids import junit_id

Outcome = Literal["passed", "failed", "error", "skipped"]
Mark = Literal["", "xfailed", "xpassed"]
XPASS_PROPERTY = "forkkit_xpassed"  # set by scripts/forkkit_guard.py
_EXC = re.compile(
    r"^E\s+([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failed)|Failed)\b",
    re.M,
)


@dataclass(frozen=True)
class TestOutcome:
    """One test case's result."""

    test_id: str  # "module.path::name" (class-qualified where pytest says so)
    outcome: Outcome
    seconds: float
    kind: str = ""  # exception kind for failed/error: "AssertionError", ...
    message: str = ""
    mark: Mark = ""  # xfail-marked: "xfailed" (a skip) or "xpassed" (a pass)
    frames: tuple[str, ...] = ()  # the files its failure's traceback passes through

    @property
    def is_assertion(self) -> bool:
        """The test's own check failed: an assertion, or ``pytest.fail`` and
        ``pytest.raises``' "DID NOT RAISE" (pytest's ``Failed``)."""
        return self.kind in ("AssertionError", "Failed")


@dataclass(frozen=True)
class JunitReport:
    """All cases of one pytest run, plus what was not a test at all."""

    tests: dict[str, TestOutcome] = field(default_factory=dict)
    collection_errors: tuple[TestOutcome, ...] = ()
    seconds: float = 0.0

    def count(self, outcome: Outcome) -> int:
        return sum(1 for t in self.tests.values() if t.outcome == outcome)

    @property
    def executed(self) -> int:
        """Tests that actually ran (not skipped, not collection errors)."""
        return sum(1 for t in self.tests.values() if t.outcome != "skipped")

    def counts_text(self) -> str:
        """The counts in words (``109 passed, 14 failed``), zeros left out."""
        parts = [f"{n} {k.replace('_', ' ')}" for k, n in self.summary().items() if n]
        return ", ".join(parts) or "no results"

    def summary(self) -> dict[str, int]:
        return {
            "passed": self.count("passed"),
            "failed": self.count("failed"),
            "error": self.count("error"),
            "skipped": self.count("skipped"),
            "collection_errors": len(self.collection_errors),
        }


# a traceback entry's location: "toy/calc.py:2: TypeError", "a/b.py:7: in f"
# (pytest's long and short styles), or 'File "/x/a/b.py", line 2' (native)
_FRAME = re.compile(
    r'^([^\s:"]+\.py):\d+:(?: |$)|^\s*File "([^"]+\.py)", line \d+', re.M
)


def traceback_files(text: str) -> tuple[str, ...]:
    """The files a failure's traceback passes through, in order, each once."""
    found = [a or b for a, b in _FRAME.findall(text)]
    return tuple(dict.fromkeys(found))


_MISSING = re.compile(r"No module named '([\w.]+)'")
_E_LINE = re.compile(r"^E\s+(\S.*)$", re.M)


def load_cause(message: str, text: str) -> str:
    """Why a module could not be collected, in a few words: the module the
    venv lacks (``missing module 'librosa'``), else pytest's last ``E`` line."""
    missing = _MISSING.findall(text) or _MISSING.findall(message)
    if missing:
        return f"missing module '{missing[-1]}'"
    lines = _E_LINE.findall(text)
    return (lines[-1].strip() if lines else message.strip())[:200] or "collection"


def failure_kind(message: str, text: str) -> str:
    """The exception class behind a failure, from pytest's message and report."""
    if "collection failure" in message or "ERROR collecting" in text:
        return "collection"
    said = message.strip()  # an assertion's diff may show other exceptions' E lines
    if said.startswith(("assert ", "AssertionError")):
        return "AssertionError"
    if said.startswith("Failed:"):
        return "Failed"
    m = _EXC.findall(text)
    if m:
        return str(m[-1]).rsplit(".", 1)[-1]
    head = message.strip()
    if head.startswith("assert ") or head.startswith("AssertionError"):
        return "AssertionError"
    m2 = re.match(r"((?:[A-Za-z_][\w.]*)?(?:Error|Exception|Failed))\b", head)
    if m2:
        return m2.group(1).rsplit(".", 1)[-1]
    if re.search(r"^E\s+assert\b", text, re.M):
        return "AssertionError"
    return "unknown"


def _text(case: ET.Element) -> str:
    """The report text of a case's failure or error (empty when none)."""
    for child in case:
        if child.tag in ("failure", "error"):
            return child.text or ""
    return ""


def _mark(case: ET.Element) -> Mark:
    """``xfailed``/``xpassed`` for an xfail-marked test case, else ``""``."""
    for child in case:
        if child.tag == "skipped" and child.get("type") == "pytest.xfail":
            return "xfailed"
        if child.tag in ("failure", "error"):
            return ""
    for prop in case.iter("property"):
        if prop.get("name") == XPASS_PROPERTY:
            return "xpassed"
    return ""


def parse_junit_text(xml_text: str, source: str = "junit") -> JunitReport:
    """Parse JUnit XML produced by pytest (xunit1 or xunit2)."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ForkkitError(f"{source}: unreadable JUnit XML ({exc})") from None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    tests: dict[str, TestOutcome] = {}
    collection: list[TestOutcome] = []
    total = 0.0
    for suite in suites:
        total += float(suite.get("time", "0") or 0)
        for case in suite.iter("testcase"):
            classname = case.get("classname", "")
            name = case.get("name", "")
            test_id = junit_id(classname, name)
            secs = float(case.get("time", "0") or 0)
            outcome: Outcome = "passed"
            kind = message = ""
            frames: tuple[str, ...] = ()
            mark = _mark(case)
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "failed" if child.tag == "failure" else "error"
                    message = child.get("message", "")
                    kind = failure_kind(message, child.text or "")
                    frames = traceback_files(child.text or "")
                    break
                if child.tag == "skipped":
                    outcome = "skipped"
                    message = child.get("message", "")
            result = TestOutcome(
                test_id, outcome, secs, kind, message[:500], mark, frames
            )
            if (not classname and outcome == "error") or result.kind == "collection":
                cause = load_cause(message, _text(case))
                collection.append(
                    TestOutcome(test_id, "error", secs, "collection", cause)
                )
            else:
                tests[test_id] = result
    return JunitReport(tests=tests, collection_errors=tuple(collection), seconds=total)


def parse_junit(path: Path) -> JunitReport:
    """Parse a JUnit file; a missing file means pytest never got to write one."""
    if not path.is_file():
        raise ForkkitError(f"{path}: no JUnit XML; pytest did not run to completion")
    return parse_junit_text(path.read_text(), str(path))


@dataclass(frozen=True)
class LoadError:
    """A module pytest could not collect: its dotted name and what pytest said."""

    module: str
    text: str  # the error's message and traceback


def load_errors(path: Path) -> tuple[LoadError, ...]:
    """The collection errors of a JUnit file (none when it is missing or bad)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return ()
    out: list[LoadError] = []
    for case in root.iter("testcase"):
        if case.get("classname"):
            continue
        for child in case:
            if child.tag == "error":
                text = (child.get("message") or "") + "\n" + (child.text or "")
                out.append(LoadError(case.get("name", ""), text))
    return tuple(out)


def subset_xml(xml: str, keep: Iterable[str]) -> str:
    """The JUnit XML with only the testcases whose id is in ``keep``."""
    wanted = set(keep)
    root = ET.fromstring(xml)
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    for suite in suites:
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        seconds = 0.0
        for case in list(suite.findall("testcase")):
            if junit_id(case.get("classname", ""), case.get("name", "")) not in wanted:
                suite.remove(case)
                continue
            counts["tests"] += 1
            seconds += float(case.get("time", "0") or 0)
            tags = {child.tag for child in case}
            counts["failures"] += "failure" in tags
            counts["errors"] += "error" in tags
            counts["skipped"] += "skipped" in tags
        for attr, n in counts.items():
            suite.set(attr, str(n))
        suite.set("time", f"{seconds:.3f}")
    return ET.tostring(root, encoding="unicode")
