# SPDX-License-Identifier: Apache-2.0
"""The rebase of a series onto a newer upstream: replay, absorption checks,
the proof on the new pin, the atomic apply; its report."""
