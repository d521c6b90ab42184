# SPDX-License-Identifier: Apache-2.0
"""What a red/green report says it ran, whether it can be replayed here, and how
a replay differs from it (pure: no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from forkkit.docpath import get

STEM = "verify"  # reports/verify: the replay's own red/green report


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


@dataclass(frozen=True)
class Current:
    """What fork.toml and patches/ select now."""

    upstream: str
    patches: tuple[str, ...]
    runtime_files: tuple[str, ...]
    related_suites: tuple[str, ...]
    deselect: tuple[str, ...]


def _strs(doc: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = doc.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: '{key}' is not a list of strings")
    return tuple(value)


def _str(doc: Mapping[str, Any], path: str, where: str) -> str:
    value = get(doc, path)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}: no '{path}'")
    return value


def _red_base(doc: Mapping[str, Any]) -> str | None:
    """The commit red took its runtime from, when it was not upstream base."""
    red, upstream = get(doc, "base.commit"), get(doc, "upstream_base.commit")
    if isinstance(red, str) and isinstance(upstream, str) and red != upstream:
        return red
    return None


def replay_spec(doc: Mapping[str, Any], where: str) -> ReplaySpec:
    """Read a ``red_green.json`` document; ValueError names what is missing."""
    if not isinstance(doc.get("classification"), Mapping):
        raise ValueError(f"{where}: not a red/green report (no 'classification')")
    patches = doc.get("patches")
    files = doc.get("files")
    if not isinstance(patches, list) or not isinstance(files, list):
        raise ValueError(f"{where}: no 'patches' or 'files' list")
    return ReplaySpec(
        upstream=_str(doc, "upstream.ident", where),
        base_tree=_str(doc, "upstream_base.tree", where),
        red_base=_red_base(doc),
        head_tree=_str(doc, "fork_head.tree", where),
        patches=tuple(str(p.get("name")) for p in patches if isinstance(p, Mapping)),
        runtime_files=tuple(
            str(f.get("path"))
            for f in files
            if isinstance(f, Mapping) and f.get("role") == "runtime"
        ),
        tests=_strs(doc, "tests", where),
        related_suites=_strs(doc, "related_suites", where),
        pytest_args=_strs(doc, "pytest_args", where),
        deselected=_strs(doc, "deselected", where),
    )


def _listed(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "(none)"


def refusal(spec: ReplaySpec, current: Current) -> str | None:
    """Why the report cannot be replayed with this fork.toml and patches/."""
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
        ("[fix].runtime_files", spec.runtime_files, current.runtime_files),
        ("[fix].deselect", spec.deselected, current.deselect),
    )
    for what, then, now in checks:
        if sorted(then) != sorted(now):
            return f"made with another {what} ({_listed(then)}; now {_listed(now)})"
    if spec.related_suites and spec.related_suites != current.related_suites:
        return (
            "made with other [fix].related_suites "
            f"({_listed(spec.related_suites)}; now {_listed(current.related_suites)})"
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


def categories(doc: Mapping[str, Any]) -> dict[str, str]:
    """Test node id -> its category in a report."""
    out: dict[str, str] = {}
    by_cat = doc.get("classification")
    for cat, ids in (by_cat or {}).items():
        for test in ids if isinstance(ids, list) else []:
            out[str(test)] = str(cat)
    return out


def _classification(report: Mapping[str, Any], fresh: Mapping[str, Any]) -> list[str]:
    then, now = categories(report), categories(fresh)
    out = []
    for test in sorted(then.keys() | now.keys()):
        was, got = then.get(test, "absent"), now.get(test, "absent")
        if was != got:
            out.append(f"{test}: {was} in the report, {got} now")
    return out


# Report fields a replay must reproduce, beyond the classification.
COMPARED = (
    "valid",
    "red.tree",
    "green.tree",
    "red.counts",
    "green.counts",
    "related.counts",
    "related_regressions",
    "related_preexisting_failures",
)


def _hunks(doc: Mapping[str, Any]) -> dict[str, list[str]]:
    """Hunk -> the tests it turns red (the hunk matrix, when the report has one)."""
    rows = doc.get("hunks")
    return {
        str(h.get("hunk")): sorted(map(str, h.get("turns_red") or []))
        for h in (rows if isinstance(rows, list) else [])
        if isinstance(h, Mapping)
    }


def differences(report: Mapping[str, Any], fresh: Mapping[str, Any]) -> list[str]:
    """One line per way the replay ``fresh`` differs from ``report``."""
    out = _classification(report, fresh)
    for key in COMPARED:
        was, got = get(report, key), get(fresh, key)
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


def _show(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {v}" for k, v in sorted(value.items()))
    if isinstance(value, list):
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
