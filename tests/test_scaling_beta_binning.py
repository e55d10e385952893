# SPDX-License-Identifier: MIT
"""Tests for ScalingBetaBinningCalibrator (Alg. 3) and estimate_misspecification."""

import numpy as np
import pytest
from _umd_oracle import tie_break, umd_fit, umd_predict
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

from sklearn_betacal import (
    GroupColumnPartitioner,
    HierarchicalLogisticScaler,
    KDTreePartitioner,
    PlattScaler,
    ScalingBetaBinningCalibrator,
    estimate_misspecification,
)
from sklearn_betacal.bounds import points_per_bin_for_epsilon
from sklearn_betacal.metrics import expected_calibration_error


def _grouped_data(seed, n=6000, n_groups=4):
    rng = np.random.default_rng(seed)
    group = rng.integers(0, n_groups, n)
    h = rng.uniform(size=n)
    # a different miscalibration per group: over- and under-confident
    y = (rng.uniform(size=n) < h ** (0.5 + group / 2)).astype(int)
    return np.column_stack([h, group]), y


def test_sbb_pooled_one_cell_is_platt_then_umd_on_d2():
    X, y = _grouped_data(0, n=3000)
    X[:, 1] = 0  # a single cell
    b, delta, seed = 60, 1e-6, 7
    sbb = ScalingBetaBinningCalibrator(
        GroupColumnPartitioner(),
        points_per_bin=b,
        delta=delta,
        scaler="pooled",
        random_state=seed,
    ).fit(X, y)

    # independent reconstruction of Alg. 3 with the same random stream
    rng = np.random.RandomState(seed)
    perm = rng.permutation(3000)
    d1, d2 = np.sort(perm[:1500]), np.sort(perm[1500:])
    platt = PlattScaler(input="logit").fit(X[d1, 0], y[d1])
    proxy = platt.predict_proba(X[d2, 0])[:, 1]
    h2 = tie_break(X[d2, 0], delta, rng)
    table = umd_fit(h2, proxy, None, 1500 // b, delta=delta)
    grid = np.linspace(0, 1, 101)
    expected = umd_predict(table, grid)
    got = sbb.predict_proba(np.column_stack([grid, np.zeros(101)]))[:, 1]
    assert_array_equal(got, expected)
    assert_array_equal(sbb.binning_indices_, d2)
    assert_allclose(sbb.scaler_.coef_, platt.coef_, rtol=0, atol=0)


def test_sbb_hierarchical_proxies_are_the_scaler_fit_on_d1():
    X, y = _grouped_data(1)
    sbb = ScalingBetaBinningCalibrator(
        GroupColumnPartitioner(), points_per_bin=100, random_state=0
    ).fit(X, y)
    d1 = sbb.scaling_indices_
    hls = HierarchicalLogisticScaler(partitioner=GroupColumnPartitioner()).fit(
        X[d1], y[d1]
    )
    assert isinstance(sbb.scaler_, HierarchicalLogisticScaler)
    assert_allclose(sbb.scaler_.fixed_effects_, hls.fixed_effects_, rtol=1e-10)
    assert_allclose(sbb.proxy_proba(X), hls.predict_proba(X)[:, 1], rtol=1e-10)
    # D1 and D2 partition the rows, half each
    both = np.sort(np.concatenate([d1, sbb.binning_indices_]))
    assert_array_equal(both, np.arange(len(y)))
    assert len(d1) == len(y) // 2


@pytest.mark.slow
def test_sbb_beats_pooled_on_group_miscalibration():
    # groups miscalibrated in opposite directions: HS-BB calibrates within
    # each group, so its per-group error is small where a pooled fit is not
    X, y = _grouped_data(2, n=20000)
    Xt, yt = _grouped_data(3, n=20000)
    from sklearn_betacal.metrics import beta_calibration_error

    hsbb = ScalingBetaBinningCalibrator(
        GroupColumnPartitioner(), points_per_bin=200, random_state=0
    ).fit(X, y)
    platt = PlattScaler().fit(X[:, 0], y)
    ce_hsbb = beta_calibration_error(yt, hsbb.predict_proba(Xt)[:, 1], cells=Xt[:, 1])
    ce_platt = beta_calibration_error(
        yt, platt.predict_proba(Xt[:, 0])[:, 1], cells=Xt[:, 1]
    )
    assert ce_hsbb < 0.5 * ce_platt


def test_sbb_custom_scaler_gets_the_same_x():
    X, y = _grouped_data(4)
    sbb = ScalingBetaBinningCalibrator(
        GroupColumnPartitioner(),
        points_per_bin=100,
        scaler=LogisticRegression(),
        random_state=0,
    ).fit(X, y)
    lr = LogisticRegression().fit(X[sbb.scaling_indices_], y[sbb.scaling_indices_])
    assert_allclose(sbb.scaler_.coef_, lr.coef_)
    assert_allclose(sbb.proxy_proba(X), lr.predict_proba(X)[:, 1])


def test_sbb_grid_search_with_bb_grid():
    X, y = _grouped_data(5, n=4000)
    rng = np.random.default_rng(0)
    X = np.column_stack([X[:, 0], X[:, 1] + rng.normal(0, 0.1, len(y))])
    search = GridSearchCV(
        ScalingBetaBinningCalibrator(KDTreePartitioner(), random_state=0),
        {"partitioner__max_depth": [1, 2], "points_per_bin": [50, 100]},
        scoring="neg_brier_score",
        cv=2,
    ).fit(X, y)
    assert search.best_params_["partitioner__max_depth"] in (1, 2)
    assert search.best_estimator_.partitioner_.n_cells_ >= 2


def test_sbb_outside_rows_use_root_binning():
    X, y = _grouped_data(6)
    part = GroupColumnPartitioner().fit(X[:, 1:][X[:, 1] < 3])  # group 3 unknown
    sbb = ScalingBetaBinningCalibrator(
        FrozenEstimator(part), points_per_bin=100, random_state=0
    ).fit(X, y)
    assert sbb.partitioner_ is not None
    outside = X[:, 1] == 3
    assert_array_equal(sbb.apply(X[outside]), -1)
    p = sbb.predict_proba(X[outside])[:, 1]
    assert_array_equal(p, umd_predict(sbb.tables_.table(0), X[outside, 0]))


def test_sbb_is_deterministic():
    X, y = _grouped_data(7)
    sbb = ScalingBetaBinningCalibrator(
        GroupColumnPartitioner(), points_per_bin=100, random_state=3
    )
    p1 = clone(sbb).fit(X, y).predict_proba(X)
    p2 = clone(sbb).fit(X, y).predict_proba(X)
    assert p1.tobytes() == p2.tobytes()


def test_sbb_zero_weight_equals_dropping_rows():
    X, y = _grouped_data(8, n=3000)
    w = np.ones(len(y))
    w[::5] = 0
    kw = {"points_per_bin": 80, "random_state": 1}
    a = ScalingBetaBinningCalibrator(GroupColumnPartitioner(), **kw)
    b = ScalingBetaBinningCalibrator(GroupColumnPartitioner(), **kw)
    a.fit(X, y, sample_weight=w)
    b.fit(X[w > 0], y[w > 0])
    assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_sbb_auto_points_per_bin_uses_nu_and_d2_size():
    X, y = _grouped_data(9, n=4000)
    sbb = ScalingBetaBinningCalibrator(
        GroupColumnPartitioner(),
        points_per_bin="auto",
        epsilon=0.2,
        nu=0.05,
        random_state=0,
    ).fit(X, y)
    assert sbb.points_per_bin_ == points_per_bin_for_epsilon(0.2, 2000, nu=0.05)


def test_sbb_nu_auto_is_estimated_on_d2_against_its_true_labels():
    X, y = _grouped_data(9, n=4000)
    kw = {"points_per_bin": "auto", "epsilon": 0.2, "random_state": 0}
    sbb = ScalingBetaBinningCalibrator(GroupColumnPartitioner(), **kw).fit(X, y)
    d2 = sbb.binning_indices_
    t2, h2, c2 = sbb.proxy_proba(X[d2]), X[d2, 0], X[d2, 1]
    # the largest of the pooled estimate and each cell's (bins of h, 10 of
    # about 50 rows in each cell of about 500: bins of >= 100 give 5 each)
    per_cell = [
        estimate_misspecification(y[d2][c2 == g], t2[c2 == g], h2[c2 == g], n_bins=5)
        for g in range(4)
    ]
    nu = max(estimate_misspecification(y[d2], t2, h2), *per_cell)
    assert sbb.nu_ == nu > 0
    assert sbb.points_per_bin_ == points_per_bin_for_epsilon(0.2, 2000, nu=nu)
    fixed = ScalingBetaBinningCalibrator(GroupColumnPartitioner(), nu=0.0, **kw)
    assert fixed.fit(X, y).nu_ == 0.0
    assert fixed.points_per_bin_ < sbb.points_per_bin_  # nu costs points


@pytest.mark.parametrize("scaler", ["pooled", "hierarchical", "features"])
def test_sbb_nu_auto_bounds_every_cell_where_the_pooled_estimate_does_not(scaler):
    """Known truth: accuracy h + 0.15 in cell 0 and h - 0.15 in cell 1, so a
    scaler that pools the cells is off by 0.15 in each while its pooled
    misspecification is about 0 (the two gaps cancel). ``nu_`` must reach
    the cells' true 0.15 for every scaler; the pooled estimate alone stays
    far below it for the pooled scaler."""
    rng = np.random.default_rng(3)
    n = 8000
    cell = rng.integers(0, 2, n)
    h = rng.uniform(0.2, 0.8, n)
    acc = h + np.where(cell == 0, 0.15, -0.15)
    y = (rng.uniform(size=n) < acc).astype(int)
    noise = rng.uniform(size=n)  # a feature that carries nothing
    X = np.column_stack([h, cell, noise])
    sbb = ScalingBetaBinningCalibrator(
        FrozenEstimator(GroupColumnPartitioner(0).fit(X[:, 1:])),
        scaler=scaler,
        points_per_bin=100,
        random_state=0,
    ).fit(X, y)
    d2 = sbb.binning_indices_
    t2 = sbb.proxy_proba(X[d2])
    s2 = t2 if scaler == "features" else h[d2]
    pooled = estimate_misspecification(y[d2], t2, s2)
    # the proxies' true misspecification in each cell, from the known truth
    true_cell = max(
        np.abs(acc[d2][cell[d2] == g] - t2[cell[d2] == g]).mean() for g in (0, 1)
    )
    assert sbb.nu_ >= pooled
    if scaler == "pooled":
        assert true_cell > 0.13 and pooled < 0.07, (true_cell, pooled)
        assert sbb.nu_ > true_cell, (sbb.nu_, true_cell)
    else:  # the cell's intercept is learned: nu_ still bounds the truth
        assert sbb.nu_ >= true_cell, (sbb.nu_, true_cell)


@pytest.mark.parametrize("scaler", ["hierarchical", "pooled"])
def test_sbb_logit_covariate_reaches_the_scaler(scaler):
    X, y = _grouped_data(3, n=2000)
    sbb = ScalingBetaBinningCalibrator(
        GroupColumnPartitioner(), scaler=scaler, covariate="logit", random_state=0
    ).fit(X, y)
    d1 = sbb.scaling_indices_
    if scaler == "pooled":
        ref = PlattScaler().fit(X[d1, 0], y[d1])
        assert_allclose(sbb.scaler_.coef_, ref.coef_, rtol=1e-12)
    else:
        ref = HierarchicalLogisticScaler(
            partitioner=GroupColumnPartitioner(), covariate="logit"
        ).fit(X[d1], y[d1])
        assert_allclose(sbb.scaler_.fixed_effects_, ref.fixed_effects_, rtol=1e-9)
    assert_allclose(sbb.scaler_.logit_eps_, ref.logit_eps_, rtol=0)


def test_sbb_too_few_rows_raises():
    with pytest.raises(ValueError, match="at least one row in D1"):
        ScalingBetaBinningCalibrator(GroupColumnPartitioner(), scaler_fraction=0.9).fit(
            [[0.5, 0], [0.4, 1]], [0, 1]
        )


def test_estimate_misspecification_hand_computed():
    # bins (quantile, 2 bins) split h at its median: {0.1, 0.2} and {0.8, 0.9}
    y = [0, 1, 1, 1]
    proxy = [0.5, 0.5, 0.9, 0.7]
    h = [0.1, 0.2, 0.8, 0.9]
    # bin 1: |0.5 - 0.5| = 0; bin 2: |1.0 - 0.8| = 0.2
    assert estimate_misspecification(y, proxy, h, n_bins=2) == pytest.approx(0.2)
    assert estimate_misspecification(
        y, proxy, h, n_bins=2, strategy="uniform"
    ) == pytest.approx(0.2)
    # a perfect proxy of E[Y | bin] has nu = 0
    assert estimate_misspecification(y, [0.5, 0.5, 1, 1], h, n_bins=2) == 0


def test_estimate_misspecification_quantile_bins_are_the_metrics_on_ties():
    # h sorted: 0.2, 0.2, 0.5, 0.5, 0.5; two equal-mass bins. The median by
    # the inverted CDF (the metrics' rule) is 0.5, and a confidence equal to
    # an edge is in the bin below it: every row in one bin, gap |1 - 0.3| =
    # 0.7. (The second rule it had, edge 0.5 closed on the right, split
    # {0.2, 0.2} | {0.5, 0.5, 0.5}: gaps 1.0 and 0.5, nu = 1.0.)
    h = np.array([0.5, 0.5, 0.5, 0.2, 0.2])
    y = np.ones(5)
    proxy = np.array([0.0, 0.5, 1.0, 0.0, 0.0])
    assert estimate_misspecification(y, proxy, h, n_bins=2) == pytest.approx(0.7)
    # the same bins as expected_calibration_error(strategy="quantile"): with
    # the proxy as the confidence the one bin's gap is that ECE
    ece = expected_calibration_error(y, h, n_bins=2, strategy="quantile")
    assert estimate_misspecification(y, h, h, n_bins=2) == pytest.approx(ece)
    assert ece == pytest.approx(1 - np.mean(h))
    # weights: an integer weight is a repeated row, on ties too
    w = np.array([2, 1, 1, 1, 3])
    rep = np.repeat(np.arange(5), w)
    assert estimate_misspecification(
        y, proxy, h, n_bins=3, sample_weight=w
    ) == pytest.approx(estimate_misspecification(y[rep], proxy[rep], h[rep], n_bins=3))


def test_estimate_misspecification_weights_and_errors():
    y = np.array([0, 1, 1, 1, 0])
    proxy = np.array([0.5, 0.5, 0.9, 0.7, 0.3])
    h = np.array([0.1, 0.2, 0.8, 0.9, 0.95])
    w = np.array([1, 1, 1, 1, 0])
    assert estimate_misspecification(
        y, proxy, h, n_bins=2, sample_weight=w
    ) == pytest.approx(estimate_misspecification(y[:4], proxy[:4], h[:4], n_bins=2))
    with pytest.raises(ValueError, match="same length"):
        estimate_misspecification(y, proxy[:3], h)
    with pytest.raises(ValueError, match="outside"):
        estimate_misspecification(y, proxy + 1, h)
    with pytest.raises(ValueError, match="n_bins"):
        estimate_misspecification(y, proxy, h, n_bins=0)


def test_estimate_misspecification_of_hsbb_proxies_picks_b():
    X, y = _grouped_data(10, n=12000)
    Xh, yh = _grouped_data(11, n=6000)
    sbb = ScalingBetaBinningCalibrator(
        GroupColumnPartitioner(), points_per_bin=100, random_state=0
    ).fit(X, y)
    nu = estimate_misspecification(yh, sbb.proxy_proba(Xh), Xh[:, 0])
    assert 0 <= nu < 0.1  # well-specified model: only sampling noise
    b = points_per_bin_for_epsilon(0.15, 6000, nu=nu)
    assert b > points_per_bin_for_epsilon(0.15, 6000, nu=0.0)


# ------------------------------------------------------------ real data


@pytest.mark.slow
def test_sbb_real_data_lowers_beta_ce(influences_verb):
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    from sklearn_betacal import BetaBinningCalibrator, UMDBinner
    from sklearn_betacal.metrics import (
        area_under_accuracy_confidence,
        beta_calibration_error,
    )

    # a random 30 % of the verb rows (about 32k) keeps the test at seconds
    rng = np.random.default_rng(0)
    df = influences_verb
    df = df.iloc[rng.permutation(len(df))[: int(0.3 * len(df))]]
    y = df["correct_judge"].to_numpy().astype(int)
    text = df["question"].astype(str).to_numpy()
    h = df["verbal_confidence"].to_numpy(float)
    order = rng.permutation(len(y))
    # 20 % unlabeled rows fit the partition, 60 % calibrate, 20 % test
    part, cal, test = np.split(order, [len(y) // 5, 4 * len(y) // 5])
    tfidf = TfidfVectorizer(min_df=2).fit(text[part])
    svd = TruncatedSVD(8, random_state=0).fit(tfidf.transform(text[part]))
    E = svd.transform(tfidf.transform(text))
    kd = KDTreePartitioner(max_depth=3).fit(E[part])
    X = np.column_stack([h, E])
    groups = kd.apply(E[test])
    scores = {"none": h[test]}
    scores["platt"] = PlattScaler().fit(h[cal], y[cal]).predict_proba(h[test])[:, 1]
    scores["umd"] = (
        UMDBinner(points_per_bin=100, random_state=0)
        .fit(h[cal], y[cal])
        .predict_proba(h[test])[:, 1]
    )
    kw = {"points_per_bin": 100, "random_state": 0}
    scores["bb"] = (
        BetaBinningCalibrator(FrozenEstimator(kd), **kw)
        .fit(X[cal], y[cal])
        .predict_proba(X[test])[:, 1]
    )
    for name, scaler in [("hsbb", "hierarchical"), ("sbb", "pooled")]:
        model = ScalingBetaBinningCalibrator(FrozenEstimator(kd), scaler=scaler, **kw)
        scores[name] = model.fit(X[cal], y[cal]).predict_proba(X[test])[:, 1]
    ce = {
        k: beta_calibration_error(y[test], p, cells=groups) for k, p in scores.items()
    }
    auac = {k: area_under_accuracy_confidence(y[test], p) for k, p in scores.items()}
    print({k: (round(ce[k], 4), round(auac[k], 4)) for k in ce})
    # measured (seed 0, this split, beta-CE / AUAC): none 0.440 / 0.454,
    # platt 0.110 / 0.404, umd 0.047 / 0.358, bb 0.035 / 0.428,
    # hsbb 0.034 / 0.341, sbb 0.048 / 0.304. S-BB (pooled proxies carry no
    # cell information) ties UMD here and is 0.005-0.007 above it on the full
    # verb data, so only HS-BB is required to beat UMD.
    for base in ("none", "platt", "umd"):
        assert ce["hsbb"] < ce[base], ("hsbb", base, ce)
    for base in ("none", "platt"):
        assert ce["sbb"] < ce[base], ("sbb", base, ce)


def test_estimate_misspecification_zero_rows_is_a_clear_error():
    # issue 20, item 7: zero rows raised IndexError from inside NumPy
    with pytest.raises(ValueError, match="at least one labelled hold-out row"):
        estimate_misspecification([], [], [])


# ------------------------------------------------- scaler="features" (issue 21)
def _feature_miscalibrated(seed, n):
    """Confidences whose miscalibration depends on the features: intercept
    ``1.5 z0`` and slope ``exp(0.6 z1)`` on the logit; returns ``X, y, p``."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, 2))
    h = rng.uniform(0.02, 0.98, n)
    p = 1 / (1 + np.exp(-(1.5 * Z[:, 0] + np.exp(0.6 * Z[:, 1]) * np.log(h / (1 - h)))))
    y = (rng.uniform(size=n) < p).astype(int)
    return np.column_stack([h, Z]), y, p


def test_sbb_features_is_boosting_on_d1_then_umd_of_its_output_on_d2():
    """Independent reconstruction with scikit-learn's own gradient boosting
    (started from the hierarchical scaler's logit, Eq. 5)."""
    from scipy.special import expit
    from sklearn.ensemble import HistGradientBoostingClassifier

    from sklearn_betacal._kernels._scaling import data_logit_eps, to_logit
    from sklearn_betacal._scaling_beta_binning import BOOSTING

    X, y, _ = _feature_miscalibrated(0, 3000)
    Xt, _, _ = _feature_miscalibrated(1, 500)
    b, delta, seed = 60, 1e-6, 7
    sbb = ScalingBetaBinningCalibrator(
        FrozenEstimator(GroupColumnPartitioner(2).fit(np.zeros((1, 3)))),
        points_per_bin=b,
        delta=delta,
        scaler="features",
        random_state=seed,
    )
    # one cell: the group column is constant 0 for every row
    sbb.fit(np.column_stack([X, np.zeros(3000)]), y)

    rng = np.random.RandomState(seed)
    perm = rng.permutation(3000)
    d1, d2 = np.sort(perm[:1500]), np.sort(perm[1500:])
    inner = rng.randint(np.iinfo(np.int32).max)
    boost = np.random.RandomState(inner).randint(np.iinfo(np.int32).max)
    # the base score: Eq. 5 on the one cell (tested against lme4 elsewhere)
    base = HierarchicalLogisticScaler(partitioner="precomputed").fit(
        np.column_stack([X[d1, 0], np.zeros(1500)]), y[d1]
    )

    def q(A):
        return base.predict_proba(np.column_stack([A[:, 0], np.zeros(len(A))]))[:, 1]

    eps = data_logit_eps(q(X[d1]), np.ones(1500))

    def F(A):
        return np.column_stack([to_logit(q(A), eps), A[:, 1:3], np.zeros(len(A))])

    hgb = HistGradientBoostingClassifier(
        monotonic_cst=[1, 0, 0, 0], random_state=boost, **BOOSTING
    ).fit(F(X[d1]), y[d1])
    proxy = expit(hgb.decision_function(F(X[d2])))
    table = umd_fit(tie_break(proxy, delta, rng), proxy, None, 1500 // b, delta=delta)
    expected = umd_predict(table, expit(hgb.decision_function(F(Xt))))
    Xt1 = np.column_stack([Xt, np.zeros(500)])
    assert_array_equal(sbb.predict_proba(Xt1)[:, 1], expected)
    assert_array_equal(sbb.proxy_proba(Xt1), expit(hgb.decision_function(F(Xt))))
    assert len(sbb.scaler_["trees"]) == hgb.n_iter_ > 1


def test_sbb_features_keeps_resolution_where_the_pooled_scaler_loses_it():
    """Miscalibration that depends on the features: binning h with pooled
    Platt proxies cannot rank rows better than h; binning the feature-aware
    scaler's output keeps its AUROC and Brier resolution."""
    from sklearn.metrics import brier_score_loss, roc_auc_score

    from sklearn_betacal.metrics import brier_decomposition

    X, y, _ = _feature_miscalibrated(0, 8000)
    Xt, yt, pt = _feature_miscalibrated(1, 20000)
    kd = KDTreePartitioner(max_depth=2)
    fit = {
        s: ScalingBetaBinningCalibrator(
            kd, scaler=s, points_per_bin=50, random_state=0
        ).fit(X, y)
        for s in ("pooled", "hierarchical", "features")
    }
    f = {s: m.predict_proba(Xt)[:, 1] for s, m in fit.items()}
    auc = {s: roc_auc_score(yt, v) for s, v in f.items()}
    assert auc["features"] > auc["pooled"] + 0.05, auc
    # the hierarchical scaler sees the cells, not the features within them
    assert auc["features"] > auc["hierarchical"] + 0.01, auc
    brier = {s: brier_score_loss(yt, v) for s, v in f.items()}
    assert brier["features"] < brier["pooled"] - 0.01, brier

    def resolution(v):
        m = yt.mean()
        return m * (1 - m) - brier_decomposition(yt, v, n_bins=20).refinement

    alone = fit["features"].proxy_proba(Xt)
    # what the binning costs in refinement: under a tenth of what it keeps
    kept, before = resolution(f["features"]), resolution(alone)
    assert before - kept < 0.1 * kept, (before, kept)
    assert kept > resolution(f["pooled"]) + 0.02


def test_sbb_features_bound_holds_in_every_cell():
    """Thm 3.1 per cell: in every cell with its own binning, each predicted
    level is within the cell's epsilon_ of the true accuracy of its rows
    (true probabilities known: no label noise in the check)."""
    X, y, _ = _feature_miscalibrated(0, 12000)
    Xt, _, pt = _feature_miscalibrated(1, 200000)
    sbb = ScalingBetaBinningCalibrator(
        KDTreePartitioner(max_depth=2),
        scaler="features",
        points_per_bin=200,
        random_state=0,
    ).fit(X, y)
    assert sbb.n_cells_fitted_ == 4 and sbb.n_cells_fallback_ == 0
    f = sbb.predict_proba(Xt)[:, 1]
    cells = sbb.apply(Xt)
    worst = []
    for cell, eps in zip(sbb.cells_, sbb.epsilon_, strict=True):
        rows = cells == cell
        levels, inv = np.unique(f[rows], return_inverse=True)
        gap = np.abs(np.bincount(inv, weights=pt[rows]) / np.bincount(inv) - levels)
        worst.append(gap.max() / eps)
    assert 0.05 < max(worst) <= 1.0, worst


def test_sbb_features_needs_numeric_finite_features_and_handles_one_class():
    X, y, _ = _feature_miscalibrated(0, 400)
    # a group column of names is read as its cell id (the groups in sorted
    # order): the same model as the group coded 0 / 1 by hand
    names = np.where(X[:, 1] > 0, "a", "b")
    Xs = np.column_stack([X[:, 0], names]).astype(object)
    Xn = np.column_stack([X[:, 0], (names == "b").astype(float)])

    def sbb():
        return ScalingBetaBinningCalibrator(
            GroupColumnPartitioner(),
            scaler="features",
            points_per_bin=20,
            random_state=0,
        )

    by_name, by_code = sbb().fit(Xs, y), sbb().fit(Xn, y)
    assert by_name.scaler_["n_features"] == 1
    assert_array_equal(by_name.predict_proba(Xs), by_code.predict_proba(Xn))
    # another column the partitioner passes on that is not a number: refused
    Xt = np.column_stack([Xs, np.where(X[:, 2] > 0, "x", "y")]).astype(object)
    with pytest.raises(ValueError, match="must be numeric.*TextEmbedder"):
        sbb().fit(Xt, y)
    # one class in D1: the boosting is Laplace's constant, no trees (the
    # hierarchical base scaler warns that one class is separable)
    one = ScalingBetaBinningCalibrator(
        KDTreePartitioner(max_depth=1),
        scaler="features",
        points_per_bin=20,
        random_state=0,
    )
    with pytest.warns(ConvergenceWarning, match="one class only"):
        one.fit(X, np.ones(400, dtype=int))
    assert one.scaler_["trees"] == []
    assert_allclose(one.proxy_proba(X[:3]), 201 / 202)


def test_sbb_features_boosting_that_ignores_the_confidence_passes_q_through():
    """On 200 rows (a D1 of 100) the boosting's leaf minimum allows no split:
    its output was one constant for every row, silently. Now the hierarchical
    scaler's probabilities take its place, with a warning, and the fitted
    state survives a model-file round trip."""
    import pickle

    rng = np.random.default_rng(0)
    n = 200
    h = rng.uniform(0.05, 0.95, n)
    g = rng.integers(0, 3, n)
    y = (rng.uniform(size=n) < h).astype(int)
    X = np.column_stack([h, g])
    sbb = ScalingBetaBinningCalibrator(
        GroupColumnPartitioner(0), points_per_bin=10, scaler="features", random_state=0
    )
    with pytest.warns(UserWarning, match="no split on the confidence"):
        sbb.fit(X, y)
    assert sbb.scaler_["passthrough"] and sbb.scaler_["trees"] == []
    base = sbb.scaler_["hierarchical"]
    q = base.predict_proba(np.column_stack([h, sbb.apply(X)]))[:, 1]
    assert_allclose(sbb.proxy_proba(X), q, rtol=0, atol=0)
    p = sbb.predict_proba(X)[:, 1]
    assert np.unique(p).size > 5  # before: one value
    assert np.corrcoef(p, h)[0, 1] > 0.5
    again = pickle.loads(pickle.dumps(sbb))
    assert_array_equal(again.predict_proba(X), sbb.predict_proba(X))
    # a state that passes q through holds no trees
    state = sbb.__getstate__()
    fake_tree = {
        "feature": np.array([-1]),
        "threshold": np.array([np.nan]),
        "children_left": np.array([-1]),
        "children_right": np.array([-1]),
        "cell": np.array([0]),
        "depth": np.array([0]),
        "value": np.array([0.0]),
    }
    damaged = {**state, "scaler_": {**state["scaler_"], "trees": [fake_tree]}}
    with pytest.raises(ValueError, match="passes q through but holds trees"):
        ScalingBetaBinningCalibrator().__setstate__(damaged)


def test_sbb_features_damaged_state_is_refused():
    X, y, _ = _feature_miscalibrated(0, 2000)
    sbb = ScalingBetaBinningCalibrator(
        KDTreePartitioner(max_depth=1), scaler="features", random_state=0
    ).fit(X, y)
    state = sbb.__getstate__()
    tree = state["scaler_"]["trees"][0]
    inner = np.flatnonzero(tree["children_left"] >= 0)[0]
    bad = {**tree, "children_left": tree["children_left"].copy()}
    bad["children_left"][inner] = 0  # back to the root: a walk that never ends
    damaged = {**state, "scaler_": {**state["scaler_"], "trees": [bad]}}
    with pytest.raises(ValueError, match="damaged fitted state"):
        ScalingBetaBinningCalibrator().__setstate__(damaged)
    short = {**tree, "value": tree["value"][:-1]}
    damaged = {**state, "scaler_": {**state["scaler_"], "trees": [short]}}
    with pytest.raises(ValueError, match="value"):
        ScalingBetaBinningCalibrator().__setstate__(damaged)
    # the intact state loads and predicts the same
    copy = ScalingBetaBinningCalibrator()
    copy.__setstate__(sbb.__getstate__())
    assert_array_equal(copy.predict_proba(X), sbb.predict_proba(X))


def test_sbb_features_reads_dataframes_by_column_name():
    pd = pytest.importorskip("pandas")
    X, y, _ = _feature_miscalibrated(0, 2000)
    frame = pd.DataFrame({"z0": X[:, 1], "conf": X[:, 0], "z1": X[:, 2]})
    kw = {"partitioner": KDTreePartitioner(max_depth=1), "scaler": "features"}
    by_name = ScalingBetaBinningCalibrator(
        confidence_column="conf", random_state=0, **kw
    ).fit(frame, y)
    by_position = ScalingBetaBinningCalibrator(
        confidence_column=1, random_state=0, **kw
    ).fit(frame.to_numpy(), y)
    assert_array_equal(
        by_name.predict_proba(frame), by_position.predict_proba(frame.to_numpy())
    )


def test_sbb_features_small_d1_boosts_a_few_rounds_without_early_stopping():
    from sklearn_betacal._scaling_beta_binning import BOOSTING_FEW_ROUNDS

    # a rare class: under 20 positive rows in a D1 of ~600
    rng = np.random.default_rng(1)
    h = rng.uniform(0.001, 0.2, 1200)
    X = np.column_stack([h, rng.normal(size=1200)])
    y = (rng.uniform(size=1200) < 0.3 * h).astype(int)
    sbb = ScalingBetaBinningCalibrator(
        KDTreePartitioner(max_depth=1),
        scaler="features",
        points_per_bin=10,
        random_state=0,
    ).fit(X, y)
    assert np.bincount(y[sbb.scaling_indices_]).min() < 20
    assert not sbb.scaler_["passthrough"]
    assert len(sbb.scaler_["trees"]) == BOOSTING_FEW_ROUNDS
    # 60 rows (a D1 of 30): its few rounds cannot split (leaf minimum 50),
    # which before gave one constant; now the hierarchical scaler's q
    X, y, _ = _feature_miscalibrated(0, 60)
    with pytest.warns(UserWarning, match="no split on the confidence"):
        tiny = clone(sbb).fit(X, y)
    assert tiny.scaler_["passthrough"]


# ------------------------------------------- cv=k: cross-fitting (issue 21, 4)
def test_sbb_cv_members_are_one_split_fits_on_the_folds():
    """cv=k: fold j is binned by a scaler fitted on the other folds; every
    row is binned once; the prediction is the members' mean."""
    X, y, _ = _feature_miscalibrated(0, 3000)
    Xt, _, _ = _feature_miscalibrated(1, 500)
    for scaler in ("hierarchical", "features"):
        sbb = ScalingBetaBinningCalibrator(
            KDTreePartitioner(max_depth=2), scaler=scaler, cv=3, random_state=0
        ).fit(X, y)
        assert len(sbb.estimators_) == 3
        assert not hasattr(sbb, "binning_indices_")
        binned = np.concatenate([m.binning_indices_ for m in sbb.estimators_])
        assert_array_equal(np.sort(binned), np.arange(3000))
        for m in sbb.estimators_:
            assert m.cv is None and m.partitioner_ is sbb.partitioner_
            assert_array_equal(
                np.union1d(m.scaling_indices_, m.binning_indices_), np.arange(3000)
            )
            assert np.intersect1d(m.scaling_indices_, m.binning_indices_).size == 0
            assert np.all(np.isfinite(m.epsilon_))
        mean = np.mean([m.predict_proba(Xt) for m in sbb.estimators_], axis=0)
        assert_allclose(sbb.predict_proba(Xt), mean, rtol=0, atol=1e-15)
        assert_array_equal(sbb.predict(Xt), np.where(mean[:, 1] > 0.5, 1, 0))
        proxy = np.mean([m.proxy_proba(Xt) for m in sbb.estimators_], axis=0)
        assert_allclose(sbb.proxy_proba(Xt), proxy, rtol=0, atol=1e-15)
        assert sbb.nu_ == max(m.nu_ for m in sbb.estimators_)


def test_sbb_cv_member_is_the_one_split_fit_of_its_fold():
    """A member equals a one-split fit on its own rows: the scaler (the
    pooled fit: Platt scaling of h as a score, as in the one-split test) on
    the other folds and the UMD binning of h on the fold with its proxies,
    drawn from one random stream (the folds, then each member's nudges)."""
    X, y = _grouped_data(0, n=2000)
    X[:, 1] = 0  # a single cell
    b, delta, seed = 40, 1e-6, 3
    sbb = ScalingBetaBinningCalibrator(
        GroupColumnPartitioner(),
        scaler="pooled",
        cv=2,
        points_per_bin=b,
        delta=delta,
        random_state=seed,
    ).fit(X, y)
    rng = np.random.RandomState(seed)
    folds = np.array_split(rng.permutation(2000), 2)
    ht = np.linspace(0, 1, 101)
    Xt = np.column_stack([ht, np.zeros(101)])
    expected = []
    for j, member in enumerate(sbb.estimators_):
        d2 = np.sort(folds[j])
        d1 = np.sort(folds[1 - j])
        assert_array_equal(member.binning_indices_, d2)
        platt = PlattScaler(input="logit").fit(X[d1, 0], y[d1])
        proxy = platt.predict_proba(X[d2, 0])[:, 1]
        table = umd_fit(
            tie_break(X[d2, 0], delta, rng), proxy, None, len(d2) // b, delta=delta
        )
        expected.append(umd_predict(table, ht))
    got = sbb.predict_proba(Xt)[:, 1]
    assert_allclose(got, (expected[0] + expected[1]) / 2, rtol=0, atol=0)


def test_sbb_cv_is_deterministic_and_refits_cleanly():
    X, y, _ = _feature_miscalibrated(0, 2000)
    kw = {"partitioner": KDTreePartitioner(max_depth=1), "scaler": "features"}
    a = ScalingBetaBinningCalibrator(cv=2, random_state=5, **kw).fit(X, y)
    b = ScalingBetaBinningCalibrator(cv=2, random_state=5, **kw).fit(X, y)
    assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    one = ScalingBetaBinningCalibrator(random_state=5, **kw).fit(X, y)
    # refitting switches the mode and leaves no state of the other behind
    a.set_params(cv=None).fit(X, y)
    assert not hasattr(a, "estimators_")
    assert_array_equal(a.predict_proba(X), one.predict_proba(X))
    a.set_params(cv=2).fit(X, y)
    assert not hasattr(a, "scaler_") and not hasattr(a, "binning_indices_")
    assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_sbb_cv_rejects_bad_values_and_too_few_rows():
    X, y, _ = _feature_miscalibrated(0, 200)
    with pytest.raises(ValueError, match="cv"):
        ScalingBetaBinningCalibrator(cv=1).fit(X, y)
    with pytest.raises(ValueError, match=r"cv=5\) needs at least two rows per fold"):
        ScalingBetaBinningCalibrator(
            GroupColumnPartitioner(), cv=5, points_per_bin=2
        ).fit(X[:9, :2].round(), y[:9])


def test_sbb_cv_auto_points_per_bin_is_resolved_on_each_fold():
    """points_per_bin="auto" with cv: Thm 3.1 inverted on each member's own
    fold (N = its rows), and the fit plan lends the lightest fold's b."""
    X, y, _ = _feature_miscalibrated(0, 3001)
    auto = {"points_per_bin": "auto", "epsilon": 0.2, "nu": 0.0, "random_state": 0}
    sbb = ScalingBetaBinningCalibrator(KDTreePartitioner(max_depth=1), cv=3, **auto)
    sbb.fit(X, y)
    sizes = [m.binning_indices_.shape[0] for m in sbb.estimators_]
    assert sorted(sizes) == [1000, 1000, 1001]
    for m, n2 in zip(sbb.estimators_, sizes, strict=True):
        assert m.points_per_bin_ == points_per_bin_for_epsilon(0.2, n2, alpha=0.1)
    assert sbb._planned_points_per_bin(3001, None) == points_per_bin_for_epsilon(
        0.2, 1000, alpha=0.1
    )


def _span(v):
    return str(v[0]) if min(v) == max(v) else f"{min(v)} to {max(v)}"


def test_sbb_cv_warns_of_small_cells_once_with_the_folds_ranges():
    """cv=k: the folds' small-cell warnings come as one, whose figures are
    the ranges of the members' own counts (a user reads one message, not k
    near-copies)."""
    X, y = _grouped_data(0, n=1200, n_groups=8)
    # cells 6 and 7 small: about 15 rows each per fold of 400
    X[:, 1] = np.where(X[:, 1] >= 6, 6 + (X[:, 1] == 7), X[:, 1])
    keep = (X[:, 1] < 6) | (np.arange(1200) % 4 == 0)
    X, y = X[keep], y[keep]
    with pytest.warns(UserWarning) as record:
        sbb = ScalingBetaBinningCalibrator(
            GroupColumnPartitioner(),
            scaler="pooled",
            cv=3,
            points_per_bin=30,
            random_state=0,
        ).fit(X, y)
    msgs = [str(r.message) for r in record if "fewer than b=" in str(r.message)]
    assert len(msgs) == 1, msgs
    (msg,) = msgs
    rows = [
        int(np.isin(X[m.binning_indices_, 1], m.fallback_cells_).sum())
        for m in sbb.estimators_
    ]
    n_small = [m.fallback_cells_.shape[0] for m in sbb.estimators_]
    assert min(n_small) > 0
    assert msg.startswith(
        "ScalingBetaBinningCalibrator(cv=3): in 3 of the 3 cross-fitted folds, "
        f"{_span(rows)} calibration rows in {_span(n_small)} of 8 cells"
    ), msg
    assert f"{_span(rows)} rows in {_span(n_small)} cells the root binning" in msg
    assert "epsilon_ of each of estimators_" in msg
    # the members keep no trace of the deferral
    assert all(not hasattr(m, "_fallback_counts") for m in sbb.estimators_)


def _text_rows(seed, n):
    """Questions of two topics whose confidences are miscalibrated
    differently (over-confident on "river" questions)."""
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, 2, n)
    words = np.array([["river", "lake", "delta"], ["opera", "violin", "sonata"]])
    text = [
        " ".join(rng.choice(words[t], 3)) + f" q{rng.integers(0, 40)}" for t in topic
    ]
    h = rng.uniform(0.05, 0.95, n)
    logit = np.log(h / (1 - h))
    p = 1 / (1 + np.exp(-np.where(topic == 0, 0.4 * logit - 0.8, 1.3 * logit)))
    y = (rng.uniform(size=n) < p).astype(int)
    return text, h, y


def test_sbb_features_boosts_on_the_embedding_of_a_text_pipeline():
    """With make_pipeline(TextEmbedder, partitioner) the boosting reads the
    embedding (the last step's input), never the raw text: the model is bit
    for bit the one fitted on the embedding's columns with the same
    partitioner, and its boosting has one feature per embedding dimension."""
    import pandas as pd
    from sklearn.pipeline import make_pipeline

    from sklearn_betacal import TextEmbedder

    text, h, y = _text_rows(0, 1500)
    X = pd.DataFrame({"confidence": h, "question": text})
    emb = TextEmbedder("question", n_components=3, random_state=0).fit(X[["question"]])
    E = emb.transform(X[["question"]])

    def sbb(part, **kw):
        return ScalingBetaBinningCalibrator(
            part,
            scaler="features",
            points_per_bin=30,
            confidence_column=kw.pop("confidence_column", 0),
            random_state=0,
            **kw,
        )

    for cv in (None, 2):
        text_model = sbb(
            make_pipeline(FrozenEstimator(emb), KDTreePartitioner(max_depth=1)),
            confidence_column="confidence",
            cv=cv,
        ).fit(X, y)
        numeric = sbb(KDTreePartitioner(max_depth=1), cv=cv).fit(
            np.column_stack([h, E]), y
        )
        member = text_model if cv is None else text_model.estimators_[0]
        assert member.scaler_["n_features"] == 3
        assert member.scaler_["view"] == "partition"
        assert_array_equal(
            text_model.predict_proba(X), numeric.predict_proba(np.column_stack([h, E]))
        )
        assert_array_equal(
            text_model.proxy_proba(X), numeric.proxy_proba(np.column_stack([h, E]))
        )


def test_sbb_features_cross_of_group_names_and_text_reads_both_views():
    """A CrossPartitioner of a group column of names and a text pipeline:
    the boosting reads the group's cell id and the embedding, side by side."""
    import pandas as pd
    from sklearn.pipeline import make_pipeline

    from sklearn_betacal import CrossPartitioner, TextEmbedder
    from sklearn_betacal._cells import partition_view

    text, h, y = _text_rows(1, 1200)
    model = np.where(np.arange(1200) % 3 == 0, "gpt", "llama")
    X = pd.DataFrame({"confidence": h, "model": model, "question": text})
    cross = CrossPartitioner(
        [
            ("model", GroupColumnPartitioner("model"), ["model"]),
            (
                "text",
                make_pipeline(
                    TextEmbedder("question", n_components=2, random_state=0),
                    KDTreePartitioner(max_depth=1),
                ),
                ["question"],
            ),
        ]
    )
    sbb = ScalingBetaBinningCalibrator(
        cross,
        scaler="features",
        points_per_bin=30,
        confidence_column="confidence",
        random_state=0,
    ).fit(X, y)
    assert sbb.scaler_["n_features"] == 3
    view = partition_view(sbb.partitioner_, X[["model", "question"]])
    embed = sbb.partitioner_.partitioners_[1][1][0]
    assert_array_equal(view[:, 0], (model == "llama").astype(float))
    assert_array_equal(view[:, 1:], embed.transform(X[["question"]]))
    p = sbb.predict_proba(X)[:, 1]
    assert np.all(np.isfinite(p)) and np.ptp(p) > 0
