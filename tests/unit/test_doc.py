# SPDX-License-Identifier: Apache-2.0
"""Typed report documents (output/doc.py): to JSON and back, and the one-line
errors of a document that does not fit its type."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

import pytest

from forkkit.output.doc import from_json, to_json


@dataclass(frozen=True)
class Inner:
    n: int
    ratio: float = 0.0


@dataclass(frozen=True)
class Outer:
    name: str
    inner: Inner
    items: tuple[Inner, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    maybe: Inner | None = None
    mode: Literal["a", "b"] = "a"
    flag: bool = False


def test_round_trip_through_json_text() -> None:
    doc = Outer(
        name="x",
        inner=Inner(1, 0.5),
        items=(Inner(2), Inner(3, 1.0)),
        counts={"passed": 3},
        maybe=None,
        mode="b",
        flag=True,
    )
    text = json.dumps(to_json(doc))
    assert from_json(Outer, json.loads(text), where="f.json") == doc


def test_defaults_fill_what_is_absent_and_ints_read_as_floats() -> None:
    got = from_json(Outer, {"name": "x", "inner": {"n": 1, "ratio": 2}}, where="f")
    assert got == Outer(name="x", inner=Inner(1, 2.0))
    assert isinstance(got.inner.ratio, float)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ([], "f.json: the document: expected an object, got list"),
        ({"inner": {"n": 1}}, "f.json: no 'name'"),
        ({"name": "x", "inner": {}}, "f.json: no 'inner.n'"),
        ({"name": "x", "inner": {"n": "1"}}, "f.json: inner.n: expected int, got str"),
        ({"name": "x", "inner": {"n": True}}, "inner.n: expected int, got bool"),
        ({"name": "x", "inner": {"n": 1}, "items": [{"n": None}]}, "items[0].n"),
        ({"name": "x", "inner": {"n": 1}, "counts": {"p": 1.5}}, "counts.p: expected"),
        ({"name": "x", "inner": {"n": 1}, "mode": "c"}, "mode: 'c' is not one of"),
        ({"name": "x", "inner": {"n": 1}, "maybe": 3}, "maybe: expected an object"),
    ],
)
def test_a_document_that_does_not_fit_is_one_line(data: object, why: str) -> None:
    with pytest.raises(ValueError) as e:
        from_json(Outer, data, where="f.json")
    assert why in str(e.value) and "\n" not in str(e.value)
