"""``forkkit rebase``: move the patch series onto a newer upstream.

Both pristine trees live as root commits in one persistent repo
(``<workdir>/rebase/repo``), with the series applied to the old base, so
3-way merges find the preimage blobs and ``git rerere`` keeps its cache
(``.git/rr-cache``) across runs. Per patch, in order: textual absorption
(patch-id, reverse-apply), ``git am``, cherry-pick (3-way, rerere replay), and
semantic absorption (its FAIL_TO_PASS tests already pass on the new upstream
with only its test changes). The refreshed series goes to
``<workdir>/rebase/out``; ``--apply`` writes it to patches/ and re-pins
fork.toml (:mod:`forkkit.commands.rebase.apply`) only when the whole rebase succeeded
and red/green proved it, or with ``--apply-unproven`` when only the proof is
missing (the report then says unproven).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import urllib.parse
import urllib.request
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from forkkit.cliopts import add_proof_options
from forkkit.commands.rebase.absorb import (
    Conflict,
    PatchResult,
    RebaseResult,
    SemanticCheck,
    Status,
    conflict_regions,
    parse_onto,
    patch_targets,
    render_markdown,
    repin_toml,
    semantic_verdict,
    split_runtime,
    verdict_line,
)
from forkkit.commands.rebase.apply import (
    SERIES,
    NewSeries,
    export_new,
    unknown_patches,
    write_back,
)
from forkkit.config import ForkConfig, UpstreamSpec
from forkkit.errors import ForkkitError
from forkkit.fork.seriesfiles import load_series
from forkkit.fork.tree import apply_series, make_base
from forkkit.output.progress import say, step
from forkkit.output.report import append_step_summary, write_reports
from forkkit.patches.diff import split_hunks
from forkkit.patches.series import Patch, Series
from forkkit.patches.testids import target_file
from forkkit.testing.junit import JunitReport, parse_junit
from forkkit.upstream.index import SdistRef, resolve_sdist, sdist_filename_matches
from forkkit.upstream.sdist import sha256_file
from forkkit.vcs import Repo, merge

BRANCH = "rebase"
TESTS_ONLY_TRAILER = "Forkkit-Tests-Only"
REPORT_STEM = "rebase"


@dataclass(frozen=True)
class Target:
    """The upstream to rebase onto and the fork.toml lines that would pin it."""

    spec: UpstreamSpec
    trust: str
    pin: dict[str, str]
    optional: tuple[str, ...] = ()


@dataclass(frozen=True)
class Options:
    """How far the rebase goes."""

    apply: bool = False
    apply_unproven: bool = False  # --apply without a valid red/green proof
    semantic: bool = True
    red_green: bool = True
    related: bool = True
    pytest_args: tuple[str, ...] = ()


# --- target resolution ------------------------------------------------------


def _lookup_sdist(name: str, version: str, index_url: str) -> SdistRef:
    """Find the sdist on the index; a ``file://`` index is a local folder."""
    if not index_url.startswith("file:"):
        return resolve_sdist(name, version, index_url)
    folder = Path(urllib.request.url2pathname(urllib.parse.urlparse(index_url).path))
    folder = folder / name
    for path in sorted(folder.glob("*")) if folder.is_dir() else []:
        if sdist_filename_matches(path.name, name, version):
            return SdistRef(path.name, path.as_uri(), sha256_file(path))
    raise ForkkitError(
        f"{folder}: no sdist of {name}=={version} in the local index; publish it there"
    )


def resolve_target(
    cfg: ForkConfig,
    onto: str | None = None,
    onto_rev: str | None = None,
    sha256: str | None = None,
) -> Target:
    """The new upstream: a PyPI version (sha256 trusted on first use, unless
    ``--sha256`` pins it) or a git revision."""
    up = cfg.upstream
    if onto_rev:
        spec = cfg.with_upstream(source="git", git_rev=onto_rev).upstream
        trust = f"git revision {onto_rev} of {up.git_url}"
        return Target(spec, trust, {"source": "git", "git_rev": onto_rev})
    if not onto:
        raise ForkkitError(
            "rebase needs a target: 'forkkit rebase --onto NAME==VERSION' "
            "or 'forkkit rebase --onto-rev REV'"
        )
    version = parse_onto(onto, up.name)
    with step(f"resolving the sdist of {up.name}=={version}"):
        ref = _lookup_sdist(up.name, version, up.index_url)
    if sha256:
        if ref.sha256 and ref.sha256 != sha256:
            raise ForkkitError(
                f"{ref.filename}: the index says sha256 {ref.sha256}, not the "
                f"--sha256 {sha256} you pinned; check which file you trust"
            )
        trust = f"sha256 {sha256} pinned by --sha256 ({ref.filename})"
    elif not ref.sha256:
        raise ForkkitError(
            f"{ref.filename}: the index publishes no sha256; pin the file you trust "
            "with 'forkkit rebase --sha256 HEX'"
        )
    else:
        sha256 = ref.sha256
        trust = (
            f"trust on first use: sha256 {sha256} of {ref.filename} as published "
            f"by {up.index_url}; review before --apply commits it to fork.toml"
        )
    spec = cfg.with_upstream(
        source="sdist", version=version, sha256=sha256, sdist_url=ref.url
    ).upstream
    pin = {"version": version, "sha256": sha256, "sdist_url": ref.url}
    if up.source != "sdist":
        pin["source"] = "sdist"
    return Target(spec, trust, pin, optional=("sdist_url",))


# --- the rebase repo --------------------------------------------------------


def open_repo(path: Path) -> tuple[Repo, int]:
    """The persistent rebase repo, rerere on; salvage a previous conflict.

    A conflict left by an earlier run may have been resolved by hand since:
    ``git rerere`` records that resolution before the repo is reset, so this
    run replays it. Returns the repo and how many resolutions were recorded.
    """
    repo = Repo(path) if Repo.is_repo_root(path) else Repo.init(path)
    for lock in merge.clear_stale_locks(repo):
        say(f"removed {lock} (left by an interrupted run)")
    merge.enable_rerere(repo)
    recorded = merge.record_resolutions(repo)
    if recorded:
        say(f"recorded {recorded} conflict resolution(s) from the previous run")
    merge.reset_scratch(repo)
    return repo, recorded


def _failing_hunks(repo: Repo, patch: Patch) -> dict[str, list[str]]:
    """Per file, the patch's hunks that do not apply to the worktree."""
    bad: dict[str, list[str]] = {}
    for hunk in split_hunks(patch.path.read_text(errors="replace")):
        if not repo.check_patch(hunk.text).ok:
            bad.setdefault(hunk.path, []).append(hunk.describe())
    return bad


# --- the run ----------------------------------------------------------------


@dataclass
class _Run:
    """State of one rebase run (I/O side)."""

    cfg: ForkConfig
    target: Target
    opts: Options
    repo: Repo
    series: Series
    stack: ExitStack  # holds the scratch worktree tests run in
    series_text: str  # patches/series as read at the start, comments and all
    notes: list[str] = field(default_factory=list)
    check: Repo | None = None
    last_red: str | None = None  # new base + the last checked patch's tests

    # -- tests ---------------------------------------------------------------

    def _checkout(self, commit: str) -> Path:
        if self.check is None:
            self.check = self.stack.enter_context(self.repo.worktree(commit, "check"))
        self.check.detach(commit)
        return self.check.path

    def _pytest(self, commit: str, targets: Sequence[str], name: str) -> JunitReport:
        """Run ``targets`` on ``commit``'s tree; a JUnit result is reused from
        the result cache when the same tree, env, arguments and targets ran."""
        from forkkit.testing.cache import ResultCache
        from forkkit.testing.env import ensure_testenv
        from forkkit.testing.pytest_run import run_pytest
        from forkkit.testing.suiterun import result_key

        tree = self._checkout(commit)
        env = ensure_testenv(self.cfg, tree)
        cache = ResultCache(self.cfg.work.results)
        key = result_key(env, self.repo.tree(commit), targets, self.opts.pytest_args)
        hit = cache.get(key)
        if hit is not None:
            report = parse_junit(hit.junit)
            say(f"{name}: {report.summary()} (cached: same tree, env and tests)")
            return report
        with step(f"pytest {name}: {' '.join(targets)}"):
            run = run_pytest(
                env,
                tree,
                list(targets),
                self.cfg.work.rebase_dir("runs"),
                name,
                list(self.opts.pytest_args),
                stream=False,
            )
        report = parse_junit(run.junit)
        if not run.timed_out:
            cache.put(key, run)
        say(f"{name}: {report.summary()} (log {run.log})")
        return report

    def _fail_to_pass_old(
        self, patch: Patch, old_commit: str, tests: list[str], targets: list[str]
    ) -> list[str]:
        """The patch's FAIL_TO_PASS tests on the old base: its tests without vs
        with its runtime change, on top of the patches before it."""
        from forkkit.testing.classify import classify

        red = merge.overlay(
            self.repo,
            base=f"{old_commit}^",
            files=merge.entries(self.repo, tests, rev=old_commit),
            message=f"red: {patch.name} tests without its runtime change (old base)",
        )
        stem = patch.path.stem[:40]
        red_run = self._pytest(red, targets, f"{stem}-old-red")
        green_run = self._pytest(old_commit, targets, f"{stem}-old-green")
        return classify(red_run, green_run).ids("FAIL_TO_PASS")

    def semantic(
        self,
        patch: Patch,
        old_commit: str,
        new_prev: str,
        test_source: str | None,
    ) -> SemanticCheck | None:
        """Do the patch's FAIL_TO_PASS tests pass on the new upstream without it?

        ``test_source`` holds the patch's rebased test files (a commit, or
        ``None`` for the index of a conflicted cherry-pick).
        """
        self.last_red = None
        if not self.opts.semantic:
            return None
        runtime, tests = split_runtime(patch.files, self.cfg.fix.runtime_files)
        targets = patch_targets(self.cfg.fix.focused_tests, patch.files)
        if not runtime or not tests or not targets:
            return SemanticCheck(
                tuple(targets), (), note="not applicable: no runtime/test split"
            )
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
            return SemanticCheck(
                tuple(targets), (), note="not checked: the test changes conflict too"
            )
        try:
            f2p = self._fail_to_pass_old(patch, old_commit, tests, targets)
            if not f2p:
                return SemanticCheck(
                    tuple(targets),
                    (),
                    note="not applicable: no FAIL_TO_PASS test on the old base",
                )
            red = merge.overlay(
                self.repo,
                base=new_prev,
                files=files,
                message=f"red: {patch.name} tests without its runtime change "
                "(new base)",
            )
            self.last_red = red
            red_new = self._pytest(red, run_targets, f"{patch.path.stem[:40]}-new-red")
        except ForkkitError as exc:
            return SemanticCheck(tuple(targets), (), note=f"not checked: {exc}")
        return semantic_verdict(targets, f2p, red_new, conflicted)

    # -- applying ------------------------------------------------------------

    def _conflicts(self, bad: dict[str, list[str]]) -> tuple[Conflict, ...]:
        found = []
        for path in self.repo.unmerged():
            f = self.repo.path / path
            text = f.read_text(errors="replace") if f.is_file() else ""
            found.append(
                Conflict(path, tuple(conflict_regions(text)), tuple(bad.get(path, [])))
            )
        return tuple(found)

    def _tests_only(self, old_commit: str, red: str) -> str:
        """Replace HEAD by a commit of only the patch's tests (``red``'s tree).

        Later patches may build on those tests; :func:`prune_tests_only`
        drops the commit again where nothing does.
        """
        repo = self.repo
        msg = (
            f"[Tests] {repo.message(old_commit)}\n{TESTS_ONLY_TRAILER}: runtime "
            f"change absorbed by {self.target.spec.label}\n"
        )
        parent = repo.rev(f"{red}^")
        assert parent  # an overlay commit has one
        tree = repo.tree(red)
        if tree == repo.tree(parent):
            repo.reset_hard(parent)
            return ""  # its tests are upstream's already
        author = repo.author(old_commit)
        sha = repo.commit_tree(tree=tree, message=msg, parents=[parent], author=author)
        repo.reset_hard(sha)
        return sha

    def _textually_absorbed(
        self, patch: Patch, old_commit: str, old_base: str, new_base: str
    ) -> str:
        """Why the patch is already in the new upstream ("" if it is not)."""
        repo = self.repo
        mine = repo.patch_id(repo.diff(a=f"{old_commit}^", b=old_commit))
        theirs = repo.patch_id(repo.diff(a=old_base, b=new_base, paths=patch.files))
        if mine and mine == theirs:
            return "patch-id equals upstream's change to " + ", ".join(patch.files)
        if repo.check_patch(patch.path, reverse=True).ok:
            return "already in the new upstream (the patch reverse-applies)"
        return ""

    def _pick(
        self, patch: Patch, res: PatchResult, *, head: str, bad: dict[str, list[str]]
    ) -> Status | PatchResult:
        """Cherry-pick (3-way, rerere): the status, or the final verdict."""
        repo = self.repo
        pick = merge.cherry_pick(repo, res.old_commit)
        if pick.ok:
            return "3way"
        if pick.empty:
            merge.skip_pick(repo)
            repo.reset_hard(head)
            return dataclasses.replace(
                res,
                status="absorbed-textual",
                detail="applying it to the new upstream changes nothing",
            )
        if pick.replayed:
            merge.continue_pick(repo)
            return "rerere"
        if not pick.unmerged:
            raise ForkkitError(
                f"{patch.name}: cherry-pick of {res.old_commit[:12]} failed "
                f"({pick.message}); inspect {repo.path}"
            )
        conflicts = self._conflicts(bad)
        sem = self.semantic(patch, res.old_commit, head, None)
        if sem and sem.absorbed and self.last_red:
            merge.abort_pick(repo)
            return dataclasses.replace(
                res,
                status="absorbed-semantic",
                detail="conflicts with upstream's own change, which already fixes it",
                semantic=sem,
                new_commit=self._tests_only(res.old_commit, self.last_red),
            )
        return dataclasses.replace(
            res, status="conflict", conflicts=conflicts, semantic=sem,
            detail=f"{len(conflicts)} conflicted file(s)",
        )  # fmt: skip

    def apply_one(
        self, patch: Patch, old_commit: str, old_base: str, new_base: str
    ) -> PatchResult:
        """Move one patch onto HEAD and judge it.

        HEAD advances by the rebased commit, or by a tests-only commit when
        the patch is absorbed semantically (later patches may need its tests).
        """
        repo = self.repo
        res = PatchResult(patch.name, patch.subject, "clean", old_commit=old_commit)
        head = merge.head(repo)
        why = self._textually_absorbed(patch, old_commit, old_base, new_base)
        if why:
            return dataclasses.replace(res, status="absorbed-textual", detail=why)
        status: Status = "clean"
        bad: dict[str, list[str]] = {}
        if not repo.am(patch.path).ok:
            bad = _failing_hunks(repo, patch)
            picked = self._pick(patch, res, head=head, bad=bad)
            if isinstance(picked, PatchResult):
                return picked
            status = picked
        new_commit = merge.head(repo)
        detail = {
            "clean": "",
            "3way": "hunks moved: " + "; ".join(h for v in bad.values() for h in v),
            "rerere": "replayed recorded resolution(s) from .git/rr-cache",
        }[status]
        sem = self.semantic(patch, old_commit, head, new_commit)
        if sem and sem.absorbed and self.last_red:
            return dataclasses.replace(
                res,
                status="absorbed-semantic",
                detail=f"applies ({status}) but upstream already fixes it differently",
                semantic=sem,
                new_commit=self._tests_only(old_commit, self.last_red),
            )
        return dataclasses.replace(
            res, status=status, detail=detail, new_commit=new_commit, semantic=sem
        )


def prune_tests_only(
    repo: Repo, new_base: str, results: Sequence[PatchResult]
) -> list[PatchResult]:
    """Drop the tests-only commits of absorbed patches that nothing builds on.

    Each is dropped (last first) when every later commit still cherry-picks
    cleanly without it; otherwise it stays and the result says which patch
    needs it. With nothing carried, all go: the fork can retire.
    """
    out = list(results)
    chain = [i for i, r in enumerate(out) if r.new_commit]
    if not any(out[i].carries for i in chain):
        for i in chain:
            out[i] = dataclasses.replace(out[i], new_commit="")
        chain = []
    for idx in reversed([i for i in chain if out[i].absorbed]):
        keep = [i for i in chain if i != idx]
        repo.force_checkout(branch=BRANCH, rev=new_base)
        picked: dict[int, str] = {}
        for i in keep:
            if not merge.cherry_pick(repo, out[i].new_commit).ok:
                merge.abort_pick(repo)
                out[idx] = dataclasses.replace(
                    out[idx],
                    detail=f"{out[idx].detail}; its test changes stay as a "
                    f"tests-only patch: {out[i].name} builds on them",
                )
                break
            picked[i] = merge.head(repo)
        else:
            out[idx] = dataclasses.replace(out[idx], new_commit="")
            for i, sha in picked.items():
                out[i] = dataclasses.replace(out[i], new_commit=sha)
            chain = keep
    head = out[chain[-1]].new_commit if chain else new_base
    repo.force_checkout(branch=BRANCH, rev=head)
    return out


def _prove(
    run: _Run, new: NewSeries, targets: list[str], out_dir: Path
) -> tuple[dict[str, object] | None, str, bool | None]:
    """Red/green on the refreshed series over the new upstream."""
    try:
        from forkkit.commands.redgreen.render import render_json, render_markdown
        from forkkit.commands.redgreen.run import prove
    except ImportError:
        run.notes.append(
            "red/green not run: forkkit.commands.redgreen is not available"
        )
        return None, "", None
    from forkkit.fork.tree import materialize

    new_cfg = dataclasses.replace(
        run.cfg,
        upstream=run.target.spec,
        patches_dir=new.folder,
        series_file=new.folder / SERIES,
    )
    tree = materialize(new_cfg, dest=run.cfg.work.rebase_dir("fork"), force=True)
    result = prove(
        new_cfg,
        tree,
        tests=targets or None,
        pytest_args=list(run.opts.pytest_args),
        related=run.opts.related,
        out_dir=out_dir,
    )
    return render_json(result), render_markdown(result), bool(result.valid)


def _targets(run: _Run, result: RebaseResult) -> list[str]:
    """The focused tests of the patches still carried."""
    targets: list[str] = []
    for patch, r in zip(run.series.patches, result.patches, strict=True):
        if r.carries:
            targets += [
                t
                for t in patch_targets(run.cfg.fix.focused_tests, patch.files)
                if t not in targets
            ]
    return targets


def _move(run: _Run, old_base: str, new_base: str) -> tuple[list[PatchResult], str]:
    """Apply the series to the old base, then move each patch onto the new one;
    return the verdicts and the old series' HEAD."""
    repo, series = run.repo, run.series
    repo.detach(old_base)
    old = apply_series(repo, series, f"{run.cfg.upstream.label} (the current pin)")
    old_head = merge.head(repo)
    repo.force_checkout(branch=BRANCH, rev=new_base)
    results: list[PatchResult] = []
    for i, patch in enumerate(series.patches):
        if results and results[-1].status in ("conflict", "not-tried"):
            results.append(PatchResult(patch.name, patch.subject, "not-tried"))
            continue
        say(f"rebasing {i + 1}/{len(series.patches)}: {patch.name}")
        res = run.apply_one(patch, old[i][1], old_base, new_base)
        say(f"{patch.name}: {res.status} {res.detail}".rstrip())
        results.append(res)
    return results, old_head


def _export(
    run: _Run,
    base: RebaseResult,
    *,
    old: tuple[str, str],
    new_base: str,
    toml: str,
) -> tuple[RebaseResult, NewSeries]:
    """Export the rebased series (and the new fork.toml) to the out folder."""
    repo = run.repo
    results = prune_tests_only(repo, new_base, base.patches)
    new_head = merge.head(repo)
    out = run.cfg.work.rebase_dir("out")
    new = export_new(
        repo,
        base=new_base,
        head=new_head,
        folder=out / "patches",
        old_text=run.series_text,
        kept=[r.name for r in results if r.new_commit],
    )
    range_diff = merge.range_diff(repo, old=old, new=(new_base, new_head))
    (out / "fork.toml").write_text(toml)
    (out / "range-diff.txt").write_text(range_diff + "\n")
    result = dataclasses.replace(
        base,
        patches=tuple(results),
        out_dir=str(out),
        new_series=new.names,
        range_diff=range_diff,
    )
    return result, new


def rebase(
    cfg: ForkConfig,
    target: Target,
    opts: Options = Options(),
    *,
    reports: Path | None = None,
) -> RebaseResult:
    """Rebase the series onto ``target``; write back only when proven.

    The red/green proof's reports go to ``reports`` (default: under the
    rebase folder of the workdir).
    """
    series = load_series(cfg.series_file, cfg.patches_dir)
    series_text = cfg.series_file.read_text()
    repo, recorded = open_repo(cfg.work.rebase_repo)
    old_base, _ = make_base(repo, cfg.upstream, cfg.work)
    new_base, new_commit = make_base(repo, target.spec, cfg.work)
    pin = dict(target.pin)
    if new_commit and "git_rev" in pin:
        pin["git_rev"] = new_commit
    new_toml = repin_toml(cfg.path.read_text(), pin, target.optional)
    with ExitStack() as stack:
        run = _Run(cfg, target, opts, repo, series, stack, series_text)
        if recorded:
            run.notes.append(
                f"recorded {recorded} resolution(s) made after the last run"
            )
        results, old_head = _move(run, old_base, new_base)
    base = RebaseResult(
        old_label=cfg.upstream.label,
        new_label=target.spec.label,
        new_pin=pin,
        trust=target.trust,
        patches=tuple(results),
        repo=str(repo.path),
    )
    if base.conflicted:
        for p in base.conflicted:
            for c in p.conflicts:
                say(f"CONFLICT {p.name}: {c.describe()}")
        return dataclasses.replace(base, notes=tuple(run.notes))
    result, new = _export(
        run, base, old=(old_base, old_head), new_base=new_base, toml=new_toml
    )
    if result.new_series and opts.red_green:
        red_green = reports or cfg.work.rebase_dir("red-green")
        proof, proof_md, valid = _prove(run, new, _targets(run, result), red_green)
        result = dataclasses.replace(
            result, proof=proof, proof_markdown=proof_md, proof_valid=valid
        )
    for path in unknown_patches(cfg.patches_dir, [p.name for p in series.patches]):
        say(f"left alone: {path} (not in the series; forkkit did not write it)")
        run.notes.append(f"`{path.name}` in patches/ is not in the series: left alone")
    if opts.apply:
        result = _apply(run, result, new, new_toml)
    return dataclasses.replace(result, notes=tuple(run.notes))


def _apply(run: _Run, result: RebaseResult, new: NewSeries, toml: str) -> RebaseResult:
    """``--apply``: write the result back when it is proven (or, with
    ``--apply-unproven``, when only the proof is missing)."""
    if not result.ok:
        run.notes.append("--apply: nothing written (the rebase is not proven)")
        return result
    if result.unproven and not run.opts.apply_unproven:
        why = (
            "--apply: nothing written: the result is unproven (no valid red/green "
            "on it); rerun without --no-red-green, or as 'forkkit rebase "
            "--apply-unproven'"
        )
        say(why)
        run.notes.append(why)
        return result
    old = [p.name for p in run.series.patches]
    write_back(run.cfg, run.repo, new, old=old, toml=toml)
    flag = " (UNPROVEN: --apply-unproven)" if result.unproven else ""
    say(f"wrote {len(new.names)} patch(es) to {run.cfg.patches_dir}; re-pinned{flag}")
    return dataclasses.replace(result, written=True)


# --- CLI --------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``forkkit rebase`` options."""
    g = parser.add_mutually_exclusive_group(required=True)
    g.add_argument(
        "--onto", metavar="NAME==VERSION", help="a PyPI release, e.g. vllm==0.31.0"
    )
    g.add_argument(
        "--onto-rev", metavar="REV", help="an upstream git revision (git source)"
    )
    parser.add_argument(
        "--sha256", help="pin the new sdist's sha256 instead of trusting the index"
    )
    parser.add_argument(
        "--apply",
        action="store_true",
        help="when rebased and proven by red/green, replace patches/ and re-pin "
        "fork.toml (default: dry run into <workdir>/rebase/out)",
    )
    parser.add_argument(
        "--apply-unproven",
        action="store_true",
        help="like --apply, but write a result that has no valid red/green proof "
        "(e.g. with --no-red-green); the report says unproven",
    )
    parser.add_argument(
        "--no-semantic",
        action="store_true",
        help="skip the test-based (semantic) absorption check",
    )
    parser.add_argument(
        "--no-red-green", action="store_true", help="skip red/green on the result"
    )
    add_proof_options(parser)


def main(args: argparse.Namespace, cfg: ForkConfig) -> int:
    """Run the rebase, publish its reports as reports/rebase/; exit 0 only
    when it rebased (and, with --apply, wrote the result)."""
    opts = Options(
        apply=args.apply or args.apply_unproven,
        apply_unproven=args.apply_unproven,
        semantic=not args.no_semantic,
        red_green=not args.no_red_green,
        related=not args.focused_only,
        pytest_args=tuple(args.pytest_args),
    )
    with cfg.work.run_folder(REPORT_STEM) as folder:
        target = resolve_target(cfg, args.onto, args.onto_rev, args.sha256)
        result = rebase(cfg, target, opts, reports=folder.path / "red-green")
        markdown = render_markdown(result)
        md, js = write_reports(folder.path, REPORT_STEM, markdown, result.to_json())
    append_step_summary(markdown)
    for p in result.patches:
        print(f"{p.name}: {p.status}" + (f" ({p.detail})" if p.detail else ""))
    print(verdict_line(result))
    print(
        f"report: {folder.dest / md.name}\njson: {folder.dest / js.name}",
        file=sys.stderr,
    )
    return 0 if result.ok and (result.written or not opts.apply) else 1
