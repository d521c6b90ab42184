# SPDX-License-Identifier: Apache-2.0
"""A quiet console for pytest runs: one live progress line, short summaries.

pytest's own output goes to the run's log file. The plugin
``scripts/forkkit_progress.py`` appends one line per finished test to a file
that :class:`ProgressTail` reads; :class:`LiveLine` shows every run in flight
on one line: rewritten in place (``\\r``) on a terminal, printed every
``every`` seconds otherwise.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

PLUGIN = "forkkit_progress"  # pytest -p NAME
PLUGIN_DIR = Path(__file__).parents[1] / "scripts"  # put on the run's PYTHONPATH
PROGRESS_ENV = "FORKKIT_PROGRESS_FILE"
SUMMARY_LINES = 20
_SUMMARY_HEAD = "short test summary info"


@dataclass
class _Run:
    start: float
    done: int = 0
    failed: int = 0
    total: int | None = None
    running: str = ""  # the node id of the test running now

    def text(self, name: str) -> str:
        total = "?" if self.total is None else str(self.total)
        bad = f" ({self.failed} failed)" if self.failed else ""
        where = f" {self.running.split('::', 1)[0]}" if self.running else ""
        return f"{name} {self.done}/{total}{bad}{where}"


class LiveLine:
    """One console line for every pytest run in flight (thread-safe)."""

    def __init__(
        self,
        out: TextIO | None = None,
        *,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        every: float = 10.0,
    ) -> None:
        self._out = out
        self._tty = tty
        self._clock = clock
        self._every = every
        self._runs: dict[str, _Run] = {}
        self._lock = threading.Lock()
        self._shown = ""
        self._last = 0.0

    @property
    def out(self) -> TextIO:
        return self._out or sys.stderr

    @property
    def tty(self) -> bool:
        return self._tty if self._tty is not None else self.out.isatty()

    def line(self) -> str:
        """``[forkkit] red 1/1 (1 failed) · fix 20/400 · 35s``."""
        now = self._clock()
        start = min((r.start for r in self._runs.values()), default=now)
        parts = [r.text(n) for n, r in self._runs.items()]
        return f"[forkkit] {' · '.join([*parts, f'{now - start:.0f}s'])}"

    def begin(self, name: str) -> None:
        with self._lock:
            self._runs[name] = _Run(start=self._clock())
            if not self.tty:
                self._last = self._clock()

    def update(
        self, name: str, *, done: int, failed: int, total: int | None, running: str = ""
    ) -> None:
        with self._lock:
            run = self._runs.get(name)
            if run is None:
                return
            run.done, run.failed, run.total = done, failed, total
            run.running = running
            self._show()

    def end(self, name: str) -> None:
        """Forget a finished run; clear the live line when none is left."""
        with self._lock:
            self._runs.pop(name, None)
            if self.tty and self._shown:
                if self._runs:
                    self._show(force=True)
                else:
                    self.out.write("\r\x1b[K")
                    self.out.flush()
                    self._shown = ""

    def note(self, text: str) -> None:
        """Print a line above the live line (which is redrawn below it)."""
        with self._lock:
            if self.tty and self._shown:
                self.out.write("\r\x1b[K")
            self.out.write(text + "\n")
            self.out.flush()
            if self.tty and self._shown:
                self._show(force=True)

    def _show(self, force: bool = False) -> None:
        now, text = self._clock(), self.line()
        if self.tty:
            if text != self._shown or force:
                self.out.write(f"\r{text}\x1b[K")
                self.out.flush()
                self._shown = text
        elif now - self._last >= self._every:
            self._last = now
            self.out.write(text + "\n")
            self.out.flush()


LIVE = LiveLine()


class ProgressTail:
    """Counts from the plugin's progress file, read as it grows."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.total: int | None = None
        self.done = 0
        self.failed = 0
        self.running = ""  # the node id of the test started and not done
        self._offset = 0
        self._partial = ""

    def poll(self) -> bool:
        """Read new lines; True when something changed."""
        try:
            with self.path.open(encoding="utf-8", errors="replace") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
                self._offset = fh.tell()
        except OSError:
            return False
        lines = (self._partial + chunk).split("\n")
        self._partial = lines.pop()
        for ln in lines:
            word, _, rest = ln.partition(" ")
            if word == "collected" and rest.isdigit():
                self.total = int(rest)
            elif word == "start":
                self.running = rest
            elif word in ("passed", "skipped", "failed", "error"):
                self.done += 1
                self.failed += word in ("failed", "error")
                self.running = "" if rest == self.running else self.running
        return bool(lines)


def running_test(path: Path) -> str:
    """The node id a progress file says was running when it stopped ("")."""
    tail = ProgressTail(path)
    tail.poll()
    return tail.running


def short_summary(log: str, limit: int = SUMMARY_LINES) -> list[str]:
    """pytest's ``-rfE`` lines (FAILED/ERROR ...) from a run's log."""
    lines = log.splitlines()
    head = next((i for i, ln in enumerate(lines) if _SUMMARY_HEAD in ln), None)
    if head is None:
        return []
    found = [ln for ln in lines[head + 1 :] if ln.startswith(("FAILED ", "ERROR "))]
    if len(found) > limit:
        more = len(found) - limit
        return [*found[:limit], f"... and {more} more (see the log)"]
    return found
