# SPDX-License-Identifier: Apache-2.0
"""The managed CPU test venv: torch through pip, the rest through uv if present.

Offline: toy wheels in local folders. pip sees only ``pip-wheels`` (the CPU
"torch"); uv sees only ``uv-wheels``, which also holds a newer CUDA "torch"
that uv would pick if anything let it replace the installed one.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.testing.env import ensure_testenv, find_uv

pytestmark = pytest.mark.contract  # builds real venvs (pip, uv): seconds each


def _wheel(
    folder: Path,
    name: str,
    version: str,
    *,
    files: dict[str, str] | None = None,
    requires: tuple[str, ...] = (),
) -> None:
    """A minimal pure-Python wheel of ``files`` (path -> text)."""
    files = dict(files or {})
    dist = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    for req in requires:
        meta += f"Requires-Dist: {req}\n"
    files[f"{dist}/METADATA"] = meta
    files[f"{dist}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n"
    )
    record = []
    for path, text in files.items():
        digest = hashlib.sha256(text.encode()).digest()
        b64 = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        record.append(f"{path},sha256={b64},{len(text.encode())}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = "\n".join(record) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)


def _torch(folder: Path, version: str, cuda: str | None) -> None:
    code = {"torch/__init__.py": "from torch import version\n"}
    code["torch/version.py"] = f"cuda = {cuda!r}\n"
    _wheel(folder, "torch", version, files=code)


def _installer(venv: Path, name: str) -> str:
    (info,) = venv.glob(f"lib/python*/site-packages/{name}-*.dist-info")
    return (info / "INSTALLER").read_text().strip()


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip and uv pointed at separate local wheel folders, no index."""
    pip_wheels, uv_wheels = tmp_path / "pip-wheels", tmp_path / "uv-wheels"
    _torch(pip_wheels, "0.1", cuda=None)
    _torch(uv_wheels, "9.9", cuda="12.8")
    _wheel(uv_wheels, "toydep", "1.0", requires=("torch",))
    _wheel(pip_wheels, "toydep", "1.0", requires=("torch",))
    monkeypatch.delenv("FORKKIT_TESTENV_PYTHON", raising=False)
    monkeypatch.delenv("PIP_CONSTRAINT", raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(pip_wheels))
    monkeypatch.setenv("UV_NO_INDEX", "1")
    monkeypatch.setenv("UV_FIND_LINKS", str(uv_wheels))
    monkeypatch.setenv("UV_NO_CONFIG", "1")
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    return tmp_path


def _cfg(project: ForkConfig, torch: str) -> ForkConfig:
    """The toy project, its test venv needing ``toydep`` (which needs torch)."""
    (project.root / "requirements").mkdir(exist_ok=True)
    (project.root / "requirements" / "common.txt").write_text("toydep\n")
    spec = dataclasses.replace(
        project.testenv, torch=torch, requirements=("requirements/common.txt",)
    )
    return dataclasses.replace(project, testenv=spec)


@pytest.mark.skipif(find_uv() is None, reason="no uv ($UV or on PATH)")
def test_uv_installs_the_rest_but_torch_stays_pips_cpu_build(
    toy_project: ForkConfig, offline: Path
) -> None:
    cfg = _cfg(toy_project, "torch==0.1")
    env = ensure_testenv(cfg, toy_project.root)
    venv = env.python.parent.parent
    assert _installer(venv, "torch") == "pip"
    assert _installer(venv, "toydep") == "uv"
    assert list(venv.glob("lib/python*/site-packages/torch-0.1.dist-info"))
    assert not list(venv.glob("lib/python*/site-packages/torch-9.9.dist-info"))


def test_pip_only_without_uv(
    toy_project: ForkConfig, offline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UV", str(offline / "no-such-uv"))
    env = ensure_testenv(_cfg(toy_project, "torch==0.1"), toy_project.root)
    venv = env.python.parent.parent
    assert _installer(venv, "torch") == _installer(venv, "toydep") == "pip"


def test_a_cuda_torch_is_refused(toy_project: ForkConfig, offline: Path) -> None:
    _torch(offline / "pip-wheels", "0.2", cuda="12.8")
    with pytest.raises(ForkkitError, match=r"not a CPU build \(CUDA 12\.8\)"):
        ensure_testenv(_cfg(toy_project, "torch==0.2"), toy_project.root)


def test_concurrent_builders_build_the_venv_once(
    toy_project: ForkConfig, offline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two callers at once (two test workers, say): one builds, the other
    waits for it and reuses the venv, instead of deleting it midway."""
    cfg = _cfg(toy_project, "torch==0.1")
    with ThreadPoolExecutor(2) as pool:
        envs = list(pool.map(lambda _: ensure_testenv(cfg, toy_project.root), "ab"))
    assert envs[0] == envs[1]
    assert capsys.readouterr().err.count("building the test venv") == 1
    venv = envs[0].python.parent.parent
    assert _installer(venv, "torch") == "pip"
