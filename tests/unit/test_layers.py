# SPDX-License-Identifier: Apache-2.0
"""Architecture rules, checked on the source: who may run git, who imports whom."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "forkkit"
INFRA = (
    "vcs",
    "patches",
    "upstream",
    "fork",
    "testing",
    "output",
    "workdir",
    "txn",
    "signals",
    "process",
    "docpath",
    "errors",
    "config",
)
COMMANDS = ("commands", "cli", "cliopts")


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "scripts" not in p.parts)


def _outside_vcs() -> list[Path]:
    return [p for p in _modules() if "vcs" not in p.relative_to(SRC).parts]


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


@pytest.mark.parametrize("path", _outside_vcs(), ids=lambda p: p.name)
def test_no_module_outside_vcs_runs_git(path: Path) -> None:
    tree = ast.parse(path.read_text())
    for name in _imports(tree):
        assert not name.startswith(("forkkit.vcs.git", "forkkit.git")), path
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            assert node.attr != "_git", f"{path.name}:{node.lineno} uses Repo._git"
        if isinstance(node, ast.Call) and "subprocess" in ast.unparse(node.func):
            words = {c.value for c in ast.walk(node) if isinstance(c, ast.Constant)}
            assert "git" not in words, f"{path.name}:{node.lineno} starts git"


@pytest.mark.parametrize(
    "path",
    [p for p in _modules() if p.relative_to(SRC).parts[0].removesuffix(".py") in INFRA],
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_infrastructure_never_imports_commands(path: Path) -> None:
    imports = _imports(ast.parse(path.read_text()))
    bad = {i for i in imports for c in COMMANDS if i.split(".")[:2] == ["forkkit", c]}
    assert not bad, f"{path.name} imports {bad}"


# Modules that must stay pure: the patches/ layer and every command's model.
IO_MODULES = (
    "subprocess",
    "shutil",
    "tempfile",
    "urllib",
    "socket",
    "forkkit.vcs",
    "forkkit.fork",
    "forkkit.testing.env",
    "forkkit.testing.pytest_run",
    "forkkit.testing.suiterun",
    "forkkit.workdir",
    "forkkit.output",
)
IO_CALLS = {
    "open",
    "read_text",
    "read_bytes",
    "write_text",
    "write_bytes",
    "mkdir",
    "unlink",
    "iterdir",
    "glob",
    "rglob",
    "exists",
    "system",
    "print",
}


def _pure_modules() -> list[Path]:
    return [
        p
        for p in _modules()
        if p.relative_to(SRC).parts[0] == "patches" or p.name == "model.py"
    ]


def test_pure_modules_exist() -> None:
    names = {str(p.relative_to(SRC)) for p in _pure_modules()}
    assert "commands/watch/model.py" in names
    assert any(n.startswith("patches/") for n in names)


@pytest.mark.parametrize("path", _pure_modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_pure_modules_do_no_io(path: Path) -> None:
    tree = ast.parse(path.read_text())
    for name in _imports(tree):
        assert not name.startswith(IO_MODULES), f"{path.name} imports {name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else None
            if isinstance(func, ast.Name):
                called = func.id
            assert called not in IO_CALLS, f"{path.name}:{node.lineno} calls {called}"
