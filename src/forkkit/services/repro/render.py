# SPDX-License-Identifier: Apache-2.0
"""``forkkit repro``'s Markdown: the setup line, the base-vs-fix table, rerun."""

from __future__ import annotations

import shlex

from forkkit.fork.tree import BASE_TAG
from forkkit.output.report import md_table
from forkkit.services.repro.model import Comparison, ReproResult, rerun_args

HEADERS = (
    "Prompt",
    "Resend",
    "Resend tokens",
    "Cached (base)",
    "Cached (fix)",
    "Recomputed (base)",
    "Recomputed (fix)",
    "Δ cached",
)
GPU_HEADERS = ("Warm = cold (base)", "Warm = cold (fix)")


def _n(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _delta(value: int | None) -> str:
    return "—" if value is None else f"{value:+,}"


def _yes(value: bool | None) -> str:
    return "—" if value is None else ("yes" if value else "**NO**")


def render_markdown(r: ReproResult) -> str:
    """The PR-ready section: setup line, the table, how to rerun."""
    head, setup = _setup(r)
    headers = [*HEADERS, *(GPU_HEADERS if r.gpu else ())]
    rows = [_row(r, c) for c in r.comparisons]
    lines = [head, "", setup, "", md_table(headers, rows)]
    if r.base is None:
        lines.append(
            "Base was not run: the fix's runtime files equal base's "
            "(empty patch series?).\n"
        )
    rerun = _rerun(r)
    lines += [
        f"Fix: `{r.fix_commit[:12]}`; base runtime "
        f"(`{', '.join(r.runtime_files)}` at `{BASE_TAG}` "
        f"`{r.base_commit[:12]}`).",
        "",
        f"Reproduce: {rerun}.",
        "",
    ]
    return "\n".join(lines)


def _rerun(r: ReproResult) -> str:
    """The forkkit command that measures this setup again."""
    flags = shlex.join(rerun_args(r.options, gpu=r.gpu))
    plain = "forkkit repro --gpu" if r.gpu else "forkkit repro"
    return f"`{plain} {flags}`" if flags else f"`{plain}`"


def _eagle(mode: str, cfg: dict[str, object]) -> str:
    """The EAGLE mode asked for and what the engine did with it."""
    if "hash_lookahead_tokens" not in cfg:
        return f"EAGLE mode `{mode}`"
    ahead = cfg["hash_lookahead_tokens"]
    did = (
        f"lookahead block hashes ({ahead} token(s) past each block)"
        if ahead
        else "the trailing-block drop"
    )
    lifted = (
        " (the CPU platform's Triton guard, for its model runner, was lifted: "
        "no kernel runs here)"
        if cfg.get("cpu_triton_guard_lifted")
        else ""
    )
    return f"EAGLE mode `{mode}`: the engine used {did}{lifted}"


def _setup(r: ReproResult) -> tuple[str, str]:
    """The heading, and the setup paragraph: what ran and where cached comes from."""
    o, cfg = r.options, r.fix.config
    if r.gpu:
        return "## Resend reproduction (GPU, real model)", (
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
    return "## Resend reproduction (CPU, real Scheduler + KVCacheManager)", (
        f"{r.upstream}: hybrid full attention + Mamba `align`, MTP "
        f"(`num_speculative_tokens={o.num_spec}`, {o.accept} draft(s) accepted "
        f"per step), block size {o.block_size} (scheduler "
        f"{cfg.get('scheduler_block_size', o.block_size)}), "
        f"`prefix_match_unit={o.hash_block_size}`, "
        f"`max_num_batched_tokens={o.max_num_batched_tokens}`, "
        f"{_eagle(o.eagle_mode, cfg)}. Each row: a "
        "fresh scheduler runs the prompt to completion, then the resend; "
        "cached = prefix-cache hit the engine reports for the resend "
        "(`prefill_stats.num_cached_tokens`)."
    )


def _row(r: ReproResult, c: Comparison) -> list[str]:
    """One table row; GPU runs add whether warm output matched cold."""
    kind_label = {
        "identical": "identical",
        "extended": f"extended (+{r.options.extend})",
        "last_token_changed": "last token changed",
    }
    return [
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
