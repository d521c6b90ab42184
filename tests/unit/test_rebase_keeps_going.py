# SPDX-License-Identifier: Apache-2.0
"""#46 item 3: a dry-run rebase tries every patch: one that conflicts is
recorded and left out, the replay goes on from the last good state, and the
first conflict is left in the rebase repo for resolution. Real git on a toy
upstream."""

from __future__ import annotations

from pathlib import Path

import pytest

from forkkit.config import load_config
from forkkit.fork.tree import materialize
from forkkit.line import Line
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

QUICK = Options(semantic=False, red_green=False)


def _independent(n: int) -> list[tuple[str, dict[str, str]]]:
    """``calc.py``'s fix first, then ``n`` patches that each add a file."""
    first = ("[Bugfix] limit", {"toy/calc.py": FIXED_CALC})
    return [
        first,
        *((f"[Feature] part {i}", {f"toy/p{i}.py": f"X = {i}\n"}) for i in range(n)),
    ]


def test_a_conflict_leaves_the_rest_tried(tmp_path: Path) -> None:
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", toy_release({"toy/count.py": COUNT_BUGGY}))
    changes = [*_independent(2), ("[Bugfix] count", {"toy/count.py": COUNT_FIXED})]
    cfg = make_project(tmp_path / "p", up, "1.0", changes, fix_ids=["a", "b", "c", "d"])
    # upstream rewrites the line the first patch changes
    moved = FIXED_CALC.replace("return n", "return n + 0  # upstream's own")
    up.publish("1.1", toy_release({"toy/count.py": COUNT_BUGGY, "toy/calc.py": moved}))
    line = Line.of(load_config(cfg.path))
    result = rebase(line, resolve_target(line, "toy==1.1"), QUICK)
    assert [p.status for p in result.patches] == ["conflict", "clean", "clean", "clean"]
    assert not result.ok and not result.written
    # the first conflict is in the rebase repo's work tree, to resolve there
    assert "toy/calc.py" in Repo(Path(result.repo)).unmerged()


def test_a_200_patch_series_gets_a_verdict_for_every_patch(tmp_path: Path) -> None:
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", toy_release({}))
    changes = _independent(199)
    ids = [f"f{i}" for i in range(len(changes))]
    cfg = make_project(tmp_path / "p", up, "1.0", changes, fix_ids=ids)
    moved = FIXED_CALC.replace("return n", "return n + 0  # upstream's own")
    up.publish("1.1", toy_release({"toy/calc.py": moved}))
    line = Line.of(load_config(cfg.path))
    result = rebase(line, resolve_target(line, "toy==1.1"), QUICK)
    statuses = [p.status for p in result.patches]
    assert len(statuses) == 200 and "not-tried" not in statuses
    assert statuses[0] == "conflict" and set(statuses[1:]) == {"clean"}


def _body(name: str, n: int = 12) -> str:
    """A module long enough for git's rename detection to follow it."""
    return "".join(f"{name}_{i} = {i}\n" for i in range(n))


def test_each_file_gets_a_verdict_and_each_conflict_its_kind(tmp_path: Path) -> None:
    up = SyntheticUpstream(tmp_path / "up")
    base = {
        "toy/old.py": _body("old"),
        "toy/count.py": _body("count"),
        "toy/moved.py": _body("moved"),
        "toy/g.py": _body("g"),
    }
    up.publish("1.0", toy_release(base))
    changes = [
        ("[Bugfix] limit", {"toy/calc.py": FIXED_CALC}),  # content
        ("[Fix] old", {"toy/old.py": _body("old").replace("old_3 = 3", "old_3 = 30")}),
        ("[Feature] new", {"toy/new.py": "MINE = 1\n"}),  # upstream adds its own
        (
            "[Fix] count",
            {"toy/count.py": _body("count").replace("count_5 = 5", "count_5 = 50")},
        ),
        (
            "[Fix] moved",
            {"toy/moved.py": _body("moved").replace("moved_1 = 1", "moved_1 = 10")},
        ),
        ("[Fix] g", {"toy/g.py": _body("g").replace("g_2 = 2", "g_2 = 20")}),
    ]
    ids = ["a", "b", "c", "d", "e", "f"]
    cfg = make_project(tmp_path / "p", up, "1.0", changes, fix_ids=ids)
    new = {
        "toy/calc.py": FIXED_CALC.replace("return n", "return n + 0  # upstream's own"),
        "toy/new.py": "THEIRS = 2\n",  # added upstream, differently
        # renamed upstream, the patched line changed there too
        "toy/counting.py": _body("count").replace("count_5 = 5", "count_5 = 5000"),
        "toy/moving.py": _body("moved"),  # renamed, the patch follows it
        "toy/g.py": _body("g").replace("g_2 = 2", "g_2 = 20"),  # absorbed
    }
    release = toy_release({k: v for k, v in base.items() if k in ("toy/g.py",)} | new)
    up.publish("1.1", release)
    line = Line.of(load_config(cfg.path))
    result = rebase(line, resolve_target(line, "toy==1.1"), QUICK)
    files = {
        f.path: (f.verdict, f.kind, f.new_path) for p in result.patches for f in p.files
    }
    assert files == {
        "toy/calc.py": ("conflict", "content", ""),
        "toy/old.py": ("conflict", "deleted-upstream", ""),
        "toy/new.py": ("conflict", "added-upstream", ""),
        "toy/count.py": ("conflict", "renamed", "toy/counting.py"),
        "toy/moved.py": ("3way", "", "toy/moving.py"),
        "toy/g.py": ("absorbed", "", ""),
    }
    doc = rebase_doc(result)
    assert doc.file_counts == {
        "3way": 1,
        "absorbed": 1,
        "conflict": 4,
        "conflict/content": 1,
        "conflict/deleted-upstream": 1,
        "conflict/added-upstream": 1,
        "conflict/renamed": 1,
    }
    text = render_markdown(result)
    assert "- Files: 1 3way, 1 absorbed, 4 conflict, 1 conflict: content" in text
    assert "| 0004-" in text and "`toy/counting.py`" in text


def test_resolve_from_takes_the_vendor_s_own_port_for_the_files_it_covers(
    tmp_path: Path,
) -> None:
    """#46 item 7: the vendor ported the series already; a conflicted file
    their port covers takes its version there, and the report says so."""
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", toy_release({"toy/count.py": COUNT_BUGGY}))
    changes = [*_independent(1), ("[Bugfix] count", {"toy/count.py": COUNT_FIXED})]
    cfg = make_project(tmp_path / "p", up, "1.0", changes, fix_ids=["a", "b", "c"])
    moved = FIXED_CALC.replace("return n", "return n + 0  # upstream's own")
    up.publish("1.1", toy_release({"toy/count.py": COUNT_BUGGY, "toy/calc.py": moved}))
    ported = moved.replace("return n + 0  # upstream's own", "return n  # the port")
    port = tmp_path / "port-1.1.diff"
    port.write_text(
        "--- a/toy/calc.py\n+++ b/toy/calc.py\n" + "".join(_hunk(moved, ported))
    )
    line = Line.of(load_config(cfg.path))
    target = resolve_target(line, "toy==1.1")
    result = rebase(
        line, target, Options(semantic=False, red_green=False, resolve_from=port)
    )
    first = result.patches[0]
    assert [p.status for p in result.patches] == ["resolved-from", "clean", "clean"]
    assert "resolved from port-1.1.diff: toy/calc.py" in first.detail
    repo = Repo(Path(result.repo))
    assert repo.read_blob(f"{first.new_commit}:toy/calc.py").decode() == ported
    assert "conflicts resolved from --resolve-from" in render_markdown(result)


def _hunk(old: str, new: str) -> list[str]:
    """One whole-file hunk from ``old`` to ``new``."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    return [
        f"@@ -1,{len(a)} +1,{len(b)} @@\n",
        *("-" + x for x in a),
        *("+" + x for x in b),
    ]


def test_take_upstream_retires_what_upstream_took_over(tmp_path: Path) -> None:
    """#46 item 4: a file upstream deleted, and one it added itself, are
    proposed in the report; --take-upstream takes them, and the records say
    how each patch left."""
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", toy_release({"toy/old.py": _body("old")}))
    changes = [
        ("[Fix] old", {"toy/old.py": _body("old").replace("old_3 = 3", "old_3 = 30")}),
        ("[Feature] new", {"toy/new.py": "MINE = 1\nSAME = 2\n"}),
        ("[Fix] g", {"toy/g.py": "G = 1\n"}),
    ]
    cfg = make_project(tmp_path / "p", up, "1.0", changes, fix_ids=["a", "b", "c"])
    up.publish("1.1", toy_release({"toy/new.py": "THEIRS = 1\nSAME = 2\n"}))
    line = Line.of(load_config(cfg.path))
    target = resolve_target(line, "toy==1.1")
    dry = rebase(line, target, QUICK)
    assert [p.status for p in dry.patches] == ["conflict", "conflict", "clean"]
    text = render_markdown(dry)
    assert "drop it: upstream deleted the file" in text
    assert "take upstream's file (2 line(s) differ from ours)" in text
    taken = rebase(
        line, target, Options(semantic=False, red_green=False, take_upstream=True)
    )
    statuses = [p.status for p in taken.patches]
    assert statuses == ["deleted-upstream", "added-upstream", "clean"] and taken.ok
    assert [(r.name[5:], r.how) for r in taken.retired] == [
        ("Fix-old.patch", "deleted-upstream"),
        ("Feature-new.patch", "added-upstream"),
    ]
    files = [(f.path, f.verdict, f.kind) for p in taken.patches for f in p.files]
    assert files[:2] == [
        ("toy/old.py", "absorbed", "deleted-upstream"),
        ("toy/new.py", "absorbed", "added-upstream"),
    ]


def test_the_series_on_the_old_pin_is_the_fork_tree_s_own_commits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fork tree holds the very commits the rebase would make on the old
    pin (same pristine commit, identity and dates): they are fetched, not
    applied again; a fork tree of another series is passed over."""
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", toy_release({"toy/count.py": COUNT_BUGGY}))
    changes = [*_independent(2), ("[Bugfix] count", {"toy/count.py": COUNT_FIXED})]
    cfg = make_project(tmp_path / "p", up, "1.0", changes, fix_ids=["a", "b", "c", "d"])
    moved = FIXED_CALC.replace("return n", "return n + 0  # upstream's own")
    up.publish("1.1", toy_release({"toy/count.py": COUNT_BUGGY, "toy/calc.py": moved}))
    line = Line.of(load_config(cfg.path))
    target = resolve_target(line, "toy==1.1")
    applied = rebase(line, target, QUICK)  # no fork tree yet: applied
    assert "the fork tree's commits" not in capsys.readouterr().err
    materialize(cfg)
    fetched = rebase(line, target, QUICK)
    assert "the fork tree's commits" in capsys.readouterr().err
    assert [p.old_commit for p in fetched.patches] == [
        p.old_commit for p in applied.patches
    ]
    assert [p.status for p in fetched.patches] == [p.status for p in applied.patches]
    # a patch changed since the fork tree was built: applied again
    last = cfg.patches_dir / cfg.series_file.read_text().split()[-1]
    last.write_text(last.read_text().replace("[Bugfix] count", "[Bugfix] count!"))
    edited = Line.of(load_config(cfg.path))
    rebase(edited, resolve_target(edited, "toy==1.1"), QUICK)
    assert "the fork tree's commits" not in capsys.readouterr().err


FILLER = "".join(f"\n\ndef f{i}():\n    return {i}\n" for i in range(6))
TWO_PLACES = "def head():\n    return 0\n" + FILLER + "\n\ndef tail():\n    return 0\n"


def test_a_conflict_upstream_partly_took_proposes_what_to_drop(
    tmp_path: Path,
) -> None:
    """#46 item 4: a patch of two hunks in one file; upstream took the first
    as it is and wrote the second its own way: the conflict's proposal drops
    the hunk upstream has (it reverse-applies there) and keeps the other."""
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", toy_release({"toy/two.py": TWO_PLACES}))
    ours = TWO_PLACES.replace("return 0\n\n\ndef f0", "return 1\n\n\ndef f0").replace(
        "def tail():\n    return 0", "def tail():\n    return 1"
    )
    changes = [
        ("[Bugfix] two places", {"toy/two.py": ours, "tests/test_fix.py": FIX_TEST})
    ]
    cfg = make_project(tmp_path / "p", up, "1.0", changes, fix_ids=["two"])
    theirs = ours.replace("def tail():\n    return 1", "def tail():\n    return 2")
    up.publish("1.1", toy_release({"toy/two.py": theirs}))
    target = resolve_target(Line.of(cfg), "toy==1.1")
    result = rebase(Line.of(cfg), target, Options(semantic=False, red_green=False))
    (verdict,) = [f for p in result.patches for f in p.files if f.path == "toy/two.py"]
    assert (verdict.verdict, verdict.kind, verdict.taken, verdict.hunks) == (
        "conflict",
        "content",
        (1,),
        2,
    )
    assert "drop hunk(s) 1 of 2: upstream has them already" in verdict.proposal
    assert "keep only the other 1" in verdict.proposal
