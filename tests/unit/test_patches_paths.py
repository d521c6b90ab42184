# SPDX-License-Identifier: Apache-2.0
"""The one test-path rule (red/green, rebase and reconcile share it)."""

from __future__ import annotations

import pytest

from forkkit.patches.paths import is_test_module, is_test_path

# (path, is test code, is a pytest module)
CASES = [
    ("tests/test_x.py", True, True),
    ("tests/v1/core/test_sched.py", True, True),
    ("tests/v1/helpers.py", True, False),
    ("tests/data.json", True, False),
    ("tests/conftest.py", True, False),
    # reconcile used to count only paths under the top-level tests/ folder:
    ("vllm/foo/tests/test_x.py", True, True),
    ("vllm/foo/tests/utils.py", True, False),
    ("conftest.py", True, False),
    ("test_root.py", True, True),
    ("vllm/model_test.py", True, True),
    ("vllm/test_utils.py", True, True),
    # runtime code
    ("vllm/attention.py", False, False),
    ("vllm/testing/x.py", False, False),
    ("vllm/tests.py", False, False),
    ("docs/tests.md", False, False),
    ("vllm/test_data.json", True, False),
]


@pytest.mark.parametrize(("path", "test", "module"), CASES)
def test_is_test_path(path: str, test: bool, module: bool) -> None:
    assert is_test_path(path) is test
    assert is_test_module(path) is module
