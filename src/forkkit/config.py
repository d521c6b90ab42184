"""Load ``fork.toml``: the single source of truth for upstream, patches and tests."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from forkkit.errors import ForkkitError


@dataclass(frozen=True)
class UpstreamSpec:
    """Where pristine upstream comes from."""

    name: str
    source: str  # "sdist" or "git"
    version: str
    sha256: str
    index_url: str
    git_url: str
    git_rev: str
    sdist_url: str = ""  # optional explicit URL (skips the index lookup)

    @property
    def ident(self) -> str:
        """A stable identifier of the pristine tree this spec selects."""
        if self.source == "git":
            return f"git:{self.git_url}@{self.git_rev}"
        return f"sdist:{self.name}=={self.version}#sha256={self.sha256}"

    @property
    def label(self) -> str:
        """Short human label, e.g. ``vllm 0.30.0`` or ``vllm@f0fbc98c488b``."""
        if self.source == "git":
            return f"{self.name}@{self.git_rev[:12]}"
        return f"{self.name} {self.version}"


@dataclass(frozen=True)
class TestEnvSpec:
    """The CPU environment vLLM's suites run in."""

    torch: str
    requirements: tuple[str, ...]
    extra: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FixSpec:
    """What the carried fix touches and how it is tested."""

    title: str
    runtime_files: tuple[str, ...]
    focused_tests: tuple[str, ...]
    related_suites: tuple[str, ...]
    # pytest node ids (prefixes) never run, e.g. tests that need the network
    deselect: tuple[str, ...] = ()

    def deselect_args(self) -> list[str]:
        """``--deselect`` options for pytest."""
        return [f"--deselect={node}" for node in self.deselect]


@dataclass(frozen=True)
class ForkConfig:
    """The whole of ``fork.toml``, with paths resolved against its folder."""

    path: Path
    upstream: UpstreamSpec
    patches_dir: Path
    series_file: Path
    fix: FixSpec
    testenv: TestEnvSpec
    workdir: Path

    @property
    def root(self) -> Path:
        return self.path.parent

    def with_upstream(self, **changes: str) -> ForkConfig:
        """A copy with some upstream fields replaced (e.g. a rebase target)."""
        return replace(self, upstream=replace(self.upstream, **changes))


def _req(table: dict[str, Any], key: str, where: str, kind: type = str) -> Any:
    if key not in table:
        raise ForkkitError(f"{where}: missing key '{key}'; add it (see README)")
    value = table[key]
    if kind is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ForkkitError(f"{where}: '{key}' must be a list of strings")
    elif not isinstance(value, kind):
        raise ForkkitError(f"{where}: '{key}' must be a {kind.__name__}")
    return value


_KNOWN: dict[str, frozenset[str]] = {
    "upstream": frozenset(
        {
            "name",
            "source",
            "version",
            "sha256",
            "index_url",
            "git_url",
            "git_rev",
            "sdist_url",
        }
    ),
    "patches": frozenset({"dir", "series"}),
    "fix": frozenset(
        {"title", "runtime_files", "focused_tests", "related_suites", "deselect"}
    ),
    "testenv": frozenset({"torch", "requirements", "extra", "env"}),
    "workdir": frozenset({"path"}),
}


def _table(data: dict[str, Any], name: str, fname: str) -> dict[str, Any]:
    """Table ``name`` of the file; unknown keys (typos) are errors."""
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise ForkkitError(f"{fname}: '{name}' must be a table ([{name}])")
    unknown = sorted(set(table) - _KNOWN[name])
    if unknown:
        raise ForkkitError(
            f"{fname} [{name}]: unknown key '{unknown[0]}'; expected one of "
            f"{', '.join(sorted(_KNOWN[name]))}"
        )
    return table


def _opt(table: dict[str, Any], key: str, where: str, default: str = "") -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise ForkkitError(f"{where}: '{key}' must be a string")
    return value


def load_config(path: Path | str = "fork.toml") -> ForkConfig:
    """Parse and validate ``fork.toml``; errors name the file and the key."""
    path = Path(path).resolve()
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ForkkitError(
            f"{path}: not found; run from the fork-kit checkout or pass --config"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ForkkitError(f"{path}: invalid TOML ({exc}); fix the syntax") from None
    root = path.parent
    # Other tables are left to the commands that read them (cfg.path).
    up = _table(data, "upstream", path.name)
    where = f"{path.name} [upstream]"
    source = _req(up, "source", where)
    if source not in ("sdist", "git"):
        raise ForkkitError(f"{where}: source must be 'sdist' or 'git', not {source!r}")
    sha = _req(up, "sha256", where)
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise ForkkitError(f"{where}: sha256 must be 64 lowercase hex digits")
    upstream = UpstreamSpec(
        name=_req(up, "name", where),
        source=source,
        version=_req(up, "version", where),
        sha256=sha,
        index_url=_opt(up, "index_url", where, "https://pypi.org/simple"),
        git_url=_opt(up, "git_url", where),
        git_rev=_opt(up, "git_rev", where),
        sdist_url=_opt(up, "sdist_url", where),
    )
    if source == "git" and not (upstream.git_url and upstream.git_rev):
        raise ForkkitError(f"{where}: source 'git' needs git_url and git_rev")
    pt = _table(data, "patches", path.name)
    fx = _table(data, "fix", path.name)
    where = f"{path.name} [fix]"
    fix = FixSpec(
        title=_opt(fx, "title", where),
        runtime_files=tuple(_req(fx, "runtime_files", where, list)),
        focused_tests=tuple(_req(fx, "focused_tests", where, list)),
        related_suites=tuple(_req(fx, "related_suites", where, list)),
        deselect=tuple(_req(fx, "deselect", where, list)) if "deselect" in fx else (),
    )
    te = _table(data, "testenv", path.name)
    where = f"{path.name} [testenv]"
    env = te.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ForkkitError(f"{where}: 'env' must be a table of strings")
    testenv = TestEnvSpec(
        torch=_req(te, "torch", where),
        requirements=tuple(_req(te, "requirements", where, list))
        if "requirements" in te
        else (),
        extra=tuple(_req(te, "extra", where, list)) if "extra" in te else (),
        env={str(k): str(v) for k, v in env.items()},
    )
    # FORKKIT_WORKDIR relocates everything materialized (parallel checkouts).
    wt = _table(data, "workdir", path.name)
    wd = _opt(wt, "path", f"{path.name} [workdir]", ".forkkit")
    workdir = Path(os.environ.get("FORKKIT_WORKDIR") or root / wd).absolute()
    where = f"{path.name} [patches]"
    return ForkConfig(
        path=path,
        upstream=upstream,
        patches_dir=root / _opt(pt, "dir", where, "patches"),
        series_file=root / _opt(pt, "series", where, "patches/series"),
        fix=fix,
        testenv=testenv,
        workdir=workdir,
    )
