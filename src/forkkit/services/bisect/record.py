# SPDX-License-Identifier: Apache-2.0
"""``bisect --record``: the measured answer into ``patches/retired.toml``.

A retirement record says where upstream took a fix (``applied_upstream``).
When a bisection measures another release or commit than the record says,
``--record`` rewrites that field of the fix's records (and adds what was
measured to their evidence), all records in one transaction of the checkout
that holds them; every other byte of each record stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from forkkit import txn
from forkkit.config import ForkConfig
from forkkit.output.progress import say
from forkkit.patches.retired import RETIRED_FILE, parse_retired, render_retired
from forkkit.services.bisect.model import BisectResult


def _evidence(result: BisectResult) -> str:
    over = "releases" if result.releases else "commits"
    tests = f"; tests as {result.tests_from} carries them" if result.tests_from else ""
    return (
        f"; bisected over {over} (forkkit bisect, {len(result.steps)} proofs"
        f"{tests}): first without the need {result.applied_upstream}"
    )


def record_answers(
    cfg: ForkConfig, results: Sequence[BisectResult], *, held: Path
) -> tuple[BisectResult, ...]:
    """Rewrite ``applied_upstream`` of each fix whose record differs from
    what was measured, in ``cfg``'s ``patches/retired.toml``; the results as
    recorded. ``held``: the checkout whose write lock the command holds
    already (another one's is taken here)."""
    path = cfg.patches_dir / RETIRED_FILE
    fresh = {r.fix: r for r in results if r.found and not r.agrees}
    if not fresh or not path.is_file():
        return tuple(results)
    entries = parse_retired(path.read_text(), where=str(path))
    new = tuple(
        replace(
            e,
            applied_upstream=fresh[e.fix].applied_upstream,
            evidence=e.evidence + _evidence(fresh[e.fix]),
        )
        if e.fix in fresh
        else e
        for e in entries
    )
    with ExitStack() as stack:
        if cfg.root != held:
            stack.enter_context(txn.checkout_lock(cfg.root))
            txn.recover(cfg.root)
        change = txn.FileTransaction(cfg.root)
        change.write(path, render_retired(new))
        change.commit()
    for r in fresh.values():
        say(
            f"{path.name}: fix {r.fix} applied upstream {r.recorded} -> "
            f"{r.applied_upstream}"
        )
    return tuple(
        replace(r, recorded=r.applied_upstream) if r.fix in fresh else r
        for r in results
    )
