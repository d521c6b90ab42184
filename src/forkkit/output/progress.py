"""Progress lines for long operations (stderr, so stdout stays machine-readable)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

# Tests of the safety contract stop a real run right after a chosen progress
# line (then signal it): FORKKIT_PAUSE_AT names a substring of that line.
_PAUSE_AT = os.environ.get("FORKKIT_PAUSE_AT", "")


def say(msg: str) -> None:
    """One progress line on stderr."""
    print(f"[forkkit] {msg}", file=sys.stderr, flush=True)
    if _PAUSE_AT and _PAUSE_AT in msg:
        time.sleep(float(os.environ.get("FORKKIT_PAUSE_S", "30")))


@contextmanager
def step(msg: str) -> Iterator[None]:
    """Announce a long step and report its duration when done."""
    say(f"{msg} ...")
    start = time.monotonic()
    yield
    say(f"{msg}: done in {time.monotonic() - start:.1f}s")
