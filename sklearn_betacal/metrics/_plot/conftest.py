# SPDX-License-Identifier: MIT
"""Doctests of the displays: Agg backend, skipped without the ``plot`` extra."""

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

os.environ.setdefault("MPLBACKEND", "Agg")


def pytest_collection_modifyitems(config, items):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        skip = pytest.mark.skip(reason="needs the 'plot' extra (matplotlib)")
        for item in items:  # the hook sees every item: only ours
            if HERE in Path(str(item.path)).resolve().parents:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        return
    plt.close("all")
