"""The CPU venv vLLM's cache suites run in: CPU torch + upstream's common deps."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.output.progress import say, step
from forkkit.process import exclusive
from forkkit.testing.importdigest import isolated_output, warm

OK_MARKER = ".forkkit-ok"
OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


# Taken from the caller's environment as they are: where programs, the home
# and temp folders are, who runs, the locale and the clock. Nothing else of
# it reaches a run unless named: ``[testenv] pass_env`` in fork.toml, or
# ``$FORKKIT_PASS_ENV`` (comma-separated names; ``NAME*`` for a prefix).
PASSED = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR")
PASSED_PREFIXES = ("LC_",)
PASS_ENV = "FORKKIT_PASS_ENV"
# An external interpreter (a GPU runner's) also gets its GPU's variables.
EXTERNAL_PASSED = ("LD_LIBRARY_PATH", "CUDA_*", "NVIDIA_*", "NCCL_*")
# Set by forkkit in every run: no bytecode is written into the tree, and no
# user site-packages is read.
ALWAYS = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"}


def _named(var: str, patterns: Sequence[str]) -> bool:
    return any(
        var.startswith(p[:-1]) if p.endswith("*") else var == p for p in patterns
    )


def passed_patterns() -> tuple[str, ...]:
    """What ``$FORKKIT_PASS_ENV`` names (empty entries dropped)."""
    raw = os.environ.get(PASS_ENV, "")
    return tuple(p.strip() for p in raw.split(",") if p.strip())


def run_path(python: Path, caller: str) -> str:
    """PATH for a run: the test interpreter's folder first, then the caller's
    folders without another virtualenv's (a nox or dev venv never lends a
    run its ``python`` or ``pytest``)."""
    kept = [
        d
        for d in caller.split(os.pathsep)
        if d and not (Path(d).parent / "pyvenv.cfg").is_file()
    ]
    return os.pathsep.join(dict.fromkeys([str(python.parent), *kept]))


@dataclass(frozen=True)
class TestEnv:
    """A ready interpreter plus the environment variables the suites need."""

    python: Path
    env: dict[str, str]
    key: str
    # pytest node-id prefixes this environment cannot run (fork.toml deselect)
    deselect: tuple[str, ...] = ()
    # caller variables a run takes beyond PASSED (names, or NAME* prefixes)
    passed: tuple[str, ...] = ()
    store: Path | None = None  # where its import digest is kept between runs

    def environ(self, tree: Path) -> dict[str, str]:
        """The whole process environment of a run from ``tree``: built from
        :data:`PASSED`, the named variables, ``[testenv] env`` and forkkit's
        own; never inherited wholesale."""
        env = {k: os.environ[k] for k in self.taken()}
        env["PATH"] = run_path(self.python, os.environ.get("PATH", os.defpath))
        env.update(self.env)
        # No network: a test that needs a model from the Hugging Face Hub fails
        # at once instead of retrying for many minutes (set to 0 to allow it).
        for var in OFFLINE_ENV:
            env.setdefault(var, "1")
        env.update(ALWAYS, PYTHONPATH=str(tree))
        return env

    def taken(self) -> list[str]:
        """The caller's variables a run takes, sorted."""
        named = (*self.passed, *passed_patterns())
        return sorted(
            k
            for k in os.environ
            if k in PASSED or k.startswith(PASSED_PREFIXES) or _named(k, named)
        )

    def set_vars(self) -> dict[str, str]:
        """The variables forkkit sets for a run (not the caller's), the
        tree's path and PATH aside."""
        taken = set(self.taken())
        return {
            k: v
            for k, v in self.environ(Path(".")).items()
            if k not in ("PYTHONPATH", "PATH") and k not in taken
        }


_LIST_DISTS = (
    "import importlib.metadata as m\n"
    "print('\\n'.join(sorted({f\"{(d.metadata['Name'] or '').lower()}=={d.version}\"\n"
    "    for d in m.distributions()})))"
)


def installed(python: Path) -> str:
    """sha256 of the distributions ``python`` has installed (name==version,
    sorted): a package upgraded in the test env changes it."""
    try:
        return _listing(python).result()
    except BaseException:
        _listing.cache_clear()  # the next call lists again
        raise


@functools.lru_cache(maxsize=8)
def _listing(python: Path) -> Future[str]:
    """:func:`installed`, started on a background thread (once per process)
    when the env is first handed out, beside its import digest."""
    done: Future[str] = Future()

    def work() -> None:
        try:
            listed = isolated_output(python, _LIST_DISTS, what="packages")
            done.set_result(hashlib.sha256(listed.encode()).hexdigest())
        except BaseException as exc:  # handed to whoever waits for it
            done.set_exception(exc)

    threading.Thread(target=work, name="installed", daemon=True).start()
    return done


def env_key(cfg: ForkConfig, tree: Path) -> str:
    """Digest of everything that decides the venv's contents."""
    h = hashlib.sha256()
    h.update(f"{sys.version_info[:2]}|{cfg.testenv.torch}|".encode())
    for extra in cfg.testenv.extra:
        h.update(extra.encode() + b"|")
    for req in cfg.testenv.requirements:
        path = tree / req
        if not path.is_file():
            raise ForkkitError(
                f"{path}: requirements file named in fork.toml [testenv] is missing "
                "from the upstream tree; update fork.toml"
            )
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def _user_cache() -> Path:
    """forkkit's folder in the user's cache: what it knows of interpreters
    it did not build (shared by every workdir)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "forkkit"


def external_store(python: str) -> Path:
    """Where the import digest of an interpreter forkkit did not build is
    kept (in the user's cache, one file per interpreter path)."""
    digest = hashlib.sha256(os.path.abspath(python).encode()).hexdigest()[:12]
    return _user_cache() / f"imports-{digest}.json"


def _create_venv(venv: Path) -> None:
    """A new, empty venv at ``venv`` (an unfinished one is built again)."""
    say(f"building the test venv {venv} (once; a few minutes)")
    try:
        if venv.exists():
            shutil.rmtree(venv)
        venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True
        )
    except OSError as exc:
        raise ForkkitError(
            f"{venv}: cannot create the test venv ({exc.strerror or exc}); "
            "check the workdir is writable"
        ) from None
    except subprocess.CalledProcessError as exc:
        last = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        raise ForkkitError(
            f"{venv}: python -m venv failed ({last[-1] if last else exc.returncode}); "
            "install the venv module (e.g. python3-venv) and rerun"
        ) from None


def prewarm(cfg: ForkConfig, tree: Path) -> None:
    """Start, in the background, what a run's cache key needs of the test
    venv a tree already on disk names, if that venv is built: its import
    digest and package listing. Best effort, before the tree is brought up
    to date: a venv that turns out not to be the one is only work lost."""
    if os.environ.get("FORKKIT_TESTENV_PYTHON"):
        return
    try:
        key = env_key(cfg, tree)
    except (ForkkitError, OSError):
        return
    venv = _venv(cfg, key)
    python = venv / "bin" / "python"
    if (venv / OK_MARKER).exists() and python.exists():
        warm(python, _digest_store(venv))
        _listing(python)


def _venv(cfg: ForkConfig, key: str) -> Path:
    """The test venv of build key ``key``."""
    return cfg.work.venvs / f"{cfg.upstream.name}-{key}"


def _digest_store(venv: Path) -> Path:
    """Where ``venv``'s import digest is kept."""
    return venv.with_name(f"{venv.name}.digest.json")


@dataclass(frozen=True, kw_only=True)
class Bench:
    """Where a proof's runs run: the line's CPU venv (the default bench, no
    name), or an interpreter named on the command line beside it (a GPU
    runner's venv), whose reports and timings are its own
    (``reports/red_green@NAME``)."""

    name: str = ""
    python: Path | None = None


CPU = Bench()


def _external(cfg: ForkConfig, python: str, *, key: str) -> TestEnv:
    """An existing interpreter's environment. The caller's variables win over
    ``[testenv] env``: a GPU runner sets VLLM_TARGET_DEVICE=cuda over
    fork.toml's CPU setting."""
    return TestEnv(
        python=Path(python),
        env={k: v for k, v in cfg.testenv.env.items() if k not in os.environ},
        key=key,
        deselect=cfg.testenv.deselect,
        passed=(*cfg.testenv.pass_env, *EXTERNAL_PASSED, *cfg.testenv.env),
        store=external_store(python),
    )


def ensure_testenv(cfg: ForkConfig, tree: Path, *, bench: Bench = CPU) -> TestEnv:
    """Build the venv once per requirement set and reuse it; a bench's own
    interpreter instead when it names one (:class:`Bench`).

    ``FORKKIT_TESTENV_PYTHON`` points at an existing interpreter instead (a GPU
    runner's environment, say); variables the caller set win over
    ``[testenv] env``. Torch is installed first and constrained, so no
    requirement can pull in a CUDA build.
    """
    if bench.python is not None:
        return _external(cfg, str(bench.python), key=f"external:{bench.name}")
    override = os.environ.get("FORKKIT_TESTENV_PYTHON")
    if override:
        if not os.access(override, os.X_OK):
            raise ForkkitError(
                f"{override}: FORKKIT_TESTENV_PYTHON is not an executable "
                "interpreter; fix or unset it"
            )
        return _external(cfg, override, key="external")
    key = env_key(cfg, tree)
    venv = _venv(cfg, key)
    ready = TestEnv(
        python=venv / "bin" / "python",
        env=dict(cfg.testenv.env),
        key=key,
        deselect=cfg.testenv.deselect,
        passed=cfg.testenv.pass_env,
        store=_digest_store(venv),
    )
    if (venv / OK_MARKER).exists() and ready.python.exists():
        warm(ready.python, ready.store)  # the result cache's key needs it
        _listing(ready.python)  # and the report its packages
        return ready
    # one builder; the others wait for it, then reuse its venv
    with exclusive(venv.parent / f".{venv.name}.lock"):
        if not ((venv / OK_MARKER).exists() and ready.python.exists()):
            _create_venv(venv)
            _install(cfg, tree, venv)
            (venv / OK_MARKER).write_text(key + "\n")
    return ready


def find_uv() -> str | None:
    """uv to install with: ``$UV`` (as nox reads it), else ``uv`` on PATH."""
    named = os.environ.get("UV")
    if named:
        return shutil.which(named)
    return shutil.which("uv")


def _install(cfg: ForkConfig, tree: Path, venv: Path) -> None:
    """Torch with pip from the pinned spec, then the rest with uv (or pip).

    Torch always comes through pip (it picks a local CPU wheel where one is
    configured; uv would resolve PyPI's CUDA build). The rest is constrained
    to the torch version pip installed, so nothing replaces it.
    """
    python = venv / "bin" / "python"
    constraints = venv / "forkkit-constraints.txt"
    constraints.write_text(cfg.testenv.torch + "\n")
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
    pip += ["--progress-bar", "off", "-q", "-c", str(constraints)]
    reqs: list[str] = []
    for req in cfg.testenv.requirements:
        reqs += ["-r", str(tree / req)]
    uv = find_uv()
    tool = "uv" if uv else "pip"
    try:
        with step(f"installing {cfg.testenv.torch} (CPU, pip)"):
            if subprocess.run([*pip, cfg.testenv.torch], check=False).returncode:
                raise ForkkitError(
                    f"{cfg.path}: pip found no {cfg.testenv.torch} ([testenv] "
                    "torch, a CPU build); give pip one (PIP_FIND_LINKS, or "
                    "PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu), "
                    "or pin a torch it has in [testenv] torch, then rerun"
                )
        pinned = _installed_pin(python, cfg.testenv.torch)
        if pinned:
            constraints.write_text(pinned + "\n")
        rest = [*reqs, *cfg.testenv.extra]
        with step(f"installing upstream requirements and test tools ({tool})"):
            if uv:
                cmd = [uv, "pip", "install", "-q", "--compile-bytecode"]
                cmd += ["--python", str(python)]  # bytecode: as pip does
                subprocess.run([*cmd, "-c", str(constraints), *rest], check=True)
            else:
                subprocess.run([*pip, *rest], check=True)
    except subprocess.CalledProcessError as exc:
        raise ForkkitError(
            f"{venv}: {tool if exc.cmd[0] == uv else 'pip'} failed "
            f"({exc.returncode}); see its output above, fix fork.toml [testenv] "
            "or the network, then rerun"
        ) from None
    _check_cpu_torch(python, cfg.testenv.torch)


def _spec_name(spec: str) -> str:
    """The distribution name of a requirement spec (``torch==2.13.0`` -> torch)."""
    return re.split(r"[\s<>=!~;@\[(]", spec.strip(), maxsplit=1)[0]


def _installed_pin(python: Path, spec: str) -> str | None:
    """``name==version`` as installed in ``python``'s venv; None if absent."""
    name = _spec_name(spec)
    code = "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))"
    proc = subprocess.run(
        [str(python), "-c", code, name], capture_output=True, text=True, check=False
    )
    version = proc.stdout.strip()
    return f"{name}=={version}" if proc.returncode == 0 and version else None


def _check_cpu_torch(python: Path, spec: str) -> None:
    """Refuse a venv whose torch is a CUDA build (GBs; the suites run on CPU)."""
    if _spec_name(spec) != "torch":
        return
    code = "import torch; print(torch.version.cuda)"
    proc = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=False
    )
    cuda = proc.stdout.strip()
    if proc.returncode != 0 or cuda != "None":
        got = f"CUDA {cuda}" if proc.returncode == 0 else "torch does not import"
        raise ForkkitError(
            f"{python}: the test venv's torch is not a CPU build ({got}); point pip "
            "at a CPU wheel (e.g. PIP_FIND_LINKS or --index-url "
            "https://download.pytorch.org/whl/cpu), delete the venv and rerun"
        )
