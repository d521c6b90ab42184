# SPDX-License-Identifier: Apache-2.0
"""Reading fork.toml's tables: required and optional keys of a kind, and
the keys each table knows (an unknown one is a typo, said in one line)."""

from __future__ import annotations

from typing import Any

from forkkit.errors import ForkkitError


def req(table: dict[str, Any], key: str, where: str, *, kind: type = str) -> Any:
    if key not in table:
        raise ForkkitError(f"{where}: missing key '{key}'; add it (see README)")
    value = table[key]
    if kind is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ForkkitError(f"{where}: '{key}' must be a list of strings")
    elif not isinstance(value, kind):
        raise ForkkitError(f"{where}: '{key}' must be a {kind.__name__}")
    return value


KNOWN: dict[str, frozenset[str]] = {
    "upstream": frozenset(
        {
            "name",
            "source",
            "version",
            "sha256",
            "index_url",
            "git_url",
            "git_rev",
            "git_commit",
            "sdist_url",
        }
    ),
    "patches": frozenset({"dir", "series"}),
    "fix": frozenset(
        {"id", "title", "forwarded", "origin", "related_suites", "proof", "reason"}
        | {"upstream_pr", "advisory", "raises"}
    ),
    "testenv": frozenset(
        {"torch", "requirements", "extra", "env", "deselect", "pass_env"}
    ),
    "workdir": frozenset({"path"}),
    "line": frozenset({"name", "also"}),
}


def table_of(data: dict[str, Any], name: str, fname: str) -> dict[str, Any]:
    """Table ``name`` of the file; unknown keys (typos) are errors."""
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise ForkkitError(f"{fname}: '{name}' must be a table ([{name}])")
    return known(table, name, fname)


def known(table: dict[str, Any], name: str, fname: str) -> dict[str, Any]:
    unknown = sorted(set(table) - KNOWN[name])
    if unknown:
        raise ForkkitError(
            f"{fname} [{name}]: unknown key '{unknown[0]}'; expected one of "
            f"{', '.join(sorted(KNOWN[name]))}"
        )
    return table


def opt(table: dict[str, Any], key: str, where: str, *, default: str = "") -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise ForkkitError(f"{where}: '{key}' must be a string")
    return value
