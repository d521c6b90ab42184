# SPDX-License-Identifier: Apache-2.0
"""The one rule for what counts as test code in a patch or a tree."""

from __future__ import annotations

from pathlib import PurePosixPath


def is_test_path(path: str) -> bool:
    """Whether ``path`` is test code: inside any ``tests`` folder, a
    ``test_*``/``*_test.py`` file or a ``conftest.py``."""
    p = PurePosixPath(path)
    return (
        "tests" in p.parts[:-1]
        or p.name.startswith("test_")
        or p.name.endswith("_test.py")
        or p.name == "conftest.py"
    )


def is_test_module(path: str) -> bool:
    """Whether ``path`` is a pytest module (``test_*.py`` or ``*_test.py``)."""
    name = PurePosixPath(path).name
    return name.endswith(".py") and (
        name.startswith("test_") or name.endswith("_test.py")
    )
