# SPDX-License-Identifier: Apache-2.0
"""``forkkit watch``: does the fork still carry onto upstream's newest release?

Lists the releases on the package index (PEP 691, or a ``file://`` folder),
picks the newest one newer than the pin and runs the rebase onto it as a dry
run, in-process: patches/ and fork.toml are never written. The verdict is
``current`` (nothing newer), ``carries`` (the series still applies and its
red/green proof is valid), ``conflict`` (a patch conflicts, or the proof is
not valid) or ``absorbed`` (upstream has the fix: the fork can retire); each
has its own exit code (:data:`~forkkit.services.watch.model.EXITS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.line import Line
from forkkit.output.progress import say, step
from forkkit.output.report import write_reports
from forkkit.pin import GitPin, SdistPin, public_url
from forkkit.services.rebase.doc import rebase_doc
from forkkit.services.rebase.model import Options, RebaseResult, Target
from forkkit.services.rebase.pending import pending_patches
from forkkit.services.rebase.render import render_markdown as render_rebase
from forkkit.services.rebase.run import rebase, resolve_target
from forkkit.services.watch.audit import history_rows
from forkkit.services.watch.history import History
from forkkit.services.watch.model import (
    REBASE_STEM,
    Verdict,
    WatchOptions,
    WatchResult,
    verdict_of,
)
from forkkit.upstream.git import branch_moved
from forkkit.upstream.index import listed_versions
from forkkit.upstream.release import newer_releases

# --- the run ------------------------------------------------------------------


def _candidates(line: Line, opts: WatchOptions) -> tuple[list[str], list[str]]:
    """The releases newer than the pin (newest first), or ``--version``
    (with ``--all``: every release newer than the pin up to ``--version``);
    and the newer ones the index has no sdist of (skipped, named)."""
    up = line.upstream
    pin = up.release.version
    if opts.version:
        if not newer_releases([opts.version], pin, pre=True):
            raise ForkkitError(
                f"--version {opts.version}: not a release newer than the pin "
                f"{up.label}; give a newer one"
            )
        if not opts.all:
            return [opts.version], []
    with step(f"listing the releases of {up.name} on {up.index_url}"):
        versions, wheels_only = listed_versions(up.name, up.index_url)
    if not versions:
        raise ForkkitError(
            f"{up.index_url}: lists no release of {up.name} at all; check the "
            "index URL (--index-url, or index_url in fork.toml)"
        )
    newer = newer_releases(versions, pin, pre=opts.pre)
    if opts.version:
        if opts.version not in newer:
            raise ForkkitError(
                f"--version {opts.version}: no sdist of it on {up.index_url}; "
                "give a release the index has"
            )
        newer = newer[newer.index(opts.version) :]
    skipped = newer_releases(wheels_only, pin, pre=opts.pre)
    if skipped:
        say(f"skipped, no sdist to build from: {up.name} {', '.join(skipped)}")
    return newer, skipped


def _history(
    line: Line, newer: list[str], dry_run: Options, *, folder: Path
) -> tuple[History, RebaseResult]:
    """``--all``: every release newer than the pin (oldest first), each a dry
    run from the pin; the newest one with the proof, as plain watch does."""
    up = line.upstream
    releases = list(reversed(newer))
    targets = {v: resolve_target(line, f"{up.name}=={v}") for v in releases}

    def run_one(target: Target, opts: Options, release: str) -> RebaseResult:
        return rebase(line, target, opts, reports=folder / "red-green")

    series = line.series
    patches = tuple(p.name for p in series.patches)
    rows, newest = history_rows(
        line,
        releases=releases,
        patches=patches,
        targets=targets,
        opts=dry_run,
        run_rebase=run_one,
    )
    assert newest is not None  # the newest release is always run
    fixes = line.fixes.fixes
    history = History(
        package=up.name,
        pin=up.release.version,
        patches=patches,
        rows=tuple(rows),
        fixes=tuple((f.id, f.patches) for f in fixes),
    )
    return history, newest


def watch(line: Line, opts: WatchOptions, *, folder: Path) -> WatchResult:
    """Find the newest upstream (a release, or the head of the followed git
    branch), rebase onto it (dry run); reports in ``folder``.

    With ``opts.all``, every newer release gets a row of the history too.
    The patches that wait in ``patches/pending.toml`` are tried after the
    series, as the next rebase tries them.
    """
    line = line.with_extra(pending_patches(line)) if line.pending else line
    return line.upstream.match(_Watch(line, opts, folder))


@dataclass(frozen=True)
class _Watch:
    """What is newer for each kind of pin: releases on the index, or the
    followed branch's head."""

    line: Line
    opts: WatchOptions
    folder: Path

    def sdist(self, pin: SdistPin) -> WatchResult:
        return watch_releases(self.line, self.opts, folder=self.folder)

    def git(self, pin: GitPin) -> WatchResult:
        return watch_branch(self.line, self.opts, folder=self.folder)


def watch_releases(line: Line, opts: WatchOptions, *, folder: Path) -> WatchResult:
    """A release line: the newest release newer than the pin (with
    ``opts.all`` every one), each a dry-run rebase from the pin."""
    if opts.index_url:
        line = line.with_upstream(index_url=opts.index_url)
    up = line.upstream
    pin = up.release.version
    newer, skipped = _candidates(line, opts)
    if not newer:
        why = f"no release of {up.name} newer than {pin} on the index"
        return WatchResult(
            up.name,
            pin,
            up.index_url,
            (),
            "",
            "current",
            reason=why,
            skipped=tuple(skipped),
        )
    say(f"newest release newer than the pin: {up.name} {newer[0]}")
    dry_run = _dry_run(opts)
    history: History | None = None
    if opts.all:
        history, result = _history(line, newer, dry_run, folder=folder)
    else:
        target = resolve_target(line, f"{up.name}=={newer[0]}")
        result = rebase(line, target, dry_run, reports=folder / "red-green")
    verdict, why = _headline(history, verdict_of(result))
    return WatchResult(
        package=up.name,
        pin=pin,
        index_url=up.index_url,
        newer=tuple(newer),
        checked=newer[0],
        verdict=verdict,
        reason=why,
        rebase=result,
        rebase_report=_rebase_report(folder, result),
        history=history,
        skipped=tuple(skipped),
    )


def _headline(
    history: History | None, newest: tuple[Verdict, str]
) -> tuple[Verdict, str]:
    """The verdict of a watch: the newest release's, unless the history shows
    every fix absorbed by an earlier one (a later release that moved or
    rewrote the file does not bring a fix back)."""
    first = history.fix_first_absorbed() if history else {}
    if not first or not all(first.values()) or newest[0] == "absorbed":
        return newest
    when = ", ".join(f"{fid} in {release}" for fid, release in first.items())
    return "absorbed", (
        f"every fix is absorbed upstream ({when}): the fork can retire; the "
        f"newest release says: {newest[1]}"
    )


def _dry_run(opts: WatchOptions) -> Options:
    """The rebase options of a watch: a dry run (watch never writes patches/
    or fork.toml)."""
    return Options(
        related=opts.related, pytest_args=opts.pytest_args, parallel=opts.parallel
    )


def _rebase_report(folder: Path, result: RebaseResult) -> str:
    md, _ = write_reports(
        folder,
        REBASE_STEM,
        markdown=render_rebase(result),
        report=rebase_doc(result),
    )
    return md.name


def watch_branch(line: Line, opts: WatchOptions, *, folder: Path) -> WatchResult:
    """A git line: the followed branch's (or tag's) head against the pinned
    commit; a dry-run rebase onto it when it moved."""
    if opts.all or opts.version or opts.index_url:
        raise ForkkitError(
            "watch --all, --version and --index-url follow releases; this line "
            'follows a git branch (fork.toml [upstream] source = "git")'
        )
    up = line.upstream
    git = up.commit_pin
    moved = branch_moved(line.work.rebase_repo, git)
    follows = f"{git.rev} of {public_url(git.url)}"
    if moved is None:
        why = f"{git.rev} is still at the pinned commit {git.commit[:12]}"
        return WatchResult(
            up.name, git.commit, "", (), "", "current", reason=why, follows=follows
        )
    head, new = moved
    say(f"{git.rev} moved: {len(new)} new commit(s), head {head[:12]}")
    target = Target.git(up.changed(git_commit=head))
    result = rebase(line, target, _dry_run(opts), reports=folder / "red-green")
    verdict, why = verdict_of(result)
    return WatchResult(
        package=up.name,
        pin=git.commit,
        index_url="",
        newer=new,
        checked=head,
        verdict=verdict,
        reason=why,
        rebase=result,
        rebase_report=_rebase_report(folder, result),
        follows=follows,
    )
