# SPDX-License-Identifier: Apache-2.0
"""``forkkit watch``: does the fork still carry onto upstream's newest release?

Lists the releases on the package index (PEP 691, or a ``file://`` folder),
picks the newest one newer than the pin and runs the rebase onto it as a dry
run, in-process: patches/ and fork.toml are never written. The verdict is
``current`` (nothing newer), ``carries`` (the series still applies and its
red/green proof is valid), ``conflict`` (a patch conflicts, or the proof is
not valid) or ``absorbed`` (upstream has the fix: the fork can retire); each
has its own exit code (:data:`EXIT_CODES`).
"""

from __future__ import annotations

from pathlib import Path

from forkkit.commands.rebase.model import Options
from forkkit.commands.rebase.render import render_markdown as render_rebase
from forkkit.commands.rebase.run import rebase, resolve_target
from forkkit.commands.watch.model import (
    REBASE_STEM,
    WatchOptions,
    WatchResult,
    newer_releases,
    verdict_of,
)
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.output.progress import say, step
from forkkit.output.report import write_reports
from forkkit.upstream.index import sdist_versions

# --- the run ------------------------------------------------------------------


def _candidates(cfg: ForkConfig, opts: WatchOptions) -> list[str]:
    """The releases newer than the pin (newest first), or ``--version``."""
    up = cfg.upstream
    if opts.version:
        if not newer_releases([opts.version], up.version, pre=True):
            raise ForkkitError(
                f"--version {opts.version}: not a release newer than the pin "
                f"{up.label}; give a newer one"
            )
        return [opts.version]
    with step(f"listing the releases of {up.name} on {up.index_url}"):
        versions = sdist_versions(up.name, up.index_url)
    return newer_releases(versions, up.version, pre=opts.pre)


def watch(cfg: ForkConfig, opts: WatchOptions, *, folder: Path) -> WatchResult:
    """Find the newest release, rebase onto it (dry run); reports in ``folder``."""
    if opts.index_url:
        cfg = cfg.with_upstream(index_url=opts.index_url)
    up = cfg.upstream
    newer = _candidates(cfg, opts)
    if not newer:
        why = f"no release of {up.name} newer than {up.version} on the index"
        return WatchResult(
            up.name, up.version, up.index_url, (), "", "current", reason=why
        )
    say(f"newest release newer than the pin: {up.name} {newer[0]}")
    target = resolve_target(cfg, f"{up.name}=={newer[0]}")
    # a dry run (no apply): watch never writes patches/ or fork.toml
    dry_run = Options(related=opts.related, pytest_args=opts.pytest_args)
    result = rebase(cfg, target, dry_run, reports=folder / "red-green")
    md, _ = write_reports(
        folder, REBASE_STEM, markdown=render_rebase(result), data=result.to_json()
    )
    verdict, why = verdict_of(result)
    return WatchResult(
        package=up.name,
        pin=up.version,
        index_url=up.index_url,
        newer=tuple(newer),
        checked=newer[0],
        verdict=verdict,
        reason=why,
        rebase=result,
        rebase_report=md.name,
    )
