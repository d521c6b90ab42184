# SPDX-License-Identifier: Apache-2.0
"""Fuzzed inputs (hypothesis): fork.toml, patches/series, patch files, the
report JSON verify and pr-body read, and the index pages watch and rebase
read. Every input either works or gives one ``ForkkitError`` line; no other
exception escapes, and nothing is written.

A bounded number of examples runs with the tests (profile ``ci``); ``./dev -s
fuzz`` runs many more (profile ``fuzz``, ``FORKKIT_FUZZ=fuzz``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forkkit.config import load_config
from forkkit.errors import ForkkitError
from forkkit.output.report import PROOF, REBASE, RECONCILE, REPRO, read_typed
from forkkit.patches.series import parse_patch_text, series_entries
from forkkit.services.proof.doc import ProofDoc
from forkkit.services.rebase.doc import RebaseDoc
from forkkit.services.reconcile.doc import ReconcileDoc
from forkkit.services.repro.doc import ReproDoc
from forkkit.upstream.index import pick_sdist

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "fuzz",
    max_examples=3000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("FORKKIT_FUZZ", "ci"))

SHA = "a" * 64
FORK_TOML = f"""\
[upstream]
name = "vllm"
source = "sdist"
version = "0.34.0"
sha256 = "{SHA}"
index_url = "https://pypi.org/simple"

[fix]
title = "[Bugfix] x"
runtime_files = ["vllm/a.py"]
focused_tests = ["tests/test_a.py"]
related_suites = ["tests"]
deselect = []

[testenv]
torch = "none"
requirements = ["requirements/common.txt"]
"""
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=20,
)


def one_line(call: Callable[[], object]) -> None:
    """``call`` works, or raises a one-line ForkkitError; nothing else."""
    try:
        call()
    except ForkkitError as exc:
        text = str(exc)
        assert text and "\n" not in text and "Traceback" not in text, text


def _mutated_toml(lines: list[str], drop: set[int], extra: str) -> str:
    kept = [line for i, line in enumerate(lines) if i not in drop]
    return "\n".join(kept) + "\n" + extra


@given(
    drop=st.sets(st.integers(min_value=0, max_value=20), max_size=4),
    extra=st.text(max_size=80),
)
def test_fork_toml(tmp_path_factory: Any, drop: set[int], extra: str) -> None:
    folder = tmp_path_factory.mktemp("toml")
    path = folder / "fork.toml"
    path.write_text(_mutated_toml(FORK_TOML.splitlines(), drop, extra))
    before = sorted(p.name for p in folder.iterdir())
    one_line(lambda: load_config(path))
    assert sorted(p.name for p in folder.iterdir()) == before


@given(st.binary(max_size=400))
def test_fork_toml_bytes(tmp_path_factory: Any, data: bytes) -> None:
    path = tmp_path_factory.mktemp("toml") / "fork.toml"
    path.write_bytes(data)
    one_line(lambda: load_config(path))


@given(st.text(max_size=300))
def test_series_file(text: str) -> None:
    one_line(lambda: series_entries(text))


_PATCH = (
    "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
    "From: A <a@b.c>\nSubject: [PATCH] [Bugfix] x\n\n---\n"
    "diff --git a/f.py b/f.py\n--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n"
    " a\n-b\n+c\n"
)


@given(
    cut=st.integers(min_value=0, max_value=len(_PATCH)),
    crlf=st.booleans(),
    bom=st.booleans(),
    junk=st.binary(max_size=64),
)
def test_patch_file(cut: int, crlf: bool, bom: bool, junk: bytes) -> None:
    text = _PATCH[:cut]
    text = text.replace("\n", "\r\n") if crlf else text
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode() + junk
    path = Path("/nonexistent/0001-x.patch")
    one_line(lambda: parse_patch_text(data.decode("utf-8", "replace"), path))


_DOCS = [(PROOF, ProofDoc), (REPRO, ReproDoc), (RECONCILE, ReconcileDoc)]
_DOCS += [(REBASE, RebaseDoc)]


@given(which=st.sampled_from(_DOCS), body=_json, stamped=st.booleans())
def test_report_json(
    tmp_path_factory: Any, which: tuple[Any, type], body: object, stamped: bool
) -> None:
    doc, cls = which
    data = doc.stamp(body) if stamped and isinstance(body, dict) else body
    path = tmp_path_factory.mktemp("report") / "r.json"
    path.write_text(json.dumps(data))
    one_line(lambda: read_typed(path, cls, doc=doc, hint="run it again"))


@given(
    files=st.lists(
        st.fixed_dictionaries(
            {
                "filename": st.sampled_from(
                    ["vllm-0.34.0.tar.gz", "vllm-0.34.0-py3-none-any.whl", "x"]
                )
                | st.text(max_size=20),
                "url": st.text(max_size=30),
                "hashes": st.dictionaries(
                    st.sampled_from(["sha256", "md5"]), st.text(max_size=64)
                )
                | _json,
                "yanked": st.booleans() | st.text(max_size=10),
            }
        )
        | _json,
        max_size=4,
    ),
    top=_json,
)
def test_index_page(files: list[object], top: object) -> None:
    page: dict[str, object] = {"name": "vllm", "files": files}
    other: dict[str, object] = top if isinstance(top, dict) else {"files": top}
    for data in (page, other):
        one_line(partial(pick_sdist, data, "vllm", "0.34.0", base_url="https://x/"))
