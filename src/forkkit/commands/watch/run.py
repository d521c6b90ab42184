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

import argparse
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from forkkit.cliopts import add_proof_options
from forkkit.commands.rebase.absorb import RebaseResult
from forkkit.commands.rebase.absorb import render_markdown as render_rebase
from forkkit.commands.rebase.run import Options, rebase, resolve_target
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.output.progress import say, step
from forkkit.output.report import append_step_summary, write_reports
from forkkit.upstream.index import sdist_versions

Verdict = Literal["current", "carries", "conflict", "absorbed"]
EXIT_CODES: dict[Verdict, int] = {
    "current": 0,
    "carries": 10,
    "conflict": 20,
    "absorbed": 30,
}
REPORT_STEM = "watch"
REBASE_STEM = "rebase"  # the rebase report, inside the watch report folder

# --- versions -----------------------------------------------------------------

# key, is a pre-release (or dev release); None: not a version we can order
Parsed = tuple[Any, bool] | None
_FALLBACK = re.compile(
    r"(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?"
)


def fallback_version(text: str) -> Parsed:
    """A PEP 440 ordering key for normalized ``X.Y.Z[{a|b|rc}N][.postN][.devN]``
    versions, used when ``packaging`` is not installed."""
    m = _FALLBACK.fullmatch(text.strip().lower().removeprefix("v"))
    if not m:
        return None
    rel, phase, num, post, dev = m.groups()
    release = tuple(int(x) for x in rel.split("."))
    while len(release) > 1 and release[-1] == 0:
        release = release[:-1]
    if phase:
        pre = (("a", "b", "rc").index(phase), int(num))
    elif dev is not None and post is None:
        pre = (-1, 0)  # 1.0.dev1 sorts before 1.0a1
    else:
        pre = (3, 0)  # a final (or post) release
    post_key = int(post) if post is not None else -1
    dev_key = (0, int(dev)) if dev is not None else (1, 0)
    return (release, pre, post_key, dev_key), bool(phase) or dev is not None


def _version_parser() -> Callable[[str], Parsed]:
    """``packaging.version`` when installed, else :func:`fallback_version`."""
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:
        return fallback_version

    def parse(text: str) -> Parsed:
        try:
            version = Version(text)
        except InvalidVersion:
            return None
        return version, version.is_prerelease

    return parse


def newer_releases(
    versions: Iterable[str],
    pin: str,
    *,
    pre: bool = False,
    parse: Callable[[str], Parsed] | None = None,
) -> list[str]:
    """The versions newer than ``pin``, newest first.

    Pre-releases (and dev releases) only with ``pre``; versions that are not
    PEP 440 are skipped. A ``pin`` that is not PEP 440 is an error.
    """
    parse = parse or _version_parser()
    pinned = parse(pin)
    if pinned is None:
        raise ForkkitError(
            f"fork.toml [upstream] version {pin!r}: not a PEP 440 version, so "
            "newer releases cannot be told apart; fix the pin"
        )
    found: dict[str, Any] = {}
    for text in versions:
        parsed = parse(text)
        if parsed is None or (parsed[1] and not pre):
            continue
        if parsed[0] > pinned[0]:
            found[text] = parsed[0]
    return sorted(found, key=lambda v: found[v], reverse=True)


# --- the result ---------------------------------------------------------------


@dataclass(frozen=True)
class WatchOptions:
    """What ``forkkit watch`` checks and how."""

    index_url: str = ""  # overrides fork.toml's index_url
    version: str = ""  # check this release instead of the newest
    pre: bool = False
    related: bool = True
    pytest_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class WatchResult:
    """The release checked and what the dry-run rebase onto it says."""

    package: str
    pin: str
    index_url: str
    newer: tuple[str, ...]  # releases newer than the pin, newest first
    checked: str  # the release rebased onto ("" when current)
    verdict: Verdict
    reason: str
    rebase: RebaseResult | None = None
    rebase_report: str = ""  # the rebase report's file, beside watch.md

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_json(self) -> dict[str, Any]:
        r = self.rebase
        return {
            "package": self.package,
            "pin": self.pin,
            "index_url": self.index_url,
            "newer": list(self.newer),
            "checked": self.checked,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "rebase_report": self.rebase_report,
            "rebase": None
            if r is None
            else {
                "outcome": r.outcome,
                "proof_valid": r.proof_valid,
                "can_retire": r.can_retire,
                "patches": [
                    {"name": p.name, "status": p.status, "detail": p.detail}
                    for p in r.patches
                ],
            },
        }


def verdict_of(result: RebaseResult) -> tuple[Verdict, str]:
    """The watch verdict of a dry-run rebase, and why."""
    new = result.new_label
    if result.conflicted:
        names = ", ".join(p.name for p in result.conflicted)
        return "conflict", f"{names} conflicts with {new}"
    if result.can_retire:
        return "absorbed", f"every patch is absorbed by {new}: the fork can retire"
    if result.proof_valid is False:
        return "conflict", f"the series applies to {new}, but its red/green fails"
    if result.proof_valid is not True:
        return "conflict", f"the series applies to {new}, but red/green did not run"
    why = f"the series still applies to {new} and its red/green proof is valid"
    if result.absorbed:
        why += "; absorbed there: " + ", ".join(p.name for p in result.absorbed)
    return "carries", why


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
    md, _ = write_reports(folder, REBASE_STEM, render_rebase(result), result.to_json())
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


# --- CLI ----------------------------------------------------------------------

_EPILOG = """\
exit codes:
  0   current: no release newer than the pin
  10  carries: the series still applies to the newest release, proof valid
  20  conflict: a patch conflicts there, or its red/green proof is not valid
  30  absorbed: upstream has the fix, the fork can retire
  2   bad input or an error (unreachable index, unknown --version, ...)

Reports: <workdir>/reports/watch/ (watch.md, watch.json, the rebase report
and its red/green proof); the Markdown is appended to $GITHUB_STEP_SUMMARY
when that is set. patches/ and fork.toml are never written.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``forkkit watch`` options."""
    parser.description = (
        "Dry-run rebase of the series onto the newest upstream release newer\n"
        "than the pin (pre-releases only with --pre), and its verdict."
    )
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "--index-url",
        default="",
        metavar="URL",
        help="PEP 691 simple index (or file:// folder) instead of fork.toml's",
    )
    parser.add_argument(
        "--version",
        default="",
        metavar="X",
        help="check this release instead of the newest one",
    )
    parser.add_argument(
        "--pre", action="store_true", help="consider pre-releases (rc, beta, dev)"
    )
    add_proof_options(parser)


def run(args: argparse.Namespace, cfg: ForkConfig) -> int:
    """Watch, publish reports/watch/, exit with the verdict's code."""
    from forkkit.commands.watch.render import render_markdown

    opts = WatchOptions(
        index_url=args.index_url,
        version=args.version,
        pre=args.pre,
        related=not args.focused_only,
        pytest_args=tuple(args.pytest_args),
    )
    with cfg.work.run_folder(REPORT_STEM) as folder:
        result = watch(cfg, opts, folder=folder.path)
        text = render_markdown(result, shown=folder.dest)
        md, js = write_reports(folder.path, REPORT_STEM, text, result.to_json())
    append_step_summary(text)
    print(f"{result.verdict}: {result.reason}")
    print(
        f"report: {folder.dest / md.name}\njson: {folder.dest / js.name}",
        file=sys.stderr,
    )
    return result.exit_code
