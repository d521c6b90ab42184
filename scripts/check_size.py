# SPDX-License-Identifier: Apache-2.0
"""Fail when a module in src/forkkit is over 400 lines, a class over 200, a
function (or method) over 60, or a function takes more than 3 positional
parameters (the rest must be keyword-only).

Usage: ``python scripts/check_size.py [ROOT]``. A function's length counts
from its ``def`` line (decorators excluded) to its last line, docstring
included; ``self``/``cls`` do not count as parameters. One line per
offender, then a count; exit 1 when there are any.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 200
MAX_FUNCTION_LINES = 60
MAX_POSITIONAL = 3


@dataclass(frozen=True)
class Offender:
    """A module, class or function over its limit."""

    where: str
    lines: int
    limit: int

    what: str = "lines"

    def line(self) -> str:
        """One line for the console."""
        return f"{self.where}: {self.lines} {self.what} (limit {self.limit})"


def _positional(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = [*node.args.posonlyargs, *node.args.args]
    return len([a for a in args if a.arg not in ("self", "cls")])


def offenders(*, root: Path) -> list[Offender]:
    """Every module, class and function under ``root`` over its limit."""
    found: list[Offender] = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(root.parent)
        count = len(text.splitlines())
        if count > MAX_MODULE_LINES:
            found.append(Offender(str(rel), count, MAX_MODULE_LINES))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_CLASS_LINES:
                    where = f"{rel}:{node.lineno} class {node.name}"
                    found.append(Offender(where, size, MAX_CLASS_LINES))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                where = f"{rel}:{node.lineno} {node.name}()"
                if size > MAX_FUNCTION_LINES:
                    found.append(Offender(where, size, MAX_FUNCTION_LINES))
                if (n := _positional(node)) > MAX_POSITIONAL:
                    found.append(
                        Offender(where, n, MAX_POSITIONAL, "positional parameters")
                    )
    return found


def main(argv: list[str]) -> int:
    """Print the offenders; 1 when there are any."""
    root = Path(argv[0]) if argv else Path(__file__).parents[1] / "src" / "forkkit"
    bad = offenders(root=root)
    for offender in bad:
        print(offender.line())
    print(f"check_size: {len(bad)} over the limits in {root.name}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
