# SPDX-License-Identifier: Apache-2.0
"""``signals_raise``: one handler however deeply it is entered (real signals)."""

from __future__ import annotations

import os
import signal

import pytest

from forkkit.signals import Interrupted, signals_raise


def _send(sig: signal.Signals) -> None:
    os.kill(os.getpid(), sig)


def test_a_second_signal_during_the_outer_cleanup_is_ignored() -> None:
    """The inner block (a test run) is interrupted; the outer block's cleanup
    (publishing the report) then gets a second Ctrl-C, which must not cut it."""
    cleaned = []
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(Interrupted, match="SIGINT"), signals_raise():
        try:
            with signals_raise():
                _send(signal.SIGINT)
        finally:
            _send(signal.SIGINT)  # a second Ctrl-C while publishing
            _send(signal.SIGTERM)
            cleaned.append("published")
    assert cleaned == ["published"]
    # once the outermost block is left, the caller's handlers are back
    assert signal.getsignal(signal.SIGINT) is before
    # and a new block raises again
    with pytest.raises(Interrupted, match="SIGTERM"), signals_raise():
        _send(signal.SIGTERM)


def test_an_exiting_block_leaves_the_signals_ignored() -> None:
    """``forkkit``'s process entry: once its command is done the process only
    exits, so a late Ctrl-C is ignored rather than a traceback."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with signals_raise(exiting=True):
            pass
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        _send(signal.SIGINT)  # ignored: no KeyboardInterrupt
    finally:
        for s, h in before.items():
            signal.signal(s, h)
