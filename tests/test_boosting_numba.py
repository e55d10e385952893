# SPDX-License-Identifier: MIT
"""The compiled forest walk of scaler="features" gives the NumPy path's
scores bit for bit (extra ``fast``)."""

import numpy as np
import pytest

from sklearn_betacal import KDTreePartitioner, ScalingBetaBinningCalibrator
from sklearn_betacal._kernels import _boosting

pytest.importorskip("numba")


def _fitted(seed=0, n=3000):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, 3))
    Z[:, 2] = np.round(Z[:, 2], 1)  # ties: rows exactly on thresholds
    h = rng.uniform(0.02, 0.98, n)
    logit = np.log(h / (1 - h))
    p = 1 / (1 + np.exp(-(1.2 * Z[:, 0] + np.exp(0.5 * Z[:, 1]) * logit)))
    y = (rng.uniform(size=n) < p).astype(int)
    X = np.column_stack([h, Z])
    sbb = ScalingBetaBinningCalibrator(
        KDTreePartitioner(max_depth=1), scaler="features", random_state=seed
    ).fit(X, y)
    return sbb, X


@pytest.mark.parametrize("seed", [0, 1])
def test_compiled_forest_walk_is_the_numpy_walk_bit_for_bit(seed, monkeypatch):
    sbb, X = _fitted(seed)
    state = sbb.scaler_
    assert len(state["trees"]) > 5
    rng = np.random.default_rng(seed + 10)
    F = np.column_stack(
        [rng.normal(size=(5000, 1)) * 2, X[rng.integers(0, X.shape[0], 5000), 1:]]
    )
    # rows exactly on every threshold of the first trees
    for t in state["trees"][:5]:
        inner = np.flatnonzero(t["children_left"] >= 0)
        for node in inner:
            F[node, t["feature"][node]] = t["threshold"][node]
    prepared = _boosting.prepare_forest(state["trees"])
    monkeypatch.setattr(_boosting, "USE_NUMBA", False)
    ref = _boosting.forest_raw(F, state["baseline"], prepared)
    monkeypatch.setattr(_boosting, "USE_NUMBA", True)
    got = _boosting.forest_raw(F, state["baseline"], prepared)
    assert prepared.packed is not None  # the compiled path ran
    assert got.tobytes() == ref.tobytes()
    # and through the estimator: the same probabilities either way
    monkeypatch.setattr(_boosting, "USE_NUMBA", False)
    p_ref = sbb.predict_proba(X)
    monkeypatch.setattr(_boosting, "USE_NUMBA", True)
    assert sbb.predict_proba(X).tobytes() == p_ref.tobytes()


def test_compiled_forest_walk_of_single_leaf_trees(monkeypatch):
    leaf = {
        "feature": np.array([-1]),
        "threshold": np.array([np.nan]),
        "children_left": np.array([-1]),
        "children_right": np.array([-1]),
        "cell": np.array([0]),
        "depth": np.array([0]),
        "value": np.array([0.25]),
    }
    stump = {
        "feature": np.array([1, -1, -1]),
        "threshold": np.array([0.0, np.nan, np.nan]),
        "children_left": np.array([1, -1, -1]),
        "children_right": np.array([2, -1, -1]),
        "cell": np.array([-1, 0, 1]),
        "depth": np.array([0, 1, 1]),
        "value": np.array([-1.0, 2.0]),
    }
    prepared = _boosting.prepare_forest([leaf, stump, leaf])
    F = np.array([[0.0, -1.0], [0.0, 0.0], [0.0, 1e-300], [5.0, 3.0]])
    monkeypatch.setattr(_boosting, "USE_NUMBA", True)
    got = _boosting.forest_raw(F, 0.5, prepared)
    left, right = 0.5 + 0.25 - 1.0 + 0.25, 0.5 + 0.25 + 2.0 + 0.25
    assert got.tolist() == [left, left, right, right]  # x <= 0 goes left
    monkeypatch.setattr(_boosting, "USE_NUMBA", False)
    assert _boosting.forest_raw(F, 0.5, prepared).tobytes() == got.tobytes()
