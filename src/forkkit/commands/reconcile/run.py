# SPDX-License-Identifier: Apache-2.0
"""``forkkit reconcile --with REF``: weigh our fix against a competing change.

REF is a patch/mbox file, a ref of the upstream git repository (a PR such as
``pull/53802/head``), or a newer release (``vllm==0.32.0``, diffed from our
base over the files we touch). The competitor becomes a commit on our base;
each side's tests then run on each side's runtime (and ours on top of theirs)
and the result is a PR-ready Markdown + JSON report. Analysis is pure
(:mod:`forkkit.commands.reconcile.diffs`); this module does the download and
pytest work, and its git work through :mod:`forkkit.vcs`. A run writes into a
fresh run folder published as ``reports/reconcile/`` (or ``--out``), and exits
0 only when the behaviour matrix was measured whole
(:class:`forkkit.commands.reconcile.diffs.Measurement`).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from forkkit.commands.reconcile.cells import Layer, Plan, RunCache, Workspace, run_cell
from forkkit.commands.reconcile.diffs import (
    Cell,
    ReconcileResult,
    Runtime,
    Side,
    SideTests,
    build_matrix,
    changed_test_modules,
    classify_side,
    compute_overlap,
    failure_kinds,
    in_folders,
    merge_targets,
    target_folders,
    touched_tests,
)
from forkkit.commands.reconcile.render import render_markdown, to_json
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.tree import ForkTree, materialize, tree_of_directory
from forkkit.output.progress import say, step
from forkkit.output.report import append_step_summary, write_reports
from forkkit.patches.diff import Diff, parse_diff
from forkkit.patches.series import failed_hunk, parse_patch_text
from forkkit.patches.testids import target_file
from forkkit.testing.env import ensure_testenv
from forkkit.upstream.index import resolve_sdist
from forkkit.upstream.sdist import extract_sdist, fetch_sdist
from forkkit.vcs import RefUpdate, Repo, combine
from forkkit.vcs.overlay import overlay_commit
from forkkit.workdir import RunFolder, run_folder_at

Kind = Literal["patch", "git", "release"]
REF_PREFIX = "refs/forkkit-reconcile"
STEM = "reconcile"  # reports/reconcile/reconcile.{md,json}
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


def _commit_dir(repo: Repo, src: Path, message: str) -> str:
    """Commit the files of ``src`` (an extracted sdist) as one commit."""
    return repo.commit_tree(tree=tree_of_directory(repo, src), message=message + "\n")


def _diff_text(repo: Repo, a: str, b: str, *, paths: Sequence[str]) -> str:
    return repo.diff(a=a, b=b, paths=paths) if paths else ""


def _layer(
    repo: Repo,
    change: tuple[str, str],
    *,
    paths: tuple[str, ...],
    name: str,
    side: Side,
    per_file: bool = False,
) -> Layer:
    """The diff of ``change`` (base, head) over ``paths``, file by file."""
    a, b = change
    parts = tuple((p, _diff_text(repo, a, b, paths=[p])) for p in paths)
    text = "".join(t for _, t in parts)
    diff = parse_diff(text, name) if text.strip() else None
    return Layer(name, side, parts, diff, per_file)


# --------------------------------------------------------------------------
# Competitor -> commit on our base
# --------------------------------------------------------------------------


def _is_mbox(text: str) -> bool:
    return text.startswith("From ") and "\nSubject:" in text


def _apply_failure(ws: Workspace, patch: Path, *, base_label: str) -> ForkkitError:
    """One line naming the hunk of ``patch`` that does not apply."""
    result = ws.repo.check_patch(patch)
    if result.kind == "hunk":
        where = f"{result.path} line {result.line}"
        try:
            text = patch.read_text(errors="replace")
            where = failed_hunk(parse_patch_text(text, patch), result.path, result.line)
        except ForkkitError:
            pass
        return ForkkitError(
            f"{patch.name}: {where} does not apply to {base_label}; the competitor "
            "targets another upstream: rebase it or compare with a release instead"
        )
    why = result.message or "git apply failed"
    return ForkkitError(f"{patch.name}: does not apply to {base_label} ({why})")


def _apply_competitor(
    ws: Workspace, patch: Path, *, base: str, base_label: str, message: str
) -> str:
    """Commit the patch file ``patch`` on ``base``; one-line error if it fails."""
    ws.reset(base)
    if _is_mbox(patch.read_text(errors="replace")):
        if combine.am_3way(ws.repo, patch).ok:
            head = ws.repo.rev("HEAD")
            assert head is not None
            return head
    elif combine.apply_3way(ws.repo, patch).ok:
        return combine.commit_index(ws.repo, message)
    ws.reset(base)
    raise _apply_failure(ws, patch, base_label=base_label)


def _fetch(repo: Repo, url: str, *, ref: str, dest: str) -> str:
    try:
        return combine.fetch_ref(repo, url=url, ref=ref, dest=dest)
    except combine.FetchError as exc:
        raise ForkkitError(
            f"{url}: cannot fetch {ref!r} ({exc.reason}); offline or wrong ref? pass "
            "the change as a patch file instead: --with PATH.patch"
        ) from None


def _theirs_from_git(
    cfg: ForkConfig, comp: Competitor, *, fork: ForkTree, ws: Workspace
) -> str:
    """Fetch a PR/branch and commit its own changes (vs its merge base) on base."""
    url, rev, repo = cfg.upstream.git_url, cfg.upstream.git_rev, fork.repo
    if not url:
        raise ForkkitError(
            f"{cfg.path.name} [upstream]: git_url is empty; set it or pass --git-url"
        )
    if not rev:
        raise ForkkitError(
            f"{cfg.path.name} [upstream]: git_rev is empty; set the upstream commit "
            "our base corresponds to"
        )
    with step(f"fetching {comp.ref} and {rev} from {url}"):
        theirs = _fetch(repo, url, ref=comp.ref, dest=f"{REF_PREFIX}/competitor")
        upstream = _fetch(repo, url, ref=rev, dest=f"{REF_PREFIX}/upstream")
    merge_base = combine.merge_base(repo, theirs, upstream)
    if merge_base is None:
        raise ForkkitError(
            f"{comp.ref}: no common history with {rev}; pass the "
            "change as a patch file instead"
        )
    text = repo.diff(a=merge_base, b=theirs)
    if not text.strip():
        raise ForkkitError(f"{comp.ref}: no changes relative to its merge base")
    patch = repo.git_dir() / "forkkit-competitor.diff"
    patch.write_text(text)
    msg = f"Competitor {comp.ref} ({theirs[:12]})"
    return _apply_competitor(
        ws, patch, base=fork.base, base_label=fork.upstream_label, message=msg
    )


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
    repo: Repo, cfg: ForkConfig, *, comp: Competitor, opts: Options
) -> Release:
    """Download (sha256-verified), extract and commit the release's full tree."""
    sha256 = opts.sha256
    if not sha256:
        ref = resolve_sdist(cfg.upstream.name, comp.version, cfg.upstream.index_url)
        sha256 = ref.sha256
        say(f"{ref.filename}: index sha256 {sha256} (pin it with --sha256)")
    spec = cfg.with_upstream(
        version=comp.version, sha256=sha256, sdist_url=opts.sdist_url, source="sdist"
    ).upstream
    archive = fetch_sdist(spec, cfg.work.sdist_cache)
    src = extract_sdist(archive, cfg.work.upstream(spec.name, spec.version), sha256)
    key = f"{REF_PREFIX}/release-{spec.version}"
    commit = repo.rev(key)
    marker = f"sha256 {sha256}"
    if not commit or marker not in repo.message(commit):
        with step(f"committing {spec.label} ({archive.name})"):
            commit = _commit_dir(repo, src, f"{spec.label} ({marker})")
        repo.update_refs([RefUpdate(key, commit)])
    return Release(commit, spec.label)


def _theirs_from_release(
    cfg: ForkConfig, release: Release, *, fork: ForkTree, ours: Diff
) -> tuple[str, str]:
    """Their change: the release over our files and changed files in our test
    folders, as a commit on our base; (commit, a note saying so)."""
    # our targets: focused tests + tests in the files our patches touch
    repo, focused = fork.repo, cfg.fix.focused_tests
    folders = target_folders([*focused, *ours.test_paths])
    changed = repo.changed_paths(fork.base, release.commit)
    scope = sorted(
        set(ours.paths) | set(cfg.fix.runtime_files) | set(in_folders(changed, folders))
    )
    theirs_head = overlay_commit(
        repo,
        onto=fork.base,
        source=release.commit,
        paths=scope,
        message=f"{release.label} over our files\n",
    ).commit
    note = (
        f"Their change = {release.label} minus {fork.upstream_label} over "
        f"{len(scope)} file(s): the files our patches and fork.toml touch plus the "
        f"files changed in our test folders ({', '.join(folders)}); computed at run "
        "time from the two sdists."
    )
    return theirs_head, note


def _their_targets(
    repo: Repo, change: tuple[str, str], theirs: Diff, *, ours: Diff, which: str
) -> tuple[str, ...]:
    """Their tests as pytest targets, as ``--their-tests`` asks (THEIR_TESTS)."""
    if which == "files":
        return changed_test_modules(theirs)
    base, head = change
    tsrc = {p: combine.show_text(repo, base, p) for p in theirs.test_paths}
    nsrc = {p: combine.show_text(repo, head, p) for p in theirs.test_paths}
    targets = touched_tests(theirs, tsrc, nsrc)
    if which == "shared":
        mine = set(ours.test_paths)
        targets = tuple(t for t in targets if target_file(t) in mine)
    return targets


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
    out_dir: Path | None = None  # the report folder (default: reports/reconcile)
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
    cfg: ForkConfig,
    comp: Competitor,
    *,
    opts: Options,
    fork: ForkTree,
    ws: Workspace,
) -> Sides:
    """Build the competitor's commit on our base; parse both diffs."""
    repo, base, ours_head = fork.repo, fork.base, fork.head
    ours = (
        parse_diff(_diff_text(repo, base, ours_head, paths=["."]), "our series")
        if ours_head != base
        else Diff(files=())
    )
    base_src = {p: combine.show_text(repo, base, p) for p in ours.paths}
    new_src = {p: combine.show_text(repo, ours_head, p) for p in ours.test_paths}
    our_targets = merge_targets(
        cfg.fix.focused_tests, touched_tests(ours, base_src, new_src)
    )
    release: Release | None = None
    notes: list[str] = []
    if comp.kind == "patch":
        patch = Path(comp.ref)
        msg = f"Competitor {patch.name}"
        label = fork.upstream_label
        theirs_head = _apply_competitor(
            ws, patch, base=base, base_label=label, message=msg
        )
    elif comp.kind == "git":
        theirs_head = _theirs_from_git(cfg, comp, fork=fork, ws=ws)
    else:
        release = _fetch_release(repo, cfg, comp=comp, opts=opts)
        theirs_head, note = _theirs_from_release(cfg, release, fork=fork, ours=ours)
        notes.append(note)
    repo.update_refs([RefUpdate(f"{REF_PREFIX}/theirs", theirs_head)])
    theirs = parse_diff(_diff_text(repo, base, theirs_head, paths=["."]), comp.ref)
    their_targets = _their_targets(
        repo, (base, theirs_head), theirs, ours=ours, which=opts.their_tests
    )
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
    repo: Repo, s: Sides, *, base_label: str, their_tree: bool
) -> tuple[list[Column], list[str]]:
    """Every runtime column, and notes on how they are built."""
    ours, theirs = (s.base, s.ours_head), (s.base, s.theirs_head)
    o_rt = _layer(
        repo, ours, paths=s.ours.runtime_paths, name="our runtime", side="ours"
    )
    o_t = _layer(
        repo,
        ours,
        paths=s.ours.test_paths,
        name="our tests",
        side="ours",
        per_file=True,
    )
    t_rt = _layer(
        repo, theirs, paths=s.theirs.runtime_paths, name="their runtime", side="theirs"
    )
    t_t = _layer(
        repo,
        theirs,
        paths=s.theirs.test_paths,
        name="their tests",
        side="theirs",
        per_file=True,
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
    if s.release is None or not their_tree:
        return cols, []
    return [*cols, *_release_columns(s.release, o_rt, o_t)], [
        f"Columns {s.release.key} and {s.release.key}+ours run in the whole "
        f"{s.release.label} tree: their tests as shipped (with their own helpers), "
        "our tests and our runtime change applied by 3-way merge. All columns use "
        f"the test venv of {base_label}."
    ]


def _release_columns(rel: Release, o_rt: Layer, o_t: Layer) -> list[Column]:
    """The release's pristine tree, and it with our runtime change."""
    ver, tree_b = rel.key, f"{rel.label} (their full tree)"
    # the release already holds their tests; ours are merged in
    in_release: dict[str, tuple[Layer, ...]] = {"ours": (o_t,), "theirs": ()}
    return [
        Column(
            Runtime(ver, f"pristine {rel.label}", tree_b), rel.commit, (), in_release
        ),
        Column(
            Runtime(f"{ver}+ours", f"{rel.label} + our runtime change", tree_b),
            rel.commit,
            (o_rt,),
            in_release,
        ),
    ]


def reconcile(
    cfg: ForkConfig, ref: str, opts: Options | None = None
) -> tuple[ReconcileResult, Path, Path]:
    """Run the whole comparison; return the result and the published reports.

    Everything the run writes (reports, the layers it applied, JUnit files and
    logs) goes into a fresh run folder, published whole as
    ``reports/reconcile/`` (or as ``--out``) however the run ends.
    """
    opts = opts or Options()
    comp = parse_competitor(ref, cfg.upstream.name)
    with _report_folder(cfg, opts.out_dir) as run:
        result = _published(_compare(cfg, comp, opts=opts, out=run.path), run)
        write_reports(run.path, STEM, render_markdown(result), to_json(result))
    return result, run.dest / f"{STEM}.md", run.dest / f"{STEM}.json"


def _report_folder(
    cfg: ForkConfig, out: Path | None
) -> AbstractContextManager[RunFolder]:
    return cfg.work.run_folder(STEM) if out is None else run_folder_at(out, STEM)


def _published(result: ReconcileResult, run: RunFolder) -> ReconcileResult:
    """Paths into the run folder (commands, logs) as they read once published."""

    def moved(text: str) -> str:
        return text.replace(str(run.path), str(run.dest))

    cells = {
        k: replace(c, command=moved(c.command), note=moved(c.note))
        for k, c in result.cells.items()
    }
    return replace(result, cells=cells)


def _compare(
    cfg: ForkConfig, comp: Competitor, *, opts: Options, out: Path
) -> ReconcileResult:
    """Build both sides and every column, run every cell; the result."""
    fork = materialize(cfg, dest=cfg.work.reconcile_repo)
    repo = fork.repo
    with repo.worktree(fork.base, "reconcile") as wt:
        ws = Workspace(wt)
        sides = _sides(cfg, comp, opts=opts, fork=fork, ws=ws)
        shared = set(sides.ours.paths) | set(sides.theirs.paths)
        base_src = {p: combine.show_text(repo, sides.base, p) for p in shared}
        overlap = compute_overlap(sides.ours, sides.theirs, base_src)
        columns, notes = _columns(
            repo, sides, base_label=fork.upstream_label, their_tree=opts.their_tree
        )
        tests = _side_tests(sides, opts)
        env = ensure_testenv(cfg, fork.path)
        cache = RunCache(
            cfg.work.results, env, list(opts.pytest_args), fresh=opts.fresh
        )
        cells: dict[tuple[str, str], Cell] = {}
        for side in tests:
            for col in columns:
                if not side.targets:
                    continue
                layers = (*col.layers, *col.tests[side.side])
                plan = Plan(side.side, col.runtime, col.root, layers, side.targets)
                cells[(side.side, col.runtime.key)] = run_cell(
                    ws,
                    plan,
                    env=env,
                    out=out,
                    overlap=overlap,
                    cache=cache,
                    timeout=opts.timeout,
                )
    classified = tuple(classify_side(s, cells) for s in tests)
    runtimes = tuple(col.runtime for col in columns)
    return ReconcileResult(
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
        notes=(*sides.notes, *notes, *_cell_notes(cells, sides.release)),
    )


def _side_tests(sides: Sides, opts: Options) -> list[SideTests]:
    """Each side's tests, and the runtimes they are classified on."""
    return [
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


def _cell_notes(
    cells: dict[tuple[str, str], Cell], release: Release | None
) -> list[str]:
    """Notes on reused runs and on their tests failing in their own tree."""
    notes: list[str] = []
    cached = sum(1 for c in cells.values() if c.cached and not c.reused)
    if cached:
        notes.append(
            f"{cached} cell(s) reused from earlier reconcile runs of the identical "
            "tree and pytest command (rerun all with --fresh)."
        )
    pristine = cells.get(("theirs", release.key)) if release else None
    kinds = failure_kinds(pristine) if pristine else {}
    if pristine and kinds:
        top = ", ".join(f"{k} x{n}" for k, n in list(kinds.items())[:3])
        notes.append(
            f"{sum(kinds.values())} of their own tests fail in pristine "
            f"{pristine.runtime} here ({top}): this environment (our base's test "
            "venv, no network) differs from theirs, so those tests say nothing "
            "about either change."
        )
    return notes


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
        "--out",
        type=Path,
        help="report folder, holding this run's output only "
        "(default: .forkkit/reports/reconcile)",
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


def main(args: argparse.Namespace, cfg: ForkConfig) -> int:
    """Exit 0 only when every cell of the behaviour matrix was measured; 1 when
    some or none were (:class:`~forkkit.commands.reconcile.diffs.Measurement`,
    named in the report and on the last line)."""
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
    result, md, js = reconcile(cfg, args.with_ref, opts)
    markdown = md.read_text()
    print(markdown)
    append_step_summary(markdown)
    say(f"reports: {md} {js}")
    measurement = result.measurement
    say(f"reconcile: {measurement.summary()}")
    return 0 if measurement.verdict == "measured" else 1
