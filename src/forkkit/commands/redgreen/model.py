# SPDX-License-Identifier: Apache-2.0
"""``forkkit red-green``: the request (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from forkkit.output.verdicts import ExitTable
from forkkit.services.proof.model import ProofChecks

Verdict = Literal["proven", "unproven"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={
        "proven": (0, "each fix asked for is proven (on every line with --all-lines)"),
        "unproven": (1, "some fix's proof is not valid: the summary says why"),
    }
)


def verdict_of(valid: bool) -> Verdict:
    """The verdict of the proofs' validity."""
    return "proven" if valid else "unproven"


@dataclass(frozen=True, kw_only=True)
class Request:
    """A red/green proof, as asked."""

    dest: Path | None
    fix: str | None  # None: every fix
    all_lines: bool  # every upstream line, one table
    collect: Path | None = None  # one table from lines proven elsewhere (CI jobs)
    tests: tuple[str, ...] | None  # None: the fix's own focused tests
    pytest_args: tuple[str, ...]
    related: bool
    out: Path | None
    parallel: str  # on, off, auto
    timeout: float | None
    fresh: bool
    checks: ProofChecks
    base: str | None
    base_patch: str | None
    # --python's interpreter and its bench's name (None: the line's venv)
    python: Path | None = None
    bench: str = ""
