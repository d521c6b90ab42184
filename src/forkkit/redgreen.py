"""``forkkit red-green``: prove the fix with upstream's own pytest suites.

Red: the fork's tests with ONLY the runtime files (fork.toml [fix]) taken from
the upstream base; green: the same tests on the fix; then the related suites
on the fix. Red runs in a scratch ``git worktree``, so the materialized fork
tree is never modified, and the runtime files are still checked (and restored)
in ``finally`` however the run ends: Ctrl-C, SIGTERM, a crash or a timeout.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from forkkit.classify import CATEGORIES, Classification, classify
from forkkit.cliopts import add_dest_option, add_upstream_options
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.forktree import BASE_TAG, ForkTree
from forkkit.git import Git
from forkkit.junit import JunitReport, parse_junit
from forkkit.progress import say
from forkkit.pytest_run import PytestRun, kill_running, run_pytest
from forkkit.report import md_table, write_reports
from forkkit.testenv import TestEnv, ensure_testenv
from forkkit.worktree import scratch_worktree

STEM = "red_green"
_USAGE_ERR = re.compile(r"^ERROR\b|\berror: ")
FOLD_AFTER = 12  # longer FAIL_TO_PASS lists go in a <details> block


class Interrupted(KeyboardInterrupt):
    """SIGTERM/SIGHUP (or SIGINT) arrived; unwinds through every ``finally``."""


@contextmanager
def signals_raise() -> Iterator[None]:
    """Turn SIGTERM/SIGHUP/SIGINT into :class:`Interrupted` (main thread only).

    Only the first signal raises: repeats are ignored so the cleanup that the
    first one triggers cannot itself be interrupted.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if not fired:
            fired.append(signum)
            raise Interrupted(signal.Signals(signum).name)

    sigs = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    old = {s: signal.signal(s, handler) for s in sigs}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@dataclass(frozen=True)
class FileBlob:
    """A tested file's git blob at the upstream base and at the fix."""

    path: str
    role: str  # "runtime" or "test"
    base: str | None
    fix: str | None


@dataclass(frozen=True)
class SuiteRun:
    """One pytest run and exactly which tree it ran on."""

    name: str  # file stem of its JUnit XML / log
    runtime_rev: str  # commit the runtime files came from
    tree: str  # git tree id of the tested tree
    in_place: bool  # ran in the fork tree itself (runtime already at runtime_rev)
    run: PytestRun
    report: JunitReport | None  # None: pytest wrote no JUnit (timeout, crash)
    problem: str = ""

    def counts(self) -> dict[str, int]:
        return self.report.summary() if self.report else {}

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "runtime_rev": self.runtime_rev,
            "tree": self.tree,
            "in_place": self.in_place,
            "command": self.run.command,
            "targets": list(self.run.args),
            "returncode": self.run.returncode,
            "timed_out": self.run.timed_out,
            "wall_seconds": round(self.run.seconds, 3),
            "pytest_seconds": round(self.report.seconds, 3) if self.report else None,
            "counts": self.counts(),
            "junit": str(self.run.junit),
            "log": str(self.run.log),
            "problem": self.problem,
        }


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


def node_id(test_id: str, files: set[str] | frozenset[str]) -> str | None:
    """pytest node id of a JUnit id (``pkg.mod.Class::name``), given the files.

    A collection error's id is the bare module (``pkg.mod``): its path is
    returned. None when no tracked file matches.
    """
    cls, sep, name = test_id.partition("::")
    parts = cls.split(".")
    for i in range(len(parts), 0, -1):
        path = "/".join(parts[:i]) + ".py"
        if path in files:
            return "::".join([path, *parts[i:], *([name] if sep else [])])
    return None


def is_test_file(path: str) -> bool:
    """Upstream test code (kept as the fork has it during red)."""
    parts = path.split("/")
    name = parts[-1]
    return (
        "tests" in parts[:-1]
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


def untested_changes(changed: Sequence[str], runtime: Sequence[str]) -> list[str]:
    """Changed files that are neither tests nor listed runtime files."""
    return [f for f in changed if f not in runtime and not is_test_file(f)]


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
    if related is not None and verdict.regressions:
        problems.append(
            f"related suites: {len(verdict.regressions)} test(s) fail on the fix "
            f"but not on base (PASS_TO_FAIL), e.g. {verdict.regressions[0]}"
        )
    return problems


def _count_line(run: SuiteRun) -> str:
    c = run.counts()
    if not c:
        return f"no results ({run.problem})"
    text = (
        f"{c['passed']} passed, {c['failed']} failed, {c['error']} errors, "
        f"{c['skipped']} skipped"
    )
    if c["collection_errors"]:
        text += f", {c['collection_errors']} collection errors"
    return text


def _duration(run: SuiteRun) -> str:
    inner = f" (pytest {run.report.seconds:.1f}s)" if run.report else ""
    return f"{run.run.seconds:.1f}s{inner}"


def _cells(run: SuiteRun) -> list[object]:
    c = run.counts()
    if not c:
        return ["-", "-", "-", "-"]
    return [c["passed"], c["failed"], c["error"] + c["collection_errors"], c["skipped"]]


def _base_checkout(files: Sequence[FileBlob]) -> list[str]:
    """Shell lines that put the runtime files at base (delete those base lacks)."""
    runtime = [f for f in files if f.role == "runtime"]
    keep = " ".join(shlex.quote(f.path) for f in runtime if f.base)
    gone = " ".join(shlex.quote(f.path) for f in runtime if not f.base)
    return [
        *([f"git checkout {BASE_TAG} -- {keep}"] if keep else []),
        *([f"git rm -q -- {gone}"] if gone else []),
    ]


def _red_reason(red: SuiteRun, test_id: str) -> str:
    """`` (red: AssertionError: assert 1 == 2)``: why a test failed on base."""
    t = red.report.tests.get(test_id) if red.report else None
    if t is None or not (t.kind or t.message):
        return ""
    first = t.message.strip().splitlines()[0] if t.message.strip() else ""
    if len(first) > 100:
        first = first[:97] + "..."
    if not first or first.startswith(t.kind):
        return f" (red: {first or t.kind})"
    return f" (red: {t.kind}: {first})" if t.kind else f" (red: {first})"


def render_markdown(r: RedGreenResult) -> str:
    """The PR's "Test Result" section."""
    short = r.head[:12]
    out = ["## Test Result", ""]
    if r.title:
        out += [f"**{r.title}**", ""]
    cls = r.classification
    f2p = cls.ids("FAIL_TO_PASS")
    if r.valid:
        out.append(
            f"Red/green proof: ✅ **valid**: {len(f2p)} FAIL_TO_PASS, "
            f"{len(cls.ids('PASS_TO_PASS'))} PASS_TO_PASS, no PASS_TO_FAIL or "
            "FAIL_TO_FAIL."
        )
    else:
        out.append("Red/green proof: ❌ **invalid**:")
        out += [""] + [f"- {p}" for p in r.problems]
    out.append("")
    runtime = f"{r.upstream_label} base runtime (`{r.base[:12]}`)"
    rows = [
        [
            "Red",
            runtime,
            f"fork tests (`{short}`)",
            *_cells(r.red),
            _duration(r.red),
        ],
        [
            "Green",
            f"fixed runtime (`{short}`)",
            "same tests",
            *_cells(r.green),
            _duration(r.green),
        ],
    ]
    headers = ["Run", "Runtime", "Tests", "Passed", "Failed", "Errors", "Skipped"]
    out.append(md_table([*headers, "Duration"], rows))
    if r.related is not None:
        out.append(
            f"Related suites (fixed runtime): {_count_line(r.related)} in "
            f"{_duration(r.related)}: "
            + ", ".join(f"`{t}`" for t in r.related.run.args)
        )
        v = r.related_verdict
        if v.preexisting:
            out.append(
                "\nPre-existing failures (fail on base too, not caused by the fix): "
                + ", ".join(f"`{r.node(t)}`" for t in v.preexisting)
            )
        if v.regressions:
            out.append(
                "\nRegressions (PASS_TO_FAIL in related suites): "
                + ", ".join(f"`{r.node(t)}`" for t in v.regressions)
            )
        out.append("")
    elif r.related_suites:
        out += ["Related suites: skipped, the focused proof is already invalid.", ""]
    else:
        out += ["Related suites: not run (`--no-related`).", ""]
    out += [f"_{n}_" for n in r.notes] + ([""] if r.notes else [])
    if r.deselected:
        out += [
            "Deselected in every run (fork.toml [fix].deselect): "
            + ", ".join(f"`{d}`" for d in r.deselected),
            "",
        ]
    out += [f"### FAIL_TO_PASS ({len(f2p)})", ""]
    items = [f"- `{r.node(t)}`{_red_reason(r.red, t)}" for t in f2p] or ["- (none)"]
    if len(items) > FOLD_AFTER:
        summary = f"{len(items)} tests that fail on base and pass with the fix"
        items = [f"<details><summary>{summary}</summary>", "", *items, "", "</details>"]
    out += [*items, ""]
    counts = [f"{cat}: {len(cls.ids(cat))}" for cat in CATEGORIES[1:]]
    out += [" · ".join(counts), ""]
    for cat in CATEGORIES[2:4] + CATEGORIES[5:]:
        bad = cls.ids(cat)
        if bad:
            out += [f"{cat}:", ""] + [f"- `{r.node(t)}`" for t in bad] + [""]
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(r.env_vars.items()))
    prefix = f"{env} PYTHONPATH=$PWD" if env else "PYTHONPATH=$PWD"
    cmds = [
        f"# in the materialized fork ({r.fork_path}); HEAD = {r.head}",
        "# red: the fork's tests, runtime files restored to upstream base",
        f"git worktree add --detach ../red {short} && cd ../red",
        *_base_checkout(r.files),
        f"{prefix} {r.red.run.command}",
        "# green: the fix as is, same tests",
        f"cd {r.fork_path}",
        f"{prefix} {r.green.run.command}",
    ]
    if r.related is not None:
        cmds += ["# related suites on the fix", f"{prefix} {r.related.run.command}"]
    out += ["### Commands", "", "```bash", *cmds, "```", ""]
    out += ["### Provenance", ""]
    up = f"- Upstream: {r.upstream_label} (`{r.upstream}`)"
    if r.upstream_commit:
        up += f", upstream commit `{r.upstream_commit}`"
    out += [
        up,
        f"- Base (tag `{BASE_TAG}`): commit `{r.base}`, tree `{r.base_tree}`",
        f"- Fork HEAD: commit `{r.head}`, tree `{r.head_tree}`",
        f"- Red tree (HEAD with base runtime files): `{r.red.tree}`",
    ]
    if r.patches:
        out.append(
            "- Patches: " + ", ".join(f"`{n}` (`{c[:12]}`)" for n, c in r.patches)
        )
    out += [f"- Python: `{r.python}`; wall time {r.seconds:.1f}s", ""]
    rows = [
        [
            f"`{f.path}`",
            f.role,
            f"`{f.base}`" if f.base else "(absent)",
            f"`{f.fix}`" if f.fix else "(absent)",
        ]
        for f in r.files
    ]
    out.append(md_table(["File", "Role", "Blob at base", "Blob at fix"], rows))
    return "\n".join(out)


# ------------------------------------------------------------------ git + runs


def _restore_runtime(git: Git, head: str, files: Sequence[str]) -> list[str]:
    """Make sure each runtime file in the fork tree is byte-for-byte HEAD's."""
    restored = []
    for f in files:
        want = git.blob(head, f)
        path = git.cwd / f
        if want is None:
            if path.exists():
                path.unlink()
                restored.append(f)
            continue
        have = git.out("hash-object", "--", f) if path.is_file() else None
        if have != want:
            git.run("checkout", head, "--", f)
            restored.append(f)
    for f in restored:
        say(f"restored {f} to the fix ({head[:12]}) in {git.cwd}")
    return restored


def _read(run: PytestRun, name: str) -> tuple[JunitReport | None, str]:
    if run.timed_out:
        return (
            None,
            f"{name}: pytest timed out after {run.seconds:.0f}s (see {run.log})",
        )
    if run.returncode in (3, 4):
        lines = run.log.read_text().strip().splitlines() if run.log.exists() else []
        errors = [ln.strip() for ln in lines if _USAGE_ERR.search(ln)] or lines[-1:]
        raise ForkkitError(
            f"{run.log}: pytest refused the run (exit {run.returncode}"
            f"{': ' + errors[-1] if errors else ''}); fix --tests or the pytest options"
        )
    try:
        return parse_junit(run.junit), ""
    except ForkkitError as exc:
        return None, f"{name}: {exc} (exit {run.returncode}, see {run.log})"


def run_with_runtime_from(
    tree: ForkTree | Path,
    rev: str,
    tests: Sequence[str],
    *,
    runtime_files: Sequence[str],
    env: TestEnv,
    out_dir: Path,
    name: str,
    pytest_args: Sequence[str] = (),
    timeout: float | None = None,
    stream: bool = True,
    cancel: threading.Event | None = None,
) -> SuiteRun:
    """Run ``tests`` on the fork's HEAD with ``runtime_files`` taken from ``rev``.

    When the runtime files differ from HEAD, the run happens in a scratch git
    worktree (the fork tree is never edited); otherwise in the fork tree. The
    fork's runtime files are verified, and restored if needed, in ``finally``.
    """
    git = Git(tree.path if isinstance(tree, ForkTree) else tree)
    head = git.rev("HEAD")
    commit = git.rev(rev)
    if head is None or commit is None:
        raise ForkkitError(
            f"{git.cwd}: no revision {rev if head else 'HEAD'!r}; "
            "materialize the fork first (forkkit materialize)"
        )
    if not git.is_clean():
        raise ForkkitError(
            f"{git.cwd}: uncommitted changes to tracked files; commit them in the "
            "fork tree (then forkkit export) or rerun 'forkkit materialize --force'"
        )
    wanted = {f: git.blob(commit, f) for f in runtime_files}
    in_place = all(blob == git.blob(head, f) for f, blob in wanted.items())
    try:
        with signals_raise():
            if in_place:
                tested = git.out("rev-parse", "HEAD^{tree}")
                say(f"{name}: runtime of {commit[:12]} = HEAD; running in {git.cwd}")
                run = run_pytest(
                    env,
                    git.cwd,
                    list(tests),
                    out_dir,
                    name,
                    list(pytest_args),
                    stream,
                    timeout,
                    cancel,
                )
            else:
                with scratch_worktree(git, head, name) as wt:
                    for f, blob in wanted.items():
                        if blob:
                            wt.run("checkout", commit, "--", f)
                        else:
                            wt.run("rm", "-q", "-f", "--ignore-unmatch", "--", f)
                    tested = wt.out("write-tree")
                    say(f"{name}: runtime files from {commit[:12]} in {wt.cwd}")
                    run = run_pytest(
                        env,
                        wt.cwd,
                        list(tests),
                        out_dir,
                        name,
                        list(pytest_args),
                        stream,
                        timeout,
                        cancel,
                    )
    finally:
        _restore_runtime(git, head, runtime_files)
    report, problem = _read(run, name)
    return SuiteRun(name, commit, tested, in_place, run, report, problem)


def _file_blobs(
    git: Git, base: str, head: str, runtime: Sequence[str], tests: Sequence[str]
) -> list[FileBlob]:
    """Blob SHAs of the runtime files and of every file under the test targets."""
    out = [
        FileBlob(f, "runtime", git.blob(base, f), git.blob(head, f)) for f in runtime
    ]
    paths = sorted({t.split("::", 1)[0] for t in tests})
    listed = git.out("ls-tree", "-r", "--name-only", head, "--", *paths).splitlines()
    out += [
        FileBlob(p, "test", git.blob(base, p), git.blob(head, p))
        for p in listed
        if p.endswith(".py")
    ]
    return out


def _check_targets(git: Git, head: str, targets: Sequence[str], where: str) -> None:
    for t in targets:
        path = t.split("::", 1)[0].rstrip("/")
        if not git.ok("cat-file", "-e", f"{head}:{path}"):
            raise ForkkitError(
                f"{where}: test target {path!r} does not exist at fork HEAD "
                f"{head[:12]}; fix the path (fork.toml [fix] or --tests)"
            )


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
) -> RedGreenResult:
    """Red on base runtime, green on the fix, then the related suites on the fix.

    Writes ``red_green.{md,json}`` plus JUnit XMLs and logs to ``out_dir``
    (default ``<workdir>/reports``). ``parallel`` runs red and green at once.
    """
    start = time.monotonic()
    git = tree.git
    targets = list(tests or cfg.fix.focused_tests)
    runtime = list(cfg.fix.runtime_files)
    where = f"{cfg.path.name} [fix]"
    if not runtime:
        raise ForkkitError(
            f"{where}: runtime_files is empty; list the files the fix changes"
        )
    if not targets:
        raise ForkkitError(f"{where}: focused_tests is empty; list the fix's tests")
    head = git.rev("HEAD")
    base = git.rev(BASE_TAG)
    if head is None or base is None:
        raise ForkkitError(f"{tree.path}: no '{BASE_TAG}' tag; run forkkit materialize")
    for f in runtime:
        if git.blob(base, f) is None and git.blob(head, f) is None:
            raise ForkkitError(
                f"{where}: runtime file {f!r} exists neither at base nor at fork HEAD; "
                "fix the path"
            )
    _check_targets(git, head, targets, where)
    suites = list(cfg.fix.related_suites) if related else []
    _check_targets(git, head, suites, where)
    env = env or ensure_testenv(cfg, tree.path)
    out = out_dir or cfg.workdir / "reports"
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob(f"{STEM}_*"):
        stale.unlink()
    common: dict[str, Any] = {
        "runtime_files": runtime,
        "env": env,
        "out_dir": out,
        "pytest_args": list(pytest_args),
        "timeout": timeout,
    }
    related_run = related_base = None
    verdict = RelatedVerdict()
    notes: list[str] = []
    with signals_raise():
        if parallel:
            say(f"red and green in parallel (logs in {out})")
            cancel = threading.Event()
            with ThreadPoolExecutor(2, thread_name_prefix="red-green") as pool:
                try:
                    f_red = pool.submit(
                        run_with_runtime_from,
                        tree,
                        base,
                        targets,
                        name=f"{STEM}_red",
                        stream=False,
                        cancel=cancel,
                        **common,
                    )
                    f_green = pool.submit(
                        run_with_runtime_from,
                        tree,
                        head,
                        targets,
                        name=f"{STEM}_green",
                        stream=False,
                        cancel=cancel,
                        **common,
                    )
                    red, green = f_red.result(), f_green.result()
                except BaseException:
                    cancel.set()
                    kill_running()
                    raise
        else:
            say(f"red: {len(targets)} target(s) with runtime files from base")
            red = run_with_runtime_from(
                tree, base, targets, name=f"{STEM}_red", stream=stream, **common
            )
            say("green: the same tests on the fix")
            green = run_with_runtime_from(
                tree, head, targets, name=f"{STEM}_green", stream=stream, **common
            )
        say(f"red: {_count_line(red)}; green: {_count_line(green)}")
        classification = classify(
            red.report or JunitReport(), green.report or JunitReport()
        )
        focused_ok = classification.valid and not red.problem and not green.problem
        if suites and focused_ok:
            say(f"related suites on the fix: {', '.join(suites)}")
            related_run = run_with_runtime_from(
                tree, head, suites, name=f"{STEM}_related", stream=stream, **common
            )
            if related_run.report is not None and _bad(related_run.report):
                related_base, verdict = _recheck_on_base(
                    tree, base, head, related_run.report, common, stream
                )
    files = _file_blobs(git, base, head, runtime, targets)
    changed = git.out("diff", "--name-only", base, head).splitlines()
    others = untested_changes(changed, runtime)
    if others:
        notes.append(
            "Non-test files the series changes that red keeps at the fix (not in "
            f"fork.toml [fix].runtime_files): {', '.join(others)}"
        )
    problems = proof_problems(red, green, classification, files, related_run, verdict)
    tracked = frozenset(git.out("ls-tree", "-r", "--name-only", head).splitlines())
    ids = set(classification_ids(classification)) | set(verdict.regressions)
    ids |= set(verdict.preexisting)
    node_ids = {t: n for t in ids if (n := node_id(t, tracked))}
    result = RedGreenResult(
        title=cfg.fix.title,
        fork_path=tree.path,
        upstream=tree.upstream,
        upstream_label=tree.upstream_label,
        upstream_commit=tree.upstream_commit,
        base=base,
        base_tree=git.out("rev-parse", f"{base}^{{tree}}"),
        head=head,
        head_tree=git.out("rev-parse", f"{head}^{{tree}}"),
        patches=tuple((n, c) for n, c in tree.patch_commits),
        files=tuple(files),
        related_targets=tuple((s, _object(git, head, s)) for s in suites),
        tests=tuple(targets),
        related_suites=tuple(suites),
        pytest_args=tuple(pytest_args),
        env_vars={
            k: v
            for k, v in env.environ(tree.path).items()
            if k != "PYTHONPATH" and os.environ.get(k) != v
        },
        deselected=tuple(env.deselect),
        python=str(env.python),
        red=red,
        green=green,
        classification=classification,
        related=related_run,
        related_base=related_base,
        related_verdict=verdict,
        problems=tuple(problems),
        notes=tuple(notes),
        parallel=parallel,
        seconds=time.monotonic() - start,
        out_dir=out,
        node_ids=node_ids,
    )
    md, js = write_reports(out, STEM, result.markdown(), result.to_json())
    say(f"report: {md} and {js}")
    return result


def classification_ids(c: Classification) -> list[str]:
    return [t for ids in c.by_category.values() for t in ids]


def _object(git: Git, rev: str, target: str) -> str | None:
    """The blob/tree SHA of a test target's path at ``rev``."""
    return git.blob(rev, target.split("::", 1)[0].rstrip("/"))


def _recheck_on_base(
    tree: ForkTree,
    base: str,
    head: str,
    report: JunitReport,
    common: dict[str, Any],
    stream: bool,
) -> tuple[SuiteRun | None, RelatedVerdict]:
    """Rerun the related failures on base runtime: regression or pre-existing?"""
    git = tree.git
    tracked = frozenset(git.out("ls-tree", "-r", "--name-only", head).splitlines())
    failing = _bad(report)
    nodes = sorted({n for t in failing if (n := node_id(t, tracked))})
    if not nodes:
        return None, related_verdict(report, None)
    say(f"related: {len(failing)} failure(s) on the fix; rerunning them on base")
    base_run = run_with_runtime_from(
        tree, base, nodes, name=f"{STEM}_related_base", stream=stream, **common
    )
    return base_run, related_verdict(report, base_run.report)


# ------------------------------------------------------------------------- CLI


def resolve_parallel(choice: str, cpus: int | None = None) -> bool:
    """``on``/``off``, or ``auto``: parallel only with at least 4 CPUs."""
    if choice == "auto":
        return (cpus if cpus is not None else os.cpu_count() or 1) >= 4
    return choice == "on"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Prove the fix: the fork's tests with the runtime files at upstream base "
        "(red), the same tests on the fix (green), then the related suites. "
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
        default="off",
        choices=["on", "off", "auto"],
        help="red and green at once in two trees (auto: only with >= 4 CPUs)",
    )
    parser.add_argument(
        "--timeout", type=float, help="seconds each pytest run may take (default: none)"
    )
    parser.add_argument(
        "--out", type=Path, help="report folder (default: <workdir>/reports)"
    )
    parser.add_argument("pytest_args", nargs="*", help="after '--': pytest options")


def run(args: argparse.Namespace, cfg: ForkConfig) -> int:
    from forkkit.forktree import materialize

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
        )
    print(result.markdown())
    return 0 if result.valid else 1
