# SPDX-License-Identifier: Apache-2.0
"""The semantic absorption check of one rebase: do a patch's FAIL_TO_PASS
tests pass on the new upstream without its runtime change?

:class:`SemanticBench` owns the one scratch worktree the checks run in (a
context manager: the worktree goes when the rebase does); each check returns
its verdict together with the red commit it measured (:class:`Judged`), which
becomes the patch's tests-only commit when upstream absorbed it. Tests run
through :class:`forkkit.testing.forkruns.ForkRuns` (the result cache, the
timeout policy).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forkkit.errors import ForkkitError
from forkkit.fork.fixes import commit_classes
from forkkit.line import Line
from forkkit.output.progress import say
from forkkit.patches.series import Patch
from forkkit.patches.testids import target_file
from forkkit.services.rebase.absorb import (
    patch_targets,
    semantic_verdict,
    split_runtime,
)
from forkkit.services.rebase.model import Options, SemanticCheck
from forkkit.testing.cache import ResultCache
from forkkit.testing.classify import Reason, classify, failing
from forkkit.testing.env import ensure_testenv
from forkkit.testing.forkruns import ForkRuns
from forkkit.testing.junit import JunitReport
from forkkit.vcs import Repo, merge


@dataclass(frozen=True)
class Judged:
    """A semantic check and the red commit it ran (the new base with the
    patch's tests and without its runtime change); None where none ran."""

    check: SemanticCheck | None
    red: str | None = None

    @property
    def absorbed_red(self) -> str | None:
        """The red commit when upstream absorbed the patch (else None)."""
        return self.red if self.check and self.check.absorbed else None


class SemanticBench(AbstractContextManager["SemanticBench"]):
    """Runs the semantic checks of one rebase in its own scratch worktree."""

    def __init__(
        self,
        *,
        line: Line,
        opts: Options,
        repo: Repo,
        focused: tuple[str, ...] = (),
    ) -> None:
        self.line, self.opts, self.repo = line, opts, repo
        self.focused = focused  # every fix's focused tests on the old pin
        self._stack = ExitStack()
        self._check: Repo | None = None

    def __exit__(self, *exc: Any) -> bool | None:
        return self._stack.__exit__(*exc)

    def _checkout(self, commit: str) -> Path:
        """``commit`` checked out (clean) in the one scratch worktree."""
        if self._check is None:
            self._check = self._stack.enter_context(self.repo.worktree(commit, "check"))
        self._check.detach(commit)
        return self._check.path

    def run_tests(self, commit: str, targets: Sequence[str], name: str) -> JunitReport:
        """Run ``targets`` on ``commit``'s tree (the result cache gives back a
        run of the same tree, env, arguments, deselect list and targets)."""
        tree = self._checkout(commit)
        runs = ForkRuns(
            runtime_files=(),
            env=ensure_testenv(self.line.config, tree),
            out_dir=self.line.work.rebase_dir("runs"),
            head=commit,
            pytest_args=tuple(self.opts.pytest_args),
            timeout=self.opts.timeout,
            cache=ResultCache(self.line.work.results),
            stream=False,
        )
        done = runs.run(tree, commit, targets, name=name)
        if done.report is None:
            raise ForkkitError(done.problem)
        how = (
            "cached: same tree, env and tests" if done.cached else f"log {done.run.log}"
        )
        say(f"{name}: {done.report.counts_text()} ({how})")
        return done.report

    def _red(self, *, base: str, files: dict[str, Any], message: str) -> str:
        return merge.overlay(self.repo, base=base, files=files, message=message)

    def _fail_to_pass_old(
        self, patch: Patch, old_commit: str, *, tests: list[str], targets: list[str]
    ) -> list[str]:
        """The patch's FAIL_TO_PASS tests on the old base: its tests without vs
        with its runtime change, on top of the patches before it."""
        red = self._red(
            base=f"{old_commit}^",
            files=merge.entries(self.repo, tests, rev=old_commit),
            message=f"red: {patch.name} tests without its runtime change (old base)",
        )
        stem = patch.path.stem[:40]
        red_run = self.run_tests(red, targets, f"{stem}-old-red")
        if not failing(red_run):  # nothing failed red: no FAIL_TO_PASS either way
            return []
        green_run = self.run_tests(old_commit, targets, f"{stem}-old-green")
        return classify(red_run, green_run).ids("FAIL_TO_PASS")

    def _classes(self, commit: str, runtime: Sequence[str]) -> tuple[str, ...]:
        """The classes the patch's runtime change (``commit``'s) lies in."""
        diff = self.repo.diff(a=f"{commit}^", b=commit, paths=list(runtime))
        return tuple(sorted(commit_classes(self.repo, commit, diff)))

    def _raises(self, patch: Patch) -> str:
        """The exception the patch's fix declares as its bug (``raises``)."""
        owner = (f for f in self.line.fixes.fixes if patch.name in f.patches)
        return next((f.raises for f in owner), "")

    def judge(
        self,
        patch: Patch,
        old_commit: str,
        *,
        new_prev: str,
        test_source: str | None,
    ) -> Judged:
        """Do the patch's FAIL_TO_PASS tests pass on the new upstream without it?

        ``test_source`` holds the patch's rebased test files (a commit, or
        ``None`` for the index of a conflicted cherry-pick).
        """
        if not self.opts.semantic:
            return Judged(None)
        runtime, tests = split_runtime(patch.files, ())
        targets = patch_targets(self.focused, patch.files)
        if not runtime or not tests or not targets:
            note = "not applicable: no runtime/test split"
            return Judged(SemanticCheck(tuple(targets), (), note=note))
        files = merge.entries(self.repo, tests, rev=test_source)
        conflicted: list[str] = []
        if test_source is None:
            # a conflicted cherry-pick: its conflicted test files keep the
            # new upstream's version, and their tests are not judged
            unmerged = set(self.repo.unmerged())
            conflicted = [p for p in tests if p in unmerged]
            files.update(merge.entries(self.repo, conflicted, rev=new_prev))
        run_targets = [t for t in targets if target_file(t) not in conflicted]
        if not run_targets:
            note = "not checked: the test changes conflict too"
            return Judged(SemanticCheck(tuple(targets), (), note=note))
        try:
            f2p = self._fail_to_pass_old(
                patch, old_commit, tests=tests, targets=targets
            )
            if not f2p:
                note = "not applicable: no FAIL_TO_PASS test on the old base"
                return Judged(SemanticCheck(tuple(targets), (), note=note))
            message = f"red: {patch.name} tests without its runtime change (new base)"
            red = self._red(base=new_prev, files=files, message=message)
            red_new = self.run_tests(
                red, run_targets, f"{patch.path.stem[:40]}-new-red"
            )
        except ForkkitError as exc:
            note = f"not checked: {exc}"
            return Judged(SemanticCheck(tuple(targets), (), note=note, error=True))
        reason = Reason(
            runtime=tuple(runtime),
            raises=self._raises(patch),
            classes=self._classes(old_commit, runtime),
        )
        check = semantic_verdict(
            targets, f2p, red_new, reason=reason, conflicted_files=conflicted
        )
        return Judged(check, red)
