# SPDX-License-Identifier: Apache-2.0
"""The package index (PEP 691 JSON, or a ``file://`` folder): which sdists a
project has, and the one a pin names."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

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


def project_page(name: str, index_url: str) -> tuple[dict[str, object], str]:
    """The PEP 691 project page of ``name`` on ``index_url``, and its URL."""
    check_url(index_url, "upstream index_url")
    url = f"{index_url.rstrip('/')}/{name}/"
    if index_url.startswith("file:"):
        url += STATIC_PAGE
    req = urllib.request.Request(url, headers={"Accept": _PEP691})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            data = json.load(resp)
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
    return sorted({v for n in names if (v := sdist_version(n, name))})
