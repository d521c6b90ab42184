# SPDX-License-Identifier: Apache-2.0
"""Typed report documents: a frozen dataclass to JSON and back (pure: no I/O).

A producer describes its report as dataclasses and writes ``to_json(doc)``;
a consumer reads the same types with ``from_json(Doc, data, where=...)``, so
no field is looked up by a string key outside the type that declares it. A
value of the wrong type, or a required field that is missing, is a
``ValueError`` naming the dotted path (``red_green.json: red.counts.passed:
expected int, got str``); keys the type does not declare are ignored.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, get_args, get_origin

T = TypeVar("T")
_SCALARS: tuple[type, ...] = (str, int, float, bool)


def to_json(value: Any) -> Any:
    """``value`` as JSON data: dataclasses as objects, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)
        }
    if isinstance(value, tuple | list):
        return [to_json(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def from_json(cls: type[T], data: Any, *, where: str) -> T:
    """A ``cls`` (a dataclass) read from ``data``; ValueError names ``where``
    (the file) and the field's dotted path."""
    try:
        return _object(cls, data, "")
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _object(cls: type[T], data: Any, path: str) -> T:
    if not isinstance(data, Mapping):
        at = path or "the document"
        raise ValueError(f"{at}: expected an object, got {_kind(data)}")
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        at = f"{path}.{f.name}" if path else f.name
        if f.name in data:
            values[f.name] = _convert(hints[f.name], data[f.name], at)
        elif _required(f):
            raise ValueError(f"no '{at}'")
    return cls(**values)


def _required(f: dataclasses.Field[Any]) -> bool:
    missing = dataclasses.MISSING
    return f.default is missing and f.default_factory is missing


def _convert(hint: Any, value: Any, where: str) -> Any:
    """``value`` checked (and built) as ``hint``."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        return _union(args, value, where)
    if origin is typing.Literal:
        if value not in args:
            raise ValueError(f"{where}: {value!r} is not one of {list(args)}")
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ValueError(f"{where}: expected a list, got {_kind(value)}")
        if (len(args) == 2 and args[1] is Ellipsis) or len(args) == 1:
            return tuple(
                _convert(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)
            )
        if len(value) != len(args):
            raise ValueError(f"{where}: expected {len(args)} items, got {len(value)}")
        return tuple(
            _convert(a, v, f"{where}[{i}]")
            for i, (a, v) in enumerate(zip(args, value, strict=True))
        )
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ValueError(f"{where}: expected an object, got {_kind(value)}")
        return {str(k): _convert(args[1], v, f"{where}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(hint):
        return _object(hint, value, where)  # type: ignore[arg-type]
    return _scalar(hint, value, where)


def _union(args: tuple[Any, ...], value: Any, where: str) -> Any:
    if value is None and type(None) in args:
        return None
    errors = []
    for arg in (a for a in args if a is not type(None)):
        try:
            return _convert(arg, value, where)
        except ValueError as exc:
            errors.append(str(exc))
    raise ValueError(
        errors[0] if len(errors) == 1 else f"{where}: {_kind(value)} fits no type"
    )


def _scalar(hint: Any, value: Any, where: str) -> Any:
    if hint not in _SCALARS:
        raise TypeError(f"{where}: unsupported field type {hint!r}")
    ok = isinstance(value, hint) and not (hint is int and isinstance(value, bool))
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not ok:
        raise ValueError(f"{where}: expected {hint.__name__}, got {_kind(value)}")
    return value


def readable(cls: type) -> None:
    """Check that :func:`from_json` can read every field of ``cls`` (a
    dataclass), nested ones too; TypeError names the first that it cannot."""
    _readable(cls, cls.__name__, set())


def _readable(hint: Any, where: str, seen: set[Any]) -> None:
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any or hint in _SCALARS or hint is type(None):
        return
    if origin is typing.Literal:
        return
    if origin in (typing.Union, types.UnionType, tuple):
        for arg in (a for a in args if a is not Ellipsis):
            _readable(arg, where, seen)
        return
    if origin is dict and args and args[0] is str:
        _readable(args[1], where, seen)
        return
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if hint in seen:
            return
        seen.add(hint)
        for name, field_hint in typing.get_type_hints(hint).items():
            if name in {f.name for f in dataclasses.fields(hint)}:
                _readable(field_hint, f"{where}.{name}", seen)
        return
    raise TypeError(f"{where}: no reader for a field of type {hint!r}")


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
