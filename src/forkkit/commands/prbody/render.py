# SPDX-License-Identifier: Apache-2.0
"""The pull-request description, in vLLM's usual sections: Purpose, Test Plan,
Test Result (with the provenance), and a place for the AI-assistance
disclosure. Pure: it renders the red/green report's types and the optional
reports' JSON documents."""

from __future__ import annotations

import shlex

from forkkit.commands.prbody.model import (
    AI_DISCLOSURE,
    FOLD_AFTER,
    PrInputs,
    changed_tests,
    count_text,
    counts_cells,
    env_prefix,
    hunk_rows,
    portable,
    purpose_head,
    pytest_command,
    retarget,
    sdist_sha256,
    shown,
    upstream_rev,
    zero_or,
)
from forkkit.commands.prbody.render_guard import (
    guard_purpose,
    guard_test_plan,
    guard_verdict,
)
from forkkit.commands.prbody.render_reconcile import reconcile_md
from forkkit.commands.prbody.render_upstream import upstream_md
from forkkit.output.mdtext import md_text
from forkkit.output.report import md_table
from forkkit.services.proof.doc import FileRef, ProofDoc
from forkkit.services.repro.doc import ReproDoc
from forkkit.testing.classify import CATEGORIES


def render_markdown(inp: PrInputs) -> str:
    """The whole description, local paths replaced (:func:`model.portable`)."""
    rg = inp.red_green
    if rg.mode == "guard":  # a tests-only series: the fix is upstream's
        title = inp.title or rg.title
        head = [*guard_purpose(rg, title=title), *upstream_md(inp.retired, inp.rebase)]
        proof = [*guard_test_plan(rg), *guard_verdict(rg)]
    else:
        head = [*_purpose(inp), *upstream_md(inp.retired, inp.rebase)]
        proof = [*_test_plan(inp), *_verdict(rg), *_fail_to_pass(rg), *_hunks(rg)]
    parts = [
        *head,
        *proof,
        *(_repro(inp.repro) if inp.repro else []),
        *(reconcile_md(inp.reconcile) if inp.reconcile else []),
        *_provenance(rg),
        AI_DISCLOSURE,
    ]
    return portable("\n".join(parts), inp.roots)


def _purpose(inp: PrInputs) -> list[str]:
    rg = inp.red_green
    title = inp.title or rg.title
    runtime = ", ".join(f"`{f.path}`" for f in rg.files_of("runtime"))
    tests = ", ".join(changed_tests(rg))
    out = purpose_head(
        title, prompt="The bug, who hits it, and what the fix changes; link the issue."
    )
    if inp.purpose:
        out += [inp.purpose, ""]
    out.append(f"Runtime files changed: {runtime or '(none listed)'}.")
    if tests:
        out.append(f"Tests: {tests}.")
    return [*out, ""]


def _red_lines(rg: ProofDoc) -> list[str]:
    """Put the runtime files at upstream base; and back to the fix."""
    rev = upstream_rev(rg)
    runtime = rg.files_of("runtime")
    keep = " ".join(shlex.quote(f.path) for f in runtime if f.base_blob)
    gone = " ".join(shlex.quote(f.path) for f in runtime if not f.base_blob)
    paths = " ".join(shlex.quote(f.path) for f in runtime)
    to_base = [
        *([f"git checkout {rev} -- {keep}"] if keep else []),
        *([f"git rm -q -- {gone}"] if gone else []),
    ]
    return [*to_base, "{red}", f"git checkout HEAD -- {paths}"]


def _fork_red(rg: ProofDoc) -> str:
    """What the report's red was, when the fork carries more than this fix."""
    if rg.fix is None or not rg.red_recipe.built:
        return ""
    return (
        f" The report's red is the fork with only this fix's runtime hunks "
        f"reverted (`{rg.fix.id}`; any other fix the fork carries kept); on this "
        "branch, which carries this fix alone, that is the runtime files at "
        "upstream base."
    )


def _test_plan(inp: PrInputs) -> list[str]:
    rg = inp.red_green
    label = rg.upstream.label or "upstream"
    prefix = env_prefix(rg)
    red = f"{prefix} {pytest_command(rg.red.command)}"
    lines = [
        f"# red: the runtime files at upstream base ({label}), the PR's tests",
        *(red if line == "{red}" else line for line in _red_lines(rg)),
    ]
    green, own = rg.green, list(rg.tests or rg.green.targets)
    related = rg.related.command if rg.related else ""
    with_related = bool(related) and related == green.command
    suites = list(inp.own_suites)
    targets = [*own, *suites] if with_related else own
    lines += [
        "# green: the fix, same tests"
        + (" and the related suites" if with_related else ""),
        f"{prefix} {retarget(green.command, ran=green.targets, targets=targets)}",
    ]
    if rg.related and related and not with_related and suites:
        shown = retarget(related, ran=rg.related.targets, targets=suites)
        lines += ["# the fix's related suites on the fix", f"{prefix} {shown}"]
    fid = rg.fix.id if rg.fix else ""
    tools = [
        f"forkkit red-green --fix {fid}" if fid else "forkkit red-green",
        f"forkkit verify .forkkit/reports/red_green/{fid or '...'}/red_green.json",
    ]
    if inp.repro:
        gpu = " --gpu" if inp.repro.mode == "gpu" else ""
        flags = shlex.join(inp.repro.rerun)
        tools.append(f"forkkit repro{gpu} {flags}".rstrip())
    if inp.reconcile:
        tools.append(f"forkkit reconcile --with {inp.reconcile.competitor.ref}")
    return [
        "## Test Plan",
        "",
        "Red/green with upstream's own pytest suites, SWE-bench style: the PR's "
        "tests with only the runtime files at upstream base must fail (red), the "
        "same tests on the fix must pass (green), and the related suites must not "
        "regress." + _fork_red(rg) + " In a vLLM checkout of this branch:",
        "",
        "```bash",
        *lines,
        "```",
        "",
        "The same with forkkit, from the fork's `fork.toml` and `patches/` "
        "(`verify` rebuilds the trees and replays the report):",
        "",
        "```bash",
        *tools,
        "```",
        "",
    ]


def _verdict(rg: ProofDoc) -> list[str]:
    """The proof's verdict, the runs table, related suites, guards, flakes."""
    n = {cat: len(rg.ids(cat)) for cat in CATEGORIES}
    out = ["## Test Result", ""]
    if rg.valid:
        out.append(
            f"Red/green proof: ✅ **valid**: {n['FAIL_TO_PASS']} FAIL_TO_PASS, "
            f"{n['PASS_TO_PASS']} PASS_TO_PASS, no PASS_TO_FAIL or FAIL_TO_FAIL."
        )
    else:
        out += ["Red/green proof: ❌ **invalid**:", ""]
        out += [f"- {p}" for p in rg.problems]
    label = rg.upstream.label or "upstream"
    at_upstream = rg.red_recipe.kind == "runtime-from" and (
        rg.base.commit == rg.upstream_base.commit
    )
    runtime = None if at_upstream else f"runtime of {rg.base_label}"
    rows = [
        [
            "Red",
            runtime or f"{label} base runtime",
            *counts_cells(rg.red.counts),
        ],
        ["Green", "the fix", *counts_cells(rg.green.counts)],
    ]
    if rg.related:
        rows.append(["Related suites", "the fix", *counts_cells(rg.related.counts)])
    headers = ["Run", "Runtime", "Passed", "Failed", "Errors", "Skipped"]
    out += ["", md_table(headers, rows)]
    out += _related(rg) + _guards(rg)
    notes = [f"_{note}_" for note in rg.notes]
    return out + ([*notes, ""] if notes else [])


def _related(rg: ProofDoc) -> list[str]:
    suites = ", ".join(f"`{s}`" for s in rg.related_suites)
    if not rg.related:
        return [f"Related suites: not run{f' ({suites})' if suites else ''}.", ""]
    counts = count_text(rg.related.counts)
    out = [f"Related suites ({suites}) on the fix: {counts}."]
    pre = rg.related_preexisting_failures
    reg = rg.related_regressions
    if rg.related_causes:  # how many and why, never id by id
        why = "; ".join(f"{c.count} \u00d7 {c.cause}" for c in rg.related_causes)
        out.append(f"Pre-existing failures (fail on base too): {why}.")
    elif pre:
        out.append(f"Pre-existing failures (fail on base too): {shown(pre, 10)}.")
    if reg:
        out.append(f"Regressions (PASS_TO_FAIL): {shown(reg, 10)}.")
    if rg.deselected:
        out.append(f"Deselected in every run: {shown(rg.deselected, 10)}.")
    return [*out, ""]


def _guards(rg: ProofDoc) -> list[str]:
    """The SWE-bench guards and the flake check, when the report has them."""
    out: list[str] = []
    if rg.guards is not None:
        guards = [g.message for g in rg.guards]
        out.append(
            "Guards (SWE-bench): "
            + ("none tripped." if not guards else "; ".join(guards) + ".")
        )
    repeat = rg.repeat
    if repeat is not None:
        flaky = repeat.flaky
        orders = ", ".join(repeat.orders) or "?"
        out.append(
            f"Flake check: green ran {repeat.n} times (orders: {orders}; "
            f"seed {repeat.seed}): "
            + (f"FLAKY: {shown(flaky, 10)}." if flaky else "no flaky test.")
        )
    return [*out, ""] if out else []


def _fail_to_pass(rg: ProofDoc) -> list[str]:
    f2p = rg.ids("FAIL_TO_PASS")
    items = [f"- `{t}`" for t in f2p] or ["- (none)"]
    if len(items) > FOLD_AFTER:
        summary = f"{len(items)} tests that fail on base and pass with the fix"
        items = [f"<details><summary>{summary}</summary>", "", *items, "", "</details>"]
    counts = " · ".join(f"{c}: {len(rg.ids(c))}" for c in CATEGORIES[1:])
    return [f"### FAIL_TO_PASS ({len(f2p)})", "", *items, "", counts, ""]


def _hunks(rg: ProofDoc) -> list[str]:
    rows = hunk_rows(rg)
    if not rows:
        return []
    table = [
        [
            f"`{r.path}`",
            f"`{r.symbol}`",
            r.hunk,
            (
                "cannot be reverted alone"
                if not r.reverted
                else f"{len(r.turns_red)}: {shown(r.turns_red)}"
                if r.turns_red
                else "none (**untested hunk**)"
            ),
        ]
        for r in rows
    ]
    untested = [r for r in rows if r.untested]
    out = [
        "### Every runtime hunk needed",
        "",
        "Each hunk of the fix reverted alone (the rest of the fix kept), then the "
        "FAIL_TO_PASS tests run on that tree:",
        "",
        md_table(
            ["File", "Function", "Hunk", "FAIL_TO_PASS tests it turns red"], table
        ),
    ]
    if untested:
        out.append(
            f"{len(untested)} untested hunk(s): "
            + ", ".join(f"{r.hunk} (`{r.symbol}`)" for r in untested)
            + "."
        )
    return [*out, ""]


def _repro(doc: ReproDoc) -> list[str]:
    """The resend table of ``forkkit repro``."""
    rows = [
        [
            zero_or(r.prompt_len),
            r.kind.replace("_", " "),
            zero_or(r.resend_tokens),
            zero_or(r.base_cached),
            zero_or(r.fix_cached),
            zero_or(r.gained, sign=True),
        ]
        for r in doc.rows
    ]
    headers = ["Prompt", "Resend", "Resend tokens", "Cached (base)", "Cached (fix)"]
    mode = "GPU, real model" if doc.mode == "gpu" else "CPU, real scheduler"
    complete = "" if doc.complete else " Not every resend was measured."
    return [
        f"### Resend reproduction ({mode})",
        "",
        md_table([*headers, "Δ cached"], rows),
        f"Upstream {doc.upstream or '?'}; fix tree "
        f"`{doc.fix_tree or '?'}`, base runtime tree "
        f"`{doc.base_tree or '?'}`.{complete}",
        "",
    ]


def _blob(value: str | None) -> str:
    return f"`{value}`" if value else "(absent)"


def _pin_text(rg: ProofDoc) -> str:
    """How the PR names the pin: the sdist's sha256, or the git commit and
    where it is from (a local repository by its name, never its path)."""
    typed = rg.upstream.pin
    if typed is None:  # a report made before the typed pin
        ident = rg.upstream.ident
        sha = sdist_sha256(ident)
        return f"sdist sha256 `{sha}`" if sha else f"`{ident}`"
    if typed.sha256:
        return f"sdist sha256 `{typed.sha256}`"
    at = typed.commit or typed.rev
    return f"git commit `{at}` of {md_text(typed.url)}"


def _provenance(rg: ProofDoc) -> list[str]:
    """The pin, the trees that ran, and every tested file's blob ids."""
    pin = _pin_text(rg)
    out = [
        "### Provenance",
        "",
        f"- Upstream: {rg.upstream.label}, {pin}",
        f"- Base tree: `{rg.base.tree}`; fix tree: "
        f"`{rg.fork_head.tree}`; red tree (fix with base runtime "
        f"files): `{rg.red.tree}`",
        "- Patches: " + ", ".join(f"`{p.name}`" for p in rg.patches),
        "",
    ]
    files: list[FileRef] = rg.files_of("runtime") + rg.files_of("test")
    rows = [
        [f"`{f.path}`", f.role, _blob(f.base_blob), _blob(f.fix_blob)] for f in files
    ]
    out.append(md_table(["File", "Role", "Blob at base", "Blob at fix"], rows))
    return out
