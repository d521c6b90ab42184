# SPDX-License-Identifier: Apache-2.0
"""The exit-code tables (#34 item 4): :class:`ExitTable`, and the places that
repeat watch's codes outside Python (the noxfile, the workflow comment)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from forkkit.output.verdicts import ERROR_EXIT, SIGNAL_EXIT, ExitTable
from forkkit.services.watch.model import EXITS, PASSING

ROOT = Path(__file__).resolve().parents[2]


def test_a_table_gives_each_verdict_its_code_and_lists_the_shared_ones() -> None:
    table = ExitTable(
        rows={"ok": (0, "it worked"), "bad": (1, "it did not")}, errors="no config"
    )
    assert table.verdicts == ("ok", "bad")
    assert (table.code("ok"), table.code("bad"), table.meaning("bad")) == (
        0,
        1,
        "it did not",
    )
    text = table.epilog()
    assert text.startswith("exit codes:\n  0   ok: it worked\n  1   bad: it did not\n")
    assert f"  {ERROR_EXIT:<3} bad input or an error (no config)\n" in text
    for name, code in SIGNAL_EXIT.items():
        assert f"  {code} interrupted by {name}\n" in text


def test_a_long_meaning_wraps_under_itself() -> None:
    table = ExitTable(rows={"ok": (0, "word " * 30)})
    lines = table.epilog().splitlines()
    assert lines[1].startswith("  0   ok: word") and len(lines[1]) <= 79
    assert lines[2].startswith("      word")


@pytest.mark.parametrize(
    "rows",
    [
        {},
        {"a": (0, ""), "b": (0, "")},  # one code, two verdicts
        {"a": (ERROR_EXIT, "")},  # the error code
        {"a": (SIGNAL_EXIT["SIGTERM"], "")},  # a signal's
        {"a": (126, "")},  # the shell's (not executable, not found, signals)
    ],
)
def test_a_table_refuses_shared_reserved_or_no_codes(
    rows: dict[str, tuple[int, str]],
) -> None:
    with pytest.raises(ValueError):
        ExitTable(rows=rows)


def test_a_table_cannot_change() -> None:
    rows = {"ok": (0, "fine")}
    table = ExitTable(rows=rows)
    rows["ok"] = (3, "changed")
    assert table.code("ok") == 0
    with pytest.raises(TypeError):
        table.rows["ok"] = (3, "x")  # type: ignore[index]


def _success_codes(session: str) -> list[int]:
    """The ``success_codes`` of the noxfile session's ``forkkit watch`` run."""
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    func = next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == session
    )
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and "watch" in ast.unparse(node):
            for kw in node.keywords:
                if kw.arg == "success_codes":
                    return list(ast.literal_eval(kw.value))
    raise AssertionError(f"noxfile.py: {session} runs no forkkit watch")


def test_the_noxfile_passes_on_the_watch_verdicts_the_table_names() -> None:
    """``nox -s watch`` passes on :data:`PASSING` only; ``nox -s history``
    on every verdict (the history is measured whatever the newest says)."""
    assert _success_codes("watch") == [EXITS.code(v) for v in PASSING]
    assert _success_codes("history") == [EXITS.code(v) for v in EXITS.verdicts]


def test_the_watch_workflow_comment_names_each_verdict_code() -> None:
    """The comment atop watch.yml: the job passes on the PASSING codes and
    fails on the others, each named as ``(exit N)``."""
    text = (ROOT / ".github" / "workflows" / "watch.yml").read_text()
    comment = " ".join(
        line.lstrip("# ") for line in text.splitlines() if line.startswith("#")
    )
    passes, sep, fails = comment.partition(", and fails")
    assert sep, comment

    def codes(part: str) -> list[int]:
        return [int(c) for c in re.findall(r"\(exit (\d+)\)", part)]

    assert codes(passes) == [EXITS.code(v) for v in PASSING]
    others = [EXITS.code(v) for v in EXITS.verdicts if v not in PASSING]
    assert codes(fails) == others
