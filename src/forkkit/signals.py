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


@contextmanager
def signals_raise() -> Iterator[None]:
    """Turn SIGTERM/SIGHUP/SIGINT into :class:`Interrupted` (main thread only).

    Only the first signal raises: repeats are ignored so the cleanup that the
    first one triggers cannot itself be interrupted.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if not fired:
            fired.append(signum)
            raise Interrupted(signal.Signals(signum).name)

    sigs = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    old = {s: signal.signal(s, handler) for s in sigs}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
