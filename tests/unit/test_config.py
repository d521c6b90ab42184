"""fork.toml: parsing, validation, and the repository's own pin."""

from __future__ import annotations

from pathlib import Path

import pytest

from forkkit.config import load_config
from forkkit.errors import ForkkitError

REPO = Path(__file__).resolve().parents[2]

MINIMAL = """
[upstream]
name = "toy"
source = "sdist"
version = "1.0"
sha256 = "{sha}"

[fix]
runtime_files = ["toy/calc.py"]
focused_tests = ["tests/test_fix.py"]
related_suites = ["tests"]

[testenv]
torch = "torch==2.13.0"
"""
SHA = "ab" * 32


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fork.toml"
    path.write_text(text)
    return path


def test_minimal_config_and_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FORKKIT_WORKDIR", raising=False)
    cfg = load_config(_write(tmp_path, MINIMAL.format(sha=SHA)))
    assert cfg.root == tmp_path
    assert cfg.upstream.ident == f"sdist:toy==1.0#sha256={SHA}"
    assert cfg.upstream.label == "toy 1.0"
    assert cfg.upstream.index_url == "https://pypi.org/simple"
    assert cfg.patches_dir == tmp_path / "patches"
    assert cfg.series_file == tmp_path / "patches" / "series"
    assert cfg.workdir == tmp_path / ".forkkit"
    assert cfg.fix.runtime_files == ("toy/calc.py",)
    assert cfg.fix.deselect == ()
    assert cfg.fix.deselect_args() == []
    assert cfg.testenv.requirements == ()
    assert cfg.testenv.env == {}


def test_fix_deselect(tmp_path: Path) -> None:
    text = MINIMAL.format(sha=SHA).replace(
        "[fix]\n", '[fix]\ndeselect = ["tests/a.py::test_net", "tests/b.py"]\n'
    )
    cfg = load_config(_write(tmp_path, text))
    assert cfg.fix.deselect == ("tests/a.py::test_net", "tests/b.py")
    assert cfg.fix.deselect_args() == [
        "--deselect=tests/a.py::test_net",
        "--deselect=tests/b.py",
    ]


def test_workdir_override_is_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FORKKIT_WORKDIR", "rel/wd")
    cfg = load_config(_write(tmp_path, MINIMAL.format(sha=SHA)))
    assert cfg.workdir == tmp_path / "rel" / "wd"


def test_with_upstream_switches_to_git() -> None:
    cfg = load_config(REPO / "fork.toml")
    git = cfg.with_upstream(source="git", git_rev="v0.30.0")
    assert git.upstream.ident == f"git:{cfg.upstream.git_url}@v0.30.0"
    assert git.upstream.label == "vllm@v0.30.0"
    assert git.fix == cfg.fix
    assert cfg.upstream.source == "sdist"  # the original is unchanged


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('source = "sdist"', 'source = "svn"'), "source must be"),
        (lambda t: t.replace(SHA, "AB" * 32), "sha256 must be 64 lowercase hex"),
        (lambda t: t.replace(SHA, "ab"), "sha256 must be 64"),
        (lambda t: t.replace('version = "1.0"', "version = 1.0"), "'version' must be"),
        (lambda t: t.replace('name = "toy"\n', ""), "missing key 'name'"),
        (
            lambda t: t.replace("sha256 =", "sha265 ="),
            r"fork\.toml \[upstream\]: unknown key 'sha265'",
        ),
        (
            lambda t: t.replace("related_suites", "related_suite"),
            r"\[fix\]: unknown key 'related_suite'; expected one of",
        ),
        (
            lambda t: t.replace('["tests"]', '"tests"'),
            "'related_suites' must be a list of strings",
        ),
        (
            lambda t: t.replace('source = "sdist"', 'source = "git"'),
            "source 'git' needs git_url and git_rev",
        ),
        (
            lambda t: t + "\n[testenv.env]\nX = [1]\n",
            r"\[testenv\]: 'env' must be a table of strings",
        ),
        (lambda t: t.replace("[fix]\n", "[fix]\ntitle = 1\n"), "'title' must be"),
        (lambda t: t + "[patches]\ndir = 3\n", r"\[patches\]: 'dir' must be a string"),
        (lambda t: t.replace("[upstream]", "[upstream\n"), "invalid TOML"),
    ],
)
def test_invalid_config_names_file_and_key(
    tmp_path: Path, edit: object, message: str
) -> None:
    assert callable(edit)
    path = _write(tmp_path, edit(MINIMAL.format(sha=SHA)))
    with pytest.raises(ForkkitError, match=message) as exc:
        load_config(path)
    assert "fork.toml" in str(exc.value)
    assert "\n" not in str(exc.value)


def test_missing_config(tmp_path: Path) -> None:
    with pytest.raises(ForkkitError, match=r"fork\.toml: not found; .*--config"):
        load_config(tmp_path / "fork.toml")


def test_repository_fork_toml() -> None:
    """The checked-in pin: what every other command builds on."""
    cfg = load_config(REPO / "fork.toml")
    up = cfg.upstream
    assert (up.name, up.source, up.version) == ("vllm", "sdist", "0.30.0")
    assert up.sha256 == (
        "5f8f4e890c042ffa1c3e103f81c35e2d96f60a0a175ac43a4adbae7006bef62b"
    )
    assert up.git_url and up.git_rev
    assert cfg.series_file == REPO / "patches" / "series"
    assert cfg.fix.runtime_files and cfg.fix.focused_tests and cfg.fix.related_suites
    for path in (*cfg.fix.runtime_files, *cfg.fix.focused_tests):
        assert not path.startswith("/")
