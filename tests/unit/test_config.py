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

[[fix]]
id = "limit"
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
    assert [(d.id, d.title, d.related_suites) for d in cfg.fixes] == [
        ("limit", "", ("tests",))
    ]
    assert cfg.testenv.deselect == ()
    assert cfg.testenv.requirements == ()
    assert cfg.testenv.env == {}


def test_deselect_belongs_to_the_test_environment(tmp_path: Path) -> None:
    text = (
        MINIMAL.format(sha=SHA) + 'deselect = ["tests/a.py::test_net", "tests/b.py"]\n'
    )
    cfg = load_config(_write(tmp_path, text))
    assert cfg.testenv.deselect == ("tests/a.py::test_net", "tests/b.py")


def test_fixes_in_order_with_their_provenance(tmp_path: Path) -> None:
    text = MINIMAL.format(sha=SHA).replace(
        "[testenv]",
        '[[fix]]\nid = "count"\ntitle = "[Bugfix] count"\n'
        'forwarded = "https://example.org/pull/7"\norigin = "issue 3"\n\n[testenv]',
    )
    cfg = load_config(_write(tmp_path, text))
    assert [d.id for d in cfg.fixes] == ["limit", "count"]
    count = cfg.fixes[1]
    assert (count.title, count.forwarded, count.origin) == (
        "[Bugfix] count",
        "https://example.org/pull/7",
        "issue 3",
    )
    assert count.related_suites == ()


OLD_FIX = """
[fix]
runtime_files = ["toy/calc.py"]
focused_tests = ["tests/test_fix.py"]
related_suites = ["tests"]
"""


def test_the_old_single_fix_table_says_how_to_migrate(tmp_path: Path) -> None:
    text = MINIMAL.format(sha=SHA).replace(
        '[[fix]]\nid = "limit"\nrelated_suites = ["tests"]\n', OLD_FIX
    )
    with pytest.raises(ForkkitError) as exc:
        load_config(_write(tmp_path, text))
    msg = str(exc.value)
    assert msg.startswith("fork.toml [fix]: the single [fix] table is gone")
    assert "[[fix]]" in msg and "Forkkit-Fix: ID" in msg and "\n" not in msg


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
    assert git.upstream.ident == f"git:{cfg.upstream.commit_pin.url}@v0.30.0"
    assert git.upstream.label == "vllm@v0.30.0"
    assert git.fixes == cfg.fixes
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
            r"\[\[fix\]\] #1 \[fix\]: unknown key 'related_suite'; expected one of",
        ),
        (
            lambda t: t.replace('id = "limit"\n', ""),
            r"\[\[fix\]\] #1: missing key 'id'",
        ),
        (lambda t: t.replace('"limit"', '"Limit Fix"'), "fix id 'Limit Fix' must be"),
        (
            lambda t: t.replace("[testenv]", '[[fix]]\nid = "limit"\n\n[testenv]'),
            "id 'limit' is declared twice",
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
        (lambda t: t.replace("[[fix]]\n", "[[fix]]\ntitle = 1\n"), "'title' must be"),
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


SEED_FIXES = ("registration", "lookup-margin", "dcp-checkpoint")
SEED_PR = "https://github.com/vllm-project/vllm/pull/57180"


@pytest.mark.parametrize(
    ("where", "version", "sha256"),
    [
        (
            "fork.toml",
            "0.34.0",
            "fcad848b246a9d8652b47e6425af92334dc02492f9802720f54e27b823cf0113",
        ),
        (
            "pins/0.30.0/fork.toml",
            "0.30.0",
            "5f8f4e890c042ffa1c3e103f81c35e2d96f60a0a175ac43a4adbae7006bef62b",
        ),
    ],
)
def test_repository_fork_toml(where: str, version: str, sha256: str) -> None:
    """The checked-in pins: the project's (0.34.0, where the series is the
    fix's tests) and the integration tests' (the fix as carried on 0.30.0)."""
    cfg = load_config(REPO / where)
    up = cfg.upstream
    assert (up.name, up.source, up.release.version) == ("vllm", "sdist", version)
    assert up.release.sha256 == sha256
    assert up.commit_pin.url and up.commit_pin.commit
    assert cfg.series_file == cfg.path.parent / "patches" / "series"
    assert cfg.workdir == REPO / ".forkkit"  # normalized: no ".." in reports
    assert [d.id for d in cfg.fixes] == list(SEED_FIXES)
    assert all(d.forwarded == SEED_PR for d in cfg.fixes)
    assert cfg.fixes[0].related_suites and cfg.testenv.deselect


# -- contract 8: bad paths, encodings and URLs are one-line errors -----------


def test_config_naming_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ForkkitError, match=f"{tmp_path}: a folder.*--config"):
        load_config(tmp_path)


def test_config_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "fork.toml"
    path.write_bytes(MINIMAL.format(sha=SHA).replace("toy", "t\xe9y").encode("latin-1"))
    with pytest.raises(ForkkitError, match=f"{path}: not UTF-8") as exc:
        load_config(path)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("index_url", "ht!tp://example.org/simple"),
        ("index_url", "not a url"),
        ("index_url", "pypi.org/simple"),
        ("sdist_url", "ftp//example.org/toy-1.0.tar.gz"),
        ("sdist_url", "https:///toy-1.0.tar.gz"),
        ("git_url", "ht!tp://example.org/toy.git"),
        ("git_url", "not a url"),
        ("git_url", "relative/path.git"),
    ],
)
def test_malformed_url(tmp_path: Path, key: str, value: str) -> None:
    text = MINIMAL.format(sha=SHA).replace("[[fix]]", f'{key} = "{value}"\n\n[[fix]]')
    path = _write(tmp_path, text)
    with pytest.raises(ForkkitError) as exc:
        load_config(path)
    msg = str(exc.value)
    assert msg.startswith(f"{path} [upstream] {key}: {value!r} is not")
    assert "\n" not in msg


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("index_url", "https://pypi.org/simple"),
        ("index_url", "file:///srv/index"),
        ("sdist_url", "http://127.0.0.1:8000/files/toy-1.0.tar.gz"),
        ("git_url", "https://github.com/vllm-project/vllm.git"),
        ("git_url", "git@github.com:vllm-project/vllm.git"),
        ("git_url", "ssh://git@example.org:2222/toy.git"),
        ("git_url", "file:///srv/toy.git"),
        ("git_url", "/srv/toy.git"),
    ],
)
def test_well_formed_url(tmp_path: Path, key: str, value: str) -> None:
    text = MINIMAL.format(sha=SHA).replace("[[fix]]", f'{key} = "{value}"\n\n[[fix]]')
    cfg = load_config(_write(tmp_path, text))
    assert cfg.upstream.fields()[key] == value


def test_with_upstream_checks_a_replaced_url(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, MINIMAL.format(sha=SHA)))
    with pytest.raises(ForkkitError, match="git_url: 'not a url' is not a git URL"):
        cfg.with_upstream(git_url="not a url", source="git")
    moved = cfg.with_upstream(git_url="/srv/toy.git").upstream
    assert moved.fields()["git_url"] == "/srv/toy.git"


@pytest.mark.parametrize("under", [False, True])
def test_workdir_naming_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, under: bool
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    workdir = afile / "wd" if under else afile
    monkeypatch.setenv("FORKKIT_WORKDIR", str(workdir))
    with pytest.raises(ForkkitError, match="FORKKIT_WORKDIR") as exc:
        load_config(_write(tmp_path, MINIMAL.format(sha=SHA)))
    assert str(exc.value).startswith(f"{workdir}: the workdir is not a folder")


def test_the_repository_carries_its_fixes_on_two_lines() -> None:
    main = load_config(REPO / "fork.toml")
    assert main.line == "" and main.also == (REPO / "pins" / "0.30.0" / "fork.toml",)
    old = load_config(main.also[0])
    assert old.line == "0.30" and old.work.fork == REPO / ".forkkit/lines/0.30/fork"
    assert main.work.fork == REPO / ".forkkit" / "fork"
    assert old.work.results == main.work.results  # shared, keyed by content
