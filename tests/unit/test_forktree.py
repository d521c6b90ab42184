"""The materialized fork tree: base + one commit per patch, and back (export)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork import state as forkstate
from forkkit.fork.export import ExportResult, export_series
from forkkit.fork.seriesfiles import load_series
from forkkit.fork.tree import (
    BASE_TAG,
    FORK_BRANCH,
    ForkTree,
    materialize,
)
from forkkit.vcs.git import Git
from tests.synthetic import (
    BUGGY,
    FIX_TEST,
    FIXED_CALC,
    SyntheticUpstream,
    make_patches,
    make_project,
)

TWO_PATCHES = [
    ("[Bugfix] limit reaches n", {"toy/calc.py": FIXED_CALC}),
    ("[Test] regression test for limit", {"tests/test_fix.py": FIX_TEST}),
]


@pytest.fixture(autouse=True)
def _own_workdir(monkeypatch: pytest.MonkeyPatch) -> None:
    """Projects built here keep their work dir inside their tmp folder."""
    monkeypatch.delenv("FORKKIT_WORKDIR", raising=False)


RENAME_MSG = "[Misc] rename\n\nSigned-off-by: t <t@t>\nForkkit-Fix: toy-fix"


def _subjects(git: Git, rev_range: str = f"{BASE_TAG}..HEAD") -> list[str]:
    return git.out("log", "--reverse", "--format=%s", rev_range).splitlines()


def _export(cfg: ForkConfig, tree: ForkTree) -> ExportResult:
    return export_series(cfg, dest=tree.path)


def _snapshot(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


def _rewrite_series(
    cfg: ForkConfig, base: dict[str, str], changes: list[tuple[str, dict[str, str]]]
) -> None:
    """Replace the project's series with patches of ``changes`` over ``base``."""
    shutil.rmtree(cfg.patches_dir)
    shutil.rmtree(cfg.patches_dir.with_name(cfg.patches_dir.name + "-work"))
    names = make_patches(base, changes, cfg.patches_dir)
    cfg.series_file.write_text("".join(f"{n}\n" for n in names))


def _project(
    tmp_path: Path, up: SyntheticUpstream, changes: list[tuple[str, dict[str, str]]]
) -> ForkConfig:
    return make_project(tmp_path / "project", up, "1.0", changes)


def test_materialize_clean(tmp_path: Path, toy_upstream: SyntheticUpstream) -> None:
    cfg = _project(tmp_path, toy_upstream, TWO_PATCHES)
    tree = materialize(cfg)
    git = Git(tree.path)
    assert tree.path == cfg.workdir / "fork"
    # commit 1: the pristine tree, a root commit tagged base
    assert git.rev(BASE_TAG) == tree.base
    assert git.out("rev-list", "--max-parents=0", "HEAD") == tree.base
    assert git.out("ls-tree", "-r", "--name-only", BASE_TAG).splitlines() == sorted(
        BUGGY
    )
    assert git.out("show", f"{BASE_TAG}:toy/calc.py") + "\n" == BUGGY["toy/calc.py"]
    assert tree.base_tree == git.out("rev-parse", f"{BASE_TAG}^{{tree}}")
    assert f"Forkkit-Upstream: {cfg.upstream.ident}" in git.out(
        "log", "-1", "--format=%B", BASE_TAG
    )
    # then one commit per patch, subjects = patch subjects, on branch fork
    series = load_series(cfg.series_file, cfg.patches_dir)
    assert _subjects(git) == [p.subject for p in series.patches]
    assert _subjects(git) == [s for s, _ in TWO_PATCHES]
    assert git.out("rev-parse", "--abbrev-ref", "HEAD") == FORK_BRANCH
    assert tree.head == git.rev("HEAD")
    assert [n for n, _ in tree.patch_commits] == [p.name for p in series.patches]
    assert tree.patch_commits[-1][1] == tree.head
    assert tree.patch_commits[0][1] == git.rev("HEAD~1")
    assert (tree.path / "toy/calc.py").read_text() == FIXED_CALC
    assert (tree.path / "tests/test_fix.py").read_text() == FIX_TEST
    assert tree.series_digest == series.digest
    assert tree.upstream_commit is None
    assert git.is_clean()


def test_materialize_is_idempotent(
    toy_project: ForkConfig, capsys: pytest.CaptureFixture[str]
) -> None:
    first = materialize(toy_project)
    calc = first.path / "toy" / "calc.py"
    mtime = calc.stat().st_mtime_ns
    state = Git(first.path).rev(forkstate.STATE_REF + "^{blob}")
    capsys.readouterr()
    start = time.monotonic()
    second = materialize(toy_project)
    elapsed = time.monotonic() - start
    assert second == first  # the fast path returns exactly the full build's tree
    assert Git(first.path).rev("HEAD") == first.head
    assert calc.stat().st_mtime_ns == mtime
    assert Git(first.path).rev(forkstate.STATE_REF + "^{blob}") == state
    err = capsys.readouterr().err
    assert "up to date" in err
    assert "applying" not in err
    assert elapsed < 2.0


def test_changed_patches_rebuild_on_the_same_base(
    tmp_path: Path, toy_upstream: SyntheticUpstream
) -> None:
    cfg = _project(tmp_path, toy_upstream, TWO_PATCHES)
    first = materialize(cfg)
    _rewrite_series(
        cfg,
        toy_upstream.versions["1.0"],
        [("[Bugfix] limit is exact", {"toy/calc.py": FIXED_CALC})],
    )
    second = materialize(cfg)
    assert second.base == first.base
    assert second.head != first.head
    assert second.series_digest != first.series_digest
    assert _subjects(Git(second.path)) == ["[Bugfix] limit is exact"]
    assert not (second.path / "tests/test_fix.py").exists()


# An upstream whose calc.py is long enough for a patch to have two hunks.
PAD = "".join(f"\n\ndef pad{i}():\n    return {i}\n" for i in range(4))
WIDE = {**BUGGY, "toy/calc.py": BUGGY["toy/calc.py"] + PAD + "\n\nLAST = 1\n"}
WIDE_FIXED = WIDE["toy/calc.py"].replace("n - 1", "n").replace("LAST = 1", "LAST = 2")


def test_failing_patch_names_patch_file_and_hunk(tmp_path: Path) -> None:
    up = SyntheticUpstream(tmp_path / "upstream")
    up.publish("1.0", WIDE)
    # 1.1 changes the line the second hunk of 0002 edits
    up.publish(
        "1.1", {**WIDE, "toy/calc.py": WIDE["toy/calc.py"].replace("T = 1", "T = 3")}
    )
    changes = [
        ("[Misc] rename", {"toy/other.py": "def name():\n    return 'Toy'\n"}),
        ("[Bugfix] fix calc", {"toy/calc.py": WIDE_FIXED}),
    ]
    cfg = make_project(tmp_path / "project", up, "1.0", changes)
    cfg11 = cfg.with_upstream(
        version="1.1",
        sha256=up.sha256("1.1"),
        sdist_url=(up.sdist_dir / "toy-1.1.tar.gz").as_uri(),
    )
    with pytest.raises(ForkkitError) as exc:
        materialize(cfg11)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith(
        "0002-Bugfix-fix-calc.patch: hunk 2/2 of toy/calc.py (@@ -"
    ), msg
    assert ") does not apply to toy 1.1; refresh the patch" in msg
    # The tree is sane: no am in progress, clean, stopped after patch 1.
    dest = cfg.workdir / "fork"
    git = Git(dest)
    assert not (dest / ".git" / "rebase-apply").exists()
    assert git.is_clean()
    assert _subjects(git) == ["[Misc] rename"]
    assert git.out("rev-parse", "--abbrev-ref", "HEAD") == FORK_BRANCH
    # Refreshing the series (patches made against 1.1) then just works.
    fixed11 = up.versions["1.1"]["toy/calc.py"].replace("n - 1", "n")
    _rewrite_series(
        cfg, up.versions["1.1"], [("[Bugfix] fix calc", {"toy/calc.py": fixed11})]
    )
    tree = materialize(cfg11)
    assert _subjects(Git(tree.path)) == ["[Bugfix] fix calc"]
    assert (dest / "toy/calc.py").read_text() == fixed11


def test_patch_to_a_file_missing_upstream(tmp_path: Path) -> None:
    up = SyntheticUpstream(tmp_path / "upstream")
    up.publish("1.0", BUGGY)
    up.publish("1.1", {k: v for k, v in BUGGY.items() if k != "toy/other.py"})
    changes = [("[Misc] rename", {"toy/other.py": "def name():\n    return 'T'\n"})]
    cfg = make_project(tmp_path / "project", up, "1.0", changes)
    cfg11 = cfg.with_upstream(
        version="1.1",
        sha256=up.sha256("1.1"),
        sdist_url=(up.sdist_dir / "toy-1.1.tar.gz").as_uri(),
    )
    with pytest.raises(
        ForkkitError,
        match=r"^0001-Misc-rename\.patch: toy/other\.py does not exist in toy 1\.1; ",
    ):
        materialize(cfg11)


def test_local_edits_are_refused_without_force(toy_project: ForkConfig) -> None:
    tree = materialize(toy_project)
    calc = tree.path / "toy" / "calc.py"
    calc.write_text("edited\n")
    assert materialize(toy_project) == tree  # up to date: nothing is touched
    series = toy_project.series_file.read_text()
    toy_project.series_file.write_text("# no patches for now\n")
    with pytest.raises(ForkkitError, match=r"toy/calc\.py\) would be lost.*--force"):
        materialize(toy_project)
    assert calc.read_text() == "edited\n"
    materialize(toy_project, force=True)
    assert calc.read_text() == BUGGY["toy/calc.py"]
    toy_project.series_file.write_text(series)
    assert materialize(toy_project).head == tree.head
    # A local commit on top of the built series is refused too.
    git = Git(tree.path)
    (tree.path / "NOTES").write_text("mine\n")
    git.run("add", "NOTES")
    git.run("commit", "-q", "-m", "local work")
    with pytest.raises(ForkkitError, match=r"1 commit\(s\) of yours .*export"):
        materialize(toy_project)
    assert (tree.path / "NOTES").exists()
    assert materialize(toy_project, force=True).head == tree.head
    assert not (tree.path / "NOTES").exists()


def test_untracked_files_block_a_rebuild(
    tmp_path: Path, toy_upstream: SyntheticUpstream
) -> None:
    cfg = _project(tmp_path, toy_upstream, TWO_PATCHES)
    tree = materialize(cfg)
    scratch = tree.path / "tests" / "test_scratch.py"
    scratch.write_text("def test_x():\n    pass\n")
    assert materialize(cfg) == tree  # up to date: nothing would be deleted
    # A new series needs a rebuild, which would delete the untracked file.
    lines = cfg.series_file.read_text().splitlines()
    cfg.series_file.write_text(lines[0] + "\n")
    with pytest.raises(ForkkitError, match=r"test_scratch\.py\) would be lost"):
        materialize(cfg)
    assert scratch.exists()
    materialize(cfg, force=True)
    assert not scratch.exists()


def test_shas_are_reproducible(tmp_path: Path, toy_upstream: SyntheticUpstream) -> None:
    cfg = _project(tmp_path, toy_upstream, TWO_PATCHES)
    one = materialize(cfg)
    other = dataclasses.replace(cfg, workdir=tmp_path / "elsewhere")
    two = materialize(other)
    assert two.path != one.path
    assert (two.base, two.base_tree, two.head) == (one.base, one.base_tree, one.head)
    assert two.patch_commits == one.patch_commits


def test_git_source_mode(tmp_path: Path, toy_upstream: SyntheticUpstream) -> None:
    cfg = _project(tmp_path, toy_upstream, TWO_PATCHES)
    gcfg = cfg.with_upstream(source="git", git_rev="v1.0")
    tree = materialize(gcfg, dest=tmp_path / "gfork")
    upstream = Git(toy_upstream.bare)
    assert tree.upstream_commit == toy_upstream.rev("1.0")
    assert tree.base_tree == upstream.out("rev-parse", "v1.0^{tree}")
    # a tag or branch is named by the commit it was at: it never freezes
    commit = toy_upstream.rev("1.0")
    assert tree.upstream == f"git:{toy_upstream.bare.as_uri()}@{commit}"
    assert tree.upstream_label == f"toy@{commit[:12]}"
    assert _subjects(Git(tree.path)) == [s for s, _ in TWO_PATCHES]
    # the same files as the sdist: the same base tree and patched tree
    sdist_tree = materialize(cfg)
    assert sdist_tree.base_tree == tree.base_tree
    assert Git(sdist_tree.path).out("rev-parse", "HEAD^{tree}") == Git(tree.path).out(
        "rev-parse", "HEAD^{tree}"
    )
    assert materialize(gcfg, dest=tmp_path / "gfork") == tree  # fast path
    # a plain path to the bare repo works as well as a file:// URL
    plain = cfg.with_upstream(
        source="git", git_rev="v1.0", git_url=str(toy_upstream.bare)
    )
    assert materialize(plain, dest=tmp_path / "plain").base_tree == tree.base_tree


def test_git_source_without_url_is_a_clear_error(toy_project: ForkConfig) -> None:
    with pytest.raises(ForkkitError, match="source 'git' needs git_url and git_rev"):
        toy_project.with_upstream(source="git", git_url="", git_rev="v1.0")


def test_missing_series_entry(toy_project: ForkConfig) -> None:
    with toy_project.series_file.open("a") as fh:
        fh.write("# a comment\n0009-missing.patch\n")
    with pytest.raises(
        ForkkitError, match=r"^series:3: patch '0009-missing\.patch' not found in "
    ):
        materialize(toy_project)


def test_export_round_trip(tmp_path: Path, toy_upstream: SyntheticUpstream) -> None:
    cfg = _project(tmp_path, toy_upstream, TWO_PATCHES)
    cfg.series_file.write_text("# the carried fix\n" + cfg.series_file.read_text())
    tree = materialize(cfg)
    git = Git(tree.path)
    # new work goes on top of the built series, one commit per new patch
    (tree.path / "toy/other.py").write_text("def name():\n    return 'fork'\n")
    git.run(
        "commit",
        "-q",
        "-a",
        "-m",
        RENAME_MSG,
    )
    edited_tree = git.out("rev-parse", "HEAD^{tree}")

    names = list(_export(cfg, tree).names)
    assert names == [
        "0001-Bugfix-limit-reaches-n.patch",
        "0002-Test-regression-test-for-limit.patch",
        "0003-Misc-rename.patch",
    ]
    assert cfg.series_file.read_text().splitlines() == ["# the carried fix", *names]
    assert sorted(p.name for p in cfg.patches_dir.glob("*.patch")) == names
    series = load_series(cfg.series_file, cfg.patches_dir)
    assert [p.subject for p in series.patches] == [
        "[Bugfix] limit reaches n",
        "[Test] regression test for limit",
        "[Misc] rename",
    ]
    # The fork tree now is what materialize builds: the next call is a no-op.
    rebuilt = materialize(cfg)
    assert Git(rebuilt.path).out("rev-parse", "HEAD^{tree}") == edited_tree
    assert rebuilt.series_digest == series.digest
    elsewhere = materialize(dataclasses.replace(cfg, workdir=tmp_path / "wd2"))
    assert elsewhere.head == rebuilt.head
    assert rebuilt == dataclasses.replace(elsewhere, path=rebuilt.path)


def test_failed_export_writes_nothing(toy_project: ForkConfig) -> None:
    cfg = toy_project
    tree = materialize(cfg)
    before = _snapshot(cfg.patches_dir)

    def export() -> None:
        _export(cfg, tree)

    (tree.path / "toy/calc.py").write_text("dirty\n")
    with pytest.raises(ForkkitError, match="uncommitted or untracked files"):
        export()
    Git(tree.path).run("checkout", "-q", "--", ".")
    # an empty commit cannot be a patch
    Git(tree.path).run(
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "[Misc] nothing\n\nForkkit-Fix: toy-fix",
    )
    with pytest.raises(
        ForkkitError, match=r"0002-Misc-nothing\.patch.*nothing written"
    ):
        export()
    Git(tree.path).run("reset", "-q", "--hard", tree.head)
    # a merge is not a series
    Git(tree.path).run("checkout", "-q", "-b", "side", BASE_TAG)
    (tree.path / "toy/other.py").write_text("x = 1\n")
    Git(tree.path).run("commit", "-q", "-a", "-m", "side")
    Git(tree.path).run("checkout", "-q", FORK_BRANCH)
    Git(tree.path).run("merge", "-q", "--no-edit", "side")
    with pytest.raises(ForkkitError, match=r"merge commit .* must be linear"):
        export()
    # HEAD not on top of base
    Git(tree.path).run("checkout", "-q", "--orphan", "other")
    Git(tree.path).run("commit", "-q", "-m", "unrelated")
    with pytest.raises(ForkkitError, match="on branch other, not 'fork'"):
        export()
    assert _snapshot(cfg.patches_dir) == before
    assert not list(cfg.patches_dir.parent.glob("*export*"))


def test_forktree_json_round_trip(toy_project: ForkConfig) -> None:
    tree = materialize(toy_project)
    data = json.loads(json.dumps(tree.to_json()))
    assert ForkTree.from_state(tree.path, data) == tree


def test_never_clobbers_a_foreign_folder(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("precious\n")
    with pytest.raises(ForkkitError, match="not empty and not a fork tree"):
        materialize(toy_project, dest=mine)
    assert not (mine / ".git").exists()
    repo = Git.init(tmp_path / "repo")
    (repo.cwd / "work.py").write_text("x = 1\n")
    repo.run("add", "-A")
    repo.run("commit", "-q", "-m", "mine")
    for force in (False, True):  # --force never resets a foreign repository
        with pytest.raises(ForkkitError, match="a git repository forkkit did not"):
            materialize(toy_project, dest=repo.cwd, force=force)
    assert (repo.cwd / "work.py").exists()


def test_state_of_another_version_is_rebuilt(toy_project: ForkConfig) -> None:
    tree = materialize(toy_project)
    git = Git(tree.path)
    odd = git.run("hash-object", "-w", "--stdin", input='{"head": 1}').stdout.strip()
    git.run("update-ref", forkstate.STATE_REF, odd)
    assert materialize(toy_project) == tree
    assert git.rev(forkstate.STATE_REF + "^{blob}") != odd


def test_a_rewritten_series_exports_only_with_rewrite(
    tmp_path: Path, toy_upstream: SyntheticUpstream
) -> None:
    cfg = _project(tmp_path, toy_upstream, TWO_PATCHES)
    tree = materialize(cfg)
    git = Git(tree.path)
    # amend patch 1 (rebase -i / commit --amend) and replay patch 2 on it
    git.run("checkout", "-q", "HEAD~1")
    (tree.path / "toy/calc.py").write_text(FIXED_CALC.replace("2 * n", "n + n"))
    git.run("commit", "-q", "-a", "--amend", "--no-edit")
    git.run("cherry-pick", tree.head)
    git.run("checkout", "-q", "-B", FORK_BRANCH, "HEAD")
    before = _snapshot(cfg.patches_dir)
    with pytest.raises(ForkkitError, match="rerun with --rewrite"):
        _export(cfg, tree)
    assert _snapshot(cfg.patches_dir) == before
    result = export_series(cfg, dest=tree.path, rewrite=True)
    assert len(result.names) == 2
    assert "+    return n + n" in (cfg.patches_dir / result.names[0]).read_text()
    assert materialize(cfg).head != tree.head


def test_export_refuses_a_commit_that_names_no_fix(
    tmp_path: Path, toy_upstream: SyntheticUpstream
) -> None:
    """#47 item 5: a commit without the ``Forkkit-Fix:`` trailer is one line
    naming the commit and the fix whose files it changes; nothing written."""
    cfg = _project(tmp_path, toy_upstream, TWO_PATCHES)
    tree = materialize(cfg)
    git = Git(tree.path)
    (tree.path / "toy/calc.py").write_text("def limit(n):\n    return n\n")
    git.run("commit", "-q", "-a", "-m", "[Misc] tidy\n\nSigned-off-by: t <t@t>")
    commit = git.out("rev-parse", "HEAD")
    before = _snapshot(cfg.patches_dir)
    with pytest.raises(ForkkitError) as got:
        _export(cfg, tree)
    message = str(got.value)
    assert len(message.splitlines()) == 1
    assert f"commit {commit[:12]} ([Misc] tidy)" in message
    assert "add one naming toy-fix" in message
    assert _snapshot(cfg.patches_dir) == before
