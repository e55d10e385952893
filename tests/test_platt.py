# SPDX-License-Identifier: MIT
"""Tests for :class:`PlattScaler`."""

import pickle
import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LogisticRegression

from sklearn_betacal import PlattScaler
from sklearn_betacal._kernels._scaling import separable as _separable
from sklearn_betacal._kernels._scaling import to_logit

# --------------------------------------------------------------------------
# scikit-learn API
# --------------------------------------------------------------------------


def test_platt_api_shapes_attributes():
    rng = np.random.default_rng(0)
    h = rng.uniform(size=300)
    y = (rng.uniform(size=300) < h).astype(int)
    ps = PlattScaler().fit(h.reshape(-1, 1), y)
    assert ps.coef_.shape == (1, 1) and ps.intercept_.shape == (1,)
    assert_array_equal(ps.classes_, [0, 1])
    proba = ps.predict_proba(h)
    assert proba.shape == (300, 2)
    assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    assert_array_equal(ps.predict(h), (proba[:, 1] > 0.5).astype(int))
    again = pickle.loads(pickle.dumps(ps))
    assert_array_equal(again.predict_proba(h), proba)


def test_platt_unfitted_and_bad_input_raise():
    with pytest.raises(NotFittedError):
        PlattScaler().predict([0.3])
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        PlattScaler().fit([0.2, 1.3], [0, 1])
    with pytest.raises(ValueError, match="binary"):
        PlattScaler().fit([0.2, 0.3, 0.4], [0, 1, 2])
    with pytest.raises(ValueError, match="one confidence per row"):
        PlattScaler().fit(np.zeros((3, 2)), [0, 1, 0])
    with pytest.raises(ValueError, match="requires y"):
        PlattScaler().fit([0.2, 0.3], None)


# --------------------------------------------------------------------------
# agreement with independent maximum-likelihood code
# --------------------------------------------------------------------------
def test_platt_matches_statsmodels_on_influences_verb(influences_verb):
    h = influences_verb.verbal_confidence.to_numpy(dtype=np.float64)
    y = influences_verb.correct_judge.to_numpy(dtype=np.float64)
    ps = PlattScaler().fit(h, y)
    # the data-aware clip, by hand: the larger of the label floor 1/(n+2)
    # and half the gap to the closest interior confidence, per side (here
    # the study's 1e-6 and 1 - 5e-12 answers make the floor win)
    inside = h[(h > 0) & (h < 1)]
    floor = 1 / (h.size + 2)
    eps = (max(floor, inside.min() / 2), max(floor, (1 - inside.max()) / 2))
    assert_allclose(ps.logit_eps_, eps, rtol=1e-15)
    s = to_logit(h, eps)
    ref = sm.Logit(y, sm.add_constant(s)).fit(disp=0, method="newton", tol=1e-12)
    assert_allclose(
        [ps.intercept_[0], ps.coef_[0, 0]], ref.params, rtol=1e-6, atol=1e-9
    )
    assert_allclose(
        ps.predict_proba(h)[:, 1], ref.predict(sm.add_constant(s)), atol=1e-9
    )
    # LLM verbal confidences are overconfident: Platt shrinks the logit
    assert 0 < ps.coef_[0, 0] < 1


def test_platt_logit_clip_is_data_aware_by_hand():
    # 4 rows: label floor 1/6; interior 0.2 (low side 0.1) and 0.9 (high 0.05)
    ps = PlattScaler(target_smoothing=True).fit([0.0, 0.2, 0.9, 1.0], [0, 1, 0, 1])
    assert_allclose(ps.logit_eps_, [1 / 6, 1 / 6], rtol=1e-15)
    # 40 rows of the same values: floor 1/42, so the confidences' gaps win
    h = np.tile([0.0, 0.2, 0.9, 1.0], 10)
    ps = PlattScaler(target_smoothing=True).fit(h, np.tile([0, 1, 0, 1], 10))
    assert_allclose(ps.logit_eps_, [0.1, 0.05], rtol=1e-15)
    # zero weight drops a row from both resolutions
    w = np.ones(40)
    w[h == 0.2] = 0
    ps = PlattScaler(target_smoothing=True).fit(
        h, np.tile([0, 1, 0, 1], 10), sample_weight=w
    )
    assert_allclose(ps.logit_eps_, [0.45, 0.05], rtol=1e-15)
    # the clip is applied on predict too: 1.0 and 1 - 1e-9 both -> 0.95
    p = ps.predict_proba([1.0, 1 - 1e-9, 0.95])[:, 1]
    assert p[0] == p[1] == p[2]


def test_platt_exact_ones_do_not_flatten_the_slope():
    """Issue 10: 17% of answers at exactly 1.0 flattened Platt's slope with a
    1e-12 clip (1.0 -> logit 27.6). Truth: accuracy sigma(0.6 logit(h)) on a
    verbal grid, 0.8 at h = 1. The data-aware fit is closer to the truth at
    every grid point than the 1e-12 one (statsmodels on the old covariate)."""
    rng = np.random.default_rng(0)
    grid = np.array([0.5, 0.6, 0.7, 0.8, 0.9, 0.95])
    h = rng.choice(grid, size=3000)
    one = rng.uniform(size=3000) < 0.17
    h[one] = 1.0
    acc = 1 / (1 + np.exp(-0.6 * to_logit(h, 1e-3)))
    acc[one] = 0.8
    y = (rng.uniform(size=3000) < acc).astype(float)
    new = PlattScaler().fit(h, y).predict_proba(grid)[:, 1]
    old = sm.Logit(y, sm.add_constant(to_logit(h, 1e-12))).fit(disp=0)
    old = old.predict(sm.add_constant(to_logit(grid, 1e-12)))
    truth = 1 / (1 + np.exp(-0.6 * to_logit(grid)))
    assert np.all(np.abs(new - truth) < np.abs(old - truth))
    assert np.abs(new - truth).max() < 0.05 < np.abs(old - truth).max()


def test_platt_raw_probability_scale_matches_statsmodels(influences_verb):
    # input="logit" on the raw confidence: sigma(a h + b), as in Eq. 5
    sub = influences_verb.iloc[::7]
    h = sub.verbal_confidence.to_numpy(dtype=np.float64)
    y = sub.correct_judge.to_numpy(dtype=np.float64)
    ps = PlattScaler(input="logit").fit(h, y)
    ref = sm.Logit(y, sm.add_constant(h)).fit(disp=0, method="newton", tol=1e-12)
    assert_allclose([ps.intercept_[0], ps.coef_[0, 0]], ref.params, rtol=1e-6)


def test_platt_matches_sklearn_logistic_regression_weighted():
    rng = np.random.default_rng(1)
    s = rng.normal(scale=2.0, size=500)
    y = (rng.uniform(size=500) < 1 / (1 + np.exp(-(0.7 * s - 0.4)))).astype(int)
    w = rng.uniform(0.1, 3.0, size=500)
    ps = PlattScaler(input="logit").fit(s, y, sample_weight=w)
    lr = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000)
    lr.fit(s.reshape(-1, 1), y, sample_weight=w)
    assert_allclose(ps.coef_, lr.coef_, rtol=1e-5)
    assert_allclose(ps.intercept_, lr.intercept_, rtol=1e-5, atol=1e-7)


def test_platt_target_smoothing_matches_statsmodels_glm_on_soft_targets():
    rng = np.random.default_rng(2)
    s = rng.normal(scale=2.0, size=300)
    y = (rng.uniform(size=300) < 1 / (1 + np.exp(-s))).astype(int)
    n_pos, n_neg = y.sum(), (1 - y).sum()
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    ps = PlattScaler(input="logit", target_smoothing=True).fit(s, y)
    glm = sm.GLM(t, sm.add_constant(s), family=sm.families.Binomial())
    ref = glm.fit(tol=1e-14)
    assert_allclose([ps.intercept_[0], ps.coef_[0, 0]], ref.params, rtol=1e-7)


def test_platt_separable_warns_and_smoothing_keeps_it_finite():
    s = np.array([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0])
    y = np.array([0, 0, 0, 1, 1, 1])
    with pytest.warns(ConvergenceWarning, match="separable"):
        PlattScaler(input="logit").fit(s, y)
    with pytest.warns(ConvergenceWarning, match="separable"):
        PlattScaler(input="logit").fit(s, np.ones(6))  # one class only
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ps = PlattScaler(input="logit", target_smoothing=True).fit(s, y)
    assert np.isfinite(ps.coef_[0, 0]) and 0.5 < ps.coef_[0, 0] < 10
    assert_array_equal(ps.predict(s), y)


# --------------------------------------------------------------------------
# weights and determinism
# --------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(10, 60), smooth=st.booleans())
def test_platt_weights_zero_drops_integer_repeats(seed, n, smooth):
    rng = np.random.default_rng(seed)
    h = rng.uniform(0.05, 0.95, size=n)
    y = (rng.uniform(size=n) < h).astype(int)
    y[:2] = [0, 1]  # both classes present (non-separable in most draws)
    w = rng.integers(0, 4, size=n)
    w[:2] = [1, 2]
    base = PlattScaler(target_smoothing=smooth)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = clone(base).fit(h, y, sample_weight=w.astype(float))
        b = clone(base).fit(np.repeat(h, w), np.repeat(y, w))
        keep = w > 0
        c = clone(base).fit(h[keep], y[keep], sample_weight=w[keep].astype(float))
    if not smooth and _separable(to_logit(h), y.astype(float), w.astype(float)):
        return  # no finite MLE to compare
    assert_allclose(a.coef_, b.coef_, rtol=1e-9, atol=1e-12)
    assert_allclose(a.intercept_, b.intercept_, rtol=1e-9, atol=1e-12)
    assert_allclose(a.coef_, c.coef_, rtol=1e-10, atol=1e-12)
    assert_allclose(a.intercept_, c.intercept_, rtol=1e-10, atol=1e-12)


def test_platt_deterministic_bitwise(influences_verb):
    h = influences_verb.verbal_confidence.to_numpy(dtype=np.float64)[:20_000]
    y = influences_verb.correct_judge.to_numpy(dtype=np.float64)[:20_000]
    a, b = PlattScaler().fit(h, y), PlattScaler().fit(h, y)
    assert a.coef_.tobytes() == b.coef_.tobytes()
    assert a.intercept_.tobytes() == b.intercept_.tobytes()
    assert a.predict_proba(h).tobytes() == b.predict_proba(h).tobytes()
