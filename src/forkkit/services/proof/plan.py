# SPDX-License-Identifier: Apache-2.0
"""What a red/green proof runs, checked before anything runs, and the
settings every one of its pytest runs shares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from forkkit.errors import ForkkitError
from forkkit.fork.fixes import FixSet, changed_classes, focused_targets, red_commit
from forkkit.fork.seriesfiles import read_retired
from forkkit.fork.tree import BASE_TAG, ForkTree
from forkkit.line import Line
from forkkit.patches.fixes import Fix
from forkkit.patches.retired import RETIRED_FILE
from forkkit.patches.testids import target_file
from forkkit.pin import PinDoc
from forkkit.services.proof.model import (
    UPSTREAM_BASE,
    FileBlob,
    base_label,
    without_fix,
)
from forkkit.services.proof.recipe import RedRecipe
from forkkit.testing.classify import Reason
from forkkit.testing.forkruns import require_committed
from forkkit.vcs import Repo


@dataclass(frozen=True, kw_only=True)
class ProofSpec:
    """What a proof of one fix runs, checked before anything runs: a pure
    value made by :func:`make_proof_spec` (as SWE-bench's ``make_test_spec``
    makes a ``TestSpec``). Red and green run ``targets`` as one pytest
    invocation on two trees: red's made by ``red`` (a :class:`RedRecipe`, the
    report's typed field), green HEAD's."""

    fix_id: str = ""
    targets: tuple[str, ...]  # the fix's focused tests (red and green)
    runtime: tuple[str, ...]  # the fix's runtime files
    suites: tuple[str, ...]  # every fix's related suites (PASS_TO_PASS only)
    red: RedRecipe
    base: str  # red: the commit red runs (the runtime files are taken from it)
    head: str
    base_label: str = UPSTREAM_BASE  # how reports name red's base (display only)
    # the targets that are the fix's own tests: the test functions its
    # patches change, and the modules the series adds (a whole upstream
    # module may hold tests of upstream's that skip here)
    carried: tuple[str, ...] = ()
    # a guard's recorded tests (patches/retired.toml): each must pass
    recorded: tuple[str, ...] = ()
    pin: PinDoc | None = None  # the upstream the fork is built on
    raises: str = ""  # the bug is this exception ([[fix]] raises)
    classes: tuple[str, ...] = ()  # the classes its runtime change lies in

    @property
    def reason(self) -> Reason:
        """When a red failure shows the bug: an assertion, an exception raised
        through the fix's runtime files or naming a class its change lies in
        (a validation error), or the exception it declares."""
        return Reason(runtime=self.runtime, raises=self.raises, classes=self.classes)

    @property
    def guard(self) -> bool:
        """A tests-only fix: its tests guard upstream's fix (no red)."""
        return self.red.kind == "guard"

    @property
    def place(self) -> str:
        """Where the fix's red and green run, one after the other: the same
        checkout path and pytest command line, only the tree differs."""
        return f"proof-{self.fix_id or 'series'}"


def make_proof_spec(
    line: Line,
    tree: ForkTree,
    tests: list[str] | None,
    *,
    related: bool,
    fixes: FixSet,
    fix: Fix,
    base: str | None = None,
) -> ProofSpec:
    """Check one fix's proof against the fork; refuse an uncommitted tree.
    Red is HEAD with the fix's runtime hunks reverted, or with ``base``: its
    runtime files taken from that revision. Made once per process for one
    fork HEAD (the schedule and the proof share it)."""
    repo = tree.repo
    head, upstream = repo.rev("HEAD"), repo.rev(BASE_TAG)
    if head is None or upstream is None:
        raise ForkkitError(f"{repo.path}: no '{BASE_TAG}' tag; run forkkit materialize")
    require_committed(repo, "red-green")
    key = (
        *(str(line.path), str(tree.path), head, tuple(tests or ()), related),
        *(fix, base, recorded_tests(line, fix.id)),
    )
    if key in _PLANS:
        return _PLANS[key]
    targets = tuple(tests or focused_targets(tree, fixes, fix, head=head))
    if not targets:
        raise ForkkitError(
            f"fix '{fix.id}' ({', '.join(fix.patches)}): its patches add or change "
            "no test module; add the test that shows the fix"
        )
    suites = fixes.related_suites if related else ()
    _check_targets(line, repo, [*targets, *suites], head=head, fix=fix)
    guard = base is None and fix.tests_only
    if base is not None:
        red = _red_base(tree, base, head=head, upstream=upstream)
        label = base_label(
            red, rev=base, upstream_base=upstream, patches=tree.patch_commits
        )
        recipe = RedRecipe.runtime_from(red)
    elif guard:
        red, label, recipe = head, without_fix(fix.id), RedRecipe.guard()
    else:
        red, label = red_commit(tree, fixes, fix, head=head), without_fix(fix.id)
        recipe = RedRecipe.revert_hunks(fix.id)
    _PLANS[key] = ProofSpec(
        fix_id=fix.id,
        targets=targets,
        runtime=fix.runtime_files, suites=suites, red=recipe,
        base=red,
        head=head,
        base_label=label,
        carried=_carried(repo, targets, upstream=upstream),
        recorded=recorded_tests(line, fix.id) if guard else (),
        pin=replace(line.upstream.doc(), commit=tree.upstream_commit or ""),
        raises=fix.raises,
        classes=() if guard else changed_classes(tree, fixes, fix),
    )  # fmt: skip
    return _PLANS[key]


_PLANS: dict[tuple[object, ...], ProofSpec] = {}


def _check_targets(
    line: Line, repo: Repo, targets: Sequence[str], *, head: str, fix: Fix
) -> None:
    """One line for a test target that does not exist at ``head``."""
    for t in targets:
        path = target_file(t).rstrip("/")
        if repo.object_id(f"{head}:{path}") is None:
            raise ForkkitError(
                f"{line.path.name} [[fix]] '{fix.id}': test target {path!r} does not "
                f"exist at fork HEAD {head[:12]}; fix the path (related_suites or "
                "--tests)"
            )


def recorded_tests(line: Line, fix_id: str) -> tuple[str, ...]:
    """The FAIL_TO_PASS tests patches/retired.toml records for ``fix_id``'s
    retired patches: what its guard must see pass."""
    records = read_retired(line.patches_dir / RETIRED_FILE)
    return tuple(dict.fromkeys(t for r in records if r.fix == fix_id for t in r.tests))


def _carried(repo: Repo, targets: Sequence[str], *, upstream: str) -> tuple[str, ...]:
    """The targets that are the fix's own tests: test functions (a patch
    changes them) and modules upstream does not have (the series adds them)."""
    return tuple(
        t
        for t in targets
        if "::" in t or repo.object_id(f"{upstream}:{target_file(t)}") is None
    )


def _red_base(tree: ForkTree, rev: str | None, *, head: str, upstream: str) -> str:
    """The commit ``rev`` names, checked to be a commit of the fork tree
    before its HEAD (on or after the tag base); ``upstream`` when None."""
    if rev is None:
        return upstream
    repo = tree.repo
    commit = repo.rev(rev)
    if commit is None:
        raise ForkkitError(
            f"--base {rev}: no such commit in {repo.path}; give a commit of the "
            "fork tree, or --base-patch NAME for the commit of a patch"
        )
    if commit == head:
        raise ForkkitError(
            f"--base {rev}: is the fork's HEAD, red would test the fix itself; "
            "give an earlier commit (--base-patch NAME: the commit of a patch)"
        )
    if not (repo.is_ancestor(upstream, commit) and repo.is_ancestor(commit, head)):
        raise ForkkitError(
            f"--base {rev}: commit {commit[:12]} is not in the fork tree's "
            f"history from the '{BASE_TAG}' tag to HEAD; give a commit of it"
        )
    return commit


def file_blobs(repo: Repo, plan: ProofSpec) -> list[FileBlob]:
    """Blob SHAs of the runtime files and of every file under the test targets."""
    base, head = plan.base, plan.head
    out = [
        FileBlob(f, "runtime", repo.blob(base, f), repo.blob(head, f))
        for f in plan.runtime
    ]
    paths = sorted({target_file(t) for t in plan.targets})
    # a test's base blob is upstream's when red is built from HEAD (its tests
    # are HEAD's), the red base's with --base
    built = plan.red.kind != "runtime-from"
    test_base = (repo.rev(BASE_TAG) or base) if built else base
    at_base, at_head = repo.ls_tree(test_base, paths), repo.ls_tree(head, paths)
    out += [
        FileBlob(p, "test", at_base.get(p), blob)
        for p, blob in at_head.items()
        if p.endswith(".py")
    ]
    return out
