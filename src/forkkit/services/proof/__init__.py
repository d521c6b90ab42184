# SPDX-License-Identifier: Apache-2.0
"""The proof of a series: red on the base runtime, green on the fix (or a
guard: a tests-only series passes on the pin); its report."""
