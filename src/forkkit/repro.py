"""``forkkit repro``: the resend reproduction on CPU, base vs fix.

Runs ``scripts/resend_repro.py`` (vLLM's real ``Scheduler`` and
``KVCacheManager`` for a hybrid attention + Mamba "align" model with MTP, no
model weights) in the vLLM test venv twice: on the fork tree (fix) and on a
scratch worktree whose fork.toml [fix] runtime files are restored to ``base``.
Reports cached and recomputed prompt tokens per resend as Markdown + JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from forkkit.cliopts import add_dest_option, add_upstream_options
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.forktree import BASE_TAG, ForkTree
from forkkit.git import Git
from forkkit.progress import say, step
from forkkit.report import md_table, write_reports
from forkkit.testenv import TestEnv, ensure_testenv
from forkkit.worktree import scratch_worktree

STEM = "repro"
STEM_GPU = "repro_gpu"
SCRIPT = Path(__file__).parent / "scripts" / "resend_repro.py"
GPU_SCRIPT = "scripts/gpu_resend_repro.py"  # relative to the fork.toml folder
KINDS = ("identical", "extended", "last_token_changed")
SCHEMA = 1


@dataclass(frozen=True)
class ReproOptions:
    """What the reproduction simulates; mirrors the script's flags."""

    block_size: int = 64
    hash_block_size: int = 16
    num_spec: int = 3
    prompt_lens: tuple[int, ...] = (16000, 16001)
    extend: int = 48
    accept: int = 2
    kinds: tuple[str, ...] = KINDS
    max_num_batched_tokens: int = 8192
    model: str = "Qwen/Qwen3.5-0.8B-Base"  # GPU only

    def validate(self) -> ReproOptions:
        """Reject combinations the engine would refuse; return self."""
        where = "forkkit repro"
        positive = {
            "--block-size": self.block_size,
            "--hash-block-size": self.hash_block_size,
            "--num-spec": self.num_spec,
            "--max-num-batched-tokens": self.max_num_batched_tokens,
        }
        for flag, value in positive.items():
            if value <= 0:
                raise ForkkitError(f"{where}: {flag} must be positive, not {value}")
        if self.block_size % self.hash_block_size:
            raise ForkkitError(
                f"{where}: --block-size {self.block_size} is not a multiple of "
                f"--hash-block-size {self.hash_block_size}; pick a divisor"
            )
        if not self.prompt_lens or any(n < 2 for n in self.prompt_lens):
            raise ForkkitError(
                f"{where}: --prompt-lens needs lengths of at least 2 tokens"
            )
        if not 0 <= self.accept <= self.num_spec:
            raise ForkkitError(
                f"{where}: --accept {self.accept} must be between 0 and "
                f"--num-spec {self.num_spec}"
            )
        if self.extend < 1:
            raise ForkkitError(f"{where}: --extend must be at least 1")
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown or not self.kinds:
            raise ForkkitError(
                f"{where}: unknown resend kind(s) {unknown}; use {', '.join(KINDS)}"
            )
        return self

    def gpu_script_args(self) -> list[str]:
        """Flags of scripts/gpu_resend_repro.py (the model decides block sizes)."""
        return [
            "--model",
            self.model,
            "--hash-block-size",
            str(self.hash_block_size),
            "--num-spec",
            str(self.num_spec),
            "--prompt-lens",
            ",".join(map(str, self.prompt_lens)),
            "--extend",
            str(self.extend),
            "--kinds",
            ",".join(self.kinds),
        ]

    def script_args(self) -> list[str]:
        """The script's command-line flags."""
        return [
            "--block-size",
            str(self.block_size),
            "--hash-block-size",
            str(self.hash_block_size),
            "--num-spec",
            str(self.num_spec),
            "--prompt-lens",
            ",".join(map(str, self.prompt_lens)),
            "--extend",
            str(self.extend),
            "--accept",
            str(self.accept),
            "--kinds",
            ",".join(self.kinds),
            "--max-num-batched-tokens",
            str(self.max_num_batched_tokens),
        ]


@dataclass(frozen=True)
class ResendRow:
    """One resend as the script measured it."""

    prompt_len: int
    kind: str
    resend_tokens: int
    cached_tokens: int
    computed_at_first_schedule: int
    recomputed_prompt_tokens: int
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class ScriptRun:
    """The script's JSON document, parsed."""

    vllm_version: str
    config: dict[str, Any]
    rows: tuple[ResendRow, ...]
    seconds: float
    skipped: str = ""  # why the script measured nothing (GPU script only)

    def row(self, prompt_len: int, kind: str) -> ResendRow | None:
        return next(
            (r for r in self.rows if (r.prompt_len, r.kind) == (prompt_len, kind)),
            None,
        )


def _int(d: dict[str, Any], key: str, where: str) -> int:
    value = d.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ForkkitError(f"{where}: '{key}' is {value!r}, expected an integer")
    return value


def parse_script_output(text: str, where: str = "resend_repro.py") -> ScriptRun:
    """Parse the script's stdout: one JSON document, possibly after log lines."""
    start = text.find("{\n")
    if start < 0:
        start = text.find("{")
    try:
        doc = json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError as exc:
        raise ForkkitError(f"{where}: output is not JSON ({exc.msg})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ForkkitError(
            f"{where}: no schema-{SCHEMA} JSON document in its output; "
            "check the script log"
        )
    if doc.get("skipped"):
        return ScriptRun("unknown", {}, (), 0.0, skipped=str(doc["skipped"]))
    rows = []
    for i, raw in enumerate(doc.get("rows") or []):
        w = f"{where} rows[{i}]"
        if not isinstance(raw, dict):
            raise ForkkitError(f"{w}: not an object")
        known = {
            "prompt_len",
            "kind",
            "resend_tokens",
            "cached_tokens",
            "computed_at_first_schedule",
            "recomputed_prompt_tokens",
        }
        rows.append(
            ResendRow(
                prompt_len=_int(raw, "prompt_len", w),
                kind=str(raw.get("kind")),
                resend_tokens=_int(raw, "resend_tokens", w),
                cached_tokens=_int(raw, "cached_tokens", w),
                computed_at_first_schedule=_int(raw, "computed_at_first_schedule", w),
                recomputed_prompt_tokens=_int(raw, "recomputed_prompt_tokens", w),
                extra={k: v for k, v in raw.items() if k not in known},
            )
        )
    if not rows:
        raise ForkkitError(f"{where}: the document has no rows")
    config = doc.get("config")
    return ScriptRun(
        vllm_version=str(doc.get("vllm_version", "unknown")),
        config=config if isinstance(config, dict) else {},
        rows=tuple(rows),
        seconds=float(doc.get("seconds", 0.0)),
    )


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

    @property
    def comparisons(self) -> list[Comparison]:
        return compare(self.base, self.fix)

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "upstream": self.upstream,
            "mode": "gpu" if self.gpu else "cpu",
            "options": asdict(self.options),
            "fix_commit": self.fix_commit,
            "base_commit": self.base_commit,
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
) -> tuple[ScriptRun, str]:
    """Run the script against ``tree``; return its parsed JSON and the command."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = STEM_GPU if runner.gpu else STEM
    log = out_dir / f"{stem}-{name}.log"
    js = out_dir / f"{stem}-{name}.script.json"
    js.unlink(missing_ok=True)
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
                f"{log}: the {name} reproduction timed out after {timeout:.0f}s; "
                "raise --timeout or shrink --prompt-lens"
            ) from None
    if not js.exists() or (proc.returncode != 0 and not runner.gpu):
        tail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
        raise ForkkitError(
            f"{log}: the {name} reproduction failed (exit {proc.returncode}"
            f"{': ' + tail[0] if tail else ''}); see the log"
        )
    return parse_script_output(js.read_text(), str(js)), shlex.join(cmd)


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
    out_dir: Path,
    *,
    gpu: bool = False,
    timeout: float | None = None,
    runner: Runner | None = None,
) -> ReproResult:
    """Fix on the fork tree; base runtime in a scratch worktree (always removed).

    ``runner`` defaults to :func:`make_runner` (the real script and venv).
    """
    git = Git(tree.path if isinstance(tree, ForkTree) else tree)
    head = git.rev("HEAD")
    base = git.rev(BASE_TAG)
    if head is None or base is None:
        raise ForkkitError(
            f"{git.cwd}: no HEAD or '{BASE_TAG}' tag; run 'forkkit materialize'"
        )
    if not git.is_clean():
        raise ForkkitError(
            f"{git.cwd}: uncommitted changes to tracked files; commit and export "
            "them, or rerun 'forkkit materialize --force'"
        )
    runner = runner or make_runner(cfg, git.cwd, opts, gpu)
    gpu = runner.gpu
    runtime = tuple(cfg.fix.runtime_files)
    fix, fix_cmd = run_script(runner, git.cwd, out_dir, "fix", timeout)
    commands = [f"cd {git.cwd} && {fix_cmd}"]
    base_run: ScriptRun | None = None
    if fix.skipped:
        say(f"SKIPPED: {fix.skipped}")
    elif any(git.blob(base, f) != git.blob(head, f) for f in runtime):
        with scratch_worktree(git, head, "repro-base") as wt:
            for f in runtime:
                if git.blob(base, f):
                    wt.run("checkout", base, "--", f)
                else:
                    wt.run("rm", "-q", "-f", "--ignore-unmatch", "--", f)
            base_run, base_cmd = run_script(runner, wt.cwd, out_dir, "base", timeout)
            commands.append(
                f"git checkout {BASE_TAG} -- {' '.join(runtime)} && {base_cmd}"
            )
    else:
        say("runtime files equal base: skipping the base run")
    return ReproResult(
        title=cfg.fix.title,
        upstream=(
            tree.upstream_label if isinstance(tree, ForkTree) else cfg.upstream.label
        ),
        options=opts,
        fix=fix,
        base=base_run,
        fix_commit=head,
        base_commit=base,
        runtime_files=runtime,
        commands=tuple(commands),
        gpu=gpu,
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
        "--out", type=Path, help="report folder (default: <workdir>/reports)"
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


def run(args: argparse.Namespace, cfg: ForkConfig) -> int:
    from forkkit.forktree import materialize

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
        print("SKIPPED: FORKKIT_TESTENV_PYTHON is not set (the CUDA env's python)")
        return 0
    tree = materialize(cfg, dest=args.dest)
    out_dir = args.out or cfg.workdir / "reports"
    start = time.monotonic()
    result = reproduce(cfg, tree, opts, out_dir, gpu=args.gpu, timeout=args.timeout)
    if result.fix.skipped:
        print(f"SKIPPED: {result.fix.skipped}")
        return 0
    md_text = render_markdown(result)
    stem = STEM_GPU if args.gpu else STEM
    md, js = write_reports(out_dir, stem, md_text, result.to_json())
    say(f"repro done in {time.monotonic() - start:.0f}s: {md}, {js}")
    print(md_text)
    mismatch = any(
        m is False for c in result.comparisons for m in (c.base_match, c.fix_match)
    )
    return 1 if mismatch else 0
