# SPDX-License-Identifier: Apache-2.0
"""The watch verdicts, release ordering and result (pure: no I/O)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from forkkit.commands.watch.history import History
from forkkit.services.rebase.model import RebaseResult

Verdict = Literal["current", "carries", "conflict", "absorbed"]
# The one table of the verdicts: exit code and meaning. --help, the advice,
# the noxfile and the workflows read it (a test checks each verdict is here).
VERDICTS: dict[Verdict, tuple[int, str]] = {
    "current": (0, "nothing newer than the pin (release, or the followed branch)"),
    "carries": (10, "the series still applies to the newest upstream, proof valid"),
    "conflict": (20, "a patch conflicts there, or its red/green proof is not valid"),
    "absorbed": (30, "upstream has the fix, the fork can retire"),
}
EXIT_CODES: dict[Verdict, int] = {v: code for v, (code, _) in VERDICTS.items()}


def epilog() -> str:
    """The exit-code lines of ``forkkit watch --help``, from the table."""
    rows = [f"  {code:<3} {v}: {why}" for v, (code, why) in VERDICTS.items()]
    rows.append(
        "  2   bad input or an error (unreachable index, unknown --version, ...)"
    )
    return "exit codes:\n" + "\n".join(rows) + "\n"


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

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_json(self) -> dict[str, Any]:
        r = self.rebase
        return {
            "package": self.package,
            "pin": self.pin,
            "index_url": self.index_url,
            "follows": self.follows,
            "newer": list(self.newer),
            "checked": self.checked,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "rebase_report": self.rebase_report,
            "history": None if self.history is None else self.history.to_json(),
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
                "fixes": [f.to_json() for f in r.fixes],
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
