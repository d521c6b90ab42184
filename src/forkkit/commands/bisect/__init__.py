# SPDX-License-Identifier: Apache-2.0
"""``forkkit bisect``: the upstream commit that absorbed a fix."""
