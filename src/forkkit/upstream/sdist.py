"""Pristine upstream trees: the pinned PyPI sdist (verified) or a git revision.

Everything read back from the workdir is checked before it is used: the
cached sdist by its sha256 pin, the extracted tree by the manifest recorded
when it was extracted (an edited tree is extracted again).
"""

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

from forkkit.config import UpstreamSpec, check_git_url, check_url
from forkkit.errors import ForkkitError
from forkkit.output.progress import say, step
from forkkit.vcs import Repo, fetch_rev

_PEP691 = "application/vnd.pypi.simple.v1+json"
# Beside the extracted files (and excluded from the pristine tree): the
# sdist's sha256, and the manifest of every file as it was extracted.
EXTRACT_MARKER = ".forkkit-extracted"
EXTRACT_MANIFEST = ".forkkit-manifest"


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


def project_page(name: str, index_url: str) -> tuple[dict[str, object], str]:
    """The PEP 691 project page of ``name`` on ``index_url``, and its URL."""
    check_url(index_url, "upstream index_url")
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
    return data, page


def resolve_sdist(name: str, version: str, index_url: str) -> SdistRef:
    """Look up the sdist of ``name==version`` on a PEP 691 simple index."""
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


def sha256_file(path: Path) -> str:
    """The sha256 of a file; one-line error if it cannot be read."""
    try:
        with path.open("rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError as exc:
        raise ForkkitError(
            f"{path}: cannot read ({exc.strerror}); fix its permissions or delete it"
        ) from None


def _download(url: str, dest: Path) -> None:
    tmp = dest.with_name(f"{dest.name}.{os.getpid()}.part")
    try:
        fh = tmp.open("wb")
    except OSError as exc:
        raise ForkkitError(
            f"{dest.parent}: cannot write the download ({exc.strerror}); fix its "
            "permissions or set FORKKIT_WORKDIR to a writable folder"
        ) from None
    try:
        with fh, urllib.request.urlopen(url, timeout=300) as resp:
            shutil.copyfileobj(resp, fh)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        tmp.unlink(missing_ok=True)
        raise ForkkitError(f"{url}: download failed ({exc}); retry later") from None
    tmp.replace(dest)


def _cache_folder(cache_dir: Path) -> Path:
    """Create the sdist cache; one-line error if it cannot be a folder."""
    if cache_dir.exists() and not cache_dir.is_dir():
        raise ForkkitError(
            f"{cache_dir}: the sdist cache is not a folder; move the file away "
            "or set FORKKIT_WORKDIR to another folder"
        )
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ForkkitError(
            f"{cache_dir}: cannot create the sdist cache ({exc.strerror}); "
            "set FORKKIT_WORKDIR to a writable folder"
        ) from None
    return cache_dir


def _sdist_ref(spec: UpstreamSpec, cache_dir: Path) -> SdistRef:
    """The sdist to use: the explicit URL, a cached file, or the index's."""
    if spec.sdist_url:
        check_url(spec.sdist_url, "upstream sdist_url")
        path = urllib.parse.unquote(urllib.parse.urlsplit(spec.sdist_url).path)
        name = path.rsplit("/", 1)[-1]
        if name in ("", ".", ".."):
            raise ForkkitError(
                f"upstream sdist_url: {spec.sdist_url!r} does not end in a file "
                "name; give the URL of the .tar.gz itself"
            )
        return SdistRef(name, spec.sdist_url, spec.sha256)
    cached = sorted(
        p.name
        for p in cache_dir.iterdir()
        if sdist_filename_matches(p.name, spec.name, spec.version)
    )
    if cached:
        return SdistRef(cached[0], "", spec.sha256)
    _check_writable(cache_dir, f"{spec.name}=={spec.version}")
    ref = resolve_sdist(spec.name, spec.version, spec.index_url)
    if ref.sha256 and ref.sha256 != spec.sha256:
        raise ForkkitError(
            f"{ref.filename}: the index lists sha256 {ref.sha256}, not the "
            f"pin {spec.sha256} in fork.toml; nothing downloaded. Re-pin "
            "only if you trust the new file"
        )
    return ref


def _check_writable(folder: Path, what: str) -> None:
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ForkkitError(
            f"{folder}: not writable, cannot store {what} there; fix its "
            "permissions or set FORKKIT_WORKDIR to a writable folder"
        )


def fetch_sdist(spec: UpstreamSpec, cache_dir: Path) -> Path:
    """Return the cached, sha256-verified sdist of ``spec`` (downloading once).

    A cached file is re-verified on every call; a mismatch is an error and the
    bad file is moved aside so nothing tampered is ever used.
    """
    ref = _sdist_ref(spec, _cache_folder(cache_dir))
    dest = cache_dir / ref.filename
    if not dest.exists():
        _check_writable(cache_dir, ref.filename)
        with step(f"downloading {ref.filename}"):
            _download(ref.url, dest)
    actual = sha256_file(dest)
    if actual != spec.sha256:
        bad = dest.with_name(dest.name + ".rejected")
        try:
            dest.replace(bad)
        except OSError as exc:
            raise ForkkitError(
                f"{dest}: sha256 {actual} does not match the pin {spec.sha256} "
                f"in fork.toml, and it cannot be moved aside ({exc.strerror}); "
                "delete it and rerun"
            ) from None
        raise ForkkitError(
            f"{dest.name}: sha256 {actual} does not match the pin {spec.sha256} "
            f"in fork.toml; moved aside to {bad}. Rerun to download it again; "
            "re-pin only if you trust the new file"
        )
    return dest


# -- the extracted tree ------------------------------------------------------


def tree_manifest(root: Path) -> bytes | None:
    """Every file under ``root`` as ``MODE SHA256 PATH\\0`` records, sorted.

    Modes are git's (100644, 100755, 120000 for a symlink: the sha256 of its
    target); folders only contribute their files. The marker and manifest
    at the top are left out. None if something cannot be read.
    """
    records: list[str] = []
    try:
        _walk(root, "", records)
    except OSError:
        return None
    records.sort()
    return "".join(records).encode("utf-8", "surrogateescape")


def _walk(folder: Path, prefix: str, out: list[str]) -> None:
    with os.scandir(folder) as entries:
        for entry in entries:
            rel = prefix + entry.name
            if not prefix and entry.name in (EXTRACT_MARKER, EXTRACT_MANIFEST):
                continue
            if entry.is_symlink():
                target = os.readlink(entry.path).encode("utf-8", "surrogateescape")
                out.append(f"120000 {hashlib.sha256(target).hexdigest()} {rel}\0")
            elif entry.is_dir():
                _walk(Path(entry.path), rel + "/", out)
            elif entry.is_file():
                x = entry.stat(follow_symlinks=False).st_mode & 0o111
                mode = "100755" if x else "100644"
                with open(entry.path, "rb") as fh:
                    sha = hashlib.file_digest(fh, "sha256").hexdigest()
                out.append(f"{mode} {sha} {rel}\0")
            else:
                out.append(f"000000 - {rel}\0")  # never in an sdist: a change


def _recorded(dest: Path, sha256: str) -> bytes | None:
    """The manifest recorded when ``dest`` was extracted from ``sha256``."""
    try:
        if (dest / EXTRACT_MARKER).read_text().strip() != sha256:
            return None
        return (dest / EXTRACT_MANIFEST).read_bytes()
    except (OSError, UnicodeDecodeError):
        return None


def _first_difference(recorded: bytes, actual: bytes | None) -> str:
    """A path that differs between two manifests (for the progress line)."""
    if actual is None:
        return "a file that cannot be read"
    old = set(recorded.split(b"\0"))
    new = set(actual.split(b"\0"))
    changed = sorted(r.split(b" ", 2)[-1] for r in old ^ new if r)
    return changed[0].decode("utf-8", "replace") if changed else "the file list"


def extract_sdist(archive: Path, dest: Path, sha256: str) -> Path:
    """The pristine files of ``archive`` (its single top folder) in ``dest``.

    Extracts once and records a manifest of what it wrote; later calls reuse
    ``dest`` only while its files still match that manifest, and otherwise
    extract the (re-verified) archive again. ``sha256`` is the pin.
    """
    recorded = _recorded(dest, sha256)
    if recorded is not None:
        actual = tree_manifest(dest)
        if actual == recorded:
            return dest
        say(
            f"{dest}: {_first_difference(recorded, actual)} differs from "
            f"{archive.name}; extracting it again"
        )
    actual_sha = sha256_file(archive)
    if actual_sha != sha256:
        raise ForkkitError(
            f"{archive}: sha256 {actual_sha} does not match the pin {sha256}; "
            "delete it and rerun 'forkkit fetch'"
        )
    _check_writable_parent(dest)
    _extract_into(archive, dest, sha256)
    return dest


def _check_writable_parent(dest: Path) -> None:
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ForkkitError(
            f"{dest.parent}: cannot create it ({exc.strerror}); "
            "set FORKKIT_WORKDIR to a writable folder"
        ) from None
    _check_writable(dest.parent, dest.name)


def _extract_into(archive: Path, dest: Path, sha256: str) -> None:
    """Extract beside ``dest``, record the manifest, then swap it into place.

    Nobody ever sees a half-extracted tree under ``dest``: the marker and
    manifest travel with the rename.
    """
    tmp = dest.with_name(f"{dest.name}.tmp-{os.getpid()}")
    old = dest.with_name(f"{dest.name}.old-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        with step(f"extracting {archive.name}"), tarfile.open(archive) as tar:
            tops = {m.name.split("/", 1)[0] for m in tar.getmembers()}
            if len(tops) != 1:
                raise ForkkitError(
                    f"{archive.name}: expected one top folder, got {sorted(tops)}; "
                    "not a standard sdist"
                )
            tar.extractall(tmp, filter="data")
        top = tmp / tops.pop()
        manifest = tree_manifest(top)
        if manifest is None:
            raise OSError(f"cannot read back {top}")
        (top / EXTRACT_MANIFEST).write_bytes(manifest)
        (top / EXTRACT_MARKER).write_text(sha256 + "\n")
        if dest.exists():
            dest.rename(old)
        top.rename(dest)
    except (tarfile.TarError, OSError) as exc:
        raise ForkkitError(
            f"{archive}: cannot extract into {dest.parent} ({exc}); "
            "delete the archive and rerun 'forkkit fetch'"
        ) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


def fetch_git_rev(repo: Repo, url: str, rev: str) -> str:
    """Fetch ``rev`` of ``url`` into ``repo``; return its commit id."""
    if not url or not rev:
        raise ForkkitError(
            "upstream: a git source needs git_url and git_rev; set both in "
            "fork.toml [upstream]"
        )
    check_git_url(url, "upstream git_url")
    with step(f"fetching {rev} from {url}"):
        return fetch_rev(repo, url=url, rev=rev)
