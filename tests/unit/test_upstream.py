"""Pristine upstream: index lookup, verified download, cache, extraction.

Contract 5: what is read back from the workdir (the cached sdist, the
extracted tree) is checked against the pin before it becomes ``base``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.tree import materialize
from forkkit.pin import SdistPin, UpstreamSpec
from forkkit.upstream.git import fetch_git_rev
from forkkit.upstream.index import pick_sdist, resolve_sdist, sdist_filename_matches
from forkkit.upstream.sdist import (
    EXTRACT_MANIFEST,
    EXTRACT_MARKER,
    extract_sdist,
    fetch_sdist,
)
from forkkit.vcs import Repo
from tests.synthetic import BUGGY, SyntheticUpstream, tar_tree

PEP691 = "application/vnd.pypi.simple.v1+json"


@pytest.mark.parametrize(
    ("filename", "name", "version", "expected"),
    [
        ("vllm-0.30.0.tar.gz", "vllm", "0.30.0", True),
        ("vllm-0.30.0.zip", "vllm", "0.30.0", True),
        ("vllm-0.30.0-cp38-abi3-manylinux1_x86_64.whl", "vllm", "0.30.0", False),
        ("vllm-0.30.1.tar.gz", "vllm", "0.30.0", False),
        ("vllm-0.30.0.tar.gz.rejected", "vllm", "0.30.0", False),
        # PEP 625: the distribution name is normalized with underscores
        ("my_pkg-1.0.tar.gz", "My.Pkg", "1.0", True),
        ("my-pkg-1.0.tar.gz", "my_pkg", "1.0", True),
        ("My_Pkg-1.0rc1.tar.gz", "my-pkg", "1.0RC1", True),
        ("my_pkg_extra-1.0.tar.gz", "my-pkg", "1.0", False),
    ],
)
def test_sdist_filename_matches(
    filename: str, name: str, version: str, expected: bool
) -> None:
    assert sdist_filename_matches(filename, name, version) is expected


def _page(files: Sequence[Mapping[str, object]]) -> dict[str, object]:
    return {"meta": {"api-version": "1.1"}, "name": "toy", "files": list(files)}


# What extraction leaves beside the tree: only its (persistent) build lock.
TREE_AND_LOCK = [".toy-1.0.lock", "toy-1.0"]


def test_pick_sdist_from_pep691_page() -> None:
    page = _page(
        [
            {
                "filename": "toy-1.0-py3-none-any.whl",
                "url": "https://files.example/toy-1.0-py3-none-any.whl",
                "hashes": {"sha256": "a" * 64},
            },
            {
                "filename": "toy-0.9.tar.gz",
                "url": "https://files.example/toy-0.9.tar.gz",
                "hashes": {"sha256": "b" * 64},
            },
            {
                "filename": "toy-1.0.tar.gz",
                "url": "../../files/toy-1.0.tar.gz",
                "hashes": {"sha256": "c" * 64},
            },
        ]
    )
    ref = pick_sdist(page, "toy", "1.0", base_url="https://idx.example/simple/toy/")
    assert ref.filename == "toy-1.0.tar.gz"
    assert ref.url == "https://idx.example/files/toy-1.0.tar.gz"
    assert ref.sha256 == "c" * 64


def test_pick_sdist_missing_version_is_a_clear_error() -> None:
    page = _page([{"filename": "toy-0.9.tar.gz", "url": "x", "hashes": {}}])
    with pytest.raises(ForkkitError, match=r"toy==1\.0: no source distribution"):
        pick_sdist(page, "toy", "1.0")
    with pytest.raises(ForkkitError, match="not a PEP 691 project page"):
        pick_sdist({"detail": "nope"}, "toy", "1.0")


@dataclass
class FakeIndex:
    """A PEP 691 simple index on 127.0.0.1 serving one project's sdists."""

    url: str
    sdists: dict[str, bytes]
    requests: list[str] = field(default_factory=list)

    def file_url(self, filename: str) -> str:
        return f"{self.url}/files/{filename}"


@pytest.fixture
def fake_index() -> Iterator[FakeIndex]:
    index = FakeIndex(url="", sdists={})

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            index.requests.append(self.path)
            if self.path == "/simple/toy/":
                if PEP691 not in self.headers.get("Accept", ""):
                    self.send_error(406)
                    return
                files = [
                    {
                        "filename": fn,
                        # relative, as PEP 691 allows
                        "url": f"../../files/{fn}",
                        "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                    }
                    for fn, data in index.sdists.items()
                ]
                self._send(json.dumps(_page(files)).encode(), PEP691)
            elif self.path.startswith("/files/") and (
                data := index.sdists.get(self.path[len("/files/") :])
            ):
                self._send(data, "application/octet-stream")
            else:
                self.send_error(404)

        def _send(self, body: bytes, ctype: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    index.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()


def _spec(index: FakeIndex, sha256: str, version: str = "1.0") -> UpstreamSpec:
    return UpstreamSpec(
        name="toy",
        source="sdist",
        index_url=f"{index.url}/simple",
        sdist=SdistPin(version, sha256),
    )


def _publish(index: FakeIndex, version: str = "1.0") -> str:
    data = tar_tree(BUGGY, f"toy-{version}")
    index.sdists[f"toy-{version}.tar.gz"] = data
    return hashlib.sha256(data).hexdigest()


def test_resolve_sdist_against_a_local_pep691_index(fake_index: FakeIndex) -> None:
    sha = _publish(fake_index, "1.0")
    _publish(fake_index, "1.1")
    ref = resolve_sdist("toy", "1.1", f"{fake_index.url}/simple/")
    assert ref.filename == "toy-1.1.tar.gz"
    assert ref.url == fake_index.file_url("toy-1.1.tar.gz")
    assert resolve_sdist("toy", "1.0", f"{fake_index.url}/simple").sha256 == sha
    with pytest.raises(ForkkitError, match="cannot read the package index"):
        resolve_sdist("nothere", "1.0", f"{fake_index.url}/simple")


def test_fetch_downloads_once_then_reuses_the_cache(
    fake_index: FakeIndex, tmp_path: Path
) -> None:
    sha = _publish(fake_index)
    cache = tmp_path / "cache"
    path = fetch_sdist(_spec(fake_index, sha), cache)
    assert path == cache / "toy-1.0.tar.gz"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha
    assert fake_index.requests == ["/simple/toy/", "/files/toy-1.0.tar.gz"]
    assert fetch_sdist(_spec(fake_index, sha), cache) == path
    assert len(fake_index.requests) == 2  # no network the second time
    assert sorted(p.name for p in cache.iterdir()) == ["toy-1.0.tar.gz"]


def test_fetch_refuses_a_tampered_cached_sdist(
    fake_index: FakeIndex, tmp_path: Path
) -> None:
    sha = _publish(fake_index)
    cache = tmp_path / "cache"
    path = fetch_sdist(_spec(fake_index, sha), cache)
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ForkkitError) as exc:
        fetch_sdist(_spec(fake_index, sha), cache)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("toy-1.0.tar.gz: sha256 ")
    assert f"does not match the pin {sha}" in msg
    assert not path.exists()
    assert (cache / "toy-1.0.tar.gz.rejected").read_bytes() == bytes(data)
    # The next fetch downloads a good copy again and ignores the rejected one.
    assert fetch_sdist(_spec(fake_index, sha), cache) == path
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha


def test_fetch_refuses_a_download_that_differs_from_the_pin(
    fake_index: FakeIndex, tmp_path: Path
) -> None:
    _publish(fake_index)
    pin = "0" * 64
    with pytest.raises(ForkkitError, match=f"toy-1.0.tar.gz: .*the pin {pin}"):
        fetch_sdist(_spec(fake_index, pin), tmp_path / "cache")
    # The index already said so: nothing was downloaded.
    assert "/files/toy-1.0.tar.gz" not in fake_index.requests
    # An explicit URL skips the index; the downloaded bytes are checked.
    spec = replace(
        _spec(fake_index, pin),
        sdist=SdistPin("1.0", pin, fake_index.file_url("toy-1.0.tar.gz")),
    )
    with pytest.raises(ForkkitError, match=f"does not match the pin {pin}"):
        fetch_sdist(spec, tmp_path / "cache")
    assert (tmp_path / "cache" / "toy-1.0.tar.gz.rejected").exists()
    assert not (tmp_path / "cache" / "toy-1.0.tar.gz").exists()


def test_fetch_from_a_file_url(tmp_path: Path) -> None:
    up = SyntheticUpstream(tmp_path / "up")
    archive, sha = up.publish("1.0", BUGGY)
    spec = UpstreamSpec("toy", "sdist", sdist=SdistPin("1.0", sha, archive.as_uri()))
    assert fetch_sdist(spec, tmp_path / "c").read_bytes() == archive.read_bytes()


def test_extract_sdist_is_idempotent(tmp_path: Path) -> None:
    up = SyntheticUpstream(tmp_path / "up")
    archive, sha = up.publish("1.0", BUGGY)
    dest = tmp_path / "src" / "toy-1.0"
    assert extract_sdist(archive, dest, sha) == dest
    assert (dest / "toy" / "calc.py").read_text() == BUGGY["toy/calc.py"]
    assert sorted(p.name for p in (tmp_path / "src").iterdir()) == TREE_AND_LOCK
    assert (dest / EXTRACT_MARKER).read_text().strip() == sha
    assert b"toy/calc.py" in (dest / EXTRACT_MANIFEST).read_bytes()
    calc = dest / "toy" / "calc.py"
    mtime = calc.stat().st_mtime_ns
    extract_sdist(archive, dest, sha)
    assert calc.stat().st_mtime_ns == mtime  # nothing re-extracted
    # A different archive (sha) replaces the extracted tree.
    archive2, sha2 = up.publish("1.1", {**BUGGY, "toy/new.py": "X = 1\n"})
    extract_sdist(archive2, dest, sha2)
    assert (dest / "toy" / "new.py").exists()
    assert sorted(p.name for p in (tmp_path / "src").iterdir()) == TREE_AND_LOCK


def _edit_file(dest: Path) -> None:
    (dest / "toy" / "calc.py").write_text("def limit(n):\n    return n\n")


def _add_file(dest: Path) -> None:
    (dest / "toy" / "extra.py").write_text("EXTRA = 1\n")


def _delete_file(dest: Path) -> None:
    (dest / "toy" / "other.py").unlink()


def _make_executable(dest: Path) -> None:
    (dest / "toy" / "calc.py").chmod(0o755)


def _replace_with_symlink(dest: Path) -> None:
    (dest / "toy" / "other.py").unlink()
    (dest / "toy" / "other.py").symlink_to("calc.py")


def _edit_marker_only(dest: Path) -> None:
    """A marker of an older forkkit (no manifest) is not trusted."""
    (dest / EXTRACT_MANIFEST).unlink()
    _edit_file(dest)


@pytest.mark.parametrize(
    "edit",
    [
        _edit_file,
        _add_file,
        _delete_file,
        _make_executable,
        _replace_with_symlink,
        _edit_marker_only,
    ],
)
def test_an_edited_extracted_tree_is_extracted_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: object
) -> None:
    """Contract 5: the marker alone never vouches for edited files."""
    assert callable(edit)
    up = SyntheticUpstream(tmp_path / "up")
    archive, sha = up.publish("1.0", BUGGY)
    dest = tmp_path / "src" / "toy-1.0"
    extract_sdist(archive, dest, sha)
    pristine = _files(dest)
    edit(dest)
    capsys.readouterr()
    extract_sdist(archive, dest, sha)
    assert _files(dest) == pristine
    err = capsys.readouterr().err
    assert "extracting" in err
    assert sorted(p.name for p in (tmp_path / "src").iterdir()) == TREE_AND_LOCK


def _files(root: Path) -> dict[str, tuple[bool, bool, str]]:
    """Every file: (symlink, executable, text), marker files left out."""
    return {
        str(p.relative_to(root)): (
            p.is_symlink(),
            bool(p.lstat().st_mode & 0o111),
            p.read_text(),
        )
        for p in root.rglob("*")
        if not p.is_dir() and p.name not in (EXTRACT_MARKER, EXTRACT_MANIFEST)
    }


def test_an_edited_upstream_folder_never_reaches_base(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    """A fresh fork tree is built from pristine files, not from edited ones."""
    materialize(toy_project)
    extracted = toy_project.work.upstream("toy", "1.0")
    (extracted / "toy" / "other.py").write_text("def name():\n    return 'EDIT'\n")
    tree = materialize(toy_project, dest=tmp_path / "fresh")
    assert (tree.path / "toy" / "other.py").read_text() == BUGGY["toy/other.py"]
    assert (extracted / "toy" / "other.py").read_text() == BUGGY["toy/other.py"]
    # forkkit's own records beside the files never reach the pristine tree
    assert not (tree.path / EXTRACT_MARKER).exists()
    assert not (tree.path / EXTRACT_MANIFEST).exists()


def test_extract_refuses_an_archive_that_differs_from_the_pin(
    tmp_path: Path,
) -> None:
    up = SyntheticUpstream(tmp_path / "up")
    archive, sha = up.publish("1.0", BUGGY)
    archive.write_bytes(tar_tree({**BUGGY, "toy/evil.py": "X = 1\n"}, "toy-1.0"))
    dest = tmp_path / "src" / "toy-1.0"
    with pytest.raises(ForkkitError, match=f"does not match the pin {sha}"):
        extract_sdist(archive, dest, sha)
    assert not dest.exists()


def test_a_cached_sdist_from_sdist_url_is_verified(tmp_path: Path) -> None:
    """The cached file of an explicit sdist_url is checked on every use."""
    up = SyntheticUpstream(tmp_path / "up")
    archive, sha = up.publish("1.0", BUGGY)
    spec = UpstreamSpec("toy", "sdist", sdist=SdistPin("1.0", sha, archive.as_uri()))
    cache = tmp_path / "cache"
    cached = fetch_sdist(spec, cache)
    cached.write_bytes(tar_tree({**BUGGY, "toy/evil.py": "X = 1\n"}, "toy-1.0"))
    with pytest.raises(ForkkitError, match="does not match the pin"):
        fetch_sdist(spec, cache)
    assert fetch_sdist(spec, cache).read_bytes() == archive.read_bytes()


def test_a_sdist_cache_that_is_a_file_is_a_one_line_error(tmp_path: Path) -> None:
    up = SyntheticUpstream(tmp_path / "up")
    archive, sha = up.publish("1.0", BUGGY)
    spec = UpstreamSpec("toy", "sdist", sdist=SdistPin("1.0", sha, archive.as_uri()))
    cache = tmp_path / "cache"
    cache.write_text("a file")
    with pytest.raises(ForkkitError, match=f"{cache}: .*not a folder") as exc:
        fetch_sdist(spec, cache)
    assert "\n" not in str(exc.value)


def test_extract_rejects_a_non_sdist(tmp_path: Path) -> None:
    bad = tmp_path / "toy-1.0.tar.gz"
    bad.write_bytes(b"not a tarball")
    sha = hashlib.sha256(b"not a tarball").hexdigest()
    with pytest.raises(ForkkitError, match=r"toy-1\.0\.tar\.gz: cannot extract"):
        extract_sdist(bad, tmp_path / "out", sha)


def test_fetch_git_rev_by_tag_branch_and_sha(tmp_path: Path) -> None:
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", BUGGY)
    up.publish("1.1", {**BUGGY, "toy/new.py": "X = 1\n"})
    git = Repo.init(tmp_path / "repo")
    for url in (str(up.bare), up.bare.as_uri()):
        assert fetch_git_rev(git, url, "v1.0") == up.rev("1.0")
        assert fetch_git_rev(git, url, "main") == up.rev("1.1")
        assert fetch_git_rev(git, url, up.rev("1.0")) == up.rev("1.0")
    with pytest.raises(ForkkitError, match="revision 'v9' not found"):
        fetch_git_rev(git, str(up.bare), "v9")


@pytest.mark.parametrize("url", ["ht!tp://example.org/x.git", "not a url"])
def test_fetch_git_rev_refuses_a_malformed_url(tmp_path: Path, url: str) -> None:
    repo = Repo.init(tmp_path / "repo")
    with pytest.raises(ForkkitError, match="is not a git URL") as exc:
        fetch_git_rev(repo, url, "v1.0")
    assert repr(url) in str(exc.value)


def test_an_sdist_url_without_a_file_name_is_refused(tmp_path: Path) -> None:
    url = "https://example.org/files/"
    spec = UpstreamSpec("toy", "sdist", sdist=SdistPin("1.0", "0" * 64, url))
    with pytest.raises(ForkkitError, match="does not end in a file name"):
        fetch_sdist(spec, tmp_path / "cache")
    assert not any((tmp_path / "cache").iterdir())


def test_concurrent_extractions_share_one_tree(tmp_path: Path) -> None:
    """Two callers extracting the same pinned archive at once (two test
    workers, say) both get the tree; neither swaps it away under the other."""
    up = SyntheticUpstream(tmp_path / "up")
    archive, sha = up.publish("1.0", BUGGY)
    dest = tmp_path / "src" / "toy-1.0"
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: extract_sdist(archive, dest, sha), range(8)))
    assert got == [dest] * 8
    assert (dest / "toy" / "calc.py").read_text() == BUGGY["toy/calc.py"]
    assert sorted(p.name for p in (tmp_path / "src").iterdir()) == TREE_AND_LOCK


class _Trickle(BaseHTTPRequestHandler):
    """Answers with headers, then one byte every 0.2 s, for ever."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", PEP691)
        self.end_headers()
        try:
            while True:
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            return

    def log_message(self, format: str, *args: object) -> None:
        return


def test_an_index_that_trickles_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounded network (#33 item 7): one overall deadline per request, not
    only per read; the message names the index."""
    monkeypatch.setattr("forkkit.upstream.index.PAGE_DEADLINE", 1.0)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/simple"
    start = time.monotonic()
    try:
        with pytest.raises(ForkkitError, match=r"\(the index\): no complete answer"):
            resolve_sdist("toy", "1.0", url)
    finally:
        server.shutdown()
    assert time.monotonic() - start < 10
