# SPDX-License-Identifier: Apache-2.0
"""Which upstream commit made a fix unnecessary: a bisection of proofs."""
