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

import argparse
import os
import shlex
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from forkkit.cliopts import add_dest_option, add_upstream_options
from forkkit.commands.repro.script import (
    KINDS,
    SCHEMA,
    ReproOptions,
    ResendRow,
    ScriptRun,
    parse_script_output,
)
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.tree import BASE_TAG, ForkTree
from forkkit.output.progress import say, step
from forkkit.output.report import md_table, write_reports
from forkkit.signals import signals_raise
from forkkit.testing.env import TestEnv, ensure_testenv
from forkkit.testing.suiterun import changed_since, report_folder, require_committed
from forkkit.vcs import Repo
from forkkit.vcs.overlay import overlay_commit
from forkkit.workdir import RunFolder

STEM = "repro"
STEM_GPU = "repro_gpu"
SCRIPT = Path(__file__).parents[2] / "scripts" / "resend_repro.py"
GPU_SCRIPT = "scripts/gpu_resend_repro.py"  # relative to the fork.toml folder

__all__ = [
    "KINDS",
    "SCHEMA",
    "Comparison",
    "ReproOptions",
    "ReproResult",
    "ResendRow",
    "Runner",
    "ScriptRun",
    "compare",
    "parse_script_output",
    "render_markdown",
    "reproduce",
]


@dataclass(frozen=True)
class Comparison:
    """Base vs fix for one resend."""

    prompt_len: int
    kind: str
    resend_tokens: int
    base_cached: int | None
    fix_cached: int | None
    base_match: bool | None = None  # GPU: warm output ids == cold ones
    fix_match: bool | None = None

    @property
    def base_recomputed(self) -> int | None:
        return (
            None if self.base_cached is None else self.resend_tokens - self.base_cached
        )

    @property
    def fix_recomputed(self) -> int | None:
        return None if self.fix_cached is None else self.resend_tokens - self.fix_cached

    @property
    def gained(self) -> int | None:
        if self.base_cached is None or self.fix_cached is None:
            return None
        return self.fix_cached - self.base_cached


def _match(row: ResendRow | None) -> bool | None:
    value = row.extra.get("warm_matches_cold") if row else None
    return value if isinstance(value, bool) else None


def compare(base: ScriptRun | None, fix: ScriptRun) -> list[Comparison]:
    """Pair up the rows of both runs (fix order); a missing base row is None."""
    out = []
    for r in fix.rows:
        b = base.row(r.prompt_len, r.kind) if base else None
        out.append(
            Comparison(
                prompt_len=r.prompt_len,
                kind=r.kind,
                resend_tokens=r.resend_tokens,
                base_cached=b.cached_tokens if b else None,
                fix_cached=r.cached_tokens,
                base_match=_match(b),
                fix_match=_match(r),
            )
        )
    return out


def _n(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _delta(value: int | None) -> str:
    return "—" if value is None else f"{value:+,}"


def _yes(value: bool | None) -> str:
    return "—" if value is None else ("yes" if value else "**NO**")


@dataclass(frozen=True)
class ReproResult:
    """Everything the report needs."""

    title: str
    upstream: str
    options: ReproOptions
    fix: ScriptRun
    base: ScriptRun | None
    fix_commit: str
    base_commit: str
    runtime_files: tuple[str, ...]
    commands: tuple[str, ...]
    gpu: bool = False
    fix_tree: str = ""  # the tree ids the two runs actually ran on
    base_tree: str = ""

    @property
    def comparisons(self) -> list[Comparison]:
        return compare(self.base, self.fix)

    @property
    def complete(self) -> bool:
        """Whether every resend was measured on base and on the fix."""
        return self.base is not None and all(
            c.base_cached is not None and c.fix_cached is not None
            for c in self.comparisons
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "upstream": self.upstream,
            "mode": "gpu" if self.gpu else "cpu",
            "options": asdict(self.options),
            "fix_commit": self.fix_commit,
            "base_commit": self.base_commit,
            "fix_tree": self.fix_tree,
            "base_tree": self.base_tree,
            "complete": self.complete,
            "runtime_files": list(self.runtime_files),
            "commands": list(self.commands),
            "script_config": self.fix.config,
            "rows": [
                {
                    **asdict(c),
                    "base_recomputed": c.base_recomputed,
                    "fix_recomputed": c.fix_recomputed,
                    "gained": c.gained,
                }
                for c in self.comparisons
            ],
            "fix": [asdict(r) for r in self.fix.rows],
            "base": [asdict(r) for r in self.base.rows] if self.base else None,
        }


def render_markdown(r: ReproResult) -> str:
    """The PR-ready section: setup line, the table, how to rerun."""
    o = r.options
    cfg = r.fix.config
    if r.gpu:
        head = "## Resend reproduction (GPU, real model)"
        setup = (
            f"{cfg.get('model', '?')} BF16 on vLLM {r.fix.vllm_version} with the "
            f"{r.upstream} runtime files overlaid: MTP "
            f"(`num_speculative_tokens={o.num_spec}`), Mamba "
            f"`{cfg.get('mamba_cache_mode', 'align')}`, block size "
            f"{cfg.get('block_size', '?')}, `prefix_match_unit={o.hash_block_size}`, "
            "enforce_eager, one request at a time, greedy "
            f"{cfg.get('max_tokens', '?')} tokens. Each row: emptied cache, the "
            "resend cold, emptied cache, the prompt, the resend warm; cached = "
            "`RequestOutput.num_cached_tokens` of the warm resend."
        )
    else:
        head = "## Resend reproduction (CPU, real Scheduler + KVCacheManager)"
        setup = (
            f"{r.upstream}: hybrid full attention + Mamba `align`, MTP "
            f"(`num_speculative_tokens={o.num_spec}`, {o.accept} draft(s) accepted "
            f"per step), block size {o.block_size} (scheduler "
            f"{cfg.get('scheduler_block_size', o.block_size)}), "
            f"`prefix_match_unit={o.hash_block_size}`, "
            f"`max_num_batched_tokens={o.max_num_batched_tokens}`. Each row: a "
            "fresh scheduler runs the prompt to completion, then the resend; "
            "cached = prefix-cache hit the engine reports for the resend "
            "(`prefill_stats.num_cached_tokens`)."
        )
    lines = [head, "", setup, ""]
    kind_label = {
        "identical": "identical",
        "extended": f"extended (+{o.extend})",
        "last_token_changed": "last token changed",
    }
    rows = [
        [
            f"{c.prompt_len:,}",
            kind_label.get(c.kind, c.kind),
            _n(c.resend_tokens),
            _n(c.base_cached),
            _n(c.fix_cached),
            _n(c.base_recomputed),
            _n(c.fix_recomputed),
            _delta(c.gained),
            *([_yes(c.base_match), _yes(c.fix_match)] if r.gpu else []),
        ]
        for c in r.comparisons
    ]
    lines.append(
        md_table(
            [
                "Prompt",
                "Resend",
                "Resend tokens",
                "Cached (base)",
                "Cached (fix)",
                "Recomputed (base)",
                "Recomputed (fix)",
                "Δ cached",
                *(["Warm = cold (base)", "Warm = cold (fix)"] if r.gpu else []),
            ],
            rows,
        )
    )
    if r.base is None:
        lines.append(
            "Base was not run: the fix's runtime files equal base's "
            "(empty patch series?).\n"
        )
    lines += [
        f"Fix: `{r.fix_commit[:12]}`; base runtime "
        f"(`{', '.join(r.runtime_files)}` at `{BASE_TAG}` "
        f"`{r.base_commit[:12]}`).",
        "",
        "Reproduce: "
        + (
            "`./dev -s repro_gpu` (or `forkkit repro --gpu`)."
            if r.gpu
            else "`./dev -s repro` (or `forkkit repro`)."
        ),
        "",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------ I/O


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
        # GPU: the installed (CUDA) vllm, never the source tree on PYTHONPATH.
        return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def run_script(
    runner: Runner,
    tree: Path,
    out_dir: Path,
    name: str,
    timeout: float | None = None,
    shown_dir: Path | None = None,
) -> tuple[ScriptRun, str]:
    """Run the script against ``tree``; return its parsed JSON and the command.

    Log and JSON go to ``out_dir``; messages name them in ``shown_dir``
    (where the run folder is published), if given.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = STEM_GPU if runner.gpu else STEM
    log = out_dir / f"{stem}-{name}.log"
    js = out_dir / f"{stem}-{name}.script.json"
    js.unlink(missing_ok=True)
    shown_log = (shown_dir or out_dir) / log.name
    cmd = runner.command(tree, js)
    with step(f"{name}: resend reproduction against {tree}"), log.open("w") as fh:
        try:
            proc = subprocess.run(
                cmd,
                cwd=tree,
                env=runner.environ(tree),
                stdout=fh,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ForkkitError(
                f"{shown_log}: the {name} reproduction timed out after {timeout:.0f}s; "
                "raise --timeout or shrink --prompt-lens"
            ) from None
    if not js.exists() or (proc.returncode != 0 and not runner.gpu):
        tail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
        raise ForkkitError(
            f"{shown_log}: the {name} reproduction failed (exit {proc.returncode}"
            f"{': ' + tail[0] if tail else ''}); see the log"
        )
    shown_js = str((shown_dir or out_dir) / js.name)
    return parse_script_output(js.read_text(), shown_js), shlex.join(cmd)


def make_runner(cfg: ForkConfig, tree: Path, opts: ReproOptions, gpu: bool) -> Runner:
    """The CPU runner (test venv) or the GPU one (FORKKIT_TESTENV_PYTHON)."""
    runtime = tuple(cfg.fix.runtime_files)
    if not gpu:
        env = ensure_testenv(cfg, tree)
        return Runner(env.python, SCRIPT, tuple(opts.script_args()), False, env)
    python = os.environ.get("FORKKIT_TESTENV_PYTHON")
    if not python:
        raise ForkkitError(
            "forkkit repro --gpu: FORKKIT_TESTENV_PYTHON is not set; point it at "
            "the python of a CUDA environment with vllm installed"
        )
    script = cfg.root / GPU_SCRIPT
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
    cfg: ForkConfig,
    tree: ForkTree | Path,
    opts: ReproOptions,
    out_dir: Path | None = None,
    *,
    gpu: bool = False,
    timeout: float | None = None,
    runner: Runner | None = None,
) -> ReproResult:
    """Fix on the fork tree (refused unless clean); base runtime in a scratch
    worktree of an overlay commit (always removed).

    Logs, the script's JSON and ``repro.{md,json}`` go into a fresh run folder,
    published as ``<workdir>/reports/repro`` (``repro_gpu``) or as ``out_dir``,
    with ``FAILED.txt`` when the run did not finish. ``runner`` defaults to
    :func:`make_runner` (the real script and venv).
    """
    repo = Repo(tree.path if isinstance(tree, ForkTree) else tree)
    stem = STEM_GPU if (runner.gpu if runner else gpu) else STEM
    with signals_raise(), report_folder(cfg, stem, out_dir) as folder:
        head, base = repo.rev("HEAD"), repo.rev(BASE_TAG)
        if head is None or base is None:
            raise ForkkitError(
                f"{repo.path}: no HEAD or '{BASE_TAG}' tag; run 'forkkit materialize'"
            )
        require_committed(repo, "repro")
        runner = runner or make_runner(cfg, repo.path, opts, gpu)
        label = tree.upstream_label if isinstance(tree, ForkTree) else None
        result = _measure(
            cfg,
            repo,
            opts,
            runner,
            folder=folder,
            revs=(head, base),
            upstream=label or cfg.upstream.label,
            timeout=timeout,
        )
        if result.fix.skipped:
            note = f"nothing was measured: {result.fix.skipped}\n"
            (folder.path / "SKIPPED.txt").write_text(note)
        else:
            md, js = write_reports(
                folder.path, stem, render_markdown(result), result.to_json()
            )
            say(f"repro report: {folder.dest / md.name}, {folder.dest / js.name}")
    return result


def _measure(
    cfg: ForkConfig,
    repo: Repo,
    opts: ReproOptions,
    runner: Runner,
    *,
    folder: RunFolder,
    revs: tuple[str, str],
    upstream: str,
    timeout: float | None,
) -> ReproResult:
    """The fix run in the fork tree, then the base run in a scratch worktree."""
    head, base = revs
    runtime = tuple(cfg.fix.runtime_files)

    def script(tree: Path, name: str) -> tuple[ScriptRun, str]:
        return run_script(
            runner, tree, folder.path, name, timeout, shown_dir=folder.dest
        )

    fix, fix_cmd = script(repo.path, "fix")
    changed = changed_since(repo, head)
    if changed:
        raise ForkkitError(
            f"{repo.path}: the fork tree changed while the fix reproduction ran "
            f"({', '.join(changed[:3])}); remove what it wrote and rerun"
        )
    commands = [f"cd {repo.path} && {fix_cmd}"]
    base_run: ScriptRun | None = None
    base_tree = ""
    if fix.skipped:
        say(f"SKIPPED: {fix.skipped}")
    elif any(repo.blob(base, f) != repo.blob(head, f) for f in runtime):
        overlay = overlay_commit(
            repo,
            onto=head,
            source=base,
            paths=runtime,
            message=f"forkkit repro-base: runtime files from {base}\n",
        )
        with repo.worktree(overlay.commit, "repro-base") as wt:
            base_run, base_cmd = script(wt.path, "base")
        base_tree = overlay.tree
        commands.append(f"git checkout {BASE_TAG} -- {' '.join(runtime)} && {base_cmd}")
    else:
        say("runtime files equal base: skipping the base run")
    return ReproResult(
        title=cfg.fix.title,
        upstream=upstream,
        options=opts,
        fix=fix,
        base=base_run,
        fix_commit=head,
        base_commit=base,
        runtime_files=runtime,
        commands=tuple(commands),
        gpu=runner.gpu,
        fix_tree=repo.tree(head),
        base_tree=base_tree,
    )


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.replace(",", " ").split())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None


def _kinds(text: str) -> tuple[str, ...]:
    return tuple(k for k in text.replace(",", " ").split() if k)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = ReproOptions()
    parser.description = (
        "Resend reproduction, base vs fix: on CPU with vLLM's real Scheduler and "
        "KVCacheManager (default), or with a real model on a GPU (--gpu)."
    )
    add_upstream_options(parser)
    add_dest_option(parser)
    parser.add_argument(
        "--out",
        type=Path,
        help="report folder, replaced by each run (default: <workdir>/reports/repro)",
    )
    parser.add_argument(
        "--gpu",
        action="store_true",
        help=f"run {GPU_SCRIPT} with FORKKIT_TESTENV_PYTHON (a CUDA vllm env)",
    )
    parser.add_argument("--model", default=d.model, help="GPU: model or local path")
    parser.add_argument("--block-size", type=int, default=d.block_size)
    parser.add_argument("--hash-block-size", type=int, default=d.hash_block_size)
    parser.add_argument(
        "--num-spec", type=int, default=d.num_spec, help="MTP draft tokens"
    )
    parser.add_argument(
        "--prompt-lens",
        type=_ints,
        default=d.prompt_lens,
        help="seed prompt lengths, e.g. 16000,16001",
    )
    parser.add_argument(
        "--extend", type=int, default=d.extend, help="tokens the extended resend adds"
    )
    parser.add_argument(
        "--accept", type=int, default=d.accept, help="drafts accepted per step"
    )
    parser.add_argument(
        "--kinds", type=_kinds, default=d.kinds, help=f"subset of {','.join(KINDS)}"
    )
    parser.add_argument(
        "--max-num-batched-tokens", type=int, default=d.max_num_batched_tokens
    )
    parser.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds per script run"
    )


def exit_code(result: ReproResult) -> int:
    """0 only for a complete base-vs-fix measurement (GPU: outputs agree)."""
    if result.fix.skipped:
        return 1  # nothing was measured
    if not result.complete:
        say("repro: partial result: some resends were not measured on base and fix")
        return 1
    mismatch = any(
        m is False for c in result.comparisons for m in (c.base_match, c.fix_match)
    )
    return 1 if mismatch else 0


def main(args: argparse.Namespace, cfg: ForkConfig) -> int:
    from forkkit.fork.tree import materialize

    opts = ReproOptions(
        block_size=args.block_size,
        hash_block_size=args.hash_block_size,
        num_spec=args.num_spec,
        prompt_lens=tuple(args.prompt_lens),
        extend=args.extend,
        accept=args.accept,
        kinds=tuple(args.kinds),
        max_num_batched_tokens=args.max_num_batched_tokens,
        model=args.model,
    ).validate()
    if args.gpu and not os.environ.get("FORKKIT_TESTENV_PYTHON"):
        raise ForkkitError(
            "forkkit repro --gpu: FORKKIT_TESTENV_PYTHON is not set, so nothing "
            "can run; point it at the python of a CUDA environment with vllm"
        )
    tree = materialize(cfg, dest=args.dest)
    result = reproduce(cfg, tree, opts, args.out, gpu=args.gpu, timeout=args.timeout)
    if result.fix.skipped:
        print(f"SKIPPED: {result.fix.skipped}")
    else:
        print(render_markdown(result))
    return exit_code(result)
