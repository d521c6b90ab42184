"""``forkkit rebase``: move the patch series onto a newer upstream.

Both pristine trees live as root commits in one persistent repo
(``<workdir>/rebase/repo``), with the series applied to the old base, so
3-way merges find the preimage blobs and ``git rerere`` keeps its cache
(``.git/rr-cache``) across runs. Per patch, in order: textual absorption
(patch-id, reverse-apply), ``git am``, cherry-pick (3-way, rerere replay), and
semantic absorption (its FAIL_TO_PASS tests already pass on the new upstream
with only its test changes). The refreshed series goes to
``<workdir>/rebase/out``; ``--apply`` copies it to patches/ and re-pins
fork.toml only when the whole rebase (and its red/green proof) succeeded.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import sys
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from forkkit.absorb import (
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
    split_hunks,
    split_runtime,
    verdict_line,
)
from forkkit.config import ForkConfig, UpstreamSpec
from forkkit.errors import ForkkitError
from forkkit.forktree import BASE_TAG, _make_base, apply_series, export_series
from forkkit.git import Git, GitError
from forkkit.junit import JunitReport, parse_junit
from forkkit.progress import say, step
from forkkit.report import write_reports
from forkkit.series import Patch, Series, load_series
from forkkit.upstream import (
    SdistRef,
    resolve_sdist,
    sdist_filename_matches,
    sha256_file,
)

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
        raise ForkkitError("rebase: pass --onto NAME==VERSION or --onto-rev REV")
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
            f"{ref.filename}: the index publishes no sha256; pass --sha256 to pin it"
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


def _gitdir(git: Git) -> Path:
    return Path(git.out("rev-parse", "--absolute-git-dir"))


def open_repo(path: Path) -> tuple[Git, int]:
    """The persistent rebase repo, rerere on; salvage a previous conflict.

    A conflict left by an earlier run may have been resolved by hand since:
    ``git rerere`` records that resolution before the repo is reset, so this
    run replays it. Returns the repo and how many resolutions were recorded.
    """
    git = Git(path) if (path / ".git").exists() else Git.init(path)
    for key, value in (
        ("rerere.enabled", "true"),
        ("rerere.autoupdate", "true"),
        ("gc.rerereResolved", "3650"),
        ("gc.rerereUnresolved", "3650"),
    ):
        git.run("config", key, value)
    recorded = 0
    if (_gitdir(git) / "MERGE_RR").exists():
        proc = git.run("rerere", check=False)
        recorded = (proc.stdout + proc.stderr).count("Recorded resolution for")
        if recorded:
            say(f"recorded {recorded} conflict resolution(s) from the previous run")
    git.run("cherry-pick", "--abort", check=False)
    git.run("am", "--abort", check=False)
    if git.rev("HEAD"):
        git.run("reset", "-q", "--hard")
    git.run("clean", "-qfd")
    return git, recorded


def _base(git: Git, spec: UpstreamSpec, workdir: Path) -> tuple[str, str | None]:
    """The root commit of a pristine tree (sdist bases cached by their ident)."""
    ref = "refs/forkkit/bases/" + hashlib.sha256(spec.ident.encode()).hexdigest()[:16]
    if spec.source == "sdist" and (sha := git.rev(ref)):
        return sha, None
    sha, upstream_commit = _make_base(git, spec, workdir)
    git.run("update-ref", ref, sha)
    return sha, upstream_commit


def _entries(git: Git, rev: str | None, paths: Sequence[str]) -> dict[str, str | None]:
    """``mode,blob`` of each path at ``rev`` (``None``: the index, stage 0)."""
    found: dict[str, str | None] = dict.fromkeys(paths)
    if not paths:
        return found
    if rev is None:
        for line in git.out("ls-files", "-s", "--", *paths).splitlines():
            meta, path = line.split("\t", 1)
            mode, blob, stage = meta.split()
            if stage == "0":
                found[path] = f"{mode},{blob}"
    else:
        for line in git.out("ls-tree", rev, "--", *paths).splitlines():
            meta, path = line.split("\t", 1)
            mode, _, blob = meta.split()
            found[path] = f"{mode},{blob}"
    return found


def _overlay(git: Git, base: str, entries: dict[str, str | None], msg: str) -> str:
    """A commit: ``base`` with the given paths replaced (``None``: removed)."""
    index = _gitdir(git) / "forkkit-overlay.idx"
    env = {"GIT_INDEX_FILE": str(index)}
    git.run("read-tree", base, extra_env=env)
    for path, entry in entries.items():
        if entry is None:
            git.run("update-index", "--force-remove", "--", path, extra_env=env)
        else:
            git.run(
                "update-index", "--add", "--cacheinfo", f"{entry},{path}", extra_env=env
            )
    tree = git.run("write-tree", extra_env=env).stdout.strip()
    index.unlink(missing_ok=True)
    return git.out("commit-tree", tree, "-p", base, "-m", msg)


def _patch_id(git: Git, *diff_args: str) -> str:
    diff = git.run("diff", "--no-color", "--full-index", *diff_args).stdout
    if not diff.strip():
        return ""
    out = git.run("patch-id", "--stable", input=diff).stdout.split()
    return out[0] if out else ""


def _failing_hunks(git: Git, patch: Patch) -> dict[str, list[str]]:
    """Per file, the patch's hunks that do not apply to the worktree."""
    bad: dict[str, list[str]] = {}
    for hunk in split_hunks(patch.path.read_text(errors="replace")):
        if git.run("apply", "--check", input=hunk.text, check=False).returncode:
            bad.setdefault(hunk.path, []).append(hunk.describe())
    return bad


# --- the run ----------------------------------------------------------------


@dataclass
class _Run:
    """State of one rebase run (I/O side)."""

    cfg: ForkConfig
    target: Target
    opts: Options
    work: Path
    git: Git
    series: Series
    notes: list[str] = field(default_factory=list)
    check: Git | None = None
    last_red: str | None = None  # new base + the last checked patch's tests

    # -- tests ---------------------------------------------------------------

    def _checkout(self, commit: str) -> Path:
        path = self.work / "check"
        if self.check is None:
            self.git.run("worktree", "prune")
            if path.exists():
                shutil.rmtree(path)
            self.git.run("worktree", "add", "-q", "--detach", "-f", str(path), commit)
            self.check = Git(path)
        self.check.run("checkout", "-q", "-f", "--detach", commit)
        self.check.run("clean", "-qfdx")
        return path

    def _pytest(self, commit: str, targets: Sequence[str], name: str) -> JunitReport:
        """Run ``targets`` on ``commit``'s tree; a JUnit result is reused when
        the same commit, targets, pytest args and interpreter ran before."""
        from forkkit.pytest_run import run_pytest
        from forkkit.testenv import ensure_testenv

        key = json.dumps(
            [
                commit,
                list(targets),
                list(self.opts.pytest_args),
                os.environ.get("FORKKIT_TESTENV_PYTHON", ""),
                dataclasses.asdict(self.cfg.testenv),
            ]
        )
        cached = (
            self.work
            / "cache"
            / f"junit-{hashlib.sha256(key.encode()).hexdigest()[:20]}.xml"
        )
        if cached.is_file():
            report = parse_junit(cached)
            say(f"{name}: {report.summary()} (reused {cached.name}: same tree, tests)")
            return report
        tree = self._checkout(commit)
        env = ensure_testenv(self.cfg, tree)
        with step(f"pytest {name}: {' '.join(targets)}"):
            run = run_pytest(
                env,
                tree,
                list(targets),
                self.work / "runs",
                name,
                list(self.opts.pytest_args),
                stream=False,
            )
        report = parse_junit(run.junit)
        if not run.timed_out:
            cached.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(run.junit, cached)
        say(f"{name}: {report.summary()} (log {run.log})")
        return report

    def _fail_to_pass_old(
        self, patch: Patch, old_commit: str, tests: list[str], targets: list[str]
    ) -> list[str]:
        """The patch's FAIL_TO_PASS tests on the old base: its tests without vs
        with its runtime change, on top of the patches before it."""
        from forkkit.classify import classify

        red = _overlay(
            self.git,
            f"{old_commit}^",
            _entries(self.git, old_commit, tests),
            f"red: {patch.name} tests without its runtime change (old base)",
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
        entries = _entries(self.git, test_source, tests)
        conflicted: list[str] = []
        if test_source is None:
            # a conflicted cherry-pick: its conflicted test files keep the
            # new upstream's version, and their tests are not judged
            unmerged = set(self._unmerged())
            conflicted = [p for p in tests if p in unmerged]
            entries.update(_entries(self.git, new_prev, conflicted))
        run_targets = [t for t in targets if t.split("::", 1)[0] not in conflicted]
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
            red = _overlay(
                self.git,
                new_prev,
                entries,
                f"red: {patch.name} tests without its runtime change (new base)",
            )
            self.last_red = red
            red_new = self._pytest(red, run_targets, f"{patch.path.stem[:40]}-new-red")
        except ForkkitError as exc:
            return SemanticCheck(tuple(targets), (), note=f"not checked: {exc}")
        return semantic_verdict(targets, f2p, red_new, conflicted)

    # -- applying ------------------------------------------------------------

    def _unmerged(self) -> list[str]:
        out = self.git.out("diff", "--name-only", "--diff-filter=U")
        return out.splitlines()

    def _conflicts(self, bad: dict[str, list[str]]) -> tuple[Conflict, ...]:
        found = []
        for path in self._unmerged():
            f = self.git.cwd / path
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
        git = self.git
        name, email, date = git.out(
            "log", "-1", "--format=%an%x00%ae%x00%aI", old_commit
        ).split("\0")
        msg = git.out("log", "-1", "--format=%B", old_commit)
        msg = (
            f"[Tests] {msg}\n{TESTS_ONLY_TRAILER}: runtime change absorbed by "
            f"{self.target.spec.label}\n"
        )
        env = {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": date,
        }
        parent = git.out("rev-parse", f"{red}^")
        tree = git.out("rev-parse", f"{red}^{{tree}}")
        if tree == git.out("rev-parse", f"{parent}^{{tree}}"):
            git.run("reset", "-q", "--hard", parent)
            return ""  # its tests are upstream's already
        sha = git.run(
            "commit-tree", tree, "-p", parent, "-F", "-", input=msg, extra_env=env
        ).stdout.strip()
        git.run("reset", "-q", "--hard", sha)
        return sha

    def apply_one(
        self, patch: Patch, old_commit: str, old_base: str, new_base: str
    ) -> PatchResult:
        """Move one patch onto HEAD and judge it.

        HEAD advances by the rebased commit, or by a tests-only commit when
        the patch is absorbed semantically (later patches may need its tests).
        """
        git = self.git
        res = PatchResult(patch.name, patch.subject, "clean", old_commit=old_commit)
        head = git.out("rev-parse", "HEAD")
        mine = _patch_id(git, f"{old_commit}^", old_commit)
        theirs = _patch_id(git, old_base, new_base, "--", *patch.files)
        if mine and mine == theirs:
            return dataclasses.replace(
                res,
                status="absorbed-textual",
                detail="patch-id equals upstream's change to " + ", ".join(patch.files),
            )
        if git.ok("apply", "--check", "-R", str(patch.path)):
            return dataclasses.replace(
                res,
                status="absorbed-textual",
                detail="already in the new upstream (the patch reverse-applies)",
            )
        status: Status = "clean"
        proc = git.run(
            "am", "-q", "--keep-cr", "--keep-non-patch",
            "--committer-date-is-author-date",
            str(patch.path), check=False,
        )  # fmt: skip
        bad: dict[str, list[str]] = {}
        if proc.returncode != 0:
            git.run("am", "--abort", check=False)
            bad = _failing_hunks(git, patch)
            status = "3way"
            pick = git.run("cherry-pick", old_commit, check=False)
            if pick.returncode != 0:
                unmerged = self._unmerged()
                if not unmerged and git.ok("diff", "--cached", "--quiet"):
                    git.run("cherry-pick", "--skip", check=False)
                    git.run("reset", "-q", "--hard", head)
                    return dataclasses.replace(
                        res,
                        status="absorbed-textual",
                        detail="applying it to the new upstream changes nothing",
                    )
                if not unmerged and "previous resolution" in pick.stdout + pick.stderr:
                    git.run(
                        "cherry-pick", "--continue", extra_env={"GIT_EDITOR": "true"}
                    )
                    status = "rerere"
                elif not unmerged:
                    raise GitError(
                        ["cherry-pick", old_commit], pick.returncode, pick.stderr
                    )
                else:
                    conflicts = self._conflicts(bad)
                    sem = self.semantic(patch, old_commit, head, None)
                    if sem and sem.absorbed and self.last_red:
                        git.run("cherry-pick", "--abort", check=False)
                        return dataclasses.replace(
                            res,
                            status="absorbed-semantic",
                            detail="conflicts with upstream's own change, which "
                            "already fixes it",
                            semantic=sem,
                            new_commit=self._tests_only(old_commit, self.last_red),
                        )
                    return dataclasses.replace(
                        res, status="conflict", conflicts=conflicts, semantic=sem,
                        detail=f"{len(conflicts)} conflicted file(s)",
                    )  # fmt: skip
        new_commit = git.out("rev-parse", "HEAD")
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
    git: Git, new_base: str, results: Sequence[PatchResult]
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
        git.run("checkout", "-q", "-f", "-B", BRANCH, new_base)
        picked: dict[int, str] = {}
        for i in keep:
            if git.run("cherry-pick", out[i].new_commit, check=False).returncode:
                git.run("cherry-pick", "--abort", check=False)
                out[idx] = dataclasses.replace(
                    out[idx],
                    detail=f"{out[idx].detail}; its test changes stay as a "
                    f"tests-only patch: {out[i].name} builds on them",
                )
                break
            picked[i] = git.out("rev-parse", "HEAD")
        else:
            out[idx] = dataclasses.replace(out[idx], new_commit="")
            for i, sha in picked.items():
                out[i] = dataclasses.replace(out[i], new_commit=sha)
            chain = keep
    head = out[chain[-1]].new_commit if chain else new_base
    git.run("checkout", "-q", "-f", "-B", BRANCH, head)
    return out


def _prove(
    cfg: ForkConfig, run: _Run, out: Path, targets: list[str]
) -> tuple[dict[str, object] | None, str, bool | None]:
    """Red/green on the refreshed series over the new upstream."""
    try:
        from forkkit.redgreen import prove
    except ImportError:
        run.notes.append("red/green not run: forkkit.redgreen is not available")
        return None, "", None
    from forkkit.forktree import materialize

    new_cfg = dataclasses.replace(
        cfg,
        upstream=run.target.spec,
        patches_dir=out / "patches",
        series_file=out / "patches" / "series",
    )
    tree = materialize(new_cfg, dest=run.work / "fork", force=True)
    result = prove(
        new_cfg,
        tree,
        tests=targets or None,
        pytest_args=list(run.opts.pytest_args),
        related=run.opts.related,
        out_dir=cfg.workdir / "reports" / "rebase-red-green",
    )
    return result.to_json(), result.markdown(), bool(result.valid)


def _range_diff(git: Git, old_base: str, old_head: str, base: str, head: str) -> str:
    """``git range-diff`` of the old series against the new one."""
    if head != base:
        return git.out(
            "range-diff", "--no-color", f"{old_base}..{old_head}", f"{base}..{head}"
        )
    # git refuses an empty range: every old commit was dropped
    log = git.out("log", "--reverse", "--format=%h %s", f"{old_base}..{old_head}")
    return "\n".join(
        f"{n}:  {sha} < -:  ------- {subject}"
        for n, (sha, _, subject) in enumerate(
            (ln.partition(" ") for ln in log.splitlines()), 1
        )
    )


def _write_back(cfg: ForkConfig, out: Path, names: Sequence[str], toml: str) -> None:
    """Replace patches/ and re-pin fork.toml from the dry-run output."""
    cfg.patches_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        tmp = cfg.patches_dir / f".{name}.tmp"
        shutil.copyfile(out / "patches" / name, tmp)
        tmp.replace(cfg.patches_dir / name)
    for old in cfg.patches_dir.glob("*.patch"):
        if old.name not in names:
            old.unlink()
    for path, text in (
        (cfg.series_file, "".join(f"{n}\n" for n in names)),
        (cfg.path, toml),
    ):
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text)
        tmp.replace(path)


def rebase(cfg: ForkConfig, target: Target, opts: Options = Options()) -> RebaseResult:
    """Rebase the series onto ``target``; write back only on full success."""
    series = load_series(cfg.series_file, cfg.patches_dir)
    toml_text = cfg.path.read_text()
    work = cfg.workdir / "rebase"
    git, recorded = open_repo(work / "repo")
    run = _Run(cfg, target, opts, work, git, series)
    if recorded:
        run.notes.append(f"recorded {recorded} resolution(s) made after the last run")
    old_base, _ = _base(git, cfg.upstream, cfg.workdir)
    new_base, new_commit = _base(git, target.spec, cfg.workdir)
    pin = dict(target.pin)
    if new_commit and "git_rev" in pin:
        pin["git_rev"] = new_commit
    new_toml = repin_toml(toml_text, pin, target.optional)
    git.run("checkout", "-q", "-f", "--detach", old_base)
    old = apply_series(git, series, f"{cfg.upstream.label} (the current pin)")
    old_head = git.out("rev-parse", "HEAD")
    git.run("checkout", "-q", "-f", "-B", BRANCH, new_base)
    results: list[PatchResult] = []
    for i, patch in enumerate(series.patches):
        if results and results[-1].status in ("conflict", "not-tried"):
            results.append(PatchResult(patch.name, patch.subject, "not-tried"))
            continue
        say(f"rebasing {i + 1}/{len(series.patches)}: {patch.name}")
        res = run.apply_one(patch, old[i][1], old_base, new_base)
        say(f"{patch.name}: {res.status} {res.detail}".rstrip())
        results.append(res)
    base = RebaseResult(
        old_label=cfg.upstream.label,
        new_label=target.spec.label,
        new_pin=pin,
        trust=target.trust,
        patches=tuple(results),
        repo=str(git.cwd),
    )
    if base.conflicted:
        for p in base.conflicted:
            for c in p.conflicts:
                say(f"CONFLICT {p.name}: {c.describe()}")
        return dataclasses.replace(base, notes=tuple(run.notes))
    results = prune_tests_only(git, new_base, results)
    base = dataclasses.replace(base, patches=tuple(results))
    new_head = git.out("rev-parse", "HEAD")
    range_diff = _range_diff(git, old_base, old_head, new_base, new_head)
    out = work / "out"
    if out.exists():
        shutil.rmtree(out)
    (out / "patches").mkdir(parents=True)
    git.run("tag", "-f", BASE_TAG, new_base)
    names = export_series(git.cwd, out / "patches", out / "patches" / "series")
    (out / "fork.toml").write_text(new_toml)
    (out / "range-diff.txt").write_text(range_diff + "\n")
    proof: dict[str, object] | None = None
    proof_md = ""
    valid: bool | None = None
    if names and opts.red_green:
        targets: list[str] = []
        for patch, r in zip(series.patches, results, strict=True):
            if r.carries:
                targets += [
                    t
                    for t in patch_targets(cfg.fix.focused_tests, patch.files)
                    if t not in targets
                ]
        proof, proof_md, valid = _prove(cfg, run, out, targets)
    result = dataclasses.replace(
        base,
        out_dir=str(out),
        new_series=tuple(names),
        range_diff=range_diff,
        proof=proof,
        proof_markdown=proof_md,
        proof_valid=valid,
    )
    proven = valid is True or not names or not opts.red_green
    if opts.apply:
        if result.ok and proven:
            _write_back(cfg, out, names, new_toml)
            result = dataclasses.replace(result, written=True)
            say(f"wrote {len(names)} patch(es) to {cfg.patches_dir}; re-pinned")
        else:
            run.notes.append("--apply: nothing written (the rebase is not proven)")
    return dataclasses.replace(result, notes=tuple(run.notes))


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
        help="on success, replace patches/ and re-pin fork.toml (default: dry run "
        "into <workdir>/rebase/out)",
    )
    parser.add_argument(
        "--no-semantic",
        action="store_true",
        help="skip the test-based (semantic) absorption check",
    )
    parser.add_argument(
        "--no-red-green", action="store_true", help="skip red/green on the result"
    )
    parser.add_argument(
        "--focused-only",
        action="store_true",
        help="red/green on the focused tests only (not the related suites)",
    )
    parser.add_argument(
        "--pytest-args",
        nargs=argparse.REMAINDER,
        default=[],
        help="everything after this goes to pytest",
    )


def run(args: argparse.Namespace, cfg: ForkConfig) -> int:
    """Run the rebase, write the reports, exit 0 only on success."""
    target = resolve_target(cfg, args.onto, args.onto_rev, args.sha256)
    opts = Options(
        apply=args.apply,
        semantic=not args.no_semantic,
        red_green=not args.no_red_green,
        related=not args.focused_only,
        pytest_args=tuple(args.pytest_args),
    )
    result = rebase(cfg, target, opts)
    md, js = write_reports(
        cfg.workdir / "reports", REPORT_STEM, render_markdown(result), result.to_json()
    )
    for p in result.patches:
        print(f"{p.name}: {p.status}" + (f" ({p.detail})" if p.detail else ""))
    print(verdict_line(result))
    print(f"report: {md}\njson: {js}", file=sys.stderr)
    return 0 if result.ok else 1
