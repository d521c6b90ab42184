# SPDX-License-Identifier: Apache-2.0
"""The proof's guards (SWE-bench's, plus pytest's exit code) and the flake
check: green again, in reversed and seeded random order (``--repeat``)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

from forkkit.fork.tree import ForkTree
from forkkit.output.progress import say
from forkkit.services.proof.model import STEM, RepeatCheck
from forkkit.services.proof.plan import ProofSpec
from forkkit.testing.classify import (
    Classification,
    GuardFinding,
    Reason,
    exit_code,
    flaky,
    unresolved,
    wrong_reason,
)
from forkkit.testing.forkruns import ForkRuns, SuiteRun
from forkkit.testing.junit import JunitReport
from forkkit.testing.pytest_run import ORDER_ENV


def guard_findings(
    red: SuiteRun,
    green: SuiteRun,
    classification: Classification,
    *,
    runs: Sequence[SuiteRun | None],
    reason: Reason,
) -> list[GuardFinding]:
    """Every guard's finding: unresolved FAIL_TO_PASS tests, red failing for
    the wrong reason (``reason``: what shows the bug), and each of ``runs``
    (pytest invocations) whose exit status contradicts its JUnit."""
    found: list[GuardFinding | None] = []
    if red.report is not None and green.report is not None:
        found.append(unresolved(red.report, green.report))
        f2p = classification.ids("FAIL_TO_PASS")
        found.append(wrong_reason(red.report, f2p, reason=reason))
    for run in runs:
        if run is not None and run.report is not None:
            found.append(exit_code(run.name, run.run.returncode, run.report))
    return [g for g in found if g is not None]


def repeat_orders(n: int, seed: int) -> tuple[str, ...]:
    """``n`` test orders: reversed first, then random ones seeded from ``seed``."""
    return tuple("reversed" if i == 0 else f"random:{seed + i - 1}" for i in range(n))


def repeat_green(
    tree: ForkTree,
    plan: ProofSpec,
    settings: ForkRuns,
    *,
    green: SuiteRun,
    n: int,
    seed: int | None = None,
) -> tuple[RepeatCheck[SuiteRun], GuardFinding | None]:
    """Green ``n`` more times on the fix, each in another order and never
    from the result cache; a test whose outcome differs is FLAKY."""
    seed = seed if seed is not None else random.SystemRandom().randrange(1, 2**31)
    orders = repeat_orders(n, seed)
    runs: list[SuiteRun] = []
    for i, order in enumerate(orders, 1):
        env = settings.env
        env = dataclasses.replace(env, env={**env.env, ORDER_ENV: order})
        fresh = dataclasses.replace(settings, env=env, cache=None)
        say(f"repeat {i}/{n}: green in {order} order")
        runs.append(fresh.run(tree, plan.head, plan.targets, name=f"{STEM}_repeat{i}"))
    reports: list[JunitReport] = [
        r.report for r in (green, *runs) if r.report is not None
    ]
    finding = flaky(reports)
    flaky_ids = finding.tests if finding else ()
    return RepeatCheck(seed, orders, tuple(runs), flaky_ids), finding
