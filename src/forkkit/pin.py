# SPDX-License-Identifier: Apache-2.0
"""What pins upstream: a release's sdist or a git commit (pure: no I/O).

An :class:`UpstreamSpec` is the project's name, the source in use and the
pins it may use: an :class:`SdistPin` (version and sha256, as PyPI publishes
them) and a :class:`GitPin` (the followed revision and the commit it resolved
to). Each kind answers for itself what identifies it, how reports name it,
which ``fork.toml`` fields pin it (and so which ones moving the pin rewrites)
and why it is trusted. A git upstream needs no sdist fields at all.

Every spec is built from its ``fork.toml`` fields by :func:`upstream_from_fields`,
whether they come from the file, the command line or a rebase target, so one
set of checks holds everywhere.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from forkkit.errors import ForkkitError

T = TypeVar("T", covariant=True)

PYPI = "https://pypi.org/simple"
Source = Literal["sdist", "git"]

# -- checks --------------------------------------------------------------------

_GIT_SCHEMES = frozenset({"https", "ssh", "git", "file", "git+ssh", "ssh+git"})
# scp-like ``[user@]host:path`` (git's own rule: no slash before the colon)
_SCP_LIKE = re.compile(r"^(?:[\w.+-]+@)?[\w.-]+:(?!//)\S")
_HELPER = re.compile(r"^[A-Za-z][\w+.-]*::\S")
# A name or version becomes a folder name under the workdir: one component.
_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+!-]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 repositories


def check_url(value: str, where: str) -> str:
    """An index or download URL: ``http(s)://HOST/...`` or ``file:///PATH``."""
    parts = urllib.parse.urlsplit(value)
    ok = (parts.scheme in ("http", "https") and bool(parts.netloc)) or (
        parts.scheme == "file" and bool(parts.path)
    )
    if not ok or any(c.isspace() for c in value):
        raise ForkkitError(
            f"{where}: {value!r} is not an http(s):// or file:// URL; fix the URL"
        )
    return value


def check_git_url(value: str, where: str) -> str:
    """A URL git can fetch: a known scheme, ``host:path`` or an absolute path."""
    scheme, sep, rest = value.partition("://")
    helper = _HELPER.match(value)
    if value.startswith("-") or any(c.isspace() for c in value):
        ok = False
    elif helper and not sep:
        # ``TRANSPORT::ADDRESS`` runs a remote helper: ``ext::`` runs a command
        ok = value.split("::", 1)[0].lower() in _GIT_SCHEMES
    elif sep:
        ok = scheme.lower() in _GIT_SCHEMES and bool(rest.strip())
    else:
        ok = bool(_SCP_LIKE.match(value) or Path(value).is_absolute())
    if not ok:
        raise ForkkitError(
            f"{where}: {value!r} is not a git URL; use https://HOST/REPO, "
            "ssh://..., HOST:PATH, file:///PATH or an absolute path"
        )
    return value


def check_git_rev(value: str, where: str, *, spaces: bool = False) -> str:
    """A branch, tag, commit or ref as git data: never an option (a leading
    ``-``) and, unless ``spaces`` (a value that may also be a file's path),
    one word; one line naming ``where`` otherwise."""
    if value.startswith("-") or (not spaces and any(c.isspace() for c in value)):
        raise ForkkitError(
            f"{where} {value!r}: not a branch, tag or commit (it starts with '-' "
            "or holds a space, so git would read it as an option); fix it"
        )
    return value


def path_component(value: str, *, what: str) -> str:
    """``value`` when it can name one folder (no ``/``, no ``..``, not
    hidden); one line naming ``what`` otherwise."""
    if not _COMPONENT.fullmatch(value) or ".." in value:
        raise ForkkitError(
            f"{what} {value!r}: not a release name or version (letters, digits "
            "and . _ + ! -, no '..'); fix it"
        )
    return value


def public_url(url: str) -> str:
    """``url`` as a report may show it: a local repository (``file://`` or a
    path) by its folder name only, never by a local absolute path."""
    if url.startswith("file:") or url.startswith("/"):
        name = url.rstrip("/").rsplit("/", 1)[-1]
        return f"a local repository ({name})"
    return url


def is_commit_id(value: str) -> bool:
    """Whether ``value`` is a full commit id (a branch or tag name is not)."""
    return bool(_COMMIT.fullmatch(value))


# -- the two kinds ---------------------------------------------------------------


class PinCases(Protocol[T]):
    """What to do for each kind of pin (``pin.match(cases)``): the one way
    code outside this module tells the kinds apart, so a third kind (a PR
    head, a local tarball) is a new method here that every caller must
    answer, never a ``source ==`` test in a service."""

    def sdist(self, pin: SdistPin, /) -> T: ...

    def git(self, pin: GitPin, /) -> T: ...


@dataclass(frozen=True, kw_only=True)
class PinDoc:
    """A pin as reports carry it: typed fields, never an ident parsed back."""

    kind: Source
    name: str
    version: str = ""
    sha256: str = ""
    url: str = ""  # the git URL, as public_url shows it
    rev: str = ""
    commit: str = ""

    @property
    def checkout_rev(self) -> str:
        """What a reviewer checks upstream out at: the commit, else the
        release tag (``vX.Y.Z``), else the followed revision."""
        return self.commit or (f"v{self.version}" if self.version else self.rev)


@dataclass(frozen=True)
class SdistPin:
    """A release's source distribution, verified by its sha256."""

    version: str
    sha256: str
    sdist_url: str = ""  # an explicit file URL (skips the index lookup)

    def ident(self, name: str) -> str:
        return f"sdist:{name}=={self.version}#sha256={self.sha256}"

    def label(self, name: str) -> str:
        return f"{name} {self.version}"

    def fields(self) -> dict[str, str]:
        """The ``fork.toml`` fields that pin it (moving the pin rewrites them)."""
        return {"version": self.version, "sha256": self.sha256}

    @property
    def trust(self) -> str:
        return f"sha256 {self.sha256} pinned in fork.toml"

    def match(self, cases: PinCases[T]) -> T:
        return cases.sdist(self)

    def doc(self, name: str) -> PinDoc:
        return PinDoc(kind="sdist", name=name, version=self.version, sha256=self.sha256)


@dataclass(frozen=True)
class GitPin:
    """A git revision (branch, tag or commit) and the commit it resolved to."""

    url: str
    rev: str
    commit: str = ""  # "" until resolved (a --rev given on the command line)

    @property
    def at(self) -> str:
        """What is fetched: the recorded commit, else the revision."""
        return self.commit or self.rev

    def ident(self, name: str) -> str:
        return f"git:{self.url}@{self.at}"

    def label(self, name: str) -> str:
        return f"{name}@{self.at[:12]}"

    def fields(self) -> dict[str, str]:
        return {"git_rev": self.rev, "git_commit": self.commit}

    @property
    def trust(self) -> str:
        follows = "" if self.rev == self.commit else f" ({self.rev})"
        return (
            f"git commit {self.at}{follows} of {self.url}: the id is its content's hash"
        )

    def match(self, cases: PinCases[T]) -> T:
        return cases.git(self)

    def doc(self, name: str) -> PinDoc:
        return PinDoc(
            kind="git",
            name=name,
            url=public_url(self.url),
            rev=self.rev,
            commit=self.commit,
        )


@dataclass(frozen=True)
class UpstreamSpec:
    """Where pristine upstream comes from: the source in use and its pins."""

    name: str
    source: Source
    index_url: str = PYPI  # where a release line lists newer releases
    sdist: SdistPin | None = None
    git: GitPin | None = None

    @property
    def pin(self) -> SdistPin | GitPin:
        """The pin of the source in use (load_config made sure it is there)."""
        pin = self.git if self.source == "git" else self.sdist
        if pin is None:
            raise ForkkitError(
                f"upstream: source {self.source!r} has no pin; fix fork.toml"
            )
        return pin

    @property
    def release(self) -> SdistPin:
        """The sdist pin; one line when this upstream has none (a git line)."""
        if self.source != "sdist" or self.sdist is None:
            raise ForkkitError(
                f"{self.label}: a git upstream has no release version or sha256; "
                'this needs an sdist pin (source = "sdist", version, sha256)'
            )
        return self.sdist

    @property
    def commit_pin(self) -> GitPin:
        """The git pin; one line when this upstream has none."""
        if self.git is None:
            raise ForkkitError(
                f"{self.label}: no git upstream; set git_url and git_rev in "
                "fork.toml [upstream]"
            )
        return self.git

    def match(self, cases: PinCases[T]) -> T:
        """``cases``' answer for the kind of pin in use."""
        return self.pin.match(cases)

    def doc(self) -> PinDoc:
        """The pin in use as reports carry it."""
        return self.pin.doc(self.name)

    def target(self, rev: str) -> UpstreamSpec:
        """This upstream at git revision ``rev`` (a rebase target): its
        commit resolved when the tree is built."""
        return self.changed(source="git", git_rev=rev)

    @property
    def ident(self) -> str:
        """A stable identifier of the pristine tree this spec selects."""
        return self.pin.ident(self.name)

    @property
    def label(self) -> str:
        """Short human label, e.g. ``vllm 0.30.0`` or ``vllm@f0fbc98c488b``."""
        return self.pin.label(self.name)

    def fields(self) -> dict[str, str]:
        """Every ``fork.toml [upstream]`` field of this spec ("" where unset)."""
        out = {"name": self.name, "source": self.source, "index_url": self.index_url}
        s = self.sdist or SdistPin("", "")
        g = self.git or GitPin("", "")
        out |= {"version": s.version, "sha256": s.sha256, "sdist_url": s.sdist_url}
        return out | {"git_url": g.url, "git_rev": g.rev, "git_commit": g.commit}

    def pin_fields(self) -> dict[str, str]:
        """The fields that pin the source in use, with ``source`` itself."""
        return {"source": self.source, **self.pin.fields()}

    def changed(self, **changes: str) -> UpstreamSpec:
        """A copy with some fields replaced, checked like fork.toml's.

        A new ``git_rev`` without a ``git_commit`` leaves the commit to be
        resolved (fetched) when the tree is built.
        """
        fields = self.fields() | changes
        if "git_rev" in changes and "git_commit" not in changes:
            rev = changes["git_rev"]
            fields["git_commit"] = rev if is_commit_id(rev) else ""
        return upstream_from_fields(fields, where="upstream", resolved=False)


def upstream_from_fields(
    fields: dict[str, str], *, where: str, resolved: bool = True
) -> UpstreamSpec:
    """An upstream from its ``fork.toml`` fields; one line naming the field
    that is wrong. ``resolved``: a git source must record its commit."""
    get = fields.get
    source = get("source", "")
    if source != "sdist" and source != "git":
        raise ForkkitError(f"{where}: source must be 'sdist' or 'git', not {source!r}")
    name = path_component(get("name", ""), what=f"{where} name")
    for key, check in (("index_url", check_url), ("sdist_url", check_url)):
        if get(key):
            check(get(key, ""), f"{where} {key}")
    kind: Source = "git" if source == "git" else "sdist"
    return UpstreamSpec(
        name=name,
        source=kind,
        index_url=get("index_url") or PYPI,
        sdist=_sdist(fields, where=where, needed=source == "sdist"),
        git=_git(fields, where=where, needed=source == "git", resolved=resolved),
    )


def _sdist(fields: dict[str, str], *, where: str, needed: bool) -> SdistPin | None:
    version, sha = fields.get("version", ""), fields.get("sha256", "")
    if not (version or sha):
        if needed:
            raise ForkkitError(f"{where}: missing key 'version'; add it (see README)")
        return None
    for key, value in (("version", version), ("sha256", sha)):
        if not value:
            raise ForkkitError(f"{where}: missing key '{key}'; add it (see README)")
    path_component(version, what=f"{where} version")
    if not _SHA256.fullmatch(sha):
        raise ForkkitError(f"{where}: sha256 must be 64 lowercase hex digits")
    return SdistPin(version, sha, fields.get("sdist_url", ""))


def _git(
    fields: dict[str, str], *, where: str, needed: bool, resolved: bool
) -> GitPin | None:
    url, rev, commit = (fields.get(k, "") for k in ("git_url", "git_rev", "git_commit"))
    if url:
        check_git_url(url, f"{where} git_url")
    if needed and not (url and rev):
        raise ForkkitError(f"{where}: source 'git' needs git_url and git_rev")
    if not (url or rev):
        return None
    check_git_rev(rev, f"{where}: git_rev")
    if commit and not is_commit_id(commit):
        raise ForkkitError(
            f"{where}: git_commit {commit!r} is not a full commit id (40 or 64 "
            "lowercase hex digits); fix it"
        )
    commit = commit or (rev if is_commit_id(rev) else "")
    if needed and resolved and not commit:
        raise ForkkitError(
            f"{where}: git_rev {rev!r} names no commit by itself; record the "
            f"commit it is at as git_commit (git ls-remote {url} {rev}), so "
            "every run builds the same tree"
        )
    return GitPin(url, rev, commit)
