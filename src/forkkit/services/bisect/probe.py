# SPDX-License-Identifier: Apache-2.0
"""One proof of a bisection (:class:`Prober`): an upstream commit with the
fix's tests, in the first of their texts that measures anything there; where
none does (the tests do not apply, or do not run), the fix's own runtime
change says it textually: it reverse-applies (upstream has it) or applies
(upstream lacks it)."""

from __future__ import annotations

from dataclasses import dataclass

from forkkit.errors import ForkkitError
from forkkit.output.progress import say
from forkkit.services.bisect.model import Step
from forkkit.services.rebase.absorb import semantic_verdict
from forkkit.services.rebase.semantic import SemanticBench
from forkkit.testing.classify import Reason
from forkkit.vcs import Repo
from forkkit.vcs.overlay import apply_patches_commit, has_changes


@dataclass(frozen=True, kw_only=True)
class TestText:
    """One text of the fix's tests: where it comes from, its test changes
    (each patch's diff of the test files, applied to the probed commit as a
    patch, so upstream's own changes to those files stay) and the pytest
    targets of its FAIL_TO_PASS tests."""

    label: str  # "the pin's" or the other line's fork.toml
    diffs: tuple[str, ...]
    targets: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Prober:
    """One proof of the bisection: upstream ``commit`` with the fix's tests,
    in the first of their texts that measures anything there."""

    repo: Repo
    bench: SemanticBench
    fix: str
    texts: tuple[TestText, ...]
    fail_to_pass: tuple[str, ...]
    reason: Reason  # when a red failure shows the fix's bug
    # the other fixes' runtime changes, per patch in series order: the fix is
    # measured as its red is, with every other fix kept where it applies
    others: tuple[tuple[str, str], ...] = ()
    # the fix's own runtime changes, in series order: what says it textually
    # where no text of its tests measures anything
    runtime: tuple[str, ...] = ()

    def __call__(self, commit: str) -> Step:
        subject = self.repo.message(commit).split("\n", 1)[0]
        say(f"proving {commit[:12]} {subject}")
        kept = apply_patches_commit(
            self.repo,
            onto=commit,
            patches=[diff for _, diff in self.others],
            message=f"bisect: the other fixes on upstream {commit[:12]}\n",
        )
        missing = tuple(self.others[i][0] for i in kept.missing)
        step = None
        for text in self.texts:
            step = self._run(
                commit, subject, base=kept.commit, text=text, missing=missing
            )
            if not step.broken:
                break
            say(f"{commit[:12]}: {text.label} tests prove nothing ({step.broken})")
        assert step is not None
        return step if not step.broken else self._textual(commit, subject, step)

    def _textual(self, commit: str, subject: str, step: Step) -> Step:
        """Where the tests measure nothing: upstream has the fix's runtime
        change (it reverse-applies: absorbed) or lacks it (it applies: still
        carried); else the step stays unmeasured."""
        if not self.runtime:
            return step
        has, lacks = has_changes(self.repo, commit, self.runtime)
        if has:
            how = "textual: upstream has its runtime change (it reverse-applies)"
        elif lacks:
            how = "textual: upstream lacks its runtime change (it applies)"
        else:
            return step
        say(f"{commit[:12]}: {how}")
        return Step(
            commit=commit,
            subject=subject,
            absorbed=has,
            passed=(),
            failed=(),
            tests=how,
        )

    def _run(
        self,
        commit: str,
        subject: str,
        *,
        base: str,
        text: TestText,
        missing: tuple[str, ...],
    ) -> Step:
        which = "pin" if text is self.texts[0] else "current"
        f2p = self.fail_to_pass
        name = f"bisect-{self.fix}-{commit[:12]}-{which}"
        tested = apply_patches_commit(
            self.repo,
            onto=base,
            patches=text.diffs,
            message=f"bisect: fix {self.fix}'s tests on upstream {commit[:12]}\n",
        )
        if tested.missing:
            why = "its test changes do not apply there"
            return Step(commit, subject, False, (), f2p, broken=why, tests=text.label)
        probe = tested.commit
        try:
            run = self.bench.run_tests(probe, text.targets, name)
        except ForkkitError:  # not even collected: an import broke
            why = "its tests are not collected there: see the run's log"
            return Step(commit, subject, False, (), f2p, broken=why, tests=text.label)
        check = semantic_verdict(f2p, f2p, run, reason=self.reason)
        broken = ""
        if check.broken and not check.failed:
            broken = f"{len(check.broken)} fail otherwise than for the bug's reason"
        elif check.failed and missing:
            broken = "other fixes' patches do not apply there: " + ", ".join(missing)
        return Step(
            commit=commit,
            subject=subject,
            absorbed=check.absorbed,
            passed=check.passed,
            failed=check.failed + check.broken,
            broken=broken,
            tests=text.label,
        )
