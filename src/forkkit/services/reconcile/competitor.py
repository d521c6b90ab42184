# SPDX-License-Identifier: Apache-2.0
"""The competitor of ``forkkit reconcile --with REF`` as a commit on our base.

REF is a patch/mbox file (applied 3-way), a ref of the upstream git
repository (fetched; its own changes vs its merge base with our upstream
revision), or a newer release (trusted as a rebase target is, committed whole
by the one pristine path of :mod:`forkkit.fork.pristine`, and laid over our
base on the files we touch). Git work goes through :mod:`forkkit.vcs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.fork.pristine import pristine_commit
from forkkit.fork.tree import ForkTree
from forkkit.line import Line
from forkkit.output.progress import say, step
from forkkit.patches.diff import Diff, parse_diff
from forkkit.patches.series import failed_hunk, parse_patch_text
from forkkit.services.reconcile.cells import Workspace
from forkkit.services.reconcile.model import REF_PREFIX, Competitor, Options, Release
from forkkit.services.reconcile.overlap import in_folders, target_folders
from forkkit.upstream.release import release_version, split_release
from forkkit.upstream.trust import TrustedSdist, trusted_sdist
from forkkit.vcs import RefUpdate, Repo, combine
from forkkit.vcs.overlay import overlay_commit


def parse_competitor(ref: str, project: str) -> Competitor:
    """Classify ``--with``: an existing file, ``NAME==VERSION`` or a git ref."""
    if Path(ref).is_file():
        return Competitor(ref, "patch")
    parts = split_release(ref)
    if parts:
        version = release_version(ref, name=project, option="--with", bare=False)
        return Competitor(ref, "release", parts[0], version)
    if not ref or ref.startswith("-") or any(c.isspace() for c in ref):
        raise ForkkitError(
            f"--with {ref!r}: not a file, NAME==VERSION or git ref; see --help"
        )
    if ref.lower().endswith(_PATCH_SUFFIXES) or ref.startswith(("./", "../", "/", "~")):
        raise ForkkitError(
            f"--with {ref}: no such file; check the path (a git ref is fetched "
            "only when it does not name a patch file)"
        )
    return Competitor(ref, "git")


_PATCH_SUFFIXES = (".patch", ".diff", ".mbox", ".eml", ".txt")


def _is_mbox(text: str) -> bool:
    return text.startswith("From ") and "\nSubject:" in text


def _apply_failure(ws: Workspace, patch: Path, *, base_label: str) -> ForkkitError:
    """One line naming the hunk of ``patch`` that does not apply."""
    result = ws.repo.check_patch(patch)
    if result.kind == "hunk":
        where = f"{result.path} line {result.line}"
        try:
            text = patch.read_text(errors="replace")
            where = failed_hunk(parse_patch_text(text, patch), result.path, result.line)
        except ForkkitError:
            pass
        return ForkkitError(
            f"{patch.name}: {where} does not apply to {base_label}; the competitor "
            "targets another upstream: rebase it or compare with a release instead"
        )
    why = result.message or "git apply failed"
    return ForkkitError(f"{patch.name}: does not apply to {base_label} ({why})")


def apply_competitor(
    ws: Workspace, patch: Path, *, base: str, base_label: str, message: str
) -> str:
    """Commit the patch file ``patch`` on ``base``; one-line error if it fails."""
    ws.reset(base)
    if _is_mbox(patch.read_text(errors="replace")):
        if combine.am_3way(ws.repo, patch).ok:
            head = ws.repo.rev("HEAD")
            assert head is not None
            return head
    elif combine.apply_3way(ws.repo, patch).ok:
        return combine.commit_index(ws.repo, message)
    ws.reset(base)
    raise _apply_failure(ws, patch, base_label=base_label)


def _fetch(repo: Repo, url: str, *, ref: str, dest: str) -> str:
    try:
        return combine.fetch_ref(repo, url=url, ref=ref, dest=dest)
    except combine.FetchError as exc:
        raise ForkkitError(
            f"{url}: cannot fetch {ref!r} ({exc.reason}); offline or wrong ref? pass "
            "the change as a patch file instead: --with PATH.patch"
        ) from None


def _theirs_from_git(
    line: Line, comp: Competitor, *, fork: ForkTree, ws: Workspace
) -> str:
    """Fetch a PR/branch and commit its own changes (vs its merge base) on base."""
    git, repo = line.upstream.git, fork.repo
    if git is None or not (git.url and git.rev):
        raise ForkkitError(
            f"{line.path.name} [upstream]: no git_url and git_rev (the upstream "
            "commit our base corresponds to); set them, or pass --git-url"
        )
    url, rev = git.url, git.at
    with step(f"fetching {comp.ref} and {rev} from {url}"):
        theirs = _fetch(repo, url, ref=comp.ref, dest=f"{REF_PREFIX}/competitor")
        upstream = _fetch(repo, url, ref=rev, dest=f"{REF_PREFIX}/upstream")
    merge_base = combine.merge_base(repo, theirs, upstream)
    if merge_base is None:
        raise ForkkitError(
            f"{comp.ref}: no common history with {rev}; pass the "
            "change as a patch file instead"
        )
    text = repo.diff(a=merge_base, b=theirs)
    if not text.strip():
        raise ForkkitError(f"{comp.ref}: no changes relative to its merge base")
    patch = repo.git_dir() / "forkkit-competitor.diff"
    patch.write_text(text)
    msg = f"Competitor {comp.ref} ({theirs[:12]})"
    return apply_competitor(
        ws, patch, base=fork.base, base_label=fork.upstream_label, message=msg
    )


def trust_release(line: Line, comp: Competitor, *, opts: Options) -> Competitor:
    """A release competitor with its sdist settled by the one trust policy
    (a rebase target's): refused in one line before anything is fetched."""
    if comp.kind != "release" or comp.sdist is not None:
        return comp
    sdist = trusted_sdist(
        line.upstream,
        version=comp.version,
        sha256=opts.sha256,
        sdist_url=opts.sdist_url,
        pin_hint=f"forkkit reconcile --with {comp.name}=={comp.version} --sha256 HEX",
        tofu_note="pin it with --sha256",
    )
    if sdist.tofu:
        say(sdist.trust)
    return replace(comp, sdist=sdist)


def _fetch_release(repo: Repo, line: Line, *, sdist: TrustedSdist) -> Release:
    """The release's full tree as a pristine commit (verified, committed once)."""
    pristine = pristine_commit(repo, spec=sdist.spec, work=line.work)
    return Release(pristine.commit, sdist.spec.label)


def _theirs_from_release(
    line: Line, release: Release, *, fork: ForkTree, ours: Diff
) -> tuple[str, str]:
    """Their change: the release over our files and changed files in our test
    folders, as a commit on our base; (commit, a note saying so)."""
    # our targets: focused tests + tests in the files our patches touch
    repo, fixes = fork.repo, line.fixes
    folders = target_folders([*fixes.test_files, *ours.test_paths])
    changed = repo.changed_paths(fork.base, release.commit)
    scope = sorted(
        set(ours.paths) | set(fixes.runtime_files) | set(in_folders(changed, folders))
    )
    theirs_head = overlay_commit(
        repo,
        onto=fork.base,
        source=release.commit,
        paths=scope,
        message=f"{release.label} over our files\n",
    ).commit
    note = (
        f"Their change = {release.label} minus {fork.upstream_label} over "
        f"{len(scope)} file(s): the files our patches and fork.toml touch plus the "
        f"files changed in our test folders ({', '.join(folders)}); computed at run "
        "time from the two sdists."
    )
    return theirs_head, note


def commit_theirs(
    line: Line,
    comp: Competitor,
    *,
    opts: Options,
    fork: ForkTree,
    ws: Workspace,
    ours: Diff,
) -> tuple[str, Release | None, tuple[str, ...]]:
    """The competitor as a commit on our base (kept as a ref), the release
    it is (None unless one), and notes on how it was built. ``ours``: our
    series as one diff (a release is laid over the files it touches)."""
    repo, base = fork.repo, fork.base
    release: Release | None = None
    notes: tuple[str, ...] = ()
    if comp.kind == "patch":
        patch = Path(comp.ref).resolve()  # git applies it in another folder
        msg = f"Competitor {patch.name}"
        label = fork.upstream_label
        head = apply_competitor(ws, patch, base=base, base_label=label, message=msg)
    elif comp.kind == "git":
        head = _theirs_from_git(line, comp, fork=fork, ws=ws)
    else:
        sdist = trust_release(line, comp, opts=opts).sdist
        assert sdist is not None
        release = _fetch_release(repo, line, sdist=sdist)
        head, note = _theirs_from_release(line, release, fork=fork, ours=ours)
        notes = (f"The sdist of {release.label}: {sdist.trust}.", note)
    repo.update_refs([RefUpdate(f"{REF_PREFIX}/theirs", head)])
    return head, release, notes


def diff_text(repo: Repo, a: str, b: str, *, paths: Sequence[str]) -> str:
    """``git diff a b`` over ``paths`` (empty for no paths)."""
    return repo.diff(a=a, b=b, paths=paths) if paths else ""


def our_diff(repo: Repo, base: str, head: str) -> Diff:
    """Our series as one diff of the base (empty when there is none)."""
    if head == base:
        return Diff(files=())
    return parse_diff(diff_text(repo, base, head, paths=["."]), "our series")


def shown_ref(comp: Competitor, root: Path) -> str:
    """``--with`` as a report shows it: a patch file relative to the project
    (or by name), never a local absolute path."""
    if comp.kind != "patch":
        return comp.ref
    path = Path(comp.ref).resolve()
    return str(path.relative_to(root)) if path.is_relative_to(root) else path.name
