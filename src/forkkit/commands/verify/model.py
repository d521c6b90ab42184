# SPDX-License-Identifier: Apache-2.0
"""What a red/green report says it ran, whether it can be replayed here, and how
a replay differs from it (pure: no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from forkkit.output.verdicts import ExitTable
from forkkit.services.proof.doc import ProofDoc

STEM = "verify"  # reports/verify: the replay's own red/green report
Verdict = Literal["same", "differs"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={
        "same": (0, "the replay classifies every test as the report does"),
        "differs": (1, "it differs (one line per difference)"),
    },
    errors="refused: the report was made on another pin or from another "
    "series, or it cannot be read",
)


@dataclass(frozen=True)
class ReplaySpec:
    """The provenance and the test selection a red/green report records."""

    upstream: str  # the pin: sdist name, version and sha256 (or git URL@rev)
    base_tree: str  # the pristine upstream tree (the fork's ``base`` tag)
    red_base: str | None  # red's runtime came from this commit (``--base``)
    head_tree: str
    patches: tuple[str, ...]
    runtime_files: tuple[str, ...]
    tests: tuple[str, ...]
    related_suites: tuple[str, ...]
    pytest_args: tuple[str, ...]
    deselected: tuple[str, ...]
    packages: str = ""  # the test env's installed packages (sha256)
    fix: str | None = None  # the fix the report proves (None: the only one)


@dataclass(frozen=True)
class Current:
    """What fork.toml and patches/ select now."""

    upstream: str
    patches: tuple[str, ...]
    runtime_files: tuple[str, ...]
    related_suites: tuple[str, ...]
    deselect: tuple[str, ...]


def _red_base(doc: ProofDoc) -> str | None:
    """The commit red took its runtime from (``--base``), when it was neither
    upstream base nor the fork without the fix (a commit built per run)."""
    red, upstream = doc.base.commit, doc.upstream_base.commit
    if doc.red_recipe.kind != "runtime-from":  # built per run, or no red
        return None
    return red if red and upstream and red != upstream else None


def replay_spec(doc: ProofDoc, where: str) -> ReplaySpec:
    """What a red/green report ran; ValueError names what is missing."""
    base_tree, head_tree = doc.upstream_base.tree, doc.fork_head.tree
    if not base_tree or not head_tree:
        missing = "upstream_base.tree" if not base_tree else "fork_head.tree"
        raise ValueError(f"{where}: no '{missing}'")
    return ReplaySpec(
        upstream=doc.upstream.ident,
        base_tree=base_tree,
        red_base=_red_base(doc),
        head_tree=head_tree,
        patches=tuple(p.name for p in doc.patches),
        runtime_files=tuple(f.path for f in doc.files_of("runtime")),
        tests=doc.tests,
        related_suites=doc.related_suites,
        pytest_args=doc.pytest_args,
        deselected=doc.deselected,
        packages=doc.testenv.packages,
        fix=doc.fix.id if doc.fix else None,
    )


def _listed(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "(none)"


# pytest options a replay passes on: test selection and output only. Anything
# else in a report (e.g. --junitxml=PATH, -p PLUGIN, -o, -c, --rootdir) could
# write files or load code that the report does not show.
_WITH_VALUE = ("-k", "-m", "--maxfail", "--tb", "-r", "--durations", "--deselect")
_FLAGS = ("-x", "--exitfirst", "-q", "--quiet", "-v", "--verbose", "-vv", "-l")


def unsafe_pytest_arg(args: Sequence[str]) -> str | None:
    """The first of ``args`` a replay does not pass on (None: all are fine)."""
    it = iter(args)
    for arg in it:
        if arg in _FLAGS:
            continue
        if arg in _WITH_VALUE:
            next(it, None)
            continue
        if arg.startswith(tuple(f"{o}=" for o in _WITH_VALUE if o.startswith("--"))):
            continue
        if arg.startswith(("-k", "-m", "-r")) and len(arg) > 2 and arg[1] in "kmr":
            continue
        if arg == "-p":
            plugin = next(it, "")
            if plugin.startswith("no:"):
                continue
            return f"-p {plugin}"
        return arg
    return None


def refusal(spec: ReplaySpec, current: Current) -> str | None:
    """Why the report cannot be replayed with this fork.toml and patches/."""
    bad = unsafe_pytest_arg(spec.pytest_args)
    if bad is not None:
        return (
            f"made with the pytest argument {bad!r}, which a replay does not pass "
            "on (it could write files or load code)"
        )
    if spec.upstream != current.upstream:
        return (
            f"made on another pin ({spec.upstream}; fork.toml pins {current.upstream})"
        )
    if spec.patches != current.patches:
        return (
            f"made from another series (patches {_listed(spec.patches)}; "
            f"patches/ has {_listed(current.patches)})"
        )
    checks = (
        ("fix runtime files", spec.runtime_files, current.runtime_files),
        ("[testenv] deselect", spec.deselected, current.deselect),
    )
    for what, then, now in checks:
        if sorted(then) != sorted(now):
            return f"made with another {what} ({_listed(then)}; now {_listed(now)})"
    if spec.related_suites and spec.related_suites != current.related_suites:
        return (
            "made with other related_suites "
            f"({_listed(spec.related_suites)}; now {_listed(current.related_suites)})"
        )
    return None


def env_refusal(spec: ReplaySpec, *, packages: str) -> str | None:
    """Why this test environment is not the one the report ran in."""
    if spec.packages and spec.packages != packages:
        return (
            f"made in another test environment (packages {spec.packages[:12]}; "
            f"this one has {packages[:12]})"
        )
    return None


def tree_refusal(spec: ReplaySpec, *, base_tree: str, head_tree: str) -> str | None:
    """Why the rebuilt trees are not the ones the report tested."""
    if base_tree != spec.base_tree:
        return (
            f"made on another pin (base tree {spec.base_tree}; the pin gives "
            f"{base_tree})"
        )
    if head_tree != spec.head_tree:
        return (
            f"made from another series (fork tree {spec.head_tree}; patches/ "
            f"gives {head_tree})"
        )
    return None


def categories(doc: ProofDoc) -> dict[str, str]:
    """Test node id -> its category in a report."""
    return {t: cat for cat, ids in doc.classification.items() for t in ids}


def _classification(report: ProofDoc, fresh: ProofDoc) -> list[str]:
    then, now = categories(report), categories(fresh)
    out = []
    for test in sorted(then.keys() | now.keys()):
        was, got = then.get(test, "absent"), now.get(test, "absent")
        if was != got:
            out.append(f"{test}: {was} in the report, {got} now")
    return out


def _compared(doc: ProofDoc) -> dict[str, object]:
    """The report's fields a replay must reproduce, beyond the classification."""
    return {
        "valid": doc.valid,
        "red.tree": doc.red.tree,
        "green.tree": doc.green.tree,
        "red.counts": doc.red.counts,
        "green.counts": doc.green.counts,
        "related.counts": doc.related.counts if doc.related else None,
        "related_regressions": doc.related_regressions,
        "related_preexisting_failures": doc.related_preexisting_failures,
    }


def _hunks(doc: ProofDoc) -> dict[str, list[str]]:
    """Hunk -> the tests it turns red (the hunk matrix, when the report has one)."""
    return {h.hunk: sorted(h.turns_red) for h in doc.hunks or ()}


def differences(report: ProofDoc, fresh: ProofDoc) -> list[str]:
    """One line per way the replay ``fresh`` differs from ``report``."""
    out = _classification(report, fresh)
    then_fields, now_fields = _compared(report), _compared(fresh)
    for key, was in then_fields.items():
        got = now_fields[key]
        if was != got:
            out.append(f"{key}: {_show(was)} in the report, {_show(got)} now")
    then, now = _hunks(report), _hunks(fresh)
    if then and now:
        for hunk in sorted(then.keys() | now.keys()):
            was_red, now_red = then.get(hunk), now.get(hunk)
            if was_red != now_red:
                out.append(
                    f"hunk {hunk}: turns red {_show(was_red)} in the report, "
                    f"{_show(now_red)} now"
                )
    return out


def not_replayed(report: ProofDoc, fresh: ProofDoc) -> tuple[str, ...]:
    """The report's parts a plain replay did not redo (options of red-green)."""
    parts = (
        ("the hunk matrix", report.hunks, fresh.hunks),
        ("the flake check", report.repeat, fresh.repeat),
    )
    return tuple(what for what, then, now in parts if then is not None and now is None)


def _show(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {v}" for k, v in sorted(value.items()))
    if isinstance(value, list | tuple):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class VerifyResult:
    """A replay of one report: what it reran and how it differs."""

    report: str  # the report's path, as given
    tests: int  # classified tests in the report
    differences: tuple[str, ...]
    skipped: tuple[str, ...] = ()  # report parts the replay did not redo

    @property
    def same(self) -> bool:
        return not self.differences

    @property
    def verdict(self) -> Verdict:
        return "same" if self.same else "differs"
