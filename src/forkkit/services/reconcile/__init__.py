# SPDX-License-Identifier: Apache-2.0
"""The reconcile of the fork with a competing change: the behaviour matrix,
the answers (cross passes, stacking, the resend table) and its report, read
back by pr-body."""
