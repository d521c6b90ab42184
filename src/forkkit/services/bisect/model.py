# SPDX-License-Identifier: Apache-2.0
"""The bisection of an absorption (pure: the search, the steps, the result).

``absorbed(C)`` holds when every FAIL_TO_PASS test of the fix (measured red
to green on its pin) passes on upstream commit ``C`` with only the fix's
tests added: upstream has the behaviour without the fix's runtime change.
Given a commit where the fix is still needed (``good``, the pin) and one
where it is absorbed (``bad``), :func:`first_absorbed` finds the first
commit on the first-parent path between them where it holds, proving the
endpoint once and then halving the range: 32 commits take at most 6 proofs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

STEM = "bisect"
_PR = re.compile(r"\(#(\d+)\)\s*$|^Merge pull request #(\d+)\b")


def pr_number(subject: str) -> int | None:
    """The upstream PR a commit subject names (``... (#1234)``, GitHub's squash
    merge, or ``Merge pull request #1234``); None when it names none."""
    m = _PR.search(subject)
    if m is None:
        return None
    return int(m.group(1) or m.group(2))


@dataclass(frozen=True)
class Step:
    """One proof of the bisection: the commit and what its tests said."""

    commit: str
    subject: str
    absorbed: bool
    passed: tuple[str, ...]  # FAIL_TO_PASS tests passing without the fix
    failed: tuple[str, ...]  # failing there (the fix is still needed)
    broken: str = ""  # why the tests proved nothing there (not an assertion)
    tests: str = ""  # which text of the fix's tests ran ("the pin's", a line)


Probe = Callable[[str], Step]


@dataclass(frozen=True)
class Search:
    """What the search found: the first absorbing commit's index (None when
    the last commit does not absorb, or could not be measured), the proofs
    in the order they ran, and the commits right before it that could not be
    measured (the first absorbing one may be among them)."""

    index: int | None
    steps: tuple[Step, ...]
    unmeasured: tuple[int, ...] = ()


def first_absorbed(commits: Sequence[str], probe: Probe) -> Search:
    """Search ``commits`` (oldest first; the commit before them is known not
    to absorb) for the first absorbing commit.

    The last commit is proven first: when it does not absorb, there is
    nothing to find; when it cannot be measured, the commit before it is
    proven instead, and so on (never "not found" untried). Then the range
    is halved until the carried and the
    absorbed commit are neighbours (``git bisect``'s search); a commit that
    cannot be measured is skipped (``git bisect skip``): its nearest
    unmeasured neighbour is proven instead.
    """
    if not commits:
        return Search(None, ())
    steps: list[Step] = []
    absorbed = len(commits)
    skipped: set[int] = set()
    while absorbed > 0:  # the newest commit that can be measured
        step = probe(commits[absorbed - 1])
        steps.append(step)
        if step.absorbed:
            absorbed -= 1
            break
        if not step.broken:  # still needed at the newest measured commit
            return Search(None, tuple(steps), tuple(sorted(skipped)))
        absorbed -= 1
        skipped.add(absorbed)
    else:  # not one commit could be measured
        return Search(None, tuple(steps), tuple(sorted(skipped)))
    carried = -1
    while True:
        left = [i for i in range(carried + 1, absorbed) if i not in skipped]
        if not left:
            break
        mid = (carried + absorbed) // 2
        pick = min(left, key=lambda i: (abs(i - mid), i))
        step = probe(commits[pick])
        steps.append(step)
        if step.broken and not step.absorbed:
            skipped.add(pick)
        elif step.absorbed:
            absorbed = pick
        else:
            carried = pick
    unmeasured = tuple(sorted(i for i in skipped if carried < i < absorbed))
    return Search(absorbed, tuple(steps), unmeasured)


@dataclass(frozen=True)
class BisectResult:
    """Where upstream took a fix, between ``good`` and ``bad``."""

    fix: str
    url: str
    good: str  # the fix is needed here (the pin)
    bad: str  # and absorbed here, when ``first`` is set
    commits: int  # commits on the first-parent path good..bad
    fail_to_pass: tuple[str, ...]
    steps: tuple[Step, ...]
    first: Step | None  # the first commit that absorbs the fix
    unmeasured: tuple[Step, ...] = ()  # right before it, not measured
    tests_from: str = ""  # the line whose test files the probes used ("": this)
    releases: bool = False  # the commits are releases (subject: NAME VERSION)
    recorded: str = ""  # applied_upstream in patches/retired.toml, if retired
    tests: tuple[str, ...] = ()  # fail_to_pass as pytest node ids

    @property
    def found(self) -> bool:
        return self.first is not None

    @property
    def pr(self) -> int | None:
        return None if self.first is None else pr_number(self.first.subject)

    @property
    def applied_upstream(self) -> str:
        """What ``patches/retired.toml`` records: the commit, and its PR."""
        if self.first is None:
            return ""
        if self.releases:
            return self.first.subject
        pr = f" (#{self.pr})" if self.pr is not None else ""
        return f"{self.first.commit[:12]}{pr}"

    @property
    def agrees(self) -> bool:
        """The measurement says what the retirement record says (or there is
        no record)."""
        return not self.recorded or self.recorded == self.applied_upstream
