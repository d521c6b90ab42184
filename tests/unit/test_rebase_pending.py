# SPDX-License-Identifier: Apache-2.0
"""#46 item 3: ``rebase --apply`` writes what applied and retires what was
absorbed; a patch that conflicts waits in ``patches/pending.toml``, as it
was, until its conflict is resolved in the rebase repo, and the next rebase
onto the same pin brings it back. Real git on a toy upstream."""

from __future__ import annotations

import subprocess
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from forkkit.config import load_config
from forkkit.errors import ForkkitError
from forkkit.fork.export import export_series
from forkkit.fork.status import fork_status
from forkkit.fork.tree import materialize
from forkkit.line import Line
from forkkit.patches.pending import (
    PENDING_FILE,
    Pending,
    parse_pending,
    render_pending,
)
from forkkit.services.proof.summary import render_summary, summary_doc, waiting_rows
from forkkit.services.rebase.doc import rebase_doc
from forkkit.services.rebase.model import Options
from forkkit.services.rebase.render import render_markdown
from forkkit.services.rebase.run import rebase, resolve_target
from forkkit.vcs import Repo
from tests.synthetic import (
    COUNT_BUGGY,
    COUNT_FIXED,
    FIX_TEST,
    FIXED_CALC,
    SyntheticUpstream,
    make_project,
    toy_release,
)

APPLY = Options(semantic=False, red_green=False, apply=True, apply_unproven=True)
MOVED = FIXED_CALC.replace("return n", "return n + 0  # upstream's own")


def _project(tmp_path: Path, changes: list[tuple[str, dict[str, str]]]) -> Path:
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", toy_release({"toy/count.py": COUNT_BUGGY}))
    ids = [f"f{i}" for i in range(len(changes))]
    cfg = make_project(tmp_path / "p", up, "1.0", changes, fix_ids=ids)
    up.publish("1.1", toy_release({"toy/count.py": COUNT_BUGGY, "toy/calc.py": MOVED}))
    return cfg.path


def _changes() -> list[tuple[str, dict[str, str]]]:
    return [
        ("[Bugfix] limit", {"toy/calc.py": FIXED_CALC}),
        ("[Feature] part", {"toy/part.py": "X = 1\n"}),
        ("[Bugfix] count", {"toy/count.py": COUNT_FIXED}),
    ]


def test_apply_writes_what_applied_and_the_conflict_waits(tmp_path: Path) -> None:
    path = _project(tmp_path, _changes())
    line = Line.of(load_config(path))
    first = line.series.patches[0]
    before = first.path.read_bytes()
    result = rebase(line, resolve_target(line, "toy==1.1"), APPLY)
    assert [p.status for p in result.patches] == ["conflict", "clean", "clean"]
    assert result.written and [p.name for p in result.pending] == [first.name]
    cfg = load_config(path)
    assert cfg.upstream.pin.fields()["version"] == "1.1"
    after = Line.of(cfg)
    assert [f.id for f in after.fixes.fixes] == ["f1", "f2"]
    assert first.name not in after.series_file.read_text()
    assert first.path.read_bytes() == before  # it waits exactly as it was
    record = tomllib.loads((cfg.patches_dir / PENDING_FILE).read_text())["pending"]
    assert [
        (r["name"], r["fix"], r["applies_on"], r["conflicts_on"]) for r in record
    ] == [(first.name, "f0", "toy 1.0", "toy 1.1")]
    assert (
        record[0]["files"] == ["toy/calc.py"] and record[0]["pin"]["version"] == "1.0"
    )
    assert 'id = "f0"' in path.read_text()  # its fix waits with it
    materialize(cfg)  # the written line is whole on its own


def test_the_resolved_conflict_brings_the_patch_back(tmp_path: Path) -> None:
    path = _project(tmp_path, _changes())
    line = Line.of(load_config(path))
    first = rebase(line, resolve_target(line, "toy==1.1"), APPLY)
    repo = Repo(Path(first.repo))
    assert repo.unmerged() == ["toy/calc.py"]
    (repo.path / "toy/calc.py").write_text(MOVED.replace("# upstream's own", "# both"))
    again = Line.of(load_config(path))
    second = rebase(again, resolve_target(again, "toy==1.1"), APPLY)
    statuses = {p.name[5:]: (p.status, p.from_pin) for p in second.patches}
    assert statuses["Bugfix-limit.patch"] == ("rerere", "toy 1.0"), statuses
    assert second.written and not second.pending
    cfg = load_config(path)
    assert not (cfg.patches_dir / PENDING_FILE).exists()
    done = Line.of(cfg)
    assert [f.id for f in done.fixes.fixes] == ["f0", "f1", "f2"]
    assert len(done.series.patches) == 3
    tree = materialize(cfg)
    assert "# both" in (tree.path / "toy/calc.py").read_text()


def test_a_tested_fix_moves_whole(tmp_path: Path) -> None:
    """A fix whose runtime patch conflicts while its test patch applies
    cannot wait in half: nothing is written, and the note says why."""
    changes = [
        ("[Bugfix] limit", {"toy/calc.py": FIXED_CALC}),
        ("[Bugfix] limit tests", {"tests/test_fix.py": FIX_TEST}),
    ]
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", toy_release({}))
    cfg = make_project(tmp_path / "p", up, "1.0", changes, fix_ids=["lim", "lim"])
    up.publish("1.1", toy_release({"toy/calc.py": MOVED}))
    toml = cfg.path.read_text()
    line = Line.of(cfg)
    result = rebase(line, resolve_target(line, "toy==1.1"), APPLY)
    assert not result.written and cfg.path.read_text() == toml
    assert any("a fix with tests moves whole" in n for n in result.notes), result.notes
    assert not (cfg.patches_dir / PENDING_FILE).exists()


def test_a_patch_that_builds_on_an_earlier_one_cannot_wait(tmp_path: Path) -> None:
    """The next rebase rebuilds a waiting patch from its pin alone: one that
    needs an earlier patch there is refused, and nothing is written."""
    changes = [
        ("[Feature] part", {"toy/part.py": "X = 1\n"}),
        ("[Feature] part two", {"toy/part.py": "X = 1\nY = 2\n"}),
        ("[Bugfix] count", {"toy/count.py": COUNT_FIXED}),
    ]
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", toy_release({"toy/count.py": COUNT_BUGGY}))
    cfg = make_project(tmp_path / "p", up, "1.0", changes, fix_ids=["a", "b", "c"])
    theirs = {"toy/count.py": COUNT_BUGGY, "toy/part.py": "X = 1\nY = 3\n"}
    up.publish("1.1", toy_release(theirs))
    toml = cfg.path.read_text()
    line = Line.of(cfg)
    result = rebase(line, resolve_target(line, "toy==1.1"), APPLY)
    assert [p.status for p in result.patches][1] == "conflict"
    assert not result.written and cfg.path.read_text() == toml
    assert any("does not apply alone on its pin" in n for n in result.notes)


def test_the_reports_say_what_waits(tmp_path: Path) -> None:
    path = _project(tmp_path, _changes())
    line = Line.of(load_config(path))
    result = rebase(line, resolve_target(line, "toy==1.1"), APPLY)
    text = render_markdown(result)
    assert "Rebased onto toy 1.1 in part: 2 patch(es) carried" in text
    assert "1 conflicting wait in patches/pending.toml" in text
    doc = rebase_doc(result)
    assert [p.name for p in doc.pending] == [result.patches[0].name]
    assert doc.unproven and "Proof: **unproven**" in text  # --no-red-green
    cfg = load_config(path)
    status = fork_status(cfg, dest=None)
    assert status["pending"] == [result.patches[0].name]
    assert "1 patch(es) wait in patches/pending.toml" in str(status["summary"])
    rows = waiting_rows(Line.of(cfg))
    assert [(r.fix, r.waiting, r.counts) for r in rows] == [("f0", "toy 1.1", False)]
    summary = render_summary(summary_doc(None, [], line=Line.of(cfg)))
    assert "⏸ waiting: conflicts on toy 1.1" in summary
    assert "⏸ 1 patch(es) wait in patches/pending.toml" in summary


def test_a_bad_pending_record_is_one_line(tmp_path: Path) -> None:
    path = _project(tmp_path, _changes())
    line = Line.of(load_config(path))
    rebase(line, resolve_target(line, "toy==1.1"), APPLY)
    cfg = load_config(path)
    record = cfg.patches_dir / PENDING_FILE
    text = record.read_text()
    record.write_text(text.replace("applies_on = ", "applies_on = 1 #"))
    with pytest.raises(ForkkitError, match=r"pending.toml: not a list of pending"):
        _ = Line.of(cfg).fixes
    record.write_text(text)
    name = Line.of(cfg).pending[0].name
    (cfg.patches_dir / name).unlink()
    again = Line.of(cfg)
    with pytest.raises(ForkkitError, match=rf"{name} is not in .*restore the patch"):
        rebase(again, resolve_target(again, "toy==1.1"), APPLY)


def test_pending_records_round_trip() -> None:
    rec = Pending(
        name='0001-a "b".patch',
        subject="[Bugfix] a",
        fix="a",
        applies_on="vllm 0.14.0",
        conflicts_on="vllm 0.21.0",
        sha256="0" * 64,
        files=("vllm/x.py",),
        pin={"source": "sdist", "version": "0.14.0"},
    )
    assert parse_pending(render_pending([rec, replace(rec, name="b")])) == (
        rec,
        replace(rec, name="b"),
    )
    with pytest.raises(ForkkitError, match="is listed twice"):
        parse_pending(render_pending([rec, rec]))


def test_a_waiting_patch_upstream_took_retires_from_its_own_pin(
    tmp_path: Path,
) -> None:
    """Upstream 1.2 has the waiting fix exactly: the next rebase retires it,
    its record says the pin it waited on, and its fix leaves fork.toml."""
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", toy_release({"toy/count.py": COUNT_BUGGY}))
    cfg = make_project(tmp_path / "p", up, "1.0", _changes(), fix_ids=["a", "b", "c"])
    up.publish("1.1", toy_release({"toy/count.py": COUNT_BUGGY, "toy/calc.py": MOVED}))
    line = Line.of(cfg)
    rebase(line, resolve_target(line, "toy==1.1"), APPLY)
    up.publish(
        "1.2", toy_release({"toy/count.py": COUNT_BUGGY, "toy/calc.py": FIXED_CALC})
    )
    again = Line.of(load_config(cfg.path))
    result = rebase(again, resolve_target(again, "toy==1.2"), APPLY)
    (gone,) = result.retired
    assert gone.fix == "a" and gone.retired_from == "toy 1.0", gone
    assert result.written and not (cfg.patches_dir / PENDING_FILE).exists()
    assert 'id = "a"' not in cfg.path.read_text()
    assert not (cfg.patches_dir / gone.name).exists()


def test_export_says_a_waiting_patch_waits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _project(tmp_path, _changes())
    line = Line.of(load_config(path))
    name = rebase(line, resolve_target(line, "toy==1.1"), APPLY).pending[0].name
    cfg = load_config(path)
    tree = materialize(cfg)
    (tree.path / "toy" / "new.py").write_text("NEW = 1\n")
    git = ["git", "-C", str(tree.path), "-c", "user.name=U", "-c", "user.email=u@x"]
    subprocess.run([*git, "add", "toy/new.py"], check=True)
    message = "[Misc] new\n\nForkkit-Fix: f1"
    subprocess.run([*git, "commit", "-q", "-m", message], check=True)
    capsys.readouterr()
    export_series(cfg)
    assert f"left alone: {cfg.patches_dir / name} (waits in pending.toml)" in (
        capsys.readouterr().err
    )
    assert (cfg.patches_dir / name).exists()
