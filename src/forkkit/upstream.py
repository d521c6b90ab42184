"""Pristine upstream trees: the pinned PyPI sdist (verified) or a git revision."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from forkkit.config import UpstreamSpec
from forkkit.errors import ForkkitError
from forkkit.git import Git
from forkkit.progress import step

_PEP691 = "application/vnd.pypi.simple.v1+json"


@dataclass(frozen=True)
class SdistRef:
    """One source distribution file on an index."""

    filename: str
    url: str
    sha256: str


def sdist_filename_matches(filename: str, name: str, version: str) -> bool:
    """Whether ``filename`` is the sdist of ``name==version`` (PEP 625 aware)."""
    norm = re.sub(r"[-_.]+", "_", name).lower()
    stem = filename.lower()
    for ext in (".tar.gz", ".zip"):
        if stem.endswith(ext):
            stem = stem[: -len(ext)]
            break
    else:
        return False
    dist, _, ver = stem.rpartition("-")
    return re.sub(r"[-_.]+", "_", dist) == norm and ver == version.lower()


def pick_sdist(
    index_json: dict[str, object], name: str, version: str, base_url: str = ""
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


def resolve_sdist(name: str, version: str, index_url: str) -> SdistRef:
    """Look up the sdist of ``name==version`` on a PEP 691 simple index."""
    url = f"{index_url.rstrip('/')}/{name}/"
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
    return pick_sdist(data, name, version, base_url=page)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _download(url: str, dest: Path) -> None:
    tmp = dest.with_name(f"{dest.name}.{os.getpid()}.part")
    try:
        with urllib.request.urlopen(url, timeout=300) as resp, tmp.open("wb") as fh:
            shutil.copyfileobj(resp, fh)
    except (urllib.error.URLError, OSError) as exc:
        tmp.unlink(missing_ok=True)
        raise ForkkitError(f"{url}: download failed ({exc}); retry later") from None
    tmp.replace(dest)


def fetch_sdist(spec: UpstreamSpec, cache_dir: Path) -> Path:
    """Return the cached, sha256-verified sdist of ``spec`` (downloading once).

    A cached file is re-verified on every call; a mismatch is an error and the
    bad file is moved aside so nothing tampered is ever used.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    if spec.sdist_url:
        ref = SdistRef(
            spec.sdist_url.rsplit("/", 1)[-1].split("#")[0], spec.sdist_url, spec.sha256
        )
    else:
        cached = sorted(
            p
            for p in cache_dir.iterdir()
            if sdist_filename_matches(p.name, spec.name, spec.version)
        )
        if cached:
            ref = SdistRef(cached[0].name, "", spec.sha256)
        else:
            ref = resolve_sdist(spec.name, spec.version, spec.index_url)
            if ref.sha256 and ref.sha256 != spec.sha256:
                raise ForkkitError(
                    f"{ref.filename}: the index lists sha256 {ref.sha256}, not the "
                    f"pin {spec.sha256} in fork.toml; nothing downloaded. Re-pin "
                    "only if you trust the new file"
                )
    dest = cache_dir / ref.filename
    if not dest.exists():
        with step(f"downloading {ref.filename}"):
            _download(ref.url, dest)
    actual = sha256_file(dest)
    if actual != spec.sha256:
        bad = dest.with_name(dest.name + ".rejected")
        dest.replace(bad)
        raise ForkkitError(
            f"{dest.name}: sha256 {actual} does not match the pin {spec.sha256} "
            f"in fork.toml; moved aside to {bad}. Rerun to download it again; "
            "re-pin only if you trust the new file"
        )
    return dest


def extract_sdist(archive: Path, dest: Path, sha256: str) -> Path:
    """Extract the sdist once into ``dest`` (its single top folder stripped)."""
    marker = dest / ".forkkit-extracted"
    if marker.exists() and marker.read_text().strip() == sha256:
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    # Extract beside dest, then rename: concurrent callers never see a
    # half-extracted tree (the marker travels with the rename).
    tmp = dest.with_name(f"{dest.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        with step(f"extracting {archive.name}"), tarfile.open(archive) as tar:
            tops = {m.name.split("/", 1)[0] for m in tar.getmembers()}
            if len(tops) != 1:
                raise ForkkitError(
                    f"{archive.name}: expected one top folder, got {sorted(tops)}; "
                    "not a standard sdist"
                )
            tar.extractall(tmp, filter="data")
        top = tmp / tops.pop()
        (top / marker.name).write_text(sha256 + "\n")
        try:
            top.rename(dest)
        except OSError:
            if not (marker.exists() and marker.read_text().strip() == sha256):
                raise  # not a concurrent extraction of the same archive
    except (tarfile.TarError, OSError) as exc:
        raise ForkkitError(
            f"{archive.name}: cannot extract ({exc}); delete it and fetch again"
        ) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def fetch_git_rev(git: Git, url: str, rev: str) -> str:
    """Fetch ``rev`` of ``url`` into ``git``'s repo; return its commit SHA.

    Tries a shallow fetch of just that revision, then falls back to fetching
    branches and tags (servers that refuse fetching an unadvertised SHA).
    """
    if not url or not rev:
        raise ForkkitError(
            "fork.toml [upstream]: git source needs git_url and git_rev "
            "(or pass --git-url/--rev)"
        )
    with step(f"fetching {rev} from {url}"):
        if git.ok("fetch", "-q", "--depth=1", url, rev):
            sha = git.rev("FETCH_HEAD")
            assert sha
            return sha
        git.run(
            "fetch",
            "-q",
            url,
            "+refs/heads/*:refs/forkkit-src/heads/*",
            "+refs/tags/*:refs/forkkit-src/tags/*",
        )
        for cand in (
            rev,
            f"refs/forkkit-src/heads/{rev}",
            f"refs/forkkit-src/tags/{rev}",
        ):
            sha = git.rev(cand)
            if sha:
                return sha
    raise ForkkitError(f"{url}: revision {rev!r} not found; check git_rev / --rev")
