# SPDX-License-Identifier: MIT
"""The version promises in setup.cfg are the ones CI tests.

``.ci/floors.txt`` pins the oldest supported versions for the floors leg of
``.ci/run``; every pin must equal the lower bound that setup.cfg declares, and
every runtime dependency and every package of the optional extras that the
suite exercises must have a pin (otherwise pip resolves that extra freely and
the leg does not test its floor). Floors that admit releases with known
code-execution advisories are refused.
"""

import configparser
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


#: the optional extras whose packages the floors leg installs (through the
#: tests extra) and so must pin: each of their packages needs a tested floor
TESTED_EXTRAS = ("parquet", "plot", "skops", "polars", "dask", "fast")

#: package -> (first safe version, reason): floors below are refused
KNOWN_UNSAFE = {
    "pyarrow": ((14, 0, 1), "CVE-2023-47248: 14.0.0 runs code from a Parquet file"),
    "skops": ((0, 12), "skops < 0.12 runs code from a crafted model file"),
}


def _extras_require():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return {
        name: [r for r in value.split("\n") if r]
        for name, value in cfg["options.extras_require"].items()
    }


def _requirements():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    runtime = [r for r in cfg["options"]["install_requires"].split("\n") if r]
    extras = [r for value in _extras_require().values() for r in value]
    return runtime, extras


def _lower_bounds(requirements):
    bounds = {}
    for req in requirements:
        # a name, optional [extras], then the lower bound
        m = re.match(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*>=\s*([0-9][0-9.]*)", req)
        if m:
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


def test_packaging_every_tested_extra_has_a_pinned_floor():
    extras = _extras_require()
    floors = _floors()
    wanted = set()
    for name in TESTED_EXTRAS:
        reqs = extras[name]
        assert set(reqs) <= set(extras["tests"]), (
            f"the tests extra must pull in the {name} extra: {reqs}"
        )
        wanted |= set(_lower_bounds(reqs))
    assert wanted >= {"pyarrow", "matplotlib", "skops", "polars", "dask"}
    missing = wanted - set(floors)
    assert not missing, f"optional extras without a pinned floor: {sorted(missing)}"


def _version(text):
    return tuple(int(p) for p in text.split("."))


def test_packaging_no_floor_admits_a_known_unsafe_release():
    runtime, extras = _requirements()
    bounds = _lower_bounds(runtime + extras)
    for name, (safe, reason) in KNOWN_UNSAFE.items():
        for version in bounds[name] | {_floors()[name]}:
            assert _version(version) >= safe, f"{name}>={version} admits it: {reason}"


def test_packaging_hypothesis_replays_by_default(monkeypatch):
    """A newcomer's run (no CI variables) replays the fixed examples; fresh
    draws only with BETACAL_HYPOTHESIS_EXPLORE=1 (tests/conftest.py)."""
    import os

    from hypothesis import settings

    if os.environ.get("BETACAL_HYPOTHESIS_EXPLORE", "").lower() in {"1", "true", "yes"}:
        pytest.skip("BETACAL_HYPOTHESIS_EXPLORE asks for fresh draws")
    assert settings.default.derandomize


def test_mixed_leg_runs_test_files_that_exist():
    """The mixed-floors leg of ``.ci/run`` names its test files: a removed or
    renamed file fails that leg with pytest's "file not found" (a test file
    retired in the main tree must leave the list too)."""
    text = (ROOT / ".ci" / "run").read_text()
    block = re.search(r'MIXED_TESTS="([^"]*)"', text)
    assert block, "MIXED_TESTS not found in .ci/run"
    paths = block.group(1).split()
    assert paths
    missing = [p for p in paths if not (ROOT / p).is_file()]
    assert not missing, f".ci/run's MIXED_TESTS names missing files: {missing}"
