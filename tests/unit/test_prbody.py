"""``forkkit pr-body``: the PR description from the reports, parsed as Markdown."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from forkkit import cli
from forkkit.commands.prbody.model import PrInputs, portable, pytest_command
from forkkit.commands.prbody.render import render_markdown
from forkkit.commands.prbody.render_guard import guard_title
from forkkit.config import ForkConfig
from forkkit.fork.tree import materialize
from forkkit.line import Line
from forkkit.output import report
from forkkit.patches.retired import Retired
from forkkit.services.proof.doc import ProofDoc
from forkkit.services.proof.run import prove
from forkkit.services.rebase.doc import RebaseDoc
from tests.synthetic import SyntheticUpstream, make_two_fix_project, toy_testenv_python

_PIPE = re.compile(r"(?<!\\)\|")
_DETAILS = re.compile(r"<(/?)details\b")


def _cells(row: str) -> int:
    return len(_PIPE.split(row.strip().removeprefix("|").removesuffix("|")))


def check_markdown(text: str) -> int:
    """Every table well formed, ``<details>`` balanced; return the table count."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    lines = text.splitlines()
    tables = [t for t in tokens if t.type == "table_open"]
    for table in tables:
        assert table.map is not None
        rows = lines[table.map[0] : table.map[1]]
        assert {_cells(r) for r in rows} == {_cells(rows[0])}, rows
    delimiters = [ln for ln in lines if re.fullmatch(r"\|(---\|)+", ln)]
    assert len(delimiters) == len(tables)  # every table is parsed as one
    depth = 0
    html = [t for t in tokens if t.type == "html_block"] + [
        c for t in tokens for c in t.children or [] if c.type == "html_inline"
    ]
    for tok in sorted(html, key=lambda t: (t.map or [0])[0]):
        for m in _DETAILS.finditer(tok.content):
            depth += -1 if m.group(1) else 1
            assert depth >= 0
    assert depth == 0
    return len(tables)


def check_portable(text: str, *local: Path) -> None:
    """No word starts with ``/``; no local folder is named."""
    for word in text.split():
        assert not word.strip("`'\"()[]*_,.;:").startswith("/"), word
    for path in local:
        assert str(path) not in text


def _pr_body(cfg: ForkConfig, *args: str) -> int:
    return cli.main(["--config", str(cfg.path), "pr-body", *args])


F2P = [f"tests/test_fix.py::test_case_{i}" for i in range(14)]
PATCH = "0001-Bugfix-limit-reaches-n.patch"  # the toy project's one patch
HUNKS = [
    {
        "hunk": "toy/calc.py#1",
        "path": "toy/calc.py",
        "symbol": "limit",
        "reverted": True,
        "turns_red": F2P[:5],
        "untested": False,
    },
    {
        "hunk": "toy/calc.py#2",
        "path": "toy/calc.py",
        "symbol": "_clamp_hit",
        "reverted": True,
        "turns_red": [],
        "untested": True,
    },
    {
        "hunk": "toy/calc.py#3",
        "path": "toy/calc.py",
        "symbol": "double",
        "reverted": False,
        "turns_red": [],
        "untested": False,
    },
]
REPRO = report.REPRO.stamp(
    {
        "mode": "cpu",
        "rerun": ["--preset", "qwen3.5-0.8b"],
        "upstream": "toy 1.0",
        "complete": True,
        "fix_tree": "a" * 40,
        "base_tree": "b" * 40,
        "rows": [
            {
                "prompt_len": 4096,
                "kind": "last_token_changed",
                "resend_tokens": 4096,
                "base_cached": 3072,
                "fix_cached": 4080,
                "gained": 1008,
            }
        ],
    }
)
RECONCILE = report.RECONCILE.stamp(
    {
        "competitor": {"ref": "/home/someone/their.patch", "kind": "patch"},
        "base": "toy 1.0",
        "overlap": {"kind": "same-files"},
        "measurement": {"summary": "measured: all 4 cell(s) of the behaviour matrix"},
        "sides": [
            {
                "side": "ours",
                "label": "ours",
                "classification": {"FAIL_TO_PASS": ["a"]},
            },
            {"side": "theirs", "label": "theirs", "classification": None},
        ],
        "answers": {
            "cross": [
                {
                    "tests": "theirs",
                    "runtime": "ours",
                    "passed": 5,
                    "total": 7,
                    "fail_to_pass": [1, 3],
                    "not_measured": "",
                },
                {
                    "tests": "ours",
                    "runtime": "theirs",
                    "passed": 0,
                    "total": 0,
                    "fail_to_pass": [0, 0],
                    "not_measured": "conflict",
                },
            ],
            "stack": {
                "verdict": "yes: both orders merge 3-way cleanly, into the same tree"
            },
            "resend": {
                "setup": "preset `p`",
                "runtimes": ["base", "ours"],
                "cells": [
                    {
                        "runtime": "base",
                        "rows": [
                            {
                                "kind": "identical",
                                "cached_tokens": 15120,
                                "recomputed_prompt_tokens": 880,
                            }
                        ],
                    },
                    {"runtime": "ours", "rows": [], "error": "boom"},
                ],
            },
        },
    }
)


@pytest.mark.e2e
def test_pr_body_on_the_toy_fork(
    toy_project: ForkConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _pr_body(toy_project) == 2  # no red/green report yet
    assert "run 'forkkit red-green --fix toy-fix' first" in capsys.readouterr().err
    prove(Line.of(toy_project), materialize(toy_project), stream=False)
    capsys.readouterr()
    assert _pr_body(toy_project) == 0
    body = capsys.readouterr().out
    assert check_markdown(body) == 2  # red/green runs, provenance
    check_portable(body, toy_project.work.root, tmp_path)
    for section in ("## Purpose", "## Test Plan", "## Test Result", "### Provenance"):
        assert f"\n{section}\n" in f"\n{body}"
    assert "### FAIL_TO_PASS (1)\n\n- `tests/test_fix.py::test_limit_reaches_n`" in body
    assert "git checkout v1.0 -- toy/calc.py\n" in body
    assert "forkkit verify .forkkit/reports/red_green/toy-fix/red_green.json" in body
    assert "--junitxml" not in body and "junit_family" not in body
    assert toy_project.upstream.release.sha256 in body
    assert "Related suites (`tests`) on the fix: 3 passed, 0 failed" in body
    assert "AI assistance: <!-- describe -->" in body
    assert "Resend reproduction" not in body and "Competing change" not in body
    # the optional reports are read from their default place when there
    for stem, doc in (("repro", REPRO), ("reconcile", RECONCILE)):
        folder = toy_project.work.report_dir(stem)
        folder.mkdir(parents=True)
        (folder / f"{stem}.json").write_text(json.dumps(doc))
    out = tmp_path / "body.md"
    assert _pr_body(toy_project, "--output", str(out)) == 0
    body = out.read_text()
    assert check_markdown(body) == 5
    check_portable(body, toy_project.work.root, tmp_path)
    assert "- their tests on `ours`: 5/7 pass (FAIL_TO_PASS 1/3)\n" in body
    assert "- our tests on `theirs`: not measured (conflict)\n" in body
    assert "Do they stack (3-way, both orders)? yes: both orders" in body
    assert "| identical | 15,120 (880) | not measured |" in body
    assert "| 4,096 | last token changed | 4,096 | 3,072 | 4,080 | +1,008 |" in body
    assert "`…/their.patch`" in body
    assert "forkkit repro --preset qwen3.5-0.8b\n" in body
    # a default report of another pin is left out, and said so; one given
    # on the command line is the caller's choice
    for stem, doc in (("repro", REPRO), ("reconcile", RECONCILE)):
        older = {**doc, "upstream" if stem == "repro" else "base": "toy 0.9"}
        path = toy_project.work.report_dir(stem) / f"{stem}.json"
        path.write_text(json.dumps(older))
    capsys.readouterr()
    assert _pr_body(toy_project, "--output", str(out)) == 0
    body, err = out.read_text(), capsys.readouterr().err
    assert "Resend reproduction" not in body and "Competing change" not in body
    assert "left out reports/repro/repro.json: made on toy 0.9, not toy 1.0" in err
    given = toy_project.work.report_dir("repro") / "repro.json"
    assert _pr_body(toy_project, "--output", str(out), "--repro", str(given)) == 0
    assert "Resend reproduction" in out.read_text()


def test_pr_body_renders_the_hunk_matrix_guards_and_folds(
    toy_project: ForkConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc: dict[str, Any] = {
        "valid": False,
        "problems": [f"red run failed: see {tmp_path}/wd/reports/red.log"],
        "title": "ignored: the fix's title wins",
        "upstream": {"ident": toy_project.upstream.ident, "label": "toy 1.0"},
        "patches": [{"name": PATCH, "commit": "c" * 40}],
        "fix": {"id": "toy-fix", "patches": [PATCH]},
        "classification": {"FAIL_TO_PASS": F2P, "PASS_TO_PASS": ["t::p"]},
        "red": {"command": "python -m pytest -q tests", "counts": {"failed": 14}},
        "green": {"command": "python -m pytest -q tests", "counts": {"passed": 15}},
        "related": None,
        "related_suites": [],
        "files": [{"path": "toy/calc.py", "role": "runtime", "base_blob": None}],
        "hunks": HUNKS,
        "guards": [
            {
                "guard": "wrong_reason",
                "message": "FAIL_TO_PASS test t::x fails on red with ImportError",
                "tests": ["t::x"],
                "blocking": True,
            }
        ],
        "repeat": {"n": 3, "seed": 1234, "orders": ["file", "reversed"], "flaky": []},
    }
    given = tmp_path / "rg.json"
    given.write_text(json.dumps(report.PROOF.stamp(doc)))
    assert _pr_body(toy_project, "--red-green", str(given)) == 0
    body = capsys.readouterr().out
    assert check_markdown(body) == 3  # runs, hunk matrix, provenance
    check_portable(body, tmp_path)
    assert "<details><summary>14 tests" in body and "❌ **invalid**" in body
    assert "| `toy/calc.py` | `_clamp_hit` | toy/calc.py#2 | none (**untested" in body
    assert "cannot be reverted alone" in body
    assert "1 untested hunk(s): toy/calc.py#2 (`_clamp_hit`)." in body
    assert "Guards (SWE-bench): FAIL_TO_PASS test t::x fails" in body
    assert "Flake check: green ran 3 times (orders: file, reversed; seed 1234)" in body
    assert "git rm -q -- toy/calc.py\n" in body and "toy 1.0" in body
    assert "**[Bugfix] limit reaches n**" in body  # the fix's title
    assert "Related suites: not run." in body
    missing = str(tmp_path / "none.json")
    assert _pr_body(toy_project, "--red-green", str(given), "--repro", missing) == 2
    assert "no such repro report" in capsys.readouterr().err
    # a report of another pin, series or fix is refused, in one line
    stale = {
        "upstream": {"ident": "git:https://github.com/x/y@abc", "label": "y@abc"},
        "patches": [{"name": "0001-other.patch", "commit": "c" * 40}],
        "fix": {"id": "other", "patches": [PATCH]},
        "edited": {"id": "toy-fix", "patches": [PATCH], "patch_sha256": ["0" * 64]},
    }
    for key, why in (
        ("upstream", "made on another pin (y@abc; fork.toml pins toy 1.0)"),
        ("patches", "made from another series than patches/ holds now"),
        ("fix", "not a report of fix 'toy-fix'"),
        ("edited", "fix 'toy-fix''s patches changed since (their sha256 differ)"),
    ):
        field = "fix" if key == "edited" else key
        given.write_text(json.dumps(report.PROOF.stamp({**doc, field: stale[key]})))
        assert _pr_body(toy_project, "--red-green", str(given)) == 2
        err = capsys.readouterr().err.strip()
        assert why in err and "\n" not in err


def test_portable_paths() -> None:
    roots = {"/w/wd": "WORKDIR", "/w": "."}
    text = "see /w/wd/reports/x.log and /w/fork.toml, /opt/py/bin/python; red/green"
    assert portable(text, roots) == (
        "see WORKDIR/reports/x.log and ./fork.toml, …/python; red/green"
    )
    assert portable("https://a/b file:///c/d </details>", {}) == (
        "https://a/b file:///c/d </details>"
    )
    cmd = "python -m pytest -q --junitxml=r.xml -o junit_family=xunit2 tests"
    assert pytest_command(cmd) == "python -m pytest -q tests"


@pytest.mark.parametrize("home", ["/", "", "//"])
def test_a_home_of_the_root_folder_names_nothing(home: str) -> None:
    """HOME=/ (or empty: Path.home() is then "/") must not put ``~`` between
    every character of the description."""
    text = "## Purpose\nsee /w/wd/x.log"
    assert portable(text, {"/w/wd": "WORKDIR", home: "~"}) == (
        "## Purpose\nsee WORKDIR/x.log"
    )


@pytest.mark.e2e
def test_pr_body_with_home_at_the_root(
    toy_project: ForkConfig,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tree = materialize(toy_project)
    prove(Line.of(toy_project), tree)
    capsys.readouterr()
    monkeypatch.setenv("HOME", "/")
    assert cli.main(["--config", str(toy_project.path), "pr-body"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## Purpose\n") and "~#" not in out


def _proof(data: dict[str, Any]) -> ProofDoc:
    """A red/green document in memory, read as ``pr-body`` reads the file."""
    least = {"upstream": {"ident": "sdist:toy==1.0#sha256=ab"}, "classification": {}}
    return ProofDoc.of(report.PROOF.stamp({**least, **data}), where="test")


def test_render_without_optional_keys() -> None:
    body = render_markdown(PrInputs(title="", red_green=_proof({})))
    assert check_markdown(body) == 2
    assert "### FAIL_TO_PASS (0)\n\n- (none)" in body


def _retired(name: str, release: str) -> Retired:
    return Retired(
        name=name,
        subject=f"[Bugfix] {name}",
        applied_upstream=release,
        how="absorbed-semantic",
        evidence="all its FAIL_TO_PASS tests pass on the new upstream without the fix",
        retired_from="vllm 0.30.0",
        sha256="00" * 32,
    )


def test_what_upstream_already_has() -> None:
    rg = _proof({})
    assert "What upstream already has" not in render_markdown(
        PrInputs(title="", red_green=rg)
    )
    one = _retired("0001-a.patch", "vllm 0.32.0")
    two = _retired("0002-b.patch", "vllm 0.34.0")
    rebase = RebaseDoc(new="vllm 0.34.0", can_retire=True, retired=(two,))
    body = render_markdown(
        PrInputs(title="", red_green=rg, retired=(one,), rebase=rebase)
    )
    check_markdown(body)
    section = body.split("## What upstream already has", 1)[1].split("\n## ")[0]
    assert "Retired from the series (`patches/retired.toml`)" in section
    assert "| [Bugfix] 0001-a.patch | vllm 0.32.0 |" in section
    assert "found that upstream has every patch: the fork can retire" in section
    assert "| [Bugfix] 0002-b.patch | vllm 0.34.0 |" in section
    none = RebaseDoc(new="vllm 0.34.0")
    assert "What upstream" not in render_markdown(
        PrInputs(title="", red_green=rg, rebase=none)
    )


def test_a_title_and_a_subject_are_text_not_html_or_script_links() -> None:
    """#44: user input in the PR body is escaped (no raw HTML, no script link)."""
    title = "[Bugfix] <img src=x onerror=alert(1)> [see](javascript:alert(1)) <!--"
    retired = dataclasses.replace(
        _retired("0001-a.patch", "vllm 0.32.0"),
        subject="[Bugfix] [x](  JavaScript:alert(2)) <script>alert(3)</script>",
    )
    body = render_markdown(
        PrInputs(title=title, red_green=_proof({}), retired=(retired,))
    )
    assert "<img" not in body and "<script" not in body
    assert "javascript:" not in body.lower()
    assert "**[Bugfix] &lt;img src=x onerror=alert(1)&gt; see &lt;!--**" in body
    assert "| [Bugfix] x &lt;script&gt;alert(3)&lt;" in body


@pytest.mark.e2e
@pytest.mark.parametrize("data", [b"[[retired]\nname = 1", b"\xff\xfe not utf-8"])
def test_a_damaged_retired_record_is_one_line(
    toy_project: ForkConfig, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    tree = materialize(toy_project)
    prove(Line.of(toy_project), tree)
    record = toy_project.patches_dir / "retired.toml"
    record.write_bytes(data)
    capsys.readouterr()
    assert cli.main(["--config", str(toy_project.path), "pr-body"]) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and err[0].startswith(f"forkkit: error: {record}: ")
    assert "restore it from git" in err[0]


@pytest.mark.parametrize(
    ("title", "want"),
    [
        (
            "[Bugfix][Spec Decode] Recover X",
            "[Test][Spec Decode] Regression tests: Recover X",
        ),
        ("[Core] Faster Y", "[Test][Core] Regression tests: Faster Y"),
        ("Plain", "[Test] Regression tests: Plain"),
    ],
)
def test_guard_title(title: str, want: str) -> None:
    assert guard_title(title) == want


def test_a_guard_report_is_a_test_pr() -> None:
    """A tests-only series (red/green in mode guard): a [Test] PR that says
    what it still adds, runs its tests once, and has no red/green table."""
    counts = {"passed": 374, "failed": 0, "error": 0, "skipped": 0}
    rg = {
        "mode": "guard",
        "valid": True,
        "title": "[Bugfix] Recover X",
        "upstream": {"ident": "sdist:toy==2.0#sha256=ab", "label": "toy 2.0"},
        "classification": {"PASS_TO_PASS": [f"t{i}" for i in range(374)]},
        "files": [
            {"path": "toy/x.py", "role": "runtime", "base_blob": "a", "fix_blob": "a"},
            {"path": "tests/t.py", "role": "test", "base_blob": None, "fix_blob": "b"},
        ],
        "patches": [{"name": "0001-Tests-x.patch", "commit": "c"}],
        "green": {"command": "python -m pytest tests/t.py", "counts": counts},
    }
    body = render_markdown(PrInputs(title="", red_green=_proof(rg)))
    assert "**[Test] Regression tests: Recover X**" in body
    assert "## What this PR still adds" in body and "`tests/t.py` (new)" in body
    assert "Guard: ✅ **valid**: all 374 tests this PR adds pass on toy 2.0." in body
    assert "Red/green proof" not in body and "FAIL_TO_PASS" not in body
    assert "# red:" not in body and "python -m pytest tests/t.py" in body


@pytest.mark.e2e
def test_a_pr_names_only_its_own_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """#47 item 5: on a one-fix branch the other fixes' tests are not there,
    so the PR's commands and test list name only the fix's own tests and
    its own related suites."""
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    cfg = make_two_fix_project(
        tmp_path / "p", SyntheticUpstream(tmp_path / "up"), "1.0"
    )
    text = cfg.path.read_text().replace(
        '[[fix]]\nid = "count"\n',
        '[[fix]]\nid = "count"\nrelated_suites = ["tests/test_count.py"]\n',
    )
    cfg.path.write_text(text)
    conf = ["--config", str(cfg.path)]
    assert cli.main([*conf, "red-green", "--parallel", "off"]) == 0
    capsys.readouterr()
    assert cli.main([*conf, "pr-body", "--fix", "limit"]) == 0
    body = capsys.readouterr().out
    plan = body[body.index("## Test Plan") : body.index("## Test Result")]
    assert "-q -rfE --continue-on-collection-errors tests/test_fix.py" in plan
    assert "test_count" not in plan
    purpose = body[: body.index("## Test Plan")]
    assert "`tests/test_fix.py` (new)" in purpose and "test_count" not in purpose
