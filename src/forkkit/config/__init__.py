"""Load ``fork.toml``: the single source of truth for upstream, patches and tests."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from forkkit.config.fixes import fix_tables
from forkkit.config.toml import KNOWN, opt, req, table_of
from forkkit.errors import ForkkitError
from forkkit.patches.fixes import FixDecl
from forkkit.pin import (
    UpstreamSpec,
    path_component,
    upstream_from_fields,
)
from forkkit.workdir import Workdir


@dataclass(frozen=True)
class TestEnvSpec:
    """The CPU environment vLLM's suites run in."""

    torch: str
    requirements: tuple[str, ...]
    extra: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    # pytest node ids (prefixes) never run here, e.g. tests that need the Hub
    deselect: tuple[str, ...] = ()
    # the caller's variables a run takes (names, or NAME* prefixes)
    pass_env: tuple[str, ...] = ()


@dataclass(frozen=True)
class ForkConfig:
    """The whole of ``fork.toml``, with paths resolved against its folder."""

    path: Path
    upstream: UpstreamSpec
    patches_dir: Path
    series_file: Path
    fixes: tuple[FixDecl, ...]
    testenv: TestEnvSpec
    workdir: Path
    line: str = ""  # [line] name: this upstream line's own folders
    also: tuple[Path, ...] = ()  # [line] also: the other lines' fork.toml files

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def work(self) -> Workdir:
        """The workdir: every path under it, its lock and run folders (the
        line's own under ``lines/NAME``)."""
        return Workdir(self.workdir, line=self.line)

    @property
    def line_label(self) -> str:
        """How reports name the line: its name, or its upstream."""
        return self.line or self.upstream.label

    def with_upstream(self, **changes: str) -> ForkConfig:
        """A copy with some upstream fields replaced (e.g. a rebase target),
        checked like fork.toml's (:meth:`UpstreamSpec.changed`)."""
        return replace(self, upstream=self.upstream.changed(**changes))


def check_folder_path(
    path: Path, *, what: str, fix: str, writable: bool = False
) -> Path:
    """Fail in one line unless ``path`` is, or can be created as, a folder.

    ``what`` names the path (e.g. ``the workdir``), ``fix`` says what to do;
    ``writable``: its nearest existing folder must be writable too.
    """
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        at = "" if probe == path else f" ({probe} is a file)"
        raise ForkkitError(f"{path}: {what} is not a folder{at}; {fix}")
    if writable and not os.access(probe, os.W_OK | os.X_OK):
        raise ForkkitError(f"{path}: {what} is not writable ({probe}); {fix}")
    return path


def load_config(path: Path | str = "fork.toml") -> ForkConfig:
    """Parse and validate ``fork.toml``; errors name the file and the key."""
    path = Path(path).resolve()
    try:
        data = tomllib.loads(_read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise ForkkitError(f"{path}: invalid TOML ({exc}); fix the syntax") from None
    root = path.parent
    unknown = sorted(set(data) - set(KNOWN))
    if unknown:  # a typo'd table ([work_dir]) or a root key
        raise ForkkitError(
            f"{path.name}: unknown table or key '{unknown[0]}'; expected "
            + ", ".join(f"[{name}]" for name in KNOWN)
        )
    upstream = _upstream(data, path)
    pt = table_of(data, "patches", path.name)
    where = f"{path.name} [patches]"
    return ForkConfig(
        path=path,
        upstream=upstream,
        patches_dir=root / opt(pt, "dir", where, default="patches"),
        series_file=root / opt(pt, "series", where, default="patches/series"),
        fixes=fix_tables(data, path),
        testenv=_testenv(data, path),
        workdir=_workdir(data, path),
        **_line(data, path),
    )


def select_line(cfg: ForkConfig, name: str) -> ForkConfig:
    """The config of line ``name``: ``cfg``'s own or one of ``[line] also``.
    A line is named by its ``[line] name``; the project's own line, which
    usually has none, by its upstream's version or label (``0.34.0``)."""
    if not name:
        return cfg
    found = every_line(cfg)
    for line in found:
        pin = line.upstream.sdist
        if name in (line.line, line.line_label) or (
            not line.line and pin is not None and name == pin.version
        ):
            return line
    names = ", ".join(c.line or c.line_label for c in found)
    raise ForkkitError(
        f"--line {name}: no such line in {cfg.path.name} (lines: {names})"
    )


def every_line(cfg: ForkConfig) -> list[ForkConfig]:
    """``cfg``'s own line, then those of ``[line] also``: each named once
    (two lines of one name would share one tree and one report folder)."""
    lines = [cfg, *(load_config(p) for p in cfg.also)]
    seen: dict[str, Path] = {}
    for line in lines:
        name = line.line or line.line_label
        if name in seen:
            raise ForkkitError(
                f"{cfg.path.name} [line] also: {line.path} and {seen[name]} are "
                f"both line {name!r}; give each its own [line] name"
            )
        seen[name] = line.path
    return lines


def _line(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """``[line]``: this line's name (a folder name) and the other lines."""
    lt = table_of(data, "line", path.name)
    where = f"{path.name} [line]"
    name = opt(lt, "name", where)
    if name:
        path_component(name, what=f"{where} name")
    also = req(lt, "also", where, kind=list) if "also" in lt else []
    paths = tuple(Path(os.path.normpath(path.parent / p)) for p in also)
    for p in paths:
        if p.resolve() == path.resolve():
            raise ForkkitError(
                f"{where} also: {str(p)!r} is this file; list only the other lines"
            )
    if len(set(paths)) != len(paths):
        raise ForkkitError(f"{where} also: a line is listed twice; list it once")
    return {"line": name, "also": paths}


def _upstream(data: dict[str, Any], path: Path) -> UpstreamSpec:
    up = table_of(data, "upstream", path.name)
    where = f"{path.name} [upstream]"
    for key in ("source", "name"):
        req(up, key, where)
    fields = {key: opt(up, key, where) for key in up}
    return upstream_from_fields(fields, where=f"{path} [upstream]")


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _testenv(data: dict[str, Any], path: Path) -> TestEnvSpec:
    te = table_of(data, "testenv", path.name)
    where = f"{path.name} [testenv]"
    env = te.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ForkkitError(f"{where}: 'env' must be a table of strings")
    bad = next((k for k in env if not _ENV_NAME.fullmatch(k)), None)
    if bad is not None:
        raise ForkkitError(
            f"{where}: env key {bad!r} is not a variable name (letters, digits "
            "and _, not starting with a digit); fix it"
        )
    return TestEnvSpec(
        torch=req(te, "torch", where),
        requirements=tuple(req(te, "requirements", where, kind=list))
        if "requirements" in te
        else (),
        extra=tuple(req(te, "extra", where, kind=list)) if "extra" in te else (),
        env={str(k): str(v) for k, v in env.items()},
        deselect=tuple(req(te, "deselect", where, kind=list))
        if "deselect" in te
        else (),
        pass_env=_pass_env(te, where),
    )


def _pass_env(te: dict[str, Any], where: str) -> tuple[str, ...]:
    """``[testenv] pass_env``: variable names, or ``NAME*`` prefixes."""
    names = req(te, "pass_env", where, kind=list) if "pass_env" in te else []
    bad = next(
        (n for n in names if not _ENV_NAME.fullmatch(str(n).removesuffix("*"))), None
    )
    if bad is not None:
        raise ForkkitError(
            f"{where}: pass_env entry {bad!r} is not a variable name (or a "
            "NAME* prefix); fix it"
        )
    return tuple(str(n) for n in names)


def _workdir(data: dict[str, Any], path: Path) -> Path:
    """The workdir; FORKKIT_WORKDIR relocates it (parallel checkouts)."""
    wt = table_of(data, "workdir", path.name)
    wd = opt(wt, "path", f"{path.name} [workdir]", default=".forkkit")
    env_wd = os.environ.get("FORKKIT_WORKDIR")
    # normalized: a workdir given as "../../.forkkit" reads as itself in reports
    workdir = Path(os.path.normpath(Path(env_wd or path.parent / wd).absolute()))
    return check_folder_path(
        workdir,
        what="the workdir",
        fix="set FORKKIT_WORKDIR to a folder"
        if env_wd
        else f"set [workdir] path in {path} or FORKKIT_WORKDIR to a folder",
    )


def _read_text(path: Path) -> str:
    """The config file's text; one-line errors for a bad path or encoding."""
    if path.is_dir():
        raise ForkkitError(
            f"{path}: a folder, not a config file; pass --config PATH/fork.toml"
        )
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ForkkitError(
            f"{path}: not found; run from the fork-kit checkout or pass --config"
        ) from None
    except UnicodeDecodeError as exc:
        raise ForkkitError(
            f"{path}: not UTF-8 (byte {exc.start}); save it as UTF-8 (TOML requires it)"
        ) from None
    except OSError as exc:
        raise ForkkitError(
            f"{path}: cannot read ({exc.strerror}); fix its permissions "
            "or pass --config"
        ) from None
