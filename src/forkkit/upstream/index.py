# SPDX-License-Identifier: Apache-2.0
"""The package index (PEP 691 JSON, or a ``file://`` folder): which sdists a
project has, and the one a pin names."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from forkkit.errors import ForkkitError
from forkkit.pin import check_url

_PEP691 = "application/vnd.pypi.simple.v1+json"
# A ``file://`` index has no server to ask: its project page is a static
# PEP 691 file, ``NAME/index.json``, which publishes each file's sha256.
STATIC_PAGE = "index.json"


@dataclass(frozen=True)
class SdistRef:
    """One source distribution file on an index."""

    filename: str
    url: str
    sha256: str


def sdist_version(filename: str, name: str) -> str | None:
    """The (lowercased) version of ``filename`` if it is an sdist of ``name``
    (PEP 625 aware), else None."""
    norm = re.sub(r"[-_.]+", "_", name).lower()
    stem = filename.lower()
    for ext in (".tar.gz", ".zip"):
        if stem.endswith(ext):
            stem = stem[: -len(ext)]
            break
    else:
        return None
    dist, _, ver = stem.rpartition("-")
    return ver if re.sub(r"[-_.]+", "_", dist) == norm and ver else None


def sdist_filename_matches(filename: str, name: str, version: str) -> bool:
    """Whether ``filename`` is the sdist of ``name==version`` (PEP 625 aware)."""
    return sdist_version(filename, name) == version.lower()


def pick_sdist(
    index_json: dict[str, object], name: str, version: str, *, base_url: str = ""
) -> SdistRef:
    """Select the sdist of ``name==version`` from a PEP 691 project page.

    Relative file URLs are resolved against ``base_url`` (the page's URL).
    """
    files = index_json.get("files")
    if not isinstance(files, list):
        raise ForkkitError(
            f"{base_url or name}: not a PEP 691 project page (no 'files' list); "
            "check index_url in fork.toml"
        )
    for entry in files:
        if not isinstance(entry, dict):
            continue
        fn = str(entry.get("filename", ""))
        if sdist_filename_matches(fn, name, version) and entry.get("url"):
            hashes = entry.get("hashes")
            sha = str(hashes.get("sha256", "")) if isinstance(hashes, dict) else ""
            url = urllib.parse.urljoin(base_url, str(entry["url"]))
            return SdistRef(filename=fn, url=url, sha256=sha)
    raise ForkkitError(
        f"{name}=={version}: no source distribution on the index; "
        f"check the version (pip index versions {name})"
    )


# One overall deadline per request (a server that trickles its answer a
# byte at a time never trips a per-read timeout), and one per read.
PAGE_DEADLINE = 120.0
DOWNLOAD_DEADLINE = 1800.0
READ_TIMEOUT = 30.0


def read_within(
    resp: Any, *, seconds: float, what: str, sink: BinaryIO | None = None
) -> bytes:
    """The whole body of ``resp`` within ``seconds`` (into ``sink`` when
    given, else returned); one line naming ``what`` when it takes longer."""
    end = time.monotonic() + seconds
    parts: list[bytes] = []
    read = getattr(resp, "read1", resp.read)
    while chunk := read(1 << 16):
        if sink is None:
            parts.append(chunk)
        else:
            sink.write(chunk)
        if time.monotonic() > end:
            raise ForkkitError(
                f"{what}: no complete answer within {seconds:.0f} s (it sends "
                "too slowly); check the network or use another index"
            )
    return b"".join(parts)


def project_page(name: str, index_url: str) -> tuple[dict[str, object], str]:
    """The PEP 691 project page of ``name`` on ``index_url``, and its URL."""
    check_url(index_url, "upstream index_url")
    url = f"{index_url.rstrip('/')}/{name}/"
    if index_url.startswith("file:"):
        url += STATIC_PAGE
    req = urllib.request.Request(url, headers={"Accept": _PEP691})
    try:
        with urllib.request.urlopen(req, timeout=READ_TIMEOUT) as resp:
            body = read_within(resp, seconds=PAGE_DEADLINE, what=f"{url} (the index)")
            data = json.loads(body)
            page = resp.geturl()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise ForkkitError(
            f"{url}: cannot read the package index ({exc}); check the network "
            "or set sdist_url in fork.toml"
        ) from None
    if not isinstance(data, dict):
        raise ForkkitError(f"{url}: not a PEP 691 project page; check index_url")
    return data, page


def resolve_sdist(name: str, version: str, index_url: str) -> SdistRef:
    """Look up the sdist of ``name==version`` on a PEP 691 simple index (a
    ``file://`` index: its static ``NAME/index.json`` pages)."""
    data, page = project_page(name, index_url)
    return pick_sdist(data, name, version, base_url=page)


def sdist_versions(name: str, index_url: str) -> list[str]:
    """Every version of ``name`` with a source distribution (not yanked) on
    the index; a ``file://`` index is a local folder of ``NAME/*.tar.gz``."""
    return listed_versions(name, index_url)[0]


def wheel_version(filename: str, name: str) -> str | None:
    """The (lowercased) version of ``filename`` if it is a wheel of ``name``."""
    if not filename.lower().endswith(".whl"):
        return None
    parts = filename[:-4].split("-")
    norm = re.sub(r"[-_.]+", "_", name).lower()
    ok = len(parts) >= 5 and re.sub(r"[-_.]+", "_", parts[0]).lower() == norm
    return parts[1].lower() if ok else None


def listed_versions(name: str, index_url: str) -> tuple[list[str], list[str]]:
    """The versions of ``name`` on the index with an sdist, and those with
    wheels only (forkkit builds a fork from an sdist: those are skipped)."""
    names = _filenames(name, index_url)
    sdists = {v for n in names if (v := sdist_version(n, name))}
    wheels = {v for n in names if (v := wheel_version(n, name))}
    return sorted(sdists), sorted(wheels - sdists)


def _filenames(name: str, index_url: str) -> list[str]:
    """The file names the index lists for ``name`` (not yanked)."""
    check_url(index_url, "upstream index_url")
    if index_url.startswith("file:"):
        path = urllib.request.url2pathname(urllib.parse.urlsplit(index_url).path)
        folder = Path(path) / name
        if not folder.is_dir():
            raise ForkkitError(
                f"{folder}: no such folder in the local index; check the index URL"
            )
        names = [p.name for p in folder.iterdir()]
    else:
        data, page = project_page(name, index_url)
        files = data.get("files")
        if not isinstance(files, list):
            raise ForkkitError(
                f"{page}: not a PEP 691 project page (no 'files' list); "
                "check the index URL"
            )
        names = [
            str(e.get("filename", ""))
            for e in files
            if isinstance(e, dict) and not e.get("yanked")
        ]
    return names
