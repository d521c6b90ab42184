"""Command line: ``forkkit COMMAND``; each command lives in its own module."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

from forkkit.cliopts import add_dest_option, add_upstream_options
from forkkit.config import ForkConfig, load_config
from forkkit.errors import ForkkitError
from forkkit.progress import say

# Commands whose implementation lives in another module: each such module
# defines ``add_arguments(parser)`` and ``run(args, cfg) -> int``.
PLUGIN_COMMANDS: dict[str, tuple[str, str]] = {
    "red-green": (
        "forkkit.redgreen",
        "prove the fix: red on base runtime, green on fix",
    ),
    "rebase": ("forkkit.rebase", "move the patch series onto a newer upstream"),
    "reconcile": ("forkkit.reconcile", "compare/combine with a competing change"),
    "repro": ("forkkit.repro", "CPU resend reproduction: cached tokens, base vs fix"),
}


def _spec(cfg: ForkConfig, args: argparse.Namespace) -> ForkConfig:
    """Apply the common upstream overrides (--source/--rev) to the config."""
    changes: dict[str, str] = {}
    if getattr(args, "source", None):
        changes["source"] = args.source
    if getattr(args, "git_url", None):
        changes["git_url"] = args.git_url
    if getattr(args, "rev", None):
        changes["git_rev"] = args.rev
        changes.setdefault("source", "git")
    return cfg.with_upstream(**changes) if changes else cfg


def cmd_fetch(args: argparse.Namespace, cfg: ForkConfig) -> int:
    from forkkit.upstream import fetch_sdist

    path = fetch_sdist(cfg.upstream, cfg.workdir / "cache" / "sdist")
    print(path)
    return 0


def cmd_materialize(args: argparse.Namespace, cfg: ForkConfig) -> int:
    from forkkit.forktree import materialize

    tree = materialize(cfg, dest=args.dest, force=args.force)
    if args.json:
        print(json.dumps(tree.to_json(), indent=2))
    else:
        print(tree.path)
    return 0


def cmd_export(args: argparse.Namespace, cfg: ForkConfig) -> int:
    from forkkit.forktree import export_series

    tree = args.dest or cfg.workdir / "fork"
    for name in export_series(tree, cfg.patches_dir, cfg.series_file):
        print(name)
    return 0


def _tree_for_tests(cfg: ForkConfig, dest: Path | None, pristine: bool) -> Path:
    """The fork tree to test: materialized, or as it is while you edit it.

    Local edits are kept (and tested, unless ``pristine``, which only needs
    the tree's ``base`` tag).
    """
    from forkkit.forktree import LocalChangesError, materialize

    try:
        return materialize(cfg, dest=dest).path
    except LocalChangesError as exc:
        if not pristine:
            say(f"{exc.path}: local changes; testing the tree as it is (not rebuilt)")
        return exc.path


def cmd_testenv(args: argparse.Namespace, cfg: ForkConfig) -> int:
    from forkkit.testenv import ensure_testenv

    print(ensure_testenv(cfg, _tree_for_tests(cfg, None, False)).python)
    return 0


def cmd_suites(args: argparse.Namespace, cfg: ForkConfig) -> int:
    from forkkit.forktree import BASE_TAG
    from forkkit.git import Git
    from forkkit.pytest_run import run_pytest
    from forkkit.testenv import ensure_testenv
    from forkkit.worktree import scratch_worktree

    tree = _tree_for_tests(cfg, args.dest, args.pristine)
    out = args.out or cfg.workdir / "reports" / "suites"
    targets = args.tests or list(cfg.fix.related_suites)
    extra = list(args.pytest_args)
    if args.pristine:
        # A scratch worktree at base: the fork tree itself is never touched.
        with scratch_worktree(Git(tree), BASE_TAG, "pristine") as wt:
            env = ensure_testenv(cfg, wt.cwd)
            run = run_pytest(env, wt.cwd, targets, out, "suites", extra)
    else:
        env = ensure_testenv(cfg, tree)
        run = run_pytest(env, tree, targets, out, "suites", extra)
    print(f"junit: {run.junit}", file=sys.stderr)
    return 0 if run.returncode == 0 else 1


def _build_parser() -> tuple[argparse.ArgumentParser, dict[str, Callable[..., int]]]:
    parser = argparse.ArgumentParser(prog="forkkit", description=__doc__)
    parser.add_argument(
        "--config",
        type=Path,
        default=Path("fork.toml"),
        help="path to fork.toml (default: ./fork.toml)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    handlers: dict[str, Callable[..., int]] = {}

    p = sub.add_parser("fetch", help="download and verify the pinned sdist")
    handlers["fetch"] = cmd_fetch
    p = sub.add_parser(
        "materialize", aliases=["fork"], help="build the fork tree (base + patches)"
    )
    add_upstream_options(p)
    add_dest_option(p)
    p.add_argument(
        "--force", action="store_true", help="discard local changes in the fork tree"
    )
    p.add_argument("--json", action="store_true", help="print the tree as JSON")
    handlers["materialize"] = handlers["fork"] = cmd_materialize
    p = sub.add_parser("export", help="write the fork tree's commits back to patches/")
    add_dest_option(p)
    handlers["export"] = cmd_export
    p = sub.add_parser("testenv", help="build/reuse the CPU venv for vLLM's suites")
    handlers["testenv"] = cmd_testenv
    p = sub.add_parser("suites", help="run the related suites on the fork")
    add_upstream_options(p)
    add_dest_option(p)
    p.add_argument(
        "--pristine",
        action="store_true",
        help="run on the unpatched upstream tree instead",
    )
    p.add_argument(
        "--out", type=Path, help="report folder (default: .forkkit/reports/suites)"
    )
    p.add_argument("tests", nargs="*", help="test paths (default: related suites)")
    p.add_argument(
        "--pytest-args",
        nargs=argparse.REMAINDER,
        default=[],
        help="everything after this goes to pytest",
    )
    handlers["suites"] = cmd_suites
    for name, (module, help_) in PLUGIN_COMMANDS.items():
        p = sub.add_parser(name, help=help_)
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        mod.add_arguments(p)
        handlers[name] = mod.run
    return parser, handlers


def main(argv: list[str] | None = None) -> int:
    """Entry point; user errors print one line and exit 2."""
    parser, handlers = _build_parser()
    args = parser.parse_args(argv)
    handler = handlers.get(args.command)
    if handler is None:
        parser.error(f"command {args.command!r} is not available in this build")
    try:
        cfg = _spec(load_config(args.config), args)
        return handler(args, cfg)
    except ForkkitError as exc:
        msg = " ".join(str(exc).split("\n"))
        print(f"forkkit: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("forkkit: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
