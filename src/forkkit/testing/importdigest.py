# SPDX-License-Identifier: Apache-2.0
"""What a test interpreter can import, as one digest.

Every file under the interpreter's ``sys.path`` (the standard library,
site-packages and the folders its ``.pth`` files add) and under the folders
its import hooks map modules to (an editable install), by content, plus the
interpreter itself. A package added, removed or edited in the test env, a
``.pth`` file or a bare module dropped into site-packages: each changes it.

Hashing a vLLM test env (about 100,000 files, 3.5 GB) takes seconds, so the
digest is computed once and kept in ``store`` with a stat signature (every
file's path, size, mtime, ctime and inode, and every ``.pth`` file's
content; a fraction of a second to take again): while
the signature holds, the kept digest stands. When it does not (a package
installed), only the files whose size, mtime, ctime or inode moved are read
again: each file's own digest is kept beside it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from forkkit.errors import ForkkitError

# The interpreter, its sys.path, and the folders and files that import hooks
# on sys.meta_path map modules to (an editable install's finder serves a
# package from a source folder that is not on sys.path): any absolute path
# held in a dict of a finder, of its class or of its module.
_SYS_PATH = """\
import json, os, sys
mapped = []
for f in sys.meta_path:
    owner = sys.modules.get(getattr(f, "__module__", None) or type(f).__module__)
    if owner is None or owner.__name__.startswith(("importlib", "_frozen_importlib")):
        continue
    spaces = [vars(owner), getattr(f, "__dict__", {}), vars(type(f))]
    for space in spaces:
        for v in list(space.values()):
            if isinstance(v, dict):
                for x in v.values():
                    for y in x if isinstance(x, (list, tuple)) else [x]:
                        if isinstance(y, str) and os.path.isabs(y):
                            mapped.append(y)
print(json.dumps([sys.executable, *sys.path, *mapped]))
"""


def isolated_output(python: Path, code: str, *, what: str) -> str:
    """What ``python -I -c CODE`` prints; one line naming ``what`` it could
    not read when the interpreter does not run."""
    try:
        return subprocess.run(
            # -B: never write bytecode into an interpreter we may not own
            [str(python), "-I", "-B", "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise ForkkitError(
            f"{python}: cannot read the test interpreter's {what} ({exc}); "
            "check that it runs"
        ) from None


def import_roots(python: Path) -> tuple[str, ...]:
    """The interpreter's real path and the folders on its ``sys.path`` (as
    it starts isolated: no caller path, no user site), sorted."""
    out = isolated_output(python, _SYS_PATH, what="import path")
    try:
        exe, *paths = json.loads(out)
    except ValueError:
        raise ForkkitError(
            f"{python}: printed no import path ({out[:80]!r}); check that it runs"
        ) from None
    roots = {os.path.realpath(exe)} | {os.path.realpath(p) for p in paths if p}
    existing = sorted(r for r in roots if os.path.exists(r))
    # a folder inside another one is walked with it
    return tuple(
        r for r in existing if not any(r.startswith(o + os.sep) for o in existing)
    )


def _find_signature(roots: Sequence[str]) -> str | None:
    """GNU find's listing of every file's path, size, mtime, ctime and inode
    (None: no GNU find here)."""
    find = shutil.which("find")
    if find is None:
        return None
    proc = subprocess.run(
        [find, *roots, "-type", "f", "-printf", r"%p\t%s\t%T@\t%C@\t%i\n"],
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0 and not proc.stdout:
        return None
    return hashlib.sha256(b"\n".join(sorted(proc.stdout.splitlines()))).hexdigest()


def _pth_contents(roots: Sequence[str]) -> str:
    """sha256 over the content of every ``.pth`` file directly in ``roots``:
    a line of one runs code at start-up, so it is read every time, whatever
    its size and times say."""
    total = hashlib.sha256()
    for root in roots:
        try:
            names = sorted(n for n in os.listdir(root) if n.endswith(".pth"))
        except OSError:
            continue
        for name in names:
            path = os.path.join(root, name)
            total.update(f"{path}\0{_read_digest(path)}".encode())
    return total.hexdigest()


def _files(roots: Sequence[str]) -> Iterator[str]:
    """Every regular file under ``roots`` (a root may be a file), unsorted."""
    stack = list(roots)
    while stack:
        top = stack.pop()
        if os.path.isfile(top):
            yield top
            continue
        try:
            with os.scandir(top) as entries:
                for e in entries:
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    elif e.is_file():
                        yield e.path
        except OSError:
            continue


def signature(roots: Sequence[str]) -> str:
    """sha256 of every file's path, size, mtime, ctime and inode under
    ``roots``, and of the content of their ``.pth`` files. A file rewritten
    to the same size with its mtime set back still moves its ctime (no call
    sets a ctime back), and a ``.pth`` file is read whatever its stat says."""
    pth = _pth_contents(roots)
    found = _find_signature(roots)
    if found is not None:
        return hashlib.sha256(f"{found}\0{pth}".encode()).hexdigest()
    lines = []
    for path in _files(roots):
        try:
            st = os.stat(path)
        except OSError:
            continue
        stat = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        lines.append(f"{path}\t{stat}".encode())
    listing = hashlib.sha256(b"\n".join(sorted(lines))).hexdigest()
    return hashlib.sha256(f"{listing}\0{pth}".encode()).hexdigest()


Known = dict[str, list[object]]  # path -> [size, mtime_ns, ctime_ns, ino, sha256]


def _stat_of(path: str) -> list[object]:
    try:
        st = os.stat(path)
    except OSError:
        return []
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _read_digest(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return "unreadable"


def content_digest(roots: Sequence[str], known: Known | None = None) -> str:
    """sha256 over every file's path and content under ``roots``. A file
    whose size, mtime, ctime and inode match its entry in ``known`` is not
    read again (an edit in place changes the ctime, whatever the mtime is
    set back to); ``known`` becomes the entries of what is there now."""
    files = sorted(_files(roots))
    before = dict(known or {})
    now: Known = {}
    todo: list[tuple[str, list[object]]] = []
    for path in files:
        stat, kept = _stat_of(path), before.get(path)
        if stat and kept and kept[:4] == stat and isinstance(kept[4], str):
            now[path] = kept
        else:
            todo.append((path, stat))
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        read = pool.map(_read_digest, [p for p, _ in todo], chunksize=64)
        for (path, stat), digest in zip(todo, read, strict=True):
            now[path] = [*stat, digest] if stat else ["", "", "", "", digest]
    total = hashlib.sha256()
    for path in files:
        total.update(hashlib.sha256(f"{path}\0{now[path][4]}".encode()).digest())
    if known is not None:
        known.clear()
        known.update(now)
    return total.hexdigest()


_KNOWN: dict[str, Future[str]] = {}  # interpreter -> its digest, this process
_LOCK = threading.Lock()


def warm(python: Path, store: Path | None = None) -> Future[str]:
    """Start taking ``python``'s digest in the background (once per
    process): the stat walk overlaps the command's other work."""
    with _LOCK:
        known = _KNOWN.get(str(python))
        if known is None:
            known = _KNOWN[str(python)] = Future()
            worker = threading.Thread(
                target=_fill, args=(known, python, store), daemon=True
            )
            worker.start()
    return known


def _fill(future: Future[str], python: Path, store: Path | None) -> None:
    try:
        future.set_result(_taken(python, store))
    except BaseException as exc:  # handed to whoever waits for it
        future.set_exception(exc)


def import_digest(python: Path, store: Path | None = None) -> str:
    """The digest of what ``python`` can import; kept in ``store`` with its
    stat signature and reused while that holds. Taken once per process."""
    return warm(python, store).result()


def forget() -> None:
    """Take every digest again (for a test that changes an interpreter)."""
    with _LOCK:
        _KNOWN.clear()


def _taken(python: Path, store: Path | None) -> str:
    roots = import_roots(python)
    sig = signature(roots)
    kept = _read(store) if store is not None else {}
    if kept.get("signature") == sig and isinstance(kept.get("content"), str):
        return str(kept["content"])
    # each file's entry is kept beside the store, read only on a rehash
    entries = _files_of(store) if store is not None else None
    files = _read(entries).get("files") if entries is not None else None
    known: Known = files if isinstance(files, dict) else {}
    content = content_digest(roots, known)
    if store is not None and entries is not None:
        _write(entries, {"files": known})
        _write(store, {"python": str(python), "signature": sig, "content": content})
    return content


def _files_of(store: Path) -> Path:
    """Where the per-file entries of ``store`` are kept."""
    return store.with_name(f"{store.stem}.files.json")


def _read(store: Path) -> dict[str, object]:
    try:
        data = json.loads(store.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(store: Path, data: dict[str, object]) -> None:
    """Best effort: a lost store only costs the next run a rehash."""
    tmp = store.with_name(f".{store.name}.{os.getpid()}")
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n")
        os.replace(tmp, store)
    except OSError:
        tmp.unlink(missing_ok=True)
