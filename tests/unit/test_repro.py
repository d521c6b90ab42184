"""``forkkit repro``: options, the script's JSON, the table, base vs fix runs."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import textwrap
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

import pytest

from forkkit import cli
from forkkit.commands.repro import cli as repro_cli
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.tree import materialize
from forkkit.line import Line
from forkkit.output.report import dump_json
from forkkit.services.repro import run as repro
from forkkit.services.repro.doc import ReproDoc, repro_doc
from forkkit.services.repro.model import (
    PRESETS,
    Comparison,
    ReproOptions,
    ReproResult,
    ScriptRun,
    compare,
    parse_script_output,
    preset_options,
)
from forkkit.services.repro.render import render_markdown
from forkkit.services.repro.run import Runner, reproduce
from forkkit.testing import env as testenv
from forkkit.vcs import scratch_root
from tests.synthetic import SyntheticUpstream, make_project


def _row(
    n: int, kind: str, cached: int, tokens: int | None = None, **extra: Any
) -> dict[str, Any]:
    tokens = n if tokens is None else tokens
    return {
        "prompt_len": n,
        "kind": kind,
        "resend_tokens": tokens,
        "cached_tokens": cached,
        "computed_at_first_schedule": cached,
        "recomputed_prompt_tokens": tokens - cached,
        **extra,
    }


def _doc(*rows: dict[str, Any]) -> str:
    return json.dumps(
        {
            "schema": 1,
            "vllm_version": "0.30.0",
            "config": {"block_size": 64, "scheduler_block_size": 64},
            "rows": list(rows),
            "seconds": 1.5,
        },
        indent=2,
    )


# ------------------------------------------------------------------ options


def test_default_options_are_the_briefed_setup() -> None:
    o = ReproOptions().validate()
    assert (o.hash_block_size, o.num_spec, o.prompt_lens) == (16, 3, (16000, 16001))
    args = o.script_args()
    assert args[args.index("--prompt-lens") + 1] == "16000,16001"
    assert args[args.index("--kinds") + 1] == "identical,extended,last_token_changed"
    assert "--block-size" not in o.gpu_script_args()


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"block_size": 40}, "not a multiple of --hash-block-size"),
        ({"hash_block_size": 0}, "--hash-block-size must be positive"),
        ({"accept": 4}, "--accept 4 must be between 0 and --num-spec 3"),
        ({"prompt_lens": ()}, "--prompt-lens"),
        ({"prompt_lens": (1,)}, "--prompt-lens"),
        ({"kinds": ("identical", "shuffled")}, "unknown resend kind(s) ['shuffled']"),
        ({"extend": 0}, "--extend"),
        ({"eagle_mode": "lookahead"}, "--eagle-mode 'lookahead'; use default or drop"),
    ],
)
def test_invalid_options_name_the_flag(changes: dict[str, Any], needle: str) -> None:
    opts = ReproOptions(**changes)
    with pytest.raises(ForkkitError) as err:
        opts.validate()
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


# ------------------------------------------------------------- script output


def test_parse_skips_log_lines_and_keeps_extra_fields() -> None:
    text = "WARNING something {odd}\n" + _doc(
        _row(16000, "identical", 15984, seed_chunk_ends=[8192, 15984])
    )
    run = parse_script_output(text)
    (row,) = run.rows
    assert (row.prompt_len, row.kind, row.cached_tokens) == (16000, "identical", 15984)
    assert row.recomputed_prompt_tokens == 16
    assert row.extra == {"seed_chunk_ends": [8192, 15984]}
    assert run.vllm_version == "0.30.0" and run.config["block_size"] == 64


def test_parse_skipped_document() -> None:
    run = parse_script_output(json.dumps({"schema": 1, "skipped": "no CUDA GPU"}))
    assert run.skipped == "no CUDA GPU" and run.rows == ()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("Traceback (most recent call last):\n  boom", "no schema-1 JSON document"),
        ('{"schema": 1, "rows": [', "output is not JSON"),
        (json.dumps({"schema": 2, "rows": []}), "no schema-1 JSON document"),
        (json.dumps({"schema": 1, "rows": []}), "has no rows"),
        (
            _doc({**_row(16000, "identical", 1), "cached_tokens": None}),
            "'cached_tokens'",
        ),
    ],
)
def test_parse_rejects_bad_output(text: str, needle: str) -> None:
    with pytest.raises(ForkkitError) as err:
        parse_script_output(text, "out.json")
    assert needle in str(err.value) and str(err.value).startswith("out.json")


# ------------------------------------------------------------- table / json


def _result(
    base: ScriptRun | None,
    fix: ScriptRun,
    gpu: bool = False,
    options: ReproOptions | None = None,
) -> ReproResult:
    return ReproResult(
        title="t",
        upstream="vllm 0.30.0",
        options=options or ReproOptions(),
        fix=fix,
        base=base,
        fix_commit="f" * 40,
        base_commit="b" * 40,
        runtime_files=("vllm/a.py",),
        commands=("cmd",),
        gpu=gpu,
    )


def test_compare_pairs_rows_and_computes_deltas() -> None:
    base = parse_script_output(
        _doc(_row(16000, "identical", 15968), _row(16001, "identical", 15984))
    )
    fix = parse_script_output(
        _doc(
            _row(16000, "identical", 15984),
            _row(16001, "identical", 15984),
            _row(16000, "extended", 16032, tokens=16048),
        )
    )
    rows = compare(base, fix)
    assert rows[0] == Comparison(16000, "identical", 16000, 15968, 15984)
    assert (rows[0].base_recomputed, rows[0].fix_recomputed, rows[0].gained) == (
        32,
        16,
        16,
    )
    assert rows[1].gained == 0
    assert rows[2].base_cached is None and rows[2].gained is None


def test_markdown_table_shows_base_and_fix() -> None:
    base = parse_script_output(_doc(_row(16000, "identical", 15968)))
    fix = parse_script_output(_doc(_row(16000, "identical", 15984)))
    md = render_markdown(_result(base, fix))
    assert "| Prompt | Resend | Resend tokens | Cached (base) | Cached (fix) |" in md
    assert "| 16,000 | identical | 16,000 | 15,968 | 15,984 | 32 | 16 | +16 |" in md
    assert "Warm = cold" not in md
    assert "EAGLE mode `default`" in md
    written = repro_doc(_result(base, fix))
    data = json.loads(dump_json(written.document()))
    assert data["rows"][0]["gained"] == 16 and data["mode"] == "cpu"
    doc = ReproDoc.of(data, where="repro.json")  # as pr-body reads it
    assert doc == written  # the one type reads back what it wrote
    assert doc.mode == "cpu" and doc.rows[0].fix_cached == 15984
    assert doc.rows[0].kind == "identical" and doc.rows[0].gained == 16


def test_markdown_gpu_columns_flag_a_mismatch() -> None:
    base = parse_script_output(
        _doc(_row(16000, "identical", 15968, warm_matches_cold=False))
    )
    fix = parse_script_output(
        _doc(_row(16000, "identical", 15984, warm_matches_cold=True))
    )
    md = render_markdown(_result(base, fix, gpu=True))
    assert "| Warm = cold (base) | Warm = cold (fix) |" in md
    assert (
        "| 16,000 | identical | 16,000 | 15,968 | 15,984 | 32 | 16 | +16 "
        "| **NO** | yes |" in md
    )


@pytest.mark.parametrize(
    ("options", "gpu", "shown"),
    [
        (ReproOptions(), False, "`forkkit repro`"),
        (
            PRESETS["qwen3.5-0.8b"],
            False,
            "`forkkit repro --preset qwen3.5-0.8b`",
        ),
        (
            replace(ReproOptions(), prompt_lens=(4096,), accept=1),
            False,
            "`forkkit repro --prompt-lens 4096 --accept 1`",
        ),
        (
            PRESETS["qwen3.5-0.8b"],
            True,
            "`forkkit repro --gpu --preset qwen3.5-0.8b`",
        ),
    ],
)
def test_markdown_names_the_flags_that_reproduce_it(
    options: ReproOptions, gpu: bool, shown: str
) -> None:
    """The report says how to rerun exactly this setup: a preset it equals,
    else the flags that differ from the defaults."""
    fix = parse_script_output(_doc(_row(16000, "identical", 15984)))
    md = render_markdown(_result(None, fix, gpu=gpu, options=options))
    assert shown in md


def test_markdown_without_base_says_why() -> None:
    fix = parse_script_output(_doc(_row(16000, "identical", 15984)))
    md = render_markdown(_result(None, fix))
    assert "| 16,000 | identical | 16,000 | — | 15,984 | — | 16 | — |" in md
    assert "Base was not run" in md


# ------------------------------------------------- base vs fix on a toy fork

# Stands in for the vLLM script: "cached tokens" = the toy's limit(n), which the
# fix moves from n - 1 to n. Imports from PYTHONPATH (CPU) or --overlay (GPU).
STUB = textwrap.dedent(
    """\
    import argparse, importlib.util, json, sys
    p = argparse.ArgumentParser()
    p.add_argument("--prompt-lens")
    p.add_argument("--kinds")
    p.add_argument("--overlay")
    p.add_argument("--files")
    p.add_argument("--json-out")
    a, _ = p.parse_known_args()
    if a.overlay:
        spec = importlib.util.spec_from_file_location(
            "calc", a.overlay + "/" + a.files.split(",")[0])
        calc = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(calc)
    else:
        import toy.calc as calc
    rows = []
    for n in map(int, a.prompt_lens.split(",")):
        for kind in a.kinds.split(","):
            c = calc.limit(n)
            rows.append(dict(prompt_len=n, kind=kind, resend_tokens=n,
                             cached_tokens=c, computed_at_first_schedule=c,
                             recomputed_prompt_tokens=n - c))
    doc = dict(schema=1, vllm_version="toy", config={}, rows=rows, seconds=0)
    open(a.json_out, "w").write(json.dumps(doc))
    print(json.dumps(doc))
    """
)


def _runner(tmp_path: Path, opts: ReproOptions, gpu: bool) -> Runner:
    script = tmp_path / "stub.py"
    script.write_text(STUB)
    env = None if gpu else testenv.TestEnv(Path(sys.executable), {}, "toy")
    args = opts.gpu_script_args() if gpu else opts.script_args()
    return Runner(Path(sys.executable), script, tuple(args), gpu, env, ("toy/calc.py",))


@pytest.mark.parametrize("gpu", [False, True], ids=["cpu", "gpu-overlay"])
def test_base_runs_with_base_runtime_and_leaves_no_worktree(
    toy_project: ForkConfig,
    tmp_path: Path,
    gpu: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a caller that lets Python write bytecode: no run writes it into a tree
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    tree = materialize(toy_project)
    opts = ReproOptions(prompt_lens=(16000, 100), kinds=("identical",))
    out = tmp_path / "reports"
    result = reproduce(
        Line.of(toy_project),
        tree,
        opts,
        out_dir=out,
        runner=_runner(tmp_path, opts, gpu),
    )
    got = [(c.prompt_len, c.base_cached, c.fix_cached) for c in result.comparisons]
    assert got == [(16000, 15999, 16000), (100, 99, 100)]
    assert result.gpu is gpu
    stem = "repro_gpu" if gpu else "repro"
    assert (out / f"{stem}-fix.script.json").exists()
    assert (out / f"{stem}-base.script.json").exists()
    assert not scratch_root(tree.path).exists()
    assert tree.repo.dirty() == []
    assert (tree.path / "toy/calc.py").read_text().count("return n\n") == 1
    # The report names the trees that ran: HEAD's, and HEAD's with base runtime.
    repo = tree.repo
    data = json.loads((out / f"{stem}.json").read_text())
    assert data["fix_tree"] == repo.tree("HEAD") and data["complete"] is True
    base_tree = data["base_tree"]
    assert repo.blob(base_tree, "toy/calc.py") == repo.blob("base", "toy/calc.py")
    assert repo.blob(base_tree, "tests/test_fix.py") == repo.blob(
        "HEAD", "tests/test_fix.py"
    )
    assert (out / f"{stem}.md").read_text() == render_markdown(result)


def test_failing_script_is_one_line_error(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    tree = materialize(toy_project)
    script = tmp_path / "bad.py"
    script.write_text(
        "import sys\nprint('vllm exploded', file=sys.stderr)\nsys.exit(3)\n"
    )
    runner = Runner(
        Path(sys.executable),
        script,
        (),
        False,
        testenv.TestEnv(Path(sys.executable), {}, "t"),
    )
    with pytest.raises(ForkkitError) as err:
        reproduce(
            Line.of(toy_project),
            tree,
            ReproOptions(),
            out_dir=tmp_path / "r",
            runner=runner,
        )
    msg = str(err.value)
    assert "fix reproduction failed (exit 3: vllm exploded)" in msg and "\n" not in msg
    assert not scratch_root(tree.path).exists()


def test_untracked_file_in_the_fork_tree_is_refused(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    tree = materialize(toy_project)
    (tree.path / "toy/fast_calc.py").write_text("def limit(n):\n    return n\n")
    opts = ReproOptions(prompt_lens=(100,), kinds=("identical",))
    out = tmp_path / "r"
    with pytest.raises(ForkkitError) as err:
        reproduce(
            Line.of(toy_project),
            tree,
            opts,
            out_dir=out,
            runner=_runner(tmp_path, opts, False),
        )
    msg = str(err.value)
    assert "uncommitted changes in the fork tree (1 file(s): toy/fast_calc.py)" in msg
    assert "commit them and run 'forkkit export', or move them out" in msg
    assert not (out / "repro-fix.script.json").exists()
    assert (out / "FAILED.txt").is_file()


def test_failed_run_replaces_the_previous_report(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    tree = materialize(toy_project)
    opts = ReproOptions(prompt_lens=(100,), kinds=("identical",))
    out = tmp_path / "r"
    reproduce(
        Line.of(toy_project),
        tree,
        opts,
        out_dir=out,
        runner=_runner(tmp_path, opts, False),
    )
    assert (out / "repro-base.script.json").exists()
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nsys.exit(3)\n")
    env = testenv.TestEnv(Path(sys.executable), {}, "t")
    runner = Runner(Path(sys.executable), bad, (), False, env)
    with pytest.raises(ForkkitError, match="fix reproduction failed"):
        reproduce(Line.of(toy_project), tree, opts, out_dir=out, runner=runner)
    assert not (out / "repro-base.script.json").exists()
    assert not (out / "repro.json").exists()
    assert "this run did not finish" in (out / "FAILED.txt").read_text()
    assert (out / "repro-fix.log").is_file()


def test_cli_gpu_without_cuda_env_is_an_error(
    toy_project: ForkConfig,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("FORKKIT_TESTENV_PYTHON")
    rc = cli.main(["--config", str(toy_project.path), "repro", "--gpu"])
    assert rc == 2  # nothing ran: never exit 0
    err = capsys.readouterr().err
    assert "FORKKIT_TESTENV_PYTHON is not set, so nothing can run" in err


SKIPPING_GPU_SCRIPT = (
    "import json, sys\n"
    "doc = dict(schema=1, skipped='no CUDA device')\n"
    "out = sys.argv[sys.argv.index('--json-out') + 1]\n"
    "open(out, 'w').write(json.dumps(doc))\n"
)


@pytest.mark.parametrize("case", ["complete", "no-base", "gpu-skipped"])
def test_cli_exit_code_is_0_only_for_a_complete_measurement(
    toy_upstream: SyntheticUpstream,
    toy_project: ForkConfig,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: str,
) -> None:
    cfg = toy_project
    if case == "no-base":  # an empty series: the runtime files equal base's
        cfg = make_project(tmp_path / "empty", toy_upstream, "1.0", changes=[])
    opts = ReproOptions(prompt_lens=(100,), kinds=("identical",))
    runner = _runner(tmp_path, opts, gpu=case == "gpu-skipped")
    if case == "gpu-skipped":
        runner.script.write_text(SKIPPING_GPU_SCRIPT)

    def make_runner(*args: Any, **kwargs: Any) -> Runner:
        return runner

    monkeypatch.setattr(repro, "make_runner", make_runner)
    argv = ["--config", str(cfg.path), "repro", "--prompt-lens", "100"]
    argv += ["--kinds", "identical", *(["--gpu"] if case == "gpu-skipped" else [])]
    rc = cli.main(argv)
    out = capsys.readouterr().out
    assert rc == (0 if case == "complete" else 1), out
    if case == "no-base":
        assert "Base was not run" in out
    if case == "gpu-skipped":
        assert out.startswith("SKIPPED: no CUDA device")
        skipped = cfg.work.report_dir("repro_gpu") / "SKIPPED.txt"
        assert "nothing was measured" in skipped.read_text()


def test_script_is_shipped_next_to_the_module() -> None:
    assert repro.SCRIPT.is_file()
    assert "resend" in repro.SCRIPT.read_text()


def _script_module(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The standalone script, loaded without vllm (it sets VLLM_* env defaults)."""
    monkeypatch.setattr(os, "environ", dict(os.environ))
    spec = importlib.util.spec_from_file_location("resend_repro", repro.SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "resend_repro", module)
    spec.loader.exec_module(module)
    return module


def test_script_takes_every_value_from_the_options(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ReproOptions holds the defaults; the script has none of its own."""
    script = _script_module(monkeypatch)
    with pytest.raises(SystemExit):
        script.parse_args([])
    assert "the following arguments are required: --block-size" in (
        capsys.readouterr().err
    )
    opts = ReproOptions(
        prompt_lens=(300, 301), kinds=("extended",), accept=1, eagle_mode="drop"
    )
    got = vars(script.parse_args(opts.script_args()))
    want = {k: v for k, v in asdict(opts).items() if k != "model"}
    assert got == {
        **want,
        "prompt_lens": "300,301",
        "kinds": "extended",
        "json_out": None,
    }


def test_every_option_has_a_flag_with_its_default() -> None:
    parser = argparse.ArgumentParser()
    repro_cli.add_arguments(parser)
    args = parser.parse_args([])
    assert repro_cli.options(args) == ReproOptions()
    assert set(repro_cli.OPTION_FLAGS) == {f.name for f in fields(ReproOptions)}


def test_preset_sets_the_seed_prs_real_model_run() -> None:
    parser = argparse.ArgumentParser()
    repro_cli.add_arguments(parser)
    opts = repro_cli.options(parser.parse_args(["--preset", "qwen3.5-0.8b"]))
    assert (opts.block_size, opts.hash_block_size, opts.num_spec) == (560, 16, 3)
    assert opts.prompt_lens == (16000,)
    assert opts.model == "Qwen/Qwen3.5-0.8B-Base"
    # Everything the preset leaves alone keeps ReproOptions' default.
    assert opts.kinds == ReproOptions().kinds
    assert opts.max_num_batched_tokens == ReproOptions().max_num_batched_tokens


def test_flags_beside_a_preset_override_it() -> None:
    parser = argparse.ArgumentParser()
    repro_cli.add_arguments(parser)
    args = parser.parse_args(
        ["--preset", "qwen3.5-0.8b", "--prompt-lens", "16000,16001", "--num-spec", "2"]
    )
    opts = repro_cli.options(args)
    assert opts.prompt_lens == (16000, 16001) and opts.num_spec == 2
    assert opts.block_size == 560


def test_unknown_preset_is_refused() -> None:
    parser = argparse.ArgumentParser()
    repro_cli.add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--preset", "nope"])
    with pytest.raises(ForkkitError, match="unknown preset 'nope'"):
        preset_options("nope", {})


@pytest.mark.parametrize(
    ("ahead", "said"),
    [(0, "the trailing-block drop"), (4, "lookahead block hashes (4 token(s)")],
)
def test_markdown_says_which_eagle_handling_the_engine_used(
    ahead: int, said: str
) -> None:
    doc = json.loads(_doc(_row(16000, "identical", 15984)))
    doc["config"]["hash_lookahead_tokens"] = ahead
    fix = parse_script_output(json.dumps(doc))
    base = parse_script_output(_doc(_row(16000, "identical", 15968)))
    md = render_markdown(_result(base, fix))
    assert f"the engine used {said}" in md and "Triton" not in md
    doc["config"]["cpu_triton_guard_lifted"] = True
    fix = parse_script_output(json.dumps(doc))
    md = render_markdown(_result(base, fix))
    assert "Triton guard, for its model runner, was lifted" in md
