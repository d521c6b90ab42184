# SPDX-License-Identifier: Apache-2.0
"""The red/green report: Markdown (the PR's "Test Result" section) and JSON."""

from __future__ import annotations

import shlex

from forkkit.fork.tree import BASE_TAG
from forkkit.output.report import md_table
from forkkit.services.proof.model import RedGreenResult
from forkkit.services.proof.render_hunks import hunk_section
from forkkit.testing.causes import Cause, deselect_lines, failure_causes, summary
from forkkit.testing.classify import CATEGORIES
from forkkit.testing.forkruns import SuiteRun

Result = RedGreenResult[SuiteRun]
FOLD_AFTER = 12  # longer FAIL_TO_PASS lists go in a <details> block
GUARDS_OK = (
    "All pass: no FAIL_TO_PASS test skipped, xfailed or xpassed on the fix; "
    "every pytest exit status agrees with its JUnit; every FAIL_TO_PASS test "
    "fails on base by an assertion."
)


def count_line(run: SuiteRun) -> str:
    c = run.counts()
    if not c:
        return f"no results ({run.problem})"
    text = (
        f"{c['passed']} passed, {c['failed']} failed, {c['error']} errors, "
        f"{c['skipped']} skipped"
    )
    if c["collection_errors"]:
        text += f", {c['collection_errors']} collection errors"
    return text


def _duration(run: SuiteRun) -> str:
    if run.cached:
        return f"cached (ran in {run.run.seconds:.1f}s)"
    inner = f" (pytest {run.report.seconds:.1f}s)" if run.report else ""
    return f"{run.run.seconds:.1f}s{inner}"


def _cells(run: SuiteRun) -> list[object]:
    c = run.counts()
    if not c:
        return ["-", "-", "-", "-"]
    return [c["passed"], c["failed"], c["error"] + c["collection_errors"], c["skipped"]]


def _base_checkout(r: Result) -> list[str]:
    """Shell lines that make red's tree: the fix's runtime hunks reversed,
    patch by patch (last first), or the runtime files put at red's base
    (``--base``; those it lacks deleted)."""
    if r.fix is not None and r.red_recipe.built:
        files = " ".join(shlex.quote(f) for f in r.fix.runtime_files)
        commits = dict(r.patches)
        return [
            f"git show --format= {commits[name][:12]} -- {files} | git apply -R"
            for name in reversed(r.fix.patches)
            if name in commits and _changes_runtime(r, name)
        ]
    runtime = [f for f in r.files if f.role == "runtime"]
    keep = " ".join(shlex.quote(f.path) for f in runtime if f.base)
    gone = " ".join(shlex.quote(f.path) for f in runtime if not f.base)
    rev = BASE_TAG if r.upstream_red else r.base[:12]
    return [
        *([f"git checkout {rev} -- {keep}"] if keep else []),
        *([f"git rm -q -- {gone}"] if gone else []),
    ]


def _changes_runtime(r: Result, name: str) -> bool:
    """Whether patch ``name`` of the fix changes a runtime file (a patch of
    only tests has nothing to reverse: git apply would refuse empty input)."""
    fix = r.fix
    return fix is not None and name in fix.runtime_patches


def _red_reason(red: SuiteRun, test_id: str) -> str:
    """`` (red: AssertionError: assert 1 == 2)``: why a test failed on base."""
    t = red.report.tests.get(test_id) if red.report else None
    if t is None or not (t.kind or t.message):
        return ""
    first = t.message.strip().splitlines()[0] if t.message.strip() else ""
    if len(first) > 100:
        first = first[:97] + "..."
    if not first or first.startswith(t.kind):
        return f" (red: {first or t.kind})"
    return f" (red: {t.kind}: {first})" if t.kind else f" (red: {first})"


def render_markdown(r: Result) -> str:
    """The PR's "Test Result" section."""
    if r.mode == "guard":
        out = _summary(r) + _related(r) + _guard_lists(r) + _repeat(r)
        return "\n".join(out + _guard_commands(r) + _provenance(r))
    out = _summary(r) + _related(r) + _lists(r) + _guards(r) + _repeat(r)
    out += hunk_section(r) + _commands(r) + _provenance(r)
    return "\n".join(out)


def _guard_lists(r: Result) -> list[str]:
    """A guard's tests: how many pass on the pin, and each that does not."""
    cls = r.classification
    out = [f"### Carried tests on {r.upstream_label}", ""]
    failing = cls.ids("FAIL_TO_FAIL")
    counts = (
        f"Passing: {len(cls.ids('PASS_TO_PASS'))} · failing: {len(failing)} · "
        f"skipped: {len(cls.ids('SKIPPED'))}"
    )
    out += [counts, ""]
    bad = [f"- `{r.node(t)}`" for t in failing]
    return [*out, "Failing on the pin:", "", *bad, ""] if failing else out


def _env_prefix(r: Result) -> str:
    """What a command by hand sets before ``python -m pytest``: the whole
    environment, as the run had it (the caller's variables by name)."""
    taken = [f'{k}="${k}"' for k in r.passed_env]
    env = [f"{k}={shlex.quote(v)}" for k, v in sorted(r.env_vars.items())]
    return " ".join(["env -i", *taken, *env, "PYTHONPATH=$PWD"])


def _guard_commands(r: Result) -> list[str]:
    """The one run of a guard, by hand."""
    prefix = _env_prefix(r)
    cmds = [
        f"# in the materialized fork ({r.fork_path}); HEAD = {r.head}",
        f"# guard: the carried tests on {r.upstream_label}",
        f"{prefix} {r.green.run.command}",
    ]
    if r.related is not None:
        cmds += ["# related suites on the fix", f"{prefix} {r.related.run.command}"]
    return ["### Commands", "", "```bash", *cmds, "```", ""]


def _guard_summary(r: Result) -> list[str]:
    """A tests-only series: the verdict and the one run's row."""
    n = len(r.classification.ids("PASS_TO_PASS"))
    out = ["Guard (tests-only series: the fix is upstream's, nothing to revert): "]
    if r.valid:
        out[0] += (
            f"✅ **valid**: {n} carried test(s) pass on {r.upstream_label}. Their "
            "red was measured while the series carried the fix (patches/retired.toml)."
        )
    else:
        out[0] += "❌ **invalid**:"
        out += [""] + [f"- {p}" for p in r.problems]
    row = ["Guard", f"{r.upstream_label} (`{r.head[:12]}`)", "carried tests"]
    headers = ["Run", "Runtime", "Tests", "Passed", "Failed", "Errors", "Skipped"]
    rows = [[*row, *_cells(r.green), _duration(r.green)]]
    return [*out, "", md_table([*headers, "Duration"], rows)]


def _summary(r: Result) -> list[str]:
    """Title, verdict (with every problem) and the red/green table."""
    short = r.head[:12]
    out = ["## Test Result", ""]
    if r.title:
        out += [f"**{r.title}**", ""]
    if r.mode == "guard":
        return out + _guard_summary(r)
    cls = r.classification
    if r.valid:
        out.append(
            f"Red/green proof: ✅ **valid**: {len(cls.ids('FAIL_TO_PASS'))} "
            f"FAIL_TO_PASS, {len(cls.ids('PASS_TO_PASS'))} PASS_TO_PASS, no "
            "PASS_TO_FAIL or FAIL_TO_FAIL."
        )
    else:
        out.append("Red/green proof: ❌ **invalid**:")
        out += [""] + [f"- {p}" for p in r.problems]
    out.append("")
    runtime = _red_runtime(r)
    rows = [
        ["Red", runtime, f"fork tests (`{short}`)", *_cells(r.red), _duration(r.red)],
        [
            "Green",
            f"fixed runtime (`{short}`)",
            "same tests",
            *_cells(r.green),
            _duration(r.green),
        ],
    ]
    headers = ["Run", "Runtime", "Tests", "Passed", "Failed", "Errors", "Skipped"]
    out.append(md_table([*headers, "Duration"], rows))
    return out


def _red_runtime(r: Result) -> str:
    """The red row's runtime: upstream base's, or a patch's (``--base``)."""
    if r.upstream_red:
        return f"{r.upstream_label} base runtime (`{r.base[:12]}`)"
    if r.base_patch:
        return f"runtime after `{r.base_patch}` (`{r.base[:12]}`)"
    return f"runtime of {r.base_label}"


def _related(r: Result) -> list[str]:
    """The related suites' outcome, notes and deselected tests."""
    out: list[str] = []
    if r.related is not None:
        when = "" if r.related.cached else "in "
        out.append(
            f"Related suites (fixed runtime): {count_line(r.related)} {when}"
            f"{_duration(r.related)}: "
            + ", ".join(f"`{t}`" for t in r.related.run.args)
        )
        v = r.related_verdict
        if v.preexisting and r.related.report is not None:
            out += _preexisting(r, failure_causes(r.related.report, v.preexisting))
        if v.regressions:
            out.append(
                "\nRegressions (PASS_TO_FAIL in related suites): "
                + ", ".join(f"`{r.node(t)}`" for t in v.regressions)
            )
        out.append("")
    elif r.related_suites:
        out += ["Related suites: no results, the focused proof is already invalid.", ""]
    else:
        out += ["Related suites: not run (`--no-related`).", ""]
    out += [f"_{n}_" for n in r.notes] + ([""] if r.notes else [])
    if r.deselected:
        out += [
            "Deselected in every run (fork.toml [testenv] deselect): "
            + ", ".join(f"`{d}`" for d in r.deselected),
            "",
        ]
    return out


def _preexisting(r: Result, causes: tuple[Cause, ...]) -> list[str]:
    """The failures that fail on base too, by cause; for those of the test
    environment, the deselect lines that keep them out."""
    out = [
        "\nPre-existing failures (fail on base too, not caused by the fix): "
        + summary(causes)
        + "."
    ]
    paste = deselect_lines(causes, r.node)
    if paste:
        out += [
            "",
            "The test environment cannot run these; to leave them out of every "
            "run, paste into `fork.toml` `[testenv]`:",
            "",
            "```toml",
            "deselect = [",
            *paste,
            "]",
            "```",
        ]
    return out


def _lists(r: Result) -> list[str]:
    """FAIL_TO_PASS (with why each failed on base), counts, the bad categories."""
    cls = r.classification
    f2p = cls.ids("FAIL_TO_PASS")
    out = [f"### FAIL_TO_PASS ({len(f2p)})", ""]
    items = [f"- `{r.node(t)}`{_red_reason(r.red, t)}" for t in f2p] or ["- (none)"]
    if len(items) > FOLD_AFTER:
        summary = f"{len(items)} tests that fail on base and pass with the fix"
        items = [f"<details><summary>{summary}</summary>", "", *items, "", "</details>"]
    out += [*items, ""]
    counts = [f"{cat}: {len(cls.ids(cat))}" for cat in CATEGORIES[1:]]
    out += [" · ".join(counts), ""]
    for cat in CATEGORIES[2:4] + CATEGORIES[5:]:
        bad = cls.ids(cat)
        if bad:
            out += [f"{cat}:", ""] + [f"- `{r.node(t)}`" for t in bad] + [""]
    return out


def _guards(r: Result) -> list[str]:
    """What the guards found: blocking findings (❌) and warnings (⚠️)."""
    out = ["### Guards", ""]
    if not r.guards:
        return [*out, GUARDS_OK, ""]
    return (
        out + [f"- {'❌' if g.blocking else '⚠️'} {g.message}" for g in r.guards] + [""]
    )


def _repeat(r: Result) -> list[str]:
    """The flake check: green again in other orders."""
    rep = r.repeat
    if rep is None:
        return []
    out = [f"### Flake check (`--repeat {rep.n}`, seed {rep.seed})", ""]
    if rep.flaky:
        out.append("FLAKY: " + ", ".join(f"`{r.node(t)}`" for t in rep.flaky))
    else:
        out.append(f"No FLAKY test: green had the same outcomes in {rep.n + 1} runs.")
    rows = [["Green", "as collected", *_cells(r.green), _duration(r.green)]]
    rows += [
        [f"Repeat {i}", order, *_cells(run), _duration(run)]
        for i, (order, run) in enumerate(zip(rep.orders, rep.runs, strict=True), 1)
    ]
    headers = ["Run", "Order", "Passed", "Failed", "Errors", "Skipped", "Duration"]
    return [*out, "", md_table(headers, rows)]


def _commands(r: Result) -> list[str]:
    """Shell lines that rerun red and green by hand."""
    short = r.head[:12]
    prefix = _env_prefix(r)
    cmds = [
        f"# in the materialized fork ({r.fork_path}); HEAD = {r.head}",
        f"# red: the fork's tests on {r.base_label}"
        if r.fix is not None and r.red_recipe.built
        else f"# red: the fork's tests, runtime files restored to {r.base_label}",
        f"git worktree add --detach ../red {short} && cd ../red",
        *_base_checkout(r),
        f"{prefix} {r.red.run.command}",
        "# green: the fix as is, same tests",
        f"cd {r.fork_path}",
        f"{prefix} {r.green.run.command}",
    ]
    if r.related is not None:
        cmds += ["# related suites on the fix", f"{prefix} {r.related.run.command}"]
    return ["### Commands", "", "```bash", *cmds, "```", ""]


def _provenance(r: Result) -> list[str]:
    """Upstream, commits and trees that ran, and every tested file's blobs."""
    out = ["### Provenance", ""]
    up = f"- Upstream: {r.upstream_label} (`{r.upstream}`)"
    if r.upstream_commit:
        up += f", upstream commit `{r.upstream_commit}`"
    out += [
        up,
        f"- Base (tag `{BASE_TAG}`): commit `{r.upstream_base}`, "
        f"tree `{r.upstream_base_tree}`",
    ]
    red = "base runtime files"
    if not r.upstream_red:
        red = "the red base's runtime files"
        out.append(
            f"- Red base: {r.base_label}: commit `{r.base}`, tree `{r.base_tree}`"
        )
    out += [
        f"- Fork HEAD: commit `{r.head}`, tree `{r.head_tree}`",
        f"- Red tree (HEAD with {red}): `{r.red.tree}`",
    ]
    if r.patches:
        out.append(
            "- Patches: " + ", ".join(f"`{n}` (`{c[:12]}`)" for n, c in r.patches)
        )
    out += [f"- Python: `{r.python}`; wall time {r.seconds:.1f}s", ""]
    rows = [
        [
            f"`{f.path}`",
            f.role,
            f"`{f.base}`" if f.base else "(absent)",
            f"`{f.fix}`" if f.fix else "(absent)",
        ]
        for f in r.files
    ]
    at = "Blob at base" if r.upstream_red else "Blob at red base"
    out.append(md_table(["File", "Role", at, "Blob at fix"], rows))
    return out
