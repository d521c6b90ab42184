"""``forkkit reconcile --with REF``: weigh our fix against a competing change.

REF is a patch/mbox file, a ref of the upstream git repository (a PR such as
``pull/53802/head``), or a newer release (``vllm==0.32.0``, diffed from our
base over the files we touch). The competitor becomes a commit on our base;
each side's tests then run on each side's runtime (and ours on top of theirs)
and the result is a PR-ready Markdown + JSON report. Analysis is pure
(:mod:`forkkit.diffs`); this module does the git, download and pytest work.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from forkkit.config import ForkConfig
from forkkit.diffs import (
    Cell,
    Diff,
    Overlap,
    ReconcileResult,
    Runtime,
    Side,
    SideTests,
    build_matrix,
    changed_test_modules,
    classify_side,
    collection_kind,
    compute_overlap,
    failure_kinds,
    in_folders,
    junit_module,
    merge_targets,
    parse_diff,
    render_markdown,
    target_file,
    target_folders,
    to_json,
    touched_tests,
)
from forkkit.errors import ForkkitError
from forkkit.forktree import ForkTree, materialize, tree_of_directory
from forkkit.git import Git
from forkkit.junit import JunitReport, parse_junit
from forkkit.progress import say, step
from forkkit.pytest_run import PytestRun, pytest_command, run_pytest
from forkkit.report import write_reports
from forkkit.series import hunk_at, parse_patch_text
from forkkit.testenv import TestEnv, ensure_testenv
from forkkit.upstream import extract_sdist, fetch_sdist, resolve_sdist
from forkkit.worktree import scratch_worktree

Kind = Literal["patch", "git", "release"]
REF_PREFIX = "refs/forkkit-reconcile"
THEIR_TESTS = {
    "files": "test modules their change adds/changes, whole (default)",
    "changed": "only the tests their change adds/changes",
    "shared": "only those, in test files our patches touch too",
}
_RELEASE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")


@dataclass(frozen=True)
class Competitor:
    """What ``--with`` names."""

    ref: str
    kind: Kind
    name: str = ""  # release: project name
    version: str = ""  # release: version


def parse_competitor(ref: str, project: str) -> Competitor:
    """Classify ``--with``: an existing file, ``NAME==VERSION`` or a git ref."""
    if Path(ref).is_file():
        return Competitor(ref, "patch")
    m = _RELEASE.match(ref)
    if m:
        if m.group(1).lower() != project.lower():
            raise ForkkitError(
                f"--with {ref}: a release competitor must be {project}==VERSION"
            )
        return Competitor(ref, "release", m.group(1), m.group(2))
    if not ref or ref.startswith("-") or any(c.isspace() for c in ref):
        raise ForkkitError(
            f"--with {ref!r}: not a file, NAME==VERSION or git ref; see --help"
        )
    return Competitor(ref, "git")


@dataclass(frozen=True)
class Layer:
    """A diff applied on top of a tree (one side's runtime or tests part).

    A runtime layer applies whole or not at all; a test layer applies file by
    file, so one conflicting test file does not hide the others.
    """

    name: str
    side: Side
    parts: tuple[tuple[str, str], ...]  # (path, its diff), in path order
    diff: Diff | None
    per_file: bool = False

    @property
    def text(self) -> str:
        return "".join(t for _, t in self.parts)


@dataclass(frozen=True)
class Column:
    """A runtime column: a root commit plus runtime layers, and the test
    layers each side adds there (none where the root already has them)."""

    runtime: Runtime
    root: str
    layers: tuple[Layer, ...]
    tests: dict[str, tuple[Layer, ...]]


# --------------------------------------------------------------------------
# git helpers
# --------------------------------------------------------------------------


def _commit_dir(git: Git, src: Path, message: str) -> str:
    """Commit the files of ``src`` (an extracted sdist) as one commit."""
    return git.out("commit-tree", tree_of_directory(git, src), "-m", message)


def _graft(git: Git, base: str, donor: str, paths: list[str], message: str) -> str:
    """A commit on ``base`` whose ``paths`` are as in ``donor`` (absent: removed)."""
    index = Path(git.out("rev-parse", "--absolute-git-dir")) / "forkkit-graft.idx"
    index.unlink(missing_ok=True)
    env = {"GIT_INDEX_FILE": str(index)}
    git.run("read-tree", base, extra_env=env)
    for path in paths:
        entry = git.out("ls-tree", donor, "--", path)
        if entry:
            mode, _, rest = entry.partition(" ")
            sha = rest.split()[1]
            git.run(
                "update-index",
                "--add",
                "--cacheinfo",
                f"{mode},{sha},{path}",
                extra_env=env,
            )
        else:
            git.run("update-index", "--force-remove", "--", path, extra_env=env)
    tree = git.run("write-tree", extra_env=env).stdout.strip()
    index.unlink(missing_ok=True)
    return git.out("commit-tree", tree, "-p", base, "-m", message)


def _diff_text(git: Git, a: str, b: str, paths: list[str] | tuple[str, ...]) -> str:
    if not paths:
        return ""
    return git.run("diff", "--full-index", "--binary", a, b, "--", *paths).stdout


def _layer(
    git: Git,
    a: str,
    b: str,
    paths: tuple[str, ...],
    name: str,
    side: Side,
    per_file: bool = False,
) -> Layer:
    parts = tuple((p, _diff_text(git, a, b, [p])) for p in paths)
    text = "".join(t for _, t in parts)
    diff = parse_diff(text, name) if text.strip() else None
    return Layer(name, side, parts, diff, per_file)


def _show(git: Git, rev: str, path: str) -> str | None:
    proc = git.run("show", f"{rev}:{path}", check=False)
    return proc.stdout if proc.returncode == 0 else None


class Workspace:
    """A scratch worktree of the reconcile repo where cells are assembled."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.path = git.cwd

    def reset(self, commit: str) -> None:
        self.git.run("reset", "-q", "--hard")
        self.git.run("checkout", "-q", "-f", "--detach", commit)
        self.git.run("clean", "-q", "-fdx")

    def apply(self, text: str, patch_file: Path) -> tuple[int, str]:
        """``git apply --3way`` a diff; (returncode, stderr)."""
        patch_file.parent.mkdir(parents=True, exist_ok=True)
        patch_file.write_text(text)
        proc = self.git.run(
            "apply", "--3way", "--whitespace=nowarn", str(patch_file), check=False
        )
        return proc.returncode, proc.stderr + proc.stdout

    def restore(self, root: str, path: str) -> None:
        """Put ``path`` back as it is in ``root`` (absent if it is not there)."""
        if self.git.ok("cat-file", "-e", f"{root}:{path}"):
            self.git.run("checkout", "-q", "-f", root, "--", path)
        else:
            self.git.run("rm", "-q", "-f", "--cached", "--ignore-unmatch", "--", path)
            (self.path / path).unlink(missing_ok=True)

    def tree_id(self) -> str:
        """The git tree of the worktree as it is now (staged for the purpose)."""
        self.git.run("add", "-A", ".")
        return self.git.out("write-tree")

    def unmerged(self) -> list[str]:
        out = self.git.out("diff", "--name-only", "--diff-filter=U")
        return sorted(set(out.splitlines()))


# --------------------------------------------------------------------------
# Competitor -> commit on our base
# --------------------------------------------------------------------------


def _is_mbox(text: str) -> bool:
    return text.startswith("From ") and "\nSubject:" in text


def _apply_failure(
    ws: Workspace, patch: Path, text: str, base_label: str
) -> ForkkitError:
    proc = ws.git.run("apply", "--check", "--verbose", str(patch), check=False)
    out = proc.stderr + proc.stdout
    m = re.search(r"error: patch failed: (.+):(\d+)", out)
    if m:
        where = f"{m.group(1)} line {m.group(2)}"
        try:
            hunk = hunk_at(parse_patch_text(text, patch), m.group(1), int(m.group(2)))
            where = hunk.describe() if hunk else where
        except ForkkitError:
            pass
        return ForkkitError(
            f"{patch.name}: {where} does not apply to {base_label}; the competitor "
            "targets another upstream: rebase it or compare with a release instead"
        )
    last = out.strip().splitlines()[-1] if out.strip() else "git apply failed"
    return ForkkitError(f"{patch.name}: does not apply to {base_label} ({last})")


def _apply_competitor(
    ws: Workspace, base: str, patch: Path, base_label: str, message: str
) -> str:
    """Commit the patch file ``patch`` on ``base``; one-line error if it fails."""
    text = patch.read_text(errors="replace")
    ws.reset(base)
    if _is_mbox(text):
        proc = ws.git.run("am", "-q", "--3way", "--keep-cr", str(patch), check=False)
        if proc.returncode != 0:
            ws.git.run("am", "--abort", check=False)
            ws.reset(base)
            raise _apply_failure(ws, patch, text, base_label)
        return ws.git.out("rev-parse", "HEAD")
    proc = ws.git.run("apply", "--3way", "--index", str(patch), check=False)
    if proc.returncode != 0:
        ws.reset(base)
        raise _apply_failure(ws, patch, text, base_label)
    ws.git.run("commit", "-q", "--allow-empty", "-m", message)
    return ws.git.out("rev-parse", "HEAD")


def _fetch(git: Git, url: str, ref: str, dest: str) -> str:
    proc = git.run("fetch", "-q", "--no-tags", url, f"+{ref}:{dest}", check=False)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        why = lines[-1].removeprefix("fatal: ") if lines else f"exit {proc.returncode}"
        raise ForkkitError(
            f"{url}: cannot fetch {ref!r} ({why}); offline or wrong ref? pass the "
            "change as a patch file instead: --with PATH.patch"
        )
    sha = git.rev(dest)
    assert sha
    return sha


def _theirs_from_git(
    git: Git, ws: Workspace, cfg: ForkConfig, comp: Competitor, base: str, label: str
) -> str:
    """Fetch a PR/branch and commit its own changes (vs its merge base) on base."""
    url = cfg.upstream.git_url
    if not url:
        raise ForkkitError(
            f"{cfg.path.name} [upstream]: git_url is empty; set it or pass --git-url"
        )
    if not cfg.upstream.git_rev:
        raise ForkkitError(
            f"{cfg.path.name} [upstream]: git_rev is empty; set the upstream commit "
            "our base corresponds to"
        )
    with step(f"fetching {comp.ref} and {cfg.upstream.git_rev} from {url}"):
        theirs = _fetch(git, url, comp.ref, f"{REF_PREFIX}/competitor")
        upstream = _fetch(git, url, cfg.upstream.git_rev, f"{REF_PREFIX}/upstream")
    proc = git.run("merge-base", theirs, upstream, check=False)
    if proc.returncode != 0:
        raise ForkkitError(
            f"{comp.ref}: no common history with {cfg.upstream.git_rev}; pass the "
            "change as a patch file instead"
        )
    merge_base = proc.stdout.strip()
    text = git.run("diff", "--full-index", "--binary", merge_base, theirs).stdout
    if not text.strip():
        raise ForkkitError(f"{comp.ref}: no changes relative to its merge base")
    patch = Path(git.out("rev-parse", "--absolute-git-dir")) / "forkkit-competitor.diff"
    patch.write_text(text)
    msg = f"Competitor {comp.ref} ({theirs[:12]})"
    return _apply_competitor(ws, base, patch, label, msg)


@dataclass(frozen=True)
class Release:
    """A newer release committed whole, plus its label."""

    commit: str
    label: str

    @property
    def key(self) -> str:
        """The column name of the release tree, e.g. ``0.32.0``."""
        return self.label.split()[-1]


def _fetch_release(
    git: Git, cfg: ForkConfig, comp: Competitor, sha256: str, sdist_url: str
) -> Release:
    """Download (sha256-verified), extract and commit the release's full tree."""
    if not sha256:
        ref = resolve_sdist(cfg.upstream.name, comp.version, cfg.upstream.index_url)
        sha256 = ref.sha256
        say(f"{ref.filename}: index sha256 {sha256} (pin it with --sha256)")
    spec = cfg.with_upstream(
        version=comp.version, sha256=sha256, sdist_url=sdist_url, source="sdist"
    ).upstream
    archive = fetch_sdist(spec, cfg.workdir / "cache" / "sdist")
    src = extract_sdist(
        archive, cfg.workdir / "upstream" / f"{spec.name}-{spec.version}", sha256
    )
    key = f"{REF_PREFIX}/release-{spec.version}"
    commit = git.rev(key)
    marker = f"sha256 {sha256}"
    if not commit or marker not in git.out("log", "-1", "--format=%B", commit):
        with step(f"committing {spec.label} ({archive.name})"):
            commit = _commit_dir(git, src, f"{spec.label} ({marker})")
        git.run("update-ref", key, commit)
    return Release(commit, spec.label)


# --------------------------------------------------------------------------
# Cells
# --------------------------------------------------------------------------


_IMPORT_REASON = re.compile(
    r"^((?:ImportError|ModuleNotFoundError): (?:cannot import name '[\w.]+' "
    r"from '[\w.]+'|No module named '[\w.]+'))"
)


def _reason(line: str) -> str:
    """A collection error, reduced to names: the import that failed, or just
    the exception type (never code, which may be the competitor's)."""
    m = _IMPORT_REASON.match(line)
    return m.group(1) if m else line.split(":", 1)[0].strip()


def broken_modules(junit: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    """Modules pytest could not collect (-> ``import``/``collection``), and the
    distinct one-line reasons (the ``E ...`` line of each traceback)."""
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError):
        return {}, ()
    kinds: dict[str, str] = {}
    reasons: list[str] = []
    for case in root.iter("testcase"):
        if case.get("classname"):
            continue
        for child in case:
            if child.tag == "error":
                text = (child.get("message") or "") + "\n" + (child.text or "")
                kinds[case.get("name", "")] = collection_kind(text)
                last = [ln for ln in text.splitlines() if ln.startswith("E ")]
                if last:
                    reasons.append(_reason(last[-1][1:].strip()))
    return kinds, tuple(dict.fromkeys(reasons))


def _conflict_lines(
    layer: Layer, files: list[str], stderr: str, overlap: Overlap
) -> tuple[str, ...]:
    """Name the files and hunks of a layer that did not apply."""
    lines: list[str] = []
    pairs = overlap.pairs
    for f in files:
        other = "their" if layer.side == "ours" else "our"
        mine = [
            f"{layer.name} {a.describe()} vs {other} {b.describe()}"
            for path, p in pairs
            if path == f
            for a, b in [
                (p.ours, p.theirs) if layer.side == "ours" else (p.theirs, p.ours)
            ]
        ]
        if mine:
            lines.append(f"{f}: " + "; ".join(mine))
        else:
            hunks = layer.diff.hunks(f) if layer.diff else ()
            ids = ", ".join(f"{h.index}/{h.count}" for h in hunks) or "?"
            lines.append(f"{f}: {layer.name} hunk(s) {ids} (3-way merge conflict)")
    if not lines:
        errs = [
            ln.removeprefix("error: ")
            for ln in stderr.splitlines()
            if ln.startswith("error:")
        ]
        lines = [f"{layer.name}: {e}" for e in errs[:5]] or [
            f"{layer.name}: git apply failed"
        ]
    return tuple(lines)


@dataclass(frozen=True)
class Plan:
    """Everything needed to run one cell."""

    side: Side
    runtime: Runtime
    root: str
    layers: tuple[Layer, ...]
    targets: tuple[str, ...]


class RunCache:
    """Finished pytest runs by content: tree, targets, pytest args, interpreter.

    Trees are content-addressed, so an identical tree (a side with no runtime
    change, or a rerun of reconcile) is not run twice. ``root`` None: this
    run only.
    """

    def __init__(self, root: Path | None, env: TestEnv, extra: list[str]) -> None:
        self.root = root
        self.env = env
        # one module that cannot import must not stop the others
        self.extra = ["--continue-on-collection-errors", *extra]
        self.session: dict[str, Cell] = {}

    def key(self, tree: str, targets: tuple[str, ...]) -> str:
        """Digest of the tree, the exact pytest command and its environment."""
        cmd = pytest_command(self.env, list(targets), Path("junit.xml"), self.extra)
        data = json.dumps([tree, cmd, self.env.key, sorted(self.env.env.items())])
        return hashlib.sha256(data.encode()).hexdigest()[:24]

    def stored(self, key: str) -> tuple[Path, dict[str, Any]] | None:
        """A run of an earlier reconcile: its JUnit file and metadata."""
        if self.root is None:
            return None
        xml, meta = self.root / f"{key}.xml", self.root / f"{key}.json"
        if not (xml.is_file() and meta.is_file()):
            return None
        return xml, json.loads(meta.read_text())

    def store(self, key: str, run: PytestRun, extra: dict[str, Any]) -> None:
        """Keep a finished run (not one that timed out or wrote no JUnit)."""
        if self.root is None or run.timed_out or not run.junit.is_file():
            return
        self.root.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run.junit, self.root / f"{key}.xml")
        meta = {"command": run.command, "seconds": run.seconds, **extra}
        (self.root / f"{key}.json").write_text(json.dumps(meta))


def _assemble(
    ws: Workspace, plan: Plan, out: Path, overlap: Overlap
) -> tuple[tuple[str, ...], tuple[str, ...]] | Cell:
    """Apply a plan's layers; (conflict lines, skipped test files) or a
    conflict cell when a runtime layer does not apply."""
    name = f"{plan.side}-on-{plan.runtime.key}"
    ws.reset(plan.root)
    conflicts: list[str] = []
    skipped: list[str] = []
    for i, layer in enumerate(plan.layers):
        chunks = list(layer.parts) if layer.per_file else [("", layer.text)]
        for j, (path, text) in enumerate(chunks):
            if not text.strip():
                continue
            rc, err = ws.apply(text, out / "layers" / f"{name}-{i}-{j}.diff")
            if rc == 0:
                continue
            files = ws.unmerged()
            say(f"{name}: {layer.name}: {', '.join(files) or path or '?'} conflict(s)")
            lines = _conflict_lines(layer, files or [path], err, overlap)
            if not layer.per_file:
                return Cell(plan.side, plan.runtime.key, "conflict", conflict=lines)
            ws.restore(plan.root, path)
            conflicts += lines
            skipped.append(path)
    return tuple(conflicts), tuple(skipped)


def run_cell(
    ws: Workspace,
    plan: Plan,
    env: TestEnv,
    out: Path,
    overlap: Overlap,
    cache: RunCache,
    timeout: float | None = None,
) -> Cell:
    """Assemble a cell's tree and run its tests (or reuse an identical run).

    A runtime layer that does not apply makes the cell a conflict; a test file
    that does not apply is skipped and its tests count as conflicts.
    """
    assembled = _assemble(ws, plan, out, overlap)
    if isinstance(assembled, Cell):
        return assembled
    conflicts, skipped = assembled
    runnable = [t for t in plan.targets if target_file(t) not in skipped]
    present = tuple(t for t in runnable if (ws.path / target_file(t)).is_file())
    absent = [t for t in runnable if t not in present]
    notes = [f"not in this tree: {', '.join(absent)}"] if absent else []
    base = Cell(
        plan.side,
        plan.runtime.key,
        "ran",
        conflict=conflicts,
        skipped_files=skipped,
        note="; ".join(notes),
    )
    if not present:
        return replace(base, status="conflict" if skipped else "not-applicable")
    key = cache.key(ws.tree_id(), present)
    origin = f"{plan.side}@{plan.runtime.key}"
    if key in cache.session:
        prev = cache.session[key]
        say(f"{origin}: same tree as {prev.side}@{prev.runtime}, not run again")
        return replace(
            prev,
            side=plan.side,
            runtime=plan.runtime.key,
            conflict=conflicts,
            skipped_files=skipped,
            reused=f"{prev.side}@{prev.runtime}",
        )
    stored = cache.stored(key)
    if stored is not None:
        say(f"{origin}: this exact tree ran in an earlier reconcile; reusing it")
        junit, meta = stored
        notes += meta.get("notes", [])
        broken, reasons = broken_modules(junit)
        broken.update(meta.get("broken", {}))
        reasons = tuple(dict.fromkeys([*meta.get("reasons", []), *reasons]))
        command, seconds = meta["command"], meta["seconds"]
    else:
        run, broken, reasons, more = _run_targets(
            env, ws.path, present, out / "junit", origin, cache, timeout
        )
        notes += more
        junit, command, seconds = run.junit, run.command, run.seconds
        cache.store(key, run, {"broken": broken, "reasons": reasons, "notes": more})
    cell = _cell_from(base, junit, command, seconds, notes, broken, reasons)
    cell = replace(cell, cached=stored is not None)
    cache.session[key] = cell
    return cell


def _run_targets(
    env: TestEnv,
    tree: Path,
    targets: tuple[str, ...],
    out: Path,
    origin: str,
    cache: RunCache,
    timeout: float | None,
) -> tuple[PytestRun, dict[str, str], tuple[str, ...], list[str]]:
    """Run pytest; (run, broken modules, reasons, notes).

    pytest aborts the whole session when a node id names a test in a module
    that does not import (even with --continue-on-collection-errors): those
    node ids are dropped and the rest runs again, so one broken module never
    hides the others.
    """
    name = origin.replace("@", "-on-")
    with step(f"{origin}: {len(targets)} target(s)"):
        run = run_pytest(
            env, tree, list(targets), out, name, cache.extra, False, timeout
        )
    broken, reasons = broken_modules(run.junit)
    notes: list[str] = []
    dropped = [
        t for t in targets if "::" in t and junit_module(target_file(t)) in broken
    ]
    rest = tuple(t for t in targets if t not in dropped)
    if dropped and rest and not run.timed_out:
        notes.append(f"reran without {len(dropped)} node id(s) of unimportable modules")
        with step(f"{origin}: {len(rest)} target(s), again"):
            run = run_pytest(
                env, tree, list(rest), out, name, cache.extra, False, timeout
            )
        more, why = broken_modules(run.junit)
        broken.update(more)
        reasons = tuple(dict.fromkeys([*reasons, *why]))
    if run.timed_out:
        notes.append(f"pytest killed after {timeout:g}s; see {run.log}")
    if not run.junit.is_file():
        notes.append(
            f"pytest wrote no JUnit XML (exit {run.returncode}); see {run.log}"
        )
    return run, broken, reasons, notes


def _cell_from(
    base: Cell,
    junit: Path,
    command: str,
    seconds: float,
    notes: list[str],
    broken: dict[str, str],
    reasons: tuple[str, ...],
) -> Cell:
    """A ran cell from a JUnit file (missing: an empty report)."""
    try:
        report = parse_junit(junit) if junit.is_file() else JunitReport()
    except ForkkitError:
        report = JunitReport()
    if reasons:
        notes = [
            *notes,
            f"{len(broken)} module(s) not collected: " + "; ".join(reasons),
        ]
    return replace(
        base,
        report=report,
        broken_modules=broken,
        command=command,
        seconds=seconds,
        note="; ".join(notes),
    )


# --------------------------------------------------------------------------
# Orchestration
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """What ``forkkit reconcile`` was asked to do besides ``--with``."""

    sha256: str = ""  # release pin (default: the index's hash)
    sdist_url: str = ""  # release download URL (default: the index)
    their_tests: str = "files"  # "files", "changed" or "shared" (THEIR_TESTS)
    their_tree: bool = True  # release: also run in the release's full tree
    pytest_args: tuple[str, ...] = ()
    timeout: float | None = None
    out_dir: Path | None = None  # reports (default: <workdir>/reports)
    fresh: bool = False  # ignore pytest runs cached by earlier reconciles


@dataclass(frozen=True)
class Sides:
    """Both changes as commits on our base, with their diffs and test targets."""

    base: str
    ours_head: str
    theirs_head: str
    ours: Diff
    theirs: Diff
    our_targets: tuple[str, ...]
    their_targets: tuple[str, ...]
    release: Release | None
    notes: tuple[str, ...]


def _sides(
    cfg: ForkConfig, comp: Competitor, opts: Options, fork: ForkTree, ws: Workspace
) -> Sides:
    """Build the competitor's commit on our base; parse both diffs."""
    git, base, ours_head, label = fork.git, fork.base, fork.head, fork.upstream_label
    ours = (
        parse_diff(_diff_text(git, base, ours_head, ["."]), "our series")
        if ours_head != base
        else Diff(files=())
    )
    base_src = {p: _show(git, base, p) for p in ours.paths}
    new_src = {p: _show(git, ours_head, p) for p in ours.test_paths}
    our_targets = merge_targets(
        cfg.fix.focused_tests, touched_tests(ours, base_src, new_src)
    )
    release: Release | None = None
    notes: list[str] = []
    if comp.kind == "patch":
        theirs_head = _apply_competitor(
            ws, base, Path(comp.ref), label, f"Competitor {Path(comp.ref).name}"
        )
    elif comp.kind == "git":
        theirs_head = _theirs_from_git(git, ws, cfg, comp, base, label)
    else:
        release = _fetch_release(git, cfg, comp, opts.sha256, opts.sdist_url)
        folders = target_folders([*our_targets, *ours.test_paths])
        changed = git.out("diff", "--name-only", base, release.commit).splitlines()
        scope = sorted(
            set(ours.paths)
            | set(cfg.fix.runtime_files)
            | set(in_folders(changed, folders))
        )
        theirs_head = _graft(
            git, base, release.commit, scope, f"{release.label} over our files"
        )
        notes.append(
            f"Their change = {release.label} minus {label} over {len(scope)} "
            "file(s): the files our patches and fork.toml touch plus the files "
            f"changed in our test folders ({', '.join(folders)}); computed at run "
            "time from the two sdists."
        )
    git.run("update-ref", f"{REF_PREFIX}/theirs", theirs_head)
    theirs = parse_diff(_diff_text(git, base, theirs_head, ["."]), comp.ref)
    if opts.their_tests == "files":
        their_targets = changed_test_modules(theirs)
    else:
        tsrc = {p: _show(git, base, p) for p in theirs.test_paths}
        nsrc = {p: _show(git, theirs_head, p) for p in theirs.test_paths}
        their_targets = touched_tests(theirs, tsrc, nsrc)
        if opts.their_tests == "shared":
            mine = set(ours.test_paths)
            their_targets = tuple(t for t in their_targets if target_file(t) in mine)
    return Sides(
        base,
        ours_head,
        theirs_head,
        ours,
        theirs,
        our_targets,
        their_targets,
        release,
        tuple(notes),
    )


def _columns(
    git: Git, s: Sides, base_label: str, their_tree: bool
) -> tuple[list[Column], list[str]]:
    """Every runtime column, and notes on how they are built."""
    o_rt = _layer(git, s.base, s.ours_head, s.ours.runtime_paths, "our runtime", "ours")
    o_t = _layer(git, s.base, s.ours_head, s.ours.test_paths, "our tests", "ours", True)
    t_rt = _layer(
        git, s.base, s.theirs_head, s.theirs.runtime_paths, "their runtime", "theirs"
    )
    t_t = _layer(
        git, s.base, s.theirs_head, s.theirs.test_paths, "their tests", "theirs", True
    )
    tree = f"{base_label} (our base)"
    on_base: dict[str, tuple[Layer, ...]] = {"ours": (o_t,), "theirs": (t_t,)}
    cols = [
        Column(Runtime("base", f"pristine {base_label}", tree), s.base, (), on_base),
        Column(
            Runtime("ours", "base + our runtime change", tree), s.base, (o_rt,), on_base
        ),
        Column(
            Runtime("theirs", "base + their runtime change", tree),
            s.base,
            (t_rt,),
            on_base,
        ),
        Column(
            Runtime("ours+theirs", "base + their runtime + ours on top", tree),
            s.base,
            (t_rt, o_rt),
            on_base,
        ),
    ]
    notes: list[str] = []
    if s.release is not None and their_tree:
        rel = s.release
        ver = rel.key
        tree_b = f"{rel.label} (their full tree)"
        # the release already holds their tests; ours are merged in
        in_release: dict[str, tuple[Layer, ...]] = {"ours": (o_t,), "theirs": ()}
        cols += [
            Column(
                Runtime(ver, f"pristine {rel.label}", tree_b),
                rel.commit,
                (),
                in_release,
            ),
            Column(
                Runtime(f"{ver}+ours", f"{rel.label} + our runtime change", tree_b),
                rel.commit,
                (o_rt,),
                in_release,
            ),
        ]
        notes.append(
            f"Columns {ver} and {ver}+ours run in the whole {rel.label} tree: "
            "their tests as shipped (with their own helpers), our tests and our "
            "runtime change applied by 3-way merge. All columns use the test "
            f"venv of {base_label}."
        )
    return cols, notes


def reconcile(
    cfg: ForkConfig, ref: str, opts: Options | None = None
) -> tuple[ReconcileResult, Path, Path]:
    """Run the whole comparison; return the result and the report paths."""
    opts = opts or Options()
    comp = parse_competitor(ref, cfg.upstream.name)
    fork = materialize(cfg, dest=cfg.workdir / "reconcile" / "repo")
    git = fork.git
    reports = opts.out_dir or cfg.workdir / "reports"
    out = reports / "reconcile"
    with scratch_worktree(git, fork.base, "reconcile") as wt:
        ws = Workspace(wt)
        sides = _sides(cfg, comp, opts, fork, ws)
        shared = set(sides.ours.paths) | set(sides.theirs.paths)
        overlap = compute_overlap(
            sides.ours, sides.theirs, {p: _show(git, sides.base, p) for p in shared}
        )
        columns, notes = _columns(git, sides, fork.upstream_label, opts.their_tree)
        tests = [
            SideTests(
                "ours",
                "focused tests + tests our patches add/change",
                sides.our_targets,
                "base",
                "ours",
            ),
            SideTests(
                "theirs",
                THEIR_TESTS[opts.their_tests],
                sides.their_targets,
                "base",
                # a release's own runtime is the release: its files alone may
                # need more of it to import (column "theirs" shows that)
                sides.release.key if sides.release and opts.their_tree else "theirs",
            ),
        ]
        env = ensure_testenv(cfg, fork.path)
        cache = RunCache(
            None if opts.fresh else cfg.workdir / "reconcile" / "runs",
            env,
            list(opts.pytest_args),
        )
        cells: dict[tuple[str, str], Cell] = {}
        for side in tests:
            for col in columns:
                if not side.targets:
                    continue
                plan = Plan(
                    side.side,
                    col.runtime,
                    col.root,
                    (*col.layers, *col.tests[side.side]),
                    side.targets,
                )
                cells[(side.side, col.runtime.key)] = run_cell(
                    ws, plan, env, out, overlap, cache, opts.timeout
                )
    classified = tuple(classify_side(s, cells) for s in tests)
    cached = sum(1 for c in cells.values() if c.cached and not c.reused)
    if cached:
        notes.append(
            f"{cached} cell(s) reused from earlier reconcile runs of the identical "
            "tree and pytest command (rerun all with --fresh)."
        )
    pristine = cells.get(("theirs", sides.release.key)) if sides.release else None
    kinds = failure_kinds(pristine) if pristine else {}
    if pristine and kinds:
        top = ", ".join(f"{k} x{n}" for k, n in list(kinds.items())[:3])
        notes.append(
            f"{sum(kinds.values())} of their own tests fail in pristine "
            f"{pristine.runtime} here ({top}): this environment (our base's test "
            "venv, no network) differs from theirs, so those tests say nothing "
            "about either change."
        )
    runtimes = tuple(col.runtime for col in columns)
    result = ReconcileResult(
        title=cfg.fix.title,
        competitor=comp.ref,
        competitor_kind=comp.kind,
        base_label=fork.upstream_label,
        ours=sides.ours,
        theirs=sides.theirs,
        overlap=overlap,
        sides=classified,
        runtimes=runtimes,
        cells=cells,
        matrix=build_matrix(runtimes, classified, cells),
        notes=(*sides.notes, *notes),
    )
    md, js = write_reports(
        reports, "reconcile", render_markdown(result), to_json(result)
    )
    return result, md, js


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--with",
        dest="with_ref",
        required=True,
        metavar="REF",
        help="competitor: a patch/mbox file, a git ref of the upstream repo "
        "(e.g. pull/53802/head) or a release NAME==VERSION",
    )
    parser.add_argument("--git-url", help="repository to fetch a git ref from")
    parser.add_argument("--sha256", default="", help="pin of a release competitor")
    parser.add_argument(
        "--sdist-url", default="", help="download a release competitor from here"
    )
    parser.add_argument(
        "--their-tests",
        choices=sorted(THEIR_TESTS),
        default="files",
        help="their tests: " + "; ".join(f"{k}: {v}" for k, v in THEIR_TESTS.items()),
    )
    parser.add_argument(
        "--no-their-tree",
        action="store_true",
        help="release: skip the columns run in the release's full tree",
    )
    parser.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds per pytest run"
    )
    parser.add_argument(
        "--out", type=Path, help="report folder (default: .forkkit/reports)"
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="rerun every cell (default: reuse runs of identical trees)",
    )
    parser.add_argument(
        "--pytest-args",
        nargs=argparse.REMAINDER,
        default=[],
        help="everything after this goes to every pytest run",
    )


def run(args: argparse.Namespace, cfg: ForkConfig) -> int:
    opts = Options(
        sha256=args.sha256,
        sdist_url=args.sdist_url,
        their_tests=args.their_tests,
        their_tree=not args.no_their_tree,
        pytest_args=tuple(args.pytest_args),
        timeout=args.timeout,
        out_dir=args.out,
        fresh=args.fresh,
    )
    _, md, js = reconcile(cfg, args.with_ref, opts)
    print(md.read_text())
    say(f"reports: {md} {js}")
    return 0
