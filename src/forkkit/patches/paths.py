# SPDX-License-Identifier: Apache-2.0
"""The one rule for what counts as test code in a patch or a tree, and for
what counts as runtime code (what red reverts)."""

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


# carried and rebased, never runtime: red never reverts documentation, CI,
# container or requirement files (a vendor series carries many)
_NOT_RUNTIME_DIRS = frozenset({"docs", ".github", ".buildkite", "docker"})
_NOT_RUNTIME_SUFFIXES = frozenset({".md", ".rst", ".txt", ".in"})
_NOT_RUNTIME_NAMES = frozenset({".gitignore", ".dockerignore", "CODEOWNERS"})


def is_runtime_path(path: str) -> bool:
    """Whether ``path`` is runtime code, what a fix's red reverts: not test
    code, not documentation, CI, Docker or requirement files."""
    if is_test_path(path):
        return False
    p = PurePosixPath(path)
    if p.parts[:1] and (
        p.parts[0] in _NOT_RUNTIME_DIRS or p.parts[0] == "requirements"
    ):
        return False
    if p.name.startswith("Dockerfile") or p.name in _NOT_RUNTIME_NAMES:
        return False
    return p.suffix not in _NOT_RUNTIME_SUFFIXES


def is_test_module(path: str) -> bool:
    """Whether ``path`` is a pytest module (``test_*.py`` or ``*_test.py``)."""
    name = PurePosixPath(path).name
    return name.endswith(".py") and (
        name.startswith("test_") or name.endswith("_test.py")
    )
