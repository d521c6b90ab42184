"""Command line: ``forkkit COMMAND``; each command lives in its own module."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

from forkkit import txn
from forkkit.cliopts import add_dest_option, add_upstream_options, check_path_options
from forkkit.config import ForkConfig, load_config
from forkkit.errors import ForkkitError
from forkkit.output.progress import say
from forkkit.signals import Interrupted, signals_raise

# Commands whose implementation lives in another module: each such module
# defines ``add_arguments(parser)`` and ``run(args, cfg) -> int``.
PLUGIN_COMMANDS: dict[str, tuple[str, str]] = {
    "red-green": (
        "forkkit.commands.redgreen.run",
        "prove the fix: red on base runtime, green on fix",
    ),
    "rebase": (
        "forkkit.commands.rebase.run",
        "move the patch series onto a newer upstream",
    ),
    "reconcile": (
        "forkkit.commands.reconcile.run",
        "compare/combine with a competing change",
    ),
    "repro": (
        "forkkit.commands.repro.cli",
        "CPU resend reproduction: cached tokens, base vs fix",
    ),
    "watch": (
        "forkkit.commands.watch.run",
        "dry-run rebase onto the newest upstream release",
    ),
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
    from forkkit.upstream.sdist import fetch_sdist

    path = fetch_sdist(cfg.upstream, cfg.work.sdist_cache)
    print(path)
    return 0


def cmd_materialize(args: argparse.Namespace, cfg: ForkConfig) -> int:
    from forkkit.fork.tree import materialize

    tree = materialize(cfg, dest=args.dest, force=args.force)
    if args.json:
        print(json.dumps(tree.to_json(), indent=2))
    else:
        print(tree.path)
    return 0


def cmd_export(args: argparse.Namespace, cfg: ForkConfig) -> int:
    from forkkit.fork.export import export_series

    result = export_series(cfg, dest=args.dest, rewrite=args.rewrite)
    for name in result.names:
        print(name)
    for name in result.removed:
        say(f"removed {name} (no longer in the series)")
    return 0


def cmd_status(args: argparse.Namespace, cfg: ForkConfig) -> int:
    from forkkit.fork.status import fork_status

    status = fork_status(cfg, dest=args.dest)
    print(json.dumps(status, indent=2) if args.json else status["summary"])
    return 0


def _tree_for_tests(cfg: ForkConfig, dest: Path | None, pristine: bool) -> Path:
    """The fork tree to test: materialized, or as it is while you edit it.

    Local edits are kept (and tested, unless ``pristine``, which only needs
    the tree's ``base`` tag).
    """
    from forkkit.fork.tree import LocalChangesError, materialize
    from forkkit.vcs import Repo

    try:
        path = materialize(cfg, dest=dest).path
    except LocalChangesError as exc:
        path = exc.path
    if not pristine and Repo(path).dirty():
        say(f"{path}: local changes; testing the tree as it is (not rebuilt)")
    return path


def cmd_testenv(args: argparse.Namespace, cfg: ForkConfig) -> int:
    from forkkit.testing.env import ensure_testenv

    print(ensure_testenv(cfg, _tree_for_tests(cfg, None, False)).python)
    return 0


def cmd_suites(args: argparse.Namespace, cfg: ForkConfig) -> int:
    from forkkit.testing.suites import run_suites

    tree = _tree_for_tests(cfg, args.dest, args.pristine)
    run = run_suites(
        cfg,
        tree,
        args.tests or list(cfg.fix.related_suites),
        list(args.pytest_args),
        out=args.out,
        pristine=args.pristine,
    )
    print(f"junit: {run.junit}", file=sys.stderr)
    return 0 if run.returncode == 0 else 1


def _core_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> dict[str, Callable[..., int]]:
    """The commands implemented in this module."""
    sub.add_parser("fetch", help="download and verify the pinned sdist")
    p = sub.add_parser(
        "materialize", aliases=["fork"], help="build the fork tree (base + patches)"
    )
    add_upstream_options(p)
    add_dest_option(p)
    p.add_argument(
        "--force",
        action="store_true",
        help="discard local changes in a fork tree forkkit built",
    )
    p.add_argument("--json", action="store_true", help="print the tree as JSON")
    p = sub.add_parser("export", help="write the fork tree's commits back to patches/")
    add_dest_option(p)
    p.add_argument(
        "--rewrite",
        action="store_true",
        help="accept a rewritten series on branch fork (rebase -i, --amend)",
    )
    p = sub.add_parser("status", help="the fork tree's state (read-only)")
    add_dest_option(p)
    p.add_argument("--json", action="store_true", help="print the state as JSON")
    sub.add_parser("testenv", help="build/reuse the CPU venv for vLLM's suites")
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
    return {
        "fetch": cmd_fetch,
        "materialize": cmd_materialize,
        "fork": cmd_materialize,
        "export": cmd_export,
        "status": cmd_status,
        "testenv": cmd_testenv,
        "suites": cmd_suites,
    }


def _build_parser(
    only: str | None = "*",
) -> tuple[argparse.ArgumentParser, dict[str, Callable[..., int]]]:
    """The parser and handlers; ``only`` limits which command modules load.

    ``"*"`` loads every command module, a name loads just that command's,
    None loads none (a first pass that only finds the command's name).
    """
    parser = argparse.ArgumentParser(prog="forkkit", description=__doc__)
    parser.add_argument(
        "--config",
        type=Path,
        default=Path("fork.toml"),
        help="path to fork.toml (default: ./fork.toml)",
    )
    parser.add_argument("--wait", action="store_true", help=_WAIT_HELP)
    sub = parser.add_subparsers(dest="command", required=True)
    handlers = _core_commands(sub)
    for name, (module, help_) in PLUGIN_COMMANDS.items():
        load = only in ("*", name)
        p = sub.add_parser(name, help=help_, add_help=load)
        if load:
            mod = importlib.import_module(module)
            mod.add_arguments(p)
            handlers[name] = mod.run
    for choice in {id(c): c for c in sub.choices.values()}.values():
        # SUPPRESS keeps a --wait given before the command
        choice.add_argument(
            "--wait", action="store_true", default=argparse.SUPPRESS, help=_WAIT_HELP
        )
    return parser, handlers


_WAIT_HELP = "wait for another forkkit command on the same workdir to finish"


# Commands that only read: they never take the workdir lock.
READ_ONLY = frozenset({"status"})
_SIGNAL_EXIT = {"SIGINT": 130, "SIGHUP": 129, "SIGTERM": 143}


def _run(handler: Callable[..., int], args: argparse.Namespace, cfg: ForkConfig) -> int:
    """Run a command; writing commands hold the workdir lock and recover first."""
    if args.command in READ_ONLY:
        return handler(args, cfg)
    command = f"forkkit {args.command}"
    with cfg.work.lock(command=command, wait=args.wait):
        done = txn.recover(cfg.root)
        if done:
            say(f"{cfg.root}: {done} an interrupted update of patches/ and fork.toml")
        return handler(args, cfg)


def main(argv: list[str] | None = None) -> int:
    """Entry point; user errors print one line and exit 2."""
    first, _ = _build_parser(None)[0].parse_known_args(argv)
    parser, handlers = _build_parser(first.command)
    args = parser.parse_args(argv)
    handler = handlers[args.command]
    try:
        with signals_raise():
            cfg = _spec(load_config(args.config), args)
            check_path_options(args)
            return _run(handler, args, cfg)
    except ForkkitError as exc:
        msg = " ".join(str(exc).split("\n"))
        print(f"forkkit: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        name = str(exc) if isinstance(exc, Interrupted) else "SIGINT"
        print(f"forkkit: interrupted ({name})", file=sys.stderr)
        return _SIGNAL_EXIT.get(name, 130)


if __name__ == "__main__":
    sys.exit(main())
