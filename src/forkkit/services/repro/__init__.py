# SPDX-License-Identifier: Apache-2.0
"""The resend reproduction: the engine script run on a tree, its table."""
