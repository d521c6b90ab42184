# SPDX-License-Identifier: Apache-2.0
"""The crash contract, checked at write points rather than at chosen lines
(issue 24, 1): each command runs once counting its write points
(``FORKKIT_FAULT=count:FILE``, :mod:`forkkit.faults`), then once per chosen
point on a fresh copy of the project, killed there (SIGKILL, or Ctrl-C twice).
After each crash: ``patches/`` and ``fork.toml`` are byte-identical to before
or completely updated, ``status`` and the next plain ``materialize`` work
without ``--force``, and no red/green report stands for a run that did not
finish.

The tests session checks a sample of points per command; ``./dev -s crash``
checks every one (``FORKKIT_CRASH=all``) and prints the count per command.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.synthetic import (
    BUGGY,
    CALC_CONTEXT_MOVED,
    CALC_FIXED_BY_DECORATOR,
    COUNT_FIXED,
    COUNT_TEST,
    SyntheticUpstream,
    make_patches,
    make_project,
    toy_release,
    toy_testenv_python,
    write_patch,
)

SRC = str(Path(__file__).parents[2] / "src")
SAMPLE = 6  # points per command in the tests session, shared by the kinds
KINDS = ("kill", "int2")  # SIGKILL, and Ctrl-C twice
pytestmark = pytest.mark.contract


def _forkkit(root: Path, *args: str, fault: str = "") -> int:
    """Run forkkit in ``root``; its exit code (stderr kept in ``LAST``). Its
    temporary files go to ``root``'s own :func:`_tmp` folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORKKIT_")}
    env |= {"PYTHONPATH": SRC, "FORKKIT_TESTENV_PYTHON": toy_testenv_python()}
    env["TMPDIR"] = str(_tmp(root))
    if fault:
        env["FORKKIT_FAULT"] = fault
    proc = subprocess.run(
        [sys.executable, "-m", "forkkit", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    LAST[:] = [proc.stderr]
    return proc.returncode


LAST: list[str] = [""]


def _tmp(root: Path) -> Path:
    """The temporary folder of the runs in ``root`` (beside it, not in it)."""
    tmp = root.with_name(f"{root.name}.tmp")
    tmp.mkdir(exist_ok=True)
    return tmp


def _litter(root: Path) -> list[str]:
    """What a crashed command left that no later command removes: files in
    the temporary folder, and forkkit's own staging folders in the workdir."""
    left = [f"$TMPDIR/{p.name}" for p in _tmp(root).iterdir()]
    work = root / ".forkkit"
    return left + [f".forkkit/{p.name}" for p in work.glob("fix-add-*")]


def _user_files(root: Path, *, staged: bool = True) -> dict[str, bytes]:
    """fork.toml and patches/; ``staged``: with forkkit's hidden staging
    files (present between a crash and the recovery of the next command)."""
    files = {"fork.toml": (root / "fork.toml").read_bytes()}
    for p in sorted((root / "patches").iterdir()):
        if p.is_file() and (staged or not p.name.startswith(".")):
            files[f"patches/{p.name}"] = p.read_bytes()
    return files


def _differs(got: dict[str, bytes], want: dict[str, bytes]) -> str:
    """The files that differ, with the first differing line of each."""
    out = []
    for name in sorted(got.keys() | want.keys()):
        a, b = got.get(name), want.get(name)
        if a == b:
            continue
        if a is None or b is None:
            out.append(f"{name}: {'missing' if a is None else 'extra'}")
            continue
        pairs = zip(a.splitlines(), b.splitlines(), strict=False)
        first = next(((x, y) for x, y in pairs if x != y), (b"(length)", b""))
        out.append(f"{name}: {first[0]!r} != {first[1]!r}")
    return "; ".join(out)


def _one_of(
    got: dict[str, bytes], before: dict[str, bytes], after: dict[str, bytes]
) -> str:
    """'' when ``got`` is ``before`` or ``after``; else how it differs."""
    if got in (before, after):
        return ""
    return f"vs before: {_differs(got, before)} | vs after: {_differs(got, after)}"


def _committed(root: Path) -> bool:
    """A journal in its commit state: the next command finishes it."""
    journal = root / ".forkkit-txn.json"
    return journal.exists() and json.loads(journal.read_text())["state"] == "commit"


def _materialized(root: Path) -> None:
    assert _forkkit(root, "materialize") == 0


def _with_a_commit(root: Path) -> None:
    _materialized(root)
    fork = root / ".forkkit" / "fork"
    (fork / "toy" / "new.py").write_text("NEW = 1\n")
    git = ["git", "-C", str(fork), "-c", "user.name=U", "-c", "user.email=u@x"]
    subprocess.run([*git, "add", "toy/new.py"], check=True)
    message = "[Misc] new\n\nForkkit-Fix: toy-fix"
    subprocess.run([*git, "commit", "-q", "-m", message], check=True)


REBASE = ["rebase", "--onto", "toy==1.1", "--apply", "--apply-unproven"]
RECONCILE = ["reconcile", "--with", "their.patch", "--resend", "off"]


# name -> (set-up, the command, the next plain command after a crash)
def _with_a_competitor(root: Path) -> None:
    _materialized(root)
    write_patch(BUGGY, {"toy/calc.py": CALC_FIXED_BY_DECORATOR}, root / "their.patch")


def _with_a_new_fix(root: Path) -> None:
    """A second fix as a plain git format-patch file, beside the project."""
    _materialized(root)
    change = {"toy/count.py": COUNT_FIXED, "tests/test_count.py": COUNT_TEST}
    make_patches(BUGGY, [("[Bugfix] count", change)], root / "new", fix_ids=[""])


FIX_ADD = ["fix", "add", "count", "new/0001-Bugfix-count.patch", "--related"]


def _with_a_plain_diff(root: Path) -> None:
    """A second fix as a plain diff of two files (a vendor's shape)."""
    _with_a_new_fix(root)
    text = (root / "new" / "0001-Bugfix-count.patch").read_text()
    body = text[text.index("diff --git ") :]
    end = body.rindex("\n-- \n") + 1 if "\n-- \n" in body else len(body)
    (root / "new" / "count.diff").write_text(body[:end])


# #46: one transaction writes every part of a split diff
FIX_SPLIT = ["fix", "add", "count", "new/count.diff", "--split", "files", "--related"]


FIX_RELATED = [
    "fix",
    "related",
    "toy-fix",
    "--drop",
    "tests",
    "--add",
    "tests/test_fix.py",
]


def _with_a_waiting_fix(root: Path) -> None:
    """A second fix, without a test, on the file toy 1.2 rewrites: on 1.2 it
    conflicts while the first moves (a partial --apply)."""
    _materialized(root)
    change = {"toy/other.py": BUGGY["toy/other.py"].replace("'toy'", "'fork'")}
    make_patches(BUGGY, [("[Misc] name", change)], root / "new", fix_ids=[""])
    add = ["fix", "add", "name", "new/0001-Misc-name.patch", "--related"]
    assert _forkkit(root, *add, "--untested", "a name only") == 0, LAST[0][-900:]


# #46: the conflict waits in patches/pending.toml, the rest is written
PARTIAL = ["rebase", "--onto", "toy==1.2", "--apply", "--apply-unproven"]


# name -> (set-up, the command, the next plain command after a crash)
SCENARIOS: dict[str, tuple[Callable[[Path], None], list[str], list[str]]] = {
    "materialize": (lambda root: None, ["materialize"], ["materialize"]),
    "export": (_with_a_commit, ["export"], ["export"]),
    "rebase --apply": (_materialized, [*REBASE, "--no-red-green"], ["materialize"]),
    # --parallel on: auto packs only on an idle machine, and the counted run
    # must reach the same write points as every crashed one
    "red-green": (
        _materialized,
        ["red-green", "--no-related", "--parallel", "on"],
        ["red-green"],
    ),
    "reconcile": (_with_a_competitor, RECONCILE, RECONCILE),
    "watch": (_materialized, ["watch", "--focused-only"], ["watch", "--focused-only"]),
    "fix add": (_with_a_new_fix, FIX_ADD, ["materialize"]),
    "fix add --split": (_with_a_plain_diff, FIX_SPLIT, ["materialize"]),
    # #47: fork.toml rewritten in one transaction
    "fix related": (_materialized, FIX_RELATED, ["materialize"]),
    "rebase --apply (partial)": (
        _with_a_waiting_fix,
        [*PARTIAL, "--no-red-green"],
        ["materialize"],
    ),
}


def _points(names: list[str], *, kind: str) -> list[int]:
    """The write points to crash at: all (``FORKKIT_CRASH=all``), a list
    (``FORKKIT_CRASH=3,7``), or a sample: evenly spread, plus the first move
    after each commit point (where a half-finished update is likeliest),
    shared out between the two kinds of crash in turn (each point of the
    sample is crashed once, by one of them)."""
    total = len(names)
    chosen = os.environ.get("FORKKIT_CRASH", "")
    if chosen[:1].isdigit():  # a list of points, to look at one crash state
        return [int(n) for n in chosen.split(",") if int(n) <= total]
    if chosen == "all":
        return list(range(1, total + 1))
    return _sample(names)[KINDS.index(kind) :: len(KINDS)]


def _sample(names: list[str]) -> list[int]:
    """Up to ``SAMPLE`` points evenly spread, plus the first move after each
    commit point."""
    total = len(names)
    if total <= SAMPLE:
        return list(range(1, total + 1))
    step = (total - 1) / (SAMPLE - 1)
    spread = {1 + round(i * step) for i in range(SAMPLE)}
    moves = {
        i + 1
        for i, what in enumerate(names)
        if what.startswith("move") and (i == 0 or not names[i - 1].startswith("move"))
    }
    return sorted(spread | moves)


def _check_report(root: Path) -> None:
    """A red/green report present after a crash is a finished, whole one:
    its summary, and each fix's report it names."""
    folder = root / ".forkkit" / "reports" / "red_green"
    summary = folder / "summary.json"
    if summary.exists():
        assert not (folder / "FAILED.txt").exists()
        for row in json.loads(summary.read_text())["fixes"]:
            report = folder / row["fix"] / "red_green.json"
            assert isinstance(json.loads(report.read_text())["valid"], bool)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_write_point_recovers(
    tmp_path: Path,
    toy_upstream: SyntheticUpstream,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    kind: str,
) -> None:
    monkeypatch.delenv("FORKKIT_WORKDIR", raising=False)
    toy_upstream.publish("1.1", toy_release({"toy/calc.py": CALC_CONTEXT_MOVED}))
    other = BUGGY["toy/other.py"].replace("'toy'", "'upstream'")
    moved = {"toy/calc.py": CALC_CONTEXT_MOVED, "toy/other.py": other}
    toy_upstream.publish("1.2", toy_release(moved))
    template = tmp_path / "template"
    make_project(template, toy_upstream, "1.0")
    setup, args, again = SCENARIOS[name]
    setup(template)
    before = _user_files(template)
    counted = tmp_path / "counted"
    shutil.copytree(template, counted, symlinks=True)
    log = tmp_path / "points.txt"
    ended = _forkkit(counted, *args, fault=f"count:{log}")  # the uncrashed run
    # a verdict (watch: 10, 30 ...; reconcile: 1 = partly measured), not an error
    assert ended != 2 and 0 <= ended < 64, LAST[0][-2000:]
    after = _user_files(counted)
    names = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    total = len(names)
    assert total > 0
    checked = 0
    for n in _points(names, kind=kind):
        root = tmp_path / f"{kind}-{n}"
        shutil.copytree(template, root, symlinks=True)
        rc = _forkkit(root, *args, fault=f"{kind}:{n}")
        assert rc != 0, f"{name}: point {n} of {total} did not stop it: {LAST[0]}"
        crashed = _user_files(root, staged=False)
        if not _committed(root):  # a killed commit: the next command ends it
            assert not (d := _one_of(crashed, before, after)), f"{name} {n}: {d}"
        assert _forkkit(root, "status") == 0, f"{name}: point {n}"
        want = ended if again == args else 0
        got = _forkkit(root, *again)
        assert got == want, f"{name} {n}, {again}: {LAST[0][-900:]}"
        d = _one_of(_user_files(root), before, after)
        assert not d, f"{name} {n}, after {again}: {d}"
        _check_report(root)
        assert not (left := _litter(root)), f"{name} {n}: left behind: {left}"
        shutil.rmtree(root)
        checked += 1
    summary = os.environ.get("FORKKIT_CRASH_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(
                json.dumps(
                    {"command": name, "kind": kind, "points": total, "checked": checked}
                )
                + "\n"
            )
