"""Upstream lines: each its own fork tree and reports; every fix on every line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from forkkit import cli
from forkkit.config import ForkConfig, load_config, select_line
from forkkit.errors import ForkkitError
from forkkit.fork.tree import materialize
from forkkit.services.proof.lines import LinesDoc
from tests.synthetic import (
    CALC_CONTEXT_MOVED,
    SyntheticUpstream,
    make_project,
    toy_release,
    toy_testenv_python,
)


def _two_lines(
    toy_upstream: SyntheticUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[ForkConfig, ForkConfig]:
    """The project over toy 1.0 and, as ``[line] also``, line 1.1."""
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    toy_upstream.publish("1.1", toy_release({"toy/calc.py": CALC_CONTEXT_MOVED}))
    main = make_project(tmp_path / "main", toy_upstream, "1.0")
    other = make_project(tmp_path / "old", toy_upstream, "1.1")
    other.path.write_text(other.path.read_text() + '\n[line]\nname = "1.1"\n')
    main.path.write_text(
        main.path.read_text() + '\n[line]\nalso = ["../old/fork.toml"]\n'
    )
    return load_config(main.path), load_config(other.path)


@pytest.mark.e2e
def test_two_lines_live_side_by_side(
    toy_upstream: SyntheticUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main, other = _two_lines(toy_upstream, tmp_path, monkeypatch)
    assert (main.line, other.line, main.also) == ("", "1.1", (other.path,))
    # each line its own fork tree: building one never rebuilds the other
    a = materialize(main)
    b = materialize(other)
    assert a.path != b.path and b.path == tmp_path / "wd" / "lines" / "1.1" / "fork"
    assert materialize(main).head == a.head and a.repo.rev("HEAD") == a.head
    # every fix on every line, one table; each line's reports its own
    assert cli.main(["--config", str(main.path), "red-green", "--all-lines"]) == 0
    lines = json.loads((main.work.report_dir("lines") / "summary.json").read_text())
    assert lines["schema"] == "forkkit.red-green-lines" and lines["valid"]
    assert (
        LinesDoc.of(lines, where="summary.json").document() == lines
    )  # the typed class reads back what it wrote
    assert [(ln["line"], [f["fix"] for f in ln["fixes"]]) for ln in lines["lines"]] == [
        ("toy 1.0", ["toy-fix"]),
        ("1.1", ["toy-fix"]),
    ]
    assert (
        lines["lines"][1]["summary"] == "../../lines/1.1/reports/red_green/summary.md"
    )
    md = (main.work.report_dir("lines") / "summary.md").read_text()
    assert "| fix | [toy 1.0](../red_green/summary.md) | [1.1 (toy 1.1)](" in md
    assert (
        "| `toy-fix` | ✅ red/green (1 FAIL_TO_PASS) | ✅ red/green (1 FAIL_TO_PASS) |"
        in md
    )
    for cfg in (main, other):
        assert (
            cfg.work.report_dir("red_green") / "toy-fix" / "red_green.json"
        ).is_file()
    assert other.work.report_dir("red_green") != main.work.report_dir("red_green")

    # --line picks one line of the project: by its name, or the project's own
    # line by its version; the line's reports are its own
    args = ["--config", str(main.path)]
    assert cli.main([*args, "--line", "1.1", "status"]) == 0
    assert cli.main([*args, "red-green", "--line", "1.0"]) == 0
    with pytest.raises(ForkkitError, match=r"--line 2.0: no such line in fork.toml"):
        select_line(main, "2.0")
    assert select_line(main, "1.1") == other and select_line(main, "1.0") == main

    # CI fans out (#32 item 7): one job per line uploads its reports, and one
    # table is collected from them, the same as --all-lines gives
    artifacts = tmp_path / "artifacts"
    for n, c in enumerate((main, other)):
        shutil.copytree(c.work.report_dir("red_green"), artifacts / f"job-{n}")
    before = lines["lines"]
    assert cli.main([*args, "red-green", "--collect", str(artifacts)]) == 0
    collected = json.loads((main.work.report_dir("lines") / "summary.json").read_text())
    assert [ln["fixes"] for ln in collected["lines"]] == [ln["fixes"] for ln in before]
    assert [ln["line"] for ln in collected["lines"]] == ["toy 1.0", "1.1"]
    shutil.copytree(artifacts / "job-0", artifacts / "job-2")  # a line twice
    assert cli.main([*args, "red-green", "--collect", str(artifacts)]) == 2
    assert cli.main([*args, "red-green", "--collect", str(tmp_path / "main")]) == 2


def test_a_line_name_is_one_folder(tmp_path: Path) -> None:
    toml = tmp_path / "fork.toml"
    base = '[upstream]\nname = "t"\nsource = "sdist"\nversion = "1"\n'
    base += f'sha256 = "{"a" * 64}"\n'
    toml.write_text(base + '[testenv]\ntorch = "x"\n[line]\nname = "../up"\n')
    with pytest.raises(
        ForkkitError, match=r"\[line\] name '../up': not a release name"
    ):
        load_config(toml)


@pytest.mark.e2e
def test_the_next_line_is_prepared_while_one_is_proven(
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--all-lines builds a later line's fork tree (and test venv) on a
    background thread while the first line's runs go; an error of that
    line is still its own, one line, in its turn."""
    main, _ = _two_lines(toy_upstream, tmp_path, monkeypatch)
    args = ["--config", str(main.path), "red-green", "--all-lines"]
    assert cli.main(args) == 0
    err = capsys.readouterr().err.splitlines()
    ready = next(i for i, x in enumerate(err) if "lines/1.1/fork: 1 patch" in x)
    first_proof = next(i for i, x in enumerate(err) if "; green: " in x)
    assert ready < first_proof, "\n".join(err)
    # the later line's series no longer applies: its own error, after the
    # first line was proven
    patch = next((tmp_path / "old" / "patches").glob("0001-*.patch"))
    text = patch.read_text()
    patch.write_text(text.replace("-    return n - 1", "-    return n - 9"))
    assert cli.main(args) == 2
    err = capsys.readouterr().err.splitlines()
    errors = [i for i, x in enumerate(err) if x.startswith("forkkit: error: ")]
    assert len(errors) == 1 and patch.name in err[errors[0]], err
    assert any("; green: " in x for x in err[: errors[0]])  # line 1 was proven


def test_a_line_never_lists_itself_and_names_are_unique(
    toy_upstream: SyntheticUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#44: two lines of one name would share one tree and one report
    folder; a line listing itself would be proven twice."""
    main, _ = _two_lines(toy_upstream, tmp_path, monkeypatch)
    text = main.path.read_text()
    main.path.write_text(
        text.replace('also = ["../old/fork.toml"]', 'also = ["fork.toml"]')
    )
    with pytest.raises(ForkkitError, match="is this file; list only the other lines"):
        load_config(main.path)
    main.path.write_text(
        text.replace(
            'also = ["../old/fork.toml"]', 'name = "1.1"\nalso = ["../old/fork.toml"]'
        )
    )
    with pytest.raises(ForkkitError, match=r"are both line '1\.1'"):
        select_line(load_config(main.path), "1.1")
    assert cli.main(["--config", str(main.path), "red-green", "--all-lines"]) == 2
