# SPDX-License-Identifier: Apache-2.0
"""The functions and classes a hunk changes (Python files, parsed with ast)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from forkkit.patches.diff import DiffHunk

MODULE_LEVEL = "<module>"


@dataclass(frozen=True)
class Symbol:
    """A function or class of a Python file, with its full line range."""

    qualname: str
    kind: Literal["function", "class"]
    start: int  # first decorator line
    end: int


def python_symbols(source: str) -> tuple[Symbol, ...]:
    """Every def/class of ``source`` (empty when it is not valid Python)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    out: list[Symbol] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qual = f"{prefix}{child.name}"
                start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                kind: Literal["function", "class"] = (
                    "class" if isinstance(child, ast.ClassDef) else "function"
                )
                out.append(Symbol(qual, kind, start, child.end_lineno or child.lineno))
                visit(child, qual + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return tuple(out)


def enclosing(symbols: Sequence[Symbol], line: int) -> Symbol | None:
    """The innermost symbol whose lines contain ``line``."""
    inside = [s for s in symbols if s.start <= line <= s.end]
    return max(inside, key=lambda s: (s.start, -s.end), default=None)


def hunk_symbols(hunk: DiffHunk, symbols: Sequence[Symbol]) -> tuple[str, ...]:
    """Qualified names of the functions/classes a hunk changes (base file).

    A change outside every def is ``<module>``; defs the hunk adds count too,
    qualified by where they are inserted.
    """
    lo, hi = hunk.span
    names: set[str] = set()
    if hunk.removed:
        for line in range(lo, hi + 1):
            sym = enclosing(symbols, line)
            names.add(sym.qualname if sym else MODULE_LEVEL)
    scope = ""
    if hunk.added:
        a, b = enclosing(symbols, lo), enclosing(symbols, hi)
        common = a if a is not None and a == b else None
        if common is None and hunk.indented and not hunk.removed:
            # lines appended at the end of a body: the def of the line above
            common = a
        if common is not None:
            names.add(common.qualname)
            scope = common.qualname + "."
        elif not hunk.removed and not hunk.new_defs:
            names.add(MODULE_LEVEL)
    names.update((scope if indent else "") + name for indent, name in hunk.new_defs)
    return tuple(sorted(names))
