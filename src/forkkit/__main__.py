"""``python -m forkkit``."""

import sys

from forkkit.cli import main

sys.exit(main())
