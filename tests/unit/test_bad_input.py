# SPDX-License-Identifier: Apache-2.0
"""Contract 8: bad input or a bad environment never shows a traceback.

Each case runs the real command line (``python -m forkkit``) as a user would
and expects exit 2, exactly one stderr line ``forkkit: error: ...`` naming
the path, and nothing changed in the project or the workdir (the advice
test is in test_advice.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from forkkit.cli import build_parser, main
from forkkit.config import ForkConfig
from tests.synthetic import dead_pid

BAD_URLS = ["ht!tp://example.org/simple", "not a url"]
# Extra arguments a command needs to get past argument parsing.
REQUIRED_ARGS = {
    "reconcile": ["--with", "competitor.patch"],
    "rebase": ["--onto", "toy==1.1"],
    "verify": ["red_green.json"],
    "fix": ["add", "x", "fork.toml"],  # a file that exists, to pass parsing
}
# Commands that make a project: no fork.toml read, no workdir used.
NO_WORKDIR = frozenset({"init"})
# Lock bookkeeping a writing command may leave at the top of the workdir.
LOCK_FILES = frozenset({".lock", ".lock-holder.json"})


def forkkit_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, drop_dac: bool = False
) -> subprocess.CompletedProcess[str]:
    """``python -m forkkit ARGS``; ``drop_dac``: without root's access override."""
    prefix = _without_dac_override() if drop_dac else []
    return subprocess.run(
        [*prefix, sys.executable, "-m", "forkkit", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def forkkit_main(
    *args: str, cwd: Path, capsys: pytest.CaptureFixture[str]
) -> subprocess.CompletedProcess[str]:
    """:func:`forkkit.cli.main` in this process, from ``cwd``, as a finished
    process: the many-command matrices below need no interpreter each (the
    error path is the same code; :func:`forkkit_cli` covers the process)."""
    capsys.readouterr()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        code = main(list(args))
    finally:
        os.chdir(old)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["forkkit", *args], code, out, err)


def _without_dac_override() -> list[str]:
    """A prefix that makes permission bits apply (root ignores them)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions do not apply")
    prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("cannot drop CAP_DAC_OVERRIDE here: permissions do not apply")
    return prefix


def assert_one_line_error(
    proc: subprocess.CompletedProcess[str], *needles: str
) -> None:
    """Exit 2, one stderr line ``forkkit: error: ...`` containing ``needles``."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("forkkit: error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"


@dataclass(frozen=True)
class Snapshot:
    """Every file and folder under some roots: path, mode and content.

    The roots themselves and the workdir's lock files are left out: taking
    the lock may create an empty workdir.
    """

    entries: dict[str, tuple[int, bytes]]

    @classmethod
    def of(cls, *roots: Path) -> Snapshot:
        entries: dict[str, tuple[int, bytes]] = {}
        for root in roots:
            if not root.exists():
                continue
            for path in sorted(root.rglob("*")):
                if path.parent == root and path.name in LOCK_FILES:
                    continue
                st = path.lstat()
                data = path.read_bytes() if stat.S_ISREG(st.st_mode) else b""
                entries[str(path)] = (st.st_mode, data)
        return cls(entries)

    def assert_same(self, *roots: Path) -> None:
        after = Snapshot.of(*roots).entries
        changed = sorted(
            p
            for p in self.entries.keys() | after.keys()
            if self.entries.get(p) != after.get(p)
        )
        assert not changed, f"changed: {changed[:5]}"


@pytest.fixture
def project(toy_project: ForkConfig) -> Iterator[ForkConfig]:
    """The toy project; permissions restored afterwards (tmp cleanup)."""
    yield toy_project
    for path in (toy_project.root, toy_project.workdir):
        if path.exists():
            for p in (path, *path.rglob("*")):
                if not p.is_symlink():
                    p.chmod(p.stat().st_mode | stat.S_IRWXU)


def _run(
    cfg: ForkConfig, *args: str, drop_dac: bool = False
) -> tuple[subprocess.CompletedProcess[str], Snapshot]:
    """Run a command on ``cfg``; return it and the snapshot taken before it."""
    before = Snapshot.of(cfg.root, cfg.workdir)
    proc = forkkit_cli(
        "--config", str(cfg.path), *args, cwd=cfg.root, drop_dac=drop_dac
    )
    return proc, before


# -- the config file -----------------------------------------------------


def test_config_naming_a_folder(tmp_path: Path) -> None:
    proc = forkkit_cli("--config", str(tmp_path), "fetch", cwd=tmp_path)
    assert_one_line_error(proc, str(tmp_path), "--config")


def test_config_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "fork.toml"
    path.write_bytes(b'[upstream]\nname = "caf\xe9"\n')
    proc = forkkit_cli("--config", str(path), "fetch", cwd=tmp_path)
    assert_one_line_error(proc, str(path), "UTF-8")


def test_config_missing(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    proc = forkkit_cli("--config", str(path), "fetch", cwd=tmp_path)
    assert_one_line_error(proc, str(path), "not found")
    assert not list(tmp_path.iterdir())


def test_config_unreadable(project: ForkConfig) -> None:
    project.path.chmod(0)
    proc, before = _run(project, "fetch", drop_dac=True)
    assert_one_line_error(proc, str(project.path), "cannot read")
    before.assert_same(project.root, project.workdir)


@pytest.mark.parametrize("bad", BAD_URLS)
@pytest.mark.parametrize("key", ["index_url", "sdist_url", "git_url"])
def test_malformed_url_in_config(project: ForkConfig, key: str, bad: str) -> None:
    text = project.path.read_text()
    text = re.sub(rf'^{key} = ".*"$', f'{key} = "{bad}"', text, flags=re.M)
    project.path.write_text(text)
    proc, before = _run(project, "materialize")
    assert_one_line_error(proc, str(project.path), key, repr(bad))
    before.assert_same(project.root, project.workdir)


@pytest.mark.parametrize("bad", BAD_URLS)
def test_malformed_git_url_option(project: ForkConfig, bad: str) -> None:
    proc, before = _run(project, "materialize", "--git-url", bad, "--rev", "v1.0")
    assert_one_line_error(proc, repr(bad), "git_url")
    before.assert_same(project.root, project.workdir)


# -- the workdir ---------------------------------------------------------


@pytest.mark.parametrize("command", ["fetch", "materialize"])
def test_read_only_sdist_cache(project: ForkConfig, command: str) -> None:
    cache = project.workdir / "cache" / "sdist"
    cache.mkdir(parents=True)
    cache.chmod(0o555)
    proc, before = _run(project, command, drop_dac=True)
    assert_one_line_error(proc, str(cache), "writable")
    before.assert_same(project.root, project.workdir)


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser, _ = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


@pytest.mark.parametrize("command", sorted(set(_commands()) - NO_WORKDIR))
@pytest.mark.parametrize("under", [False, True])
def test_workdir_naming_a_file(
    project: ForkConfig,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    command: str,
    under: bool,
) -> None:
    """FORKKIT_WORKDIR naming a file (or a folder under a file): every command."""
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    workdir = afile / "wd" if under else afile
    monkeypatch.setenv("FORKKIT_WORKDIR", str(workdir))
    before = Snapshot.of(project.root, tmp_path / "afile")
    proc = forkkit_main(
        "--config",
        str(project.path),
        command,
        *REQUIRED_ARGS.get(command, []),
        cwd=project.root,
        capsys=capsys,
    )
    assert_one_line_error(proc, str(workdir), "FORKKIT_WORKDIR")
    before.assert_same(project.root, tmp_path / "afile")


def _commands_with(option: str) -> list[str]:
    return sorted(
        name
        for name, p in _commands().items()
        if any(option in a.option_strings for a in p._actions)
    )


@pytest.mark.parametrize("command", _commands_with("--out"))
@pytest.mark.parametrize("under", [False, True])
def test_out_naming_a_file(
    project: ForkConfig,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    under: bool,
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    out = afile / "reports" if under else afile
    before = Snapshot.of(project.root, project.workdir, afile)
    proc = forkkit_main(
        "--config",
        str(project.path),
        command,
        *REQUIRED_ARGS.get(command, []),
        "--out",
        str(out),
        cwd=project.root,
        capsys=capsys,
    )
    assert_one_line_error(proc, str(out))
    before.assert_same(project.root, project.workdir, afile)


@pytest.mark.parametrize("under", [False, True])
def test_pr_body_output_that_cannot_be_a_file(
    project: ForkConfig, tmp_path: Path, under: bool
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    out = afile / "pr.md" if under else tmp_path
    before = Snapshot.of(project.root, project.workdir, afile)
    proc = forkkit_cli(
        "--config", str(project.path), "pr-body", "--output", str(out), cwd=project.root
    )
    assert_one_line_error(proc, str(out))
    before.assert_same(project.root, project.workdir, afile)


# -- patches/ ------------------------------------------------------------


def test_series_not_utf8(project: ForkConfig) -> None:
    project.series_file.write_bytes(b"# caf\xe9\n" + project.series_file.read_bytes())
    proc, before = _run(project, "materialize")
    assert_one_line_error(proc, str(project.series_file), "UTF-8")
    before.assert_same(project.root, project.workdir)


def test_series_naming_a_folder(project: ForkConfig) -> None:
    project.series_file.unlink()
    project.series_file.mkdir()
    proc, before = _run(project, "materialize")
    assert_one_line_error(proc, str(project.series_file))
    before.assert_same(project.root, project.workdir)


def test_series_unreadable(project: ForkConfig) -> None:
    project.series_file.chmod(0)
    proc, before = _run(project, "materialize", drop_dac=True)
    assert_one_line_error(proc, str(project.series_file), "cannot read")
    before.assert_same(project.root, project.workdir)


def test_patch_unreadable(project: ForkConfig) -> None:
    patch = next(project.patches_dir.glob("0001-*.patch"))
    patch.chmod(0)
    proc, before = _run(project, "materialize", drop_dac=True)
    assert_one_line_error(proc, str(patch), "cannot read")
    before.assert_same(project.root, project.workdir)


@pytest.mark.parametrize("lock", ["index.lock", "refs/forkkit/built.lock"])
def test_a_lock_file_left_by_a_killed_git_is_named(
    project: ForkConfig, lock: str
) -> None:
    """A kill -9 mid-write leaves git's lock file; the next command that
    writes names it (git alone says "remove the file manually")."""
    assert (
        forkkit_cli(
            "--config", str(project.path), "materialize", cwd=project.root
        ).returncode
        == 0
    )
    fork = project.workdir / "fork" / ".git"
    (fork / lock).parent.mkdir(parents=True, exist_ok=True)
    (fork / lock).write_text("")
    proc = forkkit_cli(
        "--config", str(project.path), "materialize", "--force", cwd=project.root
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    errors = [x for x in proc.stderr.splitlines() if not x.startswith("[forkkit]")]
    assert len(errors) == 1 and errors[0].startswith("forkkit: error: git ")
    assert f"{fork / lock} exists" in errors[0] and "delete it and rerun" in errors[0]
    assert (fork / lock).exists()  # not ours to delete: it may be a live git's


# -- paths taken from inputs stay in their folders (issue 25, 5) ---------------


@pytest.mark.parametrize("version", ["../../escape", "1.0/../../x", ".hidden", "/abs"])
def test_a_version_that_is_a_path_is_refused(
    project: ForkConfig, tmp_path: Path, version: str
) -> None:
    """``[upstream] version`` names a folder under the workdir: ``../`` in it
    replaced a folder outside."""
    outside = tmp_path / "escape"
    outside.mkdir(exist_ok=True)
    (outside / "keep.txt").write_text("mine\n")
    text = project.path.read_text().replace('version = "1.0"', f'version = "{version}"')
    project.path.write_text(text)
    proc, before = _run(project, "materialize")
    assert_one_line_error(proc, "fork.toml [upstream] version", "fix it")
    before.assert_same(project.root, project.workdir)
    assert (outside / "keep.txt").read_text() == "mine\n"


@pytest.mark.parametrize("entry", ["../outside.patch", "/abs/x.patch", "sub/x.patch"])
def test_a_series_entry_outside_patches_is_refused(
    project: ForkConfig, tmp_path: Path, entry: str
) -> None:
    """A series line names a file in patches/: an absolute path made export
    delete that file."""
    assert _run(project, "materialize")[0].returncode == 0
    victim = project.root / "outside.patch"
    victim.write_text(next(project.patches_dir.glob("0001-*.patch")).read_text())
    target = str(victim) if entry.startswith("/") else entry
    with project.series_file.open("a") as fh:
        fh.write(target + "\n")
    for command in ("materialize", "export"):
        proc, before = _run(project, command)
        assert_one_line_error(proc, "series", "patches/")
        before.assert_same(project.root, project.workdir)
    assert victim.is_file()


def test_a_journal_naming_files_outside_the_checkout_is_not_followed(
    project: ForkConfig, tmp_path: Path
) -> None:
    """The interrupted-update journal lists files of this checkout only."""
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    journal = project.root / ".forkkit-txn.json"
    entry = {"state": "commit", "writes": [], "deletes": [str(victim)]}
    journal.write_text(json.dumps(entry))
    proc, _ = _run(project, "export")
    assert "Traceback" not in proc.stderr
    assert victim.read_text() == "mine\n"
    assert proc.returncode == 2 and str(journal) in proc.stderr, proc.stderr


def test_a_patch_with_crlf_line_endings_says_so(project: ForkConfig) -> None:
    """Issue 24: a patch converted to CRLF was blamed on a hunk ('refresh the
    patch'); the message now names the line endings."""
    patch = next(project.patches_dir.glob("0001-*.patch"))
    patch.write_bytes(patch.read_bytes().replace(b"\n", b"\r\n"))
    proc, _ = _run(project, "materialize")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"forkkit: error: {patch.name}: ")
    assert "CRLF" in last and "convert them to LF" in last


def test_a_typod_table_in_fork_toml_is_refused(project: ForkConfig) -> None:
    """Issue 24: '[work_dir]' was accepted silently (the workdir fell back to
    .forkkit)."""
    with project.path.open("a") as fh:
        fh.write('\n[work_dir]\npath = "elsewhere"\n')
    proc, before = _run(project, "materialize")
    assert_one_line_error(proc, "fork.toml", "unknown table or key 'work_dir'")
    before.assert_same(project.root, project.workdir)


def test_a_download_a_killed_run_left_is_removed(project: ForkConfig) -> None:
    """Issue 24: a '.part' file of an interrupted download stayed forever."""
    dead = dead_pid()
    cache = project.work.sdist_cache
    cache.mkdir(parents=True, exist_ok=True)
    part = cache / f"toy-1.0.tar.gz.{dead}.part"
    part.write_bytes(b"half")
    proc, _ = _run(project, "fetch")
    assert proc.returncode == 0, proc.stderr
    assert not part.exists()


# -- the last tracebacks (#33 item 9) -------------------------------------


def test_a_journal_that_is_not_a_journal(
    project: ForkConfig, capsys: pytest.CaptureFixture[str]
) -> None:
    (project.root / ".forkkit-txn.json").write_text("[1, 2]\n")
    proc = forkkit_main(
        "--config", str(project.path), "export", cwd=project.root, capsys=capsys
    )
    assert_one_line_error(proc, ".forkkit-txn.json: not a forkkit transaction journal")
    assert (project.root / ".forkkit-txn.json").read_text() == "[1, 2]\n"  # kept


def test_an_env_key_that_is_not_a_variable(
    project: ForkConfig, capsys: pytest.CaptureFixture[str]
) -> None:
    text = project.path.read_text().replace(
        'torch = "none"', 'torch = "none"\nenv = { "A=B" = "1" }'
    )
    project.path.write_text(text)
    proc = forkkit_main(
        "--config", str(project.path), "status", cwd=project.root, capsys=capsys
    )
    assert_one_line_error(proc, "env key 'A=B' is not a variable name")


def test_a_lock_file_that_is_a_folder(
    project: ForkConfig, capsys: pytest.CaptureFixture[str]
) -> None:
    (project.workdir / ".lock").mkdir(parents=True)
    proc = forkkit_main(
        "--config", str(project.path), "materialize", cwd=project.root, capsys=capsys
    )
    assert_one_line_error(proc, ".lock: cannot open the workdir's lock file")


def test_a_report_command_with_an_unbalanced_quote() -> None:
    from forkkit.commands.prbody.model import pytest_command

    assert (
        pytest_command("python -m pytest 'tests/a.py") == "python -m pytest 'tests/a.py"
    )
    assert (
        pytest_command("python -m pytest tests/a.py") == "python -m pytest tests/a.py"
    )
