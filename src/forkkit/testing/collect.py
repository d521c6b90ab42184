# SPDX-License-Identifier: Apache-2.0
"""Which test modules can run in the CPU venv: one collection-only pytest
run (``--collect-only``) over candidate modules, each module's count of
tests and, for one that cannot be collected, its cause in a few words
(``missing module 'cohere'``). Answers are kept per venv and tree: a
release's modules are checked once."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.testing import service
from forkkit.testing.env import TestEnv
from forkkit.testing.junit import load_cause, load_errors
from forkkit.testing.pytest_run import PytestRun

COLLECT_TIMEOUT = 600.0  # seconds the collection run may take


@dataclass(frozen=True)
class Collected:
    """One module's collection: how many tests, or why it cannot be collected."""

    path: str
    tests: int = 0
    cause: str = ""  # "" when it is collected

    @property
    def runs(self) -> bool:
        """Collected, with at least one test."""
        return not self.cause and self.tests > 0


def _module_file(dotted: str, paths: Sequence[str]) -> str | None:
    """The file of a JUnit module name (``tests.a.test_b``) among ``paths``."""
    return next(
        (p for p in paths if p.removesuffix(".py").replace("/", ".") == dotted), None
    )


def _read(cache: Path, key: str) -> dict[str, Collected]:
    """The answers kept for ``key`` (none from a file that is not ours)."""
    try:
        data = json.loads(cache.read_text()).get(key, {})
        return {
            p: Collected(path=p, tests=int(c["tests"]), cause=str(c["cause"]))
            for p, c in data.items()
        }
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return {}


def _write(cache: Path, key: str, found: dict[str, Collected]) -> None:
    try:
        data = json.loads(cache.read_text()) if cache.is_file() else {}
    except (OSError, ValueError):
        data = {}
    data.setdefault(key, {}).update({p: asdict(c) for p, c in found.items()})
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(cache)


def _check_ran(run: PytestRun) -> None:
    """One line for a collection run that crashed (a conftest.py that does
    not import, say): no module's answer can be read from it."""
    if run.timed_out or (run.returncode in (0, 1, 2, 5) and run.junit.is_file()):
        return
    text = run.log.read_text(errors="replace") if run.log.is_file() else ""
    last = (text.strip().splitlines() or ["no output"])[-1][:160]
    raise ForkkitError(
        f"{run.log}: the collection-only pytest run failed (exit {run.returncode}: "
        f"{last}); fix the test env ([testenv] in fork.toml), or name the suites "
        "with --related"
    )


def collect_modules(
    env: TestEnv,
    tree: Path,
    modules: Sequence[str],
    *,
    out_dir: Path,
    key: str,
    tree_id: str,
) -> dict[str, Collected]:
    """Each of ``modules`` (test files of ``tree``, whose git tree is
    ``tree_id``) as pytest collects it in ``env``; ``key`` names the release
    and venv in the cache under ``out_dir``."""
    cache = out_dir / "collected.json"
    known = _read(cache, key)
    todo = [m for m in modules if m not in known]
    if todo:
        spec = service.RunSpec(
            name="collect", tree=tree_id, targets=tuple(todo), env=env,
            out_dir=out_dir, pytest_args=("--collect-only",),
            timeout=COLLECT_TIMEOUT,
        )  # fmt: skip
        run = service.run(spec, workspace=lambda: nullcontext(tree)).run
        _check_ran(run)
        counts = dict.fromkeys(todo, 0)
        log = run.log.read_text(errors="replace") if run.log.is_file() else ""
        for line in (ln for ln in log.splitlines() if "::" in ln):
            path = line.split("::", 1)[0]
            for m in todo:
                if path == m or path.startswith(m.rstrip("/") + "/"):
                    counts[m] += 1
        causes: dict[str, str] = {}
        for err in load_errors(run.junit):
            module = _module_file(err.module, todo)
            if module:
                causes[module] = load_cause("", err.text)
        if run.timed_out:  # not kept: the next check tries again
            causes = {m: causes.get(m, "collection timed out") for m in todo}
        found = {m: Collected(m, counts[m], causes.get(m, "")) for m in todo}
        if not run.timed_out:
            _write(cache, key, found)
        known |= found
    return {m: known[m] for m in modules}
