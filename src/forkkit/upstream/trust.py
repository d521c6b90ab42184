# SPDX-License-Identifier: Apache-2.0
"""A release named on the command line as a verified spec, with its trust.

One policy for every sdist that is not fork.toml's pin (a rebase target, a
release competitor): a ``--sha256`` must agree with the sha256 the index
publishes; with no sha256 anywhere the release is refused; otherwise the
index's sha256 is trusted on first use, and the trust line says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from forkkit.errors import ForkkitError
from forkkit.output.progress import step
from forkkit.pin import SdistPin, UpstreamSpec, check_url
from forkkit.upstream.index import resolve_sdist


@dataclass(frozen=True)
class TrustedSdist:
    """A release as an sdist spec whose sha256 is settled, and why."""

    spec: UpstreamSpec  # source "sdist", the version, its sha256 and URL
    trust: str  # one line: where the sha256 comes from
    tofu: bool  # the sha256 is the index's, trusted on first use


def trusted_sdist(
    up: UpstreamSpec,
    *,
    version: str,
    sha256: str = "",
    sdist_url: str = "",
    pin_hint: str,
    tofu_note: str,
) -> TrustedSdist:
    """``up.name==version`` as a verified spec (``up``: the pinned upstream).

    ``sha256`` is the user's ``--sha256`` (with ``sdist_url`` the file is
    named outright and verified against it alone, as a pin in fork.toml is);
    ``pin_hint`` is the command line that pins a file, ``tofu_note`` what a
    trust-on-first-use line adds.
    """
    if sdist_url:
        check_url(sdist_url, "--sdist-url")
        if sha256:
            trust = f"sha256 {sha256} pinned by --sha256 ({sdist_url})"
            return _trusted(
                up, version=version, sha256=sha256, url=sdist_url, trust=trust
            )
    with step(f"resolving the sdist of {up.name}=={version}"):
        ref = resolve_sdist(up.name, version, up.index_url)
    url = sdist_url or ref.url
    if sha256:
        if ref.sha256 and ref.sha256 != sha256:
            raise ForkkitError(
                f"{ref.filename}: the index says sha256 {ref.sha256}, not the "
                f"--sha256 {sha256} you pinned; check which file you trust"
            )
        trust = f"sha256 {sha256} pinned by --sha256 ({ref.filename})"
        return _trusted(up, version=version, sha256=sha256, url=url, trust=trust)
    if not ref.sha256:
        raise ForkkitError(
            f"{ref.filename}: the index publishes no sha256; pin the file you "
            f"trust with '{pin_hint}'"
        )
    trust = (
        f"trust on first use: sha256 {ref.sha256} of {ref.filename} as published "
        f"by {up.index_url}; {tofu_note}"
    )
    return _trusted(
        up, version=version, sha256=ref.sha256, url=url, trust=trust, tofu=True
    )


def _trusted(
    up: UpstreamSpec,
    *,
    version: str,
    sha256: str,
    url: str,
    trust: str,
    tofu: bool = False,
) -> TrustedSdist:
    check_url(url, "upstream sdist_url")
    spec = replace(up, source="sdist", sdist=SdistPin(version, sha256, url))
    return TrustedSdist(spec=spec, trust=trust, tofu=tofu)
