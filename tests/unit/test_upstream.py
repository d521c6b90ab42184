"""Pristine upstream: index lookup, verified download, cache, extraction."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from forkkit.config import UpstreamSpec
from forkkit.errors import ForkkitError
from forkkit.git import Git
from forkkit.upstream import (
    extract_sdist,
    fetch_git_rev,
    fetch_sdist,
    pick_sdist,
    resolve_sdist,
    sdist_filename_matches,
)
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


def _page(files: list[dict[str, object]]) -> dict[str, object]:
    return {"meta": {"api-version": "1.1"}, "name": "toy", "files": files}


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
    thread = threading.Thread(target=server.serve_forever, daemon=True)
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
        version=version,
        sha256=sha256,
        index_url=f"{index.url}/simple",
        git_url="",
        git_rev="",
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
        _spec(fake_index, pin), sdist_url=fake_index.file_url("toy-1.0.tar.gz")
    )
    with pytest.raises(ForkkitError, match=f"does not match the pin {pin}"):
        fetch_sdist(spec, tmp_path / "cache")
    assert (tmp_path / "cache" / "toy-1.0.tar.gz.rejected").exists()
    assert not (tmp_path / "cache" / "toy-1.0.tar.gz").exists()


def test_fetch_from_a_file_url(tmp_path: Path) -> None:
    up = SyntheticUpstream(tmp_path / "up")
    archive, sha = up.publish("1.0", BUGGY)
    spec = UpstreamSpec("toy", "sdist", "1.0", sha, "", "", "", archive.as_uri())
    assert fetch_sdist(spec, tmp_path / "c").read_bytes() == archive.read_bytes()


def test_extract_sdist_is_idempotent(tmp_path: Path) -> None:
    up = SyntheticUpstream(tmp_path / "up")
    archive, sha = up.publish("1.0", BUGGY)
    dest = tmp_path / "src" / "toy-1.0"
    assert extract_sdist(archive, dest, sha) == dest
    assert (dest / "toy" / "calc.py").read_text() == BUGGY["toy/calc.py"]
    assert [p.name for p in (tmp_path / "src").iterdir()] == ["toy-1.0"]
    calc = dest / "toy" / "calc.py"
    mtime = calc.stat().st_mtime_ns
    (dest / "scratch").write_text("kept: nothing is re-extracted")
    extract_sdist(archive, dest, sha)
    assert (dest / "scratch").exists()
    assert calc.stat().st_mtime_ns == mtime
    # A different archive (sha) replaces the extracted tree.
    archive2, sha2 = up.publish("1.1", {**BUGGY, "toy/new.py": "X = 1\n"})
    extract_sdist(archive2, dest, sha2)
    assert not (dest / "scratch").exists()
    assert (dest / "toy" / "new.py").exists()


def test_extract_rejects_a_non_sdist(tmp_path: Path) -> None:
    bad = tmp_path / "toy-1.0.tar.gz"
    bad.write_bytes(b"not a tarball")
    with pytest.raises(ForkkitError, match=r"toy-1\.0\.tar\.gz: cannot extract"):
        extract_sdist(bad, tmp_path / "out", "x")


def test_fetch_git_rev_by_tag_branch_and_sha(tmp_path: Path) -> None:
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", BUGGY)
    up.publish("1.1", {**BUGGY, "toy/new.py": "X = 1\n"})
    git = Git.init(tmp_path / "repo")
    for url in (str(up.bare), up.bare.as_uri()):
        assert fetch_git_rev(git, url, "v1.0") == up.rev("1.0")
        assert fetch_git_rev(git, url, "main") == up.rev("1.1")
        assert fetch_git_rev(git, url, up.rev("1.0")) == up.rev("1.0")
    with pytest.raises(ForkkitError, match="revision 'v9' not found"):
        fetch_git_rev(git, str(up.bare), "v9")
