# SPDX-License-Identifier: MIT
"""Every gallery example in ``examples/`` runs to the end (offline, Agg).

The examples are the docs' runnable demonstrations on real data; running them
here keeps them from rotting between docs builds.
"""

import runpy
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("plot_*.py"))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(path, monkeypatch, tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.chdir(tmp_path)  # anything an example writes lands here
    try:
        runpy.run_path(str(path), run_name="__main__")
    finally:
        plt.close("all")


def test_examples_exist():
    assert len(EXAMPLES) >= 7
