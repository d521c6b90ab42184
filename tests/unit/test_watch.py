# SPDX-License-Identifier: Apache-2.0
"""``forkkit watch`` against local indexes of synthetic upstream releases."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from forkkit.cli import main
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.line import Line
from forkkit.services.rebase.model import Options
from forkkit.services.rebase.run import resolve_target
from forkkit.services.watch.audit import row_key
from forkkit.services.watch.history import History, HistoryCell, HistoryRow
from forkkit.services.watch.render_history import render_history
from forkkit.upstream.index import sdist_versions
from forkkit.upstream.release import newer_releases
from forkkit.vcs import RefUpdate, Repo, resolution
from tests.synthetic import (
    CALC_CONFLICT,
    CALC_CONTEXT_MOVED,
    CALC_FIXED_OTHERWISE,
    CALC_REBROKEN,
    FIX_TEST,
    FIXED_CALC,
    SyntheticUpstream,
    toy_release,
)

PEP691 = "application/vnd.pypi.simple.v1+json"
CARRIES = toy_release({"toy/calc.py": CALC_CONTEXT_MOVED})
CONFLICT = toy_release({"toy/calc.py": CALC_CONFLICT})
REBROKEN = toy_release({"toy/calc.py": CALC_REBROKEN})
FIXED_OTHERWISE = toy_release({"toy/calc.py": CALC_FIXED_OTHERWISE})
TAKEN_AS_IS = toy_release({"toy/calc.py": FIXED_CALC, "tests/test_fix.py": FIX_TEST})


def snapshot(cfg: ForkConfig) -> dict[str, bytes]:
    """Every byte of patches/ and fork.toml."""
    files = {p.name: p.read_bytes() for p in sorted(cfg.patches_dir.iterdir())}
    files["fork.toml"] = cfg.path.read_bytes()
    return files


def watch(cfg: ForkConfig, *args: str) -> int:
    """``forkkit watch`` in-process; the red/green proof on the focused tests."""
    return main(["--config", str(cfg.path), "watch", "--focused-only", *args])


def report(cfg: ForkConfig, name: str = "watch.json") -> Any:
    path = cfg.workdir / "reports" / "watch" / name
    return json.loads(path.read_text()) if name.endswith(".json") else path.read_text()


# --- versions ---------------------------------------------------------------

VERSIONS = ["0.9", "1.0", "1.1", "1.2", "1.10", "1.10.post1", "2.0rc1", "2.0.dev3"]


def test_newer_releases_newest_first_without_pre_releases() -> None:
    newer = newer_releases([*VERSIONS, "junk", "1.0.0"], "1.0")
    assert newer == ["1.10.post1", "1.10", "1.2", "1.1"]  # 1.0.0 is the pin
    with_pre = newer_releases(VERSIONS, "1.10.post1", pre=True)
    assert with_pre == ["2.0rc1", "2.0.dev3"]
    assert newer_releases(VERSIONS, "2.0", pre=True) == []
    with pytest.raises(ForkkitError, match="not a PEP 440 version"):
        newer_releases(VERSIONS, "latest")


# --- a PEP 691 index over HTTP ------------------------------------------------


def serve_index(up: SyntheticUpstream, yanked: set[str]) -> ThreadingHTTPServer:
    """Serve ``up``'s sdists as a PEP 691 index on 127.0.0.1 (``/simple``)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/simple/toy/":
                files = [
                    {
                        "filename": p.name,
                        "url": f"../../files/{p.name}",
                        "hashes": {
                            "sha256": hashlib.sha256(p.read_bytes()).hexdigest()
                        },
                        "yanked": "broken" if p.name in yanked else False,
                    }
                    for p in sorted(up.sdist_dir.iterdir())
                ]
                self._send(json.dumps({"name": "toy", "files": files}).encode())
            elif (up.sdist_dir / self.path.removeprefix("/files/")).is_file():
                self._send(
                    (up.sdist_dir / self.path.removeprefix("/files/")).read_bytes()
                )
            else:
                self.send_error(404)

        def _send(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", PEP691)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    return server


@pytest.fixture
def http_index(toy_upstream: SyntheticUpstream) -> Iterator[str]:
    server = serve_index(toy_upstream, yanked={"toy-1.2.tar.gz"})
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


def test_index_override_over_http_skips_yanked(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, http_index: str
) -> None:
    toy_upstream.publish("1.1", TAKEN_AS_IS)
    toy_upstream.publish("1.2", CONFLICT)  # yanked on the HTTP index
    assert sdist_versions("toy", http_index) == ["1.0", "1.1"]
    assert sdist_versions("toy", toy_upstream.sdist_dir.parent.as_uri()) == [
        "1.0",
        "1.1",
        "1.2",
    ]
    index = f'index_url = "{toy_upstream.sdist_dir.parent.as_uri()}"'
    nowhere = f'index_url = "{(toy_project.root / "no-index").as_uri()}"'
    toy_project.path.write_text(toy_project.path.read_text().replace(index, nowhere))
    before = snapshot(toy_project)
    assert watch(toy_project) == 2  # fork.toml's index does not exist
    assert watch(toy_project, "--index-url", http_index) == 30
    data = report(toy_project)
    assert data["verdict"] == "absorbed" and data["checked"] == "1.1"
    assert data["index_url"] == http_index and data["newer"] == ["1.1"]
    assert data["rebase"]["patches"][0]["status"] == "absorbed-textual"
    assert snapshot(toy_project) == before


# --- verdicts -----------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("files", "verdict", "code", "status", "proof"),
    [
        (CARRIES, "carries", 10, "3way", True),
        (CONFLICT, "conflict", 20, "conflict", None),
        (REBROKEN, "conflict", 20, "clean", False),  # applies, the proof fails
        (FIXED_OTHERWISE, "absorbed", 30, "absorbed-semantic", None),
    ],
    ids=["carries", "conflict", "proof-fails", "absorbed"],
)
def test_verdicts_and_exit_codes(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    files: dict[str, str],
    verdict: str,
    code: int,
    status: str,
    proof: bool | None,
) -> None:
    toy_upstream.publish("1.1", files)
    before = snapshot(toy_project)
    assert watch(toy_project) == code
    assert snapshot(toy_project) == before  # a dry run: nothing written
    data = report(toy_project)
    assert (data["verdict"], data["exit_code"], data["checked"]) == (
        verdict,
        code,
        "1.1",
    )
    assert [p["status"] for p in data["rebase"]["patches"]] == [status]
    assert data["rebase"]["proof_valid"] is proof
    md = report(toy_project, "watch.md")
    assert f"**Verdict: `{verdict}`** (exit {code})" in md
    assert "[rebase.md](rebase.md)" in md
    assert "./dev" not in md  # a user of forkkit has no ./dev (#46 item 8)
    if verdict == "carries":
        assert "`forkkit rebase --onto toy==1.1 --apply`" in md
    rebase = report(toy_project, "rebase.json")
    assert rebase["new"] == "toy 1.1" and not rebase["written"]


def test_current_when_nothing_newer(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    toy_upstream.publish("0.9", CONFLICT)
    toy_upstream.publish("1.1rc1", CONFLICT)  # a pre-release: only with --pre
    assert watch(toy_project) == 0
    data = report(toy_project)
    assert data["verdict"] == "current" and data["newer"] == []
    assert data["rebase"] is None and "Nothing to do" in report(toy_project, "watch.md")
    assert not (toy_project.workdir / "rebase").exists()  # no rebase was run


def test_version_picks_one_release_and_bad_input_exits_2(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    capsys: pytest.CaptureFixture[str],
) -> None:
    toy_upstream.publish("1.1", TAKEN_AS_IS)
    toy_upstream.publish("1.2", CONFLICT)
    assert watch(toy_project, "--version", "1.1") == 30
    assert report(toy_project)["checked"] == "1.1"
    capsys.readouterr()
    assert watch(toy_project, "--version", "0.9") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--version 0.9: not a release newer" in err
    assert watch(toy_project, "--index-url", "ftp://x") == 2


@pytest.mark.e2e
def test_newest_of_several_as_a_real_process(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    toy_upstream.publish("1.2", CONFLICT)
    toy_upstream.publish("1.10", CARRIES)  # newest (not by string order)
    toy_upstream.publish("2.0rc1", CONFLICT)
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    before = snapshot(toy_project)
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary)}
    args = ["--config", str(toy_project.path), "watch", "--focused-only"]
    proc = subprocess.run(
        [sys.executable, "-m", "forkkit", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 10, proc.stderr
    assert proc.stdout.startswith("carries: the series still applies to toy 1.10")
    assert snapshot(toy_project) == before
    data = report(toy_project)
    assert data["checked"] == "1.10" and data["newer"] == ["1.10", "1.2"]
    text = summary.read_text()
    assert text.startswith("earlier step\n# Upstream watch: toy 1.0 → 1.10")
    assert "| 0001-Bugfix-limit-reaches-n.patch |" in text


# --- the history (--all) ------------------------------------------------------


@pytest.mark.e2e
def test_all_gives_one_row_per_release_and_reuses_them(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    capsys: pytest.CaptureFixture[str],
) -> None:
    toy_upstream.publish("1.1", CARRIES)
    toy_upstream.publish("1.2", CONFLICT)
    toy_upstream.publish("1.3", FIXED_OTHERWISE)
    toy_upstream.publish("1.4", TAKEN_AS_IS)
    before = snapshot(toy_project)
    assert watch(toy_project, "--all") == 30  # the newest release's verdict
    assert snapshot(toy_project) == before
    data = report(toy_project)
    hist = data["history"]
    assert hist["releases"] == ["1.1", "1.2", "1.3", "1.4"]
    cells = [row["cells"][0] for row in hist["rows"]]
    assert [(c["applies"], c["need"]) for c in cells] == [
        ("3way", "needed"),
        ("conflict", "needed"),  # its tests still fail there without it
        ("absorbed", "absorbed"),
        ("absorbed", "absorbed"),
    ]
    assert cells[0]["failing_without"] == cells[0]["fail_to_pass_old"] > 0
    assert "toy/calc.py" in cells[1]["detail"]  # the conflict names its file
    patch = hist["patches"][0]
    assert hist["first_absorbed"] == {patch: "1.3"}
    assert hist["fix_first_absorbed"] == {"toy-fix": "1.3"}  # the fix's, too
    md = report(toy_project, "watch.md")
    assert "absorbed since 1.3" in md and "- `toy-fix`: absorbed since 1.3" in md
    assert "| 1.1 | applies 3-way; still needed" in md
    # the newest release's row is the watch verdict's own rebase
    assert data["checked"] == "1.4"
    assert data["rebase"]["patches"][0]["status"] == "absorbed-textual"

    capsys.readouterr()
    assert watch(toy_project, "--all") == 30
    again = report(toy_project)["history"]
    assert [r["cached"] for r in again["rows"]] == [True, True, True, False]
    assert [r["cells"] for r in again["rows"]] == [r["cells"] for r in hist["rows"]]

    # a damaged entry is a miss, said once, and measured again
    for entry in (toy_project.workdir / "history").glob("*.json"):
        doc = json.loads(entry.read_text())
        doc["row"]["outcome"] = "rebased?"  # an edit: the stored digest no longer fits
        entry.write_text(json.dumps(doc))
    capsys.readouterr()
    assert watch(toy_project, "--all") == 30
    err = capsys.readouterr().err
    assert err.count("unreadable") == 3  # the three older releases, once each
    third = report(toy_project)["history"]
    assert [r["cells"] for r in third["rows"]] == [r["cells"] for r in hist["rows"]]


def test_all_up_to_a_version(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    toy_upstream.publish("1.1", TAKEN_AS_IS)
    toy_upstream.publish("1.2", CONFLICT)
    assert watch(toy_project, "--all", "--version", "1.1") == 30
    data = report(toy_project)
    assert data["history"]["releases"] == ["1.1"] and data["checked"] == "1.1"


def _row(release: str, *cells: tuple[str, str]) -> HistoryRow:
    return HistoryRow(
        release,
        "rebased",
        tuple(
            HistoryCell(f"p{i}", applies, need)  # type: ignore[arg-type]
            for i, (applies, need) in enumerate(cells)
        ),
    )


def test_first_absorbed_and_the_unmeasured_releases_before_it() -> None:
    rows: tuple[HistoryRow, ...] = (
        _row("1.1", ("absorbed", "absorbed"), ("3way", "needed"), ("3way", "needed")),
        _row("1.2", ("absorbed", "absorbed"), ("3way", "unknown"), ("clean", "needed")),
        _row("1.3", ("3way", "needed"), ("3way", "unknown"), ("clean", "needed")),
        _row(
            "1.4",
            ("absorbed", "absorbed"),
            ("absorbed", "absorbed"),
            ("3way", "needed"),
        ),
    )
    rows += (_row("1.5", ("absorbed", "absorbed"), ("conflict", "unknown")),)
    fixes = (("a", ("p0", "p1")), ("b", ("p2",)))
    history = History("toy", "1.0", ("p0", "p1", "p2"), rows, fixes)
    # p0 came back in 1.3: only the last unbroken run counts; p1 was not
    # measured on 1.5 (it conflicts there), which breaks nothing
    assert history.first_absorbed() == {"p0": "1.4", "p1": "1.4", "p2": ""}
    assert history.unmeasured() == {"p0": [], "p1": ["1.2", "1.3", "1.5"], "p2": []}
    md = render_history(history)
    assert "- p1: absorbed since 1.4 (not measured on 1.2, 1.3, 1.5:" in md
    assert "- p2: not absorbed by any release" in md
    # a fix is absorbed where the last of its patches is
    assert history.fix_first_absorbed() == {"a": "1.4", "b": ""}
    assert "- `a`: absorbed since 1.4" in md and "- `b`: still carried" in md
    assert rows[1].cells[1].label == "applies 3-way; need not measured"


@pytest.mark.e2e
def test_a_release_that_fails_is_a_row_measured_again(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    bad, _ = toy_upstream.publish("1.1", CARRIES)
    toy_upstream.publish("1.2", TAKEN_AS_IS)
    bad.write_bytes(bad.read_bytes() + b"tampered")  # its sha256 no longer fits
    assert watch(toy_project, "--all") == 30  # the newest release still decides
    rows = report(toy_project)["history"]["rows"]
    assert [r["outcome"] for r in rows] == ["error", "retire"]
    assert rows[0]["cells"][0]["detail"].startswith("not measured: ")
    assert "sha256" in rows[0]["cells"][0]["detail"]
    assert watch(toy_project, "--all") == 30
    assert report(toy_project)["history"]["rows"][0]["cached"] is False


def test_the_row_key_covers_recorded_resolutions(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    toy_upstream.publish("1.1", CONFLICT)
    target = resolve_target(Line.of(toy_project), "toy==1.1")
    before = row_key(Line.of(toy_project), target, Options())
    repo = Repo.init(toy_project.work.rebase_repo)
    assert (
        row_key(Line.of(toy_project), target, Options()) == before
    )  # none recorded yet
    (repo.path / "f").write_text("x")
    with repo.scratch_index() as index:
        index.add_directory(repo.path)
        tree = index.write_tree()
    sha = repo.commit_tree(tree=tree, message="r\n")
    repo.update_refs([RefUpdate(resolution.RESOLVED_NS + "k", sha)])
    assert row_key(Line.of(toy_project), target, Options()) != before


def test_every_verdict_has_one_exit_code_and_its_help_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One table (#34 item 4): each verdict has an exit code and a meaning,
    --help reads them from it; mypy's assert_never covers the advice."""
    from typing import get_args

    from forkkit import cli
    from forkkit.services.watch.model import EXITS, Verdict

    assert set(get_args(Verdict)) == set(EXITS.verdicts)
    assert [EXITS.code(v) for v in EXITS.verdicts] == [0, 10, 20, 30]
    with pytest.raises(SystemExit) as stop:
        cli.main(["watch", "--help"])
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for verdict in EXITS.verdicts:
        assert f"{EXITS.code(verdict)} {verdict}: {EXITS.meaning(verdict)}" in text
    assert "2 bad input or an error (unreachable index" in text
    assert "Reports: <workdir>/reports/watch/" in text  # its own epilog, after


def test_newer_releases_without_an_sdist_are_named_skipped(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    """#46 item 8: a release the index has wheels of only cannot be built
    from; the report names it instead of passing over it in silence."""
    (toy_upstream.sdist_dir / "toy-1.2-py3-none-any.whl").write_bytes(b"")
    (toy_upstream.sdist_dir / "toy-0.9-py3-none-any.whl").write_bytes(b"")  # older
    assert watch(toy_project) == 0  # nothing newer with an sdist
    data = report(toy_project)
    assert data["verdict"] == "current" and data["skipped"] == ["1.2"]
    assert "Skipped, wheels only (no sdist to build the fork from): 1.2" in report(
        toy_project, "watch.md"
    )


def test_a_fix_absorbed_earlier_heads_the_watch_though_a_later_release_moved_it() -> (
    None
):
    """#46 item 8: absorbed on 1.1, then a conflict on 1.2 where upstream
    moved the file (not measured there): the verdict is absorbed, since 1.1."""
    from forkkit.services.watch.run import _headline

    rows: tuple[HistoryRow, ...] = (
        _row("1.1", ("absorbed", "absorbed")),
        _row("1.2", ("conflict", "unknown")),
    )
    history = History("toy", "1.0", ("p0",), rows, fixes=(("sec", ("p0",)),))
    newest = ("conflict", "p0 conflicts with toy 1.2")
    verdict, why = _headline(history, newest)  # type: ignore[arg-type]
    assert verdict == "absorbed" and "sec in 1.1" in why and "conflicts" in why
    # still needed on a later release: the newest release's verdict stands
    rows += (_row("1.3", ("3way", "needed")),)
    later = History("toy", "1.0", ("p0",), rows, fixes=(("sec", ("p0",)),))
    assert _headline(later, newest) == newest  # type: ignore[arg-type]
