"""Fixes as units: derived from the patches, each proven alone."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from forkkit import cli
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.fixes import focused_targets, load_fixes, red_commit
from forkkit.fork.tree import materialize
from forkkit.patches.diff import parse_diff
from forkkit.patches.fixes import (
    FixDecl,
    assign,
    check_fix_id,
    classes_changed,
    fix_trailer,
    narrowed,
    targets_changed,
)
from forkkit.patches.series import parse_patch_text
from tests.synthetic import (
    BUGGY,
    COUNT_BUGGY,
    COUNT_FIXED,
    COUNT_TEST,
    FIX_TEST,
    FIXED_CALC,
    SyntheticUpstream,
    make_project,
    toy_release,
    toy_testenv_python,
)


@pytest.fixture(autouse=True)
def _toy_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own workdir; the toy suites run with this interpreter."""
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())


def _patch(name: str, message: str, files: dict[str, str]) -> str:
    body = "".join(
        f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-x\n+{t}\n"
        for p, t in files.items()
    )
    head = f"From 0 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] {name}\n\n"
    return f"{head}{message}\n---\n{body}"


def _parsed(name: str, message: str, files: dict[str, str]) -> object:
    return parse_patch_text(_patch(name, message, files), Path(f"{name}.patch"))


def test_a_fix_is_what_its_patches_change() -> None:
    a = _parsed(
        "a", "Fix a.\n\nForkkit-Fix: one", {"pkg/a.py": "y", "tests/test_a.py": "y"}
    )
    b = _parsed(
        "b", "Fix b.\n\nForkkit-Fix: two", {"pkg/b.py": "y", "tests/conftest.py": "y"}
    )
    c = _parsed("c", "More a.\n\nForkkit-Fix: one", {"tests/test_c.py": "y"})
    one, two = assign(
        [FixDecl(id="one", forwarded="https://x/pull/1"), FixDecl(id="two")],
        [a, b, c],  # type: ignore[list-item]
        config="fork.toml",
    )
    assert (one.patches, one.runtime_files) == (("a.patch", "c.patch"), ("pkg/a.py",))
    assert one.test_files == ("tests/test_a.py", "tests/test_c.py")
    assert one.title == "a" and one.forwarded == "https://x/pull/1"
    assert two.test_files == ()  # a conftest.py is test code, not a test module
    assert fix_trailer("x\n\nForkkit-Fix: a\nForkkit-Fix: b\n") == "b"


@pytest.mark.parametrize(
    ("messages", "decls", "error"),
    [
        (
            ["Fix.\n\nForkkit-Fix: one", "No trailer."],
            ["one"],
            "b.patch: belongs to no fix; add the trailer 'Forkkit-Fix: ID' to its "
            "message (fixes of fork.toml: one), or bring it in with 'forkkit fix add'",
        ),
        (
            ["Forkkit-Fix: one", "Forkkit-Fix: typo"],
            ["one"],
            "b.patch: 'Forkkit-Fix: typo' names no [[fix]] of fork.toml; add a "
            '[[fix]] table with id = "typo" or fix the trailer',
        ),
        (
            ["Forkkit-Fix: one", "Forkkit-Fix: one"],
            ["one", "two"],
            "fork.toml [[fix]] 'two': no patch of the series carries "
            "'Forkkit-Fix: two'; remove the table or add the trailer",
        ),
    ],
)
def test_every_patch_belongs_to_exactly_one_declared_fix(
    messages: list[str], decls: list[str], error: str
) -> None:
    patches = [
        _parsed(n, m, {f"pkg/{n}.py": "y"}) for n, m in zip("ab", messages, strict=True)
    ]
    with pytest.raises(ForkkitError) as exc:
        assign([FixDecl(id=d) for d in decls], patches, config="fork.toml")  # type: ignore[arg-type]
    assert str(exc.value) == error


SOURCE = textwrap.dedent(
    """\
    import os


    def helper():
        return 1


    class TestGroup:
        def test_in_class(self):
            assert helper()


    def test_top():
        assert True
    """
)


def _hunks(old: str, new: str) -> object:
    import difflib

    diff = "".join(
        difflib.unified_diff(
            old.splitlines(True),
            new.splitlines(True),
            "a/tests/test_x.py",
            "b/tests/test_x.py",
        )
    )
    return parse_diff(
        "diff --git a/tests/test_x.py b/tests/test_x.py\n" + diff
    ).all_hunks


def test_focused_tests_are_the_tests_a_change_lies_in() -> None:
    inside = SOURCE.replace("assert True", "assert 1 + 1 == 2")
    new_test = SOURCE + "\n\ndef test_new():\n    assert helper() == 1\n"
    helper = SOURCE.replace("return 1", "return 2")
    in_class = SOURCE.replace("assert helper()", "assert helper() == 1")
    cases = {
        inside: {"tests/test_x.py::test_top"},
        new_test: {"tests/test_x.py::test_new"},  # the blank lines are no change
        in_class: {"tests/test_x.py::TestGroup::test_in_class"},
        helper: {"tests/test_x.py"},  # a helper: every test may use it
        # an import the new test uses is the new test's, not the whole file
        "import math\n" + new_test: {"tests/test_x.py::test_new"},
        "import math\n" + SOURCE: {"tests/test_x.py"},  # an import alone: all
    }
    for new, want in cases.items():
        hunks = _hunks(SOURCE, new)
        found = targets_changed("tests/test_x.py", hunks=hunks, source=new)  # type: ignore[arg-type]
        assert found == want


# -- two fixes over one toy release, proven each alone -------------------------

TEST_FIX, TEST_TRIPLE = "tests/test_fix.py", "tests/test_triple.py"
SHARED_BUGGY = BUGGY["toy/calc.py"] + "\n\ndef triple(n):\n    return 3 * n + 1\n"
TRIPLE_TEST = (
    "from toy.calc import triple\n\n\ndef test_triple():\n    assert triple(2) == 6\n"
)


def _shared_file_project(tmp_path: Path, up: SyntheticUpstream) -> ForkConfig:
    """Two fixes that change the same runtime file, in different hunks."""
    up.publish("2.0", toy_release({"toy/calc.py": SHARED_BUGGY}))
    fixed_limit = SHARED_BUGGY.replace("return n - 1", "return n")
    both = fixed_limit.replace("return 3 * n + 1", "return 3 * n")
    return make_project(
        tmp_path / "shared",
        up,
        "2.0",
        [
            (
                "[Bugfix] limit",
                {"toy/calc.py": fixed_limit, "tests/test_fix.py": FIX_TEST},
            ),
            (
                "[Bugfix] triple",
                {"toy/calc.py": both, "tests/test_triple.py": TRIPLE_TEST},
            ),
        ],
        fix_ids=["limit", "triple"],
    )


@pytest.mark.e2e
def test_fixes_sharing_a_file_are_each_reverted_alone(
    toy_upstream: SyntheticUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _shared_file_project(tmp_path, toy_upstream)
    tree = materialize(cfg)
    fixes = load_fixes(cfg)
    head = tree.head
    repo = tree.repo
    for fix, still_fixed, reverted in (
        ("limit", "return 3 * n\n", "return n - 1"),
        ("triple", "return n\n", "return 3 * n + 1"),
    ):
        red = red_commit(tree, fixes, fixes.get(fix), head=head)
        calc = repo.read_blob(repo.blob(red, "toy/calc.py") or "").decode()
        assert reverted in calc and still_fixed in calc, fix
    out = tmp_path / "out"
    argv = [
        "--config",
        str(cfg.path),
        "red-green",
        "--out",
        str(out),
        "--parallel",
        "off",
    ]
    assert cli.main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert [(r["fix"], r["valid"], r["fail_to_pass"]) for r in summary["fixes"]] == [
        ("limit", True, 1),
        ("triple", True, 1),
    ]
    assert focused_targets(tree, fixes, fixes.get("triple"), head=head) == (
        "tests/test_triple.py",
    )


@pytest.mark.e2e
def test_a_patch_outside_every_fix_cannot_give_a_valid_proof(
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The new user's case: a second patch the config does not describe. It
    was 'valid' with its test never run; now it is one line, exit 2."""
    toy_upstream.publish("1.1", toy_release({"toy/count.py": COUNT_BUGGY}))
    changes = [
        (
            "[Bugfix] limit reaches n",
            {"toy/calc.py": FIXED_CALC, "tests/test_fix.py": FIX_TEST},
        ),
        (
            "[Bugfix] count",
            {"toy/count.py": COUNT_FIXED, "tests/test_count.py": COUNT_TEST},
        ),
    ]
    cfg = make_project(
        tmp_path / "p", toy_upstream, "1.1", changes, fix_ids=["limit", ""]
    )
    assert cli.main(["--config", str(cfg.path), "red-green"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("forkkit: error: 0002-Bugfix-count.patch: belongs to no fix")
    assert "\n" not in err


@pytest.mark.e2e
def test_a_fix_without_a_test_is_one_line(
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    changes = [("[Bugfix] limit, untested", {"toy/calc.py": FIXED_CALC})]
    cfg = make_project(tmp_path / "p", toy_upstream, "1.0", changes)
    assert cli.main(["--config", str(cfg.path), "red-green"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        "fix 'toy-fix' (0001-Bugfix-limit-untested.patch): its patches add or " in err
    )
    assert "add or change no test module; add the test that shows the fix" in err


def test_ids_are_reserved_and_trailer_keys_read_as_git_reads_them() -> None:
    for name in ("series", "summary.md"):
        with pytest.raises(ForkkitError, match="is reserved"):
            check_fix_id(name, "fork.toml [[fix]] #1")
    assert fix_trailer("Fix.\n\nforkkit-fix: low\n") == "low"


def test_the_trailer_is_read_from_the_trailer_block_only() -> None:
    """#44: a ``Forkkit-Fix:`` line in the middle of a body is prose."""
    body = (
        "Why.\n\nForkkit-Fix: other\nsays the old message.\n\nSigned-off-by: a <a@a>\n"
    )
    assert fix_trailer(body) is None
    mixed = "Why.\n\nForkkit-Fix: x\nand some prose after it\n"
    assert fix_trailer(mixed) is None
    block = (
        "Why.\n\nForkkit-Fix: other, in prose.\n\n"
        "Signed-off-by: a <a@a>\nForkkit-Fix: a\n"
    )
    assert fix_trailer(block) == "a"
    assert fix_trailer("Signed-off-by: a <a@a>\nForkkit-Fix: b\n") == "b"


def test_a_fix_id_is_at_most_64_characters() -> None:
    assert check_fix_id("a" * 64, "w") == "a" * 64
    with pytest.raises(ForkkitError) as exc:
        check_fix_id("a" * 300, "fork.toml [[fix]] #1")
    msg = str(exc.value)
    assert "at most 64 characters" in msg and len(msg) < 300


def test_a_deleted_or_vanished_test_keeps_the_whole_file() -> None:
    gone = SOURCE.replace("\n\ndef test_top():\n    assert True\n", "\n")
    hunks = _hunks(SOURCE, gone)
    assert targets_changed("tests/test_x.py", hunks=hunks, source=gone) == {  # type: ignore[arg-type]
        "tests/test_x.py"
    }
    both = {"tests/test_x.py::test_a", "tests/test_x.py::test_b"}
    now = {"tests/test_x.py::test_a"}  # test_b renamed by a later patch
    assert narrowed(both, present=now, path="tests/test_x.py") == ("tests/test_x.py",)
    assert narrowed(now, present=both, path="tests/test_x.py") == (
        "tests/test_x.py::test_a",
    )


def _limit_and_count(
    tmp_path: Path, up: SyntheticUpstream, *, tested: bool
) -> ForkConfig:
    up.publish("1.1", toy_release({"toy/count.py": COUNT_BUGGY}))
    count = {"toy/count.py": COUNT_FIXED}
    if tested:
        count["tests/test_count.py"] = COUNT_TEST
    changes = [
        ("[Bugfix] limit reaches n", {"toy/calc.py": FIXED_CALC, TEST_FIX: FIX_TEST}),
        ("[Bugfix] count", count),
    ]
    ids = ["limit", "count"]
    return make_project(tmp_path / "p", up, "1.1", changes, fix_ids=ids)


@pytest.mark.e2e
def test_a_fix_that_cannot_be_measured_leaves_the_others_proven(
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = _limit_and_count(tmp_path, toy_upstream, tested=False)
    assert cli.main(["--config", str(cfg.path), "red-green", "--no-related"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("forkkit: error: fix 'count': fix 'count' (0002-")
    folder = cfg.work.report_dir("red_green")
    rows = json.loads((folder / "summary.json").read_text())["fixes"]
    assert [(r["fix"], r["mode"], r["valid"]) for r in rows] == [
        ("limit", "red-green", True),
        ("count", "error", False),
    ]
    assert json.loads((folder / "limit" / "red_green.json").read_text())["valid"]


@pytest.mark.e2e
def test_proving_one_fix_keeps_the_other_reports(
    toy_upstream: SyntheticUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _limit_and_count(tmp_path, toy_upstream, tested=True)
    argv = ["--config", str(cfg.path), "red-green", "--no-related"]
    assert cli.main(argv) == 0
    folder = cfg.work.report_dir("red_green")
    count = (folder / "count" / "red_green.json").read_bytes()
    assert cli.main([*argv, "--fix", "limit"]) == 0
    assert (folder / "count" / "red_green.json").read_bytes() == count  # kept
    rows = json.loads((folder / "summary.json").read_text())["fixes"]
    assert [(r["fix"], r["valid"]) for r in rows] == [("limit", True), ("count", True)]


def test_the_classes_a_change_lies_in() -> None:
    old = "class A:\n    x: int = 1\n\n\nclass B:\n    def f(self):\n        return 1\n"
    new = old.replace("x: int = 1", "x: int | None = None").replace(
        "return 1", "return 2"
    )
    assert classes_changed(_hunks(old, new), source=new) == {"A", "B"}  # type: ignore[arg-type]
    more = old + "\n\ndef g():\n    pass\n"
    assert classes_changed(_hunks(old, more), source=more) == set()  # type: ignore[arg-type]
