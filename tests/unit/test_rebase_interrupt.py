# SPDX-License-Identifier: Apache-2.0
"""``forkkit rebase --apply`` interrupted by real signals at each progress step.

Each case runs ``python -m forkkit rebase --onto toy==1.1 ...`` as a real
subprocess, waits for one of its ``[forkkit] ...`` progress lines on stderr,
and sends SIGINT (to the process group, as Ctrl-C does), SIGTERM or SIGKILL
(to forkkit alone, as ``kill`` does). Afterwards, as the next command sees
them (a pending transaction recovered), patches/ and fork.toml must be
byte-identical to before or completely updated, and the same command run
again, without --force, must succeed and leave them completely updated.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from forkkit import txn
from tests.synthetic import (
    CALC_CONTEXT_MOVED,
    COUNT_BUGGY,
    SyntheticUpstream,
    make_two_fix_project,
    toy_release,
)

REPO = Path(__file__).resolve().parents[2]
# A real-signal matrix (seconds a case): the tests session runs it, unit skips it.
pytestmark = pytest.mark.contract
UNPROVEN = ("--apply-unproven", "--no-semantic", "--no-red-green")
PROVEN = ("--apply", "--no-semantic", "--focused-only")
DRAFT = "0003-draft-not-in-series.patch"
SIGNALS = {
    "SIGINT": signal.SIGINT,
    "SIGTERM": signal.SIGTERM,
    "SIGKILL": signal.SIGKILL,
}
# the exit status of an interrupted run (cli: 128 + signal; killed: -9)
EXIT = {"SIGINT": 130, "SIGTERM": 143, "SIGKILL": -9}
# (progress line to interrupt at, the flags of the run)
STEPS = {
    "old-series": ("applying 2/2: ", UNPROVEN),  # the old series onto the old base
    "rebasing": ("rebasing 2/2: ", UNPROVEN),
    "verifying": ("verifying that the new series rebuilds", UNPROVEN),
    "writing": ("writing 2 patch(es)", UNPROVEN),  # the transaction
    "written": ("wrote 2 patch(es)", UNPROVEN),  # then the report
    "proof": ("fork tree ready at", PROVEN),  # red/green on the new series
}

Snapshot = dict[str, bytes]


@dataclass(frozen=True)
class Template:
    """A project carrying two patches over toy 1.0, and what --apply makes of it."""

    project: Path
    before: Snapshot
    after: Snapshot


def snapshot(project: Path) -> Snapshot:
    """Every byte of patches/ (hidden files too) and fork.toml; no journal."""
    files = {
        f"patches/{p.name}": p.read_bytes()
        for p in sorted((project / "patches").iterdir())
    }
    files["fork.toml"] = (project / "fork.toml").read_bytes()
    assert not (project / txn.JOURNAL).exists()
    return files


def forkkit(
    project: Path, workdir: Path, flags: tuple[str, ...]
) -> subprocess.Popen[str]:
    """Start ``forkkit rebase --onto toy==1.1 FLAGS`` in its own process group."""
    env = dict(
        os.environ,
        FORKKIT_WORKDIR=str(workdir),
        FORKKIT_TESTENV_PYTHON=sys.executable,
        PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]),
    )
    cmd = [sys.executable, "-m", "forkkit", "--config", str(project / "fork.toml")]
    return subprocess.Popen(
        [*cmd, "rebase", "--onto", "toy==1.1", *flags],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_group_gone(pgid: int, timeout: float = 20.0) -> None:
    """Wait until no process of the group is left (git children of a killed
    forkkit finish on their own, as they would before a user's next command)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)
    os.killpg(pgid, signal.SIGKILL)
    raise AssertionError(f"processes of group {pgid} still running after {timeout}s")


def run_to_end(project: Path, workdir: Path, flags: tuple[str, ...]) -> str:
    proc = forkkit(project, workdir, flags)
    _, err = proc.communicate(timeout=120)
    wait_group_gone(proc.pid)
    assert proc.returncode == 0, err
    return err


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Template]:
    root = tmp_path_factory.mktemp("rebase-interrupt")
    up = SyntheticUpstream(root / "up")
    mp = pytest.MonkeyPatch()
    mp.setenv("FORKKIT_WORKDIR", str(root / "unused-wd"))
    cfg = make_two_fix_project(root / "template", up, "1.0")
    mp.undo()
    # the limit fix needs a 3-way merge there: its patch is refreshed
    changes = {"toy/count.py": COUNT_BUGGY, "toy/calc.py": CALC_CONTEXT_MOVED}
    up.publish("1.1", toy_release(changes))
    names = cfg.series_file.read_text().split()
    cfg.series_file.write_text(
        f"# the carried fixes\n{names[0]}\n# count\n{names[1]}\n"
    )
    (cfg.patches_dir / DRAFT).write_text("a draft forkkit did not write\n")
    before = snapshot(cfg.root)
    done = root / "done"
    shutil.copytree(cfg.root, done)
    run_to_end(done, root / "done-wd", UNPROVEN)
    after = snapshot(done)
    assert after != before
    assert after[f"patches/{DRAFT}"] == before[f"patches/{DRAFT}"]
    assert after["patches/series"].startswith(b"# the carried fixes\n")
    yield Template(project=cfg.root, before=before, after=after)


def interrupt(proc: subprocess.Popen[str], line: str, sig: str) -> tuple[int, str]:
    """Send ``sig`` as soon as ``line`` shows on stderr; the exit status and
    all of stderr."""
    assert proc.stderr is not None
    seen: list[str] = []
    for text in proc.stderr:
        seen.append(text)
        if text.startswith("[forkkit] ") and line in text:
            if sig == "SIGINT":
                os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole group
            else:
                proc.send_signal(SIGNALS[sig])
            break
    else:
        proc.wait()
        raise AssertionError(f"no progress line {line!r}:\n{''.join(seen)}")
    _, rest = proc.communicate(timeout=60)
    wait_group_gone(proc.pid)
    return proc.returncode, "".join(seen) + rest


@pytest.mark.parametrize("sig", list(SIGNALS))
@pytest.mark.parametrize("step", list(STEPS))
def test_interrupted_rebase_apply(
    template: Template, tmp_path: Path, step: str, sig: str
) -> None:
    line, flags = STEPS[step]
    project = tmp_path / "project"
    shutil.copytree(template.project, project)
    workdir = tmp_path / "wd"
    rc, err = interrupt(forkkit(project, workdir, flags), line, sig)
    assert "Traceback" not in err, err
    # 0: it finished before the signal landed (the last steps are short);
    # -N: the signal landed after the work, while the interpreter shut down
    assert rc in (EXIT[sig], 0, -getattr(signal, sig)), err
    # what the next command sees first: a pending transaction finished or undone
    txn.recover(project)
    state = snapshot(project)
    assert state in (template.before, template.after), (
        f"patches/ or fork.toml half-written after {sig} at {line!r}"
    )
    # the same command again, no --force: it succeeds and completes the update
    again = run_to_end(project, workdir, flags)
    assert snapshot(project) == template.after, again
