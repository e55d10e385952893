# SPDX-License-Identifier: MIT
"""Tests for sklearn_betacal.metrics (functions; scorers are in test_scorers)."""

import numpy as np
import pandas as pd
import pytest
from _golden import load_golden
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_betacal._kernels import _calibration as kernels
from sklearn_betacal.metrics import (
    area_under_accuracy_confidence,
    beta_calibration_error,
    beta_calibration_noise_floor,
    brier_decomposition,
    expected_calibration_error,
    maximum_calibration_error,
    reliability_table,
)

GOLDEN = load_golden("metrics_golden.json")


def _rows_to_data(rows):
    """Synthetic data reproducing each printed bin: equal confidences per bin,
    round(acc * count) correct answers."""
    p, y = [], []
    for _, count, conf, acc in rows:
        k = round(float(acc) * count)
        p += [float(conf)] * count
        y += [1] * k + [0] * (count - k)
    return np.array(y), np.array(p)


def _random_data(seed, n=500):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**1.5).astype(int)
    return y, p


# ---------------------------------------------------------------- chapter 000


@pytest.mark.parametrize("which", ["before", "after"])
def test_expected_calibration_error_chapter000_tables(which):
    g = GOLDEN["chapter000"]
    y, p = _rows_to_data(g[f"{which}_rows"])
    ece = expected_calibration_error(y, p, n_bins=10)
    # exact value for the synthetic rows (hand formula in fractions) ...
    assert_allclose(ece, g[f"ece_{which}_synthetic_exact"], rtol=1e-12)
    # ... and the chapter's printed number to its 4 decimals
    assert round(ece, 4) == g[f"ece_{which}_printed"]


def test_reliability_table_chapter000_before_rows():
    g = GOLDEN["chapter000"]
    y, p = _rows_to_data(g["before_rows"])
    table = reliability_table(y, p, n_bins=10, alpha=0.1)
    assert len(table) == 10
    assert_array_equal(table["count"], [54, 1, 0, 0, 1, 0, 0, 0, 0, 7])
    # the printed "empty bins [2, 3, 5, 6, 7, 8] omitted" are kept and marked
    assert_array_equal(np.flatnonzero(table["empty"]), [2, 3, 5, 6, 7, 8])
    assert table.loc[2, ["mean_confidence", "accuracy", "gap"]].isna().all()
    # [0.0, 0.1) row: standard error sqrt(acc (1 - acc) / 54) ~ 0.018
    se = table.loc[0, "std_error"]
    assert_allclose(se, g["std_error_row0_exact"], rtol=1e-12)
    assert round(se, 3) == g["std_error_row0_printed"]
    # 7 of 7: one-sided 95 % lower bound 0.05 ** (1/7) ~ 0.652, which is the
    # lower end of the two-sided 90 % Clopper-Pearson interval
    lower = table.loc[9, "ci_lower"]
    assert_allclose(lower, g["seven_of_seven_lower_exact"], rtol=1e-10)
    assert round(lower, 3) == g["seven_of_seven_lower_printed"]
    assert table.loc[9, "ci_upper"] == 1.0
    assert_allclose(table.loc[0, "gap"], 1 / 54 - 0.004, rtol=1e-12)
    assert_allclose(table["bin_lower"], np.arange(10) / 10)
    assert_allclose(table["bin_upper"], np.arange(1, 11) / 10)


@pytest.mark.parametrize("case", GOLDEN["clopper_pearson"], ids=str)
def test_reliability_table_clopper_pearson_matches_binomial_tails(case):
    x, n, alpha = case["x"], case["n"], case["alpha"]
    y = np.array([1] * x + [0] * (n - x))
    p = np.full(n, 0.55)
    row = reliability_table(y, p, n_bins=1, alpha=alpha).iloc[0]
    assert_allclose([row.ci_lower, row.ci_upper], case["interval"], rtol=1e-9, atol=0)


def test_reliability_table_weighted_interval_uses_total_weight():
    # frequency weights: weight 3 on a row equals three copies of it
    y = np.array([1, 0, 1])
    p = np.array([0.3, 0.35, 0.32])
    w = np.array([3, 2, 0])
    weighted = reliability_table(y, p, sample_weight=w, n_bins=5)
    repeated = reliability_table(np.repeat(y, w), np.repeat(p, w), n_bins=5)
    cols = ["weight", "mean_confidence", "accuracy", "std_error", "ci_lower"]
    assert_allclose(weighted[cols].to_numpy(), repeated[cols].to_numpy(), rtol=1e-12)
    assert weighted.loc[1, "count"] == 2  # the zero-weight row is dropped


# ------------------------------------------------------------------- binning


def test_expected_calibration_error_confidence_one_in_last_bin():
    # torchmetrics #3510: p = 1.0 must fall in the last bin, not be dropped
    table = reliability_table([1, 1, 0], [1.0, 1.0, 0.95], n_bins=10)
    assert table.loc[9, "count"] == 3
    assert table["count"].sum() == 3
    assert_allclose(expected_calibration_error([1], [1.0]), 0.0, atol=0)
    assert_allclose(expected_calibration_error([0], [1.0]), 1.0, rtol=0)
    assert_allclose(expected_calibration_error([0, 1], [1.0, 0.95]), 0.475)


def test_uniform_bin_index_left_closed_edges():
    p = np.array([0.0, 0.1, 0.25, 0.5, 0.75, 0.999, 1.0])
    assert_array_equal(kernels.uniform_bin_index(p, 4), [0, 0, 1, 2, 3, 3, 3])
    assert_array_equal(kernels.uniform_bin_index(p, 1), np.zeros(7))


def test_uniform_gap_sums_match_naive_table_across_blocks(monkeypatch):
    # force several blocks, and an index that reaches M for p == 1
    monkeypatch.setattr(kernels, "_BLOCK", 7)
    rng = np.random.default_rng(3)
    p = np.concatenate([rng.uniform(size=40), [1.0, 1.0, 0.0]])
    y = (rng.uniform(size=43) < 0.5).astype(float)
    w = rng.uniform(size=43)
    gap, weight = kernels.uniform_gap_sums(p, y, w, 6, with_weight=True)
    idx = np.minimum(np.floor(p * 6).astype(int), 5)
    assert_allclose(gap, [np.sum((w * (y - p))[idx == b]) for b in range(6)])
    assert_allclose(weight, [np.sum(w[idx == b]) for b in range(6)])


def test_expected_calibration_error_norms_by_hand():
    # bin 0: p .1,.1 y 0,1 -> conf .1 acc .5 gap .4 ; bin 1: p .9 y 1 -> gap .1
    y, p = [0, 1, 1], [0.1, 0.1, 0.9]
    assert_allclose(expected_calibration_error(y, p, n_bins=2), (2 * 0.4 + 0.1) / 3)
    l2 = np.sqrt((2 * 0.4**2 + 0.1**2) / 3)
    assert_allclose(expected_calibration_error(y, p, n_bins=2, norm="l2"), l2)
    assert_allclose(expected_calibration_error(y, p, n_bins=2, norm="max"), 0.4)
    assert_allclose(maximum_calibration_error(y, p, n_bins=2), 0.4)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_maximum_calibration_error_equals_max_norm(strategy):
    y, p = _random_data(0)
    mce = maximum_calibration_error(y, p, n_bins=7, strategy=strategy)
    ece_max = expected_calibration_error(y, p, n_bins=7, strategy=strategy, norm="max")
    assert mce == ece_max
    table = reliability_table(y, p, n_bins=7, strategy=strategy)
    assert_allclose(mce, np.nanmax(np.abs(table["gap"])), rtol=1e-12)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_expected_calibration_error_matches_reliability_table(strategy, norm):
    y, p = _random_data(1)
    w = np.random.default_rng(1).uniform(size=p.size)
    ece = expected_calibration_error(
        y, p, sample_weight=w, n_bins=8, strategy=strategy, norm=norm
    )
    t = reliability_table(y, p, sample_weight=w, n_bins=8, strategy=strategy)
    t = t[~t["empty"]]
    share = t["weight"] / t["weight"].sum()
    gaps = np.abs(t["gap"]) if norm == "l1" else t["gap"] ** 2
    expected = np.sum(share * gaps) if norm == "l1" else np.sqrt(np.sum(share * gaps))
    assert_allclose(ece, expected, rtol=1e-12)


def test_quantile_edges_match_numpy_inverted_cdf():
    rng = np.random.default_rng(5)
    p = rng.uniform(size=103)
    edges = kernels.quantile_edges(p, None, 5)
    assert_allclose(edges, np.quantile(p, np.arange(1, 5) / 5, method="inverted_cdf"))
    w = rng.integers(0, 4, size=103).astype(float)
    edges_w = kernels.quantile_edges(p, w, 5)
    assert_allclose(
        edges_w,
        np.quantile(
            np.repeat(p, w.astype(int)), [0.2, 0.4, 0.6, 0.8], method="inverted_cdf"
        ),
    )


def test_quantile_edges_match_numpy_for_every_small_size():
    # levels k/M of the total land exactly on cumulative counts when M | k n
    rng = np.random.default_rng(11)
    for n in range(1, 61):
        p = rng.uniform(size=n)
        for m in range(2, 13):
            levels = np.arange(1, m) / m
            expected = np.quantile(p, levels, method="inverted_cdf")
            assert_array_equal(kernels.quantile_edges(p, None, m), expected)


def test_reliability_table_quantile_bins_hold_equal_mass():
    rng = np.random.default_rng(2)
    p = rng.uniform(size=1000)
    y = rng.integers(0, 2, size=1000)
    table = reliability_table(y, p, n_bins=10, strategy="quantile")
    assert_array_equal(table["count"], np.full(10, 100))
    assert table["bin_lower"].iloc[0] == 0.0 and table["bin_upper"].iloc[-1] == 1.0
    assert np.all(np.diff(table["bin_upper"]) > 0)


def test_reliability_table_quantile_ties_give_marked_empty_bins():
    p = np.repeat([0.2, 0.8], 50)
    y = np.tile([0, 1], 50)
    table = reliability_table(y, p, n_bins=4, strategy="quantile")
    assert table["count"].sum() == 100
    assert table["empty"].sum() == 2
    ece = expected_calibration_error(y, p, n_bins=4, strategy="quantile")
    assert_allclose(ece, 0.5 * 0.3 + 0.5 * 0.3)


# ---------------------------------------------------------------- Brier split


def test_brier_decomposition_exact_when_bin_forecasts_coincide():
    g = GOLDEN["chapter000"]
    y, p = _rows_to_data(g["before_rows"])
    res = brier_decomposition(y, p, n_bins=10)
    assert_allclose(res.brier, np.mean((p - y) ** 2), rtol=1e-12)
    assert_allclose(res.calibration + res.refinement, res.brier, rtol=1e-12)
    # the hand values of the chapter derivation for these rows
    cal = (54 * (0.004 - 1 / 54) ** 2 + 0.1697**2 + (1 - 0.4281) ** 2) / 63
    cal += 7 * (1 - 0.9976) ** 2 / 63
    assert_allclose(res.calibration, cal, rtol=1e-12)
    assert_allclose(res.refinement, 54 / 63 * (1 / 54) * (53 / 54), rtol=1e-12)


def test_brier_decomposition_residual_is_within_bin_spread():
    y, p = _random_data(4, n=300)
    w = np.random.default_rng(4).uniform(size=300)
    res = brier_decomposition(y, p, sample_weight=w, n_bins=5)
    assert_allclose(res.brier, np.average((p - y) ** 2, weights=w), rtol=1e-12)
    idx = np.minimum(np.floor(p * 5).astype(int), 4)
    resid = 0.0
    for b in range(5):
        m = idx == b
        wb, pb, yb = w[m], p[m], y[m]
        cp = pb - np.average(pb, weights=wb)
        cy = yb - np.average(yb, weights=wb)
        resid += np.sum(wb * (cp**2 - 2 * cp * cy))
    resid /= w.sum()
    assert abs(resid) > 1e-4  # forecasts differ within bins: not exact
    assert_allclose(res.brier - res.calibration - res.refinement, resid, atol=1e-12)


# ----------------------------------------------------------------- beta-CE


def test_beta_calibration_error_example_2_1():
    g = GOLDEN["example_2_1"]
    q = np.array(g["p_correct"])
    # each QA pair as a correct row (weight q) and an incorrect row (1 - q)
    y = np.tile([1, 0], 4)
    w = np.column_stack([q, 1 - q]).ravel()
    p = np.full(8, g["confidence"])
    groups = np.repeat(g["groups"], 2)
    ece = expected_calibration_error(y, p, sample_weight=w)
    assert_allclose(ece, g["ece"], atol=1e-12)
    beta = beta_calibration_error(y, p, cells=groups, sample_weight=w)
    assert_allclose(beta, g["beta_ce"], rtol=1e-12)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_beta_calibration_error_one_cell_equals_ece_exactly(strategy, norm):
    y, p = _random_data(6)
    w = np.random.default_rng(6).uniform(size=p.size)
    kw = {"sample_weight": w, "n_bins": 12, "strategy": strategy, "norm": norm}
    beta = beta_calibration_error(y, p, cells=np.full(p.size, -1), **kw)
    assert beta == expected_calibration_error(y, p, **kw)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_beta_calibration_error_weighted_average_of_cell_eces(strategy, norm):
    # App. A.1: per-cell binned CE, weighted by the cells' total weight
    y, p = _random_data(7)
    rng = np.random.default_rng(7)
    groups = rng.choice(["a", "b", "c"], size=p.size)
    w = rng.uniform(size=p.size)
    kw = {"n_bins": 6, "strategy": strategy, "norm": norm}
    expected = sum(
        w[groups == s].sum()
        / w.sum()
        * expected_calibration_error(
            y[groups == s], p[groups == s], sample_weight=w[groups == s], **kw
        )
        for s in "abc"
    )
    got = beta_calibration_error(y, p, cells=groups, sample_weight=w, **kw)
    assert_allclose(got, expected, rtol=1e-12)


def test_beta_calibration_error_ignores_zero_weight_cells():
    y, p = _random_data(8, n=60)
    groups = np.repeat([0, 1, 2], 20)
    w = np.where(groups == 2, 0.0, 1.0)
    got = beta_calibration_error(y, p, cells=groups, sample_weight=w)
    m = groups < 2
    assert_allclose(got, beta_calibration_error(y[m], p[m], cells=groups[m]))


# ---------------------------------------------------------------------- AUAC


def test_area_under_accuracy_confidence_by_hand():
    y = np.array([1, 0, 1, 1])
    p = np.array([0.2, 0.4, 0.6, 0.8])
    grid = np.array([0.0, 0.3, 0.5, 0.7, 0.9, 1.0])
    # heights: all 3/4, {.4,.6,.8} 2/3, {.6,.8} 1, {.8} 1, none 0, none 0
    h = np.array([0.75, 2 / 3, 1.0, 1.0, 0.0, 0.0])
    expected = np.sum(0.5 * (h[1:] + h[:-1]) * np.diff(grid))
    assert_allclose(area_under_accuracy_confidence(y, p, grid=grid), expected)


def test_area_under_accuracy_confidence_zero_above_every_confidence():
    # all confidences below 0.5, all correct: height 1 up to 0.4, then 0
    y = np.ones(10)
    p = np.full(10, 0.4)
    auac = area_under_accuracy_confidence(y, p, grid=11)
    assert_allclose(auac, 0.4 + 0.5 * 0.1, rtol=1e-12)  # 0.4 flat + ramp to 0
    # threshold equal to a confidence keeps the row (>=)
    assert_allclose(area_under_accuracy_confidence([1], [1.0], grid=[0.5, 1.0]), 0.5)
    # a row whose weight is zero is not "retained"
    got = area_under_accuracy_confidence(
        [1, 1], [0.3, 0.9], sample_weight=[1, 0], grid=[0.0, 0.5, 1.0]
    )
    assert_allclose(got, 0.5 * (1 + 0) * 0.5)


def test_area_under_accuracy_confidence_default_grid_step():
    y, p = _random_data(9)
    assert_allclose(
        area_under_accuracy_confidence(y, p),
        area_under_accuracy_confidence(y, p, grid=np.linspace(0, 1, 101)),
        rtol=1e-15,
    )


@pytest.mark.parametrize(
    "grid", [[0.5], [0.5, 0.2], [[0.1, 0.2]], [0.0, np.nan], ["a", "b"]]
)
def test_area_under_accuracy_confidence_rejects_bad_grid(grid):
    with pytest.raises(ValueError, match="grid"):
        area_under_accuracy_confidence([0, 1], [0.2, 0.7], grid=grid)


# ------------------------------------------------------------ input checking

METRICS = [
    expected_calibration_error,
    maximum_calibration_error,
    reliability_table,
    brier_decomposition,
    area_under_accuracy_confidence,
    lambda y, p, **kw: beta_calibration_error(y, p, cells=np.zeros(len(y)), **kw),
]


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize(
    "y, p, match",
    [
        ([0, 2], [0.1, 0.2], "binary"),
        (["a", "b"], [0.1, 0.2], "not evident.*pass pos_label"),
        (["a", "b", "c"], [0.1, 0.2, 0.3], "Only binary"),
        ([0, 1], [0.1, 1.2], "outside \\[0, 1\\]"),
        ([0, 1], [0.1, np.nan], "NaN"),
        ([0, np.nan], [0.1, 0.2], "NaN"),
        ([0, 1, 1], [0.1, 0.2], "same length"),
        ([], [], "empty"),
        ([[0, 1], [1, 0]], [0.1, 0.2], "1-D"),
        ([0, 1], [[0.1, 0.2], [0.3, 0.4]], "one confidence per row"),
    ],
)
def test_metrics_reject_bad_input_with_clear_message(metric, y, p, match):
    with pytest.raises(ValueError, match=match):
        metric(y, p)


@pytest.mark.parametrize("metric", METRICS)
def test_metrics_reject_bad_weights(metric):
    with pytest.raises(ValueError, match="negative"):
        metric([0, 1], [0.1, 0.2], sample_weight=[1, -1])
    with pytest.raises(ValueError, match="non-zero"):
        metric([0, 1], [0.1, 0.2], sample_weight=[0, 0])


def test_metrics_accept_bool_float_and_column_input():
    y, p = _random_data(10)
    ref = expected_calibration_error(y, p)
    assert expected_calibration_error(y.astype(bool), p) == ref
    assert_allclose(expected_calibration_error(y.astype(float), p), ref, rtol=1e-15)
    assert_allclose(
        expected_calibration_error(y.reshape(-1, 1), p.reshape(-1, 1)), ref, rtol=1e-15
    )
    assert_allclose(
        expected_calibration_error(y, p.astype(np.float32)),
        expected_calibration_error(y, p.astype(np.float32).astype(float)),
    )
    assert_allclose(expected_calibration_error(list(y), list(p)), ref, rtol=1e-15)


@pytest.mark.parametrize("p_dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("y_dtype", [bool, np.uint8, np.int32, np.int64, np.float32])
def test_expected_calibration_error_prechecks_agree_with_full_checks(p_dtype, y_dtype):
    # the cheap pre-checks accept exactly what the shared helpers accept
    p = np.array([0.0, -0.0, 0.25, 1.0, 0.5], dtype=p_dtype)
    y = np.array([0, 1, 1, 1, 0], dtype=y_dtype)
    expected = (0 + 1 + 0.75 + 0 + 0.5) / 5  # one row per bin with n_bins=5
    got = expected_calibration_error(y, p, n_bins=5)
    assert_allclose(got, expected, rtol=1e-6)
    strided = np.repeat(p, 2)[::2]
    assert_allclose(expected_calibration_error(y, strided, n_bins=5), got, rtol=0)
    above_one = p.copy()
    above_one[3] = np.nextafter(p_dtype(1), p_dtype(2))
    for bad_p, match in [(above_one, "outside"), (-p - 0.1, "outside")]:
        with pytest.raises(ValueError, match=match):
            expected_calibration_error(y, bad_p)
    nan = p.copy()
    nan[1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        expected_calibration_error(y, nan)
    if y_dtype is not bool:
        for bad in (2, 1.5 if y_dtype is np.float32 else 3):
            bad_y = y.copy()
            bad_y[0] = bad
            with pytest.raises(ValueError, match="binary"):
                expected_calibration_error(bad_y, p)
    if y_dtype is np.float32:  # 0.5 in [0, 1]: a soft label, read as is
        soft = y.copy()
        soft[0] = 0.5
        assert_allclose(
            expected_calibration_error(soft, p, n_bins=5), expected + 0.5 / 5, rtol=1e-6
        )
    if np.dtype(y_dtype).kind == "i":
        with pytest.raises(ValueError, match="binary"):
            expected_calibration_error(np.array([0, -1, 1, 1, 0], dtype=y_dtype), p)


def test_beta_calibration_error_rejects_bad_groups():
    with pytest.raises(ValueError, match="one cell id per row"):
        beta_calibration_error([0, 1], [0.1, 0.2], cells=[0])
    with pytest.raises(ValueError, match="NaN"):
        beta_calibration_error([0, 1], [0.1, 0.2], cells=[0.0, np.nan])


@pytest.mark.parametrize(
    "metric, kwargs",
    [
        (expected_calibration_error, {"n_bins": 0}),
        (expected_calibration_error, {"n_bins": 2.5}),
        (expected_calibration_error, {"strategy": "kmeans"}),
        (expected_calibration_error, {"norm": "l3"}),
        (maximum_calibration_error, {"n_bins": -1}),
        (reliability_table, {"alpha": 1.0}),
        (reliability_table, {"alpha": 0}),
        (brier_decomposition, {"strategy": None}),
        (area_under_accuracy_confidence, {"grid": 1}),
        (beta_calibration_error, {"cells": [0, 0], "norm": "L1"}),
    ],
)
def test_metrics_param_validation(metric, kwargs):
    with pytest.raises(InvalidParameterError):
        metric([0, 1], [0.1, 0.2], **kwargs)


# ----------------------------------------------------------- property tests

_n = st.integers(1, 40)


@st.composite
def _samples(draw, weighted=True):
    n = draw(_n)
    probs = st.floats(0, 1, allow_nan=False)
    p = np.array(draw(st.lists(probs, min_size=n, max_size=n)))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    if weighted:
        ints = st.integers(0, 4)
        w = np.array(draw(st.lists(ints, min_size=n, max_size=n)), dtype=float)
        if w.sum() == 0:
            w[0] = 1.0
    else:
        w = None
    g = np.array(draw(st.lists(st.integers(-1, 2), min_size=n, max_size=n)))
    return y, p, w, g


def _all_metrics(y, p, w, g, strategy="uniform", n_bins=5):
    kw = {"sample_weight": w}
    bins = {"n_bins": n_bins, "strategy": strategy}
    brier = brier_decomposition(y, p, **kw, **bins)
    return np.array(
        [
            expected_calibration_error(y, p, **kw, **bins),
            expected_calibration_error(y, p, **kw, **bins, norm="l2"),
            maximum_calibration_error(y, p, **kw, **bins),
            beta_calibration_error(y, p, cells=g, **kw, **bins),
            area_under_accuracy_confidence(y, p, **kw),
            *brier,
        ]
    )


STRATEGIES = st.sampled_from(["uniform", "quantile"])


@settings(max_examples=60, deadline=None)
@given(data=_samples(), strategy=STRATEGIES, n_bins=st.integers(1, 12))
def test_metrics_property_in_range(data, strategy, n_bins):
    values = _all_metrics(*data, strategy=strategy, n_bins=n_bins)
    assert np.all(values >= 0) and np.all(values <= 1 + 1e-12)
    brier, cal, ref = values[-3:]
    assert cal <= 1 and ref <= 0.25 + 1e-12


@settings(max_examples=60, deadline=None)
@given(data=_samples(), strategy=STRATEGIES, seed=st.integers(0, 2**16))
def test_metrics_property_invariant_to_row_permutation(data, strategy, seed):
    y, p, w, g = data
    perm = np.random.default_rng(seed).permutation(len(y))
    a = _all_metrics(y, p, w, g, strategy)
    b = _all_metrics(y[perm], p[perm], w[perm], g[perm], strategy)
    assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(data=_samples(), strategy=STRATEGIES)
def test_metrics_property_zero_weight_equals_dropping_row(data, strategy):
    y, p, w, g = data
    keep = w > 0
    a = _all_metrics(y, p, w, g, strategy)
    b = _all_metrics(y[keep], p[keep], w[keep], g[keep], strategy)
    assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    ta = reliability_table(y, p, sample_weight=w, strategy=strategy)
    tb = reliability_table(y[keep], p[keep], sample_weight=w[keep], strategy=strategy)
    assert_allclose(ta.to_numpy(float), tb.to_numpy(float), rtol=1e-12, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(data=_samples(), strategy=STRATEGIES)
def test_metrics_property_integer_weight_equals_repeating_row(data, strategy):
    y, p, w, g = data
    reps = w.astype(int)
    a = _all_metrics(y, p, w, g, strategy)
    b = _all_metrics(
        np.repeat(y, reps), np.repeat(p, reps), None, np.repeat(g, reps), strategy
    )
    assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    ta = reliability_table(y, p, sample_weight=w, strategy=strategy)
    tb = reliability_table(np.repeat(y, reps), np.repeat(p, reps), strategy=strategy)
    cols = ["weight", "mean_confidence", "accuracy", "std_error", "ci_lower"]
    assert_allclose(ta[cols].to_numpy(), tb[cols].to_numpy(), rtol=1e-10, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    data=_samples(),
    scale=st.floats(1e-3, 1e3, allow_nan=False),
    norm=st.sampled_from(["l1", "l2", "max"]),
)
def test_expected_calibration_error_property_weight_scale_invariant(data, scale, norm):
    y, p, w, g = data
    a = expected_calibration_error(y, p, sample_weight=w, norm=norm)
    b = expected_calibration_error(y, p, sample_weight=w * scale, norm=norm)
    assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    a = beta_calibration_error(y, p, cells=g, sample_weight=w, norm=norm)
    b = beta_calibration_error(y, p, cells=g, sample_weight=w * scale, norm=norm)
    assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(data=_samples(), exponent=st.integers(-20, 20))
def test_expected_calibration_error_property_quantile_scale_invariant(data, exponent):
    # quantile edges compare cumulative weights with k/M of the total; scaling
    # by a power of two is exact, so the edges (and the ECE) cannot move.
    # (An arbitrary constant can flip a tie between a cumulative weight and a
    # level by one ulp, moving one edge to its neighbouring confidence.)
    y, p, w, _ = data
    a = expected_calibration_error(y, p, sample_weight=w, strategy="quantile")
    b = expected_calibration_error(
        y, p, sample_weight=w * 2.0**exponent, strategy="quantile"
    )
    assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(data=_samples())
def test_beta_calibration_error_property_at_least_ece(data):
    # triangle inequality: per-cell |sums| add up to at least |sum over cells|
    y, p, w, g = data
    beta = beta_calibration_error(y, p, cells=g, sample_weight=w)
    assert beta >= expected_calibration_error(y, p, sample_weight=w) - 1e-12


# ------------------------------------------------------------------ real data


def _cifar_top_label(path):
    data = np.load(path)
    probs = data["predictions"]
    truth = data["ground_truth"].ravel()
    conf = probs.max(axis=1).astype(np.float64)
    correct = (probs.argmax(axis=1) == truth).astype(np.int64)
    return conf, correct


def test_expected_calibration_error_matches_uncertainty_calibration(cifar_dir):
    calibration = pytest.importorskip("calibration")
    files = sorted(cifar_dir.glob("*.npz"))
    assert len(files) >= 5
    for path in files:
        conf, correct = _cifar_top_label(path)
        # the peer's bins are right-closed ((k-1)/M, k/M]; ours are
        # left-closed: the two agree unless a confidence sits on an interior
        # edge. Only p = 1.0 does in these records (last bin in both).
        on_edge = np.isin(conf, np.arange(1, 15) / 15) | np.isin(
            conf, np.arange(1, 10) / 10
        )
        assert not on_edge.any()
        for n_bins in (10, 15):
            ours = expected_calibration_error(correct, conf, n_bins=n_bins)
            # 1-D probs: plug-in ECE with equal-width bins, no debiasing
            theirs = calibration.get_ece(conf, correct, num_bins=n_bins)
            assert_allclose(ours, theirs, rtol=0, atol=1e-12, err_msg=path.name)


def test_expected_calibration_error_matches_cifar_provenance(cifar_dir):
    # the PROVENANCE file's 'ece10' per record (printed to 4 decimals)
    printed = {
        "densenet-bc-100-cifar-100.npz": 0.1422,
        "lenet-5-cifar-10.npz": 0.1079,
        "lenet-5-cifar-100.npz": 0.0147,
        "wideresnet-16-4-cifar-10.npz": 0.0537,
        "wideresnet-16-4-cifar-100.npz": 0.058,
        "vgg-cifar-10.npz": 0.0399,
    }
    for name, value in printed.items():
        conf, correct = _cifar_top_label(cifar_dir / name)
        assert round(expected_calibration_error(correct, conf), 4) == value


def test_beta_calibration_error_on_influences_verb(influences_verb):
    A = influences_verb.dropna(subset=["correct_judge"])
    y = A["correct_judge"].to_numpy(dtype=float)
    p = A["verbal_confidence"].to_numpy(dtype=float)
    ece = expected_calibration_error(y, p)
    groups = (A["dataset"] + "/" + A["model"]).to_numpy()
    beta = beta_calibration_error(y, p, cells=groups)
    assert 0 < ece <= beta <= 1
    # one cell per row: every bin holds one point, so the CE is mean |y - p|
    assert_allclose(
        beta_calibration_error(y, p, cells=np.arange(len(y))),
        np.mean(np.abs(y - p)),
        rtol=1e-10,
    )


# -- debiased beta-CE (Kumar et al. 2019) and the noise floor -------------------


def _planted_bins(rng, n=1200, n_cells=4, n_bins=10):
    """Fixed confidences and cells, a true accuracy constant per (cell, bin)."""
    p = rng.uniform(size=n)
    cells = rng.integers(0, n_cells, size=n)
    shift = rng.uniform(-0.2, 0.2, size=(n_cells, n_bins))
    bins = np.minimum((p * n_bins).astype(int), n_bins - 1)
    mu = np.clip((bins + 0.5) / n_bins + shift[cells, bins], 0.02, 0.98)
    # the population value, computed by hand: sum_sb (n_sb/n)(mu_sb - conf_sb)^2
    key = cells * n_bins + bins
    truth = 0.0
    for k in np.unique(key):
        rows = key == k
        truth += rows.sum() / n * (mu[rows][0] - p[rows].mean()) ** 2
    return p, cells, mu, truth


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_beta_calibration_error_debiased_is_unbiased(strategy):
    """Mean over repeated label draws is within 3 standard errors of the truth,
    while the plug-in estimate is far above it."""
    rng = np.random.default_rng(0)
    p, cells, mu, truth = _planted_bins(rng)
    if strategy == "quantile":  # the truth must use the same (quantile) bins
        truth = None
    kw = {"cells": cells, "norm": "l2_squared", "strategy": strategy}
    deb, plug = [], []
    for _ in range(400):
        y = rng.uniform(size=p.shape[0]) < mu
        deb.append(beta_calibration_error(y, p, debiased=True, **kw))
        plug.append(beta_calibration_error(y, p, **kw))
    deb, plug = np.array(deb), np.array(plug)
    se = deb.std(ddof=1) / np.sqrt(deb.size)
    if truth is None:
        # quantile bins depend on p only: compute the truth on them by hand
        edges_rows = []
        for s in range(4):
            rows = np.flatnonzero(cells == s)
            order = rows[np.argsort(p[rows], kind="stable")]
            edges_rows.extend(np.array_split(order, 10))
        truth = sum(
            r.size / p.size * (mu[r].mean() - p[r].mean()) ** 2 for r in edges_rows
        )
        # mu varies inside a quantile bin: the estimator is unbiased for the
        # bin's mean accuracy up to a term of order Var(mu)/n_bin
        assert abs(deb.mean() - truth) < 3 * se + 1e-3
    else:
        assert abs(deb.mean() - truth) < 3 * se, (deb.mean(), truth, se)
    assert plug.mean() - truth > 20 * se  # the bias that debiasing removes


def test_beta_calibration_error_l2_squared_one_cell_is_squared_ece_l2():
    rng = np.random.default_rng(1)
    p = rng.uniform(size=500)
    y = rng.uniform(size=500) < p**2
    assert_allclose(
        beta_calibration_error(y, p, cells=np.zeros(500), norm="l2_squared"),
        expected_calibration_error(y, p, norm="l2") ** 2,
        rtol=1e-12,
    )


def test_beta_calibration_error_debiased_by_hand():
    # one cell, one bin: conf 0.5, labels 1,1,1,0 -> acc 0.75
    y, p = np.array([1, 1, 1, 0]), np.full(4, 0.5)
    g = np.zeros(4)
    kw = {"cells": g, "n_bins": 1, "norm": "l2_squared"}
    assert_allclose(beta_calibration_error(y, p, **kw), 0.0625, rtol=1e-12)
    # 0.25^2 - 0.75 * 0.25 / 3 = 0.0625 - 0.0625
    assert_allclose(beta_calibration_error(y, p, debiased=True, **kw), 0.0, atol=1e-15)
    # integer weights equal repeated rows
    w = np.array([2, 0, 1, 1])
    yr, pr = np.array([1, 1, 1, 0]), np.full(4, 0.5)
    assert_allclose(
        beta_calibration_error(y, p, sample_weight=w, debiased=True, **kw),
        beta_calibration_error(yr, pr, debiased=True, **kw),
        rtol=1e-12,
    )


def test_beta_calibration_error_debiased_needs_l2_squared():
    with pytest.raises(ValueError, match="norm='l2_squared'"):
        beta_calibration_error([0, 1], [0.2, 0.8], cells=[0, 0], debiased=True)


@pytest.mark.parametrize("norm", ["l1", "l2", "l2_squared"])
def test_beta_calibration_noise_floor_is_the_calibrated_expectation(norm):
    """The floor equals the mean plug-in beta-CE of labels drawn from the
    confidences themselves (perfect calibration), within Monte-Carlo error
    (and the floor's approximation of varying confidences in a bin)."""
    rng = np.random.default_rng(2)
    p = rng.uniform(0.3, 0.9, size=600)
    g = rng.integers(0, 6, size=600)
    floor = beta_calibration_noise_floor(p > 0.5, p, cells=g, norm=norm)
    draws = [
        beta_calibration_error(rng.uniform(size=600) < p, p, cells=g, norm=norm)
        for _ in range(300)
    ]
    if norm == "l2":  # l2 averages per-cell roots: compare the squared floor
        draws = [
            beta_calibration_error(
                rng.uniform(size=600) < p, p, cells=g, norm="l2_squared"
            )
            for _ in range(300)
        ]
        floor = floor**2
    assert_allclose(np.mean(draws), floor, rtol=0.05)
    # the floor does not use the labels
    assert beta_calibration_noise_floor(
        p > 0.7, p, cells=g, norm=norm
    ) == beta_calibration_noise_floor(p > 0.5, p, cells=g, norm=norm)


def test_beta_calibration_noise_floor_single_cell_and_binomial_mad():
    # one bin of 3 rows at confidence 0.3: E|X - 0.9| for X ~ Bin(3, 0.3)
    p = np.full(3, 0.3)
    by_hand = (
        0.343 * 0.9 + 3 * 0.3 * 0.49 * 0.1 + 3 * 0.09 * 0.7 * 1.1 + 0.027 * 2.1
    ) / 3
    assert_allclose(
        beta_calibration_noise_floor([0, 1, 0], p, n_bins=1), by_hand, rtol=1e-12
    )
    assert beta_calibration_noise_floor([0, 1], [0.0, 1.0]) == 0.0
    with pytest.raises(InvalidParameterError):
        beta_calibration_noise_floor([0, 1], [0.2, 0.8], norm="max")


# ------------------------------------------- extreme weights (issue 20, item 7)


@pytest.mark.parametrize("scale", [1e308, 1e300, 1e9, 2.0**-1070])
def test_reliability_table_intervals_finite_for_extreme_weights(scale):
    # weights near 1e308 gave NaN Clopper-Pearson bounds (scipy's betaincinv
    # fails on such counts); at 1e9 a bound could land above the estimate
    y, p = _random_data(3, n=300)
    table = reliability_table(y, p, sample_weight=np.full(300, scale), n_bins=5)
    ref = reliability_table(y, p, n_bins=5)
    assert_allclose(table["accuracy"], ref["accuracy"], rtol=1e-12)
    lo, acc, hi = table["ci_lower"], table["accuracy"], table["ci_upper"]
    assert np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))
    assert np.all((lo <= acc) & (acc <= hi) & (lo >= 0) & (hi <= 1))


def test_clopper_pearson_large_counts_match_the_exact_bounds():
    # the gamma and Cornish-Fisher limits used where betaincinv fails agree
    # with it where it holds (2**30 trials), to 1e-3 of the interval's width
    from scipy.special import betainc, betaincinv

    from sklearn_betacal.metrics._calibration_error import _beta_quantile_large

    n = 2.0**30
    for x in [1.0, 3.0, 5e4, 2.0**20 + 1, 0.157 * n, 0.5 * n, 0.85 * n, n - 9]:
        for a, b, q in [(x, n - x + 1, 0.025), (x + 1, n - x, 0.975)]:
            exact = betaincinv(a, b, q)
            width = 4 * np.sqrt(x * (n - x) / n**3)
            approx = _beta_quantile_large(np.array([a]), np.array([b]), q)[0]
            assert abs(betainc(a, b, approx) - q) < 1e-5  # near its level
            if abs(betainc(a, b, exact) - q) < 1e-9:  # a bound that holds
                assert abs(approx - exact) < 1e-3 * width


def test_clopper_pearson_replaces_a_wrong_betaincinv_bound():
    # 1000 successes in 1e9 trials: betaincinv's lower bound is 1.9e-6, above
    # the estimate 1e-6 (its probability is 1.0, not 0.025)
    from sklearn_betacal.metrics._calibration_error import _clopper_pearson

    lo, hi = _clopper_pearson(np.array([1000.0]), np.array([1e9]), 0.05)
    assert 0.9e-6 < lo[0] < 1e-6 < hi[0] < 1.1e-6


def test_noise_floor_finite_for_weights_near_the_float64_maximum():
    # de Moivre's form through gammaln gave NaN for 1e308-scale weights
    y, p = _random_data(4, n=300)
    groups = np.arange(300) % 4
    ref = beta_calibration_noise_floor(y, p, cells=groups)
    for scale in (1e308 / 4, 1e305, 1e300, 2.0**40):
        floor = beta_calibration_noise_floor(
            y, p, cells=groups, sample_weight=np.full(300, scale)
        )
        assert np.isfinite(floor) and 0 < floor
        if scale < 1e306:  # a total that fits float64 (else rescaled)
            # frequency weights: the floor shrinks as 1 / sqrt(total weight)
            assert_allclose(floor, ref / np.sqrt(scale), rtol=0.05)


@pytest.mark.parametrize("mu", [0.5, 0.157, 0.85, 1e-6, 1 - 1e-6])
def test_binomial_mad_limits_continue_the_exact_form(mu):
    from sklearn_betacal.metrics._beta_calibration import _binomial_mad

    below, above = _binomial_mad(np.array([2.0**28, 2.0**28 + 1]), np.full(2, mu))
    assert_allclose(above, below * np.sqrt((2.0**28 + 1) / 2.0**28), rtol=2e-5)


def _every_metric():
    """Every public metric of (y_true, y_prob) with its keyword defaults."""
    from sklearn_betacal import metrics as m

    def cells(f):
        return lambda y, p, **kw: f(y, p, cells=np.arange(len(y)) % 3, **kw)

    return {
        "expected_calibration_error": m.expected_calibration_error,
        "maximum_calibration_error": m.maximum_calibration_error,
        "reliability_table": m.reliability_table,
        "brier_decomposition": m.brier_decomposition,
        "cumulative_calibration_error": m.cumulative_calibration_error,
        "smooth_calibration_error": m.smooth_calibration_error,
        "calibration_test": m.calibration_test,
        "accuracy_confidence_curve": m.accuracy_confidence_curve,
        "risk_coverage_curve": m.risk_coverage_curve,
        "area_under_accuracy_confidence": m.area_under_accuracy_confidence,
        "beta_calibration_error": cells(m.beta_calibration_error),
        "cell_calibration_table": cells(
            lambda y, p, **kw: m.cell_calibration_table(y, p, random_state=0, **kw)
        ),
        "beta_calibration_noise_floor": cells(m.beta_calibration_noise_floor),
        "multicalibration_error": lambda y, p, **kw: m.multicalibration_error(
            y, p, features=np.arange(len(y)) % 2, **kw
        ),
    }


def _same(a, b):
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b)
    elif isinstance(a, tuple | list):
        for u, v in zip(a, b, strict=True):
            _same(u, v)
    elif hasattr(a, "_asdict"):
        _same(tuple(a), tuple(b))
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("name", sorted(_every_metric()))
def test_every_metric_reads_evident_string_labels_and_pos_label(name):
    """Issue 39 item 2: every metric takes the labels the CLI understands,
    with "correct" positive whatever the sort order, and pos_label for any
    other pair; the numbers are those of the 0/1 labels."""
    metric = _every_metric()[name]
    rng = np.random.default_rng(1)
    p = rng.uniform(size=300)
    y = rng.uniform(size=300) < p
    expected = metric(y.astype(int), p)
    for correct, wrong in [("correct", "incorrect"), ("Right", "Wrong"),
                           ("yes", "no"), ("pass", "fail")]:  # fmt: skip
        words = np.where(y, correct, wrong)
        _same(metric(words, p), expected)
    _same(metric(np.where(y, "B", "A"), p, pos_label="B"), expected)
    _same(metric(np.where(y, 0, 1), p, pos_label=0), expected)
    with pytest.raises(ValueError, match="pos_label='C' is not a label"):
        metric(np.where(y, "B", "A"), p, pos_label="C")
@pytest.mark.parametrize(
    "as_text", [lambda p: p.astype(str), lambda p: p.astype(str).astype(object)]
)
def test_metrics_refuse_numeric_text_as_y_prob(as_text):
    """expected_calibration_error(y, p.astype(str)) returned a number; like
    scikit-learn's check_array, the metrics refuse text confidences."""
    from sklearn_betacal.metrics import brier_decomposition, expected_calibration_error

    rng = np.random.default_rng(0)
    p = rng.uniform(size=50)
    y = (rng.uniform(size=50) < p).astype(int)
    for metric in (expected_calibration_error, brier_decomposition):
        with pytest.raises(ValueError, match="y_prob holds numbers written as text"):
            metric(y, as_text(p))
