# SPDX-License-Identifier: Apache-2.0
"""Contract 8: advice names options the command printing it has.

Every message in src/forkkit that says "rerun with --X", "pass --X",
"use --X" (...) is checked against each command that can print it: the
commands whose handler reaches the message's function in a static call
graph of the package (top-level functions and classes, imports resolved).
Advice naming its command ("rerun 'forkkit materialize --force'") is
checked against that command only.
"""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import forkkit
from forkkit.cli import build_parser

SRC = Path(forkkit.__file__).parent
# "rerun with --X", "pass --X", "use --X", "pin it with --X", ...
ADVICE = re.compile(r"(?<!even )\b(?:with|pass|use)\s+`?(--[a-z][a-z0-9-]*)")
# "'forkkit CMD ... --X'": advice naming its command
EXPLICIT = re.compile(r"forkkit ([a-z][a-z-]*)([^'\"`]*)")
OPTION = re.compile(r"--[a-z][a-z0-9-]*")
MODULE_LEVEL = "<module>"


@dataclass(frozen=True)
class Advice:
    """One option a message tells the user to use."""

    node: str  # the top-level function/class (or module level) holding it
    line: int
    option: str
    command: str  # the command the text names ("" if none)
    text: str


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def _modules() -> dict[str, ast.Module]:
    return {
        _module_name(p): ast.parse(p.read_text(), str(p))
        for p in sorted(SRC.rglob("*.py"))
    }


def _top_nodes(module: str, tree: ast.Module) -> dict[str, list[ast.stmt]]:
    """Node id -> statements: each top-level def/class, and the rest."""
    nodes: dict[str, list[ast.stmt]] = {f"{module}.{MODULE_LEVEL}": []}
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            nodes[f"{module}.{stmt.name}"] = [stmt]
        else:
            nodes[f"{module}.{MODULE_LEVEL}"].append(stmt)
    return nodes


# -- the messages ------------------------------------------------------------


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(v) or "{}" for v in node.values)
    return None


def _strings(stmts: list[ast.stmt]) -> Iterator[tuple[int, str]]:
    """Each string literal (an f-string as one), docstrings left out."""
    skip: set[int] = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            body = getattr(node, "body", None)
            first = body[0] if isinstance(body, list) and body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
            if isinstance(node, ast.JoinedStr):
                skip |= {id(n) for n in ast.walk(node) if n is not node}
    for stmt in stmts:
        for node in ast.walk(stmt):
            text = _text(node)
            if text is not None and id(node) not in skip and "--" in text:
                yield node.lineno, text  # type: ignore[attr-defined]


def _advice(node: str, stmts: list[ast.stmt], commands: set[str]) -> Iterator[Advice]:
    for line, text in _strings(stmts):
        rest = text
        for m in EXPLICIT.finditer(text):
            if m.group(1) not in commands:
                continue  # prose ("forkkit did not build it")
            for opt in OPTION.findall(m.group(2)):
                yield Advice(node, line, opt, m.group(1), text)
            rest = rest.replace(m.group(0), "")
        for opt in ADVICE.findall(rest):
            yield Advice(node, line, opt, "", text)


# -- the call graph ----------------------------------------------------------


class Graph:
    """Which top-level functions/classes each one refers to (over-approximate)."""

    def __init__(self, modules: dict[str, ast.Module]) -> None:
        self.modules = modules
        self.nodes: dict[str, list[ast.stmt]] = {}
        for name, tree in modules.items():
            self.nodes |= _top_nodes(name, tree)
        self.bindings = {m: self._bindings(m, t) for m, t in modules.items()}

    def _bindings(self, module: str, tree: ast.Module) -> dict[str, str]:
        """Local name -> ``module:NAME`` (a module) or ``ref:MODULE:NAME``."""
        out = {
            n.split(".")[-1]: f"node:{n}"
            for n in _top_nodes(module, tree)
            if not n.endswith(MODULE_LEVEL)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        out[a.asname] = f"module:{a.name}"
                    else:
                        top = a.name.split(".")[0]
                        out[top] = f"module:{top}"
            elif isinstance(node, ast.ImportFrom) and node.module:
                base = node.module
                if node.level:
                    base = ".".join([*module.split(".")[: -node.level], base])
                for a in node.names:
                    full = f"{base}.{a.name}"
                    kind = f"module:{full}" if full in self.modules else f"ref:{full}"
                    out[a.asname or a.name] = kind
        return out

    def resolve(self, module: str, name: str, depth: int = 0) -> str | None:
        """``node:ID`` or ``module:NAME`` for a name used in ``module``."""
        b = self.bindings.get(module, {}).get(name)
        if b is None or depth > 10:
            return None
        if b.startswith("ref:"):
            target, _, attr = b[4:].rpartition(".")
            return self.resolve(target, attr, depth + 1)
        return b

    def _attr(self, base: str, attrs: list[str]) -> str | None:
        """Follow ``module.sub.func`` from a resolved module binding."""
        mod = base[len("module:") :]
        for i, attr in enumerate(attrs):
            if f"{mod}.{attr}" in self.modules:
                mod = f"{mod}.{attr}"
                continue
            return self.resolve(mod, attr) if i < len(attrs) else None
        return f"module:{mod}"

    def edges(self, node_id: str) -> set[str]:
        module = node_id.rsplit(".", 1)[0]
        out = {f"{module}.{MODULE_LEVEL}"}
        for stmt in self.nodes[node_id]:
            for n in ast.walk(stmt):
                target = None
                if isinstance(n, ast.Name):
                    target = self.resolve(module, n.id)
                elif isinstance(n, ast.Attribute):
                    chain: list[str] = []
                    cur: ast.expr = n
                    while isinstance(cur, ast.Attribute):
                        chain.insert(0, cur.attr)
                        cur = cur.value
                    if isinstance(cur, ast.Name):
                        base = self.resolve(module, cur.id)
                        if base and base.startswith("module:"):
                            target = self._attr(base, chain)
                if target and target.startswith("node:"):
                    out.add(target[len("node:") :])
                elif target and target.startswith("module:"):
                    out.add(f"{target[len('module:') :]}.{MODULE_LEVEL}")
        return {o for o in out if o in self.nodes}

    def reach(self, roots: set[str], stop: set[str]) -> set[str]:
        seen: set[str] = set()
        todo = list(roots)
        while todo:
            n = todo.pop()
            if n in seen or n in stop or n not in self.nodes:
                continue
            seen.add(n)
            todo += self.edges(n)
        return seen


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser, _ = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """The options of ``parser`` and of its subcommands (``fix related``)."""
    found = {s for a in parser._actions for s in a.option_strings}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _options(sub)
    return found


def _entries(module: object) -> set[str]:
    """Where a command starts: its request, its run and the dispatcher."""
    name = getattr(module, "__name__", "")
    return {f"{name}.request", f"{name}.run", "forkkit.cli.main"}


def _problems() -> list[str]:
    parser, handlers = build_parser()
    commands = _commands()
    graph = Graph(_modules())
    advice = [
        a for n, stmts in graph.nodes.items() for a in _advice(n, stmts, set(commands))
    ]
    assert any(a.option == "--config" for a in advice)  # the scan finds advice
    # build_parser only registers handlers: it runs none of them.
    stop = {"forkkit.cli.build_parser"}
    reach = {command: graph.reach(_entries(h), stop) for command, h in handlers.items()}
    bad = []
    for a in advice:
        mod = a.node.rsplit(".", 1)[0]
        where = f"{mod}:{a.line}"
        if a.command:
            has = _options(commands[a.command]) if a.command in commands else set()
            if a.option not in has | _options(parser):
                bad.append(f"{where}: 'forkkit {a.command}' has no {a.option}")
            continue
        for command in sorted(c for c, nodes in reach.items() if a.node in nodes):
            if a.option not in _options(commands[command]) | _options(parser):
                bad.append(f"{where}: {command} has no {a.option}: {a.text[:70]!r}")
    return bad


def test_advice_names_options_the_command_has() -> None:
    bad = _problems()
    assert not bad, "advice names options the command lacks:\n" + "\n".join(bad)


def test_the_call_graph_sees_commands_reach_their_messages() -> None:
    """Sanity: the graph follows imports, re-exports and attribute calls."""
    graph = Graph(_modules())
    _, handlers = build_parser()
    seen = graph.reach(_entries(handlers["materialize"]), set())
    assert "forkkit.fork.tree.materialize" in seen
    assert "forkkit.upstream.sdist.fetch_sdist" in seen
    assert "forkkit.config.load_config" in graph.reach({"forkkit.cli.main"}, set())
