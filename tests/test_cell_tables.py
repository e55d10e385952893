# SPDX-License-Identifier: MIT
"""The tables and curves the displays draw (no matplotlib needed)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import binomtest

from sklearn_betacal.metrics import (
    accuracy_confidence_curve,
    area_under_accuracy_confidence,
    beta_calibration_error,
    cell_calibration_table,
    expected_calibration_error,
    reliability_table,
    risk_coverage_curve,
)


def _grouped(seed=0, n=900):
    rng = np.random.default_rng(seed)
    groups = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    p = rng.uniform(size=n)
    truth = np.where(groups == "b", p**2, p)  # b is overconfident
    y = rng.uniform(size=n) < truth
    return y, p, groups


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_cell_calibration_table_errors_average_to_beta_ce(strategy, norm):
    y, p, g = _grouped()
    table = cell_calibration_table(
        y, p, cells=g, strategy=strategy, norm=norm, n_resamples=0
    )
    expected = beta_calibration_error(y, p, cells=g, strategy=strategy, norm=norm)
    assert_allclose(
        (table["share"] * table["calibration_error"]).sum(), expected, rtol=1e-12
    )
    for cell in table.index:  # each cell's term is that cell's own ECE
        rows = g == cell
        assert table.loc[cell, "calibration_error"] == pytest.approx(
            expected_calibration_error(y[rows], p[rows], strategy=strategy, norm=norm),
            rel=1e-12,
        )


def test_cell_calibration_table_accuracy_interval_is_exact_binomial():
    y, p, g = _grouped()
    table = cell_calibration_table(y, p, cells=g, n_resamples=0, alpha=0.1)
    for cell in table.index:
        rows = g == cell
        k, n = int(y[rows].sum()), int(rows.sum())
        ci = binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
        assert table.loc[cell, "count"] == n
        assert_allclose(
            table.loc[cell, ["ci_lower", "ci_upper"]].to_numpy(float),
            [ci.low, ci.high],
            rtol=1e-9,
        )
        assert table.loc[cell, "gap"] == pytest.approx(y[rows].mean() - p[rows].mean())
        # the one-bin reliability table of the cell says the same
        one = reliability_table(y[rows], p[rows], n_bins=1, alpha=0.1).iloc[0]
        assert_allclose(
            one[["ci_lower", "ci_upper"]].to_numpy(float), [ci.low, ci.high], rtol=1e-9
        )
    assert table["ce_lower"].isna().all() and table["noise_level"].isna().all()


def test_cell_calibration_table_noise_level_separates_signal_from_noise():
    y, p, g = _grouped(n=3000)
    table = cell_calibration_table(y, p, cells=g, random_state=0)
    # a calibrated cell sits at its noise level, an overconfident one far above
    assert table.loc["a", "calibration_error"] < 1.5 * table.loc["a", "noise_level"]
    assert table.loc["b", "calibration_error"] > 2 * table.loc["b", "noise_level"]
    ok = table.dropna()
    assert np.all(ok["ce_lower"] <= ok["ce_upper"])
    # the bootstrap interval covers the estimate for a cell with a real error
    assert (
        ok.loc["b", "ce_lower"]
        <= ok.loc["b", "calibration_error"]
        <= ok.loc["b", "ce_upper"]
    )


def test_cell_calibration_table_random_state_reproduces_exactly():
    y, p, g = _grouped()
    a = cell_calibration_table(y, p, cells=g, random_state=3)
    b = cell_calibration_table(y, p, cells=g, random_state=3)
    assert a.equals(b)


def test_cell_calibration_table_zero_weight_equals_dropping_rows():
    y, p, g = _grouped()
    w = np.ones(len(y))
    w[::7] = 0.0
    keep = w > 0
    weighted = cell_calibration_table(y, p, cells=g, sample_weight=w, n_resamples=0)
    dropped = cell_calibration_table(y[keep], p[keep], cells=g[keep], n_resamples=0)
    assert_allclose(
        weighted.drop(columns="share").to_numpy(float),
        dropped.drop(columns="share").to_numpy(float),
        equal_nan=True,
    )


def test_cell_calibration_table_weighted_resampling_runs_and_orders():
    y, p, g = _grouped()
    w = np.random.default_rng(1).integers(1, 4, size=len(y)).astype(float)
    table = cell_calibration_table(y, p, cells=g, sample_weight=w, random_state=0)
    assert np.all(table["ce_lower"] <= table["ce_upper"])
    assert_allclose(table["weight"].sum(), w.sum())


def test_cell_calibration_table_integer_cell_ids_keep_their_labels():
    y, p, _ = _grouped()
    cells = np.where(p > 0.5, 7, -1)
    table = cell_calibration_table(y, p, cells=cells, n_resamples=0)
    assert table.index.tolist() == [-1, 7]


def test_accuracy_confidence_curve_area_is_auac():
    y, p, _ = _grouped()
    t, acc, cov = accuracy_confidence_curve(y, p)
    area = np.sum(np.diff(t) * (acc[1:] + acc[:-1]) / 2)  # trapezoids
    assert_allclose(area, area_under_accuracy_confidence(y, p), rtol=1e-12)
    assert cov[0] == 1.0 and np.all(np.diff(cov) <= 0)
    # by hand at t = 0.5
    k = np.flatnonzero(np.isclose(t, 0.5))[0]
    assert acc[k] == pytest.approx(y[p >= 0.5].mean())
    assert cov[k] == pytest.approx(np.mean(p >= 0.5))


def test_risk_coverage_curve_by_hand_with_ties_and_weights():
    y = np.array([1, 0, 1, 1, 0])
    p = np.array([0.9, 0.9, 0.7, 0.2, 0.2])
    coverage, risk, t = risk_coverage_curve(y, p)
    assert_array_equal(t, [0.9, 0.7, 0.2])
    assert_allclose(coverage, [2 / 5, 3 / 5, 1.0])
    assert_allclose(risk, [1 / 2, 1 / 3, 2 / 5])
    # an integer weight counts a row twice; a zero weight drops it
    w = np.array([2.0, 1.0, 0.0, 1.0, 1.0])
    coverage, risk, t = risk_coverage_curve(y, p, sample_weight=w)
    rep = np.array([0, 0, 1, 3, 4])
    c2, r2, t2 = risk_coverage_curve(y[rep], p[rep])
    assert_allclose(coverage, c2)
    assert_allclose(risk, r2)
    assert_array_equal(t, t2)
