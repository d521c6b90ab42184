# SPDX-License-Identifier: Apache-2.0
"""GPU check: the related cache suites and the real-model resend repro, one JSON.

For a machine with an NVIDIA GPU whose CUDA environment (a CUDA build of torch,
vLLM's requirements, pytest; ``vllm`` itself for the repro) is named by
``FORKKIT_TESTENV_PYTHON``. From the folder of ``fork.toml`` it

1. probes that python: torch and its CUDA, the devices, vllm;
2. runs ``forkkit suites`` (fork.toml ``related_suites`` on the fork, that torch);
3. runs ``forkkit repro --gpu`` (resends, base vs fix, a real model);

and publishes ``reports/gpu_check/gpu_check.{json,md}`` (the Markdown also goes
to ``$GITHUB_STEP_SUMMARY`` when set). Run it as ``./dev -s gpu_check``, or as
``python scripts/gpu_check.py`` with a python that has forkkit installed.

Exit: 0 everything ran and passed; 1 it ran and something failed; 2 it could
not start (FORKKIT_TESTENV_PYTHON unset or not executable); 3 nothing was
measured: no CUDA GPU visible to that python (or no CUDA torch in it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from forkkit.config import ForkConfig, load_config
from forkkit.errors import ForkkitError
from forkkit.output.report import append_step_summary, md_table, write_reports
from forkkit.services.repro.gpucheck import GpuCheckDoc
from forkkit.testing.junit import parse_junit

STEM = "gpu_check"
PASSED, FAILED, NOT_STARTED, NO_GPU = 0, 1, 2, 3

PROBE = """
import json, importlib.metadata as md
doc = {"torch": None, "torch_cuda": None, "cuda_available": False, "devices": []}
def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None
doc["vllm"] = version("vllm")
try:
    import torch
except Exception as exc:
    doc["error"] = f"torch is not importable ({exc})"
else:
    doc["torch"] = torch.__version__
    doc["torch_cuda"] = torch.version.cuda
    doc["cuda_available"] = torch.cuda.is_available()
    if doc["cuda_available"]:
        n = torch.cuda.device_count()
        doc["devices"] = [torch.cuda.get_device_name(i) for i in range(n)]
print(json.dumps(doc))
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, default=Path("fork.toml"))
    p.add_argument("--model", help="repro: model or local path (forkkit's default)")
    p.add_argument("--prompt-lens", help="repro: seed prompt lengths, e.g. 16000")
    p.add_argument(
        "--timeout", type=float, default=2400.0, help="seconds per step (default 2400)"
    )
    return p.parse_args(argv)


def probe(python: str) -> dict[str, Any]:
    """What the CUDA environment holds, from that python itself."""
    try:
        proc = subprocess.run(
            [python, "-c", PROBE],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"cuda_available": False, "error": f"{python}: {exc}"}
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"cuda_available": False, "error": f"{python}: {tail}"}
    doc: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return doc


def forkkit(cfg: ForkConfig, args: list[str], timeout: float) -> dict[str, Any]:
    """Run one forkkit command (output streamed); its exit code and time."""
    cmd = [sys.executable, "-m", "forkkit", "--config", str(cfg.path), "--wait"]
    start = time.monotonic()
    try:
        rc = subprocess.run([*cmd, *args], timeout=timeout, check=False).returncode
    except subprocess.TimeoutExpired:
        rc = None
    return {
        "command": " ".join(["forkkit", *args]),
        "returncode": rc,
        "timed_out": rc is None,
        "seconds": round(time.monotonic() - start, 1),
    }


def published(step: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Where the step's report is, and why it failed if it says so."""
    failed = folder / "FAILED.txt"
    step["report"] = str(folder)
    step["failed"] = failed.read_text().strip() if failed.is_file() else None
    step["ok"] = step["returncode"] == 0
    return step


def suites_step(cfg: ForkConfig, timeout: float) -> dict[str, Any]:
    step = forkkit(cfg, ["suites"], timeout)
    folder = cfg.work.report_dir("suites")
    junit = folder / "suites.xml"
    step["tests"] = parse_junit(junit).summary() if junit.is_file() else None
    step["testenv_env"] = dict(cfg.testenv.env)  # fork.toml [testenv] env applies
    return published(step, folder)


def repro_step(cfg: ForkConfig, opts: argparse.Namespace) -> dict[str, Any]:
    args = ["repro", "--gpu", "--timeout", str(opts.timeout)]
    args += ["--model", opts.model] if opts.model else []
    args += ["--prompt-lens", opts.prompt_lens] if opts.prompt_lens else []
    step = forkkit(cfg, args, opts.timeout * 2 + 300)  # base and fix
    folder = cfg.work.report_dir("repro_gpu")
    report = folder / "repro_gpu.json"
    doc = json.loads(report.read_text()) if report.is_file() else {}
    step["complete"] = doc.get("complete")
    step["rows"] = doc.get("rows")
    skipped = folder / "SKIPPED.txt"
    step["skipped"] = skipped.read_text().strip() if skipped.is_file() else None
    return published(step, folder)


def outcome(step: dict[str, Any]) -> str:
    """One cell: test counts, the repro's completeness, or why it failed."""
    if step.get("failed") or step.get("skipped"):
        return str(step.get("failed") or step.get("skipped"))
    if step.get("timed_out"):
        return "timed out"
    if step.get("tests"):
        return ", ".join(f"{n} {k}" for k, n in step["tests"].items() if n)
    return f"complete: {step.get('complete')}"


def markdown(doc: dict[str, Any]) -> str:
    env = doc["environment"]
    lines = [
        "## GPU check: related cache suites + resend repro",
        "",
        f"**Verdict**: {doc['verdict']} (exit {doc['exit_code']})",
        "",
        f"- python: `{doc['python']}`",
        f"- torch {env.get('torch')} (CUDA {env.get('torch_cuda')}), "
        f"vllm {env.get('vllm')}, devices: {', '.join(env.get('devices') or [])}",
    ]
    if env.get("error"):
        lines.append(f"- probe: {env['error']}")
    rows = [
        [name, f"`{s['command']}`", s["returncode"], s["seconds"], outcome(s)]
        for name, s in doc["steps"].items()
    ]
    if rows:
        head = ["step", "command", "exit", "seconds", "outcome"]
        lines += ["", md_table(head, rows)]
    repro = doc["steps"].get("repro") or {}
    if repro.get("rows"):
        keys = ["prompt_len", "kind", "resend_tokens", "base_cached", "fix_cached"]
        keys += ["gained", "base_match", "fix_match"]
        table = [[r.get(k) for k in keys] for r in repro["rows"]]
        lines += ["", md_table(keys, table)]
    return "\n".join(lines) + "\n"


def verdict(doc: dict[str, Any]) -> tuple[str, int]:
    if not doc["python"]:
        return "not started: FORKKIT_TESTENV_PYTHON is not set", NOT_STARTED
    if not os.access(doc["python"], os.X_OK):
        return f"not started: {doc['python']} is not executable", NOT_STARTED
    if not doc["environment"].get("cuda_available"):
        why = doc["environment"].get("error") or "torch.cuda.is_available() is False"
        return f"nothing measured: no CUDA GPU ({why})", NO_GPU
    failed = [name for name, s in doc["steps"].items() if not s["ok"]]
    if failed:
        return f"failed: {', '.join(failed)}", FAILED
    return "passed: the related suites and the repro", PASSED


def check(cfg: ForkConfig, opts: argparse.Namespace) -> dict[str, Any]:
    python = os.environ.get("FORKKIT_TESTENV_PYTHON", "")
    # the CUDA platform, not fork.toml's CPU one (the caller's setting wins)
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cuda")
    doc: dict[str, Any] = {"python": python, "steps": {}}
    usable = bool(python) and os.access(python, os.X_OK)
    doc["environment"] = probe(python) if usable else {}
    if usable and doc["environment"].get("cuda_available"):
        doc["steps"]["suites"] = suites_step(cfg, opts.timeout)
        doc["steps"]["repro"] = repro_step(cfg, opts)
    doc["verdict"], doc["exit_code"] = verdict(doc)
    return doc


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    try:
        cfg = load_config(opts.config)
        doc = check(cfg, opts)
        text = markdown(doc)
        with cfg.work.report_folder(STEM) as folder:
            report = GpuCheckDoc(
                python=doc["python"],
                verdict=doc["verdict"],
                exit_code=doc["exit_code"],
                environment=doc["environment"],
                steps=doc["steps"],
            )
            md, js = write_reports(folder.path, STEM, markdown=text, report=report)
    except ForkkitError as exc:
        print(f"gpu_check: error: {exc}", file=sys.stderr)
        return NOT_STARTED
    append_step_summary(text)
    print(text)
    print(f"gpu_check: {doc['verdict']}", file=sys.stderr)
    print(
        f"report: {folder.dest / md.name} and {folder.dest / js.name}", file=sys.stderr
    )
    return int(doc["exit_code"])


if __name__ == "__main__":
    sys.exit(main())
