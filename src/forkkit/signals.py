# SPDX-License-Identifier: Apache-2.0
"""Signals become exceptions, so every ``finally`` runs on Ctrl-C or SIGTERM."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Interrupted(KeyboardInterrupt):
    """SIGTERM/SIGHUP (or SIGINT) arrived; unwinds through every ``finally``."""


# One handler per process, however deeply ``signals_raise`` is nested: the
# outermost entry installs it, inner entries share it, and once a signal has
# fired every later one is ignored until the outermost exit, so the cleanup
# and publishing that the first signal unwinds through cannot be interrupted.
_DEPTH: list[int] = [0]
_FIRED: list[int] = []
_DEFER: list[int] = [0]  # inside deferred(): a signal waits for its end
_PENDING: list[int] = []


def _handler(signum: int, frame: FrameType | None) -> None:
    if _FIRED:
        return
    if _DEFER[0]:
        _PENDING.append(signum)
        return
    _FIRED.append(signum)
    raise Interrupted(signal.Signals(signum).name)


@contextmanager
def deferred() -> Iterator[None]:
    """A step that must not be cut in half (moving a committed transaction's
    files into place): a signal during it acts once it is done."""
    _DEFER[0] += 1
    try:
        yield
    finally:
        _DEFER[0] -= 1
    if not _DEFER[0] and _PENDING and not _FIRED:
        signum = _PENDING.pop(0)
        _PENDING.clear()
        _FIRED.append(signum)
        raise Interrupted(signal.Signals(signum).name)


@contextmanager
def signals_raise(*, exiting: bool = False) -> Iterator[None]:
    """Turn SIGTERM/SIGHUP/SIGINT into :class:`Interrupted` (main thread only).

    Re-entrant: only the first signal raises, once, for the outermost block
    and all blocks inside it; repeats are ignored until the outermost block
    has exited, so the cleanup that the first one triggers cannot itself be
    interrupted, at whatever level it runs. ``exiting``: the process ends
    when the block does, so the signals stay ignored after it (the handler is
    swapped for ``SIG_IGN`` in one step, with no window for a default
    handler to kill the process or print a traceback).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    sigs = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    old = {}
    if _DEPTH[0] == 0:
        _FIRED.clear()
        old = {s: signal.signal(s, _handler) for s in sigs}
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        if _DEPTH[0] == 0:
            for s, h in old.items():
                signal.signal(s, signal.SIG_IGN if exiting else h)
            _FIRED.clear()
