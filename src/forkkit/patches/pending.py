# SPDX-License-Identifier: Apache-2.0
"""``patches/pending.toml``: the patches a partial ``rebase --apply`` left
out of the series because they conflict on the new pin (pure).

Like StGit's unapplied patches: each stays in patches/ exactly as it was,
beside a record of the pin its text applies to, the pin it conflicts on and
the files that conflict. The next ``forkkit rebase`` tries each again from
its own pin (a 3-way merge, with the resolutions recorded in the rebase
repo); one that then applies joins the series and leaves this file. Only
``forkkit rebase --apply`` writes it;
:func:`forkkit.fork.seriesfiles.read_pending` reads it.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from forkkit.errors import ForkkitError
from forkkit.patches.retired import toml_str, toml_value

PENDING_FILE = "pending.toml"
_HEADER = (
    "# Patches left out of the series: they conflict on the pinned upstream.\n"
    "# Written by `forkkit rebase --apply`. Each file stays in patches/ as it\n"
    "# was on `pin`; resolve the conflict in the rebase repo and rerun\n"
    "# `forkkit rebase --apply` onto the same pin to bring it back.\n"
)


@dataclass(frozen=True)
class Pending:
    """One patch out of the series until its conflict is resolved."""

    name: str
    subject: str
    fix: str  # the [[fix]] it belongs to
    applies_on: str  # the label of ``pin``, e.g. "vllm 0.14.0"
    conflicts_on: str  # the pin it conflicts on, e.g. "vllm 0.21.0"
    sha256: str  # of the patch file as it was left
    files: tuple[str, ...] = ()  # the files that conflict
    # the [upstream] fields of the pin its text applies to
    pin: dict[str, str] = field(default_factory=dict)


def render_pending(entries: Sequence[Pending]) -> str:
    """The file's text: a header, then one ``[[pending]]`` table each."""
    out = [_HEADER]
    for e in entries:
        out.append("\n[[pending]]\n")
        out += [
            f"{key} = {toml_value(getattr(e, key))}\n"
            for key in ("name", "subject", "fix", "applies_on", "conflicts_on")
        ]
        out.append(f"sha256 = {toml_str(e.sha256)}\n")
        out.append(f"files = {toml_value(e.files)}\n")
        out.append("[pending.pin]\n")
        out += [f"{k} = {toml_str(v)}\n" for k, v in e.pin.items()]
    return "".join(out)


def _pending_of(row: Mapping[str, Any]) -> Pending:
    """One record of a TOML table; TypeError when a field is wrong."""
    text = ("name", "subject", "fix", "applies_on", "conflicts_on", "sha256")
    if not all(isinstance(row.get(k), str) for k in text):
        raise TypeError(f"each of {', '.join(text)} must be a string")
    files, pin = row.get("files", []), row.get("pin", {})
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise TypeError("'files' is not a list of paths")
    if not isinstance(pin, dict) or not all(isinstance(v, str) for v in pin.values()):
        raise TypeError("'pin' is not a table of strings")
    return Pending(**{k: row[k] for k in text}, files=tuple(files), pin=dict(pin))


def parse_pending(text: str, *, where: str = PENDING_FILE) -> tuple[Pending, ...]:
    """The entries of a ``pending.toml``; one-line error when malformed."""
    try:
        rows = tomllib.loads(text).get("pending", [])
        if not isinstance(rows, list):
            raise ValueError("'pending' is not an array of tables")
        out = tuple(_pending_of(row) for row in rows)
    except (tomllib.TOMLDecodeError, ValueError, TypeError, AttributeError) as exc:
        raise ForkkitError(
            f"{where}: not a list of pending patches ({exc}); restore it from git"
        ) from None
    names = [p.name for p in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ForkkitError(f"{where}: {twice[0]} is listed twice; restore it from git")
    return out
