"""``forkkit repro``: the resend reproduction on CPU, base vs fix.

Runs ``scripts/resend_repro.py`` (vLLM's real ``Scheduler`` and
``KVCacheManager`` for a hybrid attention + Mamba "align" model with MTP, no
model weights) in the vLLM test venv twice: on the fork tree (fix; refused
unless clean, untracked files included) and on a scratch worktree of HEAD with
fork.toml [fix] runtime files from ``base``. Reports cached and recomputed
prompt tokens per resend as Markdown + JSON, in a fresh run folder published
as ``reports/repro`` (or ``--out``) when the run ends.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.fork.tree import BASE_TAG, ForkTree
from forkkit.line import Line
from forkkit.output.progress import say, step
from forkkit.output.report import write_reports
from forkkit.services.repro.doc import repro_doc
from forkkit.services.repro.model import (
    ReproOptions,
    ReproResult,
    ScriptRun,
    parse_script_output,
)
from forkkit.services.repro.render import render_markdown
from forkkit.testing.env import TestEnv, ensure_testenv
from forkkit.testing.forkruns import ForkWorkspace, require_committed
from forkkit.testing.logged import run_logged
from forkkit.vcs import Repo
from forkkit.vcs.overlay import overlay_commit
from forkkit.workdir import ReportFolder, published_path

STEM = "repro"
STEM_GPU = "repro_gpu"
SCRIPT = Path(__file__).parents[2] / "scripts" / "resend_repro.py"
GPU_SCRIPT = "scripts/gpu_resend_repro.py"  # relative to the fork.toml folder

# Runs the script against a tree under a name ("fix", "base").
# (the commit to check out and run)
ScriptCall = Callable[[str, str], tuple[ScriptRun, str]]


@dataclass(frozen=True)
class Runner:
    """How one script run is started: interpreter, script, flags, environment."""

    python: Path
    script: Path
    args: tuple[str, ...]
    gpu: bool
    env: TestEnv | None = None  # CPU: the vLLM test venv (tree on PYTHONPATH)
    runtime_files: tuple[str, ...] = ()

    def command(self, tree: Path, json_out: Path) -> list[str]:
        overlay = (
            ["--overlay", str(tree), "--files", ",".join(self.runtime_files)]
            if self.gpu
            else []
        )
        return [
            str(self.python),
            str(self.script),
            *self.args,
            *overlay,
            "--json-out",
            str(json_out),
        ]

    def environ(self, tree: Path) -> dict[str, str]:
        if self.env is not None:
            return self.env.environ(tree)
        # GPU: the installed (CUDA) vllm, never the source tree on PYTHONPATH
        # (a user-site install counts); no bytecode written into the tree.
        kept = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        return {**kept, "PYTHONDONTWRITEBYTECODE": "1"}


@dataclass(frozen=True)
class _Measured:
    """One script run: its parsed output, the tree it ran on, how to rerun it."""

    run: ScriptRun
    tree: str
    command: str


class ScriptFailed(ForkkitError):
    """The script did not measure: ``why``, with its log (the message names
    the log where it is published)."""

    def __init__(self, log: Path, why: str) -> None:
        super().__init__(f"{published_path(log)}: {why}")
        self.log, self.why = log, why


def run_script(
    runner: Runner,
    tree: Path,
    *,
    out_dir: Path,
    name: str,
    timeout: float | None = None,
) -> tuple[ScriptRun, str]:
    """Run the script against ``tree``; return its parsed JSON and the command.

    Log and JSON go to ``out_dir``; messages name them where they are published.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = STEM_GPU if runner.gpu else STEM
    log = out_dir / f"{stem}-{name}.log"
    js = out_dir / f"{stem}-{name}.script.json"
    js.unlink(missing_ok=True)
    cmd = runner.command(tree, js)
    with step(f"{name}: resend reproduction against {tree}"):
        done = run_logged(
            cmd,
            cwd=tree,
            environ=runner.environ(tree),
            log=log,
            name=f"the {name} reproduction",
            timeout=timeout,
        )
    if done.timed_out:
        raise ScriptFailed(
            log,
            f"the {name} reproduction timed out after {timeout:.0f}s; "
            "raise --timeout or shrink --prompt-lens",
        )
    if not js.exists() or (done.returncode != 0 and not runner.gpu):
        tail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
        raise ScriptFailed(
            log,
            f"the {name} reproduction failed (exit {done.returncode}"
            f"{': ' + tail[0] if tail else ''}); see the log",
        )
    shown_js = str(published_path(js))
    # the command as it reruns: its JSON named where it is published
    shown_cmd = shlex.join(runner.command(tree, published_path(js)))
    return parse_script_output(js.read_text(), shown_js), shown_cmd


def make_runner(line: Line, tree: Path, opts: ReproOptions, *, gpu: bool) -> Runner:
    """The CPU runner (test venv) or the GPU one (FORKKIT_TESTENV_PYTHON)."""
    runtime = line.fixes.runtime_files
    if not gpu:
        env = ensure_testenv(line.config, tree)
        return Runner(env.python, SCRIPT, tuple(opts.script_args()), False, env)
    python = os.environ.get("FORKKIT_TESTENV_PYTHON")
    if not python:
        raise ForkkitError(
            "forkkit repro --gpu: FORKKIT_TESTENV_PYTHON is not set; point it at "
            "the python of a CUDA environment with vllm installed"
        )
    script = line.root / GPU_SCRIPT
    if not script.is_file():
        raise ForkkitError(f"{script}: missing; restore it from the forkkit checkout")
    return Runner(
        Path(python),
        script,
        tuple(opts.gpu_script_args()),
        True,
        runtime_files=runtime,
    )


def reproduce(
    line: Line,
    tree: ForkTree | Path,
    opts: ReproOptions,
    *,
    out_dir: Path | None = None,
    gpu: bool = False,
    timeout: float | None = None,
    runner: Runner | None = None,
) -> ReproResult:
    """The fix (HEAD; refused while the fork tree has uncommitted changes) and
    the base runtime (an overlay commit), each in a scratch checkout.

    Logs, the script's JSON and ``repro.{md,json}`` go into a fresh run folder,
    published as ``<workdir>/reports/repro`` (``repro_gpu``) or as ``out_dir``,
    with ``FAILED.txt`` when the run did not finish. ``runner`` defaults to
    :func:`make_runner` (the real script and venv).
    """
    repo = Repo(tree.path if isinstance(tree, ForkTree) else tree)
    stem = STEM_GPU if (runner.gpu if runner else gpu) else STEM
    with line.work.report_folder(stem, out=out_dir) as folder:
        head, base = repo.rev("HEAD"), repo.rev(BASE_TAG)
        if head is None or base is None:
            raise ForkkitError(
                f"{repo.path}: no HEAD or '{BASE_TAG}' tag; run 'forkkit materialize'"
            )
        require_committed(repo, "repro")
        runner = runner or make_runner(line, repo.path, opts, gpu=gpu)
        label = tree.upstream_label if isinstance(tree, ForkTree) else None
        result = _measure(
            line,
            repo,
            opts,
            runner=runner,
            folder=folder,
            revs=(head, base),
            upstream=label or line.upstream.label,
            timeout=timeout,
        )
        if result.fix.skipped:
            note = f"nothing was measured: {result.fix.skipped}\n"
            (folder.path / "SKIPPED.txt").write_text(note)
        else:
            write_reports(
                folder.path,
                stem,
                markdown=render_markdown(result),
                report=repro_doc(result),
            )
    return result


def _measure(
    line: Line,
    repo: Repo,
    opts: ReproOptions,
    *,
    runner: Runner,
    folder: ReportFolder,
    revs: tuple[str, str],
    upstream: str,
    timeout: float | None,
) -> ReproResult:
    """The fix run, then the base run, each in a checkout of its commit."""
    head, base = revs
    fixes = line.fixes
    runtime = fixes.runtime_files

    def script(target: str, name: str) -> tuple[ScriptRun, str]:
        place = ForkWorkspace(
            repo, target, name=f"repro-{name}", source=target, what="repro"
        )
        with place as tree:
            done = run_script(
                runner, tree, out_dir=folder.path, name=name, timeout=timeout
            )
        if place.changed:
            raise ForkkitError(
                f"{repo.path}: the {name} reproduction wrote into the tree it ran "
                f"in ({', '.join(place.changed[:3])}); make it write elsewhere"
            )
        return done

    fix, fix_cmd = script(head, "fix")
    on_base: _Measured | None = None
    if fix.skipped:
        say(f"SKIPPED: {fix.skipped}")
    elif any(repo.blob(base, f) != repo.blob(head, f) for f in runtime):
        on_base = _base_run(repo, script, revs=revs, runtime=runtime)
    else:
        say("runtime files equal base: skipping the base run")
    fix_line = f"cd {repo.path} && {fix_cmd}"
    return ReproResult(
        title=fixes.title,
        upstream=upstream,
        options=opts,
        fix=fix,
        base=on_base.run if on_base else None,
        fix_commit=head,
        base_commit=base,
        runtime_files=runtime,
        commands=(fix_line, on_base.command) if on_base else (fix_line,),
        gpu=runner.gpu,
        fix_tree=repo.tree(head),
        base_tree=on_base.tree if on_base else "",
    )


def _base_run(
    repo: Repo,
    script: ScriptCall,
    *,
    revs: tuple[str, str],
    runtime: tuple[str, ...],
) -> _Measured:
    """The base run: HEAD with base's runtime files, in a scratch worktree."""
    head, base = revs
    overlay = overlay_commit(
        repo,
        onto=head,
        source=base,
        paths=runtime,
        message=f"forkkit repro-base: runtime files from {base}\n",
    )
    run, cmd = script(overlay.commit, "base")
    checkout = f"git checkout {BASE_TAG} -- {' '.join(runtime)}"
    return _Measured(run, overlay.tree, f"{checkout} && {cmd}")
