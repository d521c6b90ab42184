# SPDX-License-Identifier: Apache-2.0
"""Each command's verdicts and exit codes: one table per command (pure).

A command's ``EXITS`` gives each of its verdicts an exit code and a meaning;
its ``run`` ends with ``EXITS.code(verdict)`` and ``forkkit COMMAND --help``
ends with :meth:`ExitTable.epilog`, which adds the codes every command
shares: :data:`ERROR_EXIT` and :data:`SIGNAL_EXIT` (what :mod:`forkkit.cli`
returns for an error or a signal).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Generic, TypeVar

V = TypeVar("V", bound=str)

ERROR_EXIT = 2  # a ForkkitError or bad arguments: one line on stderr
SIGNAL_EXIT: Mapping[str, int] = MappingProxyType(
    {"SIGINT": 130, "SIGHUP": 129, "SIGTERM": 143}
)
RESERVED = frozenset({ERROR_EXIT, *SIGNAL_EXIT.values()})
_WIDTH = 79  # --help lines
_INDENT = " " * 6  # a row's continuation lines, under its meaning


@dataclass(frozen=True, kw_only=True)
class ExitTable(Generic[V]):
    """A command's verdicts: each one's exit code and what it means.

    ``errors`` gives examples of what exits :data:`ERROR_EXIT` ("" none).
    Codes are distinct, 0-125, and none is reserved (:data:`RESERVED`).
    """

    rows: Mapping[V, tuple[int, str]]
    errors: str = ""

    def __post_init__(self) -> None:
        codes = [code for code, _ in self.rows.values()]
        if not codes:
            raise ValueError("an exit table has at least one verdict")
        if len(set(codes)) != len(codes):
            raise ValueError(f"two verdicts share an exit code: {codes}")
        taken = sorted(RESERVED.intersection(codes))
        if taken:
            raise ValueError(f"exit code(s) {taken} are for errors and signals")
        if not all(0 <= code <= 125 for code in codes):
            raise ValueError(f"exit codes are 0-125: {codes}")
        object.__setattr__(self, "rows", MappingProxyType(dict(self.rows)))

    @property
    def verdicts(self) -> tuple[V, ...]:
        """The verdicts, in the table's order."""
        return tuple(self.rows)

    def code(self, verdict: V) -> int:
        """The exit code of ``verdict``."""
        return self.rows[verdict][0]

    def meaning(self, verdict: V) -> str:
        """What ``verdict`` means, in a few words."""
        return self.rows[verdict][1]

    def epilog(self) -> str:
        """The ``exit codes:`` section of the command's ``--help``."""
        rows = [(code, f"{v}: {why}") for v, (code, why) in self.rows.items()]
        errors = f" ({self.errors})" if self.errors else ""
        rows.append((ERROR_EXIT, f"bad input or an error{errors}"))
        rows += sorted((c, f"interrupted by {n}") for n, c in SIGNAL_EXIT.items())
        lines = [
            textwrap.fill(
                f"  {code:<3} {text}", width=_WIDTH, subsequent_indent=_INDENT
            )
            for code, text in rows
        ]
        return "exit codes:\n" + "\n".join(lines) + "\n"
