# SPDX-License-Identifier: MIT
"""The group-calibrator template fit (``_base._GroupCalibratorMixin``):
what a supervised partitioner receives, and the honest split."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.base import BaseEstimator, TransformerMixin

from sklearn_betacal import (
    BetaBinningCalibrator,
    HierarchicalLogisticScaler,
    ScalingBetaBinningCalibrator,
    UMDBinner,
)


class _Recorder(TransformerMixin, BaseEstimator):
    """Supervised toy partitioner: cell = first feature; records its fit."""

    def __init__(self, honest=False):
        self.honest = honest

    def fit(self, Z, y, *, confidence=None, sample_weight=None):
        self.seen_ = {"n": len(y), "y": np.asarray(y), "h": confidence}
        self.seen_["w"] = sample_weight
        return self

    def honest_split(self, n_rows, random_state=None):
        rows = np.arange(n_rows)
        return rows[rows % 2 == 0], rows[rows % 2 == 1]

    def transform(self, Z):
        return np.asarray(Z)[:, 0].astype(np.int64)

    def __getattribute__(self, name):
        # honest_split exists only when asked for
        if name == "honest_split" and not object.__getattribute__(self, "honest"):
            raise AttributeError(name)
        return object.__getattribute__(self, name)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    h = rng.uniform(size=n)
    X = np.column_stack([h, rng.integers(0, 3, n)])
    return X, (rng.uniform(size=n) < h).astype(int)


@pytest.mark.parametrize(
    "make",
    [
        lambda p: BetaBinningCalibrator(p, points_per_bin=10, random_state=0),
        lambda p: HierarchicalLogisticScaler(p),
        lambda p: ScalingBetaBinningCalibrator(p, points_per_bin=10, random_state=0),
    ],
)
def test_group_base_supervised_partitioner_gets_labels_confidence_weights(make):
    X, y = _data()
    w = np.ones(len(y))
    w[:10] = 0.0  # dropped before the partitioner sees the rows
    est = make(_Recorder()).fit(X, y, sample_weight=w)
    seen = est.partitioner_.seen_
    assert seen["n"] == len(y) - 10
    assert_array_equal(seen["y"], y[10:])
    assert_array_equal(seen["h"], X[10:, 0])
    assert_array_equal(seen["w"], w[10:])


def test_group_base_unsupervised_partitioner_gets_no_labels():
    class Unsupervised(_Recorder):
        def __sklearn_tags__(self):
            tags = super().__sklearn_tags__()
            tags.target_tags.required = False
            return tags

        def fit(self, Z, y=None):
            self.y_ = y
            return self

    X, y = _data()
    bb = BetaBinningCalibrator(Unsupervised(), points_per_bin=10).fit(X, y)
    assert bb.partitioner_.y_ is None


def test_group_base_honest_split_bins_only_the_other_rows():
    X, y = _data()
    bb = BetaBinningCalibrator(
        _Recorder(honest=True), points_per_bin=10, random_state=0
    ).fit(X, y)
    grow = np.arange(len(y)) % 2 == 0
    assert bb.partitioner_.seen_["n"] == grow.sum()
    assert_array_equal(bb.partitioner_.seen_["y"], y[grow])
    # the root binning is UMD on the bin rows alone (Alg. 1, lines 1-2)
    umd = UMDBinner(points_per_bin=10, random_state=0).fit(X[~grow, 0], y[~grow])
    outside = np.column_stack([np.linspace(0, 1, 11), np.full(11, -1)])
    assert_array_equal(bb.predict_proba(outside), umd.predict_proba(outside[:, 0]))
