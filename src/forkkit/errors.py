"""The toolkit's user-facing error: one line, naming the thing and what to do."""


class ForkkitError(Exception):
    """An error the CLI prints as a single line (no traceback) and exits 2."""
