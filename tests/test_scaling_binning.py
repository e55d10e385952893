# SPDX-License-Identifier: MIT
"""Tests for ScalingBinningCalibrator (Kumar et al. 2019, baseline S-B)."""

import numpy as np
import pytest
from _umd_oracle import umd_fit
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier

from sklearn_betacal import PlattScaler, ScalingBinningCalibrator, TemperatureScaler


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(0.5, 1.5, size=n)
    p = 1 / (1 + np.exp(-z))  # overconfident: the truth is sigma(z / 2)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-z / 2))).astype(int)
    return p, y


def test_scaling_binning_agrees_with_kumar_platt_binner():
    """Against uncertainty-calibration's PlattBinnerCalibrator (Kumar's code).

    Where the two coincide: that code fits Platt and the bins on the same
    data, so our scaler is a PlattScaler fitted on that data and frozen (no
    split). Where they differ, precisely: with n = B m - 1 points its bins
    are np.array_split chunks of m points (the last one m - 1); our UMD bins
    hold the same points minus the edge point g_(b m) that closes each of the
    first B - 1 chunks. So for any point strictly inside a bin,
    kumar_b = ((m - 1) ours_b + g_(b m)) / m for b < B and kumar_B = ours_B.
    (At an edge point itself the lookups differ: Kumar's boundary is the
    midpoint above g_(b m), UMD's edge is g_(b m).)
    """
    calibration = pytest.importorskip("calibration")
    B, m = 10, 50
    n = B * m - 1
    p, y = _data(n)
    kumar = calibration.PlattBinnerCalibrator(n, B)
    kumar.train_calibration(p, y)

    platt = PlattScaler().fit(p, y)
    ours = ScalingBinningCalibrator(FrozenEstimator(platt), n_bins=B, delta=0.0).fit(
        p, y
    )
    assert ours.n_bins_ == B
    g = platt.predict_proba(p)[:, 1]
    # Same Platt fit up to the lbfgs tolerance of their LogisticRegression...
    assert_allclose(g, kumar._platt(p), rtol=1e-3)
    # ...so compare the binning stage exactly on the same scaled values g:
    # these are the last two lines of PlattBinnerCalibrator.train_calibration.
    utils = calibration.utils
    kumar_bins = utils.get_discrete_calibrator(g, utils.get_equal_bins(g, B))

    gs = np.sort(g)
    edge_pos = np.arange(1, B) * m  # A_k = ceil(k (n + 1) / B) = k m
    assert_array_equal(ours.bin_edges_, gs[edge_pos - 1])
    interior = ~np.isin(g, gs[edge_pos - 1])
    bins = np.searchsorted(ours.bin_edges_, g[interior], side="right")
    ours_v = ours.predict_proba(p[interior])[:, 1]
    edge_g = np.append(gs[edge_pos - 1], np.nan)[bins]
    expected = np.where(bins < B - 1, ((m - 1) * ours_v + edge_g) / m, ours_v)
    assert_allclose(kumar_bins(g[interior]), expected, rtol=1e-12)
    # The edge copy moves a bin value by at most 1/m of the bin's range.
    assert np.max(np.abs(kumar_bins(g[interior]) - ours_v)) < 0.02


def test_scaling_binning_outputs_mean_scaled_value_not_labels():
    p, y = _data(600, seed=1)
    platt = PlattScaler().fit(p, y)
    model = ScalingBinningCalibrator(FrozenEstimator(platt), n_bins=6, delta=0.0)
    model.fit(p, y)
    g = platt.predict_proba(p)[:, 1]
    assert_allclose(model.bin_values_, umd_fit(g, g, None, 6).values, rtol=1e-12)
    assert not np.allclose(model.bin_values_, umd_fit(g, y * 1.0, None, 6).values)
    # Every output lies inside the range of the scaled values of its bin.
    edges = np.concatenate([[-np.inf], model.bin_edges_, [np.inf]])
    for b in range(6):
        inside = (g > edges[b]) & (g < edges[b + 1])
        assert g[inside].min() <= model.bin_values_[b] <= g[inside].max()


def test_scaling_binning_split_and_random_state():
    p, y = _data(1000, seed=2)
    a = ScalingBinningCalibrator(n_bins=8, random_state=0).fit(p, y)
    b = ScalingBinningCalibrator(n_bins=8, random_state=0).fit(p, y)
    c = ScalingBinningCalibrator(n_bins=8, random_state=1).fit(p, y)
    x = np.linspace(0, 1, 101)
    assert a.predict_proba(x).tobytes() == b.predict_proba(x).tobytes()
    assert a.scaler_.coef_[0, 0] != c.scaler_.coef_[0, 0]
    # The scaler sees D1, the bins see the other half (D2): 500 - (B - 1).
    assert a.bin_counts_.sum() == 500 - 7
    full = PlattScaler().fit(p, y)
    assert a.scaler_.coef_[0, 0] != full.coef_[0, 0]
    assert 0.3 < a.scaler_.coef_[0, 0] < 0.8  # the true slope is 1/2
    quarter = ScalingBinningCalibrator(n_bins=8, scaler_fraction=0.25).fit(p, y)
    assert quarter.bin_counts_.sum() == 750 - 7


def test_scaling_binning_frozen_scaler_is_not_refit():
    p, y = _data(300, seed=3)
    platt = PlattScaler().fit(p[:100], y[:100])
    coef = platt.coef_.copy()
    model = ScalingBinningCalibrator(FrozenEstimator(platt), n_bins=5).fit(p, y)
    assert_array_equal(platt.coef_, coef)
    assert model.bin_counts_.sum() == 300 - 4  # all rows are binned


def test_scaling_binning_accepts_other_scalers():
    p, y = _data(800, seed=4)
    z = np.log(p) - np.log1p(-p)
    for scaler in (TemperatureScaler(input="logit"), LogisticRegression()):
        model = ScalingBinningCalibrator(
            scaler, n_bins=5, input="logit", random_state=0
        ).fit(z.reshape(-1, 1), y)
        proba = model.predict_proba(z.reshape(-1, 1))
        fresh = model.predict_proba(np.linspace(-4, 4, 1001).reshape(-1, 1))
        # At most B values, except at confidences tied with an edge point,
        # which get the expected output over the tie-breaking nudge.
        assert np.unique(fresh[:, 1]).size <= 5
        assert abs(proba[:, 1].mean() - y.mean()) < 0.05


def test_scaling_binning_weights_need_a_weighted_scaler():
    p, y = _data(100, seed=5)
    model = ScalingBinningCalibrator(KNeighborsClassifier(), n_bins=2)
    with pytest.raises(ValueError, match="does not accept sample_weight"):
        model.fit(p, y, sample_weight=np.ones(100))
    model.fit(p, y)  # without weights it is fine


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore:ScalingBinningCalibrator. 2 bins need")
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_scaling_binning_zero_weight_equals_drop(data):
    seed = data.draw(st.integers(0, 2**31 - 1))
    n = data.draw(st.integers(20, 60))
    p, y = _data(n, seed=seed % 1000)
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 4, size=n).astype(float)
    drop = rng.uniform(size=n) < 0.3
    w[drop] = 0
    a = ScalingBinningCalibrator(n_bins=2, random_state=3).fit(p, y, w)
    b = ScalingBinningCalibrator(n_bins=2, random_state=3).fit(
        p[~drop], y[~drop], w[~drop]
    )
    x = np.linspace(0, 1, 21)
    # The split is drawn over the kept rows only, so the fits are identical.
    assert a.predict_proba(x).tobytes() == b.predict_proba(x).tobytes()


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_scaling_binning_integer_weight_equals_repeat(data):
    # Exact with a frozen scaler and delta=0 (no split, no nudges; see Notes).
    n = data.draw(st.integers(4, 40))
    p, y = _data(n, seed=data.draw(st.integers(0, 1000)))
    p = np.round(p, 1)  # ties on purpose
    y[:2] = [0, 1]  # the frozen LogisticRegression needs both classes
    w = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    w[0] += 2
    scaler = FrozenEstimator(LogisticRegression().fit(p.reshape(-1, 1), y))
    B = data.draw(st.integers(1, max(1, int(w.sum()) // 2)))
    a = ScalingBinningCalibrator(scaler, n_bins=B, delta=0.0).fit(p, y, w)
    b = ScalingBinningCalibrator(scaler, n_bins=B, delta=0.0).fit(
        np.repeat(p, w), np.repeat(y, w)
    )
    x = np.linspace(0, 1, 11)
    assert_allclose(a.predict_proba(x), b.predict_proba(x), rtol=1e-12, atol=1e-14)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(10, 80),
    x=st.lists(st.floats(0, 1), min_size=1, max_size=20),
    seed=st.integers(0, 100),
)
def test_scaling_binning_predict_proba_rows_sum_to_one(n, x, seed):
    p, y = _data(n, seed=seed)
    model = ScalingBinningCalibrator(n_bins=2, random_state=seed).fit(p, y)
    proba = model.predict_proba(np.array(x))
    assert np.all((proba >= 0) & (proba <= 1))
    assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert_array_equal(model.predict(np.array(x)), (proba[:, 1] > 0.5).astype(int))


def test_scaling_binning_real_verbalized_confidences(influences_verb):
    h = influences_verb.verbal_confidence.to_numpy()
    y = influences_verb.correct_judge.to_numpy()
    model = ScalingBinningCalibrator(n_bins=10, random_state=0).fit(h, y)
    p = model.predict_proba(h)[:, 1]
    assert np.all((p >= 0) & (p <= 1))
    assert abs(p.mean() - y.mean()) < 0.01 < abs(h.mean() - y.mean())
    again = ScalingBinningCalibrator(n_bins=10, random_state=0).fit(h, y)
    assert again.predict_proba(h)[:, 1].tobytes() == p.tobytes()


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_bins": 3, "points_per_bin": 3}, "mutually exclusive"),
        ({"scaler_fraction": 1.0}, "scaler_fraction"),
        ({"scaler": "platt"}, "scaler"),
    ],
)
def test_scaling_binning_rejects_bad_params(params, match):
    p, y = _data(50)
    with pytest.raises(ValueError, match=match):
        ScalingBinningCalibrator(**params).fit(p, y)


def test_scaling_binning_rejects_bad_input():
    with pytest.raises(ValueError, match="at least 2"):
        ScalingBinningCalibrator().fit([0.5], [1])
    with pytest.raises(ValueError, match="y to be passed"):
        ScalingBinningCalibrator().fit([0.5, 0.2], None)
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        ScalingBinningCalibrator().fit([0.5, 2.0], [0, 1])
