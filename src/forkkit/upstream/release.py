# SPDX-License-Identifier: Apache-2.0
"""``NAME==VERSION``: the one parser of a release named on the command line or
in a report's upstream identifier (pure: no I/O)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from forkkit.errors import ForkkitError
from forkkit.pin import path_component

_RELEASE = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)")


def split_release(text: str) -> tuple[str, str] | None:
    """``(name, version)`` of ``NAME==VERSION``; None when ``text`` is not one."""
    m = _RELEASE.fullmatch(text.strip())
    return (m.group(1), m.group(2)) if m else None


def release_version(text: str, *, name: str, option: str, bare: bool) -> str:
    """The version ``text`` names for the pinned project ``name``.

    ``text`` is ``NAME==VERSION`` (``NAME`` compared as PyPI does) or, with
    ``bare``, a plain ``VERSION``; anything else is one line naming ``option``.
    """
    parts = split_release(text)
    if parts is None and bare and text.strip() and "=" not in text:
        parts = (name, text.strip())
    if parts is None or canonicalize_name(parts[0]) != canonicalize_name(name):
        raise ForkkitError(
            f"{option} {text!r}: expected {name}==VERSION (fork.toml pins {name})"
        )
    return path_component(parts[1], what=option)


def sdist_version(ident: str) -> str | None:
    """The version in an sdist identifier (``sdist:NAME==VERSION#sha256=…``)."""
    if not ident.startswith("sdist:"):
        return None
    parts = split_release(ident.removeprefix("sdist:").partition("#")[0])
    return parts[1] if parts else None


# --- versions -----------------------------------------------------------------

# key, is a pre-release (or dev release); None: not a PEP 440 version
Parsed = tuple[Version, bool] | None


def parse_version(text: str) -> Parsed:
    """``text`` as a PEP 440 version and whether it is a pre- or dev release."""
    try:
        version = Version(text)
    except InvalidVersion:
        return None
    return version, version.is_prerelease


def newer_releases(
    versions: Iterable[str],
    pin: str,
    *,
    pre: bool = False,
) -> list[str]:
    """The versions newer than ``pin``, newest first.

    Pre-releases (and dev releases) only with ``pre``; versions that are not
    PEP 440 are skipped. A ``pin`` that is not PEP 440 is an error.
    """
    pinned = parse_version(pin)
    if pinned is None:
        raise ForkkitError(
            f"fork.toml [upstream] version {pin!r}: not a PEP 440 version, so "
            "newer releases cannot be told apart; fix the pin"
        )
    found: dict[str, Any] = {}
    for text in versions:
        parsed = parse_version(text)
        if parsed is None or (parsed[1] and not pre):
            continue
        if parsed[0] > pinned[0]:
            found[text] = parsed[0]
    return sorted(found, key=lambda v: found[v], reverse=True)
