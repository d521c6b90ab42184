# SPDX-License-Identifier: Apache-2.0
"""Reading a field of a parsed JSON report by a dotted path (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def get(doc: Mapping[str, Any] | None, path: str) -> Any:
    """``doc["a"]["b"]`` for ``"a.b"``; None where any part is missing."""
    value: Any = doc
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value
