# SPDX-License-Identifier: Apache-2.0
"""The PR description of a tests-only series (a red/green report in mode
``guard``): upstream has the fix, so the PR adds the fix's tests. Its title
is a ``[Test]`` one, it says what the PR still adds, and its proof is the
guard (every carried test passes on the pin). Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from forkkit.commands.prbody.model import (
    changed_tests,
    count_text,
    counts_cells,
    env_prefix,
    purpose_head,
    pytest_command,
    shown,
    strings,
)
from forkkit.docpath import get
from forkkit.output.report import md_table

_TAGS = re.compile(r"^((?:\[[^\]]*\])+)\s*")


def guard_title(title: str) -> str:
    """``[Bugfix][Spec Decode] Recover X`` -> ``[Test][Spec Decode] Regression
    tests: Recover X`` (``[Test]`` in front when there is no ``[Bugfix]``)."""
    m = _TAGS.match(title)
    tags, rest = (m.group(1), title[m.end() :]) if m else ("", title)
    tags = tags.replace("[Bugfix]", "[Test]") if "[Bugfix]" in tags else "[Test]" + tags
    return f"{tags} Regression tests: {rest}".strip()


def guard_purpose(rg: Mapping[str, Any], *, title: str) -> list[str]:
    """The ``[Test]`` title and what the PR still adds."""
    label = get(rg, "upstream.label") or "upstream"
    passing = len(strings((rg.get("classification") or {}).get("PASS_TO_PASS")))
    prompt = "Why these tests belong upstream; link the fix upstream merged."
    out = purpose_head(guard_title(title) if title else "", prompt=prompt)
    out += [
        "## What this PR still adds",
        "",
        f"Upstream has the fix ({label}; see below), so this PR changes no runtime "
        f"file. It adds the fix's tests, {passing} of which pass on {label}: "
        + ", ".join(changed_tests(rg))
        + ".",
    ]
    patches = rg.get("patches")
    names = ", ".join(
        f"`{p.get('name')}`"
        for p in (patches if isinstance(patches, list) else [])
        if isinstance(p, Mapping)
    )
    return [*out, f"The series: {names}." if names else "", ""]


def guard_test_plan(rg: Mapping[str, Any]) -> list[str]:
    """One pytest run: the tests on upstream with this PR."""
    label = get(rg, "upstream.label") or "upstream"
    green = pytest_command(str(get(rg, "green.command") or ""))
    return [
        "## Test Plan",
        "",
        f"The tests this PR adds, with the related suites, on {label} with this "
        "PR applied (there is no runtime change to revert, so no red run). In a "
        "vLLM checkout of this branch:",
        "",
        "```bash",
        f"{env_prefix(rg)} {green}",
        "```",
        "",
        "The same with forkkit: `forkkit red-green` (a tests-only series is proven "
        "as a guard), and `forkkit verify .forkkit/reports/red_green/red_green.json`.",
        "",
    ]


def guard_verdict(rg: Mapping[str, Any]) -> list[str]:
    """The guard's verdict and its runs."""
    label = get(rg, "upstream.label") or "upstream"
    out = ["## Test Result", ""]
    if rg.get("valid"):
        n = len(strings((rg.get("classification") or {}).get("PASS_TO_PASS")))
        out.append(f"Guard: ✅ **valid**: all {n} tests this PR adds pass on {label}.")
    else:
        out += ["Guard: ❌ **invalid**:", ""]
        out += [f"- {p}" for p in strings(rg.get("problems"))]
    rows = [["This PR's tests", label, *counts_cells(get(rg, "green.counts"))]]
    if rg.get("related"):
        rows.append(["Related suites", label, *counts_cells(get(rg, "related.counts"))])
    headers = ["Run", "Runtime", "Passed", "Failed", "Errors", "Skipped"]
    out += ["", md_table(headers, rows)]
    if rg.get("related"):
        suites = ", ".join(f"`{s}`" for s in strings(rg.get("related_suites")))
        out.append(
            f"Related suites ({suites}): {count_text(get(rg, 'related.counts'))}."
        )
    deselected = strings(rg.get("deselected"))
    if deselected:
        out.append(f"Deselected in every run: {shown(deselected, 10)}.")
    return [*out, ""]
