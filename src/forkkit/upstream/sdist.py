# SPDX-License-Identifier: Apache-2.0
"""Pristine upstream trees: the pinned PyPI sdist (verified) or a git revision.

Everything read back from the workdir is checked before it is used: the
cached sdist by its sha256 pin, the extracted tree by the manifest recorded
when it was extracted (an edited tree is extracted again).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from forkkit import faults
from forkkit.errors import ForkkitError
from forkkit.output.progress import say, step
from forkkit.pin import UpstreamSpec, check_url
from forkkit.process import exclusive, pid_alive
from forkkit.upstream.index import (
    DOWNLOAD_DEADLINE,
    READ_TIMEOUT,
    SdistRef,
    read_within,
    resolve_sdist,
    sdist_filename_matches,
)

# Beside the extracted files (and excluded from the pristine tree): the
# sdist's sha256, and the manifest of every file as it was extracted.
EXTRACT_MARKER = ".forkkit-extracted"
EXTRACT_MANIFEST = ".forkkit-manifest"


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
    """``url`` into ``dest`` whole or not at all (a ``.part`` file beside it,
    removed however the download ends; one a killed run left goes first)."""
    for old in dest.parent.glob(f"{dest.name}.*.part"):
        pid = old.name.removesuffix(".part").rsplit(".", 1)[-1]
        if pid.isdigit() and not pid_alive(int(pid)):
            old.unlink(missing_ok=True)
    tmp = dest.with_name(f"{dest.name}.{os.getpid()}.part")
    try:
        fh = tmp.open("wb")
    except OSError as exc:
        raise ForkkitError(
            f"{dest.parent}: cannot write the download ({exc.strerror}); fix its "
            "permissions or set FORKKIT_WORKDIR to a writable folder"
        ) from None
    try:
        with fh, urllib.request.urlopen(url, timeout=READ_TIMEOUT) as resp:
            read_within(resp, seconds=DOWNLOAD_DEADLINE, what=url, sink=fh)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        tmp.unlink(missing_ok=True)
        raise ForkkitError(f"{url}: download failed ({exc}); retry later") from None
    except BaseException:  # Ctrl-C, SIGTERM: no .part file stays behind
        tmp.unlink(missing_ok=True)
        raise
    faults.point(f"download {dest.name}")
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
    pin = spec.release
    if pin.sdist_url:
        check_url(pin.sdist_url, "upstream sdist_url")
        path = urllib.parse.unquote(urllib.parse.urlsplit(pin.sdist_url).path)
        name = path.rsplit("/", 1)[-1]
        if name in ("", ".", ".."):
            raise ForkkitError(
                f"upstream sdist_url: {pin.sdist_url!r} does not end in a file "
                "name; give the URL of the .tar.gz itself"
            )
        return SdistRef(name, pin.sdist_url, pin.sha256)
    cached = sorted(
        p.name
        for p in cache_dir.iterdir()
        if sdist_filename_matches(p.name, spec.name, pin.version)
    )
    if cached:
        return SdistRef(cached[0], "", pin.sha256)
    _check_writable(cache_dir, f"{spec.name}=={pin.version}")
    ref = resolve_sdist(spec.name, pin.version, spec.index_url)
    if ref.sha256 and ref.sha256 != pin.sha256:
        raise ForkkitError(
            f"{ref.filename}: the index lists sha256 {ref.sha256}, not the "
            f"pin {pin.sha256} in fork.toml; nothing downloaded. Re-pin "
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
    actual, pinned = sha256_file(dest), spec.release.sha256
    if actual != pinned:
        bad = dest.with_name(dest.name + ".rejected")
        try:
            dest.replace(bad)
        except OSError as exc:
            raise ForkkitError(
                f"{dest}: sha256 {actual} does not match the pin {pinned} "
                f"in fork.toml, and it cannot be moved aside ({exc.strerror}); "
                "delete it and rerun"
            ) from None
        raise ForkkitError(
            f"{dest.name}: sha256 {actual} does not match the pin {pinned} "
            f"in fork.toml; moved aside to {bad}. Rerun to download it again; "
            "re-pin only if you trust the new file"
        )
    return dest


def read_member(archive: Path, path: str) -> str | None:
    """The text of ``path`` (relative to the sdist's top folder) in a verified
    sdist, without extracting it; None when the release has no such file."""
    try:
        with tarfile.open(archive) as tar:
            for member in tar:
                _, _, rel = member.name.partition("/")
                if rel == path and member.isfile():
                    got = tar.extractfile(member)
                    return got.read().decode("utf-8", "replace") if got else None
    except (OSError, tarfile.TarError) as exc:
        raise ForkkitError(f"{archive}: unreadable sdist ({exc})") from None
    return None


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
    _check_writable_parent(dest)
    # one extractor at a time; a second waits, then finds the tree in place
    with exclusive(dest.with_name(f".{dest.name}.lock")):
        if recorded is None and _recorded(dest, sha256) is not None:
            return dest
        _verified_extract(archive, dest, sha256)
    return dest


def _verified_extract(archive: Path, dest: Path, sha256: str) -> None:
    """Extract ``archive`` into ``dest`` once its sha256 is the pin."""
    actual_sha = sha256_file(archive)
    if actual_sha != sha256:
        raise ForkkitError(
            f"{archive}: sha256 {actual_sha} does not match the pin {sha256}; "
            "delete it and rerun 'forkkit fetch'"
        )
    _extract_into(archive, dest, sha256)


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
        faults.point(f"extract {dest.name}")
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
