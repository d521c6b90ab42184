# SPDX-License-Identifier: Apache-2.0
"""Architecture rules, checked on the source: who may run git, who imports whom."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path
from typing import get_args

import pytest

from forkkit.cli import COMMANDS as CLI_COMMANDS
from forkkit.cli import Command
from forkkit.output.verdicts import ExitTable

SRC = Path(__file__).resolve().parents[2] / "src" / "forkkit"
INFRA = (
    "vcs",
    "patches",
    "upstream",
    "fork",
    "testing",
    "output",
    "workdir",
    "txn",
    "signals",
    "process",
    "errors",
    "config",
    "pin",
    "faults",
)
COMMANDS = ("commands", "cli", "cliopts")


def _modules(*, with_scripts: bool = False) -> list[Path]:
    every = sorted(SRC.rglob("*.py"))
    return every if with_scripts else [p for p in every if "scripts" not in p.parts]


def _top(path: Path) -> str:
    """The package (or top-level module) ``path`` belongs to."""
    return path.relative_to(SRC).parts[0].removesuffix(".py")


def _outside_vcs() -> list[Path]:
    return [p for p in _modules() if "vcs" not in p.relative_to(SRC).parts]


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


@pytest.mark.parametrize("path", _outside_vcs(), ids=lambda p: p.name)
def test_no_module_outside_vcs_runs_git(path: Path) -> None:
    tree = ast.parse(path.read_text())
    for name in _imports(tree):
        assert not name.startswith(("forkkit.vcs.git", "forkkit.git")), path
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            assert node.attr != "_git", f"{path.name}:{node.lineno} uses Repo._git"
        if isinstance(node, ast.Call) and "subprocess" in ast.unparse(node.func):
            words = {c.value for c in ast.walk(node) if isinstance(c, ast.Constant)}
            assert "git" not in words, f"{path.name}:{node.lineno} starts git"


@pytest.mark.parametrize(
    "path",
    [p for p in _modules() if p.relative_to(SRC).parts[0].removesuffix(".py") in INFRA],
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_infrastructure_never_imports_services_or_commands(path: Path) -> None:
    imports = _imports(ast.parse(path.read_text()))
    above = (*COMMANDS, "services")
    bad = {i for i in imports for c in above if i.split(".")[:2] == ["forkkit", c]}
    assert not bad, f"{path.name} imports {bad}"


def _in(layer: str) -> list[Path]:
    return [p for p in _modules() if p.relative_to(SRC).parts[0] == layer]


@pytest.mark.parametrize("path", _in("services"), ids=lambda p: str(p.relative_to(SRC)))
def test_services_never_import_commands(path: Path) -> None:
    imports = _imports(ast.parse(path.read_text()))
    bad = {i for i in imports for c in COMMANDS if i.split(".")[:2] == ["forkkit", c]}
    assert not bad, f"{path.name} imports {bad}"


@pytest.mark.parametrize("path", _in("commands"), ids=lambda p: str(p.relative_to(SRC)))
def test_no_command_imports_another_command(path: Path) -> None:
    own = path.relative_to(SRC).parts[1].removesuffix(".py")
    imports = _imports(ast.parse(path.read_text()))
    bad = {
        i
        for i in imports
        if i.split(".")[:2] == ["forkkit", "commands"]
        and len(i.split(".")) > 2
        and i.split(".")[2] != own
    }
    assert not bad, f"{path.relative_to(SRC)} imports another command: {bad}"


def test_only_the_run_service_starts_pytest() -> None:
    """Every pytest run goes through ``testing/service.py`` (#34 item 1):
    its spec, the result cache and a workspace made from a commit."""
    starters = {
        str(p.relative_to(SRC))
        for p in _modules()
        if "forkkit.testing.pytest_run.run_pytest" in _imports(ast.parse(p.read_text()))
        or "pytest_run.run_pytest(" in p.read_text()
    }
    assert starters == {"testing/service.py"}


def test_the_layer_rules_see_every_layer() -> None:
    """A rule over an empty layer proves nothing: each layer has modules."""
    assert _in("services") and len({p.parts[-2] for p in _in("commands")}) > 5


# Modules that must stay pure: the patches/ layer and every command's model.
IO_MODULES = (
    "subprocess",
    "shutil",
    "tempfile",
    "urllib",
    "socket",
    "forkkit.vcs",
    "forkkit.fork",
    "forkkit.testing.env",
    "forkkit.testing.pytest_run",
    "forkkit.testing.forkruns",
    "forkkit.workdir",
    "forkkit.output",
)
IO_CALLS = {
    "open",
    "read_text",
    "read_bytes",
    "write_text",
    "write_bytes",
    "mkdir",
    "unlink",
    "iterdir",
    "glob",
    "rglob",
    "exists",
    "system",
    "print",
}


# Pure modules of a layer that IO_MODULES names: a pure module may import them.
PURE_OUTPUT = ("output/verdicts.py", "output/mdtext.py")


def _pure_modules() -> list[Path]:
    return [
        p
        for p in _modules()
        if p.relative_to(SRC).parts[0] == "patches"
        or p.name == "model.py"
        or str(p.relative_to(SRC)) in PURE_OUTPUT
    ]


def test_pure_modules_exist() -> None:
    names = {str(p.relative_to(SRC)) for p in _pure_modules()}
    assert "services/watch/model.py" in names
    assert set(PURE_OUTPUT) <= names
    assert any(n.startswith("patches/") for n in names)


@pytest.mark.parametrize("path", _pure_modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_pure_modules_do_no_io(path: Path) -> None:
    tree = ast.parse(path.read_text())
    pure = tuple(_module_name(SRC / p) for p in PURE_OUTPUT)
    for name in _imports(tree):
        if name.startswith(pure):
            continue
        assert not name.startswith(IO_MODULES), f"{path.name} imports {name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else None
            if isinstance(func, ast.Name):
                called = func.id
            assert called not in IO_CALLS, f"{path.name}:{node.lineno} calls {called}"


def _module_name(path: Path) -> str:
    parts = ("forkkit", *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """forkkit module -> the forkkit modules it imports (TYPE_CHECKING too)."""
    names = {_module_name(p): p for p in _modules()}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        wanted = _imports(ast.parse(path.read_text()))
        graph[name] = {w for w in wanted if w in names and w != name}
    return graph


def test_no_import_cycle() -> None:
    """No module reaches itself through imports (a cycle hidden behind
    ``TYPE_CHECKING`` counts: the types still depend on each other)."""
    graph = _import_graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])


# What each package may import of forkkit besides itself: the README's layout
# table, column "may import" (a change to one is a change to both).
_HELPERS = (
    *("errors", "faults", "signals", "process", "txn", "workdir"),
    *("config", "pin"),
)
_INFRA = {
    "errors": set(),
    "faults": set(),
    "signals": set(),
    "process": set(),
    "output": {"errors"},
    "txn": {"errors", "faults", "process", "signals"},
    "workdir": {"errors", "faults", "output", "process"},
    "pin": {"errors"},
    "config": {"errors", "patches", "pin", "workdir"},
    "cliopts": {"config"},
    "patches": {"errors"},
    "vcs": {"errors", "faults", "output", "process"},
    "upstream": {"config", "errors", "faults", "output", "pin", "process", "vcs"},
    "fork": {"config", "errors", "output", "patches", "pin", "txn", "upstream"}
    | {"vcs", "workdir"},
    "testing": {"config", "errors", "faults", "fork", "output", "patches"}
    | {"process"}
    | {"signals", "vcs", "workdir"},
    "scripts": set(),
}
# the domain a command loads once: services and commands take it
_DOMAIN = {"line": {"config", "errors", "fork", "patches", "pin", "workdir"}}
MAY_IMPORT = {
    **_INFRA,
    **_DOMAIN,
    "services": set(INFRA) | {"line", "services"},
    "commands": set(INFRA) | {"line", "services", "cliopts", "commands"},
}


@pytest.mark.parametrize(
    "path",
    [p for p in _modules(with_scripts=True) if _top(p) in MAY_IMPORT],
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_each_package_imports_only_what_the_layout_allows(path: Path) -> None:
    top = _top(path)
    allowed = MAY_IMPORT[top] | {top, "__version__"}  # the package's version
    used = {
        i.split(".")[1]
        for i in _imports(ast.parse(path.read_text()))
        if i.startswith("forkkit.") and len(i.split(".")) > 1
    }
    assert used <= allowed, f"{path.relative_to(SRC)} imports {used - allowed}"


def test_the_layout_table_names_every_package() -> None:
    tops = {_top(p) for p in _modules(with_scripts=True)}
    assert tops - {"cli", "__main__", "__init__"} <= set(MAY_IMPORT), tops
    assert set(_HELPERS) <= set(MAY_IMPORT)


def test_signals_are_entered_once_in_cli_main() -> None:
    """``signals_raise`` is entered by ``cli.main`` alone: one handler for the
    whole command, so a second signal during any cleanup or publishing meets
    the state of the first (tests/unit/test_signal_storm.py)."""
    users = [
        str(p.relative_to(SRC))
        for p in _modules()
        if p.name != "signals.py" and "signals_raise()" in p.read_text()
    ]
    assert users == ["cli.py"]


def _calls(tree: ast.AST) -> set[str]:
    """The dotted names called in ``tree`` (``print``, ``sys.stdout.write``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            out.add(ast.unparse(node.func))
    return out


@pytest.mark.parametrize(
    "path", sorted((SRC / "commands").glob("*/cli.py")), ids=lambda p: p.parent.name
)
def test_each_command_is_a_request_and_a_run_that_prints_nothing(path: Path) -> None:
    """A command's ``cli`` module reads its typed request and runs it into an
    ``Outcome``; only the dispatcher's ``publish`` prints, adds the job
    summary and names the report."""
    tree = ast.parse(path.read_text())
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"add_arguments", "request", "run"} <= defined, path
    assert "main" not in defined, path
    printing = {"print", "sys.stdout.write", "sys.stderr.write", "append_step_summary"}
    assert not _calls(tree) & printing, path


# --- #34 item 4: each command's verdicts and exit codes are one table ---------


def _table_home(module: str) -> str:
    """Where a command's ``EXITS`` and ``Verdict`` live: its model module if
    it has one (its own, or its service's of the same name), else its cli
    module."""
    model = module.rsplit(".", 1)[0] + ".model"
    service = model.replace("forkkit.commands.", "forkkit.services.")
    if importlib.util.find_spec(model):
        return model
    try:
        found = importlib.import_module(service)
    except ModuleNotFoundError:  # no service of the command's name
        return module
    return service if hasattr(found, "EXITS") else module


@pytest.mark.parametrize("command", CLI_COMMANDS, ids=lambda c: c.name)
def test_every_verdict_of_every_command_has_one_exit_code(command: Command) -> None:
    """Each command's ``Verdict`` has exactly the rows of its ``EXITS``
    table (a verdict without an exit code fails here), and its cli module
    reads that table."""
    cli = importlib.import_module(command.module)
    home = importlib.import_module(_table_home(command.module))
    table = getattr(home, "EXITS", None)
    assert getattr(cli, "EXITS", None) is table, f"{command.module} does not read EXITS"
    assert isinstance(table, ExitTable), f"{home.__name__}: no EXITS table"
    verdicts = get_args(getattr(home, "Verdict", None))
    assert verdicts, f"{home.__name__}: no Verdict Literal"
    assert set(table.verdicts) == set(verdicts), home.__name__
    assert len(table.verdicts) == len(verdicts)


def _outcome_codes() -> list[tuple[str, ast.expr | None]]:
    """Every ``Outcome(...)`` call under commands/: where, and its ``code=``."""
    found: list[tuple[str, ast.expr | None]] = []
    for path in _in("commands"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "Outcome":
                code = next((k.value for k in node.keywords if k.arg == "code"), None)
                found.append((f"{path.relative_to(SRC)}:{node.lineno}", code))
    return found


def test_every_outcome_code_is_read_from_the_exit_table() -> None:
    """A command's exit code is ``EXITS.code(verdict)``: never a literal,
    an if-expression or a code computed elsewhere."""
    calls = _outcome_codes()
    assert len(calls) >= len(CLI_COMMANDS)
    for where, code in calls:
        assert (
            isinstance(code, ast.Call)
            and isinstance(code.func, ast.Attribute)
            and ast.unparse(code.func) == "EXITS.code"
            and len(code.args) == 1
        ), f"{where}: code={ast.unparse(code) if code else None}"


def _attribute_compares(tree: ast.AST, attr: str) -> list[int]:
    """Lines that compare ``X.attr`` (``==``, ``!=``, ``in``) or call a
    string method on it (``X.attr.startswith(...)``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Attribute) and s.attr == attr for s in sides):
                found.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Attribute) and owner.attr == attr:
                found.append(node.lineno)
    return found


_KINDS = ("SdistPin", "GitPin")


def _kind_tests(tree: ast.AST) -> list[int]:
    """Lines that tell the pin kinds apart by hand: a compare of ``.source``
    or ``.kind`` of a pin, ``isinstance(X, SdistPin | GitPin)``, or a
    ``match`` on a pin class."""
    found = _attribute_compares(tree, "source")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "isinstance":
            if any(k in ast.unparse(node.args[1]) for k in _KINDS):
                found.append(node.lineno)
        elif (isinstance(node, ast.MatchClass) and ast.unparse(node.cls) in _KINDS) or (
            isinstance(node, ast.Attribute) and node.attr == "on_git"
        ):
            found.append(node.lineno)
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_only_pin_py_branches_on_the_upstream_kind(path: Path) -> None:
    """#45: code outside pin.py asks the pin (``spec.match(cases)``, one
    method per kind), never ``source`` nor the pin's class."""
    if path.relative_to(SRC) == Path("pin.py"):
        return
    lines = _kind_tests(ast.parse(path.read_text()))
    assert not lines, f"{path.name}:{lines} branches on the upstream's kind"


@pytest.mark.parametrize(
    "snippet",
    [
        "if spec.source == 'git': pass",
        "if isinstance(spec.pin, GitPin): pass",
        "match spec.pin:\n    case SdistPin(): pass",
        "pin = spec.on_git",
    ],
)
def test_a_hand_made_kind_test_is_found(snippet: str) -> None:
    assert _kind_tests(ast.parse(snippet))


def _fork_config_uses(tree: ast.AST) -> list[int]:
    """Lines where a function takes, or a class field holds, a ForkConfig."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
                if arg is not None and "ForkConfig" in ast.unparse(
                    arg.annotation or ast.Constant("")
                ):
                    found.append(arg.lineno)
        elif isinstance(node, ast.AnnAssign) and "ForkConfig" in ast.unparse(
            node.annotation
        ):
            found.append(node.lineno)
    return found


@pytest.mark.parametrize("path", _in("services"), ids=lambda p: str(p.relative_to(SRC)))
def test_no_service_takes_a_fork_config(path: Path) -> None:
    """#45: a service takes a Line (loaded once per command) or the Fix or pin
    it needs, never the raw config: nothing re-derives the fixes from it."""
    tree = ast.parse(path.read_text())
    assert "forkkit.config.ForkConfig" not in _imports(tree), path.name
    lines = _fork_config_uses(tree)
    assert not lines, f"{path.name}:{lines} takes a ForkConfig"


def test_a_service_taking_a_fork_config_is_found() -> None:
    code = "def f(cfg: ForkConfig) -> None: ...\nclass J:\n    cfg: ForkConfig\n"
    assert _fork_config_uses(ast.parse(code)) == [1, 3]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_reads_a_proofs_kind_from_its_label(path: Path) -> None:
    """#45: how red was made is the report's typed ``red_recipe``; a label
    is for people (only the version 1 reader, ProofDoc.upgrade, reads one)."""
    text = path.read_text()
    lines = _attribute_compares(ast.parse(text), "base_label")
    assert not lines, f"{path.name}:{lines} reads red's kind from base_label"
    if path.relative_to(SRC) != Path("services/proof/doc.py"):
        assert "HEAD without fix" not in text or path.name == "model.py", path.name
    assert '"upstream base"' not in text or path.name == "model.py", path.name


def test_one_workdir_method_names_a_fix_s_report() -> None:
    """#45: ``reports/red_green/<fix>/red_green.json`` is spelled by
    ``Workdir.proof_report`` alone (the proof's pure STEM agrees with it)."""
    from forkkit.services.proof.model import STEM
    from forkkit.workdir import PROOF_STEM

    assert STEM == PROOF_STEM
    for path in _modules():
        if path.relative_to(SRC) == Path("workdir.py"):
            continue
        text = path.read_text()
        assert '/ "red_green.json"' not in text and '"red_green") /' not in text, path
