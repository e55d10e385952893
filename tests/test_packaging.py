# SPDX-License-Identifier: MIT
"""The version promises in setup.cfg are the ones CI tests.

``.ci/floors.txt`` pins the oldest supported versions for the floors leg of
``.ci/run``; every pin must equal the lower bound that setup.cfg declares, and
every runtime dependency must have a pin.
"""

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _requirements():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    runtime = [r for r in cfg["options"]["install_requires"].split("\n") if r]
    extras = [
        r
        for value in cfg["options.extras_require"].values()
        for r in value.split("\n")
        if r
    ]
    return runtime, extras


def _lower_bounds(requirements):
    bounds = {}
    for req in requirements:
        if m := re.match(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9][0-9.]*)", req):
            bounds.setdefault(m.group(1).lower(), set()).add(m.group(2))
    return bounds


def _floors():
    pins = {}
    for line in (ROOT / ".ci" / "floors.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def test_packaging_floors_equal_declared_lower_bounds():
    runtime, extras = _requirements()
    bounds = _lower_bounds(runtime + extras)
    floors = _floors()
    assert floors, "no pins read from .ci/floors.txt"
    for name, version in floors.items():
        assert bounds.get(name) == {version}, (
            f"{name}: .ci/floors.txt pins {version}, setup.cfg says "
            f">= {sorted(bounds.get(name, []))}"
        )
    missing = set(_lower_bounds(runtime)) - set(floors)
    assert not missing, f"runtime dependencies without a tested floor: {missing}"


def test_packaging_scikit_learn_has_a_tested_upper_bound():
    runtime, _ = _requirements()
    (sklearn,) = [r for r in runtime if r.startswith("scikit-learn")]
    assert re.search(r",\s*<\s*[0-9]", sklearn), sklearn
