# SPDX-License-Identifier: Apache-2.0
"""``forkkit fix``: the fixes of the series."""
