# SPDX-License-Identifier: Apache-2.0
"""Pure analysis for rebasing the series: inputs, patch surgery, verdicts.

Nothing here runs git or pytest; :mod:`forkkit.services.rebase.steps` does
the I/O and feeds the results in.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath

from forkkit.errors import ForkkitError
from forkkit.patches.fixes import FIX_TABLE
from forkkit.patches.paths import is_test_path
from forkkit.patches.testids import in_test_file, target_file
from forkkit.services.rebase.model import SemanticCheck
from forkkit.testing.classify import Reason
from forkkit.testing.junit import JunitReport

# --- inputs -----------------------------------------------------------------


def repin_toml(text: str, changes: dict[str, str], optional: Iterable[str] = ()) -> str:
    """``fork.toml`` text with only the given ``[upstream]`` string keys changed.

    Every other byte is preserved (comments, order, other tables). Keys named in
    ``optional`` are changed only where present; other keys that are missing
    (``git_commit`` on a fork that never pinned a commit) are added at the end
    of ``[upstream]``.
    """
    lines = text.splitlines(keepends=True)
    section, end = "", -1
    seen: set[str] = set()
    for i, line in enumerate(lines):
        head = re.match(r"^\s*(\[\[?)([^\]]+)\]\]?\s*(#.*)?$", line)
        if head:  # [[fix]] is an array of tables, never [upstream]
            section = head.group(1) + head.group(2).strip()
            continue
        if section != "[upstream":
            continue
        if line.strip() and not line.lstrip().startswith("#"):
            end = i
        for key, value in changes.items():
            m = re.match(rf'^(\s*{re.escape(key)}\s*=\s*)"[^"\n]*"(.*)$', line, re.S)
            if m:
                lines[i] = f'{m.group(1)}"{value}"{m.group(2)}'
                seen.add(key)
    added = [k for k in changes if k not in seen and k not in set(optional)]
    if added and end < 0:
        raise ForkkitError(
            "fork.toml: no [upstream] table with keys to re-pin; add it and rerun"
        )
    if added:
        if not lines[end].endswith("\n"):
            lines[end] += "\n"
        lines[end] += "".join(f'{k} = "{changes[k]}"\n' for k in added)
    return "".join(lines)


_TABLE = re.compile(r"^\s*\[")
_ID = re.compile(r"""^\s*id\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.M)


def drop_fix_tables(text: str, ids: Iterable[str]) -> str:
    """``fork.toml`` text without the ``[[fix]]`` tables of ``ids`` (each from
    its ``[[fix]]`` line, and the comment lines right above it, to the next
    table); every other byte is preserved."""
    gone = set(ids)
    if not gone:
        return text
    lines = text.splitlines(keepends=True)
    heads = [i for i, ln in enumerate(lines) if _TABLE.match(ln)]
    drop: set[int] = set()
    for n, start in enumerate(heads):
        if not FIX_TABLE.match(lines[start]):
            continue
        end = heads[n + 1] if n + 1 < len(heads) else len(lines)
        while end - 1 > start and lines[end - 1].lstrip().startswith("#"):
            end -= 1  # the next table's own comments stay with it
        m = _ID.search("".join(lines[start:end]))
        if m and (m.group(1) or m.group(2)) in gone:
            first = start
            while first > 0 and lines[first - 1].lstrip().startswith("#"):
                first -= 1
            drop.update(range(first, end))
    new = "".join(ln for i, ln in enumerate(lines) if i not in drop)
    left = {d.get("id") for d in tomllib.loads(new).get("fix", [])}
    if left & gone:  # a layout the text edit could not follow
        raise ForkkitError(
            f"fork.toml: could not remove the [[fix]] table of "
            f"{sorted(left & gone)[0]}; write each [[fix]] as its own table, rerun"
        )
    return new


def split_runtime(
    files: Sequence[str], runtime_files: Sequence[str]
) -> tuple[list[str], list[str]]:
    """A patch's files as (runtime, test): fork.toml's runtime files and any
    non-test file are runtime; the rest are the patch's TEST changes."""
    runtime = [f for f in files if f in runtime_files or not is_test_path(f)]
    return runtime, [f for f in files if f not in runtime]


def patch_targets(focused_tests: Sequence[str], files: Sequence[str]) -> list[str]:
    """The pytest targets that demonstrate one patch.

    The focused tests of fork.toml whose file the patch touches; failing that,
    the test modules the patch touches.
    """
    mine = [t for t in focused_tests if target_file(t) in files]
    if mine:
        return mine
    return [
        f
        for f in files
        if is_test_path(f)
        and f.endswith(".py")
        and PurePosixPath(f).name != "conftest.py"
    ]


# --- patch surgery ----------------------------------------------------------


def conflict_regions(text: str) -> list[tuple[int, int]]:
    """1-based (first, last) lines of each ``<<<<<<<``..``>>>>>>>`` block."""
    regions = []
    start = 0
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("<<<<<<< "):
            start = n
        elif line.startswith(">>>>>>> ") and start:
            regions.append((start, n))
            start = 0
    return regions


def _sort_fail_to_pass(
    fail_to_pass: Sequence[str],
    red_new: JunitReport,
    *,
    conflicted: Sequence[str],
    reason: Reason,
) -> tuple[list[str], list[str], list[str], list[str]]:
    """The FAIL_TO_PASS tests as (passed, failed, broken, unchecked) there."""
    passed: list[str] = []
    failed: list[str] = []
    broken: list[str] = []
    unchecked: list[str] = []
    for t in fail_to_pass:
        outcome = red_new.tests.get(t)
        if any(in_test_file(t, f) for f in conflicted):
            unchecked.append(t)
        elif outcome and outcome.outcome == "passed":
            passed.append(t)
        elif outcome and reason.shows_bug(outcome):
            failed.append(t)
        else:
            broken.append(t)
    return passed, failed, broken, unchecked


def _semantic_note(check: SemanticCheck, red_new: JunitReport) -> str:
    """One sentence on the check: what passed, failed, could not run."""
    passed, failed, broken = check.passed, check.failed, check.broken
    ran = len(passed) + len(failed) + len(broken)
    if passed and len(passed) == len(check.fail_to_pass):
        note = "all its FAIL_TO_PASS tests pass on the new upstream without the fix"
    elif failed:
        note = (
            f"{len(failed)}/{ran} FAIL_TO_PASS tests still fail for the bug's "
            "reason on the new upstream without it"
        )
    elif passed:
        note = f"{len(passed)}/{ran} run FAIL_TO_PASS tests pass without it"
    else:
        note = "no FAIL_TO_PASS test passed or failed for the bug's reason there"
    if broken:
        kinds = sorted({red_new.tests[t].kind for t in broken if t in red_new.tests})
        note += (
            f"; {len(broken)} cannot run there ({', '.join(kinds) or 'missing'}): "
            "refresh the tests to decide"
        )
    if check.unchecked:
        note += f"; {len(check.unchecked)} not checked (their test file conflicts)"
    others = check.others_failing
    if others:
        kinds = sorted({red_new.tests[t].kind or "failure" for t in others})
        note += (
            f"; {len(others)} other test(s) of the patch fail there too "
            f"({', '.join(kinds)}): its tests may need refreshing"
        )
    return note


def semantic_verdict(
    targets: Sequence[str],
    fail_to_pass: Sequence[str],
    red_new: JunitReport,
    *,
    reason: Reason,
    conflicted_files: Sequence[str] = (),
) -> SemanticCheck:
    """Judge absorption: every old FAIL_TO_PASS test passes without the fix.

    Only a failure that shows the bug (``reason``: an assertion, an exception
    raised through the fix's runtime files, or the one it declares) says the
    bug is still there; a test that fails otherwise (an AttributeError of its
    harness, say) is *broken* on the new
    upstream and proves nothing either way. FAIL_TO_PASS tests in
    ``conflicted_files`` could not be run (their test changes conflict). The
    patch is absorbed only if every FAIL_TO_PASS test ran and passed. Other
    failing tests of the run are reported but do not decide the verdict.
    """
    passed, failed, broken, unchecked = _sort_fail_to_pass(
        fail_to_pass, red_new, conflicted=conflicted_files, reason=reason
    )
    f2p = set(fail_to_pass)
    others = sorted(
        t.test_id
        for t in red_new.tests.values()
        if t.outcome in ("failed", "error") and t.test_id not in f2p
    )
    check = SemanticCheck(
        tuple(targets),
        tuple(fail_to_pass),
        tuple(passed),
        tuple(failed),
        tuple(broken),
        tuple(unchecked),
        tuple(others),
    )
    return dataclasses.replace(check, note=_semantic_note(check, red_new))
