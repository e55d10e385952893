# SPDX-License-Identifier: MIT
"""Every gallery example in ``examples/`` runs to the end (offline, Agg).

The examples are the docs' runnable demonstrations on real data; running them
here keeps them from rotting between docs builds. An example that reads data
the package does not bundle gets that folder through ``BETACAL_SHARED_DATA``
from the ``shared_data`` fixture: it skips with a reason when the data are
absent and fails under ``CI=true``.
"""

import runpy
from pathlib import Path

import pytest

from conftest import _require

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("plot_*.py"))

# example -> the files it reads below the real-data folder
NEEDS_DATA = {
    "plot_temperature_cifar": "cifar/densenet-bc-100-cifar-100.npz",
    "plot_calibrated_classifier": "cifar/wideresnet-16-4-cifar-10.npz",
}


# examples that compare with scikit-learn's own temperature scaling (1.8+)
NEEDS_SKLEARN_TEMPERATURE = {"plot_calibrated_classifier"}


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(path, monkeypatch, tmp_path, request):
    if path.stem in NEEDS_SKLEARN_TEMPERATURE:
        request.getfixturevalue("sklearn_temperature")  # skips on < 1.8
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if path.stem in NEEDS_DATA:
        data = request.getfixturevalue("shared_data")
        _require(data / NEEDS_DATA[path.stem])
        monkeypatch.setenv("BETACAL_SHARED_DATA", str(data))
    monkeypatch.chdir(tmp_path)  # anything an example writes lands here
    try:
        runpy.run_path(str(path), run_name="__main__")
    finally:
        plt.close("all")


def test_examples_data_table_names_real_examples():
    assert set(NEEDS_DATA) | NEEDS_SKLEARN_TEMPERATURE <= {p.stem for p in EXAMPLES}


def test_examples_exist():
    assert len(EXAMPLES) >= 7
