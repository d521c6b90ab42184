# SPDX-License-Identifier: Apache-2.0
"""``forkkit red-green``: prove one fix with upstream's own pytest suites.

Red: the fork's tests on HEAD with only that fix's runtime hunks reversed,
every other fix kept (:func:`forkkit.fork.fixes.red_commit`, a commit of its
own), or, with ``base``, with the runtime files of a commit of the fork tree;
green: the same pytest invocation on the fork, in the same place, so the
two differ only in the tree; the related suites are a run of their own on
the fork (shared by every fix's proof) that decides only PASS_TO_PASS
regressions (it runs beside the pair when two cores are free).
Unchanged runs come from the result cache (:mod:`forkkit.testing.cache`).
Every run is on a committed tree (:mod:`forkkit.testing.forkruns`): red in a
scratch worktree of its commit, the fork in place only when it is clean;
the fork tree is never edited. Each proof writes into a fresh run folder,
published as ``reports/red_green/<fix-id>`` (or ``out``) when it ends, with
``FAILED.txt`` when it did not finish. Then the checks a reviewer needs
(:class:`model.ProofChecks`): the guards (:mod:`.checks`), the flake check
(``--repeat``) and the hunk matrix (``--hunks``, :mod:`.hunks`).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forkkit.fork.tree import BASE_TAG, ForkTree
from forkkit.line import Line
from forkkit.output.progress import say
from forkkit.output.report import write_reports
from forkkit.patches.fixes import Fix
from forkkit.patches.testids import node_id, target_file
from forkkit.process import busy_cpus
from forkkit.services.proof.checks import guard_findings, repeat_green
from forkkit.services.proof.doc import proof_doc
from forkkit.services.proof.hunks import hunk_matrix
from forkkit.services.proof.model import (
    STEM,
    FileBlob,
    HunkCheck,
    ProofChecks,
    RedGreenResult,
    RelatedVerdict,
    RepeatCheck,
    classification_ids,
    failing_ids,
    guard_classification,
    hunk_verdict,
    proof_problems,
    related_verdict,
    untested_notes,
)
from forkkit.services.proof.packed import proof_runs
from forkkit.services.proof.plan import ProofSpec, file_blobs, make_proof_spec
from forkkit.services.proof.render import count_line, render_markdown
from forkkit.testing.cache import ResultCache
from forkkit.testing.classify import Classification, GuardFinding, classify
from forkkit.testing.env import TestEnv, ensure_testenv, installed
from forkkit.testing.forkruns import ForkRuns, SuiteRun
from forkkit.testing.junit import JunitReport
from forkkit.testing.shards import SEED_FILE, Timings
from forkkit.vcs import Repo
from forkkit.workdir import published_path

NO_CHECKS = ProofChecks()

__all__ = ["ForkRuns", "ProofChecks", "prove", "resolve_parallel"]


@dataclass(frozen=True)
class _Evidence:
    """The proof's pytest runs: the focused pair, the related suites, verdicts."""

    red: SuiteRun
    green: SuiteRun
    classification: Classification
    related: SuiteRun | None = None
    related_base: SuiteRun | None = None
    verdict: RelatedVerdict = field(default_factory=RelatedVerdict)
    guards: tuple[GuardFinding, ...] = ()
    repeat: RepeatCheck[SuiteRun] | None = None
    hunks: tuple[HunkCheck, ...] | None = None


def _gather(
    tree: ForkTree,
    plan: ProofSpec,
    settings: ForkRuns,
    *,
    parallel: bool,
    timings: Timings,
) -> _Evidence:
    """The fix's red and green, the related run; related failures rechecked."""
    red, green, related = proof_runs(
        tree, plan, settings, parallel=parallel, timings=timings
    )
    if plan.guard:
        red = green
        say(f"guard: {count_line(green)}")
        classification = guard_classification(
            green.report or JunitReport(),
            upstream=tree.upstream_label,
            carried=plan.carried,
            recorded=plan.recorded,
        )
    else:
        say(f"red: {count_line(red)}; green: {count_line(green)}")
        classification = classify(
            red.report or JunitReport(), green.report or JunitReport(), reason=None
        )
    focused_ok = classification.valid and not red.problem and not green.problem
    if related is None or related.report is None or not focused_ok:
        return _Evidence(red, green, classification, related)
    related_base, verdict = None, RelatedVerdict()
    # the fix's own tests are judged by its pair, never by the related run
    own = frozenset((green.report or JunitReport()).tests)
    if plan.guard:  # base runtime is the fix's: nothing to recheck on
        verdict = related_verdict(related.report, None, own=own)
    elif set(failing_ids(related.report)) - own:
        related_base, verdict = _recheck_on_base(
            tree, plan, related.report, settings=settings, own=own
        )
    return _Evidence(red, green, classification, related, related_base, verdict)


def _recheck_on_base(
    tree: ForkTree,
    plan: ProofSpec,
    report: JunitReport,
    *,
    settings: ForkRuns,
    own: frozenset[str],
) -> tuple[SuiteRun | None, RelatedVerdict]:
    """Rerun the related failures on base runtime: regression or pre-existing?"""
    tracked = frozenset(tree.repo.ls_tree(plan.head, []))
    failing = [t for t in failing_ids(report) if t not in own]
    nodes = sorted({n for t in failing if (n := node_id(t, tracked))})
    if not nodes:
        return None, related_verdict(report, None, own=own)
    say(f"related: {len(failing)} failure(s) on the fix; rerunning them on base")
    base_run = settings.run(tree, plan.base, nodes, name=f"{STEM}_related_base")
    return base_run, related_verdict(report, base_run.report, own=own)


def _checked(
    tree: ForkTree,
    plan: ProofSpec,
    settings: ForkRuns,
    *,
    evidence: _Evidence,
    checks: ProofChecks,
    parallel: bool,
) -> _Evidence:
    """The evidence with the flake check, the hunk matrix and the guards."""
    e, repeat, flaky, hunks = evidence, None, None, None
    if checks.repeat > 0:
        repeat, flaky = repeat_green(
            tree, plan, settings, green=e.green, n=checks.repeat, seed=checks.seed
        )
    if plan.guard:  # no red to check against: the flake check only
        return dataclasses.replace(e, guards=(flaky,) if flaky else (), repeat=repeat)
    f2p = e.classification.ids("FAIL_TO_PASS")
    if checks.hunks or checks.strict_hunks:
        hunks = hunk_matrix(tree, plan, settings, f2p=f2p, parallel=parallel)
    runs = [
        e.red,
        e.related or e.green,
        e.related_base,
        *(repeat.runs if repeat else ()),
    ]
    guards = guard_findings(
        e.red,
        e.green,
        e.classification,
        runs=runs,
        reason=plan.reason,
    )
    guards += [flaky] if flaky else []
    return dataclasses.replace(e, guards=tuple(guards), repeat=repeat, hunks=hunks)


def prove(
    line: Line,
    tree: ForkTree,
    *,
    tests: list[str] | None = None,
    pytest_args: Sequence[str] = (),
    related: bool = True,
    out_dir: Path | None = None,
    parallel: bool = False,
    timeout: float | None = None,
    env: TestEnv | None = None,
    stream: bool = True,
    fresh: bool = False,
    checks: ProofChecks = NO_CHECKS,
    base: str | None = None,
    fix: str | None = None,
    cache: ResultCache | None = None,
    timings: Timings | None = None,
) -> RedGreenResult[SuiteRun]:
    """Fix ``fix`` (None: the only one, or the series as one unit) proven:
    red is the fork without its runtime hunks (or with ``base``'s runtime
    files), green the fork, the same invocation; reports published as
    ``reports/red_green/<fix-id>`` or ``out_dir`` (see the module doc); a
    refused proof (its spec is made first) keeps the last report it has."""
    start = time.monotonic()
    for old in tree.repo.prune_stale_worktrees():  # even when every run is cached
        say(f"removed stale worktree {old}")
    unit = line.fix(fix)
    plan = make_proof_spec(
        line, tree, tests, related=related, base=base, fixes=line.fixes, fix=unit
    )
    with line.work.report_folder(STEM, out=out_dir or _fix_dir(line, unit)) as folder:
        settings = ForkRuns(
            runtime_files=plan.runtime,
            env=env or ensure_testenv(line.config, tree.path),
            out_dir=folder.path,
            head=plan.head,
            pytest_args=tuple(pytest_args),
            timeout=timeout,
            cache=cache or ResultCache(line.work.results, fresh=fresh),
            stream=stream,
        )
        timings = timings or project_timings(line, tree)
        evidence = _gather(tree, plan, settings, parallel=parallel, timings=timings)
        evidence = _checked(
            tree, plan, settings, evidence=evidence, checks=checks, parallel=parallel
        )
        result = _result(
            unit,
            tree,
            plan,
            evidence=evidence,
            settings=settings,
            checks=checks,
            parallel=parallel,
            seconds=time.monotonic() - start,
        )
        _write(folder.path, result)
    return result


def _fix_dir(line: Line, fix: Fix) -> Path:
    """Where a fix's proof is published by default: ``reports/red_green/ID``."""
    return line.work.proof_dir(fix.id)


def _write(folder: Path, result: RedGreenResult[SuiteRun]) -> None:
    write_reports(
        folder, STEM, markdown=render_markdown(result), report=proof_doc(result)
    )


def project_timings(line: Line, tree: ForkTree) -> Timings:
    """The measured test-file times on ``tree``'s upstream (one file per
    release or commit: the same test file takes another time on another
    release), seeded by the project's committed ``test_durations.json``."""
    path = line.work.timings_file(tree.upstream_label)
    return Timings(path, seed=line.root / SEED_FILE)


def _result(
    fix: Fix,
    tree: ForkTree,
    plan: ProofSpec,
    *,
    evidence: _Evidence,
    settings: ForkRuns,
    checks: ProofChecks,
    parallel: bool,
    seconds: float,
) -> RedGreenResult[SuiteRun]:
    """Assemble the result: problems, notes, blobs and provenance of each run."""
    repo, e, v = tree.repo, evidence, evidence.verdict
    base, head = plan.base, plan.head
    files = file_blobs(repo, plan)
    problems, notes = _verdict(repo, plan, e, files=files, strict=checks.strict_hunks)
    tracked = frozenset(repo.ls_tree(head, []))
    upstream = repo.rev(BASE_TAG) or base
    ids = {*classification_ids(e.classification), *v.regressions, *v.preexisting}
    env = settings.env
    return RedGreenResult(
        title=fix.title,
        fix=fix,
        pin=plan.pin,
        fork_path=tree.path,
        upstream=tree.upstream,
        upstream_label=tree.upstream_label,
        upstream_commit=tree.upstream_commit,
        base=base,
        base_tree=repo.tree(base),
        base_label=plan.base_label,
        upstream_base=upstream,
        upstream_base_tree=repo.tree(upstream),
        head=head,
        head_tree=repo.tree(head),
        patches=tuple((n, c) for n, c in tree.patch_commits),
        files=tuple(files),
        related_targets=tuple((s, _object(repo, head, s)) for s in plan.suites),
        tests=plan.targets,
        related_suites=plan.suites,
        pytest_args=settings.pytest_args,
        **_env_fields(env),
        red=e.red,
        green=e.green,
        classification=e.classification,
        related=e.related,
        related_base=e.related_base,
        related_verdict=v,
        problems=tuple(problems),
        notes=tuple(notes),
        parallel=parallel,
        seconds=seconds,
        out_dir=published_path(settings.out_dir),
        node_ids={t: n for t in ids if (n := node_id(t, tracked))},
        guards=e.guards,
        repeat=e.repeat,
        hunks=e.hunks,
        mode="guard" if plan.guard else "red-green",
        red_recipe=plan.red,
    )


def _env_fields(env: TestEnv) -> dict[str, Any]:
    """What a result says of the test env: its variables, deselect list,
    interpreter, build key and installed packages."""
    return {
        "env_vars": env.set_vars(),
        "passed_env": tuple(env.taken()),
        "deselected": tuple(env.deselect),
        "python": str(env.python),
        "testenv_key": env.key,
        "packages": installed(env.python),
    }


def _verdict(
    repo: Repo, plan: ProofSpec, e: _Evidence, *, files: list[FileBlob], strict: bool
) -> tuple[list[str], list[str]]:
    """The proof's problems and notes (untested files and hunks)."""
    problems = proof_problems(
        e.red,
        e.green,
        e.classification,
        files=files,
        related=e.related,
        verdict=e.verdict,
        guards=e.guards,
        others=e.repeat.runs if e.repeat else (),
        base=plan.base_label,
        mode="guard" if plan.guard else "red-green",
    )
    hunk_problems, hunk_notes = hunk_verdict(e.hunks or (), strict=strict)
    notes = untested_notes(repo.changed_paths(plan.base, plan.head), plan.runtime)
    return problems + hunk_problems, notes + hunk_notes


def _object(repo: Repo, rev: str, target: str) -> str | None:
    """The blob/tree SHA of a test target's path at ``rev``."""
    return repo.blob(rev, target_file(target).rstrip("/"))


def resolve_parallel(
    choice: str, cpus: int | None = None, busy: float | None = None
) -> bool:
    """``on``/``off``, or ``auto``: side by side when 2+ cores are free now
    (CPUs minus the CPUs busy over a 0.2 s sample, rounded: 20 clock ticks
    per CPU tell a busy core from a free one, and an unchanged rerun, which
    pays the sample, takes under a second)."""
    if choice == "auto":
        n = cpus if cpus is not None else os.cpu_count() or 1
        used = busy if busy is not None else busy_cpus(sample_s=0.2, cpus=n)
        return round(n - used) >= 2
    return choice == "on"
