"""Progress lines for long operations (stderr, so stdout stays machine-readable)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


def say(msg: str) -> None:
    """One progress line on stderr."""
    print(f"[forkkit] {msg}", file=sys.stderr, flush=True)


@contextmanager
def step(msg: str) -> Iterator[None]:
    """Announce a long step and report its duration when done."""
    say(f"{msg} ...")
    start = time.monotonic()
    yield
    say(f"{msg}: done in {time.monotonic() - start:.1f}s")
