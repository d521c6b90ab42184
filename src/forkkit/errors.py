"""The toolkit's user-facing error: one line, naming the thing and what to do."""

from collections.abc import Sequence


class ForkkitError(Exception):
    """An error the CLI prints as a single line (no traceback) and exits 2."""


def first_few(items: Sequence[str], shown: int = 3) -> str:
    """The first ``shown`` items of a one-line message, and how many more."""
    more = len(items) - shown
    return ", ".join(items[:shown]) + (f" and {more} more" if more > 0 else "")
