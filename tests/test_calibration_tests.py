# SPDX-License-Identifier: MIT
"""Tests of the calibration tests: ECCE, its sigma and p-value, smECE, MCE.

Reference numbers come from ``mcgrad`` and ``relplot`` through
``tests/data/make_calibration_tests_golden.py`` (stored in
``calibration_tests_golden.json``; the peers are not needed here).
"""

import doctest
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _golden import load_golden
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_betacal._kernels import _cumulative as kernels
from sklearn_betacal.metrics import (
    CalibrationTestResult,
    calibration_test,
    cumulative_calibration_error,
    multicalibration_error,
    smooth_calibration_error,
)

GOLDEN = load_golden("calibration_tests_golden.json")


def _arrays(case):
    w = None if case["w"] is None else np.asarray(case["w"])
    return np.asarray(case["y"]), np.asarray(case["p"]), w


@pytest.mark.parametrize("case", GOLDEN["ecce"], ids=lambda c: c["name"])
def test_calibration_test_matches_mcgrad(case):
    y, p, w = _arrays(case)
    exp = case["expected"]
    assert_allclose(
        cumulative_calibration_error(y, p, sample_weight=w), exp["ecce"], rtol=1e-9
    )
    res = calibration_test(y, p, sample_weight=w, weight_type=case["weight_type"])
    assert isinstance(res, CalibrationTestResult)
    assert_allclose(res.statistic, exp["ecce"], rtol=1e-9, atol=1e-15)
    assert_allclose(res.sigma, exp["sigma"], rtol=1e-6)
    assert_allclose(res.standardized, exp["ecce_sigma"], rtol=1e-6)
    assert_allclose(res.pvalue, exp["pvalue"], rtol=1e-6, atol=1e-6)
    if "mcgrad_raw_ecce" in case:  # the order-free path is a sub-path
        assert res.statistic <= case["mcgrad_raw_ecce"] + 1e-15
        assert res.statistic < case["mcgrad_raw_ecce"]  # and differs here


def test_golden_cases_cover_weights_ties_and_tails():
    names = {c["name"] for c in GOLDEN["ecce"]}
    assert len(names) >= 5
    assert {"ties_same_label", "ties_mixed_labels", "sampling_weights_800"} <= names
    tail = next(c for c in GOLDEN["ecce"] if c["name"] == "far_tail_3000")
    assert tail["expected"]["pvalue"] < 1e-10
    assert GOLDEN["_versions"]["mcgrad"] and GOLDEN["_versions"]["relplot"]


@pytest.mark.parametrize("case", GOLDEN["cells"], ids=lambda c: c["name"])
def test_calibration_test_cells_match_mcgrad(case):
    y, p, w = _arrays(case)
    groups = np.asarray(case["groups"])
    res = calibration_test(
        y, p, sample_weight=w, cells=groups, weight_type=case["weight_type"]
    )
    table = res.table
    for cell, exp in case["cells"].items():
        row = table.loc[int(cell)]
        assert_allclose(row["ecce"], exp["ecce"], rtol=1e-9)
        assert_allclose(row["sigma"], exp["sigma"], rtol=1e-6)
        assert_allclose(row["standardized"], exp["ecce_sigma"], rtol=1e-6)
        assert_allclose(row["pvalue"], exp["pvalue"], rtol=1e-6, atol=1e-6)
        assert row["count"] == np.sum(groups == int(cell))
    assert table["significant"].any()


@pytest.mark.parametrize("case", GOLDEN["smece"], ids=lambda c: c["name"])
def test_smooth_calibration_error_matches_relplot(case):
    y, p, w = _arrays(case)
    assert_allclose(
        smooth_calibration_error(y, p, sample_weight=w), case["expected"], atol=1e-3
    )
    if w is None:  # same discretization: equal to rounding
        assert_allclose(smooth_calibration_error(y, p), case["expected"], rtol=1e-9)


@pytest.mark.parametrize(
    "case", GOLDEN["multicalibration"]["cases"], ids=lambda c: c["name"]
)
def test_multicalibration_error_matches_mcgrad(case):
    data = pd.DataFrame(GOLDEN["multicalibration"]["data"])
    cols = case["categorical"] + case["numerical"]
    kw = dict(case["kwargs"])
    kw.pop("chunk_size", None)
    rename = {"max_values_per_segment_feature": "n_bins"}
    kw = {rename.get(k, k): v for k, v in kw.items()}
    value = multicalibration_error(
        data["y"],
        data["p"],
        features=data[cols],
        categorical_features=case["categorical"],
        sample_weight=data["w"] if case["weighted"] else None,
        weight_type="sampling",
        **kw,
    )
    assert_allclose(value, case["expected"], rtol=1e-9)


def _data(seed, n=400, ties=False):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    if ties:
        p = np.round(p, 1)
    y = (rng.uniform(size=n) < p**1.2).astype(int)
    return y, p, rng


def test_ties_do_not_depend_on_row_order():
    y, p, rng = _data(0, ties=True)
    g = rng.integers(0, 3, size=p.shape[0])
    ref = calibration_test(y, p, cells=g)
    for seed in range(5):
        perm = np.random.default_rng(seed).permutation(p.shape[0])
        assert cumulative_calibration_error(y[perm], p[perm]) == pytest.approx(
            ref.statistic, rel=1e-12
        )
        table = calibration_test(y[perm], p[perm], cells=g[perm]).table
        assert_allclose(table["ecce"], ref.table["ecce"], rtol=1e-12)


def test_calibration_test_grouped_equals_per_cell_loop_many_cells():
    # more than 2**16 cells: the two-pass radix path of the kernel
    rng = np.random.default_rng(3)
    n = 300_000
    groups = rng.integers(0, 70_000, size=n)
    p = np.round(rng.uniform(size=n), 2)  # ties inside cells too
    y = (rng.uniform(size=n) < p).astype(float)
    w = rng.uniform(0, 2, size=n)
    res = calibration_test(y, p, sample_weight=w, cells=groups)
    cells = rng.choice(np.unique(groups), size=40, replace=False)
    for c in cells:
        rows = groups == c
        one = calibration_test(y[rows], p[rows], sample_weight=w[rows])
        assert_allclose(res.table.loc[c, "ecce"], one.statistic, rtol=1e-9, atol=1e-12)
        assert_allclose(res.table.loc[c, "sigma"], one.sigma, rtol=1e-12)
        assert_allclose(res.table.loc[c, "pvalue"], one.pvalue, rtol=1e-7, atol=1e-12)


def test_kuiper_sf_series_agree_where_both_converge():
    x = np.linspace(0.6, 3.0, 50)
    a = np.arange(200)[None, :] + 0.5
    small = 1 - np.sum(
        (8 / x[:, None] ** 2 + 2 / (a**2 * np.pi**2))
        * np.exp(-2 * a**2 * np.pi**2 / x[:, None] ** 2),
        axis=1,
    )
    assert_allclose(kernels.kuiper_sf(x), small, rtol=1e-12, atol=1e-15)
    assert kernels.kuiper_sf(0.0) == 1.0
    assert kernels.kuiper_sf(np.inf) == 0.0
    assert np.all(np.diff(kernels.kuiper_sf(np.linspace(0.01, 10, 300))) <= 0)
    q = kernels.kuiper_isf(0.05)
    assert_allclose(kernels.kuiper_sf(q), 0.05, rtol=1e-10)


def test_multiplicity_adjustments_match_statsmodels():
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    rng = np.random.default_rng(1)
    pv = np.concatenate([rng.uniform(size=30), rng.uniform(0, 1e-3, size=10)])
    pv[[3, 4]] = pv[5]  # ties
    assert_allclose(kernels.holm(pv), multipletests(pv, method="holm")[1], rtol=1e-12)
    assert_allclose(
        kernels.benjamini_hochberg(pv),
        multipletests(pv, method="fdr_bh")[1],
        rtol=1e-12,
    )
    with_nan = np.append(pv, np.nan)
    assert np.isnan(kernels.holm(with_nan)[-1])
    assert_allclose(kernels.holm(with_nan)[:-1], kernels.holm(pv))


def test_calibration_test_cell_table_columns_and_max_statistic():
    rng = np.random.default_rng(0)
    groups = np.repeat(["a", "b", "c"], [500, 500, 40])
    p = rng.uniform(size=groups.size)
    y = rng.uniform(size=groups.size) < np.where(groups == "b", p * 0.7, p)
    res = calibration_test(y, p, cells=groups, method="fdr_bh", alpha=0.1)
    t = res.table
    assert list(t.index) == ["a", "b", "c"]
    assert t.loc["b", "significant"] and not t.loc["a", "significant"]
    assert_allclose(
        t["pvalue_adjusted"], kernels.benjamini_hochberg(t["pvalue"].to_numpy())
    )
    # mde: the ECCE this cell's size rejects at alpha before adjustment
    assert_allclose(kernels.kuiper_sf(t["mde"] / t["sigma"]), 0.1, rtol=1e-8)
    assert t.loc["c", "mde"] > t.loc["a", "mde"]  # smaller cell, larger mde
    assert res.max_standardized == t["standardized"].max()
    p_one = kernels.kuiper_sf(res.max_standardized)
    assert_allclose(res.max_pvalue, 1 - (1 - p_one) ** 3, rtol=1e-9)
    assert res.method == "fdr_bh" and res.alpha == 0.1
    plain = calibration_test(y, p)
    assert plain.table is None and plain.max_pvalue is None
    assert plain.pvalue == res.pvalue


def test_calibration_test_zero_variance_cells():
    # confidences 0/1 only: sigma 0; p-value 1 when exact, 0 otherwise
    p = np.array([0.0, 1.0, 0.0, 1.0])
    res = calibration_test(np.array([0, 1, 0, 1]), p)
    assert (res.sigma, res.standardized, res.pvalue) == (0.0, 0.0, 1.0)
    res = calibration_test(np.array([1, 1, 0, 1]), p)
    assert res.standardized == np.inf and res.pvalue == 0.0


def test_frequency_and_sampling_weights():
    y, p, rng = _data(4, n=200)
    m = rng.integers(0, 4, size=200)
    freq = calibration_test(y, p, sample_weight=m)
    rep = calibration_test(np.repeat(y, m), np.repeat(p, m))
    assert_allclose(
        [freq.statistic, freq.sigma, freq.pvalue],
        [rep.statistic, rep.sigma, rep.pvalue],
        rtol=1e-10,
    )
    samp = calibration_test(y, p, sample_weight=m, weight_type="sampling")
    assert samp.statistic == freq.statistic
    assert samp.sigma > freq.sigma  # w**2 >= w for integer weights
    scaled = calibration_test(y, p, sample_weight=7.5 * m, weight_type="sampling")
    assert_allclose(scaled.sigma, samp.sigma, rtol=1e-12)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda y, p: calibration_test(y, p, method="bonferroni"), "method"),
        (lambda y, p: calibration_test(y, p, alpha=1.0), "alpha"),
        (lambda y, p: calibration_test(y, p, weight_type="freq"), "weight_type"),
        (lambda y, p: cumulative_calibration_error(y, p, sample_weight="x"), "weight"),
        (lambda y, p: multicalibration_error(y, p, features=None), "features"),
        (
            lambda y, p: multicalibration_error(y, p, features=p[:, None], n_bins=1),
            "n_bins",
        ),
        (
            lambda y, p: multicalibration_error(
                y, p, features=p[:, None], max_depth=-1
            ),
            "max_depth",
        ),
    ],
)
def test_param_validation(call, match):
    y, p, _ = _data(0, n=50)
    with pytest.raises(InvalidParameterError, match=match):
        call(y, p)


@pytest.mark.parametrize(
    "func",
    [cumulative_calibration_error, calibration_test, smooth_calibration_error],
)
def test_bad_input_is_a_clear_error(func):
    y, p, _ = _data(0, n=20)
    bad = p.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="1 NaN"):
        func(y, bad)
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        func(y, p + 1)
    with pytest.raises(ValueError, match="same length"):
        func(y[:-1], p)
    with pytest.raises(ValueError, match="negative"):
        func(y, p, sample_weight=-np.ones(20))


def test_groups_and_features_errors():
    y, p, _ = _data(0, n=20)
    with pytest.raises(ValueError, match="one cell id per row"):
        calibration_test(y, p, cells=np.zeros(19))
    with pytest.raises(ValueError, match="one row per answer"):
        multicalibration_error(y, p, features=np.zeros((19, 1)))
    with pytest.raises(ValueError, match="not a column"):
        multicalibration_error(
            y, p, features=pd.DataFrame({"a": p}), categorical_features=["b"]
        )
    with pytest.raises(ValueError, match="not numeric"):
        multicalibration_error(
            y,
            p,
            features=pd.DataFrame({"a": ["x"] * 20, "b": p}),
            categorical_features=["b"],
        )


def test_multicalibration_error_finds_the_planted_segment():
    rng = np.random.default_rng(2)
    n = 4000
    topic = rng.choice(["a", "b", "c", "d"], size=n)
    length = rng.uniform(size=n)
    p = rng.uniform(size=n)
    bad = (topic == "b") & (length > 0.5)
    y = rng.uniform(size=n) < np.where(bad, p * 0.6, p)
    feats = pd.DataFrame({"topic": topic, "length": length})
    planted = multicalibration_error(y, p, features=feats)
    y0 = rng.uniform(size=n) < p
    calibrated = multicalibration_error(y0, p, features=feats)
    assert planted > 3 * calibrated
    # depth 0 only: the global ECCE in absolute units
    assert_allclose(
        multicalibration_error(y, p, features=feats, max_depth=0),
        cumulative_calibration_error(y, p),
        rtol=1e-12,
    )
    # numpy features, polars-free path, categorical by index
    as_array = multicalibration_error(
        y,
        p,
        features=np.column_stack([topic, length.astype(str)]).astype(object),
        categorical_features=[0, 1],
    )
    assert as_array >= 0


confidences = st.lists(
    st.floats(0, 1, allow_nan=False).map(lambda v: round(v, 2)),  # ties
    min_size=2,
    max_size=40,
)


def _weighted_case(p, seed):
    """Labels, weights (the first row's zero) and a permutation for ``p``."""
    rng = np.random.default_rng(seed)
    p = np.asarray(p)
    n = p.shape[0]
    y = (rng.uniform(size=n) < 0.5).astype(int)
    w = rng.uniform(0, 2, size=n)
    w[0] = 0.0
    w[1] = 1.0  # never all zero
    return p, y, w, rng.permutation(n)


@pytest.mark.parametrize(
    "metric, atol",
    [(cumulative_calibration_error, 1e-15), (smooth_calibration_error, 1e-12)],
    ids=["ecce", "smece"],
)
@settings(max_examples=60, deadline=None)
@given(confidences, st.integers(0, 2**32 - 1), st.floats(1e-3, 1e3))
def test_invariants_permutation_weight_scaling_zero_weight(
    metric, atol, p, seed, scale
):
    p, y, w, perm = _weighted_case(p, seed)
    e = metric(y, p, sample_weight=w)
    assert 0.0 <= e <= 1.0
    for yy, pp, ww in (
        (y[perm], p[perm], w[perm]),  # row order
        (y, p, scale * w),  # weight scale
        (y[1:], p[1:], w[1:]),  # a zero-weight row is a dropped row
    ):
        assert_allclose(metric(yy, pp, sample_weight=ww), e, rtol=1e-9, atol=atol)


@settings(max_examples=60, deadline=None)
@given(confidences, st.integers(0, 2**32 - 1), st.floats(1e-3, 1e3))
def test_sampling_weights_pvalue_ignores_weight_scale(p, seed, scale):
    p, y, w, _ = _weighted_case(p, seed)
    t = calibration_test(y, p, sample_weight=w, weight_type="sampling")
    ts = calibration_test(y, p, sample_weight=scale * w, weight_type="sampling")
    assert_allclose(ts.pvalue, t.pvalue, rtol=1e-7, atol=1e-12)
    assert 0.0 <= t.pvalue <= 1.0


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6))
def test_grouped_table_permutation_invariant(seed, n_cells):
    rng = np.random.default_rng(seed)
    n = 60
    p = np.round(rng.uniform(size=n), 1)
    y = rng.integers(0, 2, size=n)
    g = rng.integers(0, n_cells, size=n)
    perm = rng.permutation(n)
    a = calibration_test(y, p, cells=g).table
    b = calibration_test(y[perm], p[perm], cells=g[perm]).table
    assert_allclose(a["ecce"], b["ecce"], rtol=1e-9, atol=1e-15)
    assert_array_equal(a["count"], b["count"])


@pytest.mark.slow
def test_calibration_test_size_on_calibrated_data():
    # calibrated cells: the Holm-adjusted test flags a cell in at most
    # alpha of the simulations (family-wise error), and the raw per-cell
    # test rejects at most alpha of the calibrated cells
    rng = np.random.default_rng(12)
    n_sim, alpha = 300, 0.05
    any_flag, raw = 0, []
    for _ in range(n_sim):
        groups = rng.integers(0, 10, size=2000)
        p = rng.beta(2, 2, size=2000)
        y = rng.uniform(size=2000) < p
        t = calibration_test(y, p, cells=groups, alpha=alpha).table
        any_flag += bool(t["significant"].any())
        raw.extend(t["pvalue"] < alpha)
    # binomial sd at 300 sims is 0.0126: allow 2 sd above alpha
    assert any_flag / n_sim <= alpha + 0.025
    assert np.mean(raw) <= alpha + 0.008


def test_docs_calibration_tests_page_runs_as_written():
    page = Path(__file__).parents[1] / "docs" / "calibration_tests.rst"
    result = doctest.testfile(
        str(page),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    assert result.attempted > 10
    assert result.failed == 0


def test_betacal_report_lists_significantly_miscalibrated_groups():
    from sklearn_betacal.cli._report import _format_groups, compute_report

    rng = np.random.default_rng(8)
    groups = np.repeat(["ok", "off", "tiny"], [800, 800, 15])
    p = rng.uniform(size=groups.size)
    y = (rng.uniform(size=groups.size) < np.where(groups == "off", p * 0.7, p)).astype(
        int
    )
    report = compute_report(p, y, cells=groups)
    table = calibration_test(y, p, cells=groups).table
    assert report["significant_groups"] == ["off"]
    rows = {r["group"]: r for r in report["groups"]}
    for g in ("ok", "off", "tiny"):
        assert rows[g]["ecce"] == pytest.approx(table.loc[g, "ecce"])
        assert rows[g]["pvalue_adjusted"] == pytest.approx(
            table.loc[g, "pvalue_adjusted"]
        )
    text = "\n".join(_format_groups(report))
    assert "| off **miscalibrated** |" in text
    # the group is named with its size and adjusted p-value (issue 39 item 4)
    assert re.search(
        r"Significantly miscalibrated \(Holm-adjusted p < 0\.05\): 1 group\(s\): "
        r"off \(n = \d+, p = [^)]+\)\.",
        text,
    )
    calibrated = compute_report(p, rng.uniform(size=p.size) < p, cells=groups)
    assert "(Holm-adjusted p < 0.05): none." in "\n".join(_format_groups(calibrated))


def test_cell_table_zero_weight_drops_and_integer_weight_repeats():
    rng = np.random.default_rng(9)
    n = 600
    p = np.round(rng.uniform(size=n), 2)
    y = (rng.uniform(size=n) < p).astype(int)
    g = rng.integers(0, 5, size=n)
    m = rng.integers(0, 4, size=n)
    m[g == 4] = 0  # a cell whose rows all weigh nothing
    weighted = calibration_test(y, p, cells=g, sample_weight=m).table
    rep = calibration_test(np.repeat(y, m), np.repeat(p, m), cells=np.repeat(g, m))
    t = rep.table
    assert weighted.loc[4, "count"] == 0 and np.isnan(weighted.loc[4, "pvalue"])
    assert_allclose(weighted.loc[:3, "weight"], t["count"])  # total weight = rows
    for c in range(4):
        for col in ("ecce", "sigma", "pvalue", "pvalue_adjusted"):
            assert_allclose(weighted.loc[c, col], t.loc[c, col], rtol=1e-9)
    mce_w = multicalibration_error(y, p, features=g[:, None], sample_weight=m)
    mce_r = multicalibration_error(
        np.repeat(y, m), np.repeat(p, m), features=np.repeat(g, m)[:, None]
    )
    assert_allclose(mce_w, mce_r, rtol=1e-9)
