# SPDX-License-Identifier: MIT
"""AbstentionGate and its kernel: the certified answer/abstain threshold."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import binom

from sklearn_betacal import (
    AbstentionGate,
    BetaBinningCalibrator,
    GroupColumnPartitioner,
    PlattScaler,
    UMDBinner,
)
from sklearn_betacal._kernels._selective import (
    binomial_pvalue,
    binomial_upper_bound,
    fixed_sequence_threshold,
    quantile_grid,
)
from sklearn_betacal.metrics import risk_coverage_curve


# ------------------------------------------------------------------ kernel
def test_binomial_pvalue_is_the_binomial_cdf_and_one_without_answers():
    k = np.array([0, 3, 10, 0])
    n = np.array([29, 50, 50, 0])
    expected = [
        sum(binom.pmf(i, m, 0.1) for i in range(j + 1))
        for j, m in zip(k, n, strict=True)
    ]
    expected[-1] = 1.0
    assert_allclose(binomial_pvalue(k, n, 0.1), expected, rtol=1e-12)
    # 29 right answers certify 10 % at delta = 0.05, 28 do not
    assert binomial_pvalue(0, 29, 0.1) < 0.05 < binomial_pvalue(0, 28, 0.1)


@pytest.mark.parametrize("k,n", [(0, 29), (3, 100), (7, 100), (50, 400), (5, 5)])
def test_clopper_pearson_bound_is_dual_to_the_pvalue(k, n):
    delta = 0.05
    bound = float(binomial_upper_bound(k, n, delta))
    if k == n:
        assert bound == 1.0
        return
    # the bound is the rate at which the p-value equals delta
    assert_allclose(binom.cdf(k, n, bound), delta, rtol=1e-9)
    for alpha in (bound * 0.999, bound * 1.001):
        assert (binomial_pvalue(k, n, alpha) <= delta) == (alpha >= bound)


def test_fixed_sequence_stops_at_the_first_threshold_not_rejected():
    # thresholds 0.9, 0.8, 0.7, 0.6: 100 rows each band; errors 0, 2, 40, 0
    p = np.repeat([0.95, 0.85, 0.75, 0.65], 100)
    err = np.zeros(400)
    err[100:102] = 1
    err[200:240] = 1
    grid = np.array([0.9, 0.8, 0.7, 0.6])
    j, n_ans, n_err, pv = fixed_sequence_threshold(p, err, None, grid, 0.1, 0.05)
    assert_array_equal(n_ans, [100, 200, 300, 400])
    assert_array_equal(n_err, [0, 2, 42, 42])
    # at 0.6 the risk 42/400 alone would not be certified either, but the
    # sequence stops at 0.7 whatever comes later
    assert j == 1
    assert pv[0] <= 0.05 and pv[1] <= 0.05 and pv[2] > 0.05
    # the first hypothesis not rejected: nothing certified
    j, *_ = fixed_sequence_threshold(p, 1 - err, None, grid, 0.1, 0.05)
    assert j == -1


def test_quantile_grid_is_decreasing_and_reaches_full_coverage():
    q = np.linspace(0, 1, 101)
    grid = quantile_grid(q, 10)
    assert np.all(np.diff(grid) < 0)
    assert grid[-1] == 0.0  # coverage 1: every row answered
    assert_allclose([np.mean(q >= t) for t in grid], np.arange(1, 11) / 10, atol=0.011)


# ------------------------------------------------------------------- data
def _log(n, seed, bad=0.0, bad_share=0.5):
    """Confidence h ~ Beta(4, 1) (mostly confident, as LLM logs), two groups;
    group 0 is calibrated
    (P(correct) = h), group 1 (a share ``bad_share`` of the rows)
    overconfident: P(correct) = (h - bad) / (1 - bad), clipped at 0."""
    rng = np.random.default_rng(seed)
    h = rng.beta(4.0, 1.0, size=n)
    g = (rng.uniform(size=n) < bad_share).astype(int)
    truth = np.where(g == 1, np.clip((h - bad) / (1 - bad), 0.0, 1.0), h)
    y = (rng.uniform(size=n) < truth).astype(int)
    return h, g, y, truth


def _fresh_error(gate, X, truth, mask=None):
    """Expected error rate of the answered rows of a large fresh sample."""
    ans = gate.predict(X)
    if mask is not None:
        ans = ans & mask
    return float(np.mean(1.0 - truth[ans])) if ans.any() else 0.0


# --------------------------------------------------------------- behaviour
def test_abstention_gate_certifies_a_bound_below_max_error():
    h, _, y, _ = _log(6000, 0)
    gate = AbstentionGate(UMDBinner(n_bins=20), max_error=0.1, random_state=0)
    gate.fit(h, y)
    assert gate.certified_.all()
    assert gate.risk_bounds_[0] <= 0.1
    assert gate.n_certify_[0] == 3000  # certify_size=0.5
    assert gate.coverage_[0] == gate.n_answered_[0] / gate.n_certify_[0]
    # reported counts are the certification rows' own: recompute them
    answer = gate.predict(h)
    p = gate.predict_proba(h)[:, 1]
    assert_array_equal(answer, p >= gate.thresholds_[0])
    assert_array_equal(gate.decision_function(h) >= 0, answer)
    reasons = gate.abstain_reason(h)
    assert set(reasons[answer]) == {""}
    assert set(reasons[~answer]) == {"below threshold"}
    # the probabilities are the calibrator's, passed through
    assert_array_equal(gate.predict_proba(h), gate.calibrator_.predict_proba(h))


def test_abstention_gate_is_deterministic_given_random_state():
    h, g, y, _ = _log(3000, 1)
    X = np.column_stack([h, g])
    cal = BetaBinningCalibrator(GroupColumnPartitioner(), points_per_bin=50)
    a = AbstentionGate(cal, per_cell=True, random_state=3).fit(X, y)
    b = AbstentionGate(cal, per_cell=True, random_state=3).fit(X, y)
    for name in ("thresholds_", "risk_bounds_", "coverage_", "n_answered_"):
        assert getattr(a, name).tobytes() == getattr(b, name).tobytes()
    c = AbstentionGate(cal, per_cell=True, random_state=4).fit(X, y)
    assert not np.array_equal(a.n_answered_, c.n_answered_)


def test_abstention_gate_keeps_question_groups_on_one_side():
    h, _, y, _ = _log(2000, 2)
    questions = np.arange(2000) // 5  # 5 answers per question
    fitted_on = {}

    class Recording(UMDBinner):
        def fit(self, X, y, sample_weight=None):
            fitted_on["h"] = np.asarray(X)
            return super().fit(X, y, sample_weight)

    gate = AbstentionGate(Recording(n_bins=10), random_state=0)
    gate.fit(h, y, groups=questions)
    fit_q = np.unique(questions[np.isin(h, fitted_on["h"])])
    assert gate.n_certify_[0] + fitted_on["h"].shape[0] == 2000
    # every question's 5 rows went to the same side
    certify_q = np.setdiff1d(questions, fit_q)
    assert np.isin(questions, fit_q).sum() == 5 * fit_q.size
    assert gate.n_certify_[0] == 5 * certify_q.size


def test_abstention_gate_zero_weight_is_drop():
    h, _, y, _ = _log(3000, 3)
    w = np.ones(3000)
    w[::7] = 0
    keep = w > 0
    cal = UMDBinner(n_bins=10, delta=0.0)
    a = AbstentionGate(cal, random_state=0).fit(h, y, sample_weight=w)
    b = AbstentionGate(cal, random_state=0).fit(h[keep], y[keep])
    for name in ("thresholds_", "risk_bounds_", "coverage_", "n_certify_"):
        assert_array_equal(getattr(a, name), getattr(b, name))


def test_abstention_gate_refuses_fractional_weights_and_partitionless_per_cell():
    h, _, y, _ = _log(500, 4)
    with pytest.raises(ValueError, match="integer frequency weights"):
        AbstentionGate().fit(h, y, sample_weight=np.full(500, 0.5))
    with pytest.raises(ValueError, match="per_cell=True needs a calibrator"):
        AbstentionGate(PlattScaler(), per_cell=True).fit(h, y)


def test_abstention_gate_frozen_calibrator_with_fixed_grid_certifies_every_row():
    from sklearn.frozen import FrozenEstimator

    h, _, y, _ = _log(4000, 5)
    cal = UMDBinner(n_bins=20).fit(h[:1000], y[:1000])
    grid = np.linspace(0.5, 0.9, 41)  # tested from 0.9 down
    gate = AbstentionGate(FrozenEstimator(cal), thresholds=grid).fit(h[1000:], y[1000:])
    assert gate.calibrator_.estimator is cal
    assert gate.n_certify_[0] == 3000
    assert gate.thresholds_[0] in grid


def test_abstention_gate_uncertifiable_cell_warns_and_always_abstains():
    # group 1 is right 30 % of the time whatever its confidence
    rng = np.random.default_rng(6)
    n = 6000
    h = rng.uniform(size=n)
    g = rng.integers(0, 2, size=n)
    y = np.where(g == 0, rng.uniform(size=n) < h, rng.uniform(size=n) < 0.3)
    X = np.column_stack([h, g])
    cal = BetaBinningCalibrator(GroupColumnPartitioner(), points_per_bin=100)
    with pytest.warns(UserWarning, match=r"no threshold could be certified in cell"):
        gate = AbstentionGate(cal, per_cell=True, random_state=0).fit(X, y)
    assert_array_equal(gate.cells_, [0, 1])
    assert_array_equal(gate.certified_, [True, False])
    assert np.isinf(gate.thresholds_[1]) and np.isnan(gate.risk_bounds_[1])
    assert not gate.predict(X[g == 1]).any()
    assert set(gate.abstain_reason(X[g == 1])) == {"uncertifiable cell"}
    # a cell the certification never saw abstains for the same reason
    unseen = np.array([[0.99, 7.0]])
    assert gate.abstain_reason(unseen).tolist() == ["uncertifiable cell"]
    assert gate.decision_function(unseen)[0] == -np.inf


def test_abstention_gate_per_cell_keeps_the_bad_group_below_max_error():
    # group 1 is far overconfident; the global gate on a global calibrator
    # answers it at the same threshold, the per-cell gate certifies each
    alpha = 0.1
    h, g, y, _ = _log(30_000, 7, bad=0.5, bad_share=0.2)
    hf, gf, _, truth = _log(200_000, 8, bad=0.5, bad_share=0.2)
    X, Xf = np.column_stack([h, g]), np.column_stack([hf, gf])
    glob = AbstentionGate(UMDBinner(n_bins=30), max_error=alpha, random_state=0)
    glob.fit(h, y)
    per = AbstentionGate(
        BetaBinningCalibrator(GroupColumnPartitioner(), points_per_bin=200),
        max_error=alpha,
        per_cell=True,
        random_state=0,
    ).fit(X, y)
    assert per.certified_.all()
    bad_global = _fresh_error(glob, hf, truth, gf == 1)
    assert bad_global > 1.3 * alpha
    for cell in (0, 1):
        assert _fresh_error(per, Xf, truth, gf == cell) <= alpha
    # and it still answers in the bad group
    assert per.predict(Xf[gf == 1]).mean() > 0.05


def _naive_threshold(p, y):
    """The largest-coverage threshold whose empirical risk is <= alpha."""
    coverage, risk, t = risk_coverage_curve(y, p)
    ok = np.flatnonzero(risk <= 0.1)
    return t[ok[-1]] if ok.size else np.inf


@pytest.mark.slow
def test_abstention_gate_is_valid_by_simulation_and_the_naive_threshold_is_not():
    # known truth: P(correct | h, g) = clip(h - shift[g]); the realised error
    # of the answers is their expected error over a large fresh sample
    alpha, delta, reps = 0.1, 0.1, 60
    hf, gf, _, truth = _log(100_000, 10**6, bad=0.3, bad_share=0.3)
    Xf = np.column_stack([hf, gf])
    viol = {"global": 0, "per_cell": 0, "naive": 0}
    for r in range(reps):
        h, g, y, _ = _log(4000, r, bad=0.3, bad_share=0.3)
        X = np.column_stack([h, g])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            glob = AbstentionGate(
                UMDBinner(n_bins=20), max_error=alpha, delta=delta, random_state=r
            ).fit(h, y)
            per = AbstentionGate(
                BetaBinningCalibrator(GroupColumnPartitioner(), points_per_bin=100),
                max_error=alpha,
                delta=delta,
                per_cell=True,
                random_state=r,
            ).fit(X, y)
        viol["global"] += _fresh_error(glob, hf, truth) > alpha
        viol["per_cell"] += any(
            _fresh_error(per, Xf, truth, gf == c) > alpha for c in (0, 1)
        )
        # the naive threshold: a calibrator fitted on one half, the threshold
        # read off the risk-coverage curve of the other half
        cal = UMDBinner(n_bins=20).fit(h[:2000], y[:2000])
        t = _naive_threshold(cal.predict_proba(h[2000:])[:, 1], y[2000:])
        ans = cal.predict_proba(hf)[:, 1] >= t
        viol["naive"] += float(np.mean(1.0 - truth[ans])) > alpha
    rate = {k: v / reps for k, v in viol.items()}
    se = np.sqrt(delta * (1 - delta) / reps)
    assert rate["global"] <= delta + 2 * se, rate
    assert rate["per_cell"] <= delta + 2 * se, rate
    assert rate["naive"] >= 0.25, rate


def _fitted_gate():
    h, g, y, _ = _log(4000, 11, bad=0.3, bad_share=0.3)
    X = np.column_stack([h, g])
    cal = BetaBinningCalibrator(GroupColumnPartitioner(), points_per_bin=100)
    return AbstentionGate(cal, per_cell=True, random_state=0).fit(X, y), X


def test_abstention_gate_model_file_roundtrip(tmp_path):
    pytest.importorskip("skops")
    from sklearn_betacal.io import dump, load

    gate, X = _fitted_gate()
    path = tmp_path / "gate.skops"
    dump(gate, path)
    loaded = load(path)
    assert_array_equal(loaded.predict(X), gate.predict(X))
    assert_array_equal(loaded.abstain_reason(X), gate.abstain_reason(X))
    assert_array_equal(loaded.thresholds_, gate.thresholds_)


@pytest.mark.parametrize(
    "name,value,match",
    [
        ("thresholds_", np.array([np.nan, 0.5]), "certified_ does not mark"),
        ("thresholds_", np.array([1.5, 0.5]), r"outside \[0, 1\]"),
        ("cells_", np.array([1, 0]), "sorted and unique"),
        ("cells_", np.array([0]), "cells_ has shape"),
        ("n_errors_", np.array([1e9, 0.0]), "counts are not"),
        ("coverage_", np.array([2.0, 0.1]), "coverage_"),
        ("delta_per_cell_", 1.5, "delta_per_cell_"),
        ("certified_", np.array([1, 1]), "boolean"),
    ],
)
def test_abstention_gate_refuses_damaged_state(name, value, match):
    import pickle

    gate, _ = _fitted_gate()
    state = dict(gate.__getstate__())  # a copy: the gate stays intact
    state[name] = value
    if name == "thresholds_" and np.isfinite(value).all():
        state["certified_"] = np.isfinite(value)
    clone = AbstentionGate.__new__(AbstentionGate)
    with pytest.raises(ValueError, match=match):
        clone.__setstate__(state)
    # the intact state loads
    pickle.loads(pickle.dumps(gate)).predict(_fitted_gate()[1])


# ----------------------------------------------------------------- display
def test_abstention_display_marks_each_cell_at_the_gate_operating_point():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from sklearn_betacal import AbstentionDisplay

    gate, X = _fitted_gate()
    h, g, y, _ = _log(4000, 11, bad=0.3, bad_share=0.3)
    disp = AbstentionDisplay.from_estimator(gate, X, y)
    assert sorted(disp.lines_) == ["0", "1"]
    answer = gate.predict(X)
    assert gate.certified_[0]
    for cell in (0, 1):
        rows = g == cell
        if not gate.certified_[cell]:
            assert str(cell) not in disp.markers_
            continue
        cov, risk = disp.markers_[str(cell)].get_data()
        assert cov[0] == pytest.approx(answer[rows].mean())
        assert risk[0] == pytest.approx(1 - y[rows][answer[rows]].mean())
        # the bound lies above the curve it bounds
        curve = disp.curves[str(cell)]
        assert np.all(curve["bound"] >= curve["risk"])
    assert disp.ax_.figure is disp.figure_
    # a cell without a threshold has no marker and says so in the legend
    fig, ax = plt.subplots()
    p = gate.predict_proba(X)[:, 1]
    disp = AbstentionDisplay.from_predictions(y, p, cells=g, thresholds={0: 0.9}, ax=ax)
    assert disp.ax_ is ax and set(disp.markers_) == {"0"}
    assert disp.lines_["1"].get_label() == "1 (abstains)"
    with pytest.raises(TypeError, match="needs a fitted AbstentionGate"):
        AbstentionDisplay.from_estimator(gate.calibrator_, X, y)
    plt.close("all")


def _clustered_log(n_questions, answers, seed):
    """Several answers per question; a question shift u_q ~ U(-0.3, 0.3)
    moves P(correct) of all its answers alike: clip(h + u_q, 0, 1)."""
    rng = np.random.default_rng(seed)
    q = np.repeat(np.arange(n_questions), answers)
    h = rng.beta(4.0, 1.0, size=q.shape[0])
    truth = np.clip(h + rng.uniform(-0.3, 0.3, size=n_questions)[q], 0.0, 1.0)
    y = (rng.uniform(size=q.shape[0]) < truth).astype(int)
    return h, y, q, truth


@pytest.mark.slow
def test_abstention_gate_grouped_test_is_valid_and_certifies():
    # the population error of the answers at a threshold: a large fresh log
    hf, _, _, truth = _clustered_log(20_000, 8, 10**6)
    alpha, delta, reps = 0.15, 0.1, 30
    violations, coverage = 0, []
    for r in range(reps):
        h, y, q, _ = _clustered_log(600, 8, r)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            gate = AbstentionGate(
                UMDBinner(n_bins=20), max_error=alpha, delta=delta, random_state=r
            ).fit(h, y, groups=q)
        assert gate.test_ == "grouped betting"
        assert gate.certified_[0] == (gate.risk_bounds_[0] <= alpha)
        violations += _fresh_error(gate, hf, truth) > alpha
        coverage.append(gate.predict(hf).mean())
    se = np.sqrt(delta * (1 - delta) / reps)
    assert violations / reps <= delta + 2 * se
    # not valid by abstaining: it answers a real share of the questions
    assert np.mean(coverage) > 0.3, np.mean(coverage)


def test_abstention_gate_takes_question_groups_through_metadata_routing():
    import sklearn
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer

    h, _, y, _ = _log(2000, 12)
    questions = np.arange(2000) // 4
    with sklearn.config_context(enable_metadata_routing=True):
        gate = AbstentionGate(UMDBinner(n_bins=10), random_state=0)
        pipe = Pipeline([("id", FunctionTransformer()), ("gate", gate)])
        pipe.set_params(gate=gate.set_fit_request(groups=True))
        pipe.fit(h.reshape(-1, 1), y, groups=questions)
    # the groups arrived: the test is made on the questions
    assert pipe[-1].test_ == "grouped betting"


def test_abstention_gate_per_cell_predict_matches_proba_and_apply():
    gate, X = _fitted_gate()
    p = gate.calibrator_.predict_proba(X)[:, 1]
    cells = gate.calibrator_.apply(X)
    t = gate.thresholds_[np.searchsorted(gate.cells_, cells)]
    assert_array_equal(gate.predict(X), p >= t)
    assert_allclose(gate.decision_function(X), p - t, rtol=0, atol=0)
