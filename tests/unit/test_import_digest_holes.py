# SPDX-License-Identifier: Apache-2.0
"""The import digest covers what an interpreter can import and writes
nothing into it (#44 K4, K6): a real venv, a real editable-install finder,
real file times."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from forkkit.testing.importdigest import forget, import_digest, import_roots

pytestmark = pytest.mark.contract  # a real venv, hashed whole

# What setuptools writes for ``pip install -e``: a finder module that maps a
# package to its source folder (not on sys.path), and a .pth that installs it.
FINDER = textwrap.dedent(
    """\
    import sys
    from importlib.machinery import ModuleSpec, PathFinder

    MAPPING = {"toyedit": %r}


    class _EditableFinder:
        @classmethod
        def find_spec(cls, fullname, path=None, target=None):
            if fullname in MAPPING:
                parent = MAPPING[fullname].rsplit("/", 1)[0]
                return PathFinder.find_spec(fullname, [parent])
            return None


    def install():
        if _EditableFinder not in sys.meta_path:
            sys.meta_path.append(_EditableFinder)
    """
)


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    root = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True
    )
    return root


def _site(venv: Path) -> Path:
    return next((venv / "lib").glob("python*/site-packages"))


def _digest(venv: Path, store: Path) -> str:
    forget()
    return import_digest(venv / "bin" / "python", store)


def test_an_editable_install_s_source_folder_is_in_the_digest(
    venv: Path, tmp_path: Path
) -> None:
    src = tmp_path / "outside" / "toyedit"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text("VALUE = 1\n")
    site = _site(venv)
    (site / "__editable___toyedit_finder.py").write_text(FINDER % str(src))
    (site / "__editable__.toyedit.pth").write_text(
        "import __editable___toyedit_finder; __editable___toyedit_finder.install()\n"
    )
    python = venv / "bin" / "python"
    out = subprocess.run(
        [str(python), "-c", "import toyedit; print(toyedit.VALUE)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "1"  # the finder really serves it
    assert str(src) in import_roots(python)
    store = tmp_path / "digest.json"
    first = _digest(venv, store)
    (src / "__init__.py").write_text("VALUE = 2\n")
    assert _digest(venv, store) != first


def test_a_same_size_pth_edit_with_its_time_set_back_misses(
    venv: Path, tmp_path: Path
) -> None:
    site = _site(venv)
    pth = site / "plugin.pth"
    pth.write_text("import os  # off\n")
    st = pth.stat()
    store = tmp_path / "digest.json"
    first = _digest(venv, store)
    pth.write_text("import sys  # on\n")  # the same size
    os.utime(pth, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert pth.stat().st_size == st.st_size
    assert pth.stat().st_mtime_ns == st.st_mtime_ns
    assert _digest(venv, store) != first


def test_a_same_size_module_edit_with_its_time_set_back_misses(
    venv: Path, tmp_path: Path
) -> None:
    mod = _site(venv) / "plugin_mod.py"
    mod.write_text("ON = 0\n")
    st = mod.stat()
    store = tmp_path / "digest.json"
    first = _digest(venv, store)
    mod.write_text("ON = 1\n")
    os.utime(mod, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _digest(venv, store) != first


def test_the_digest_writes_no_bytecode_into_the_interpreter(
    venv: Path, tmp_path: Path
) -> None:
    site = _site(venv)
    (site / "__editable___toyedit_finder.py").write_text(FINDER % str(tmp_path))
    (site / "__editable__.toyedit.pth").write_text(
        "import __editable___toyedit_finder; __editable___toyedit_finder.install()\n"
    )
    _digest(venv, tmp_path / "digest.json")
    assert not list(venv.rglob("__pycache__"))
