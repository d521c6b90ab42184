# SPDX-License-Identifier: Apache-2.0
"""fork.toml's ``[[fix]]`` tables: what the patches cannot say of a fix
(its title, suites, provenance, the exception that is its bug, or that it
is carried without a test)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from forkkit.config.toml import known, opt, req
from forkkit.errors import ForkkitError
from forkkit.patches.fixes import FixDecl, check_fix_id

# The single-[fix] format (one implicit fix, its files listed by hand).
MIGRATE = (
    "the single [fix] table is gone: fixes come from the patches. Write one "
    "[[fix]] table per fix (id, title, forwarded, related_suites), add the "
    "trailer 'Forkkit-Fix: ID' to each patch's message, and move 'deselect' "
    "to [testenv] (README: Carry your own fix)"
)


def fix_tables(data: dict[str, Any], path: Path) -> tuple[FixDecl, ...]:
    """The ``[[fix]]`` tables, in order; ids unique."""
    raw = data.get("fix", [])
    if isinstance(raw, dict):
        raise ForkkitError(f"{path.name} [fix]: {MIGRATE}")
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise ForkkitError(f"{path.name}: 'fix' must be tables ([[fix]])")
    out: list[FixDecl] = []
    for n, table in enumerate(raw, 1):
        where = f"{path.name} [[fix]] #{n}"
        known(table, "fix", where)
        fid = check_fix_id(req(table, "id", where), where)
        if any(d.id == fid for d in out):
            raise ForkkitError(f"{where}: id {fid!r} is declared twice; rename one")
        suites = (
            req(table, "related_suites", where, kind=list)
            if "related_suites" in table
            else []
        )
        out.append(
            FixDecl(
                id=fid,
                title=opt(table, "title", where),
                forwarded=opt(table, "forwarded", where),
                origin=opt(table, "origin", where),
                related_suites=tuple(suites),
                untested=_untested(table, where),
                upstream_pr=opt(table, "upstream_pr", where),
                advisory=check_advisory(opt(table, "advisory", where), where),
                raises=check_raises(opt(table, "raises", where), where),
            )
        )
    return tuple(out)


_ADVISORY = re.compile(r"GHSA(-[23456789cfghjmpqrvwx]{4}){3}|CVE-\d{4}-\d{4,}")
_EXCEPTION = re.compile(r"[A-Za-z_]\w*")


def _shaped(value: str, shape: re.Pattern[str], *, where: str, wrong: str) -> str:
    """``value`` when it is empty or has ``shape``; else one line: ``wrong``."""
    if value and not shape.fullmatch(value):
        raise ForkkitError(f"{where}: {value!r} is not {wrong}; fix it")
    return value


def check_advisory(value: str, where: str) -> str:
    """A GitHub (GHSA-...) or CVE advisory id, or ""."""
    wrong = "a GHSA-xxxx-xxxx-xxxx or CVE-YYYY-NNNN id (advisory)"
    return _shaped(value, _ADVISORY, where=where, wrong=wrong)


def check_raises(value: str, where: str) -> str:
    """The class name of the exception a fix's bug raises (``raises``), or ""."""
    wrong = "an exception's class name (raises), e.g. 'ValidationError', no module"
    return _shaped(value, _EXCEPTION, where=where, wrong=wrong)


def _untested(table: dict[str, Any], where: str) -> str:
    """``proof = "none"`` with its ``reason``: a fix carried without a test."""
    proof, reason = opt(table, "proof", where), opt(table, "reason", where)
    if proof not in ("", "none", "red-green"):
        raise ForkkitError(
            f"{where}: proof {proof!r}: give 'none' (carried without a test, with "
            "a reason) or leave it out"
        )
    if proof == "none" and not reason.strip():
        raise ForkkitError(
            f'{where}: proof = "none" needs a reason = "..." (why it has no test)'
        )
    if reason and proof != "none":
        raise ForkkitError(
            f'{where}: a reason is for proof = "none"; add it or drop it'
        )
    return reason.strip() if proof == "none" else ""
