"""``forkkit red-green``: prove the fix with upstream's own pytest suites.

Red: the fork's tests with ONLY the runtime files (fork.toml [fix]) taken from
the upstream base; green: the same tests on the fix, read from the one run on
the fix that also covers the related suites (red runs beside it when two
cores are free). Unchanged runs come from the result cache
(:mod:`forkkit.testing.cache`). Every run is on a committed tree
(:mod:`forkkit.testing.suiterun`): red in a scratch worktree of HEAD with base's
runtime files, the fix in the fork tree only when it is clean, untracked
files included; the fork tree is never edited. Each run writes into a fresh
run folder, published as ``reports/red_green`` (or ``--out``) when it ends,
with ``FAILED.txt`` when it did not finish.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forkkit.cliopts import add_dest_option, add_upstream_options
from forkkit.commands.redgreen.render import FOLD_AFTER, count_line, render_markdown
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.tree import BASE_TAG, ForkTree
from forkkit.output.progress import say
from forkkit.output.report import append_step_summary, write_reports
from forkkit.patches.paths import is_test_path
from forkkit.patches.testids import node_id, target_file
from forkkit.process import busy_cpus
from forkkit.signals import signals_raise
from forkkit.testing.cache import ResultCache
from forkkit.testing.classify import CATEGORIES, Classification, classify
from forkkit.testing.env import TestEnv, ensure_testenv
from forkkit.testing.fixrun import fix_targets, subset_run
from forkkit.testing.junit import JunitReport
from forkkit.testing.pytest_run import kill_running
from forkkit.testing.suiterun import (
    SuiteRun,
    report_folder,
    require_committed,
    run_with_runtime_from,
)
from forkkit.vcs import Repo

STEM = "red_green"
_UNTESTED_NOTE = (
    "Non-test files the series changes that red keeps at the fix (not in "
    "fork.toml [fix].runtime_files): "
)

__all__ = [
    "FOLD_AFTER",
    "STEM",
    "FileBlob",
    "RedGreenResult",
    "RelatedVerdict",
    "SuiteRun",
    "prove",
    "related_verdict",
    "render_markdown",
    "run_with_runtime_from",
    "untested_changes",
]


@dataclass(frozen=True)
class FileBlob:
    """A tested file's git blob at the upstream base and at the fix."""

    path: str
    role: str  # "runtime" or "test"
    base: str | None
    fix: str | None


@dataclass(frozen=True)
class RelatedVerdict:
    """Related-suite failures on the fix, sorted by how they do on base."""

    regressions: tuple[str, ...] = ()  # pass on base, fail on the fix
    preexisting: tuple[str, ...] = ()  # fail on base as well


@dataclass(frozen=True)
class RedGreenResult:
    """Everything a reviewer needs to check the proof and what it ran on."""

    title: str
    fork_path: Path
    upstream: str
    upstream_label: str
    upstream_commit: str | None
    base: str
    base_tree: str
    head: str
    head_tree: str
    patches: tuple[tuple[str, str], ...]
    files: tuple[FileBlob, ...]
    related_targets: tuple[tuple[str, str | None], ...]
    tests: tuple[str, ...]
    related_suites: tuple[str, ...]  # requested ones (empty: --no-related)
    pytest_args: tuple[str, ...]
    env_vars: dict[str, str]
    deselected: tuple[str, ...]
    python: str
    red: SuiteRun
    green: SuiteRun
    classification: Classification
    related: SuiteRun | None
    related_base: SuiteRun | None
    related_verdict: RelatedVerdict
    problems: tuple[str, ...]
    notes: tuple[str, ...]
    parallel: bool
    seconds: float
    out_dir: Path
    node_ids: dict[str, str] = field(default_factory=dict)  # junit id -> node id

    @property
    def valid(self) -> bool:
        return not self.problems

    def node(self, test_id: str) -> str:
        return self.node_ids.get(test_id, test_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "problems": list(self.problems),
            "notes": list(self.notes),
            "title": self.title,
            "fork_path": str(self.fork_path),
            "upstream": {
                "ident": self.upstream,
                "label": self.upstream_label,
                "commit": self.upstream_commit,
            },
            "base": {"commit": self.base, "tree": self.base_tree},
            "fork_head": {"commit": self.head, "tree": self.head_tree},
            "patches": [{"name": n, "commit": c} for n, c in self.patches],
            "files": [
                {"path": f.path, "role": f.role, "base_blob": f.base, "fix_blob": f.fix}
                for f in self.files
            ],
            "related_targets": {p: sha for p, sha in self.related_targets},
            "tests": list(self.tests),
            "related_suites": list(self.related_suites),
            "pytest_args": list(self.pytest_args),
            "env": self.env_vars,
            "deselected": list(self.deselected),
            "python": self.python,
            "parallel": self.parallel,
            "wall_seconds": round(self.seconds, 3),
            "red": self.red.to_json(),
            "green": self.green.to_json(),
            "classification": {
                cat: [self.node(t) for t in self.classification.ids(cat)]
                for cat in CATEGORIES
            },
            "related": self.related.to_json() if self.related else None,
            "related_base": self.related_base.to_json() if self.related_base else None,
            "related_regressions": [
                self.node(t) for t in self.related_verdict.regressions
            ],
            "related_preexisting_failures": [
                self.node(t) for t in self.related_verdict.preexisting
            ],
        }

    def markdown(self) -> str:
        return render_markdown(self)


# ---------------------------------------------------------------- pure helpers


def untested_changes(changed: Sequence[str], runtime: Sequence[str]) -> list[str]:
    """Changed files that are neither tests nor listed runtime files."""
    return [f for f in changed if f not in runtime and not is_test_path(f)]


def _bad(report: JunitReport) -> list[str]:
    ids = [t.test_id for t in report.tests.values() if t.outcome in ("failed", "error")]
    return ids + [t.test_id for t in report.collection_errors]


def related_verdict(fix: JunitReport, base: JunitReport | None) -> RelatedVerdict:
    """Split the fix's related failures into regressions and pre-existing ones."""
    failing = _bad(fix)
    if base is None:
        return RelatedVerdict(regressions=tuple(failing))
    base_bad = set(_bad(base))
    pre = tuple(t for t in failing if t in base_bad)
    reg = tuple(t for t in failing if t not in base_bad)
    return RelatedVerdict(regressions=reg, preexisting=pre)


def proof_problems(
    red: SuiteRun,
    green: SuiteRun,
    classification: Classification,
    files: Sequence[FileBlob],
    related: SuiteRun | None,
    verdict: RelatedVerdict,
) -> list[str]:
    """Every reason the proof does not hold (empty: a valid proof)."""
    problems: list[str] = []
    runtime = [f for f in files if f.role == "runtime"]
    if runtime and all(f.base == f.fix for f in runtime):
        problems.append(
            "the fork does not change any runtime file "
            f"({', '.join(f.path for f in runtime)}): red and green test the same code"
        )
    for run in (red, green, related):
        if run is not None and run.problem:
            problems.append(run.problem)
    problems += classification.problems
    problems = list(dict.fromkeys(problems))  # green shares the fix run's problem
    if related is not None and verdict.regressions:
        problems.append(
            f"related suites: {len(verdict.regressions)} test(s) fail on the fix "
            f"but not on base (PASS_TO_FAIL), e.g. {verdict.regressions[0]}"
        )
    return problems


# ------------------------------------------------------------------ git + runs


@dataclass(frozen=True)
class _Plan:
    """What a proof runs, checked before anything runs."""

    targets: list[str]
    runtime: list[str]
    suites: list[str]
    base: str
    head: str


def _plan(cfg: ForkConfig, repo: Repo, tests: list[str] | None, related: bool) -> _Plan:
    """Validate fork.toml [fix] against the fork; refuse an uncommitted tree."""
    targets = list(tests or cfg.fix.focused_tests)
    runtime = list(cfg.fix.runtime_files)
    where = f"{cfg.path.name} [fix]"
    if not runtime:
        raise ForkkitError(
            f"{where}: runtime_files is empty; list the files the fix changes"
        )
    if not targets:
        raise ForkkitError(f"{where}: focused_tests is empty; list the fix's tests")
    head, base = repo.rev("HEAD"), repo.rev(BASE_TAG)
    if head is None or base is None:
        raise ForkkitError(f"{repo.path}: no '{BASE_TAG}' tag; run forkkit materialize")
    for f in runtime:
        if repo.blob(base, f) is None and repo.blob(head, f) is None:
            raise ForkkitError(
                f"{where}: runtime file {f!r} exists neither at base nor at fork HEAD; "
                "fix the path"
            )
    suites = list(cfg.fix.related_suites) if related else []
    for t in [*targets, *suites]:
        path = target_file(t).rstrip("/")
        if repo.object_id(f"{head}:{path}") is None:
            raise ForkkitError(
                f"{where}: test target {path!r} does not exist at fork HEAD "
                f"{head[:12]}; fix the path (fork.toml [fix] or --tests)"
            )
    require_committed(repo, "red-green")
    return _Plan(targets, runtime, suites, base, head)


def _file_blobs(
    repo: Repo, base: str, head: str, runtime: Sequence[str], tests: Sequence[str]
) -> list[FileBlob]:
    """Blob SHAs of the runtime files and of every file under the test targets."""
    out = [
        FileBlob(f, "runtime", repo.blob(base, f), repo.blob(head, f)) for f in runtime
    ]
    paths = sorted({target_file(t) for t in tests})
    at_base, at_head = repo.ls_tree(base, paths), repo.ls_tree(head, paths)
    out += [
        FileBlob(p, "test", at_base.get(p), blob)
        for p, blob in at_head.items()
        if p.endswith(".py")
    ]
    return out


def _red_and_fix(
    tree: ForkTree,
    plan: _Plan,
    common: dict[str, Any],
    *,
    parallel: bool,
    stream: bool,
) -> tuple[SuiteRun, SuiteRun]:
    """Red (base runtime, focused tests) and the one run on the fix (the
    related suites plus the focused tests; the focused tests alone with
    ``--no-related``), one after the other or side by side."""
    fix_name = f"{STEM}_related" if plan.suites else f"{STEM}_green"
    fix_tests = fix_targets(plan.suites, plan.targets) if plan.suites else plan.targets
    red_args = (tree, plan.base, plan.targets)
    fix_args = (tree, plan.head, fix_tests)
    if not parallel:
        say(f"red: {len(plan.targets)} target(s) with runtime files from base")
        red = run_with_runtime_from(
            *red_args, name=f"{STEM}_red", stream=stream, **common
        )
        say(f"fix: {', '.join(fix_tests)}")
        fix = run_with_runtime_from(*fix_args, name=fix_name, stream=stream, **common)
        return red, fix
    say(f"red and the fix side by side (logs in {common['shown_dir']})")
    cancel = threading.Event()
    with ThreadPoolExecutor(2, thread_name_prefix="red-green") as pool:
        try:
            f_red = pool.submit(
                run_with_runtime_from,
                *red_args,
                name=f"{STEM}_red",
                stream=stream,
                cancel=cancel,
                **common,
            )
            f_fix = pool.submit(
                run_with_runtime_from,
                *fix_args,
                name=fix_name,
                stream=stream,
                cancel=cancel,
                **common,
            )
            return f_red.result(), f_fix.result()
        except BaseException:
            cancel.set()
            kill_running()
            raise


@dataclass(frozen=True)
class _Runs:
    """What ran: the focused pair, the related suites and their verdict."""

    red: SuiteRun
    green: SuiteRun
    classification: Classification
    related: SuiteRun | None = None
    related_base: SuiteRun | None = None
    verdict: RelatedVerdict = field(default_factory=RelatedVerdict)


def _run_all(
    tree: ForkTree,
    plan: _Plan,
    common: dict[str, Any],
    *,
    parallel: bool,
    stream: bool,
) -> _Runs:
    """Red and the fix run; green read from it; related failures rechecked."""
    red, fix = _red_and_fix(tree, plan, common, parallel=parallel, stream=stream)
    related: SuiteRun | None = None
    green = fix
    if plan.suites:
        related = fix
        green = subset_run(
            fix,
            name=f"{STEM}_green",
            targets=plan.targets,
            tracked=frozenset(tree.repo.ls_tree(plan.head, [])),
            out_dir=common["out_dir"],
            shown_dir=common["shown_dir"],
        )
    say(f"red: {count_line(red)}; green: {count_line(green)}")
    classification = classify(
        red.report or JunitReport(), green.report or JunitReport()
    )
    focused_ok = classification.valid and not red.problem and not green.problem
    if related is None or related.report is None or not focused_ok:
        return _Runs(red, green, classification, related)
    related_base, verdict = None, RelatedVerdict()
    if _bad(related.report):
        related_base, verdict = _recheck_on_base(
            tree, plan, related.report, common, stream
        )
    return _Runs(red, green, classification, related, related_base, verdict)


def prove(
    cfg: ForkConfig,
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
) -> RedGreenResult:
    """Red on base runtime; green and the related suites in one run on the fix.

    Writes ``red_green.{md,json}`` plus JUnit XMLs and logs into a fresh run
    folder, published as ``<workdir>/reports/red_green`` or as ``out_dir``
    (replacing the previous report, with ``FAILED.txt`` if the run did not
    finish). ``parallel`` runs red beside the fix run. Runs come from the
    result cache when nothing they depend on changed, unless ``fresh``.
    """
    start = time.monotonic()
    with signals_raise(), report_folder(cfg, STEM, out_dir) as folder:
        plan = _plan(cfg, tree.repo, tests, related)
        env = env or ensure_testenv(cfg, tree.path)
        common: dict[str, Any] = {
            "runtime_files": plan.runtime,
            "env": env,
            "out_dir": folder.path,
            "shown_dir": folder.dest,
            "head": plan.head,
            "pytest_args": list(pytest_args),
            "timeout": timeout,
            "cache": ResultCache(cfg.work.results, fresh=fresh),
        }
        runs = _run_all(tree, plan, common, parallel=parallel, stream=stream)
        result = _result(
            cfg,
            tree,
            plan,
            runs,
            env=env,
            pytest_args=pytest_args,
            parallel=parallel,
            seconds=time.monotonic() - start,
            out=folder.dest,
        )
        md, js = write_reports(folder.path, STEM, result.markdown(), result.to_json())
    say(f"report: {folder.dest / md.name} and {folder.dest / js.name}")
    return result


def _result(
    cfg: ForkConfig,
    tree: ForkTree,
    plan: _Plan,
    runs: _Runs,
    *,
    env: TestEnv,
    pytest_args: Sequence[str],
    parallel: bool,
    seconds: float,
    out: Path,
) -> RedGreenResult:
    """Assemble the result: problems, notes, blobs and provenance of each run."""
    repo = tree.repo
    base, head = plan.base, plan.head
    files = _file_blobs(repo, base, head, plan.runtime, plan.targets)
    others = untested_changes(repo.changed_paths(base, head), plan.runtime)
    notes = [_UNTESTED_NOTE + ", ".join(others)] if others else []
    v = runs.verdict
    problems = proof_problems(
        runs.red, runs.green, runs.classification, files, runs.related, v
    )
    tracked = frozenset(repo.ls_tree(head, []))
    ids = set(classification_ids(runs.classification))
    ids |= set(v.regressions) | set(v.preexisting)
    return RedGreenResult(
        title=cfg.fix.title,
        fork_path=tree.path,
        upstream=tree.upstream,
        upstream_label=tree.upstream_label,
        upstream_commit=tree.upstream_commit,
        base=base,
        base_tree=repo.tree(base),
        head=head,
        head_tree=repo.tree(head),
        patches=tuple((n, c) for n, c in tree.patch_commits),
        files=tuple(files),
        related_targets=tuple((s, _object(repo, head, s)) for s in plan.suites),
        tests=tuple(plan.targets),
        related_suites=tuple(plan.suites),
        pytest_args=tuple(pytest_args),
        env_vars=_env_vars(env, tree.path),
        deselected=tuple(env.deselect),
        python=str(env.python),
        red=runs.red,
        green=runs.green,
        classification=runs.classification,
        related=runs.related,
        related_base=runs.related_base,
        related_verdict=v,
        problems=tuple(problems),
        notes=tuple(notes),
        parallel=parallel,
        seconds=seconds,
        out_dir=out,
        node_ids={t: n for t in ids if (n := node_id(t, tracked))},
    )


def _env_vars(env: TestEnv, tree: Path) -> dict[str, str]:
    """The variables a run sets beyond the caller's environment."""
    return {
        k: val
        for k, val in env.environ(tree).items()
        if k != "PYTHONPATH" and os.environ.get(k) != val
    }


def classification_ids(c: Classification) -> list[str]:
    return [t for ids in c.by_category.values() for t in ids]


def _object(repo: Repo, rev: str, target: str) -> str | None:
    """The blob/tree SHA of a test target's path at ``rev``."""
    return repo.blob(rev, target_file(target).rstrip("/"))


def _recheck_on_base(
    tree: ForkTree,
    plan: _Plan,
    report: JunitReport,
    common: dict[str, Any],
    stream: bool,
) -> tuple[SuiteRun | None, RelatedVerdict]:
    """Rerun the related failures on base runtime: regression or pre-existing?"""
    tracked = frozenset(tree.repo.ls_tree(plan.head, []))
    failing = _bad(report)
    nodes = sorted({n for t in failing if (n := node_id(t, tracked))})
    if not nodes:
        return None, related_verdict(report, None)
    say(f"related: {len(failing)} failure(s) on the fix; rerunning them on base")
    base_run = run_with_runtime_from(
        tree, plan.base, nodes, name=f"{STEM}_related_base", stream=stream, **common
    )
    return base_run, related_verdict(report, base_run.report)


# ------------------------------------------------------------------------- CLI


def resolve_parallel(
    choice: str, cpus: int | None = None, busy: float | None = None
) -> bool:
    """``on``/``off``, or ``auto``: side by side when 2+ cores are free now
    (CPUs minus the CPUs busy over a short sample, rounded)."""
    if choice == "auto":
        n = cpus if cpus is not None else os.cpu_count() or 1
        used = busy if busy is not None else busy_cpus(cpus=n)
        return round(n - used) >= 2
    return choice == "on"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Prove the fix: the fork's tests with the runtime files at upstream base "
        "(red), and one run on the fix of the related suites plus those tests "
        "(green is read from it); unchanged runs come from the result cache. "
        "Arguments after '--' go to pytest, e.g. 'forkkit red-green -- -k mamba'."
    )
    add_upstream_options(parser)
    add_dest_option(parser)
    parser.add_argument(
        "--tests", nargs="+", help="test targets (default: fork.toml focused_tests)"
    )
    parser.add_argument(
        "--related",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run fork.toml related_suites on the fix (default: yes)",
    )
    parser.add_argument(
        "--parallel",
        nargs="?",
        const="on",
        default="auto",
        choices=["on", "off", "auto"],
        help="red beside the run on the fix (default auto: when 2+ cores are free)",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="run every test now, even when the result cache has the same run",
    )
    parser.add_argument(
        "--timeout", type=float, help="seconds each pytest run may take (default: none)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="report folder, replaced by each run (default: <workdir>/reports/"
        "red_green)",
    )
    parser.add_argument("pytest_args", nargs="*", help="after '--': pytest options")


def main(args: argparse.Namespace, cfg: ForkConfig) -> int:
    from forkkit.fork.tree import materialize

    with signals_raise():
        tree = materialize(cfg, dest=args.dest)
        result = prove(
            cfg,
            tree,
            tests=args.tests,
            pytest_args=args.pytest_args,
            related=args.related,
            out_dir=args.out,
            parallel=resolve_parallel(args.parallel),
            timeout=args.timeout,
            fresh=args.fresh,
        )
    markdown = result.markdown()
    print(markdown)
    append_step_summary(markdown)
    return 0 if result.valid else 1
