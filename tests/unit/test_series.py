"""Parsing the patch series (pure) and loading it from disk."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from forkkit.errors import ForkkitError
from forkkit.fork.seriesfiles import load_series
from forkkit.patches.series import (
    failed_hunk,
    hunk_at,
    parse_patch_text,
    parse_series_file,
    series_entries,
)
from tests.synthetic import BUGGY, FIX_TEST, FIXED_CALC, make_patches

PATCH = textwrap.dedent(
    """\
    From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
    From: Dev <dev@example.com>
    Date: Sat, 1 Jan 2000 00:00:00 +0000
    Subject: [PATCH 2/3] [Bugfix][Spec Decode] Recover Mamba checkpoints on
     EAGLE/MTP prompt resends

    Body text.

    Signed-off-by: Dev <dev@example.com>
    ---
     a/x.py | 4 ++--
     2 files changed

    diff --git a/pkg/x.py b/pkg/x.py
    index 1111111..2222222 100644
    --- a/pkg/x.py
    +++ b/pkg/x.py
    @@ -3,3 +3,3 @@ def f():
     a
    -b
    +B
     c
    @@ -40 +40 @@ class K:
    -y
    +Y
    diff --git a/pkg/old.py b/pkg/new.py
    similarity index 90%
    rename from pkg/old.py
    rename to pkg/new.py
    --- a/pkg/old.py
    +++ b/pkg/new.py
    @@ -10,2 +10,2 @@
    --- a/looks/like/a/header
    +++ b/looks/like/a/header
     context
    @@ -20 +20 @@
    -r
    +R
    diff --git a/tests/test_new.py b/tests/test_new.py
    new file mode 100644
    --- /dev/null
    +++ b/tests/test_new.py
    @@ -0,0 +1,2 @@
    +def test():
    +    pass
    --
    2.39.5
    """
)


def test_parse_patch_text() -> None:
    patch = parse_patch_text(PATCH, Path("p/0002-x.patch"))
    assert patch.name == "0002-x.patch"
    assert patch.subject == (
        "[Bugfix][Spec Decode] Recover Mamba checkpoints on EAGLE/MTP prompt resends"
    )
    assert patch.files == ("pkg/x.py", "pkg/new.py", "tests/test_new.py")
    assert [
        (h.path, h.index, h.count, h.old_start, h.old_len) for h in patch.hunks
    ] == [
        ("pkg/x.py", 1, 2, 3, 3),
        ("pkg/x.py", 2, 2, 40, 1),
        ("pkg/new.py", 1, 2, 10, 2),
        ("pkg/new.py", 2, 2, 20, 1),
        ("tests/test_new.py", 1, 1, 0, 0),
    ]
    assert patch.hunks[1].describe() == "hunk 2/2 of pkg/x.py (@@ -40 +40 @@ class K:)"


def test_parse_encoded_subject() -> None:
    text = PATCH.replace(
        "Subject: [PATCH 2/3] [Bugfix][Spec Decode] Recover Mamba checkpoints on\n"
        " EAGLE/MTP prompt resends",
        "Subject: [PATCH] =?UTF-8?q?[Core]=20caf=C3=A9=20fix?=",
    )
    assert parse_patch_text(text, Path("x.patch")).subject == "[Core] café fix"


def test_parse_rejects_non_patches() -> None:
    with pytest.raises(ForkkitError, match=r"^notes\.txt: not a git-format patch"):
        parse_patch_text("Subject: hi\n\njust text\n", Path("notes.txt"))


def test_parse_rejects_hunks_shorter_than_their_header() -> None:
    text = PATCH.replace("\n context\n", "\n", 1)  # @@ -10,2 +10,2 @@ lacks a line
    with pytest.raises(ForkkitError, match=r"^x\.patch: not a unified diff \(Hunk"):
        parse_patch_text(text, Path("x.patch"))


def test_hunk_at() -> None:
    patch = parse_patch_text(PATCH, Path("x.patch"))
    assert hunk_at(patch, "pkg/x.py", 40) == patch.hunks[1]  # exact start
    assert hunk_at(patch, "pkg/x.py", 5) == patch.hunks[0]  # inside the range
    assert hunk_at(patch, "pkg/x.py", 100) == patch.hunks[0]  # fallback: first
    assert hunk_at(patch, "nope.py", 1) is None
    assert failed_hunk(patch, "pkg/x.py", 40) == patch.hunks[1].describe()
    assert failed_hunk(patch, "nope.py", 7) == "nope.py line 7"


def test_series_file_parsing() -> None:
    text = "# the fix\n\n0001-a.patch\n0002-b.patch -p1  # trailing\n  \n"
    assert parse_series_file(text) == ["0001-a.patch", "0002-b.patch"]
    assert series_entries(text) == [(3, "0001-a.patch"), (4, "0002-b.patch")]


def _write_patches(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    patches = tmp_path / "patches"
    names = make_patches(
        BUGGY,
        [
            ("[Bugfix] limit reaches n", {"toy/calc.py": FIXED_CALC}),
            ("[Test] regression test", {"tests/test_fix.py": FIX_TEST}),
        ],
        patches,
    )
    series = patches / "series"
    series.write_text("".join(f"{n}\n" for n in names))
    return series, patches, names


def test_load_series(tmp_path: Path) -> None:
    series_file, patches, names = _write_patches(tmp_path)
    series = load_series(series_file, patches)
    assert [p.name for p in series.patches] == names
    assert [p.subject for p in series.patches] == [
        "[Bugfix] limit reaches n",
        "[Test] regression test",
    ]
    assert series.patches[0].files == ("toy/calc.py",)
    assert series.patches[1].files == ("tests/test_fix.py",)
    assert all(p.path.is_absolute() for p in series.patches)
    # The digest covers the exact bytes and the order.
    digest = series.digest
    assert load_series(series_file, patches).digest == digest
    series_file.write_text("".join(f"{n}\n" for n in reversed(names)))
    assert load_series(series_file, patches).digest != digest
    series_file.write_text("".join(f"{n}\n" for n in names))
    p = patches / names[1]
    p.write_text(p.read_text().replace("Signed-off-by", "Signed-off-By"))
    assert load_series(series_file, patches).digest != digest


def test_load_series_errors(tmp_path: Path) -> None:
    series_file, patches, names = _write_patches(tmp_path)
    with pytest.raises(ForkkitError, match=r"nothere: missing; list the patches"):
        load_series(tmp_path / "nothere", patches)
    series_file.write_text(f"{names[0]}\n# gone:\n0003-gone.patch\n")
    with pytest.raises(
        ForkkitError, match=r"^series:3: patch '0003-gone\.patch' not found in "
    ):
        load_series(series_file, patches)
    series_file.write_text(f"{names[0]}\n{names[0]}\n")
    with pytest.raises(ForkkitError, match=r"^series:2: .* listed twice"):
        load_series(series_file, patches)


def test_empty_series(tmp_path: Path) -> None:
    (tmp_path / "series").write_text("# nothing carried yet\n")
    series = load_series(tmp_path / "series", tmp_path)
    assert series.patches == ()
