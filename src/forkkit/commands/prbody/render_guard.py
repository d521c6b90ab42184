# SPDX-License-Identifier: Apache-2.0
"""The PR description of a tests-only series (a red/green report in mode
``guard``): upstream has the fix, so the PR adds the fix's tests. Its title
is a ``[Test]`` one, it says what the PR still adds, and its proof is the
guard (every carried test passes on the pin). Pure."""

from __future__ import annotations

import re

from forkkit.commands.prbody.model import (
    changed_tests,
    count_text,
    counts_cells,
    env_prefix,
    purpose_head,
    pytest_command,
    shown,
)
from forkkit.output.report import md_table
from forkkit.services.proof.doc import ProofDoc

_TAGS = re.compile(r"^((?:\[[^\]]*\])+)\s*")


def guard_title(title: str) -> str:
    """``[Bugfix][Spec Decode] Recover X`` -> ``[Test][Spec Decode] Regression
    tests: Recover X`` (``[Test]`` in front when there is no ``[Bugfix]``)."""
    m = _TAGS.match(title)
    tags, rest = (m.group(1), title[m.end() :]) if m else ("", title)
    tags = tags.replace("[Bugfix]", "[Test]") if "[Bugfix]" in tags else "[Test]" + tags
    return f"{tags} Regression tests: {rest}".strip()


def guard_purpose(rg: ProofDoc, *, title: str) -> list[str]:
    """The ``[Test]`` title and what the PR still adds."""
    label = rg.upstream.label or "upstream"
    passing = len(rg.ids("PASS_TO_PASS"))
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
    names = ", ".join(f"`{p.name}`" for p in rg.patches)
    return [*out, f"The series: {names}." if names else "", ""]


def guard_test_plan(rg: ProofDoc) -> list[str]:
    """One pytest run: the tests on upstream with this PR."""
    label = rg.upstream.label or "upstream"
    green = pytest_command(rg.green.command)
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


def guard_verdict(rg: ProofDoc) -> list[str]:
    """The guard's verdict and its runs."""
    label = rg.upstream.label or "upstream"
    out = ["## Test Result", ""]
    if rg.valid:
        n = len(rg.ids("PASS_TO_PASS"))
        out.append(f"Guard: ✅ **valid**: all {n} tests this PR adds pass on {label}.")
    else:
        out += ["Guard: ❌ **invalid**:", ""]
        out += [f"- {p}" for p in rg.problems]
    rows = [["This PR's tests", label, *counts_cells(rg.green.counts)]]
    if rg.related:
        rows.append(["Related suites", label, *counts_cells(rg.related.counts)])
    headers = ["Run", "Runtime", "Passed", "Failed", "Errors", "Skipped"]
    out += ["", md_table(headers, rows)]
    if rg.related:
        suites = ", ".join(f"`{s}`" for s in rg.related_suites)
        out.append(f"Related suites ({suites}): {count_text(rg.related.counts)}.")
    if rg.deselected:
        out.append(f"Deselected in every run: {shown(rg.deselected, 10)}.")
    return [*out, ""]
