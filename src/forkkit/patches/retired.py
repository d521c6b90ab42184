# SPDX-License-Identifier: Apache-2.0
"""``patches/retired.toml``: where each patch that left the series went (pure).

A patch upstream absorbed leaves the series with a record, in the spirit of
DEP-3's ``Applied-Upstream`` and ``Forwarded`` fields: the release that has
its behaviour, how forkkit knows (the same change upstream, or its
FAIL_TO_PASS tests passing there without it), the pin it was carried on, and
the sha256 of the patch as it last was (its text stays in git history).
Only ``forkkit rebase --apply`` writes this file, with the series;
:func:`forkkit.fork.seriesfiles.read_retired` reads it.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from forkkit.errors import ForkkitError

RETIRED_FILE = "retired.toml"
# The trailer of a tests-only patch: its runtime change was absorbed upstream
# and only its tests stay (``forkkit rebase``; red-green proves it as a guard).
TESTS_ONLY_TRAILER = "Forkkit-Tests-Only"
_HEADER = (
    "# Patches that left the series because upstream absorbed them.\n"
    "# Written by `forkkit rebase --apply`; DEP-3 style: applied_upstream is\n"
    "# the release that has the behaviour, forwarded the upstream change.\n"
)


@dataclass(frozen=True)
class Retired:
    """One retired patch and its provenance."""

    name: str
    subject: str
    applied_upstream: str  # e.g. "vllm 0.34.0"
    how: str  # "absorbed-textual" or "absorbed-semantic"
    evidence: str  # one sentence: what was measured
    retired_from: str  # the pin it was carried on, e.g. "vllm 0.30.0"
    sha256: str  # of the patch file as it last was
    forwarded: str = ""  # the upstream PR, when known
    fix: str = ""  # the fix the patch belonged to (fork.toml [[fix]] id)
    # its FAIL_TO_PASS tests (node ids): the tests the guard of its fix
    # must see pass, so a carried test deleted or renamed is named
    tests: tuple[str, ...] = ()
    upstream_pr: str = ""  # the upstream PR its fix backported
    advisory: str = ""  # the security advisory its fix fixed


def toml_str(value: str) -> str:
    """A TOML basic string."""
    out = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + out.replace("\n", "\\n").replace("\t", "\\t") + '"'


def toml_value(value: str | tuple[str, ...]) -> str:
    """A TOML string, or an array of strings one a line."""
    if isinstance(value, str):
        return toml_str(value)
    if not value:
        return "[]"
    return "[\n" + "".join(f"  {toml_str(v)},\n" for v in value) + "]"


# written only when set: a record without them reads as before
_OPTIONAL = frozenset({"tests", "upstream_pr", "advisory"})


def render_retired(entries: Sequence[Retired]) -> str:
    """The file's text: a header, then one ``[[retired]]`` table each."""
    out = [_HEADER]
    for e in entries:
        out.append("\n[[retired]]\n")
        out += [
            f"{f.name} = {toml_value(getattr(e, f.name))}\n"
            for f in fields(e)
            if getattr(e, f.name) or f.name not in _OPTIONAL
        ]
    return "".join(out)


def retired_of(row: Mapping[str, Any]) -> Retired:
    """One record from a TOML table or a report's JSON object (unknown keys
    ignored); TypeError when a field is missing or of the wrong kind."""
    known = {f.name for f in fields(Retired)} - {"tests"}
    tests = row.get("tests", ())
    if not isinstance(tests, list | tuple) or not all(
        isinstance(t, str) for t in tests
    ):
        raise TypeError("'tests' is not a list of test ids")
    return Retired(
        **{k: str(v) for k, v in row.items() if k in known}, tests=tuple(tests)
    )


def parse_retired(text: str, *, where: str = RETIRED_FILE) -> tuple[Retired, ...]:
    """The entries of a ``retired.toml``; one-line error when malformed."""
    try:
        doc = tomllib.loads(text)
        rows = doc.get("retired", [])
        if not isinstance(rows, list):
            raise ValueError("'retired' is not an array of tables")
        return tuple(retired_of(row) for row in rows)
    except (tomllib.TOMLDecodeError, ValueError, TypeError, AttributeError) as exc:
        raise ForkkitError(
            f"{where}: not a list of retired patches ({exc}); restore it from git"
        ) from None


def merge_retired(
    old: Sequence[Retired], new: Sequence[Retired]
) -> tuple[Retired, ...]:
    """``old`` then ``new``; a name retired again keeps its newest record."""
    renamed = {e.name for e in new}
    return (*(e for e in old if e.name not in renamed), *new)
