"""One path from a named release to a pristine commit (rebase target and
reconcile competitor alike): the trust policy, and the commit made once."""

from __future__ import annotations

import json

import pytest

from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.pristine import pristine_commit
from forkkit.fork.tree import make_base
from forkkit.upstream.trust import TrustedSdist, trusted_sdist
from forkkit.vcs import Repo
from tests.synthetic import SyntheticUpstream, toy_release


def _trust(cfg: ForkConfig, **opts: str) -> TrustedSdist:
    return trusted_sdist(
        cfg.upstream,
        version="1.1",
        pin_hint="forkkit reconcile --with toy==1.1 --sha256 HEX",
        tofu_note="pin it with --sha256",
        **opts,
    )


def test_one_trust_policy(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    sdist, sha = toy_upstream.publish("1.1", toy_release({"toy/x.py": ""}))
    tofu = _trust(toy_project)
    assert tofu.tofu and tofu.spec.release.sha256 == sha
    assert tofu.trust.startswith(f"trust on first use: sha256 {sha} of {sdist.name}")
    assert tofu.trust.endswith("; pin it with --sha256")
    assert tofu.spec.ident == f"sdist:toy==1.1#sha256={sha}"
    pinned = _trust(toy_project, sha256=sha)
    assert not pinned.tofu and pinned.spec == tofu.spec
    assert pinned.trust == f"sha256 {sha} pinned by --sha256 ({sdist.name})"
    with pytest.raises(ForkkitError, match="the index says sha256") as err:
        _trust(toy_project, sha256="ab" * 32)
    assert "\n" not in str(err.value)
    page = toy_upstream.sdist_dir / "index.json"
    data = json.loads(page.read_text())
    for entry in data["files"]:
        entry["hashes"] = {}
    page.write_text(json.dumps(data))
    with pytest.raises(ForkkitError) as err:
        _trust(toy_project)
    assert str(err.value) == (
        f"{sdist.name}: the index publishes no sha256; pin the file you trust "
        "with 'forkkit reconcile --with toy==1.1 --sha256 HEX'"
    )
    assert _trust(toy_project, sha256=sha).spec == tofu.spec  # pinned by hand
    # a URL given outright is verified against --sha256 alone, as a pin is
    page.unlink()
    named = _trust(toy_project, sha256=sha, sdist_url=sdist.as_uri())
    assert named.spec.release.sdist_url == sdist.as_uri() and not named.tofu
    with pytest.raises(ForkkitError, match=r"^--sdist-url: 'nowhere' is not"):
        _trust(toy_project, sha256=sha, sdist_url="nowhere")


def test_a_verified_release_is_committed_once_per_repository(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The competitor's commit and a rebase target's base are one commit,
    made once; another sha256 of the same version is another commit."""
    toy_upstream.publish("1.1", toy_release({"toy/x.py": ""}))
    spec = _trust(toy_project).spec
    repo = Repo.init(toy_project.workdir / "repo")
    first = pristine_commit(repo, spec=spec, work=toy_project.work)
    assert "committing pristine toy 1.1" in capsys.readouterr().err
    assert first.upstream_commit is None
    assert pristine_commit(repo, spec=spec, work=toy_project.work) == first
    assert make_base(repo, spec, toy_project.work) == (first.commit, None)
    assert "committing" not in capsys.readouterr().err
    toy_upstream.publish("1.1", toy_release({"toy/x.py": "# republished\n"}))
    (toy_project.work.sdist_cache / "toy-1.1.tar.gz").unlink()
    other = pristine_commit(repo, spec=_trust(toy_project).spec, work=toy_project.work)
    assert other.commit != first.commit
    assert list(repo.changed_paths(first.commit, other.commit)) == ["toy/x.py"]
