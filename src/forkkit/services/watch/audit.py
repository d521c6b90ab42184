# SPDX-License-Identifier: Apache-2.0
"""``forkkit watch --all``: the series against every release newer than the pin.

Each release gets its own dry-run rebase straight from the pin (patches/ and
fork.toml are never written), with the semantic absorption check; the newest
release also gets the red/green proof, so its row and the watch verdict are
the very same rebase. A finished row is kept in ``<workdir>/history`` under a
key of everything that decides it (the pin, the release's sha256, the
series' digest, fork.toml's ``[fix]`` and ``[testenv]``, the options, the
recorded resolutions, forkkit's version), so a rerun reads it back; the
pytest runs under it also come from the result cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from forkkit import __version__
from forkkit.errors import ForkkitError
from forkkit.line import Line
from forkkit.output.doc import from_json, to_json
from forkkit.output.progress import say
from forkkit.services.rebase.model import Options, RebaseResult, Target
from forkkit.services.watch.doc import RowDoc, row_doc, row_of_doc
from forkkit.services.watch.history import (
    HISTORY_FORMAT,
    HistoryRow,
    error_row,
    row_of,
)
from forkkit.txn import write_atomic
from forkkit.vcs import resolution

RebaseFn = Callable[[Target, Options, str], RebaseResult]


def row_key(line: Line, target: Target, opts: Options) -> str:
    """sha256 of everything that decides one release's history row, the
    conflict resolutions recorded in the rebase repo included."""
    series = line.series
    doc: dict[str, Any] = {
        "format": HISTORY_FORMAT,
        "resolutions": resolution.fingerprint(line.work.rebase_repo),
        "forkkit": __version__,
        "pin": line.upstream.ident,
        "target": target.spec.ident,
        "series": series.digest,  # every patch's name and bytes, in order
        "fixes": [asdict(d) for d in line.decls],
        "testenv": asdict(line.testenv),
        "semantic": opts.semantic,
        "red_green": opts.red_green,
        "related": opts.related,
        "pytest_args": list(opts.pytest_args),
    }
    text = json.dumps(doc, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _read_row(path: Path) -> HistoryRow | None:
    """A stored row, verified against the digest stored with it; a damaged
    entry is a miss (said once) and is replaced by the next run."""
    try:
        doc = json.loads(path.read_text())
        body = doc["row"]
        text = json.dumps(body, sort_keys=True, separators=(",", ":"))
        if hashlib.sha256(text.encode()).hexdigest() != doc["sha256"]:
            raise ValueError("digest mismatch")
        return row_of_doc(from_json(RowDoc, body, where=path.name), cached=True)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        say(f"history cache: {path.name} unreadable ({exc}); measuring again")
        return None


def _write_row(path: Path, row: HistoryRow) -> None:
    """Store a row atomically, with the digest it is verified by on read."""
    body = to_json(row_doc(row))
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    doc = {"sha256": hashlib.sha256(text.encode()).hexdigest(), "row": body}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(doc, indent=1, sort_keys=True).encode())


def history_rows(
    line: Line,
    *,
    releases: list[str],
    patches: tuple[str, ...],
    targets: dict[str, Target],
    opts: Options,
    run_rebase: RebaseFn,
) -> tuple[list[HistoryRow], RebaseResult | None]:
    """One row per release (oldest first) and the newest release's rebase.

    ``opts`` is for the newest release; older ones run without red/green
    (whether a patch applies and is still needed does not need the proof).
    """
    folder = line.work.root / "history"
    rows: list[HistoryRow] = []
    newest: RebaseResult | None = None
    no_proof = dataclasses.replace(opts, red_green=False)
    for i, release in enumerate(releases):
        last = i == len(releases) - 1
        row_opts = opts if last else no_proof
        # the newest release always runs (its proof is the verdict); its row
        # is kept under the key it is read by once a newer release is out
        path = folder / f"{row_key(line, targets[release], no_proof)}.json"
        row = None if last else _read_row(path)
        if row is not None:
            say(f"history {release}: from the history cache")
            rows.append(row)
            continue
        say(f"history {i + 1}/{len(releases)}: dry-run rebase onto {release}")
        try:
            result = run_rebase(targets[release], row_opts, release)
        except ForkkitError as exc:
            if last:
                raise  # the verdict is the newest release's: nothing to report
            say(f"history {release}: not measured ({exc})")
            rows.append(error_row(release, patches, why=str(exc)))
            continue
        row = row_of(release, result)
        if row.complete:  # a check that failed is measured again
            _write_row(path, row)
        rows.append(row)
        if last:
            newest = result
    return rows, newest
