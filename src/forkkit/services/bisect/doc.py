# SPDX-License-Identifier: Apache-2.0
"""``bisect.json``: the bisect report, one type that writes it
(:func:`bisect_doc`) and reads it (``BisectDoc.read``). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from forkkit.output.report import BISECT, Report
from forkkit.services.bisect.model import BisectResult, Step


@dataclass(frozen=True)
class FixBisectDoc:
    """Where upstream took one fix, and every proof on the way."""

    fix: str
    url: str = ""
    good: str = ""  # the fix is needed here (the pin)
    bad: str = ""  # and absorbed here, when ``first`` is set
    commits: int = 0
    proofs: int = 0
    fail_to_pass: tuple[str, ...] = ()
    tests_from: str = ""
    first: Step | None = None  # the first commit that absorbs the fix
    pr: int | None = None
    applied_upstream: str = ""
    releases: bool = False
    recorded: str = ""  # what patches/retired.toml says
    agrees: bool = True
    steps: tuple[Step, ...] = ()
    unmeasured: tuple[str, ...] = ()  # commits right before it, not measured


@dataclass(frozen=True)
class BisectDoc(Report):
    """One entry per fix."""

    DOC = BISECT

    fixes: tuple[FixBisectDoc, ...] = ()


def bisect_doc(results: Sequence[BisectResult]) -> BisectDoc:
    """``results`` as the report's document."""
    return BisectDoc(
        fixes=tuple(
            FixBisectDoc(
                fix=r.fix,
                url=r.url,
                good=r.good,
                bad=r.bad,
                commits=r.commits,
                proofs=len(r.steps),
                fail_to_pass=r.fail_to_pass,
                tests_from=r.tests_from,
                first=r.first,
                pr=r.pr,
                applied_upstream=r.applied_upstream,
                releases=r.releases,
                recorded=r.recorded,
                agrees=r.agrees,
                steps=r.steps,
                unmeasured=tuple(s.commit for s in r.unmeasured),
            )
            for r in results
        )
    )
