# SPDX-License-Identifier: MIT
"""Tests for HierarchicalLogisticScaler and the Laplace mixed-model kernel.

Golden values: ``tests/data/lme4/lme4_reference.json``, produced by
``fit_lme4.R`` (R 4.2.2, lme4 1.1.31) on the CSVs written by ``make_data.py``.
"""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator
from sklearn.preprocessing import FunctionTransformer

from sklearn_betacal import GroupColumnPartitioner, HierarchicalLogisticScaler
from sklearn_betacal._hierarchical import _pooled_platt
from sklearn_betacal._kernels import _mixed

LME4 = Path(__file__).parent / "data" / "lme4"
REFERENCE = json.loads((LME4 / "lme4_reference.json").read_text())


def _group_column(Z):
    """Cell id = the first partition feature, used as a precomputed group.

    ``Z`` is an array, or a DataFrame when ``X`` is one (as for BB).
    """
    return np.asarray(Z)[:, 0].astype(np.int64)


def _partitioner(func=_group_column):
    return FunctionTransformer(func)


def _load(name):
    data = np.loadtxt(LME4 / f"{name}.csv", delimiter=",", skiprows=1)
    h, cell, y, w = data.T
    return np.column_stack([h, cell]), y, w


def _simulate(rng, sizes, b0=-1.0, b1=2.5, u=None, v=None):
    cells = np.repeat(np.arange(len(sizes)), sizes)
    h = rng.uniform(size=cells.size)
    u = rng.normal(0, 0.5, len(sizes)) if u is None else u
    v = rng.normal(0, 1.0, len(sizes)) if v is None else v
    eta = b0 + u[cells] + (b1 + v[cells]) * h
    y = (rng.uniform(size=cells.size) < 1 / (1 + np.exp(-eta))).astype(float)
    return np.column_stack([h, cells]), y


# ---------------------------------------------------------------- lme4 golden


@pytest.mark.parametrize("name", sorted(REFERENCE["datasets"]))
def test_laplace_matches_lme4(name):
    ref = REFERENCE["datasets"][name]
    X, y, w = _load(name)
    model = HierarchicalLogisticScaler(partitioner=_partitioner()).fit(
        X, y, sample_weight=w
    )
    assert model.converged_
    # tolerances: fixed effects and SDs within 5e-3 absolute, per-row
    # probabilities within 1e-3 absolute (the issue asks for 1e-2)
    assert_allclose(model.fixed_effects_, ref["fixef"], rtol=0, atol=5e-3)
    assert_allclose(model.sigma_, ref["sd"], rtol=0, atol=5e-3)
    assert_allclose(model.predict_proba(X)[:, 1], ref["fitted"], rtol=0, atol=1e-3)
    # the marginal deviance is lme4's -2 logLik (same objective, same optimum)
    assert_allclose(model.deviance_, -2 * ref["loglik"], rtol=1e-6)
    assert_array_equal(model.cells_, ref["ranef_cells"])
    re = np.column_stack([ref["ranef_intercept"], ref["ranef_slope"]])
    assert_allclose(model.random_effects_, re, rtol=0, atol=1e-2)


def test_statsmodels_solver_distance_to_lme4_is_recorded(record_property):
    # statsmodels' Bayesian fits estimate a different (shrunken, prior-driven)
    # model; measured on the one_class reference set (statsmodels 0.15):
    # VB max |p - p_lme4| = 0.022, MAP 0.023; on many_small they are 0.30 and
    # 0.28 (slope SD 0.14 / 0.00 vs lme4 1.55). Assert the recorded figures so
    # that a change in either direction is noticed.
    ref = REFERENCE["datasets"]["one_class"]
    X, y, _ = _load("one_class")
    for solver, recorded in [("statsmodels-vb", 0.022), ("statsmodels-map", 0.023)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = HierarchicalLogisticScaler(
                partitioner=_partitioner(), solver=solver, random_state=0
            ).fit(X, y)
            again = HierarchicalLogisticScaler(
                partitioner=_partitioner(), solver=solver, random_state=0
            ).fit(X, y)
        # statsmodels draws its starting point at random: seeded, it repeats
        assert_array_equal(model.predict_proba(X), again.predict_proba(X))
        gap = float(np.max(np.abs(model.predict_proba(X)[:, 1] - ref["fitted"])))
        record_property(f"{solver}_max_abs_diff_vs_lme4", gap)
        print(f"{solver}: max |p - p_lme4| = {gap:.4f}, sigma={model.sigma_}")
        assert gap == pytest.approx(recorded, abs=0.005)
        assert model.random_effects_.shape == (15, 2)


def test_statsmodels_solver_rejects_sample_weight():
    X, y, w = _load("one_class")
    model = HierarchicalLogisticScaler(
        partitioner=_partitioner(), solver="statsmodels-map"
    )
    with pytest.raises(ValueError, match="does not support sample_weight"):
        model.fit(X, y, sample_weight=w)


# ------------------------------------------------------------------- kernel


def test_laplace_deviance_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    X, y = _simulate(rng, rng.integers(5, 80, 30))
    x = X[:, 0]
    idx = X[:, 1].astype(np.int64)
    idx[:10] = 30  # rows in no cell
    w = rng.integers(0, 3, x.size).astype(float)
    params = np.array([-0.7, 2.0, 0.6, 0.9])
    _, grad, _, _ = _mixed.laplace_deviance(params, x, y, w, idx, 30)
    step = 1e-6
    numeric = np.empty(4)
    for k in range(4):
        e = np.zeros(4)
        e[k] = step
        up = _mixed.laplace_deviance(params + e, x, y, w, idx, 30, grad=False)[0]
        down = _mixed.laplace_deviance(params - e, x, y, w, idx, 30, grad=False)[0]
        numeric[k] = (up - down) / (2 * step)
    assert_allclose(grad, numeric, rtol=1e-4, atol=1e-4)


def test_conditional_modes_solve_penalised_score_equation():
    rng = np.random.default_rng(4)
    X, y = _simulate(rng, [30, 1, 200])
    x, idx = X[:, 0], X[:, 1].astype(np.int64)
    w = np.ones_like(x)
    beta, theta = np.array([-1.0, 2.0]), np.array([0.8, 1.3])
    u, ok = _mixed.conditional_modes(x, y, w, idx, 3, beta, theta)
    assert ok
    eta = beta[0] + beta[1] * x + theta[0] * u[idx, 0] + theta[1] * u[idx, 1] * x
    r = 1 / (1 + np.exp(-eta)) - y
    score0 = theta[0] * np.bincount(idx, r) + u[:, 0]
    score1 = theta[1] * np.bincount(idx, r * x) + u[:, 1]
    assert_allclose(score0, 0, atol=1e-8)
    assert_allclose(score1, 0, atol=1e-8)


# ----------------------------------------------------------------- behaviour


@pytest.mark.slow
def test_hierarchical_partial_pooling_shrinks_small_cell():
    rng = np.random.default_rng(11)
    sizes = [2000] * 8 + [20]
    u = np.array([0.3, -0.4, 0.2, -0.1, 0.5, -0.3, 0.1, 0.0, 2.0])
    v = np.array([0.5, -0.6, 0.4, -0.2, 0.3, -0.5, 0.2, 0.0, -2.5])
    X, y = _simulate(rng, sizes, u=u, v=v)
    model = HierarchicalLogisticScaler(partitioner=_partitioner()).fit(X, y)
    small = X[:, 1] == 8
    own = _pooled_platt(X[small, 0], y[small], np.ones(20))
    grid = np.linspace(0.05, 0.95, 19)
    p_small = model.predict_proba(np.column_stack([grid, np.full(19, 8)]))[:, 1]
    p_pop = model.predict_proba(np.column_stack([grid, np.full(19, -1)]))[:, 1]
    p_own = 1 / (1 + np.exp(-(own[0] + own[1] * grid)))
    lo, hi = np.minimum(p_own, p_pop), np.maximum(p_own, p_pop)
    assert np.all((p_small >= lo - 1e-9) & (p_small <= hi + 1e-9))
    # and it is genuinely pooled: not equal to either end
    assert np.max(np.abs(p_small - p_pop)) > 0.02
    assert np.max(np.abs(p_small - p_own)) > 0.02


def test_hierarchical_outside_and_unseen_cells_use_fixed_effects():
    rng = np.random.default_rng(5)
    X, y = _simulate(rng, [300] * 5)
    X[:40, 1] = -1  # outside every leaf at fit time: fixed effects only
    model = HierarchicalLogisticScaler(partitioner=_partitioner()).fit(X, y)
    assert_array_equal(model.cells_, np.arange(5))
    h = np.linspace(0, 1, 7)
    b0, b1 = model.fixed_effects_
    expected = 1 / (1 + np.exp(-(b0 + b1 * h)))
    for cell in (-1, 99):
        Xt = np.column_stack([h, np.full(7, cell)])
        assert_allclose(model.predict_proba(Xt)[:, 1], expected, rtol=1e-12)
    assert_array_equal(model.apply(Xt), np.full(7, 99))


def test_hierarchical_logit_covariate_with_one_cell_is_platt_on_logit():
    rng = np.random.default_rng(6)
    h = rng.uniform(0.01, 0.99, 500)
    y = (rng.uniform(size=500) < h**2).astype(float)
    X = np.column_stack([h, np.zeros(500)])
    model = HierarchicalLogisticScaler(
        partitioner=_partitioner(), covariate="logit"
    ).fit(X, y)
    z = np.log(h / (1 - h))
    glm = _pooled_platt(z, y, np.ones(500))
    # a single cell cannot identify the variances: they go to the boundary 0
    assert_allclose(model.sigma_, 0, atol=1e-3)
    assert_allclose(model.fixed_effects_, glm, atol=1e-3)


def test_hierarchical_logit_covariate_clip_is_data_aware():
    # 20 rows: label floor 1/22; largest interior confidence 0.8 (gap 0.1)
    h = np.tile([0.3, 0.5, 0.8, 1.0], 5)
    y = np.tile([1, 0, 0, 1], 5).astype(float)  # not separable
    X = np.column_stack([h, np.zeros(20)])
    model = HierarchicalLogisticScaler(
        partitioner=_partitioner(), covariate="logit"
    ).fit(X, y)
    assert_allclose(model.logit_eps_, [0.15, 0.1], rtol=1e-15)
    # 1.0 is clipped to 0.9 on predict: the same probability as 0.9
    p = model.predict_proba(np.column_stack([[1.0, 0.9], [0, 0]]))[:, 1]
    assert p[0] == p[1]


def test_hierarchical_integer_weights_equal_repeated_rows():
    X, y, w = _load("mid")
    w = w.astype(int) + (np.arange(w.size) % 3 == 0)
    a = HierarchicalLogisticScaler(partitioner=_partitioner()).fit(
        X, y, sample_weight=w
    )
    b = HierarchicalLogisticScaler(partitioner=_partitioner()).fit(
        np.repeat(X, w, axis=0), np.repeat(y, w)
    )
    assert_allclose(a.fixed_effects_, b.fixed_effects_, atol=1e-5)
    assert_allclose(a.sigma_, b.sigma_, atol=1e-5)
    assert_allclose(a.predict_proba(X), b.predict_proba(X), atol=1e-6)


def test_hierarchical_zero_weight_equals_dropping_rows():
    X, y, _ = _load("one_class")
    w = np.ones(y.size)
    w[::4] = 0
    a = HierarchicalLogisticScaler(partitioner=_partitioner()).fit(
        X, y, sample_weight=w
    )
    b = HierarchicalLogisticScaler(partitioner=_partitioner()).fit(X[w > 0], y[w > 0])
    assert_allclose(a.predict_proba(X), b.predict_proba(X), atol=1e-6)


def test_hierarchical_is_deterministic():
    X, y, w = _load("many_small")
    model = HierarchicalLogisticScaler(partitioner=_partitioner())
    p1 = clone(model).fit(X, y, sample_weight=w).predict_proba(X)
    p2 = clone(model).fit(X, y, sample_weight=w).predict_proba(X)
    assert p1.tobytes() == p2.tobytes()


def test_hierarchical_dataframe_confidence_column_by_name():
    pd = pytest.importorskip("pandas")
    X, y, _ = _load("one_class")
    df = pd.DataFrame({"group": X[:, 1], "conf": X[:, 0]})
    a = HierarchicalLogisticScaler(
        partitioner=_partitioner(), confidence_column="conf"
    ).fit(df, y)
    b = HierarchicalLogisticScaler(partitioner=_partitioner()).fit(X, y)
    assert_allclose(a.predict_proba(df), b.predict_proba(X), rtol=1e-12)
    assert_array_equal(a.feature_names_in_, ["group", "conf"])


@pytest.mark.parametrize("kind", ["str", "int"])
def test_hierarchical_dataframe_group_column_by_name(kind):
    # HLS used to validate X as numeric and hand the partitioner a bare array:
    # string groups failed ("could not convert string to float") and integer
    # groups were not found by name ("column='topic' is not a column of X").
    pd = pytest.importorskip("pandas")
    X, y, _ = _load("mid")
    codes = X[:, 1].astype(np.int64)
    topic = np.array([f"t{c:03d}" for c in codes]) if kind == "str" else codes + 100
    df = pd.DataFrame({"conf": X[:, 0], "topic": topic})
    model = HierarchicalLogisticScaler(GroupColumnPartitioner("topic")).fit(df, y)
    ref = HierarchicalLogisticScaler(partitioner=_partitioner()).fit(X, y)
    assert_array_equal(model.partitioner_.feature_names_in_, ["topic"])
    assert model.cells_.shape == ref.cells_.shape
    assert_allclose(model.predict_proba(df), ref.predict_proba(X), rtol=1e-8)
    # an unseen topic is outside every cell: the fixed effects alone
    new = df.iloc[:1].assign(topic=topic[0] + ("x" if kind == "str" else 10**6))
    assert model.apply(new)[0] == -1


def test_hierarchical_frozen_partitioner_is_not_refit():
    X, y, _ = _load("one_class")
    part = _partitioner().fit(X[:, 1:])
    model = HierarchicalLogisticScaler(partitioner=FrozenEstimator(part)).fit(X, y)
    assert model.partitioner_.estimator is part


@pytest.mark.parametrize(
    ("kwargs", "X", "match"),
    [
        ({}, [[1.5, 0], [0.2, 1]], r"outside \[0, 1\]"),
        ({"confidence_column": "conf"}, [[0.5, 0], [0.2, 1]], "no column names"),
        ({"confidence_column": 5}, [[0.5, 0], [0.2, 1]], "out of range"),
    ],
)
def test_hierarchical_bad_input_raises_clear_error(kwargs, X, match):
    model = HierarchicalLogisticScaler(partitioner=_partitioner(), **kwargs)
    with pytest.raises(ValueError, match=match):
        model.fit(X, [0, 1])


def test_hierarchical_rejects_non_binary_labels():
    model = HierarchicalLogisticScaler(partitioner=_partitioner())
    with pytest.raises(ValueError, match="binary"):
        model.fit([[0.5, 0], [0.2, 1], [0.3, 1]], [0, 1, 2])


def test_hierarchical_rejects_bad_cell_ids():
    bad = FunctionTransformer(lambda Z: Z[:, 0] + 0.5)
    with pytest.raises(ValueError, match="integer cell ids"):
        HierarchicalLogisticScaler(partitioner=bad).fit([[0.5, 0], [0.2, 1]], [0, 1])


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(4, 60),
    n_cells=st.integers(1, 5),
    seed=st.integers(0, 2**16),
)
def test_hierarchical_proba_rows_sum_to_one_and_lie_in_unit_interval(n, n_cells, seed):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(size=n), rng.integers(0, n_cells, n)])
    y = rng.integers(0, 2, n)
    model = HierarchicalLogisticScaler(partitioner=_partitioner())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny separable samples may not converge
        model.fit(X, y)
    Xt = np.column_stack([rng.uniform(size=20), rng.integers(-1, n_cells + 1, 20)])
    proba = model.predict_proba(Xt)
    assert np.all((proba >= 0) & (proba <= 1))
    assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)


def test_hierarchical_default_partitioner_is_kdtree():
    rng = np.random.default_rng(8)
    X = np.column_stack([rng.uniform(size=400), rng.normal(size=(400, 2))])
    y = rng.integers(0, 2, 400)
    model = HierarchicalLogisticScaler().fit(X, y)
    assert type(model.partitioner_).__name__ == "KDTreePartitioner"
    assert model.cells_.size == model.partitioner_.n_cells_


@pytest.mark.parametrize(
    ("param", "value"), [("solver", "glmer"), ("covariate", "log"), ("tol", -1.0)]
)
def test_hierarchical_param_validation(param, value):
    X, y, _ = _load("one_class")
    model = HierarchicalLogisticScaler(partitioner=_partitioner(), **{param: value})
    with pytest.raises(ValueError, match=param):
        model.fit(X, y)


# ------------------------------------------------------- boundary (issue 14)


def _planted_intercept_sd(seed, n=100_000, n_cells=4096, sd=0.5):
    """Eq. (5) with a random intercept of SD ``sd`` and no random slope."""
    rng = np.random.default_rng(seed)
    cell = rng.integers(0, n_cells, n)
    h = rng.uniform(size=n)
    u = rng.normal(0, sd, n_cells)
    eta = -1.0 + u[cell] + 2.0 * h
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    return np.column_stack([h, cell]), y


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_hierarchical_recovers_planted_intercept_sd_on_every_seed(seed):
    # The reported failure: N = 1e5, 4096 cells, true intercept SD 0.5. Before
    # the boundary check seeds 1 and 2 stopped at sigma_ = (0, 0) with
    # converged_ = True (the deviance is even in theta, so its gradient at 0
    # is exactly 0 and a projected L-BFGS-B never leaves the bound).
    X, y = _planted_intercept_sd(seed)
    model = HierarchicalLogisticScaler(partitioner=_partitioner()).fit(X, y)
    assert model.converged_
    assert 0.4 < model.sigma_[0] < 0.6
    # the fit is at least as good as the truth's neighbourhood: the boundary
    # fit (no random effects) is far worse in deviance
    x, idx = X[:, 0], X[:, 1].astype(np.int64)
    w = np.ones_like(x)
    b0 = _pooled_platt(x, y, w)
    d_boundary = _mixed.laplace_deviance(
        np.r_[b0, 0.0, 0.0], x, y, w, idx, 4096, grad=False
    )[0]
    assert model.deviance_ < d_boundary - 100


def test_laplace_leaves_the_boundary_when_started_on_it():
    # theta = (0, 0) is a stationary point of the deviance for any data; a
    # start exactly there must be rescued by the profile/restart check
    X, y = _planted_intercept_sd(1, n=20_000, n_cells=400, sd=0.8)
    x, idx = X[:, 0], X[:, 1].astype(np.int64)
    w = np.ones_like(x)
    b0 = _pooled_platt(x, y, w)
    res = _mixed.fit_laplace(x, y, w, idx, 400, b0, theta_start=(0.0, 0.0))
    assert res["n_restarts"] >= 1
    assert 0.6 < res["theta"][0] < 1.0
    free = _mixed.fit_laplace(x, y, w, idx, 400, b0)
    assert_allclose(res["deviance"], free["deviance"], rtol=1e-7)


def test_laplace_keeps_a_true_boundary():
    # no random effects planted: the boundary is the optimum and stays
    rng = np.random.default_rng(2)
    X, y = _simulate(rng, [400] * 6, u=np.zeros(6), v=np.zeros(6))
    model = HierarchicalLogisticScaler(partitioner=_partitioner()).fit(X, y)
    assert model.converged_
    assert np.all(model.sigma_ < 0.2)


@pytest.mark.parametrize(
    "y_kind", ["one_class_1", "one_class_0", "separated_by_confidence"]
)
def test_hierarchical_separable_data_warns_and_is_not_converged(y_kind):
    rng = np.random.default_rng(0)
    h = rng.uniform(size=200)
    X = np.column_stack([h, rng.integers(0, 4, 200)])
    y = {
        "one_class_1": np.ones(200),
        "one_class_0": np.zeros(200),
        "separated_by_confidence": (h > 0.5).astype(float),
    }[y_kind]
    model = HierarchicalLogisticScaler(partitioner=_partitioner())
    with pytest.warns(ConvergenceWarning, match="separable"):
        model.fit(X, y)
    assert not model.converged_
    p = model.predict_proba(X)
    assert np.all(np.isfinite(p))


@pytest.mark.parametrize("scale", [1e300, 1e308])
def test_hierarchical_logit_input_at_huge_scores_is_finite(scale):
    # x * x overflowed at |x| >= 1e300: the covariate is rescaled by a power
    # of two inside the kernel, which is the same model
    rng = np.random.default_rng(1)
    X, y = _simulate(rng, [150] * 4)
    z = X[:, 0] - 0.5
    a = HierarchicalLogisticScaler(partitioner=_partitioner(), input="logit").fit(
        np.column_stack([z, X[:, 1]]), y
    )
    b = HierarchicalLogisticScaler(partitioner=_partitioner(), input="logit").fit(
        np.column_stack([z * scale, X[:, 1]]), y
    )
    assert np.all(np.isfinite(b.predict_proba(np.column_stack([z * scale, X[:, 1]]))))
    assert_allclose(b.fixed_effects_[0], a.fixed_effects_[0], rtol=1e-4, atol=1e-6)
    assert_allclose(b.fixed_effects_[1] * scale, a.fixed_effects_[1], rtol=1e-4)
    assert_allclose(b.sigma_[1] * scale, a.sigma_[1], rtol=1e-3, atol=1e-5)
    assert_allclose(
        b.predict_proba(np.column_stack([z * scale, X[:, 1]])),
        a.predict_proba(np.column_stack([z, X[:, 1]])),
        atol=1e-4,  # two optimiser paths to one optimum (tol=1e-9 on deviance)
    )


def test_hierarchical_rejects_cell_ids_below_minus_one():
    bad = FunctionTransformer(lambda Z: np.full(Z.shape[0], -3))
    with pytest.raises(ValueError, match="below -1"):
        HierarchicalLogisticScaler(partitioner=bad).fit([[0.5, 0], [0.2, 1]], [0, 1])


def test_hierarchical_precomputed_cells_match_group_column():
    """partitioner="precomputed" reads the ids as they are (-1: no random effect)."""
    rng = np.random.default_rng(3)
    cell = rng.integers(0, 5, 2000)
    h = rng.uniform(size=2000)
    y = rng.uniform(size=2000) < h ** (0.5 + cell / 4)
    X = np.column_stack([h, cell])
    pre = HierarchicalLogisticScaler(partitioner="precomputed").fit(X, y)
    grp = HierarchicalLogisticScaler(partitioner=GroupColumnPartitioner()).fit(X, y)
    assert pre.partitioner_ == "precomputed"
    assert_allclose(pre.random_effects_, grp.random_effects_, rtol=1e-10)
    assert_allclose(pre.predict_proba(X), grp.predict_proba(X), rtol=1e-10)
    # cell -1 and an unseen cell get the population fit
    out = pre.predict_proba([[0.7, -1], [0.7, 99]])[:, 1]
    b0, b1 = pre.fixed_effects_
    assert_allclose(out, 1 / (1 + np.exp(-(b0 + b1 * 0.7))), rtol=1e-12)
    with pytest.raises(ValueError, match="exactly one column of cell ids"):
        pre.fit(np.column_stack([h, cell, cell]), y)
    with pytest.raises(ValueError, match="below -1"):
        pre.fit(np.column_stack([h, cell - 2]), y)
    with pytest.raises(ValueError, match="integer cell ids"):
        pre.fit(np.column_stack([h, cell + 0.5]), y)


def test_hierarchical_per_cell_separation_warns_and_is_not_converged():
    # issue 20, item 7: every cell separable at its own threshold (the pooled
    # data overlap) gave converged_=True, no warning, and an intercept of
    # -1521 and a slope of 2668: a fit running off, not an estimate
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_betacal import GroupColumnPartitioner

    rng = np.random.default_rng(0)
    g = np.repeat(np.arange(10), 60)
    h = rng.uniform(0.05, 0.95, size=g.size)
    y = (h > rng.uniform(0.3, 0.7, size=10)[g]).astype(int)
    X = np.column_stack([h, g])
    est = HierarchicalLogisticScaler(GroupColumnPartitioner())
    with pytest.warns(ConvergenceWarning, match=r"10 of 10 cells \(600 rows\) have"):
        est.fit(X, y)
    assert not est.converged_
    # one separated cell among overlapping ones is pooled: finite, no warning
    y = (rng.uniform(size=g.size) < h).astype(int)
    y[g == 0] = h[g == 0] > 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est.fit(X, y)
    assert est.converged_


def test_hierarchical_tiny_weights_fit_the_fixed_effects_and_say_so():
    # issue 20, item 7: weights of 2**-44 (or subnormal) returned 0.5 for every
    # row with converged_=True: the pooled start's absolute stopping rule and
    # ridge swamped the gradient, and the SDs never left their start (1, 1)
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_betacal import GroupColumnPartitioner

    rng = np.random.default_rng(0)
    h = rng.uniform(0.02, 0.98, size=400)
    y = (rng.uniform(size=400) < h**1.3).astype(int)
    X = np.column_stack([h, rng.integers(0, 4, 400)])
    w = rng.integers(1, 9, 400) * 2.0**-4
    est = HierarchicalLogisticScaler(GroupColumnPartitioner())
    ref = est.fit(X, y, sample_weight=w).fixed_effects_
    for scale in (2.0**-40, 2.0**-1070):
        with pytest.warns(ConvergenceWarning, match="stopped at its starting point"):
            est.fit(X, y, sample_weight=w * scale)
        assert not est.converged_
        # the fixed effects are the weighted logistic fit (scale-free)
        assert_allclose(est.fixed_effects_, ref, rtol=1e-5)


@pytest.mark.parametrize("solver", ["statsmodels-vb", "statsmodels-map"])
def test_statsmodels_solvers_with_one_class_say_what_to_do(solver):
    """All labels equal: statsmodels' own 'endog values must be 0 and 1, and
    not all identical' came through before; the laplace solver fits them."""
    X = np.column_stack([np.linspace(0.1, 0.9, 40), np.arange(40) % 2])
    est = HierarchicalLogisticScaler(GroupColumnPartitioner(0), solver=solver)
    with pytest.raises(ValueError, match="needs both classes.*solver='laplace'"):
        est.fit(X, np.ones(40, dtype=int))
