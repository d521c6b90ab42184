# SPDX-License-Identifier: Apache-2.0
"""The size limits lint enforces: modules ≤ 400 lines, functions ≤ 60."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_size.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_size", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_size"] = module
    spec.loader.exec_module(module)
    return module


check_size = _load()


def _function(name: str, lines: int) -> str:
    body = "".join(f"    x{i} = {i}\n" for i in range(lines - 1))
    return f"def {name}() -> None:\n{body}"


@pytest.mark.parametrize(
    ("module_lines", "function_lines", "expected"),
    [
        (400, 60, []),
        (401, 60, ["pkg/mod.py: 401 lines (limit 400)"]),
        (400, 61, ["pkg/mod.py:1 f(): 61 lines (limit 60)"]),
    ],
)
def test_limits(
    tmp_path: Path, module_lines: int, function_lines: int, expected: list[str]
) -> None:
    root = tmp_path / "pkg"
    root.mkdir()
    text = _function("f", function_lines)
    text += "\n" * (module_lines - len(text.splitlines()))
    (root / "mod.py").write_text(text)
    found = [o.line() for o in check_size.offenders(root=root)]
    assert found == expected
    assert check_size.main([str(root)]) == (1 if expected else 0)


def test_nested_and_async_functions_count(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    root.mkdir()
    inner = _function("inner", 61).replace("\n", "\n    ")
    (root / "mod.py").write_text(f"class C:\n    async {inner}\n")
    assert [o.where for o in check_size.offenders(root=root)] == [
        "pkg/mod.py:2 inner()"
    ]


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        ("def f(a, b, c, *, d): pass", []),
        ("def f(self, a, b, c): pass", []),
        ("def f(a, b, c, d=1): pass", ["pkg/mod.py:1 f(): 4 positional parameters"]),
        ("def f(a, /, b, c, d): pass", ["pkg/mod.py:1 f(): 4 positional parameters"]),
    ],
)
def test_at_most_three_positional_parameters(
    tmp_path: Path, signature: str, expected: list[str]
) -> None:
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "mod.py").write_text(signature + "\n")
    found = [
        o.line().removesuffix(" (limit 3)") for o in check_size.offenders(root=root)
    ]
    assert found == expected


@pytest.mark.parametrize(("methods", "flagged"), [(3, False), (4, True)])
def test_a_class_counts_as_a_whole(tmp_path: Path, methods: int, flagged: bool) -> None:
    """A class of short methods can still be a 250-line state bag: classes
    have their own limit (200 lines)."""
    root = tmp_path / "pkg"
    root.mkdir()
    body = "".join(
        "    " + _function(f"m{i}", 55).replace("\n", "\n    ") + "\n"
        for i in range(methods)
    )
    (root / "mod.py").write_text(f"class C:\n{body}")
    where = [o.line() for o in check_size.offenders(root=root)]
    assert any(w.startswith("pkg/mod.py:1 class C:") for w in where) == flagged
