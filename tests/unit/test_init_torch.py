# SPDX-License-Identifier: Apache-2.0
"""#47 item 1: ``init`` gives the test venv the torch of the upstream's own
CPU build (its ``requirements/cpu.txt``, else ``pyproject.toml``), says
where it came from, and ``init --git URL --rev REV`` writes a git pin with
its commit resolved. Real sdists on a local index, a real git upstream."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from forkkit import cli
from forkkit.config import load_config
from forkkit.upstream.torchpin import release_torch
from tests.synthetic import BUGGY, SyntheticUpstream

CPU_TXT = """\
# the CPU build
-r common.txt
--extra-index-url https://download.pytorch.org/whl/cpu
torch==2.14.0+cpu; platform_machine == "x86_64" or platform_machine == "aarch64"
torch==2.14.0; platform_system == "Darwin" or platform_machine == "ppc64le"
torchaudio; platform_machine != "s390x"
"""
CPU = "+cpu" if platform.system() == "Linux" else ""


def _reader(files: dict[str, str]):  # type: ignore[no-untyped-def]
    return lambda path: files.get(path)


@pytest.mark.parametrize(
    ("files", "spec", "source"),
    [
        ({"requirements/cpu.txt": CPU_TXT}, "torch==2.14.0", "requirements/cpu.txt"),
        (
            {"pyproject.toml": '[build-system]\nrequires = ["torch == 2.9.1"]\n'},
            f"torch==2.9.1{CPU}",
            "pyproject.toml",
        ),
        ({}, f"torch==2.13.0{CPU}", "forkkit's default"),
    ],
)
def test_the_release_names_its_torch(
    files: dict[str, str], spec: str, source: str
) -> None:
    got = release_torch(_reader(files), release="vllm 0.33.0")
    if source == "requirements/cpu.txt" and platform.machine() in ("x86_64", "aarch64"):
        spec += "+cpu"
    assert got.spec.startswith(spec) and got.source.startswith(source)
    assert "vllm 0.33.0" in got.source


def test_init_writes_the_release_s_cpu_torch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", {**BUGGY, "requirements/cpu.txt": CPU_TXT})
    proj = tmp_path / "proj"
    index = (tmp_path / "up" / "index").as_uri()
    assert cli.main(["init", "toy==1.0", "--dir", str(proj), "--index-url", index]) == 0
    out = capsys.readouterr().out
    cfg = load_config(proj / "fork.toml")
    assert cfg.testenv.torch.startswith("torch==2.14.0")
    assert "requirements/cpu.txt of toy 1.0" in out
    assert (
        "# torch: requirements/cpu.txt of toy 1.0" in (proj / "fork.toml").read_text()
    )
    # the sdist init read is the one materialize uses: not fetched again
    assert list((proj / ".forkkit" / "cache" / "sdist").glob("toy-1.0.tar.gz"))


def test_init_git_writes_a_git_pin_with_its_commit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", {**BUGGY, "requirements/cpu.txt": CPU_TXT})
    url, commit = up.bare.as_uri(), up.rev("1.0")
    proj = tmp_path / "proj"
    argv = ["init", "--git", url, "--rev", "main", "--dir", str(proj)]
    assert cli.main(argv) == 0
    cfg = load_config(proj / "fork.toml")
    assert cfg.upstream.doc().commit == commit
    assert cfg.upstream.doc().rev == "main"
    assert cfg.testenv.torch.startswith("torch==2.14.0")
    assert commit in capsys.readouterr().out
    # a revision that reads as an option never reaches git as one
    capsys.readouterr()
    bad = [
        "init",
        "--git",
        url,
        "--rev",
        "--upload-pack=touch x",
        "--dir",
        str(tmp_path / "q"),
    ]
    assert cli.main(bad) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "q" / "fork.toml").exists()
