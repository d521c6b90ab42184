# SPDX-License-Identifier: Apache-2.0
"""``python -m forkkit``."""

from forkkit.cli import entry

entry()
