# SPDX-License-Identifier: Apache-2.0
"""The one ``NAME==VERSION`` parser (upstream/release.py)."""

from __future__ import annotations

import pytest

from forkkit.errors import ForkkitError
from forkkit.upstream.release import release_version, sdist_version, split_release


def test_release_version_of_the_pinned_project() -> None:
    assert (
        release_version("vllm==0.31.0", name="vllm", option="--onto", bare=True)
        == "0.31.0"
    )
    assert (
        release_version("0.31.0", name="vllm", option="--onto", bare=True) == "0.31.0"
    )
    # names compare as PyPI does (PEP 503)
    assert (
        release_version("Foo_Bar==1", name="foo-bar", option="--with", bare=False)
        == "1"
    )


@pytest.mark.parametrize(
    ("text", "bare"),
    [("torch==2.0", True), ("0.31.0", False), ("vllm>=0.31", True), ("", True)],
)
def test_release_version_refuses_in_one_line(text: str, bare: bool) -> None:
    with pytest.raises(ForkkitError, match=r"^--onto .*expected vllm==VERSION") as e:
        release_version(text, name="vllm", option="--onto", bare=bare)
    assert "\n" not in str(e.value)


def test_split_and_sdist_ident() -> None:
    assert split_release("vllm==0.34.0") == ("vllm", "0.34.0")
    assert split_release("pull/53802/head") is None
    assert sdist_version("sdist:vllm==0.34.0#sha256=ab") == "0.34.0"
    assert sdist_version("git:https://x@abc") is None
