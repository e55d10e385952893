# SPDX-License-Identifier: MIT
"""Write ``kdtree_old_format_*.skops``: KDTreePartitioner model files in the
layout before the leaf bounds were stored once per distinct path coordinate
(``leaf_axes_``, ``leaf_lower_``, ``leaf_upper_`` stored as full
``(n_cells_, depth_)`` tables), and what they give.

Run from a checkout of sklearn_betacal before that change (commit 3b6daf0)::

    PYTHONPATH=<old checkout> python tests/data/kdtree_old_format_make.py
"""

import json
from pathlib import Path

import numpy as np

import sklearn_betacal
from sklearn_betacal import KDTreePartitioner
from sklearn_betacal.io import dump

HERE = Path(__file__).parent
#: (file stem, parameters): a deep cycle (coordinates reused on the path),
#: per-node axes, and the rotated cycle with its widened bounds
MODELS = {
    "cycle": {"max_depth": 64, "min_samples_leaf": 2},
    "max_spread": {"max_depth": 7, "split_axis": "max_spread"},
    "pca": {"max_depth": 6, "split_axis": "pca", "random_state": 0},
}


def _table(a):
    """A float table as lists, NaN as None (repr round-trips every float)."""
    return [[None if v != v else v for v in r] for r in a.tolist()]


def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    X[:, 2] = np.round(X[:, 2] * 2) / 2  # ties
    probe = np.vstack([X[::7], rng.normal(size=(60, 3)) * 1.2])
    return X, probe


if __name__ == "__main__":
    assert "leaf_lower_" in vars(KDTreePartitioner(1).fit([[0.0], [1.0]])), (
        "run on the old checkout"
    )
    X, probe = data()
    out = {"sklearn_betacal": sklearn_betacal.__version__}
    for name, params in MODELS.items():
        part = KDTreePartitioner(**params).fit(X)
        dump(part, HERE / f"kdtree_old_format_{name}.skops")
        out[name] = {
            "cells": part.apply(probe).tolist(),
            "leaf_axes": part.leaf_axes_.tolist(),
            "leaf_lower": _table(part.leaf_lower_),
            "leaf_upper": _table(part.leaf_upper_),
        }
    (HERE / "kdtree_old_format.json").write_text(json.dumps(out))
