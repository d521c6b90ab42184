# SPDX-License-Identifier: Apache-2.0
"""``forkkit watch``: the command (the service is :mod:`forkkit.services.watch`)."""
