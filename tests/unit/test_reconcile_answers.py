# SPDX-License-Identifier: Apache-2.0
"""The reconcile answers, table-driven on hand-made cells (pure: no git, no
pytest): cross passes, stacking, resend gaps and the resend table."""

from __future__ import annotations

import pytest

from forkkit.services.reconcile.answers import (
    ResendCell,
    StackBuild,
    Trees,
    cross_pass,
    resend_gaps,
    stacks_cleanly,
)
from forkkit.services.reconcile.model import Cell, SideTests
from forkkit.services.reconcile.render_answers import resend_md
from forkkit.services.repro.model import ResendRow, ScriptRun
from forkkit.testing.classify import Classification
from forkkit.testing.junit import JunitReport, Outcome
from forkkit.testing.junit import TestOutcome as Case


def _cell(runtime: str, **outcomes: Outcome) -> Cell:
    tests = {f"m::{k}": Case(f"m::{k}", v, 0.0) for k, v in outcomes.items()}
    return Cell("ours", runtime, "ran", report=JunitReport(tests=tests))


OURS = SideTests(
    "ours",
    "ours",
    ("m.py",),
    "base",
    "ours",
    Classification({"FAIL_TO_PASS": ["m::a", "m::b"], "PASS_TO_PASS": ["m::c"]}),
)


def test_cross_pass_counts_passes_and_fail_to_pass_apart() -> None:
    cells = {
        ("ours", "base"): _cell("base", a="failed", b="failed", c="passed"),
        ("ours", "ours"): _cell("ours", a="passed", b="passed", c="passed"),
        ("ours", "theirs"): _cell("theirs", a="passed", b="skipped"),
    }
    c = cross_pass(OURS, "theirs", cells)
    # b skipped and c absent in that cell: neither is a pass
    assert (c.total, c.passed, c.f2p_total, c.f2p_passed) == (3, 1, 2, 1)
    assert c.failing == ("m::b", "m::c")
    assert c.describe() == "1/3 pass (FAIL_TO_PASS 1/2)"
    gone = cross_pass(OURS, "nowhere", cells)
    assert gone.gap == "not run" and gone.describe() == "not measured (not run)"
    assert gone.failing == ()


@pytest.mark.parametrize(
    ("builds", "verdict"),
    [
        (
            [
                StackBuild("ours+theirs", tree="t1"),
                StackBuild("theirs+ours", tree="t1"),
            ],
            "yes: both orders merge 3-way cleanly, into the same tree",
        ),
        (
            [
                StackBuild("ours+theirs", tree="t1"),
                StackBuild("theirs+ours", tree="t2"),
            ],
            "yes: both orders merge 3-way cleanly, into two different trees",
        ),
        (
            [
                StackBuild("ours+theirs", tree="t1"),
                StackBuild("theirs+ours", conflict=("x.py: hunk 1/1",)),
            ],
            "no: theirs+ours conflicts",
        ),
        ([StackBuild("ours+theirs", tree="t1")], "not built"),
        ([StackBuild("base", tree="t0")], "not built"),
    ],
)
def test_stacks_cleanly(builds: list[StackBuild], verdict: str) -> None:
    assert stacks_cleanly(builds) == verdict


def _run(*rows: tuple[int, str, int]) -> ScriptRun:
    return ScriptRun(
        "0.30.0",
        {},
        tuple(
            ResendRow(n, kind, n, cached, cached, n - cached)
            for n, kind, cached in rows
        ),
        1.0,
    )


def test_resend_gaps_and_reused_cells() -> None:
    ok = ResendCell("ours", run=_run((100, "identical", 96)), tree="t")
    cells = [
        ResendCell("base", error="boom"),
        ok,
        ResendCell("ours+theirs", run=ok.run, tree="t", reused="ours"),
    ]
    wanted = ["base", "ours", "theirs", "ours+theirs"]
    assert resend_gaps(cells, wanted) == [("base", "boom"), ("theirs", "not run")]


def test_resend_table_lists_every_kind_and_length_in_any_column() -> None:
    """Columns may differ in what they measured; rows come from all of them,
    labelled with the prompt length when there are several."""
    trees = Trees(
        resend=(
            ResendCell("base", run=_run((100, "identical", 64))),
            ResendCell(
                "ours", run=_run((100, "identical", 96), (200, "extended", 192))
            ),
            ResendCell("theirs", error="resend/repro-theirs.log: failed"),
        ),
        runtimes=("base", "ours", "theirs"),
        setup="preset `p`",
    )
    md = "\n".join(resend_md(trees))
    assert "| identical (100) | 100 | 64 (36) | 96 (4) | not measured |" in md
    assert "| extended (200) | 200 | not measured | 192 (8) | not measured |" in md
    assert "- theirs: resend/repro-theirs.log: failed" in md
    assert resend_md(Trees()) == [
        "- **Resend reproduction**: not run (`--resend off`)."
    ]
