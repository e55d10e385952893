# SPDX-License-Identifier: MIT
"""Bad input never gives a silent wrong answer or an unhelpful traceback.

Two parts. First, one regression test per root cause found by a systematic
bad-input run (the item numbers of the hardening issue): each failed before
its fix. Second, property-based tests (hypothesis) that feed every public
estimator and metric the same families -- non-finite and extreme values,
scalar and extreme weights, byte orders and dtypes, degenerate cells -- and
assert the contract: either a ``ValueError``/``TypeError`` raised by this
library (not from inside NumPy/SciPy/pandas) whose message names the
argument, or finite output in range.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_betacal import (
    BetaBinningCalibrator,
    PlattScaler,
    ScalingBinningCalibrator,
    TemperatureScaler,
    UMDBinner,
)
from sklearn_betacal.metrics import (
    area_under_accuracy_confidence,
    beta_calibration_error,
    brier_decomposition,
    expected_calibration_error,
    maximum_calibration_error,
    reliability_table,
)


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    h = rng.uniform(size=n)
    y = (rng.uniform(size=n) < h).astype(int)
    return h, y


# ------------------------------------------------------------ item 4: bytes


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_metrics_read_big_endian_floats_by_value(strategy):
    # the fast range check viewed '>f8' bits as native: [.5, 2, .25, 4] passed
    # as probabilities (ECE 1.8125) and uniform binning crashed in bincount
    bad = np.array([0.5, 2.0, 0.25, 4.0], ">f8")
    for metric in (expected_calibration_error, maximum_calibration_error):
        with pytest.raises(ValueError, match=r"y_prob has 2 confidence\(s\) outside"):
            metric([1, 0, 1, 0], bad, strategy=strategy)
    with pytest.raises(ValueError, match="outside"):
        beta_calibration_error([1, 0, 1, 0], bad, groups=[0, 0, 1, 1])
    with pytest.raises(ValueError, match="outside"):
        area_under_accuracy_confidence([1, 0, 1, 0], bad)
    with pytest.raises(ValueError, match="outside"):
        reliability_table([1, 0, 1, 0], bad)
    good = np.array([0.5, 0.2, 0.25, 0.4])
    y = np.array([1, 0, 1, 0])
    for dt in (">f8", ">f4", "<f4"):
        for ydt in (">i8", ">f8", "u1"):
            assert expected_calibration_error(
                y.astype(ydt), good.astype(dt), strategy=strategy
            ) == pytest.approx(
                expected_calibration_error(
                    y, good.astype(dt).astype(float), strategy=strategy
                ),
                rel=1e-12,
            )
    w = np.array([1.0, 2.0, 3.0, 4.0])
    assert expected_calibration_error(
        y, good, sample_weight=w.astype(">f8")
    ) == expected_calibration_error(y, good, sample_weight=w)


# --------------------------------------------------- items 5, 6, 13: weights


ESTIMATORS_1D = [
    TemperatureScaler(),
    PlattScaler(),
    UMDBinner(),
    ScalingBinningCalibrator(random_state=0),
]


@pytest.mark.parametrize("estimator", ESTIMATORS_1D, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -1.0])
def test_scalar_non_finite_weight_is_rejected(estimator, bad):
    # a scalar NaN/inf skipped the weight check: temperature returned tau = 1
    # or hard 0/1, UMD all NaN, Platt crashed inside scipy
    h, y = _data()
    with pytest.raises(ValueError, match="sample_weight"):
        estimator.fit(h, y, sample_weight=bad)


def test_bb_non_finite_and_overflowing_weights_are_rejected():
    h, y = _data()
    X = np.column_stack([h, np.random.default_rng(1).normal(size=(h.size, 2))])
    bb = BetaBinningCalibrator(points_per_bin=20, random_state=0)
    with pytest.raises(ValueError, match="sample_weight has 400 NaN or infinite"):
        bb.fit(X, y, sample_weight=np.full(h.size, np.inf))
    with pytest.raises(ValueError, match="sample_weight has 400 NaN or infinite"):
        bb.fit(X, y, sample_weight=1.0 + np.full(h.size, np.nan))


@pytest.mark.parametrize("scale", [1e200, 1e308])
def test_bb_huge_finite_weights_act_as_large_counts(scale):
    # 1e200 per row asked for 2e201 bins ("Maximum allowed size exceeded"),
    # 1e308 "cannot convert float NaN to integer". Beyond 2**53 in total the
    # weights are rescaled by a power of two, so any huge constant weight is
    # the same fit as 1e12 per row.
    h, y = _data()
    X = np.column_stack([h, np.random.default_rng(1).normal(size=(h.size, 2))])
    fits = []
    for c in (1e12, scale):
        bb = BetaBinningCalibrator(points_per_bin=20, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            fits.append(bb.fit(X, y, sample_weight=np.full(h.size, c)).predict_proba(X))
    assert np.all(np.isfinite(fits[1])) and np.all((fits[1] >= 0) & (fits[1] <= 1))
    assert_allclose(fits[1], fits[0], atol=1e-6)


@pytest.mark.parametrize("scale", [2.0**53, 3e16, 1e100, 1e300])
def test_umd_weights_beyond_2_53_act_as_large_counts(scale):
    # total weight beyond 2**53 moved predictions by up to 0.45 (int64
    # overflow in the edge positions), 3e16 per row raised OverflowError. A
    # constant weight c makes every row c copies; the excluded edge copy is
    # 1/c of a row, so the fit must agree with c = 1e6 to ~1e-6.
    h, y = _data()
    ref = UMDBinner(n_bins=15, random_state=0).fit(
        h, y, sample_weight=np.full(h.size, 1e6)
    )
    big = UMDBinner(n_bins=15, random_state=0).fit(
        h, y, sample_weight=np.full(h.size, scale)
    )
    assert_allclose(big.predict_proba(h), ref.predict_proba(h), atol=1e-5)


def test_umd_overflowing_total_weight_is_rescaled():
    # 1e308 per row: the total overflowed and every prediction was NaN
    h, y = _data()
    ref = UMDBinner(random_state=0).fit(h, y, sample_weight=np.full(h.size, 1e12))
    big = UMDBinner(random_state=0).fit(h, y, sample_weight=np.full(h.size, 1e308))
    assert_allclose(big.predict_proba(h), ref.predict_proba(h), atol=1e-6)


@pytest.mark.parametrize(
    "metric",
    [
        expected_calibration_error,
        maximum_calibration_error,
        area_under_accuracy_confidence,
        lambda y, p, **kw: beta_calibration_error(
            y, p, groups=np.arange(len(y)) % 3, **kw
        ),
        lambda y, p, **kw: brier_decomposition(y, p, **kw).calibration,
    ],
)
def test_metrics_are_scale_free_up_to_the_float_maximum(metric):
    # at 1e308 per row the total overflowed and the metrics returned NaN
    h, y = _data()
    ref = metric(y, h)
    for c in (2.0**60, 1e200, 1e308):
        assert metric(y, h, sample_weight=np.full(h.size, c)) == pytest.approx(
            ref, rel=1e-12
        )


def test_platt_and_temperature_weights_up_to_the_float_maximum():
    # 1e308 per row: scipy's "array must not contain infs or NaNs" (Platt)
    h, y = _data()
    big = np.full(h.size, 1e308)
    # on logits both likelihoods are scale-free in the weights: same fit
    for est in (PlattScaler(input="logit"), TemperatureScaler(input="logit")):
        x = h - 0.5
        ref = type(est)(**est.get_params()).fit(x, y).predict_proba(x)
        got = est.fit(x, y, sample_weight=big).predict_proba(x)
        assert_allclose(got, ref, atol=1e-9)
    # on probabilities the logit clip depends on the total weight (as a
    # count): only finiteness is the contract here
    for est in (PlattScaler(), TemperatureScaler()):
        p = est.fit(h, y, sample_weight=big).predict_proba(h)
        assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))


# ------------------------------------------- items 14, 15, 17: bins and sizes


@pytest.mark.parametrize(
    "metric",
    [
        expected_calibration_error,
        maximum_calibration_error,
        reliability_table,
        brier_decomposition,
    ],
)
def test_metrics_reject_bool_and_unallocatable_n_bins(metric):
    h, y = _data()
    with pytest.raises(TypeError, match="n_bins must be an int"):
        metric(y, h, n_bins=True)
    # 1e10 bins allocated 74.5 GiB
    with pytest.raises(ValueError, match="n_bins=10000000000 is out of range"):
        metric(y, h, n_bins=10**10)


def test_auac_rejects_unallocatable_grid():
    h, y = _data()
    with pytest.raises(ValueError, match="grid=10000000000 is out of range"):
        area_under_accuracy_confidence(y, h, grid=10**10)


@pytest.mark.parametrize(
    ("norm", "debiased"),
    [("l1", False), ("l2", False), ("max", False), ("l2_squared", True)],
)
def test_beta_ce_sparse_grid_equals_dense(norm, debiased):
    # 1e5 groups x 1e4 bins built a dense 7.45 GiB grid. Above 4 n + 4096
    # (cell, bin) pairs only the occupied ones are summed; appending rows of
    # zero weight (= dropping them) moves the same data to the dense path.
    rng = np.random.default_rng(3)
    n = 3000
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    groups = rng.integers(0, 300, n)
    w = rng.uniform(0, 2, n)
    pad = 20_000
    kw = {"n_bins": 100, "norm": norm}
    if debiased:
        kw["debiased"] = True
    sparse = beta_calibration_error(y, p, groups=groups, sample_weight=w, **kw)
    dense = beta_calibration_error(
        np.r_[y, np.zeros(pad, int)],
        np.r_[p, np.full(pad, 0.5)],
        groups=np.r_[groups, np.zeros(pad, int)],
        sample_weight=np.r_[w, np.zeros(pad)],
        **kw,
    )
    assert sparse == pytest.approx(dense, rel=1e-10, abs=1e-15)
    big = beta_calibration_error(
        y, p, groups=np.arange(n), **{**kw, "n_bins": 10**6}
    )  # 3e9 dense pairs: must not allocate them
    assert np.isfinite(big)


def test_beta_ce_noise_floor_sparse_grid_equals_dense():
    from sklearn_betacal.metrics import beta_calibration_noise_floor

    rng = np.random.default_rng(4)
    n = 2000
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    groups = rng.integers(0, 200, n)
    sparse = beta_calibration_noise_floor(y, p, groups=groups, n_bins=100)
    pad = 20_000
    dense = beta_calibration_noise_floor(
        np.r_[y, np.zeros(pad, int)],
        np.r_[p, np.full(pad, 0.5)],
        groups=np.r_[groups, np.zeros(pad, int)],
        sample_weight=np.r_[np.ones(n), np.zeros(pad)],
        n_bins=100,
    )
    assert sparse == pytest.approx(dense, rel=1e-10)


def test_points_per_bin_bins_follow_rows_not_weight():
    # 400 rows of weight 1e6 with points_per_bin=20 gave 2e7 bins (12 s,
    # 2.8 GB); 1e7 per row MemoryError
    h, y = _data()
    for c in (1e6, 1e7, 1e12):
        with pytest.warns(UserWarning, match="bins beyond one per row"):
            m = UMDBinner(points_per_bin=20, random_state=0).fit(
                h, y, sample_weight=np.full(h.size, c)
            )
        assert m.n_bins_ <= 2**20
        assert np.all(np.isfinite(m.predict_proba(h)))


# ----------------------------------------------- items 3, 11: extreme scores


def test_multiclass_temperature_on_float_max_logits_is_finite():
    Z = np.array(
        [
            [1.7e308, -1.7e308, 0],
            [0, 1, 2],
            [1, 0, 0],
            [-1.7e308, 1.7e308, 0],
            [0, 0, 1],
            [3, 1, 0],
        ]
    )
    y = [0, 2, 0, 1, 2, 0]
    ts = TemperatureScaler(input="logit").fit(Z, y)
    p = ts.predict_proba(Z)
    assert np.all(np.isfinite(p))
    assert_allclose(p.sum(axis=1), 1.0)
    assert p[0, 0] == 1.0 and p[3, 1] == 1.0


@pytest.mark.parametrize("scale", [1e155, 1e300, 1e308])
def test_platt_logit_input_at_huge_scores_is_the_same_model(scale):
    # scipy's "array must not contain infs or NaNs" at logits ~1e300
    h, y = _data()
    s = h - 0.5
    ref = PlattScaler(input="logit").fit(s, y)
    big = PlattScaler(input="logit").fit(s * scale, y)
    assert_allclose(big.coef_[0, 0] * scale, ref.coef_[0, 0], rtol=1e-6)
    assert_allclose(big.intercept_, ref.intercept_, rtol=1e-6, atol=1e-9)
    assert_allclose(big.predict_proba(s * scale), ref.predict_proba(s), atol=1e-9)


# ------------------------------------------------- item 7: TextEmbedder size


def test_text_embedder_rejects_more_components_than_texts():
    # n_components=2 on one text returned shape (1, 1) while
    # get_feature_names_out listed two names
    from sklearn_betacal import TextEmbedder

    with pytest.raises(ValueError, match="n_components=2 needs at least 2"):
        TextEmbedder(n_components=2).fit_transform(["hello world"])
    emb = TextEmbedder(n_components=2, random_state=0)
    out = emb.fit_transform(["hello world", "good morning sun", "hello sun"])
    assert out.shape == (3, 2) == (3, len(emb.get_feature_names_out()))
