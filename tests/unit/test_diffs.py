"""Pure reconcile analysis: diff parsing, symbols, overlap, targets, matrix."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from forkkit.errors import ForkkitError
from forkkit.output.doc import to_json
from forkkit.patches.diff import parse_diff
from forkkit.patches.symbols import hunk_symbols, python_symbols
from forkkit.services.reconcile.doc import reconcile_doc
from forkkit.services.reconcile.matrix import build_matrix, cell_summary
from forkkit.services.reconcile.model import (
    Cell,
    Runtime,
    SideTests,
    classify_side,
    measure,
)
from forkkit.services.reconcile.overlap import (
    changed_test_modules,
    compute_overlap,
    in_folders,
    merge_targets,
    target_folders,
    touched_tests,
)
from forkkit.services.reconcile.render import render_markdown
from forkkit.services.reconcile.result import ReconcileResult
from forkkit.testing.junit import parse_junit_text
from forkkit.vcs.git import Git

BASE = textwrap.dedent(
    """\
    import os


    def alpha(x):
        y = x + 1
        return y


    class Box:
        @staticmethod
        def first(v):
            return v

        def second(self, v):
            w = v * 2
            return w


    def omega():
        return 0
    """
)


def git_diff(tmp_path: Path, base: dict[str, str], new: dict[str, str | None]) -> str:
    """Real ``git diff`` of ``new`` (None deletes) over ``base``."""
    work = tmp_path / f"repo{len(list(tmp_path.iterdir()))}"
    git = Git.init(work)
    for rel, text in base.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    git.run("add", "-A")
    git.run("commit", "-q", "-m", "base")
    for rel, maybe in new.items():
        if maybe is None:
            (work / rel).unlink()
        else:
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(maybe)
    git.run("add", "-A")
    return git.run("diff", "--cached", "-M").stdout


def test_parse_diff_statuses_spans_and_split(tmp_path: Path) -> None:
    text = git_diff(
        tmp_path,
        {"pkg/m.py": BASE, "pkg/gone.py": "x = 1\n", "pkg/old.py": "a = 1\n" * 20},
        {
            "pkg/m.py": BASE.replace("w = v * 2", "w = v * 3"),
            "pkg/gone.py": None,
            "pkg/old.py": None,
            "pkg/new_name.py": "a = 1\n" * 20,
            "tests/test_m.py": "def test_x():\n    assert True\n",
        },
    )
    diff = parse_diff(text, "t")
    status = {f.path: f.status for f in diff.files}
    assert status == {
        "pkg/gone.py": "removed",
        "pkg/m.py": "modified",
        "pkg/new_name.py": "renamed",
        "tests/test_m.py": "added",
    }
    assert diff.test_paths == ("tests/test_m.py",)
    assert "tests/test_m.py" not in diff.runtime_paths
    (hunk,) = diff.hunks("pkg/m.py")
    line = BASE.splitlines().index("        w = v * 2") + 1
    assert hunk.span == (line, line)
    assert (hunk.added, hunk.removed) == (1, 1)
    assert changed_test_modules(diff) == ("tests/test_m.py",)


def test_conftest_and_nested_tests_folders_count_as_test_files(
    tmp_path: Path,
) -> None:
    """Reconcile takes its test-path rule from patches/paths.py (red/green's):
    a ``conftest.py`` and any file in a nested ``tests`` folder are test code,
    so they are counted as test files and never join a runtime layer."""
    text = git_diff(
        tmp_path,
        {"pkg/m.py": "a = 1\n"},
        {
            "pkg/m.py": "a = 2\n",
            "conftest.py": "import pytest\n",
            "pkg/sub/tests/helpers.py": "def helper():\n    return 1\n",
            "tests/test_m.py": "def test_x():\n    assert True\n",
        },
    )
    diff = parse_diff(text, "t")
    assert diff.runtime_paths == ("pkg/m.py",)
    assert changed_test_modules(diff) == ("tests/test_m.py",)
    res = ReconcileResult(
        title="fix",
        competitor="x.patch",
        competitor_kind="patch",
        base_label="toy 1.0",
        ours=diff,
        theirs=diff,
        overlap=compute_overlap(diff, diff, {}),
        sides=(),
        runtimes=(),
        cells={},
        matrix=build_matrix((), (), {}),
    )
    stats = to_json(reconcile_doc(res))["ours"]["stats"]
    assert (stats["test_files"], stats["runtime_files"]) == (3, 1)


def test_parse_diff_rejects_non_diffs() -> None:
    with pytest.raises(ForkkitError, match=r"notes\.txt: contains no file changes"):
        parse_diff("just some words\n", "notes.txt")


def test_python_symbols_and_hunk_symbols(tmp_path: Path) -> None:
    syms = {s.qualname: s for s in python_symbols(BASE)}
    assert set(syms) == {"alpha", "Box", "Box.first", "Box.second", "omega"}
    assert syms["Box.first"].start == BASE.splitlines().index("    @staticmethod") + 1
    assert python_symbols("def broken(:\n") == ()
    new = (
        BASE.replace("w = v * 2", "w = v * 2\n        w += 1")  # body insertion
        .replace("import os\n", "import os\nimport sys\n")  # module level
        .replace("def omega():", "def added():\n    return 1\n\n\ndef omega():")
        .replace("        return w\n", "        return w\n        # trailing\n")
    )
    diff = parse_diff(git_diff(tmp_path, {"m.py": BASE}, {"m.py": new}))
    names = [hunk_symbols(h, python_symbols(BASE)) for h in diff.hunks("m.py")]
    flat = {n for ns in names for n in ns}
    assert "<module>" in flat
    assert "Box.second" in flat
    assert "added" in flat
    assert "alpha" not in flat and "omega" not in flat


def _two(tmp_path: Path, ours: str, theirs: str) -> tuple[str, str]:
    return (
        git_diff(tmp_path, {"m.py": BASE}, {"m.py": ours}),
        git_diff(tmp_path, {"m.py": BASE}, {"m.py": theirs}),
    )


def test_overlap_disjoint_same_file_and_overlapping(tmp_path: Path) -> None:
    ours_text, far_text = _two(
        tmp_path,
        BASE.replace("y = x + 1", "y = x + 2"),
        BASE.replace("return 0", "return 1"),
    )
    ours, far = parse_diff(ours_text), parse_diff(far_text)
    other = parse_diff(git_diff(tmp_path, {"o.py": "a = 1\n"}, {"o.py": "a = 2\n"}))
    sources = {"m.py": BASE, "o.py": "a = 1\n"}
    disjoint = compute_overlap(ours, other, sources)
    assert disjoint.kind == "disjoint"
    assert disjoint.ours_only == ("m.py",) and disjoint.theirs_only == ("o.py",)
    same = compute_overlap(ours, far, sources)
    assert same.kind == "same-files"
    assert same.files[0].shared_symbols == ()
    _, near_text = _two(tmp_path, BASE, BASE.replace("return y", "return y * 1"))
    near = compute_overlap(ours, parse_diff(near_text), sources)
    assert near.kind == "overlapping"
    (pair,) = near.files[0].pairs
    assert pair.distance == 1 and pair.relation == "1 line(s) apart"
    assert near.shared_symbols == ("m.py::alpha",)
    _, clash_text = _two(tmp_path, BASE, BASE.replace("y = x + 1", "y = x - 1"))
    clash = compute_overlap(ours, parse_diff(clash_text), sources)
    assert clash.files[0].pairs[0].distance == 0


def test_touched_tests_maps_changes_to_node_ids(tmp_path: Path) -> None:
    old = textwrap.dedent(
        """\
        import helper


        def util():
            return 1


        def test_a():
            assert util() == 1


        class TestGroup:
            def test_b(self):
                assert True

            def test_c(self):
                assert True
        """
    )
    new = (
        old.replace("assert util() == 1", "assert util() == 1\n    assert util()")
        .replace(
            "    def test_c(self):",
            "    def test_new(self):\n        assert 1\n\n    def test_c(self):",
        )
        .replace("return 1", "return 1  # helper only")
    )
    path = "tests/sub/test_mod.py"
    diff = parse_diff(
        git_diff(
            tmp_path,
            {path: old},
            {path: new, "tests/sub/test_brand_new.py": "def test_z():\n    pass\n"},
        )
    )
    targets = touched_tests(diff, {path: old}, {path: new})
    assert set(targets) == {
        f"{path}::test_a",
        f"{path}::TestGroup::test_new",
        "tests/sub/test_brand_new.py",
    }
    assert merge_targets([f"{path}::test_a"], [path, "tests/x.py"]) == (
        path,
        "tests/x.py",
    )
    assert target_folders(["tests/a/test_x.py::t", "tests/a/test_y.py"]) == ("tests/a",)
    assert in_folders(["tests/a/b.py", "tests/a/c/d.py"], ["tests/a"]) == (
        "tests/a/b.py",
    )


def _junit(cases: str) -> str:
    return f'<testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>'


PASS = '<testcase classname="tests.test_f" name="{}"/>'
FAIL = (
    '<testcase classname="tests.test_f" name="{}">'
    '<failure message="assert 1 == 2">E   AssertionError</failure></testcase>'
)


def test_matrix_classifies_and_renders_cells() -> None:
    base = parse_junit_text(_junit(FAIL.format("t1") + PASS.format("t2")))
    ours = parse_junit_text(_junit(PASS.format("t1") + PASS.format("t2")))
    theirs = parse_junit_text(_junit(FAIL.format("t1") + FAIL.format("t2")))
    runtimes = [
        Runtime("base", "b", "tree"),
        Runtime("ours", "o", "tree"),
        Runtime("theirs", "t", "tree"),
        Runtime("ours+theirs", "both", "tree"),
        Runtime("new", "n", "tree2"),
    ]
    cells = {
        ("ours", "base"): Cell("ours", "base", "ran", base),
        ("ours", "ours"): Cell("ours", "ours", "ran", ours),
        ("ours", "theirs"): Cell("ours", "theirs", "ran", theirs),
        ("ours", "ours+theirs"): Cell(
            "ours", "ours+theirs", "conflict", conflict=("m.py: hunk 1/1",)
        ),
        ("ours", "new"): Cell(
            "ours",
            "new",
            "ran",
            parse_junit_text(_junit("")),
            broken_modules={"tests.test_f": "import"},
        ),
    }
    side = classify_side(
        SideTests("ours", "focused", ("tests/test_f.py",), "base", "ours"), cells
    )
    assert side.classification is not None
    assert side.classification.ids("FAIL_TO_PASS") == ["tests.test_f::t1"]
    assert side.classification.ids("PASS_TO_PASS") == ["tests.test_f::t2"]
    matrix = build_matrix(runtimes, [side], cells)
    by_cat = {r.category: r.cells for r in matrix.rows}
    assert by_cat["FAIL_TO_PASS"] == (
        "0/1 pass, 1 fail",
        "1/1 pass",
        "0/1 pass, 1 fail",
        "conflict",
        "error (import)",
    )
    assert by_cat["PASS_TO_PASS"][2] == "0/1 pass, 1 fail"
    marks = ("FAIL", "pass", "FAIL", "conflict", "error (import)")
    assert matrix.details == (("ours", "FAIL_TO_PASS", "tests.test_f::t1", marks),)
    assert matrix.patterns() == [("ours", "FAIL_TO_PASS", marks, ["tests.test_f::t1"])]
    assert cell_summary(None, ["x"]) == "n/a"
    assert cell_summary(cells[("ours", "base")], []) == "-"
    empty = parse_diff("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n")
    res = ReconcileResult(
        title="fix",
        competitor="x.patch",
        competitor_kind="patch",
        base_label="toy 1.0",
        ours=empty,
        theirs=empty,
        overlap=compute_overlap(empty, empty, {"x.py": "a\n"}),
        sides=(side,),
        runtimes=tuple(runtimes),
        cells=cells,
        matrix=matrix,
    )
    md = render_markdown(res)
    assert "| ours: FAIL_TO_PASS (1) | 0/1 pass, 1 fail | 1/1 pass |" in md
    assert "- **ours+theirs**: m.py: hunk 1/1" in md
    assert "| ours | FAIL_TO_PASS | 1 | FAIL | pass | FAIL | conflict |" in md
    data = to_json(reconcile_doc(res))
    assert data["overlap"]["kind"] == "overlapping"
    assert data["matrix"][0]["cells"]["new"] == "error (import)"


SKIP = (
    '<testcase classname="tests.test_f" name="{}">'
    '<skipped message="needs a GPU"/></testcase>'
)


RUNTIMES = [Runtime(k, k, "tree") for k in ("base", "ours", "theirs")]
OURS = SideTests("ours", "focused", ("tests/test_f.py",), "base", "ours")


def _verdict(**by_runtime: Cell) -> tuple[str, list[str]]:
    """The verdict on our side's cells, and each gap as "runtime: reason"."""
    cells = {("ours", k): c for k, c in by_runtime.items()}
    m = measure([OURS], RUNTIMES, cells)
    return m.verdict, [f"{g.runtime}: {g.reason}" for g in m.gaps]


def _ran(runtime: str, xml: str = "", **kw: Any) -> Cell:
    return Cell("ours", runtime, "ran", parse_junit_text(_junit(xml)), **kw)


def test_measurement_says_which_cells_hold_results() -> None:
    """A cell is measured when pytest ran its tests to the end and reported a
    result; some cells not measured: partial."""
    ran = FAIL.format("t1") + PASS.format("t2")
    ok = {k: _ran(k, ran) for k in ("base", "ours", "theirs")}
    assert _verdict(**ok) == ("measured", [])
    conflict = Cell("ours", "theirs", "conflict", conflict=("x.py: hunk 1/1",))
    assert _verdict(**{**ok, "theirs": conflict}) == ("partial", ["theirs: conflict"])
    # pytest killed by the timeout (no JUnit), and a cell never run
    killed = _ran("ours", finished=False)
    assert _verdict(base=ok["base"], ours=killed) == (
        "partial",
        ["ours: pytest did not finish", "theirs: not run"],
    )
    n_a = Cell("ours", "theirs", "not-applicable")
    assert _verdict(**{**ok, "theirs": n_a}) == (
        "partial",
        ["theirs: its tests are not in this tree"],
    )
    # a module that only fails to import on base is a result (the red side)
    broken = _ran("base", broken_modules={"tests.test_f": "import"})
    assert _verdict(**{**ok, "base": broken}) == ("measured", [])


def test_nothing_measured_when_no_test_ran_anywhere() -> None:
    keys = ("base", "ours", "theirs")
    only_broken = {k: _ran(k, broken_modules={"tests.test_f": "import"}) for k in keys}
    assert _verdict(**only_broken) == (
        "nothing",
        [f"{k}: no test result: 1 module(s) did not load" for k in keys],
    )
    no_tests = {k: _ran(k) for k in keys}
    assert _verdict(**no_tests) == ("nothing", [f"{k}: no test result" for k in keys])
    # skipped everywhere, or loading only where it is skipped: nothing ran
    all_skipped = {k: _ran(k, SKIP.format("t1")) for k in keys}
    gaps = [f"{k}: no test ran: only skips or load errors" for k in keys]
    assert _verdict(**all_skipped) == ("nothing", gaps)
    assert _verdict(**{**all_skipped, "base": only_broken["base"]}) == (
        "nothing",
        gaps,
    )
    conflicts = {k: Cell("ours", k, "conflict", conflict=("x.py",)) for k in keys}
    assert _verdict(**conflicts) == ("nothing", [f"{k}: conflict" for k in keys])
    # a side without tests has no cells; no side with tests: nothing
    none = measure([replace(OURS, targets=())], RUNTIMES, {})
    assert (none.verdict, none.summary()) == (
        "nothing",
        "nothing measured: neither side brings a test to run",
    )
