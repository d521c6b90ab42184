"""The CPU venv vLLM's cache suites run in: CPU torch + upstream's common deps."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.progress import say, step

OK_MARKER = ".forkkit-ok"
OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


@dataclass(frozen=True)
class TestEnv:
    """A ready interpreter plus the environment variables the suites need."""

    python: Path
    env: dict[str, str]
    key: str
    # pytest node-id prefixes this environment cannot run (fork.toml deselect)
    deselect: tuple[str, ...] = ()

    def environ(self, tree: Path) -> dict[str, str]:
        """Process environment for running upstream tests from ``tree``."""
        env = dict(os.environ)
        env.update(self.env)
        env["PYTHONPATH"] = str(tree)
        env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
        # No network: a test that needs a model from the Hugging Face Hub fails
        # at once instead of retrying for many minutes (set to 0 to allow it).
        for var in OFFLINE_ENV:
            env.setdefault(var, "1")
        return env


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


def ensure_testenv(cfg: ForkConfig, tree: Path) -> TestEnv:
    """Build the venv once per requirement set and reuse it.

    ``FORKKIT_TESTENV_PYTHON`` points at an existing interpreter instead (a GPU
    runner's environment, say), which gets none of ``[testenv] env``. Torch
    is installed first and constrained, so no requirement can pull in a CUDA
    build.
    """
    override = os.environ.get("FORKKIT_TESTENV_PYTHON")
    if override:
        if not os.access(override, os.X_OK):
            raise ForkkitError(
                f"{override}: FORKKIT_TESTENV_PYTHON is not an executable "
                "interpreter; fix or unset it"
            )
        # fork.toml's [testenv] env describes the managed CPU venv (it sets
        # VLLM_TARGET_DEVICE=cpu); an external interpreter, such as a GPU
        # runner's CUDA env, runs with the caller's environment as it is.
        return TestEnv(
            python=Path(override),
            env={},
            key="external",
            deselect=cfg.fix.deselect,
        )
    key = env_key(cfg, tree)
    venv = cfg.work.venvs / f"{cfg.upstream.name}-{key}"
    python = venv / "bin" / "python"
    if (venv / OK_MARKER).exists() and python.exists():
        return TestEnv(
            python=python, env=dict(cfg.testenv.env), key=key, deselect=cfg.fix.deselect
        )
    _create_venv(venv)
    constraints = venv / "forkkit-constraints.txt"
    constraints.write_text(cfg.testenv.torch + "\n")
    pip = [
        str(python),
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--progress-bar",
        "off",
        "-q",
        "-c",
        str(constraints),
    ]
    reqs: list[str] = []
    for req in cfg.testenv.requirements:
        reqs += ["-r", str(tree / req)]
    try:
        with step(f"installing {cfg.testenv.torch} (CPU)"):
            subprocess.run([*pip, cfg.testenv.torch], check=True)
        with step("installing upstream requirements and test tools"):
            subprocess.run([*pip, *reqs, *cfg.testenv.extra], check=True)
    except subprocess.CalledProcessError as exc:
        raise ForkkitError(
            f"{venv}: pip failed ({exc.returncode}); see its output above, fix "
            "fork.toml [testenv] or the network, then rerun"
        ) from None
    (venv / OK_MARKER).write_text(key + "\n")
    return TestEnv(
        python=python, env=dict(cfg.testenv.env), key=key, deselect=cfg.fix.deselect
    )
