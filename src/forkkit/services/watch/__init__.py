# SPDX-License-Identifier: Apache-2.0
"""What is newer upstream, and whether the series still carries onto it."""
