"""Small synthetic upstream projects for the toolkit's unit tests.

A "toy" upstream has a runtime module with a bug, its tests, and a
``requirements/common.txt``; versions are published as sdists (tar.gz with one
top folder, like PyPI's) and as commits/tags of a local bare git repo. Patches
are real ``git format-patch`` output.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tarfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from forkkit.config import ForkConfig, load_config
from forkkit.testing import logged
from forkkit.upstream.index import STATIC_PAGE
from forkkit.vcs.git import Git

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
        self._write_page()
        self._commit(version, files)
        return path, hashlib.sha256(path.read_bytes()).hexdigest()

    def _write_page(self) -> None:
        """The folder index's static PEP 691 page: each sdist and its sha256."""
        files = [
            {
                "filename": p.name,
                "url": p.name,
                "hashes": {"sha256": hashlib.sha256(p.read_bytes()).hexdigest()},
            }
            for p in sorted(self.sdist_dir.glob("*.tar.gz"))
        ]
        page = {"meta": {"api-version": "1.0"}, "name": self.name, "files": files}
        (self.sdist_dir / STATIC_PAGE).write_text(json.dumps(page, indent=1))

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

    def push_commit(self, message: str, changes: dict[str, str]) -> str:
        """One commit on ``main`` (no release, no tag): the last files pushed
        with ``changes``; its id."""
        work = self.root / "upstream-work"
        write_files(work, changes)
        git = Git(work)
        git.run("add", "-A")
        git.run("commit", "-q", "--allow-empty", "-m", message)
        git.run("push", "-q", str(self.bare), "HEAD:refs/heads/main")
        return git.out("rev-parse", "HEAD")


def git_line_toml(cfg: ForkConfig, upstream: SyntheticUpstream, *, commit: str) -> None:
    """Re-pin ``cfg``'s project to the git branch ``main`` of ``upstream`` at
    ``commit``: source git, no sdist fields at all."""
    text = cfg.path.read_text()
    _, _, rest = text.partition("[[fix]]")
    pin = (
        "[upstream]\n"
        f'name = "{upstream.name}"\n'
        'source = "git"\n'
        f'git_url = "{upstream.bare.as_uri()}"\n'
        'git_rev = "main"\n'
        f'git_commit = "{commit}"\n\n'
    )
    cfg.path.write_text(pin + "[[fix]]" + rest)


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


TOY_FIX = "toy-fix"  # the fix id a toy project's patches carry by default


def make_patches(
    base: dict[str, str],
    changes: list[tuple[str, dict[str, str]]],
    out: Path,
    *,
    fix_ids: list[str] | None = None,
) -> list[str]:
    """``git format-patch`` one commit per ``(subject, files)`` on top of
    ``base``, each with the trailer ``Forkkit-Fix: ID`` (``fix_ids``, one per
    change; default :data:`TOY_FIX`; an empty id: no trailer)."""
    ids = fix_ids if fix_ids is not None else [TOY_FIX] * len(changes)
    work = out.parent / (out.name + "-work")
    git = Git.init(work)
    write_files(work, base)
    git.run("add", "-A")
    git.run("commit", "-q", "-m", "base")
    git.run("tag", "base")
    for (subject, files), fid in zip(changes, ids, strict=True):
        write_files(work, files)
        git.run("add", "-A")
        trailer = f"\nForkkit-Fix: {fid}" if fid else ""
        git.run("commit", "-q", "-m", f"{subject}\n\nSigned-off-by: t <t@t>{trailer}")
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
    related_suites: tuple[str, ...] = ("tests",),
    fix_ids: list[str] | None = None,
) -> ForkConfig:
    """A fork-kit project (fork.toml + patches/) over ``upstream==version``:
    one ``[[fix]]`` per fix id the patches carry (default: all one fix,
    :data:`TOY_FIX`), the first with ``related_suites``."""
    root.mkdir(parents=True, exist_ok=True)
    base = upstream.versions[version]
    changes = changes if changes is not None else toy_fix_changes()
    ids = fix_ids if fix_ids is not None else [TOY_FIX] * len(changes)
    names = make_patches(base, changes, root / "patches", fix_ids=ids)
    tables = "".join(
        f'[[fix]]\nid = "{fid}"\n'
        + (f"related_suites = {list(related_suites)!r}\n" if n == 0 else "")
        + "\n"
        for n, fid in enumerate(dict.fromkeys(i for i in ids if i))
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

{tables}[testenv]
torch = "none"
requirements = ["requirements/common.txt"]
"""
    (root / "fork.toml").write_text(toml.replace("'", '"'))
    return load_config(root / "fork.toml")


def toy_testenv_python() -> str:
    """The interpreter synthetic suites run with (has pytest)."""
    return sys.executable


# Red/green scenarios (tests/unit/test_redgreen.py).
EXACT_CALC = FIXED_CALC + "\n\ndef limit_exact(n):\n    return n\n"
IMPORT_FIX_TEST = textwrap.dedent(
    """\
    from toy.calc import limit, limit_exact


    def test_limit_reaches_n():
        assert limit(16000) == limit_exact(16000)
    """
)
# Hangs only on the buggy runtime (red), after writing "PID CWD" to $TOY_MARK.
SLOW_RED_TEST = textwrap.dedent(
    """\
    import os
    import time

    from toy.calc import limit


    def test_limit_reaches_n():
        mark = os.environ.get("TOY_MARK")
        if mark and limit(3) != 3:
            with open(mark + ".tmp", "w") as fh:
                fh.write(f"{os.getpid()} {os.getcwd()}")
            os.replace(mark + ".tmp", mark)
            time.sleep(120)
        assert limit(16000) == 16000
    """
)


def toy_import_fix_changes() -> list[tuple[str, dict[str, str]]]:
    """A fix whose test imports a name only the fixed runtime has."""
    return [
        (
            "[Bugfix] limit reaches n (test needs limit_exact)",
            {"toy/calc.py": EXACT_CALC, "tests/test_fix.py": IMPORT_FIX_TEST},
        ),
    ]


def toy_breaking_fix_changes() -> list[tuple[str, dict[str, str]]]:
    """A fix that also breaks ``double`` (tests/test_other.py::test_double)."""
    broken = FIXED_CALC.replace("return 2 * n", "return 3 * n")
    return [
        (
            "[Bugfix] limit reaches n, breaking double",
            {"toy/calc.py": broken, "tests/test_fix.py": FIX_TEST},
        ),
    ]


def toy_slow_red_changes() -> list[tuple[str, dict[str, str]]]:
    """The toy fix with a regression test that hangs on base (see SLOW_RED_TEST)."""
    return [
        (
            "[Bugfix] limit reaches n (slow red)",
            {"toy/calc.py": FIXED_CALC, "tests/test_fix.py": SLOW_RED_TEST},
        ),
    ]


# Rebase scenarios (tests/unit/test_rebase.py): toy releases after 1.0.
def toy_release(changes: dict[str, str]) -> dict[str, str]:
    """A toy release: BUGGY with some files replaced or added."""
    return {**BUGGY, **changes}


# ``double`` changes inside the fix hunk's trailing context: git am fails,
# a 3-way merge succeeds.
CALC_CONTEXT_MOVED = BUGGY["toy/calc.py"].replace(
    "def double(n):", "def double(n: int) -> int:"
)
# Upstream changes the very line the fix changes, differently and still buggy.
CALC_CONFLICT = BUGGY["toy/calc.py"].replace("return n - 1", "return n - 2")
CALC_CONFLICT_RESOLVED = FIXED_CALC
# Upstream fixes the bug on the same line, its own way: a conflict that needs
# no resolution because the fix is no longer needed.
CALC_FIXED_OTHERWISE = BUGGY["toy/calc.py"].replace("return n - 1", "return int(n)")
# Upstream fixes the bug elsewhere (a decorator): our patch still merges, and
# applying it would now over-correct.
CALC_FIXED_BY_DECORATOR = (
    "def _plus_one(fn):\n    return lambda n: fn(n) + 1\n\n\n@_plus_one\n"
    + BUGGY["toy/calc.py"]
)
# Upstream breaks ``limit`` again after the hunk: the fix applies cleanly but
# its test still fails (the proof must catch it).
CALC_REBROKEN = (
    BUGGY["toy/calc.py"]
    + "\n\n_limit = limit\n\n\ndef limit(n):\n    return _limit(n) - 1\n"
)
# A second, independent toy bug and its fix (two-patch series).
COUNT_BUGGY = "def count(xs):\n    return len(xs) - 1\n"
COUNT_FIXED = "def count(xs):\n    return len(xs)\n"
COUNT_TEST = textwrap.dedent(
    """\
    from toy.count import count


    def test_count_all():
        assert count([1, 2, 3]) == 3
    """
)


def toy_two_fix_changes() -> list[tuple[str, dict[str, str]]]:
    """A two-patch series: the limit fix, then the count fix (each with a test)."""
    return [
        *toy_fix_changes(),
        (
            "[Bugfix] count counts every item",
            {"toy/count.py": COUNT_FIXED, "tests/test_count.py": COUNT_TEST},
        ),
    ]


def make_two_fix_project(
    root: Path, upstream: SyntheticUpstream, version: str
) -> ForkConfig:
    """Toy ``version`` published with both bugs (``limit``, ``count``), and a
    project carrying :func:`toy_two_fix_changes` over it as two fixes
    (ids ``limit`` and ``count``)."""
    upstream.publish(version, toy_release({"toy/count.py": COUNT_BUGGY}))
    return make_project(
        root, upstream, version, toy_two_fix_changes(), fix_ids=["limit", "count"]
    )


# --- reconcile: a base with two independent bugs and competing changes ------

RECON_CALC = textwrap.dedent(
    """\
    def limit(n):
        return n - 1


    def double(n):
        return 2 * n


    def triple(n):
        return 3 * n


    def square(n):
        return n * 2
    """
)
RECON_BASE = {**BUGGY, "toy/calc.py": RECON_CALC}
# Ours: the toy fix (limit reaches n) and its regression test.
RECON_OURS = {
    "toy/calc.py": RECON_CALC.replace("return n - 1", "return n"),
    "tests/test_fix.py": FIX_TEST,
}
# Disjoint competitor: another module and its own test.
RECON_DISJOINT = {
    "toy/other.py": BUGGY["toy/other.py"] + "\n\ndef greet():\n    return 'hi toy'\n",
    "tests/test_greet.py": (
        "from toy.other import greet\n\n\ndef test_greet():\n"
        "    assert greet() == 'hi toy'\n"
    ),
    "tests/test_name_kept.py": (
        "from toy.other import name\n\n\ndef test_name_kept():\n"
        "    assert name() == 'toy'\n"
    ),
}
# Same file, other function (far from ours): fixes ``square``.
RECON_SAME_FILE = {
    "toy/calc.py": RECON_CALC.replace("return n * 2", "return n * n"),
    "tests/test_square.py": (
        "from toy.calc import square\n\n\ndef test_square():\n"
        "    assert square(3) == 9\n"
    ),
}
# Conflicting competitor: fixes ``limit`` differently (clamps at zero) on the
# very line we change; its test fails with our approach.
RECON_CONFLICT = {
    "toy/calc.py": RECON_CALC.replace("return n - 1", "return max(n, 0)"),
    "tests/test_clamp.py": (
        "from toy.calc import limit\n\n\ndef test_limit_clamps():\n"
        "    assert limit(-5) == 0\n\n\ndef test_limit_big():\n"
        "    assert limit(16000) == 16000\n"
    ),
}


def recon_release(competitor: dict[str, str]) -> dict[str, str]:
    """A newer release: ``competitor`` plus changes outside our files."""
    files = {**RECON_BASE, **competitor}
    files["toy/other.py"] = "def name():\n    return 'toy 1.1'\n"
    files["tests/test_other.py"] = BUGGY["tests/test_other.py"].replace(
        '"toy"', '"toy 1.1"'
    )
    files["tests/deep/__init__.py"] = ""
    files["tests/deep/test_unrelated.py"] = "def test_unrelated():\n    assert True\n"
    return files


def write_patch(
    base: dict[str, str], files: dict[str, str], path: Path, *, mbox: bool = True
) -> Path:
    """``files`` over ``base`` as one git format-patch mail, or a plain git diff."""
    if mbox:
        out = path.parent / (path.name + ".d")
        names = make_patches(base, [("Competing fix", files)], out)
        path.write_text((out / names[0]).read_text())
        return path
    work = path.parent / (path.name + "-work")
    git = Git.init(work)
    write_files(work, base)
    git.run("add", "-A")
    git.run("commit", "-q", "-m", "base")
    write_files(work, files)
    git.run("add", "-A")
    path.write_text(git.run("diff", "--cached").stdout)
    return path


def push_pull_request(
    upstream: SyntheticUpstream, number: int, version: str, files: dict[str, str]
) -> str:
    """Commit ``files`` on ``v<version>`` and push it as ``refs/pull/N/head``."""
    work = upstream.root / "upstream-work"
    git = Git(work)
    git.run("checkout", "-q", "--detach", f"v{version}")
    write_files(work, files)
    git.run("add", "-A")
    git.run("commit", "-q", "-m", f"PR {number}")
    sha = git.out("rev-parse", "HEAD")
    git.run("push", "-q", "-f", str(upstream.bare), f"HEAD:refs/pull/{number}/head")
    git.run("checkout", "-q", "main")
    return sha


def toy_dependent_two_fix_changes() -> list[tuple[str, dict[str, str]]]:
    """Like :func:`toy_two_fix_changes`, but the count fix's test extends the
    limit fix's test file (the second patch builds on the first's tests)."""
    extended = FIX_TEST + textwrap.dedent(
        """\


        def test_count_all():
            from toy.count import count

            assert count([1, 2, 3]) == 3
        """
    )
    return [
        *toy_fix_changes(),
        (
            "[Bugfix] count counts every item",
            {"toy/count.py": COUNT_FIXED, "tests/test_fix.py": extended},
        ),
    ]


def recon_release_with_helper() -> dict[str, str]:
    """A release whose ``limit`` fix needs a new module we do not touch, so its
    calc.py cannot be imported on our base alone."""
    files = recon_release(RECON_CONFLICT)
    files["toy/helpers.py"] = "def clamp(n):\n    return max(n, 0)\n"
    files["toy/calc.py"] = "from toy.helpers import clamp\n\n\n" + RECON_CALC.replace(
        "return n - 1", "return clamp(n)"
    )
    return files


def fixed_fork(
    tmp_path: Path, up: SyntheticUpstream, tests: dict[str, str]
) -> tuple[ForkConfig, Path]:
    """A toy project whose one patch fixes ``limit`` and adds ``tests``; and
    the folder for its reports."""
    changes = [("[Bugfix] limit", {"toy/calc.py": FIXED_CALC, **tests})]
    cfg = make_project(tmp_path / "proj", up, "1.0", changes=changes)
    return cfg, tmp_path / "r"


def dead_pid() -> int:
    """The pid of a process that has exited (what a killed run leaves in a
    file name)."""
    code = "import os; print(os.getpid())"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return int(proc.stdout)


def count_starts(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Record every command forkkit starts from now on (pytest, the scripts)."""
    started: list[list[str]] = []
    real = logged._start

    def spy(cmd: list[str], *args: Any, **kw: Any) -> Any:
        started.append(cmd)
        return real(cmd, *args, **kw)

    monkeypatch.setattr(logged, "_start", spy)
    return started
