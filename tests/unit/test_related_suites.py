# SPDX-License-Identifier: Apache-2.0
"""#47 item 2: related suites that run. ``fix add`` ranks the test modules
that import a changed module (nearest first), leaves out those that start a
server or load a model from the Hub, checks the rest with one collection-only
pytest run in the CPU venv and leaves out, named with the module it lacks,
one that cannot be imported. ``fix related`` changes them with the same
checks. Real git, real pytest, a toy upstream."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from forkkit import cli
from forkkit.commands.fix.model import closeness, ranked, with_related
from forkkit.config import load_config
from tests.synthetic import (
    BUGGY,
    TOY_FIX,
    SyntheticUpstream,
    make_patches,
    make_project,
    toy_fix_changes,
)

USES = "from toy.calc import limit\n\n\n"
MODULES = {
    "tests/calc/__init__.py": "",
    "tests/calc/test_near.py": USES + "def test_near():\n    assert limit(2) == 1\n",
    "tests/test_audio.py": "import forkkit_no_such_audio_lib\n"
    + USES
    + "def test_audio():\n    pass\n",
    "tests/test_server.py": USES
    + "def test_served(server):\n    RemoteOpenAIServer = server\n",
    "tests/test_model.py": USES
    + 'MODEL_NAME = "org/some-model"\n\n\ndef test_model():\n    pass\n',
}


def test_the_nearest_come_first() -> None:
    runtime = ["vllm/entrypoints/openai/protocol.py"]
    assert closeness("tests/entrypoints/openai/test_x.py", runtime) == 2
    assert closeness("tests/entrypoints/test_y.py", runtime) == 1
    assert closeness("tests/v1/test_z.py", runtime) == 0
    got = ranked(
        [
            "tests/v1/a.py",
            "tests/entrypoints/openai/big.py",
            "tests/entrypoints/openai/s.py",
        ],
        runtime_files=runtime,
        sizes={
            "tests/entrypoints/openai/big.py": 900,
            "tests/entrypoints/openai/s.py": 10,
        },
    )
    assert got == [
        "tests/entrypoints/openai/s.py",
        "tests/entrypoints/openai/big.py",
        "tests/v1/a.py",
    ]


@pytest.mark.e2e
def test_fix_add_keeps_the_suites_that_run_and_names_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", {**BUGGY, **MODULES})
    (patch,) = make_patches(BUGGY, toy_fix_changes(), tmp_path / "mine", fix_ids=[""])
    proj = tmp_path / "proj"
    index = (up.root / "index").as_uri()
    assert cli.main(["init", "toy==1.0", "--dir", str(proj), "--index-url", index]) == 0
    conf = ["--config", str(proj / "fork.toml")]
    capsys.readouterr()
    assert cli.main([*conf, "fix", "add", "limit", str(tmp_path / "mine" / patch)]) == 0
    out = capsys.readouterr().out
    (decl,) = load_config(proj / "fork.toml").fixes
    assert decl.related_suites == ("tests/calc/test_near.py", "tests/test_other.py")
    assert "kept 2 of 5 test module(s) that import it" in out
    assert (
        "cannot be collected (1): tests/test_audio.py (missing module "
        "'forkkit_no_such_audio_lib')" in out
    )
    assert "starts an API server (1): tests/test_server.py" in out
    assert "loads a model from the Hugging Face Hub (1): tests/test_model.py" in out
    # the same checks when the user changes them
    related = [*conf, "fix", "related", "limit"]
    assert cli.main([*related, "--add", "tests/test_audio.py"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    said = [ln for ln in err if not ln.startswith("[forkkit]")]  # not progress
    assert len(said) == 1 and "missing module" in said[0]
    assert cli.main([*related, "--add", "tests/nope.py"]) == 2
    assert "not in the fork" in capsys.readouterr().err
    assert cli.main([*related, "--add", "tests/test_model.py"]) == 0
    assert cli.main([*related, "--drop", "tests/test_other.py"]) == 0
    (decl,) = load_config(proj / "fork.toml").fixes
    assert decl.related_suites == ("tests/calc/test_near.py", "tests/test_model.py")
    assert cli.main([*related, "--drop", "tests/test_other.py"]) == 2
    assert "not one of" in capsys.readouterr().err


@pytest.mark.e2e
def test_a_related_module_that_stops_importing_is_one_line_in_the_proof(
    tmp_path: Path,
) -> None:
    """The other suites still run, the proof stands, and the report names
    the module and what it lacks (deselect cannot stop an import)."""
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", {**BUGGY, **MODULES})
    suites = ("tests/test_audio.py", "tests/test_other.py")
    cfg = make_project(
        tmp_path / "p", up, "1.0", toy_fix_changes(), related_suites=suites
    )
    assert cli.main(["--config", str(cfg.path), "red-green", "--parallel", "off"]) == 0
    md = (cfg.work.proof_report(TOY_FIX).with_suffix(".md")).read_text()
    assert (
        "tests/test_audio.py cannot be collected (missing module "
        "'forkkit_no_such_audio_lib'): [testenv] deselect cannot stop an import" in md
    )
    assert "Related suites (fixed runtime): 2 passed" in md


def test_the_suites_are_rewritten_in_fork_toml_s_own_layout() -> None:
    toml = (
        "[upstream]\nname = 'toy'\n\n"
        "[[fix]]\nid = 'other'\nrelated_suites = ['tests/a.py']\n\n"
        "[[fix]]\nid = 'mine'  # the one\nrelated_suites = [\n"
        "    'tests/b.py::t[cpu]',  # a ] in a string\n    'tests/c.py',\n]\n"
        "\n[testenv]\ntorch = 'torch'"
    )
    new = with_related(toml, "mine", ["tests/d.py"])
    data = tomllib.loads(new)
    assert [f["related_suites"] for f in data["fix"]] == [
        ["tests/a.py"],
        ["tests/d.py"],
    ]
    assert new.startswith(toml[: toml.index("[[fix]]\nid = 'mine'")])
    assert new.endswith("\n[testenv]\ntorch = 'torch'")
    # no key yet, and no newline at the end of the file
    bare = '[[fix]]\nid = "mine"'
    assert tomllib.loads(with_related(bare, "mine", ["t.py"]))["fix"][0] == {
        "id": "mine",
        "related_suites": ["t.py"],
    }
