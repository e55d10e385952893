# SPDX-License-Identifier: MIT
"""The cheap prediction path for small batches (one answer at a time).

A float ndarray skips the second pass of scikit-learn's checks, the kd-tree
builds its routing tables once per fit and the binning calibrators their
table lookup once per fit; results stay bit-identical and every input the
checks refuse is still refused by them.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_array_equal

import sklearn_betacal._base as base_module
import sklearn_betacal._group_binning as group_binning_module
import sklearn_betacal._partition._base as partition_base_module
import sklearn_betacal._partition._kdtree as kdtree_module
from sklearn_betacal import (
    BetaBinningCalibrator,
    HierarchicalLogisticScaler,
    KDTreePartitioner,
    ScalingBetaBinningCalibrator,
)


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(0.01, 0.99, size=n), rng.normal(size=(n, 3))])
    y = (rng.uniform(size=n) < X[:, 0] ** (1 + (X[:, 1] > 0))).astype(int)
    return X, y


MODELS = [
    lambda: BetaBinningCalibrator(KDTreePartitioner(max_depth=2), random_state=0),
    lambda: ScalingBetaBinningCalibrator(
        KDTreePartitioner(max_depth=2), random_state=0
    ),
    lambda: HierarchicalLogisticScaler(KDTreePartitioner(max_depth=2)),
]


class _Counter:
    def __init__(self, func):
        self.func, self.calls = func, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.func(*args, **kwargs)


@pytest.mark.parametrize("make", MODELS)
def test_small_batch_float_array_is_checked_once(make, monkeypatch):
    X, y = _data()
    est = make().fit(X, y)
    counters = {}
    # the partitioners validate through _partition._base.validate_numeric
    for module in (base_module, partition_base_module):
        counters[module] = _Counter(module.validate_data)
        monkeypatch.setattr(module, "validate_data", counters[module])
    one = X[:1]
    fast = est.predict_proba(one)
    assert sum(c.calls for c in counters.values()) == 0
    # the same rows as a list take scikit-learn's checks: identical output
    assert_array_equal(est.predict_proba(one.tolist()), fast)
    assert sum(c.calls for c in counters.values()) >= 1
    batch = X[:100]
    assert_array_equal(est.predict_proba(batch), est.predict_proba(batch.tolist()))


@pytest.mark.parametrize("make", MODELS)
def test_small_batch_refused_inputs_still_refused(make):
    X, y = _data()
    est = make().fit(X, y)
    bad = X[:2].copy()
    bad[0, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.predict_proba(bad)
    with pytest.raises(ValueError, match="features"):
        est.predict_proba(X[:2, :3])
    with pytest.raises(ValueError):
        est.predict_proba(X[:0])
    # fitted with names: an array without them keeps scikit-learn's warning
    frame = pd.DataFrame(X, columns=["h", "a", "b", "c"])
    named = make().set_params(confidence_column="h").fit(frame, y)
    with pytest.warns(UserWarning, match="feature names"):
        named.predict_proba(X[:1])


def test_kdtree_routing_tables_built_once_per_fit(monkeypatch):
    X, _ = _data()
    counter = _Counter(kdtree_module._kdtree.prepare_kdtree)
    monkeypatch.setattr(kdtree_module._kdtree, "prepare_kdtree", counter)
    part = KDTreePartitioner(max_depth=3).fit(X[:, 1:])
    first = [part.transform(X[i : i + 1, 1:]) for i in range(5)]
    assert counter.calls == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        state = dict(part.__dict__)
        part.transform(X[:10, 1:])
        assert part.__dict__.keys() == state.keys()  # nothing kept in __dict__
    # refitted on other rows: new tables, the new tree's cells
    part.fit(X[::-1, 1:][:1000] * 3.0)
    fresh = KDTreePartitioner(max_depth=3).fit(X[::-1, 1:][:1000] * 3.0)
    assert_array_equal(part.transform(X[:, 1:]), fresh.transform(X[:, 1:]))
    assert counter.calls == 3
    assert_array_equal(
        np.vstack(first),
        KDTreePartitioner(max_depth=3).fit(X[:, 1:]).transform(X[:5, 1:]),
    )


def test_binning_lookup_built_once_per_fit(monkeypatch):
    X, y = _data()
    counter = _Counter(group_binning_module.segment_lookup)
    monkeypatch.setattr(group_binning_module, "segment_lookup", counter)
    est = BetaBinningCalibrator(KDTreePartitioner(max_depth=2), random_state=0)
    est.fit(X, y)
    calls = counter.calls
    for i in range(5):
        est.predict_proba(X[i : i + 1])
    assert counter.calls == calls + 1
    # refitted on other rows: the new tables' lookup
    est.fit(X[:1500], y[:1500])
    fresh = BetaBinningCalibrator(KDTreePartitioner(max_depth=2), random_state=0)
    fresh.fit(X[:1500], y[:1500])
    assert_array_equal(est.predict_proba(X), fresh.predict_proba(X))


@pytest.mark.parametrize(
    "params",
    [
        {"max_depth": 3},
        {"max_depth": 5, "bounded": False},
        {"max_depth": 4, "split_axis": "pca"},
        {"max_depth": 0},
    ],
)
def test_kdtree_few_rows_walk_gives_the_vectorized_cells(params):
    # up to WALK_ROWS rows are walked in Python: the same cells as the NumPy
    # pass over many rows, also outside every leaf's bounds (cell -1)
    X, _ = _data()
    part = KDTreePartitioner(**params).fit(X[:2000, 1:])
    probe = np.vstack([X[2000:2200, 1:], 3.0 * X[2200:2300, 1:]])
    all_rows = part.transform(probe)
    assert probe.shape[0] > kdtree_module._kdtree.WALK_ROWS
    one_by_one = np.vstack([part.transform(probe[i : i + 1]) for i in range(300)])
    assert_array_equal(one_by_one, all_rows)
    pairs = np.vstack([part.transform(probe[i : i + 3]) for i in range(0, 300, 3)])
    assert_array_equal(pairs, all_rows)
    if params.get("bounded", True) and params["max_depth"]:
        assert (all_rows == -1).any()
    assert_array_equal(
        part.transform(probe[:3].astype(np.float32)),
        part.transform(np.vstack([probe[:3], probe[:3]]).astype(np.float32))[:3],
    )
