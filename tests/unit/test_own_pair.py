# SPDX-License-Identifier: Apache-2.0
"""A fix is judged by its own red and its own green, of the same shape (#44
K5, K2, K3): real git and pytest on toy lines.

- One fix's test module that sets process state when it is imported (an
  environment variable, a module attribute) never proves another fix whose
  runtime change is a comment.
- A committed test that reads its own path, the JUnit path in argv or the
  environment sees the same in red and green.
- One failing fix never changes another fix's verdict or reason.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from forkkit.cli import main
from forkkit.config import ForkConfig
from tests.synthetic import (
    BUGGY,
    FIX_TEST,
    FIXED_CALC,
    SyntheticUpstream,
    make_project,
    toy_release,
    toy_testenv_python,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True)
def _toy_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())


# Upstream's limit is right only when a switch is on: an environment
# variable, or a module attribute of toy.mode.
ENV_CALC = "import os\n\n\n" + BUGGY["toy/calc.py"].replace(
    "return n - 1", 'return n if os.environ.get("TOY_STRICT") else n - 1'
)
ATTR_CALC = "from toy import mode\n\n\n" + BUGGY["toy/calc.py"].replace(
    "return n - 1", "return n if mode.STRICT else n - 1"
)
# Fix Y's test module turns the switch on when it is imported.
Y_TEST_ENV = textwrap.dedent(
    """\
    import os

    from toy.other import size

    os.environ["TOY_STRICT"] = "1"


    def test_size_is_fixed():
        assert size() == 2
    """
)
Y_TEST_ATTR = Y_TEST_ENV.replace("import os\n", "import toy.mode\n").replace(
    'os.environ["TOY_STRICT"] = "1"', "toy.mode.STRICT = True"
)
# toy.other with a second bug: size() should be 2
OTHER = BUGGY["toy/other.py"] + "\n\ndef size():\n    return 1\n"
X_TEST = FIX_TEST.replace("16000", "5")


def _series(calc: str, y_test: str) -> list[tuple[str, dict[str, str]]]:
    """Y: a real fix of toy.other whose test module flips the switch; X: a
    comment in calc.py and a test of limit (which only the switch makes pass)."""
    return [
        (
            "[Bugfix] name",
            {
                "toy/other.py": OTHER.replace("return 1", "return 2"),
                "tests/test_a_name.py": y_test,
            },
        ),
        (
            "[Bugfix] limit",
            {
                "toy/calc.py": calc.replace("def limit(n):", "# clamp\ndef limit(n):"),
                "tests/test_limit.py": X_TEST,
            },
        ),
    ]


def _line(
    tmp: Path, up: SyntheticUpstream, version: str, release: dict[str, str], series: Any
) -> ForkConfig:
    up.publish(version, toy_release({"toy/other.py": OTHER, **release}))
    return make_project(tmp / "proj", up, version, series, fix_ids=["name", "limit"])


def _summary(cfg: ForkConfig) -> dict[str, Any]:
    path = cfg.workdir / "reports" / "red_green" / "summary.json"
    return {f["fix"]: f for f in json.loads(path.read_text())["fixes"]}


def _proof(cfg: ForkConfig, fix: str) -> Any:
    path = cfg.workdir / "reports" / "red_green" / fix / "red_green.json"
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    ("calc", "y_test", "extra"),
    [
        (ENV_CALC, Y_TEST_ENV, {}),
        (ATTR_CALC, Y_TEST_ATTR, {"toy/mode.py": "STRICT = False\n"}),
    ],
    ids=["environment", "module-attribute"],
)
@pytest.mark.parametrize("parallel", ["off", "on"])
def test_another_fixs_test_module_never_proves_a_no_op(
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    calc: str,
    y_test: str,
    extra: dict[str, str],
    parallel: str,
) -> None:
    cfg = _line(
        tmp_path,
        toy_upstream,
        "2.0",
        {"toy/calc.py": calc, **extra},
        _series(calc, y_test),
    )
    code = main(["--config", str(cfg.path), "red-green", "--parallel", parallel])
    fixes = _summary(cfg)
    assert fixes["name"]["valid"] is True
    assert fixes["limit"]["valid"] is False, fixes["limit"]
    assert code != 0
    doc = _proof(cfg, "limit")
    assert doc["classification"]["FAIL_TO_PASS"] == []
    assert doc["green"]["counts"]["failed"] == 1  # its own green: the switch is off


# A test that looks at where and how it runs: its path, the JUnit path in
# argv, the environment. It passes on the fixed tree only when all of them
# are what they were in red (red writes them down, green compares).
SHAPE_TEST = textwrap.dedent(
    """\
    import json
    import os
    import sys
    from pathlib import Path

    from toy.calc import limit

    SEEN = Path(os.environ["TOY_SHAPE"])


    def test_limit_reaches_n():
        now = {
            "file": __file__,
            "argv": sys.argv,
            "env": {k: v for k, v in os.environ.items() if "PYTEST" not in k},
        }
        if limit(5) != 5:  # red: write the shape down, fail on the bug
            SEEN.write_text(json.dumps(now))
            assert limit(5) == 5
        assert json.loads(SEEN.read_text()) == now
    """
)


@pytest.mark.parametrize("parallel", ["off", "on"])
def test_red_and_green_see_the_same_path_argv_and_environment(
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    parallel: str,
) -> None:
    shape = tmp_path / "shape.json"
    monkeypatch.setenv("TOY_SHAPE", str(shape))
    series = [
        (
            "[Bugfix] limit",
            {"toy/calc.py": FIXED_CALC, "tests/test_shape.py": SHAPE_TEST},
        )
    ]
    cfg = make_project(tmp_path / "proj", toy_upstream, "1.0", series)
    text = cfg.path.read_text().replace(
        "[testenv]\n", '[testenv]\npass_env = ["TOY_SHAPE"]\n'
    )
    cfg.path.write_text(text)
    code = main(["--config", str(cfg.path), "red-green", "--parallel", parallel])
    doc = _proof(cfg, "toy-fix")
    assert doc["classification"]["FAIL_TO_PASS"] == [
        "tests/test_shape.py::test_limit_reaches_n"
    ], doc["problems"]
    assert doc["problems"] == []
    assert code == 0
    assert shape.is_file()


def test_one_failing_fix_never_changes_another_fixs_verdict_or_reason(
    toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    """Y's test fails on the fix too (Y is broken); X is a real fix. X is
    valid with no problem at all, Y is invalid for its own reason."""
    series = [
        (
            "[Bugfix] name",
            {
                "toy/other.py": OTHER.replace("return 1", "return 3"),
                "tests/test_a_name.py": Y_TEST_ENV.replace(
                    "os.environ", "_ = os.environ"
                ),
            },
        ),
        ("[Bugfix] limit", {"toy/calc.py": FIXED_CALC, "tests/test_limit.py": X_TEST}),
    ]
    cfg = _line(tmp_path, toy_upstream, "2.0", {}, series)
    main(["--config", str(cfg.path), "red-green", "--parallel", "off"])
    fixes = _summary(cfg)
    assert fixes["limit"]["valid"] is True
    assert _proof(cfg, "limit")["problems"] == []
    assert fixes["name"]["valid"] is False
    assert not any(
        "JUnit records no failure" in p for p in _proof(cfg, "name")["problems"]
    )
