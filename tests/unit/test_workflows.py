# SPDX-License-Identifier: Apache-2.0
"""The GitHub workflows, parsed: rules that actionlint and zizmor cannot see.

- Label-triggered workflows keep concurrency on the job, keyed on the label:
  GitHub keeps one pending run per group, so a workflow-level group lets any
  label event replace (cancel) a run-gpu run that is waiting for the runner.
- The contract: every ``./dev -s``/``nox -s`` session and ``forkkit`` command a
  ``run:`` step names exists, and the CPU workflow runs what ``.ci/run`` runs.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from forkkit.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
CPU_WORKFLOW = WORKFLOWS / "cpu.yml"
LABEL = "github.event.label.name"
LABEL_EVENTS = ("pull_request", "pull_request_target")
SEPARATORS = {";", "&", "&&", "|", "||", "(", ")", "!"}
NOX_SESSION_FLAGS = ("-s", "--session", "--sessions")


def workflow_paths() -> list[Path]:
    return sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])


def load(text: str) -> dict[str, Any]:
    """A workflow document; YAML 1.1 reads the key ``on`` as True."""
    doc = yaml.safe_load(text)
    assert isinstance(doc, dict), "a workflow is a mapping"
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


# --- concurrency of label-triggered workflows --------------------------------


def triggers(doc: dict[str, Any]) -> dict[str, Any]:
    """``on:`` as {event: config or None}, whichever form it was written in."""
    on = doc.get("on") or {}
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    assert isinstance(on, dict)
    return on


def label_triggered(doc: dict[str, Any]) -> bool:
    for event in LABEL_EVENTS:
        config = triggers(doc).get(event)
        types = config.get("types", []) if isinstance(config, dict) else []
        if "labeled" in ([types] if isinstance(types, str) else types):
            return True
    return False


def group_of(concurrency: object) -> str | None:
    if isinstance(concurrency, dict):
        return str(concurrency.get("group", ""))
    return None if concurrency is None else str(concurrency)


def concurrency_problems(name: str, doc: dict[str, Any]) -> list[str]:
    """Where a label event could cancel another label's waiting run."""
    if not label_triggered(doc):
        return []
    problems = []
    if "concurrency" in doc:
        problems.append(
            f"{name}: workflow-level concurrency on a `labeled` trigger: every "
            "label event joins the group and replaces its pending run; put "
            "concurrency on the job, keyed on the label"
        )
    for job_id, job in (doc.get("jobs") or {}).items():
        group = group_of(job.get("concurrency"))
        gated = LABEL in str(job.get("if", ""))
        if gated and group is not None and LABEL not in group:
            problems.append(
                f"{name}: job {job_id} is label-gated but its concurrency group "
                f"{group!r} is shared with runs of other labels; key it on "
                f"${{{{ {LABEL} }}}}"
            )
    return problems


@pytest.mark.parametrize("path", workflow_paths(), ids=lambda p: p.name)
def test_label_events_never_cancel_a_waiting_run(path: Path) -> None:
    assert concurrency_problems(path.name, load(path.read_text())) == []


LABELED = """
on:
  pull_request:
    types: [labeled]
{workflow}
jobs:
  gpu:
    if: github.event.label.name == 'run-gpu'
{job}
    runs-on: ubuntu-24.04
"""


@pytest.mark.parametrize(
    ("workflow", "job", "bad"),
    [
        ("concurrency: {group: gpu-x, cancel-in-progress: false}", "", True),
        ("", "    concurrency: {group: gpu-x}", True),
        ("", "    concurrency: gpu-${{ github.ref }}", True),
        (
            "",
            "    concurrency:\n      group: gpu-${{ github.event.label.name }}",
            False,
        ),
        ("", "", False),
    ],
)
def test_concurrency_rule_on_seeded_workflows(
    workflow: str, job: str, bad: bool
) -> None:
    doc = load(LABELED.format(workflow=workflow, job=job))
    assert bool(concurrency_problems("seeded.yml", doc)) is bad
    unlabeled = load(
        LABELED.format(workflow=workflow, job=job).replace("labeled", "opened")
    )
    assert concurrency_problems("seeded.yml", unlabeled) == []


# --- the contract: sessions and commands the workflows name ------------------


def simple_commands(script: str) -> Iterator[list[str]]:
    """The simple commands of a shell script (pipelines and lists split)."""
    script = re.sub(r"\$\{\{.*?\}\}", "GH_EXPR", script, flags=re.S)
    script = script.replace("\\\n", " ")
    for line in script.splitlines():
        lex = shlex.shlex(line, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        try:
            tokens = list(lex)
        except ValueError:  # an unbalanced quote: words are good enough
            tokens = line.split()
        command: list[str] = []
        for token in [*tokens, ";"]:
            if token in SEPARATORS:
                if command:
                    yield command
                command = []
            else:
                command.append(token)


def nox_sessions(args: list[str], defaults: list[str]) -> list[str]:
    """Sessions of ``./dev``/``nox`` arguments (nox's defaults without -s)."""
    named: list[str] = []
    taking = False
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("-"):
            flag, _, value = arg.partition("=")
            taking = flag in NOX_SESSION_FLAGS
            if taking and value:
                named += value.split(",")
                taking = False
        elif taking:
            named += arg.split(",")
    return named or list(defaults)


def forkkit_command(args: list[str]) -> str | None:
    """The command of ``forkkit`` arguments, past its global options."""
    parser = build_parser()[0]
    takes_value = {
        opt
        for action in parser._actions
        if action.nargs != 0
        for opt in action.option_strings
    }
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = arg in takes_value
        else:
            return arg
    return None


def named_in(script: str, defaults: list[str]) -> tuple[list[str], list[str]]:
    """The nox sessions and the forkkit commands a shell script names."""
    sessions: list[str] = []
    commands: list[str] = []
    for words in simple_commands(script):
        for i, word in enumerate(words):
            tool = os.path.basename(word)
            if tool in ("dev", "nox"):
                sessions += nox_sessions(words[i + 1 :], defaults)
            elif tool == "forkkit":
                command = forkkit_command(words[i + 1 :])
                commands += [command] if command else []
    return sessions, commands


def noxfile_sessions() -> tuple[set[str], list[str]]:
    """The sessions noxfile.py defines and its default sessions, from its AST."""
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    sessions: set[str] = set()
    defaults: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                call = deco if isinstance(deco, ast.Call) else None
                if "session" not in ast.unparse(call.func if call else deco):
                    continue
                names = (
                    [k.value for k in call.keywords if k.arg == "name"] if call else []
                )
                sessions.add(ast.literal_eval(names[0]) if names else node.name)
        elif isinstance(node, ast.Assign) and any(
            ast.unparse(t) == "nox.options.sessions" for t in node.targets
        ):
            defaults = list(ast.literal_eval(node.value))
    return sessions, defaults


def run_steps(doc: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for job_id, job in (doc.get("jobs") or {}).items():
        for n, step in enumerate(job.get("steps") or []):
            if "run" in step:
                yield f"{job_id}/{step.get('name', n)}", str(step["run"])


def contract_problems(name: str, doc: dict[str, Any]) -> list[str]:
    """Sessions and commands named in ``run:`` steps that do not exist."""
    sessions, defaults = noxfile_sessions()
    commands = set(build_parser()[1])
    problems = []
    for where, script in run_steps(doc):
        used_sessions, used_commands = named_in(script, defaults)
        problems += [
            f"{name} {where}: no nox session {s!r} in noxfile.py"
            for s in used_sessions
            if s not in sessions
        ]
        problems += [
            f"{name} {where}: no forkkit command {c!r}"
            for c in used_commands
            if c not in commands
        ]
    return problems


def report_path_problems(name: str, text: str) -> list[str]:
    """reports/ holds one folder per command: a file right under it is stale."""
    return [
        f"{name}: {m.group(0)} names a file directly under reports/; reports "
        "are published as reports/STEM/STEM.md"
        for m in re.finditer(r"\.forkkit/reports/[\w.-]+\.\w+\b", text)
    ]


@pytest.mark.parametrize("path", workflow_paths(), ids=lambda p: p.name)
def test_sessions_and_commands_named_in_workflows_exist(path: Path) -> None:
    assert contract_problems(path.name, load(path.read_text())) == []
    assert report_path_problems(path.name, path.read_text()) == []


def ci_sessions(script: str) -> set[str]:
    return set(named_in(script, noxfile_sessions()[1])[0])


def test_cpu_workflow_runs_what_ci_run_runs() -> None:
    cpu = load(CPU_WORKFLOW.read_text())
    in_workflow = set().union(*(ci_sessions(s) for _, s in run_steps(cpu)))
    in_ci_run = ci_sessions((ROOT / ".ci" / "run").read_text())
    assert in_workflow == in_ci_run, (
        f"cpu.yml runs {sorted(in_workflow)}, .ci/run runs {sorted(in_ci_run)}"
    )


SEEDED = """
on: push
jobs:
  a:
    runs-on: ubuntu-24.04
    steps:
      - run: |
          ./dev -s lint tests -- --junitxml=x.xml
          .forkkit/tools/bin/nox --session=red_green && nox -s no_such_session
      - name: direct
        run: >-
          forkkit --config "${{ github.workspace }}/fork.toml" --wait red-green
          -- -k x; python -m forkkit no-such-command --out y
      - run: cat .forkkit/reports/red_green.md >> "$GITHUB_STEP_SUMMARY"
"""


def test_contract_rules_on_a_seeded_workflow() -> None:
    doc = load(SEEDED)
    assert contract_problems("seeded.yml", doc) == [
        "seeded.yml a/0: no nox session 'no_such_session' in noxfile.py",
        "seeded.yml a/direct: no forkkit command 'no-such-command'",
    ]
    assert len(report_path_problems("seeded.yml", SEEDED)) == 1
    scripts = [s for _, s in run_steps(doc)]
    assert ci_sessions(scripts[0]) == {"lint", "tests", "red_green", "no_such_session"}
    assert named_in(scripts[1], [])[1] == ["red-green", "no-such-command"]
    assert ci_sessions("./dev  # the defaults\n") == set(noxfile_sessions()[1])


# --- action pins ---------------------------------------------------------------

# The newest release of each action, its tag checked against its commit (the
# tag comment says which release a SHA is; a bump changes both, here first).
PINNED = {
    "actions/cache": ("55cc8345863c7cc4c66a329aec7e433d2d1c52a9", "v6.1.0"),
    "actions/upload-artifact": ("043fb46d1a93c77aae656e7c1c64a875d1fc6a0a", "v7.0.1"),
    "astral-sh/setup-uv": ("20cfd1bf945f4377ade1205e4dbc17946fc9a30d", "v10.0.1"),
}
USES = re.compile(
    r"^\s*(?:-\s+)?uses:\s*(?P<action>[^@\s]+)@(?P<ref>\S+)(?:\s+#\s*(?P<tag>\S+))?\s*$"
)
FULL_SHA = re.compile(r"[0-9a-f]{40}")
TAG = re.compile(r"v\d+(\.\d+){0,2}")


def pin_problems(text: str) -> list[str]:
    """Each ``uses:`` of an action not pinned by a full commit SHA with its
    release tag in a comment (or pinned otherwise than :data:`PINNED` says)."""
    bad = []
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split("#")[0]
        if re.match(r"^\s*(-\s+)?uses:\s*\./", code):
            continue  # a local action: nothing is fetched
        m = USES.match(line)
        if m is None:
            if "uses:" in code:
                bad.append(f"line {n}: {line.strip()} is not ACTION@SHA # TAG")
            continue
        action, ref, tag = m["action"], m["ref"], m["tag"] or ""
        if action.startswith("docker://"):
            continue  # an image, pinned by its own digest rules
        if not FULL_SHA.fullmatch(ref) or not TAG.fullmatch(tag):
            bad.append(f"line {n}: {action}@{ref} needs a full SHA and '# vX.Y.Z'")
        elif action in PINNED and (ref, tag) != PINNED[action]:
            bad.append(f"line {n}: {action} is {tag}, pin {PINNED[action][1]}")
    return bad


@pytest.mark.parametrize("path", workflow_paths(), ids=lambda p: p.name)
def test_every_action_is_pinned_by_full_sha_with_its_tag(path: Path) -> None:
    assert not pin_problems(path.read_text())


def test_pin_rule_on_seeded_lines() -> None:
    """The rule fails each way a pin can be wrong (so it can fail at all)."""
    good = f"      - uses: actions/cache@{PINNED['actions/cache'][0]} # v6.1.0\n"
    assert not pin_problems(good)
    for wrong in (
        "      - uses: actions/cache@v6\n",  # a moving tag
        "      - uses: actions/cache@55cc834 # v6.1.0\n",  # a short SHA
        f"      - uses: actions/cache@{'0' * 40}\n",  # no tag comment
        f"      - uses: actions/cache@{'0' * 40} # v6.1.0\n",  # not v6.1.0's SHA
        "      - uses: actions/upload-artifact@"
        f"{'b' * 40} # v7.0.0\n",  # an older release
    ):
        assert pin_problems(wrong), wrong
    assert not pin_problems("      - uses: ./.github/actions/local\n")


def test_the_cpu_matrix_proves_every_line_of_the_project() -> None:
    """The main job fans out (#32 item 7): one proof job per line of
    fork.toml (itself and [line] also), each line named as --line takes it,
    and the lines job collects their summaries into one table."""
    from forkkit.config import load_config, select_line

    jobs = load(CPU_WORKFLOW.read_text())["jobs"]
    matrix = jobs["proof"]["strategy"]["matrix"]["line"]
    cfg = load_config(ROOT / "fork.toml")
    chosen = [select_line(cfg, name).path for name in matrix]
    assert sorted(chosen) == sorted([cfg.path, *cfg.also])
    runs = [s.get("run", "") for s in jobs["proof"]["steps"]]
    assert any('--line "$LINE"' in r for r in runs)
    assert jobs["lines"]["needs"] == "proof"
    collect = [s.get("run", "") for s in jobs["lines"]["steps"]]
    assert any("red_green -- --collect lines" in r for r in collect)
