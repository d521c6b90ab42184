# SPDX-License-Identifier: Apache-2.0
"""Conversions between test file paths, JUnit test ids and pytest node ids.

A JUnit id is ``classname::name`` as pytest's JUnit XML writes it: the dotted
module, maybe class-qualified (``tests.a.test_x.TestC::test_f[1]``); a bare
``name`` when there is no classname (a module that failed to collect). A
pytest node id or target is ``path.py::Class::test`` (or a file or folder).
"""

from __future__ import annotations

from collections.abc import Set


def junit_id(classname: str, name: str) -> str:
    """The id of a JUnit ``testcase``: ``classname::name`` (``name`` alone
    when there is no classname)."""
    return f"{classname}::{name}" if classname else name


def junit_module(path: str) -> str:
    """JUnit's dotted module name of a test file (``tests/a/test_b.py``)."""
    return path.removesuffix(".py").replace("/", ".")


def belongs_to(test_id: str, module: str) -> bool:
    """Whether a JUnit test id is in dotted ``module`` (maybe inside a class)."""
    head = test_id.split("::", 1)[0]
    return head == module or head.startswith(module + ".")


def in_test_file(test_id: str, path: str) -> bool:
    """Whether a JUnit test id belongs to the test file ``path``."""
    return belongs_to(test_id, junit_module(path))


def target_file(target: str) -> str:
    """The file of a pytest target (``path.py::node`` -> ``path.py``)."""
    return target.split("::", 1)[0]


def qualname_node(path: str, qualname: str) -> str | None:
    """``path::Class::test`` of the test a dotted qualname lies in, else None."""
    parts = qualname.split(".")
    for i in range(len(parts), 0, -1):
        head = parts[:i]
        if head[-1].startswith("test") and all(p.startswith("Test") for p in head[:-1]):
            return "::".join([path, *head])
    return None


def node_id(test_id: str, files: Set[str]) -> str | None:
    """pytest node id of a JUnit id (``pkg.mod.Class::name``), given the files.

    A collection error's id is the bare module (``pkg.mod``): its path is
    returned. None when no tracked file matches.
    """
    cls, sep, name = test_id.partition("::")
    parts = cls.split(".")
    for i in range(len(parts), 0, -1):
        path = "/".join(parts[:i]) + ".py"
        if path in files:
            return "::".join([path, *parts[i:], *([name] if sep else [])])
    return None


def short_id(test_id: str) -> str:
    """A JUnit id without its module's package: ``tests.v1.core.test_x::test_y``
    -> ``test_x::test_y`` (for a report's prose; JSON keeps the whole id)."""
    module, sep, rest = test_id.partition("::")
    return module.rsplit(".", 1)[-1] + sep + rest


def covers(target: str, node: str) -> bool:
    """Whether pytest target ``target`` (a folder, file or node id) selects ``node``."""
    t = target.rstrip("/")
    if t in ("", "."):
        return True
    return node == t or node.startswith((f"{t}::", f"{t}/", f"{t}["))
