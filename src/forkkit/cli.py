"""Command line: ``forkkit COMMAND``; each command lives in ``forkkit.commands``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, Protocol, cast

from forkkit import txn
from forkkit.cliopts import CommonOptions, check_path_options, set_common_defaults
from forkkit.config import ForkConfig, load_config, select_line
from forkkit.errors import ForkkitError
from forkkit.output.outcome import Outcome, publish
from forkkit.output.progress import say
from forkkit.output.verdicts import ERROR_EXIT, SIGNAL_EXIT, ExitTable
from forkkit.signals import Interrupted, signals_raise


class CommandModule(Protocol):
    """What a command's ``cli`` module defines: its options, its typed
    request read from them (checked before any lock is taken), ``run``, the
    facade over the services that returns how the command ended, and
    ``EXITS``, its verdicts' exit codes (which ``run`` ends with)."""

    EXITS: ExitTable[Any]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def request(self, args: argparse.Namespace) -> Any: ...

    def run(self, cfg: ForkConfig, request: Any) -> Outcome: ...


@dataclass(frozen=True)
class Command:
    """One ``forkkit`` subcommand; ``module`` is imported only when it runs."""

    name: str
    module: str
    help: str
    aliases: tuple[str, ...] = ()
    read_only: bool = False  # never takes the workdir lock
    needs_config: bool = True  # False: it makes the project (forkkit init)


COMMANDS: tuple[Command, ...] = (
    Command(
        "init",
        "forkkit.commands.init.cli",
        "start a project over NAME==VERSION (fork.toml, patches/series)",
        needs_config=False,
    ),
    Command(
        "fix",
        "forkkit.commands.fix.cli",
        "fix add ID PATCH...: bring a new fix into the series",
    ),
    Command("fetch", "forkkit.commands.fetch.cli", "download and verify the sdist"),
    Command(
        "materialize",
        "forkkit.commands.materialize.cli",
        "build the fork tree (base + patches)",
        aliases=("fork",),
    ),
    Command(
        "export",
        "forkkit.commands.export.cli",
        "write the fork tree's commits back to patches/",
    ),
    Command(
        "status",
        "forkkit.commands.status.cli",
        "the fork tree's state (read-only)",
        read_only=True,
    ),
    Command(
        "testenv",
        "forkkit.commands.testenv.cli",
        "build/reuse the CPU venv for vLLM's suites",
    ),
    Command(
        "suites", "forkkit.commands.suites.cli", "run the related suites on the fork"
    ),
    Command(
        "red-green",
        "forkkit.commands.redgreen.cli",
        "prove every fix alone: red without its runtime hunks, green on the fork",
    ),
    Command(
        "rebase",
        "forkkit.commands.rebase.cli",
        "move the patch series onto a newer upstream",
    ),
    Command(
        "reconcile",
        "forkkit.commands.reconcile.cli",
        "compare/combine with a competing change",
    ),
    Command(
        "repro",
        "forkkit.commands.repro.cli",
        "CPU resend reproduction: cached tokens, base vs fix",
    ),
    Command(
        "watch",
        "forkkit.commands.watch.cli",
        "dry-run rebase onto the newest upstream release",
    ),
    Command(
        "bisect",
        "forkkit.commands.bisect.cli",
        "the upstream commit that made a fix unnecessary (git bisect of proofs)",
    ),
    Command(
        "verify",
        "forkkit.commands.verify.cli",
        "replay a red/green report and compare every classification",
    ),
    Command(
        "pr-body",
        "forkkit.commands.prbody.cli",
        "write the PR description from the reports",
        read_only=True,
    ),
)
_WAIT_HELP = "wait for another forkkit command on the same workdir to finish"
_LINE_HELP = (
    "the upstream line to work on: a [line] name of the config or of one it "
    "names in [line] also (the project's own line: its version)"
)


def command_named(name: str) -> Command:
    """The command registered as ``name`` or one of its aliases."""
    return next(c for c in COMMANDS if name == c.name or name in c.aliases)


def _load(command: Command) -> CommandModule:
    return cast(CommandModule, importlib.import_module(command.module))


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps a paragraph; keeps text with line breaks (a table) as it is."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" not in text.strip("\n"):
            return super()._fill_text(text, width, indent)
        return "".join(indent + line for line in text.splitlines(keepends=True))


def _add_exit_codes(parser: argparse.ArgumentParser, exits: ExitTable[Any]) -> None:
    """End the command's ``--help`` with its exit codes, from its table
    (then the epilog of its own, if it has one)."""
    own = f"\n{parser.epilog}" if parser.epilog else ""
    parser.epilog = exits.epilog() + own
    parser.formatter_class = _HelpFormatter


def build_parser(
    only: str | None = "*",
) -> tuple[argparse.ArgumentParser, dict[str, CommandModule]]:
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
    parser.add_argument("--line", default="", metavar="NAME", help=_LINE_HELP)
    sub = parser.add_subparsers(dest="command", required=True)
    handlers: dict[str, CommandModule] = {}
    for command in COMMANDS:
        load = only == "*" or (only is not None and command_named(only) == command)
        p = sub.add_parser(
            command.name, aliases=command.aliases, help=command.help, add_help=load
        )
        set_common_defaults(p)
        # SUPPRESS keeps a --wait given before the command
        p.add_argument(
            "--wait", action="store_true", default=argparse.SUPPRESS, help=_WAIT_HELP
        )
        p.add_argument("--line", default=argparse.SUPPRESS, help=_LINE_HELP)
        if load:
            module = _load(command)
            module.add_arguments(p)
            _add_exit_codes(p, module.EXITS)
            for name in (command.name, *command.aliases):
                handlers[name] = module
    return parser, handlers


def _dispatch(
    command: Command,
    module: CommandModule,
    args: argparse.Namespace,
    *,
    load: Callable[[], ForkConfig],
) -> int:
    """Run a command and publish how it ended; writing commands hold the
    locks and recover first (and read fork.toml again when the recovery
    finished an update of it)."""
    request = module.request(args)
    if not command.needs_config:  # it writes its own files, in one transaction
        return publish(cast(Any, module).run(None, request))
    cfg = load()
    if command.read_only:
        return publish(module.run(cfg, request))
    with (
        cfg.work.lock(command=f"forkkit {args.command}", wait=args.wait),
        txn.checkout_lock(cfg.root, wait=args.wait),
    ):
        done = txn.recover(cfg.root)
        if done:
            say(f"{cfg.root}: {done} an interrupted update of patches/ and fork.toml")
        if done == "finished":
            cfg = load()  # the config read before the recovery is the old one
        return publish(module.run(cfg, request))


def main(argv: list[str] | None = None) -> int:
    """Run one command; user errors print one line and exit 2.

    Signals are handled here, once, for the whole command: the first Ctrl-C
    or SIGTERM unwinds it, and repeats are ignored through its cleanup,
    publishing and this function's own message.
    """
    try:
        with signals_raise():
            return _main(argv)
    except KeyboardInterrupt as exc:  # the first signal, wherever it landed
        name = str(exc) if isinstance(exc, Interrupted) else "SIGINT"
        print(f"forkkit: interrupted ({name})", file=sys.stderr)
        return SIGNAL_EXIT.get(name, SIGNAL_EXIT["SIGINT"])


def entry() -> NoReturn:
    """The ``forkkit`` process: :func:`main`, then exit with its code; a
    signal after the command has finished is ignored, not a traceback."""
    with signals_raise(exiting=True):
        code = main()
    sys.exit(code)


def _main(argv: list[str] | None) -> int:
    first, _ = build_parser(None)[0].parse_known_args(argv)
    parser, handlers = build_parser(first.command)
    args = parser.parse_args(argv)
    try:
        common = CommonOptions.from_namespace(args)
        check_path_options(common)
        return _dispatch(
            command_named(args.command),
            handlers[args.command],
            args,
            load=lambda: common.apply_upstream(
                select_line(load_config(args.config), args.line)
            ),
        )
    except ForkkitError as exc:
        msg = " ".join(str(exc).split("\n"))
        print(f"forkkit: error: {msg}", file=sys.stderr)
        return ERROR_EXIT


if __name__ == "__main__":
    entry()
