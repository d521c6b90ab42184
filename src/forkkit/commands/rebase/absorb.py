"""Pure analysis for rebasing the series: verdicts, patch surgery, the report.

Nothing here runs git or pytest; :mod:`forkkit.commands.rebase.run` does
the I/O and feeds the results in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Literal

from forkkit.errors import ForkkitError
from forkkit.output.report import md_table
from forkkit.patches.paths import is_test_path
from forkkit.patches.testids import in_test_file, target_file
from forkkit.testing.junit import JunitReport

Status = Literal[
    "clean",  # git am applied it as is (offsets allowed, no fuzz)
    "3way",  # applied with a 3-way merge against the old base blobs
    "rerere",  # 3-way with conflicts that a recorded resolution replayed
    "conflict",  # 3-way left conflict markers: resolve, then rerun
    "absorbed-textual",  # upstream already has this exact change
    "absorbed-semantic",  # upstream fixed it differently: tests pass without it
    "not-tried",  # after a conflict, later patches wait
]
ABSORBED: tuple[Status, ...] = ("absorbed-textual", "absorbed-semantic")
APPLIED: tuple[Status, ...] = ("clean", "3way", "rerere")
Outcome = Literal["rebased", "retire", "conflict", "proof-failed"]

# --- inputs -----------------------------------------------------------------


def parse_onto(text: str, name: str) -> str:
    """The version in ``NAME==VERSION`` (or a bare ``VERSION``) for ``name``."""
    pkg, sep, version = text.partition("==")
    if not sep:
        pkg, version = name, text
    norm = re.sub(r"[-_.]+", "-", pkg.strip()).lower()
    if norm != re.sub(r"[-_.]+", "-", name).lower() or not version.strip():
        raise ForkkitError(
            f"--onto {text!r}: expected {name}==VERSION (fork.toml pins {name})"
        )
    return version.strip()


def repin_toml(text: str, changes: dict[str, str], optional: Iterable[str] = ()) -> str:
    """``fork.toml`` text with only the given ``[upstream]`` string keys changed.

    Every other byte is preserved (comments, order, other tables). Keys named in
    ``optional`` are changed only where present; others must exist.
    """
    lines = text.splitlines(keepends=True)
    section = ""
    seen: set[str] = set()
    for i, line in enumerate(lines):
        head = re.match(r"^\s*\[([^\]]+)\]\s*(#.*)?$", line)
        if head:
            section = head.group(1).strip()
            continue
        if section != "upstream":
            continue
        for key, value in changes.items():
            m = re.match(rf'^(\s*{re.escape(key)}\s*=\s*)"[^"\n]*"(.*)$', line, re.S)
            if m:
                lines[i] = f'{m.group(1)}"{value}"{m.group(2)}'
                seen.add(key)
    missing = [k for k in changes if k not in seen and k not in set(optional)]
    if missing:
        raise ForkkitError(
            f"fork.toml [upstream]: no '{missing[0]} = \"...\"' line to re-pin; "
            "add it and rerun"
        )
    return "".join(lines)


def split_runtime(
    files: Sequence[str], runtime_files: Sequence[str]
) -> tuple[list[str], list[str]]:
    """A patch's files as (runtime, test): fork.toml's runtime files and any
    non-test file are runtime; the rest are the patch's TEST changes."""
    runtime = [f for f in files if f in runtime_files or not is_test_path(f)]
    return runtime, [f for f in files if f not in runtime]


def patch_targets(focused_tests: Sequence[str], files: Sequence[str]) -> list[str]:
    """The pytest targets that demonstrate one patch.

    The focused tests of fork.toml whose file the patch touches; failing that,
    the test modules the patch touches.
    """
    mine = [t for t in focused_tests if target_file(t) in files]
    if mine:
        return mine
    return [
        f
        for f in files
        if is_test_path(f)
        and f.endswith(".py")
        and PurePosixPath(f).name != "conftest.py"
    ]


# --- patch surgery ----------------------------------------------------------


def conflict_regions(text: str) -> list[tuple[int, int]]:
    """1-based (first, last) lines of each ``<<<<<<<``..``>>>>>>>`` block."""
    regions = []
    start = 0
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("<<<<<<< "):
            start = n
        elif line.startswith(">>>>>>> ") and start:
            regions.append((start, n))
            start = 0
    return regions


# --- verdicts ---------------------------------------------------------------


@dataclass(frozen=True)
class SemanticCheck:
    """Whether a patch's FAIL_TO_PASS tests pass on the new upstream without it."""

    targets: tuple[str, ...]
    fail_to_pass: tuple[str, ...]  # measured on the old base (red -> green)
    passed: tuple[str, ...] = ()  # of those, passing on new upstream + tests only
    failed: tuple[str, ...] = ()  # failing on an assertion: the bug is there
    broken: tuple[str, ...] = ()  # failing otherwise (e.g. AttributeError)
    unchecked: tuple[str, ...] = ()  # not run: their test file conflicts
    others_failing: tuple[str, ...] = ()  # other tests of the run failing there
    note: str = ""

    @property
    def absorbed(self) -> bool:
        return bool(self.passed) and not (self.failed or self.broken or self.unchecked)

    def to_json(self) -> dict[str, Any]:
        return {
            "targets": list(self.targets),
            "fail_to_pass_old": list(self.fail_to_pass),
            "pass_without_fix_new": list(self.passed),
            "fail_without_fix_new": list(self.failed),
            "broken_new": list(self.broken),
            "unchecked": list(self.unchecked),
            "others_failing_new": list(self.others_failing),
            "absorbed": self.absorbed,
            "note": self.note,
        }


def semantic_verdict(
    targets: Sequence[str],
    fail_to_pass: Sequence[str],
    red_new: JunitReport,
    conflicted_files: Sequence[str] = (),
) -> SemanticCheck:
    """Judge absorption: every old FAIL_TO_PASS test passes without the fix.

    Only an assertion failure shows the bug is still there; a test that fails
    otherwise (an AttributeError of its harness, say) is *broken* on the new
    upstream and proves nothing either way. FAIL_TO_PASS tests in
    ``conflicted_files`` could not be run (their test changes conflict). The
    patch is absorbed only if every FAIL_TO_PASS test ran and passed. Other
    failing tests of the run are reported but do not decide the verdict.
    """
    passed: list[str] = []
    failed: list[str] = []
    broken: list[str] = []
    unchecked: list[str] = []
    for t in fail_to_pass:
        outcome = red_new.tests.get(t)
        if any(in_test_file(t, f) for f in conflicted_files):
            unchecked.append(t)
        elif outcome and outcome.outcome == "passed":
            passed.append(t)
        elif (
            outcome and outcome.outcome in ("failed", "error") and outcome.is_assertion
        ):
            failed.append(t)
        else:
            broken.append(t)
    f2p = set(fail_to_pass)
    others = sorted(
        t.test_id
        for t in red_new.tests.values()
        if t.outcome in ("failed", "error") and t.test_id not in f2p
    )
    ran = len(passed) + len(failed) + len(broken)
    if passed and len(passed) == len(fail_to_pass):
        note = "all its FAIL_TO_PASS tests pass on the new upstream without the fix"
    elif failed:
        note = (
            f"{len(failed)}/{ran} FAIL_TO_PASS tests still fail on an assertion on "
            "the new upstream without it"
        )
    elif passed:
        note = f"{len(passed)}/{ran} run FAIL_TO_PASS tests pass without it"
    else:
        note = "no FAIL_TO_PASS test passed or failed on an assertion there"
    if broken:
        kinds = sorted({red_new.tests[t].kind for t in broken if t in red_new.tests})
        note += (
            f"; {len(broken)} cannot run there ({', '.join(kinds) or 'missing'}): "
            "refresh the tests to decide"
        )
    if unchecked:
        note += f"; {len(unchecked)} not checked (their test file conflicts)"
    if others:
        kinds = sorted({red_new.tests[t].kind or "failure" for t in others})
        note += (
            f"; {len(others)} other test(s) of the patch fail there too "
            f"({', '.join(kinds)}): its tests may need refreshing"
        )
    return SemanticCheck(
        tuple(targets),
        tuple(fail_to_pass),
        tuple(passed),
        tuple(failed),
        tuple(broken),
        tuple(unchecked),
        tuple(others),
        note,
    )


# --- the result -------------------------------------------------------------


@dataclass(frozen=True)
class Conflict:
    """One conflicted file left in the rebase worktree."""

    path: str
    regions: tuple[tuple[int, int], ...]  # conflict-marker line ranges
    hunks: tuple[str, ...]  # the patch's hunks that do not apply there

    def describe(self) -> str:
        where = ", ".join(f"lines {a}-{b}" for a, b in self.regions) or "no markers"
        return f"{self.path} ({where}); " + ("; ".join(self.hunks) or "whole file")


@dataclass(frozen=True)
class PatchResult:
    """What happened to one patch of the series."""

    name: str
    subject: str
    status: Status
    detail: str = ""
    old_commit: str = ""
    new_commit: str = ""
    conflicts: tuple[Conflict, ...] = ()
    semantic: SemanticCheck | None = None

    @property
    def absorbed(self) -> bool:
        return self.status in ABSORBED

    @property
    def carries(self) -> bool:
        return self.status in APPLIED

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "subject": self.subject,
            "status": self.status,
            "detail": self.detail,
            "absorbed": self.absorbed,
            "carries": self.carries,
            "old_commit": self.old_commit,
            "new_commit": self.new_commit,
            "conflicts": [
                {
                    "path": c.path,
                    "regions": [list(r) for r in c.regions],
                    "hunks": list(c.hunks),
                }
                for c in self.conflicts
            ],
            "semantic": self.semantic.to_json() if self.semantic else None,
        }


@dataclass(frozen=True)
class RebaseResult:
    """The whole rebase: per-patch verdicts, the new series, the proof."""

    old_label: str
    new_label: str
    new_pin: dict[str, str]
    trust: str
    patches: tuple[PatchResult, ...]
    repo: str
    out_dir: str = ""
    new_series: tuple[str, ...] = ()
    range_diff: str = ""
    proof: dict[str, Any] | None = None  # RedGreenResult.to_json()
    proof_markdown: str = ""
    proof_valid: bool | None = None  # None: not run
    written: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def absorbed(self) -> list[PatchResult]:
        return [p for p in self.patches if p.absorbed]

    @property
    def carried(self) -> list[PatchResult]:
        return [p for p in self.patches if p.carries]

    @property
    def conflicted(self) -> list[PatchResult]:
        return [p for p in self.patches if p.status == "conflict"]

    @property
    def can_retire(self) -> bool:
        return bool(self.patches) and all(p.absorbed for p in self.patches)

    @property
    def outcome(self) -> Outcome:
        if self.conflicted:
            return "conflict"
        if self.can_retire:
            return "retire"
        if self.proof_valid is False:
            return "proof-failed"
        return "rebased"

    @property
    def ok(self) -> bool:
        return self.outcome in ("rebased", "retire")

    @property
    def unproven(self) -> bool:
        """Rebased, but no valid red/green shows the carried series works."""
        return self.ok and bool(self.new_series) and self.proof_valid is not True

    def to_json(self) -> dict[str, Any]:
        return {
            "old": self.old_label,
            "new": self.new_label,
            "new_pin": self.new_pin,
            "trust": self.trust,
            "outcome": self.outcome,
            "ok": self.ok,
            "can_retire": self.can_retire,
            "absorbed": [p.name for p in self.absorbed],
            "carried": [p.name for p in self.carried],
            "patches": [p.to_json() for p in self.patches],
            "repo": self.repo,
            "out_dir": self.out_dir,
            "new_series": list(self.new_series),
            "range_diff": self.range_diff,
            "proof_valid": self.proof_valid,
            "unproven": self.unproven,
            "proof": self.proof,
            "written": self.written,
            "notes": list(self.notes),
        }


_STATUS_TEXT: dict[str, str] = {
    "clean": "applied cleanly",
    "3way": "applied with a 3-way merge",
    "rerere": "3-way; conflicts replayed from a recorded resolution",
    "conflict": "CONFLICT",
    "absorbed-textual": "absorbed upstream (textually)",
    "absorbed-semantic": "absorbed upstream (semantically)",
    "not-tried": "not tried (an earlier patch conflicts)",
}


def verdict_line(result: RebaseResult) -> str:
    """One sentence: what the rebase means for the fork."""
    absorbed = ", ".join(p.name for p in result.absorbed) or "none"
    carried = ", ".join(p.name for p in result.carried) or "none"
    if not result.patches:
        return f"The series is empty: nothing to carry onto {result.new_label}."
    if result.outcome == "conflict":
        names = ", ".join(p.name for p in result.conflicted)
        return f"Rebase onto {result.new_label} stopped: {names} conflicts."
    if result.can_retire:
        return (
            f"Every patch is absorbed by {result.new_label}: the fork can retire "
            "(drop the series, depend on upstream)."
        )
    return (
        f"Still carried on {result.new_label}: {carried}. "
        f"Absorbed upstream: {absorbed}. The fork cannot retire yet."
    )


def render_markdown(result: RebaseResult) -> str:
    """The PR-ready Markdown report."""
    rows = []
    for p in result.patches:
        detail = p.detail
        if p.semantic:
            detail = f"{detail}; {p.semantic.note}".strip("; ")
        rows.append([p.name, p.subject, _STATUS_TEXT[p.status], detail])
    out = [
        f"# Rebase: {result.old_label} → {result.new_label}\n",
        f"**{verdict_line(result)}**\n",
        f"- New pin: {', '.join(f'{k} `{v}`' for k, v in result.new_pin.items())}",
        f"- Trust: {result.trust}",
        f"- Rebase repo (rerere cache in .git/rr-cache): `{result.repo}`",
    ]
    if result.out_dir:
        out.append(f"- Refreshed series: `{result.out_dir}`")
    written = "yes" if result.written else "no (dry run, not successful, or unproven)"
    out.append(f"- Written to patches/ and fork.toml: {written}")
    if result.unproven:
        out.append("- Proof: **unproven**: no valid red/green on the refreshed series")
    out += [
        "",
        "## Patches\n",
        md_table(["patch", "subject", "result", "detail"], rows),
    ]
    for p in result.conflicted:
        out.append(f"## Conflict in {p.name}\n")
        out += [f"- {c.describe()}" for c in p.conflicts]
        out.append(
            f"\nResolve the markers in `{result.repo}` (edit the files; no need to "
            "commit), then rerun the same command: git rerere records the "
            "resolution and replays it.\n"
        )
    sem = [p for p in result.patches if p.semantic]
    if sem:
        out.append("## Semantic absorption checks\n")
        sem_rows: list[list[object]] = []
        for p in sem:
            s = p.semantic
            assert s is not None
            sem_rows.append(
                [
                    p.name,
                    ", ".join(s.targets),
                    len(s.fail_to_pass),
                    len(s.passed),
                    len(s.failed),
                    len(s.broken),
                    len(s.unchecked),
                    len(s.others_failing),
                    "yes" if s.absorbed else "no",
                ]
            )
        out.append(
            "Tests run on the new upstream with only the patch's test changes "
            "(runtime fix not applied).\n"
        )
        out.append(
            md_table(
                [
                    "patch",
                    "targets",
                    "FAIL_TO_PASS (old)",
                    "pass without fix (new)",
                    "fail without fix (new)",
                    "cannot run (new)",
                    "not checked (conflict)",
                    "other failures (new)",
                    "absorbed",
                ],
                sem_rows,
            )
        )
    if result.range_diff:
        out += [
            "## Range-diff (old series vs new)\n",
            "```",
            result.range_diff.rstrip(),
            "```\n",
        ]
    if result.proof_markdown:
        # nest the red/green report's headings under this section
        proof = re.sub(
            r"^(#{1,5}) ", r"#\1 ", result.proof_markdown.rstrip(), flags=re.M
        )
        out += ["## Red/green on the rebased series\n", proof, ""]
    elif result.proof_valid is None and not result.conflicted and result.carried:
        out.append("## Red/green on the rebased series\n\nNot run: unproven.\n")
    if result.notes:
        out.append("## Notes\n")
        out += [f"- {n}" for n in result.notes]
        out.append("")
    return "\n".join(out) + "\n"
