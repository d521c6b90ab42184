# SPDX-License-Identifier: Apache-2.0
"""Services shared by several commands (above the infrastructure, below the
commands): the red/green proof, the rebase of a series, the resend run."""
