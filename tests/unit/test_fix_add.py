"""A new user's three commands: ``init``, ``fix add``, ``red-green``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forkkit import cli
from forkkit.commands.fix.model import with_fix_trailer, with_table
from forkkit.config import load_config
from forkkit.errors import ForkkitError
from tests.synthetic import (
    BUGGY,
    SyntheticUpstream,
    make_patches,
    toy_fix_changes,
    toy_testenv_python,
)

PR = "https://github.com/example/toy/pull/7"


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".forkkit" not in p.parts
    }


@pytest.mark.e2e
def test_a_new_fix_from_an_empty_folder_in_three_commands(
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    monkeypatch.chdir(tmp_path)
    index = (toy_upstream.root / "index").as_uri()
    (patch,) = make_patches(
        BUGGY, toy_fix_changes(), tmp_path / "mine", fix_ids=[""]
    )  # a plain git format-patch: no trailer
    proj = tmp_path / "proj"
    # 1. init: the sha256 comes from the index
    assert cli.main(["init", "toy==1.0", "--dir", str(proj), "--index-url", index]) == 0
    cfg = load_config(proj / "fork.toml")
    assert cfg.upstream.release.sha256 == toy_upstream.sha256("1.0") and cfg.fixes == ()
    # 2. fix add: the trailer added, the fix derived, related suites suggested
    conf = ["--config", str(proj / "fork.toml")]
    argv = [*conf, "fix", "add", "limit", str(tmp_path / "mine" / patch)]
    assert cli.main([*argv, "--forwarded", PR]) == 0
    out = capsys.readouterr().out
    assert "runtime files: toy/calc.py" in out and "tests: tests/test_fix.py" in out
    assert "related suites: tests/test_other.py" in out  # it imports toy.calc
    assert "next: forkkit red-green --fix limit" in out
    cfg = load_config(proj / "fork.toml")
    assert [(d.id, d.forwarded, d.related_suites) for d in cfg.fixes] == [
        ("limit", PR, ("tests/test_other.py",))
    ]
    text = (proj / "patches" / patch).read_text()
    assert "\nSigned-off-by: t <t@t>\nForkkit-Fix: limit\n---\n" in text
    assert (proj / "patches" / "series").read_text().endswith(f"{patch}\n")
    # 3. red-green: valid
    assert cli.main([*conf, "red-green"]) == 0
    summary = proj / ".forkkit" / "reports" / "red_green" / "summary.json"
    rows = json.loads(summary.read_text())["fixes"]
    assert [(r["fix"], r["valid"], r["fail_to_pass"]) for r in rows] == [
        ("limit", True, 1)
    ]
    # again: one line each, nothing written
    before = _files(proj)
    capsys.readouterr()
    assert cli.main(["init", "toy==1.0", "--dir", str(proj), "--index-url", index]) == 2
    assert "fork.toml: exists already" in capsys.readouterr().err
    assert cli.main(argv) == 2
    assert "a [[fix]] 'limit' exists already" in capsys.readouterr().err
    assert cli.main([*conf, "fix", "add", "again", str(tmp_path / "mine" / patch)]) == 2
    err = capsys.readouterr().err
    assert "does not apply" in err or "exists already" in err
    assert _files(proj) == before


def test_the_trailer_joins_the_message_trailers() -> None:
    mail = "Subject: [PATCH] x\n\nWhy.\n\nSigned-off-by: a <a@a>\n---\n f | 1 +\n"
    assert with_fix_trailer(mail, "x", where="p") == (
        "Subject: [PATCH] x\n\nWhy.\n\nSigned-off-by: a <a@a>\nForkkit-Fix: x\n"
        "---\n f | 1 +\n"
    )
    bare = "Subject: [PATCH] x\n\nWhy.\n---\n f | 1 +\n"
    assert "Why.\n\nForkkit-Fix: x\n---" in with_fix_trailer(bare, "x", where="p")
    other = mail.replace("Signed-off-by", "Forkkit-Fix: y\nSigned-off-by")
    with pytest.raises(ForkkitError, match="says 'Forkkit-Fix: y', not 'x'"):
        with_fix_trailer(other, "x", where="p")


def test_a_new_fix_table_follows_the_last_one() -> None:
    toml = '[upstream]\nname = "t"\n\n[[fix]]\nid = "a"\n\n# env\n[testenv]\nx = 1\n'
    new = with_table(toml, '\n[[fix]]\nid = "b"\n')
    assert new == (
        '[upstream]\nname = "t"\n\n[[fix]]\nid = "a"\n\n[[fix]]\nid = "b"\n\n'
        "# env\n[testenv]\nx = 1\n"
    )
    first = with_table('[upstream]\nname = "t"\n\n[testenv]\n', '[[fix]]\nid = "a"\n')
    assert first == '[upstream]\nname = "t"\n\n[[fix]]\nid = "a"\n\n[testenv]\n'
