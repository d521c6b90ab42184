# SPDX-License-Identifier: Apache-2.0
"""``bisect --record``: the measured answer into ``patches/retired.toml``.

A retirement record says where upstream took a fix (``applied_upstream``)
and which FAIL_TO_PASS tests its guard must see pass (``tests``). When a
bisection measures another release or commit than the record says,
``--record`` rewrites that field of the fix's records (and adds what was
measured to their evidence); a record without its tests gets the measured
ones. All records change in one transaction of the checkout that holds them;
every other field of each record stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from forkkit import txn
from forkkit.line import Line
from forkkit.output.progress import say
from forkkit.patches.retired import (
    RETIRED_FILE,
    Retired,
    parse_retired,
    render_retired,
)
from forkkit.services.bisect.model import BisectResult


def _evidence(result: BisectResult) -> str:
    over = "releases" if result.releases else "commits"
    tests = f"; tests as {result.tests_from} carries them" if result.tests_from else ""
    return (
        f"; bisected over {over} (forkkit bisect, {len(result.steps)} proofs"
        f"{tests}): first without the need {result.applied_upstream}"
    )


def _updated(
    entry: Retired, fresh: BisectResult | None, measured: BisectResult | None
) -> Retired:
    """``entry`` with the measured answer (``fresh``: it differs) and, when
    it lists none, the measured tests."""
    if fresh is not None:
        entry = replace(
            entry,
            applied_upstream=fresh.applied_upstream,
            evidence=entry.evidence + _evidence(fresh),
        )
    if measured is not None and not entry.tests:
        entry = replace(entry, tests=measured.tests)
    return entry


def record_answers(
    line: Line, results: Sequence[BisectResult], *, held: Path
) -> tuple[BisectResult, ...]:
    """Rewrite ``applied_upstream`` of each fix whose record differs from
    what was measured, in ``line``'s ``patches/retired.toml``; the results as
    recorded. ``held``: the checkout whose write lock the command holds
    already (another one's is taken here)."""
    path = line.patches_dir / RETIRED_FILE
    measured = {r.fix: r for r in results if r.found}
    fresh = {k: r for k, r in measured.items() if not r.agrees}
    if not measured or not path.is_file():
        return tuple(results)
    entries = parse_retired(path.read_text(), where=str(path))
    new = tuple(_updated(e, fresh.get(e.fix), measured.get(e.fix)) for e in entries)
    if new == entries:
        return tuple(results)
    with ExitStack() as stack:
        if line.root != held:
            stack.enter_context(txn.checkout_lock(line.root))
            txn.recover(line.root)
        change = txn.FileTransaction(line.root)
        change.write(path, render_retired(new))
        change.commit()
    for old, e in zip(entries, new, strict=True):
        if e.tests != old.tests:
            say(f"{path.name}: {e.name}: its {len(e.tests)} FAIL_TO_PASS test(s)")
    for r in fresh.values():
        say(
            f"{path.name}: fix {r.fix} applied upstream {r.recorded} -> "
            f"{r.applied_upstream}"
        )
    return tuple(
        replace(r, recorded=r.applied_upstream) if r.fix in fresh else r
        for r in results
    )
