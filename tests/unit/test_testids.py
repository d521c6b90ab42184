# SPDX-License-Identifier: Apache-2.0
"""Conversions between test file paths, JUnit ids and pytest node ids."""

from __future__ import annotations

import pytest

from forkkit.patches.testids import (
    belongs_to,
    covers,
    in_test_file,
    junit_id,
    junit_module,
    node_id,
    qualname_node,
    short_id,
    target_file,
)

FILES = frozenset({"tests/a/test_x.py", "tests/test_y.py"})


@pytest.mark.parametrize(
    ("classname", "name", "expected"),
    [
        ("tests.a.test_x", "test_f", "tests.a.test_x::test_f"),
        ("tests.a.test_x.TestC", "test_g[1]", "tests.a.test_x.TestC::test_g[1]"),
        ("", "tests.a.test_x", "tests.a.test_x"),  # a collection error
    ],
)
def test_junit_id(classname: str, name: str, expected: str) -> None:
    assert junit_id(classname, name) == expected


@pytest.mark.parametrize(
    ("path", "module"),
    [("tests/a/test_b.py", "tests.a.test_b"), ("test_c.py", "test_c")],
)
def test_junit_module(path: str, module: str) -> None:
    assert junit_module(path) == module


@pytest.mark.parametrize(
    ("test_id", "path", "inside"),
    [
        ("tests.v1.test_c::t", "tests/v1/test_c.py", True),
        ("tests.v1.test_c.TestK::t", "tests/v1/test_c.py", True),
        ("tests.v1.test_c", "tests/v1/test_c.py", True),  # its collection error
        ("tests.v1.test_cd::t", "tests/v1/test_c.py", False),
        ("tests.v1::t", "tests/v1/test_c.py", False),
        ("tests.v1.test_c::t", "tests/v1.py", True),  # a dotted package prefix
    ],
)
def test_in_test_file_and_belongs_to(test_id: str, path: str, inside: bool) -> None:
    assert in_test_file(test_id, path) is inside
    assert belongs_to(test_id, junit_module(path)) is inside


@pytest.mark.parametrize(
    ("target", "path"),
    [
        ("tests/a/test_x.py::TestC::test_g", "tests/a/test_x.py"),
        ("tests/a/test_x.py", "tests/a/test_x.py"),
        ("tests/a/", "tests/a/"),
    ],
)
def test_target_file(target: str, path: str) -> None:
    assert target_file(target) == path


@pytest.mark.parametrize(
    ("qualname", "node"),
    [
        ("test_f", "t.py::test_f"),
        ("TestC.test_g", "t.py::TestC::test_g"),
        ("TestC.test_g.inner", "t.py::TestC::test_g"),  # a def inside the test
        ("helper", None),
        ("Helper.test_g", None),  # not a test class
        ("<module>", None),
    ],
)
def test_qualname_node(qualname: str, node: str | None) -> None:
    assert qualname_node("t.py", qualname) == node


@pytest.mark.parametrize(
    ("test_id", "node"),
    [
        ("tests.a.test_x::test_f[1-2]", "tests/a/test_x.py::test_f[1-2]"),
        ("tests.a.test_x.TestC::test_g", "tests/a/test_x.py::TestC::test_g"),
        ("tests.a.test_x", "tests/a/test_x.py"),  # a collection error
        ("tests.test_y::t", "tests/test_y.py::t"),
        ("other.mod::t", None),
    ],
)
def test_node_id(test_id: str, node: str | None) -> None:
    assert node_id(test_id, FILES) == node


@pytest.mark.parametrize(
    ("target", "node", "selected"),
    [
        ("", "tests/a/test_x.py::t", True),
        (".", "tests/a/test_x.py::t", True),
        ("tests", "tests/a/test_x.py::t", True),
        ("tests/a/", "tests/a/test_x.py::t", True),
        ("tests/a/test_x.py", "tests/a/test_x.py::t", True),
        ("tests/a/test_x.py::t", "tests/a/test_x.py::t[1]", True),
        ("tests/a/test_x.py::t", "tests/a/test_x.py::t2", False),
        ("tests/a/test", "tests/a/test_x.py::t", False),
    ],
)
def test_covers(target: str, node: str, selected: bool) -> None:
    assert covers(target, node) is selected


@pytest.mark.parametrize(
    ("test_id", "short"),
    [
        ("tests.v1.core.test_x::test_y", "test_x::test_y"),
        ("tests.v1.core.test_x::test_y[a-1]", "test_x::test_y[a-1]"),
        ("tests.a.test_x.TestC::test_f", "TestC::test_f"),
        ("test_x::test_y", "test_x::test_y"),
        ("bare_name", "bare_name"),
    ],
)
def test_short_id_drops_the_package(test_id: str, short: str) -> None:
    assert short_id(test_id) == short
