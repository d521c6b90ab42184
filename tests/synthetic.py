"""Small synthetic upstream projects for the toolkit's unit tests.

A "toy" upstream has a runtime module with a bug, its tests, and a
``requirements/common.txt``; versions are published as sdists (tar.gz with one
top folder, like PyPI's) and as commits/tags of a local bare git repo. Patches
are real ``git format-patch`` output.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import tarfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from forkkit.config import ForkConfig, load_config
from forkkit.git import Git

# The toy bug: ``limit`` is off by one; the fix makes ``limit(n) == n``.
BUGGY = {
    "toy/__init__.py": "",
    "toy/calc.py": textwrap.dedent(
        """\
        def limit(n):
            return n - 1


        def double(n):
            return 2 * n
        """
    ),
    "toy/other.py": "def name():\n    return 'toy'\n",
    "tests/__init__.py": "",
    "tests/test_other.py": textwrap.dedent(
        """\
        from toy.calc import double
        from toy.other import name


        def test_name():
            assert name() == "toy"


        def test_double():
            assert double(2) == 4
        """
    ),
    "requirements/common.txt": "",
}
FIXED_CALC = BUGGY["toy/calc.py"].replace("return n - 1", "return n")
FIX_TEST = textwrap.dedent(
    """\
    from toy.calc import limit


    def test_limit_reaches_n():
        assert limit(16000) == 16000
    """
)


def tar_tree(files: dict[str, str], top: str) -> bytes:
    """A deterministic tar.gz with every file under ``top/``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel in sorted(files):
            data = files[rel].encode()
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@dataclass
class SyntheticUpstream:
    """A toy upstream published as sdists and as a bare git repo."""

    root: Path
    name: str = "toy"
    versions: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def sdist_dir(self) -> Path:
        return self.root / "index" / self.name

    @property
    def bare(self) -> Path:
        return self.root / "upstream.git"

    def publish(self, version: str, files: dict[str, str]) -> tuple[Path, str]:
        """Publish ``files`` as version ``version``: sdist + git commit/tag."""
        self.versions[version] = dict(files)
        self.sdist_dir.mkdir(parents=True, exist_ok=True)
        path = self.sdist_dir / f"{self.name}-{version}.tar.gz"
        path.write_bytes(tar_tree(files, f"{self.name}-{version}"))
        self._commit(version, files)
        return path, hashlib.sha256(path.read_bytes()).hexdigest()

    def sha256(self, version: str) -> str:
        path = self.sdist_dir / f"{self.name}-{version}.tar.gz"
        return hashlib.sha256(path.read_bytes()).hexdigest()

    def _commit(self, version: str, files: dict[str, str]) -> None:
        work = self.root / "upstream-work"
        if not (work / ".git").exists():
            Git.init(work)
        git = Git(work)
        for p in work.iterdir():
            if p.name != ".git":
                subprocess.run(["rm", "-rf", str(p)], check=True)
        write_files(work, files)
        git.run("add", "-A")
        git.run("commit", "-q", "--allow-empty", "-m", f"release {version}")
        git.run("tag", "-f", f"v{version}")
        if not self.bare.exists():
            Git.init(self.bare, bare=True)
        git.run(
            "push",
            "-q",
            "-f",
            str(self.bare),
            "HEAD:refs/heads/main",
            f"refs/tags/v{version}",
        )

    def rev(self, version: str) -> str:
        return Git(self.bare).out("rev-parse", f"v{version}^{{commit}}")


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def make_patches(
    base: dict[str, str], changes: list[tuple[str, dict[str, str]]], out: Path
) -> list[str]:
    """``git format-patch`` one commit per ``(subject, files)`` on top of ``base``."""
    work = out.parent / (out.name + "-work")
    git = Git.init(work)
    write_files(work, base)
    git.run("add", "-A")
    git.run("commit", "-q", "-m", "base")
    git.run("tag", "base")
    for subject, files in changes:
        write_files(work, files)
        git.run("add", "-A")
        git.run("commit", "-q", "-m", f"{subject}\n\nSigned-off-by: t <t@t>")
    out.mkdir(parents=True, exist_ok=True)
    git.run(
        "format-patch",
        "-q",
        "--zero-commit",
        "--no-signature",
        "-o",
        str(out),
        "base..HEAD",
    )
    return sorted(p.name for p in out.glob("*.patch"))


def toy_fix_changes() -> list[tuple[str, dict[str, str]]]:
    """The toy fork's series: one runtime fix with its regression test."""
    return [
        (
            "[Bugfix] limit reaches n",
            {"toy/calc.py": FIXED_CALC, "tests/test_fix.py": FIX_TEST},
        ),
    ]


def make_project(
    root: Path,
    upstream: SyntheticUpstream,
    version: str,
    changes: list[tuple[str, dict[str, str]]] | None = None,
    *,
    runtime_files: tuple[str, ...] = ("toy/calc.py",),
    focused_tests: tuple[str, ...] = ("tests/test_fix.py",),
    related_suites: tuple[str, ...] = ("tests",),
) -> ForkConfig:
    """A fork-kit project (fork.toml + patches/) over ``upstream==version``."""
    root.mkdir(parents=True, exist_ok=True)
    base = upstream.versions[version]
    names = make_patches(
        base, changes if changes is not None else toy_fix_changes(), root / "patches"
    )
    (root / "patches" / "series").write_text("".join(f"{n}\n" for n in names))
    sdist = upstream.sdist_dir / f"{upstream.name}-{version}.tar.gz"
    toml = f"""
[upstream]
name = "{upstream.name}"
source = "sdist"
version = "{version}"
sha256 = "{upstream.sha256(version)}"
sdist_url = "{sdist.as_uri()}"
index_url = "{(upstream.root / "index").as_uri()}"
git_url = "{upstream.bare.as_uri()}"
git_rev = "v{version}"

[fix]
runtime_files = {list(runtime_files)!r}
focused_tests = {list(focused_tests)!r}
related_suites = {list(related_suites)!r}

[testenv]
torch = "none"
requirements = ["requirements/common.txt"]
"""
    (root / "fork.toml").write_text(toml.replace("'", '"'))
    return load_config(root / "fork.toml")


def toy_testenv_python() -> str:
    """The interpreter synthetic suites run with (has pytest)."""
    return sys.executable
