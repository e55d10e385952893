# SPDX-License-Identifier: MIT
"""Shared fixtures: the real data in ``../shared/data``, and what an import loads.

Tests that read it skip with a reason when the folder is absent (a user's own
clone) and *fail* when ``CI=true``, where it is always present: a real-data
test must never silently stop running.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# Figures render off-screen; library code never chooses a backend.
os.environ.setdefault("MPLBACKEND", "Agg")

# tests/data/ holds golden values and the scripts that made them. The scripts
# are run by hand (``python tests/data/<script>.py``) with packages the
# ``tests`` extra does not install (mpmath, R); they are not test modules, so
# ``--doctest-modules`` must not import them.
collect_ignore_glob = ["data/*"]

# Every run replays the same examples by default -- a newcomer's, a
# developer's and CI's -- so that a failure is reproducible and no run hangs
# on an unlucky draw. BETACAL_HYPOTHESIS_EXPLORE=1 opts in to fresh random
# draws (hypothesis' own defaults) to look for new counterexamples.
settings.register_profile("replay", derandomize=True, print_blob=True)
settings.register_profile("explore", print_blob=True)
_EXPLORE = os.environ.get("BETACAL_HYPOTHESIS_EXPLORE", "").lower()
settings.load_profile("explore" if _EXPLORE in {"1", "true", "yes"} else "replay")

SHARED_DATA = Path(
    os.environ.get(
        "BETACAL_SHARED_DATA",
        Path(__file__).resolve().parents[1].parent / "shared" / "data",
    )
)


def _require(path):
    if path.exists():
        return path
    msg = f"real data not found at {path} (set BETACAL_SHARED_DATA)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(msg + "; under CI=true it must be present")
    pytest.skip(msg)


@pytest.fixture(scope="session")
def shared_data():
    """Path to ``../shared/data`` (skip locally, fail in CI when absent)."""
    return _require(SHARED_DATA)


@pytest.fixture(scope="session")
def influences_frame(shared_data):
    """The full Influences-on-LLM-Calibration parquet as a DataFrame."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = _require(
        shared_data / "influences" / "influences_llm_calibration_all.parquet"
    )
    return pd.read_parquet(path)


@pytest.fixture(scope="session")
def influences_verb(influences_frame):
    """Verb prompt style rows with a valid verbalized confidence in [0, 1]."""
    A = influences_frame
    keep = (A.prompt_style == "verb") & A.verbal_confidence.between(0, 1)
    return A[keep].reset_index(drop=True)


@pytest.fixture(scope="session")
def cifar_dir(shared_data):
    return _require(shared_data / "cifar")


@pytest.fixture
def sklearn_temperature():
    """Skip unless scikit-learn has its own temperature scaling (1.8+), the
    peer reference some tests compare with (the floors leg runs 1.7)."""
    from sklearn.calibration import CalibratedClassifierCV

    options = CalibratedClassifierCV._parameter_constraints["method"]
    if not any("temperature" in getattr(c, "options", ()) for c in options):
        pytest.skip("this scikit-learn has no method='temperature' to compare with")


# The tests that an import stays light (no pandas behind the CLI's parser,
# no optional extra behind the package) run it in a fresh interpreter, where
# nothing else has loaded a module yet, and ask which packages it loaded.
_LOADED = (
    "\nimport sys\n"
    "loaded = {m.split('.')[0] for m in sys.modules}\n"
    "print(' '.join(sorted(loaded & set(sys.argv[1:]))))"
)


@pytest.fixture(scope="session")
def fresh_imports():
    """``fresh_imports(code, roots)``: the sorted names among ``roots`` (top-level
    packages) that the lines of Python ``code`` import in a fresh interpreter."""

    def loaded(code, roots):
        run = subprocess.run(
            [sys.executable, "-c", code + _LOADED, *roots],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr
        return run.stdout.split()

    return loaded
