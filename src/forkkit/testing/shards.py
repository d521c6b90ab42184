# SPDX-License-Identifier: Apache-2.0
"""One pytest run spread over the cores: its targets cut into test files,
packed into shards by their last measured time, and the shards' JUnit XML
merged back into one run's.

A shard is an ordinary pytest run of some of the targets, so every test is
collected and run as the whole run would: a directory target is cut into its
test files only where pytest's collection of it is the default one (no
``python_files`` setting, no conftest.py that changes collection); otherwise
it stays one unit. Within a shard the units keep the whole run's order.
"""

from __future__ import annotations

import fnmatch
import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from forkkit.patches.testids import covers, junit_module
from forkkit.testing.forkruns import SuiteRun
from forkkit.testing.junit import JunitReport, parse_junit_text
from forkkit.testing.pytest_run import PytestRun
from forkkit.workdir import published_path

# What a directory target collects by default: pytest's ``python_files``
# and the doctest plugin's ``--doctest-glob``.
TEST_FILES = ("test_*.py", "*_test.py", "test*.txt")
# pytest's default ``norecursedirs``: a directory target skips these, and a
# unit named on the command line would not.
NO_RECURSE: tuple[str, ...] = (
    "*.egg",
    ".*",
    "_darcs",
    "build",
    "CVS",
    "dist",
    "node_modules",
)
NO_RECURSE += ("venv", "{arch}")
# Settings and hooks that change what a directory collects: where the tree
# has one, its directories stay whole units.
_CONFIGS = ("pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini")
_CHANGES_COLLECTION = (
    "python_files",
    "norecursedirs",
    "addopts",
    "doctest",
    "collect_ignore",
    "pytest_ignore_collect",
    "pytest_collect_file",
    "pytest_collect_directory",
)

Reader = Callable[[str], str | None]  # a tracked file's text (None: absent)


def units(
    targets: Sequence[str],
    *,
    files: frozenset[str],
    read: Reader,
    special: frozenset[str] = frozenset(),
) -> list[str]:
    """``targets`` with each plain directory cut one level: its test files
    and its subdirectories, in path order (node ids and files stay). A unit
    that another unit covers goes (pytest runs such a test once). ``files``:
    the tree's regular files; ``special``: its symlinks and submodules."""
    if any(_changes(read(c)) for c in _CONFIGS):
        return list(targets)
    out: list[str] = []
    for target in targets:
        base = target.rstrip("/")
        below = sorted(f for f in files | special if f.startswith(base + "/"))
        if "::" in target or not _plain(base, below, special=special, read=read):
            out.append(target)
            continue
        children: dict[str, None] = {}
        for path in below:
            first = path[len(base) + 1 :].split("/", 1)
            if len(first) == 2:
                children[f"{base}/{first[0]}"] = None
            elif any(fnmatch.fnmatch(first[0], p) for p in TEST_FILES):
                children[path] = None
        out += list(children)
    kept = list(dict.fromkeys(out))
    return [u for u in kept if not any(o != u and covers(o, u) for o in kept)]


def _plain(
    base: str, below: list[str], *, special: frozenset[str], read: Reader
) -> bool:
    """Whether a directory collects as its children named one by one would:
    default collection, no subdirectory pytest would skip or config it
    holds, no symlink or submodule."""
    if not below or _custom_below(base, read):
        return False
    for path in below:
        rest = path[len(base) + 1 :].split("/")
        if path in special or rest[-1] in _CONFIGS:
            return False
        if len(rest) > 1 and any(fnmatch.fnmatch(rest[0], p) for p in NO_RECURSE):
            return False
        if rest[-1] == "pyvenv.cfg":  # a virtualenv: pytest does not collect it
            return False
    return True


def _changes(text: str | None) -> bool:
    return text is not None and any(word in text for word in _CHANGES_COLLECTION)


def _custom_below(base: str, read: Reader) -> bool:
    """A conftest.py at ``base`` or above it changes collection."""
    parts = PurePosixPath(base).parts
    return any(
        _changes(read("/".join([*parts[:i], "conftest.py"])))
        for i in range(len(parts) + 1)
    )


def unmeasured_weight(parts: Sequence[str], weights: Mapping[str, float]) -> float:
    """What a part with no measured time weighs: the mean of the ``parts``
    that have one (1.0 when none has)."""
    known = [weights[p] for p in parts if p in weights]
    return sum(known) / len(known) if known else 1.0


def assign(
    parts: Sequence[str], weights: Mapping[str, float], *, load: Sequence[float]
) -> list[tuple[str, ...]]:
    """``parts`` packed onto ``len(load)`` cores, longest first onto the
    least loaded (``load``: the work each core has already); a part with no
    measured time weighs the mean of those that have one. One tuple per
    core, in the cores' order (empty where a core gets none), each keeping
    the parts' order."""
    mean = unmeasured_weight(parts, weights)
    load = list(load)
    chosen: list[list[str]] = [[] for _ in load]
    for part in sorted(parts, key=lambda p: -weights.get(p, mean)):
        i = min(range(len(load)), key=lambda k: load[k])
        load[i] += weights.get(part, mean)
        chosen[i].append(part)
    order = {p: i for i, p in enumerate(parts)}
    return [tuple(sorted(c, key=order.__getitem__)) for c in chosen]


def split(
    parts: Sequence[str],
    weights: Mapping[str, float],
    *,
    n: int,
    preload: Sequence[float] = (),
) -> list[tuple[str, ...]]:
    """``parts`` packed into at most ``n`` shards (:func:`assign`;
    ``preload``: work a shard's core already has); empty shards dropped."""
    load = [*preload, *([0.0] * n)][:n]
    return [c for c in assign(parts, weights, load=load) if c]


def weigh(parts: Sequence[str], report: JunitReport) -> dict[str, float]:
    """Each part's seconds in ``report`` (parts with no test in it left out)."""
    out: dict[str, float] = {}
    for part in parts:
        path = part.split("::", 1)[0]
        dotted = junit_module(path)
        total = [
            t.seconds
            for t in report.tests.values()
            if t.test_id == dotted
            or t.test_id.startswith((f"{dotted}.", f"{dotted}::"))
        ]
        if total:
            out[part] = sum(total)
    return out


def merge_junit(texts: Sequence[str]) -> str:
    """One JUnit XML holding every ``testsuite`` of ``texts``."""
    root = ET.Element("testsuites")
    for text in texts:
        top = ET.fromstring(text)
        root.extend([top] if top.tag == "testsuite" else list(top.iter("testsuite")))
    return ET.tostring(root, encoding="unicode")


def merged(
    runs: Sequence[SuiteRun], *, name: str, targets: Sequence[str], out_dir: Path
) -> SuiteRun:
    """The shards as the one run they split: JUnit merged into ``NAME.xml``,
    logs one after the other in ``NAME.log``, the first failing exit code,
    the longest wall time; cached only when every shard was."""
    junit, log = out_dir / f"{name}.xml", out_dir / f"{name}.log"
    with log.open("w") as fh:
        for run in runs:
            fh.write(f"# {run.name}: {run.run.command}\n")
            fh.write(
                run.run.log.read_text(errors="replace") if run.run.log.is_file() else ""
            )
    report: JunitReport | None = None
    if all(r.report is not None for r in runs):
        text = merge_junit([r.run.junit.read_text() for r in runs])
        junit.write_text(text)
        report = parse_junit_text(text, str(published_path(junit)))
    # pytest's 5 (nothing collected) only when no shard collected anything
    codes = [r.run.returncode for r in runs if r.run.returncode not in (0, 5)]
    codes = codes or ([5] if all(r.run.returncode == 5 for r in runs) else [])
    first = runs[0]
    whole = PytestRun(
        args=tuple(targets),
        returncode=codes[0] if codes else 0,
        junit=junit,
        log=log,
        seconds=max(r.run.seconds for r in runs),
        command=" & ".join(r.run.command for r in runs),
        timed_out=any(r.run.timed_out for r in runs),
        cached=all(r.run.cached for r in runs),
        started=min((r.run.started for r in runs if r.run.started), default=0.0),
    )
    problem = "; ".join(r.problem for r in runs if r.problem)
    return SuiteRun(
        name,
        first.runtime_rev,
        first.tree,
        whole,
        report,
        problem,
        shards=tuple(runs),
    )


# committed beside a line's fork.toml: its measured times, for a fresh workdir
SEED_FILE = "test_durations.json"


class Timings:
    """The last measured seconds of each test file or directory (the
    workdir's ``timings.json``): what the next split packs by. ``seed``: the
    project's committed ``test_durations.json``, for a fresh workdir (a
    scheduling hint like pytest-split's; a stale one costs balance only)."""

    def __init__(self, path: Path, *, seed: Path | None = None) -> None:
        self.path, self.seed = path, seed

    def load(self) -> dict[str, float]:
        seeded = _read(self.seed) if self.seed is not None else {}
        return {**seeded, **_read(self.path)}

    def update(self, measured: Mapping[str, float]) -> None:
        """Record ``measured`` (best effort: a lost file only costs balance)."""
        if not measured:
            return
        data = {**_read(self.path), **{k: round(v, 3) for k, v in measured.items()}}
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)


def _read(path: Path) -> dict[str, float]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, int | float)}
