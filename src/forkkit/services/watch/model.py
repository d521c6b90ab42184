# SPDX-License-Identifier: Apache-2.0
"""The watch verdicts, release ordering and result (pure: no I/O)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from forkkit.output.verdicts import ExitTable
from forkkit.services.rebase.model import RebaseResult
from forkkit.services.watch.history import History

Verdict = Literal["current", "carries", "conflict", "absorbed"]
# The one table of the verdicts: exit code and meaning. --help, the advice,
# the noxfile and the workflows read it (tests check each verdict is here).
EXITS: ExitTable[Verdict] = ExitTable(
    rows={
        "current": (0, "nothing newer than the pin (release, or the followed branch)"),
        "carries": (10, "the series still applies to the newest upstream, proof valid"),
        "conflict": (
            20,
            "a patch conflicts there, or its red/green proof is not valid",
        ),
        "absorbed": (30, "upstream has the fix, the fork can retire"),
    },
    errors="unreachable index, unknown --version, ...",
)
# The watch job (nox -s watch, .github/workflows/watch.yml) passes on these.
PASSING: tuple[Verdict, ...] = ("current", "carries")


REPORT_STEM = "watch"
REBASE_STEM = "rebase"  # the rebase report, inside the watch report folder

# --- the result ---------------------------------------------------------------


@dataclass(frozen=True)
class WatchOptions:
    """What ``forkkit watch`` checks and how."""

    index_url: str = ""  # overrides fork.toml's index_url
    version: str = ""  # check this release instead of the newest
    pre: bool = False
    related: bool = True
    pytest_args: tuple[str, ...] = ()
    all: bool = False  # every newer release, not only the newest (history)
    parallel: str = "off"  # each proof's runs side by side: on, off, auto


@dataclass(frozen=True)
class WatchResult:
    """The release checked and what the dry-run rebase onto it says."""

    package: str
    pin: str
    index_url: str
    newer: tuple[str, ...]  # releases newer than the pin, newest first
    checked: str  # the release (or commit) rebased onto ("" when current)
    verdict: Verdict
    reason: str
    rebase: RebaseResult | None = None
    rebase_report: str = ""  # the rebase report's file, beside watch.md
    history: History | None = None  # --all: one row per newer release
    follows: str = ""  # a git line: "BRANCH of URL" (pin, newer: commit ids)
    # newer releases the index has wheels of but no sdist: not checked
    skipped: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return EXITS.code(self.verdict)


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
