# SPDX-License-Identifier: Apache-2.0
"""#46 item 1: ``fix add`` takes what carriers have, a plain unified diff
(``git diff``, a ``-p0`` diff with labels, ``diff -ruN``), whole or split
per file or folder; a bad one is one line and nothing is written. Real git
on a toy upstream."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from forkkit import cli
from forkkit.config import load_config
from forkkit.line import Line
from forkkit.patches.plaindiff import DEFAULT_AUTHOR, is_mail, unlabelled
from tests.synthetic import (
    BUGGY,
    SyntheticUpstream,
    make_patches,
    make_project,
    toy_fix_changes,
)


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".forkkit" not in p.parts
    }


def _git_diff(tmp_path: Path) -> str:
    """The toy fix as ``git diff`` prints it: no mail header."""
    (name,) = make_patches(BUGGY, toy_fix_changes(), tmp_path / "mine", fix_ids=[""])
    text = (tmp_path / "mine" / name).read_text()
    body = text[text.index("diff --git ") :]
    return body[: body.rindex("\n-- \n") + 1] if "\n-- \n" in body else body


def _p0_labelled(diff: str) -> str:
    """The same diff as ``-p0`` with labels, the other shape vendors use."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("diff --git ", "index ")):
            continue
        if line.startswith("--- a/"):
            line = f"--- {line[6:]} (v1.0 upstream)"
        elif line.startswith("+++ b/"):
            line = f"+++ {line[6:]} (fork)"
        elif line.startswith("--- /dev/null"):
            line = "--- /dev/null"
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.fixture
def project(toy_upstream: SyntheticUpstream, tmp_path: Path) -> Path:
    cfg = make_project(tmp_path / "proj", toy_upstream, "1.0", [], fix_ids=[])
    return cfg.path


def _add(config: Path, *args: str) -> int:
    return cli.main(["--config", str(config), "fix", "add", *args])


def test_a_plain_git_diff_is_one_patch_naming_its_source(
    project: Path, tmp_path: Path
) -> None:
    diff = tmp_path / "vendor.diff"
    diff.write_text(_git_diff(tmp_path))
    assert not is_mail(diff.read_text())
    assert _add(project, "limit", str(diff)) == 0
    cfg = load_config(project)
    (name,) = [p.name for p in sorted((cfg.patches_dir).glob("*.patch"))]
    text = (cfg.patches_dir / name).read_text()
    assert name == "0001-vendor.diff.patch"
    assert f"From: {DEFAULT_AUTHOR}\n" in text
    assert "Subject: [PATCH] Import vendor.diff\n" in text
    assert "Imported from vendor.diff, a plain diff.\n\nForkkit-Fix: limit\n---\n" in (
        text
    )
    assert [d.id for d in cfg.fixes] == ["limit"]


@pytest.mark.parametrize("how", ["files", "dirs"])
def test_split_one_patch_per_file_or_folder(
    project: Path, tmp_path: Path, how: str
) -> None:
    diff = tmp_path / "vendor.diff"
    diff.write_text(_p0_labelled(_git_diff(tmp_path)))
    args = ["--split", how, "--author", "Vendor <v@example.com>", "--subject", "Port"]
    assert _add(project, "limit", str(diff), *args) == 0
    cfg = load_config(project)
    names = (cfg.series_file).read_text().split()
    texts = [(cfg.patches_dir / n).read_text() for n in names]
    # toy/calc.py and tests/test_fix.py: two files in two top folders
    assert len(names) == 2
    assert all("From: Vendor <v@example.com>\n" in t for t in texts)
    assert "Subject: [PATCH] Port: tests" in texts[0]
    first, second = (
        ("tests/test_fix.py", "toy/calc.py")
        if how == "files"
        else (
            "tests",
            "toy",
        )
    )
    assert f"\n\nPart 1 of 2 of vendor.diff: {first}.\n" in texts[0]
    assert f"\n\nPart 2 of 2 of vendor.diff: {second}.\n" in texts[1]
    assert all("\nForkkit-Fix: limit\n---\n" in t for t in texts)
    # the fix is derived from its parts as from any patches
    fix = Line.of(cfg).fix("limit")
    assert (fix.runtime_files, fix.test_files) == (
        ("toy/calc.py",),
        ("tests/test_fix.py",),
    )


def test_a_diff_ruN_with_epoch_dates_creates_the_new_file(
    project: Path, tmp_path: Path
) -> None:
    diff = tmp_path / "new.diff"
    diff.write_text(
        "diff -ruN old/toy/extra.py new/toy/extra.py\n"
        "--- old/toy/extra.py\t1970-01-01 00:00:00.000000000 +0000\n"
        "+++ new/toy/extra.py\t2026-01-01 00:00:00.000000000 +0000\n"
        "@@ -0,0 +1 @@\n"
        "+X = 1\n"
    )
    assert _add(project, "extra", str(diff), "--related", "--untested", "a toy") == 0
    cfg = load_config(project)
    (name,) = cfg.series_file.read_text().split()
    assert "new file mode 100644" in (cfg.patches_dir / name).read_text()


def test_labels_are_dropped_only_from_file_headers() -> None:
    text = "--- a.py (v1 upstream)\n+++ a.py (fork)\n@@ -1 +1 @@\n--- x (y)\n+z\n"
    assert unlabelled(text).splitlines()[:2] == ["--- a.py", "+++ a.py"]
    assert unlabelled(text).splitlines()[3] == "--- x (y)"


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda d: d.replace("\n", "\r\n"), "CRLF"),
        (lambda d: "just some text\n", "not a diff"),
        (lambda d: d.replace("\n-", "\n-gone ", 1), "does not apply"),
        (
            lambda d: "--- a/../../up.py\n+++ b/../../up.py\n@@ -0,0 +1 @@\n+x\n",
            "does not apply",
        ),
    ],
    ids=["crlf", "not-a-diff", "hunk", "outside"],
)
def test_a_bad_diff_is_one_line_and_nothing_is_written(
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: object,
    says: str,
) -> None:
    assert callable(make)
    diff = tmp_path / "bad.diff"
    diff.write_bytes(make(_git_diff(tmp_path)).encode())
    before = _files(project.parent)
    capsys.readouterr()
    assert _add(project, "bad", str(diff)) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert len(err) == 1 and says in err[0] and "bad.diff" in err[0], err
    assert _files(project.parent) == before


def test_a_failing_hunk_is_named(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    diff = tmp_path / "bad.diff"
    text = _git_diff(tmp_path)
    old = next(
        ln for ln in text.splitlines() if ln[:1] == "-" and not ln.startswith("---")
    )
    diff.write_text(text.replace(old + "\n", old + "_changed\n", 1))
    capsys.readouterr()
    assert _add(project, "bad", str(diff)) == 2
    err = capsys.readouterr().err
    assert re.search(r"toy/calc\.py @@ -\d+(,\d+)? \+\d+(,\d+)? @@", err), err


def test_a_file_s_own_crlf_lines_are_its_content(project: Path, tmp_path: Path) -> None:
    """Only a converted diff (CRLF headers) is refused: a vendor diff may
    add a file whose lines end in CRLF, and git keeps them."""
    diff = tmp_path / "win.diff"
    diff.write_bytes(
        b"--- /dev/null\n+++ b/toy/win.bat\n@@ -0,0 +1,2 @@\n+echo a\r\n+echo b\r\n"
    )
    assert _add(project, "win", str(diff), "--related", "--untested", "a toy") == 0
    cfg = load_config(project)
    (name,) = cfg.series_file.read_text().split()
    assert b"+echo a\r\n" in (cfg.patches_dir / name).read_bytes()
