# SPDX-License-Identifier: MIT
"""Tests for the scorers in sklearn_betacal.metrics.

The group-conditional calibrators are written in parallel, so these tests use
a tiny test-only calibrator with the same public surface: ``fit`` with
``sample_weight``, ``predict_proba`` and ``apply(X)`` -> one cell id per row.
"""

import copy
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from numpy.testing import assert_allclose
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold, cross_validate
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_betacal.metrics import (
    area_under_accuracy_confidence,
    area_under_accuracy_confidence_scorer,
    beta_calibration_error,
    cumulative_calibration_error,
    expected_calibration_error,
    make_beta_calibration_error_scorer,
    neg_beta_calibration_error_scorer,
    neg_cumulative_calibration_error_scorer,
    neg_expected_calibration_error_scorer,
    neg_smooth_calibration_error_scorer,
    smooth_calibration_error,
)


class _CellCalibrator(ClassifierMixin, BaseEstimator):
    """Test-only group-conditional calibrator.

    ``X[:, 0]`` is the confidence, ``X[:, 1]`` in [0, 1) a feature; the cell
    is ``floor(X[:, 1] * 2**depth)``. ``predict_proba`` blends the confidence
    with the (weighted) accuracy of its cell.
    """

    def __init__(self, depth=1, blend=0.5):
        self.depth = depth
        self.blend = blend

    def apply(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return self._cells(X)

    def _cells(self, X):
        n_cells = 2**self.depth
        return np.minimum((X[:, 1] * n_cells).astype(int), n_cells - 1)

    def fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y)
        w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight)
        cells = self._cells(X)
        n_cells = 2**self.depth
        num = np.bincount(cells, weights=w * y, minlength=n_cells)
        den = np.bincount(cells, weights=w, minlength=n_cells)
        self.cell_accuracy_ = np.where(den > 0, num / np.maximum(den, 1e-300), 0.5)
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        p1 = (
            self.blend * X[:, 0]
            + (1 - self.blend) * self.cell_accuracy_[self._cells(X)]
        )
        return np.column_stack([1 - p1, p1])

    def predict(self, X):
        return (self.predict_proba(X)[:, 1] >= 0.5).astype(int)


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    h = rng.uniform(size=n)
    z = rng.uniform(size=n)
    # accuracy depends on the feature, so beta-calibration matters
    y = (rng.uniform(size=n) < np.clip(h + 0.3 * (z > 0.5) - 0.15, 0, 1)).astype(int)
    w = rng.integers(0, 4, size=n).astype(float)
    return np.column_stack([h, z]), y, w


def _fixed_cells(Z):
    return np.floor(np.asarray(Z)[:, 0] * 4).astype(int)


def _fixed_partitioner(X):
    return FunctionTransformer(_fixed_cells).fit(X[:, 1:])


# ------------------------------------------------------------- direct values


def test_neg_expected_calibration_error_scorer_matches_metric():
    X, y, w = _data()
    est = _CellCalibrator().fit(X, y)
    p = est.predict_proba(X)[:, 1]
    assert_allclose(
        neg_expected_calibration_error_scorer(est, X, y),
        -expected_calibration_error(y, p),
        rtol=1e-15,
    )
    assert_allclose(
        neg_expected_calibration_error_scorer(est, X, y, sample_weight=w),
        -expected_calibration_error(y, p, sample_weight=w),
        rtol=1e-15,
    )


def test_area_under_accuracy_confidence_scorer_matches_metric():
    X, y, _ = _data()
    est = _CellCalibrator().fit(X, y)
    p = est.predict_proba(X)[:, 1]
    assert area_under_accuracy_confidence_scorer(
        est, X, y
    ) == area_under_accuracy_confidence(y, p)


def test_neg_beta_calibration_error_scorer_uses_own_partition():
    X, y, w = _data()
    est = _CellCalibrator(depth=2).fit(X, y)
    p = est.predict_proba(X)[:, 1]
    expected = -beta_calibration_error(y, p, cells=est.apply(X), sample_weight=w)
    assert_allclose(
        neg_beta_calibration_error_scorer(est, X, y, sample_weight=w),
        expected,
        rtol=1e-15,
    )
    # and it differs from the plain ECE on this data (the feature matters)
    assert expected < -expected_calibration_error(y, p, sample_weight=w)


def test_neg_beta_calibration_error_scorer_pipeline_applies_last_step():
    X, y, _ = _data()
    halve = FunctionTransformer(lambda X: X * np.array([1.0, 0.5]))
    pipe = Pipeline([("halve", halve), ("cal", _CellCalibrator(depth=2))]).fit(X, y)
    groups = pipe[-1].apply(pipe[:-1].transform(X))
    assert set(np.unique(groups)) == {0, 1}  # the halved feature: first 2 cells
    p = pipe.predict_proba(X)[:, 1]
    assert_allclose(
        neg_beta_calibration_error_scorer(pipe, X, y),
        -beta_calibration_error(y, p, cells=groups),
        rtol=1e-15,
    )


def test_make_beta_calibration_error_scorer_carries_partitioner():
    X, y, _ = _data()
    est = _CellCalibrator(depth=1).fit(X, y)
    p = est.predict_proba(X)[:, 1]
    scorer = make_beta_calibration_error_scorer(
        _fixed_partitioner(X), n_bins=5, strategy="quantile", norm="l2"
    )
    expected = -beta_calibration_error(
        y, p, cells=_fixed_cells(X[:, 1:]), n_bins=5, strategy="quantile", norm="l2"
    )
    assert_allclose(scorer(est, X, y), expected, rtol=1e-15)
    # the carried cells (4) are not the estimator's own (2)
    assert expected != neg_beta_calibration_error_scorer(est, X, y)


def test_make_beta_calibration_error_scorer_debiased():
    X, y, _ = _data()
    est = _CellCalibrator(depth=1).fit(X, y)
    p = est.predict_proba(X)[:, 1]
    scorer = make_beta_calibration_error_scorer(
        _fixed_partitioner(X), norm="l2_squared", debiased=True
    )
    groups = _fixed_cells(X[:, 1:])
    expected = -beta_calibration_error(
        y, p, cells=groups, norm="l2_squared", debiased=True
    )
    assert_allclose(scorer(est, X, y), expected, rtol=1e-15)
    plug = -beta_calibration_error(y, p, cells=groups, norm="l2_squared")
    assert scorer(est, X, y) > plug  # the noise is taken out
    assert "debiased=True" in repr(scorer)
    with pytest.raises(ValueError, match="needs norm='l2_squared'"):
        make_beta_calibration_error_scorer(_fixed_partitioner(X), debiased=True)


def test_make_beta_calibration_error_scorer_confidence_column_position():
    X, y, _ = _data()
    Xr = X[:, ::-1]  # confidence last
    est = make_pipeline(
        FunctionTransformer(lambda A: A[:, ::-1]), _CellCalibrator()
    ).fit(Xr, y)
    scorer = make_beta_calibration_error_scorer(
        FrozenEstimator(_fixed_partitioner(X)), confidence_column=-1
    )
    p = est.predict_proba(Xr)[:, 1]
    expected = -beta_calibration_error(y, p, cells=_fixed_cells(X[:, 1:]))
    assert_allclose(scorer(est, Xr, y), expected, rtol=1e-15)


def test_make_beta_calibration_error_scorer_dataframe_keeps_feature_names():
    X, y, _ = _data()
    df = pd.DataFrame({"topic_x": X[:, 1], "conf": X[:, 0]})
    to_array = FunctionTransformer(lambda D: D[["conf", "topic_x"]].to_numpy())
    est = make_pipeline(to_array, _CellCalibrator()).fit(df, y)

    partitioner = FunctionTransformer(
        lambda D: _fixed_cells(D[["topic_x"]]), feature_names_out="one-to-one"
    ).fit(df[["topic_x"]])
    scorer = make_beta_calibration_error_scorer(partitioner, confidence_column="conf")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "X does not have valid feature names"
        got = scorer(est, df, y)
    p = est.predict_proba(df)[:, 1]
    assert_allclose(got, -beta_calibration_error(y, p, cells=_fixed_cells(X[:, 1:])))


def test_make_beta_calibration_error_scorer_confidence_column_none_raw_input():
    # raw input is text ("0.73|0.21": confidence|feature); the calibrator sees
    # parsed numbers, the carried partitioner is itself a fitted Pipeline
    X, y, _ = _data()
    text = np.array([f"{float(a)!r}|{float(b)!r}" for a, b in X])

    def parse(T):
        return np.array([[float(v) for v in t.split("|")] for t in np.ravel(T)])

    est = make_pipeline(FunctionTransformer(parse), _CellCalibrator()).fit(text, y)
    part = make_pipeline(
        FunctionTransformer(parse),
        FunctionTransformer(lambda A: _fixed_cells(A[:, 1:])),
    ).fit(text)
    scorer = make_beta_calibration_error_scorer(part, confidence_column=None)
    p = est.predict_proba(text)[:, 1]
    expected = -beta_calibration_error(y, p, cells=_fixed_cells(X[:, 1:]))
    assert_allclose(scorer(est, text, y), expected, rtol=1e-15)


# --------------------------------------------------------- model selection


def _scoring(X):
    return {
        "ece": neg_expected_calibration_error_scorer,
        "ecce": neg_cumulative_calibration_error_scorer,
        "smece": neg_smooth_calibration_error_scorer,
        "auac": area_under_accuracy_confidence_scorer,
        "beta_own": neg_beta_calibration_error_scorer,
        "beta_fixed": make_beta_calibration_error_scorer(_fixed_partitioner(X)),
    }


def test_scorers_work_in_cross_validate():
    X, y, _ = _data()
    res = cross_validate(_CellCalibrator(), X, y, cv=KFold(3), scoring=_scoring(X))
    for key in (
        "test_ece",
        "test_ecce",
        "test_smece",
        "test_beta_own",
        "test_beta_fixed",
    ):
        assert np.all(res[key] <= 0) and np.all(res[key] >= -1)
    assert np.all((res["test_auac"] > 0) & (res["test_auac"] <= 1))
    # the multimetric cache must not mix up scorers
    train, test = next(KFold(3).split(X))
    est = _CellCalibrator().fit(X[train], y[train])
    p = est.predict_proba(X[test])[:, 1]
    assert_allclose(res["test_ece"][0], -expected_calibration_error(y[test], p))
    g = est.apply(X[test])
    assert_allclose(
        res["test_beta_own"][0], -beta_calibration_error(y[test], p, cells=g)
    )


def test_make_beta_calibration_error_scorer_same_cells_for_every_candidate():
    X, y, _ = _data()
    train, test = np.arange(300), np.arange(300, 400)
    scorer = make_beta_calibration_error_scorer(_fixed_partitioner(X[train]))
    search = GridSearchCV(
        _CellCalibrator(), {"depth": [0, 1, 3]}, scoring=scorer, cv=[(train, test)]
    ).fit(X, y)
    groups = _fixed_cells(X[test, 1:])
    for depth, score in zip(
        search.cv_results_["param_depth"],
        search.cv_results_["mean_test_score"],
        strict=True,
    ):
        est = _CellCalibrator(depth=depth).fit(X[train], y[train])
        p = est.predict_proba(X[test])[:, 1]
        assert_allclose(score, -beta_calibration_error(y[test], p, cells=groups))
    assert search.best_params_["depth"] in (0, 1, 3)


def test_neg_beta_calibration_error_scorer_in_grid_search():
    X, y, _ = _data()
    search = GridSearchCV(
        _CellCalibrator(), {"depth": [0, 1, 2]}, scoring=_scoring(X), refit="beta_own"
    ).fit(X, y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_beta_own"]))


# ---------------------------------------------------------- metadata routing


def _manual_cv(X, y, w, cv, metric, groups=None):
    out = []
    for train, test in cv.split(X, y, groups):
        est = _CellCalibrator().fit(X[train], y[train], sample_weight=w[train])
        out.append(metric(est, X[test], y[test], w[test]))
    return np.array(out)


@pytest.mark.parametrize(
    "name", ["ece", "ecce", "smece", "auac", "beta_own", "beta_fixed"]
)
def test_scorers_route_sample_weight(name):
    X, y, w = _data()
    metrics = {
        "ecce": lambda e, X, y, w: (
            -cumulative_calibration_error(y, e.predict_proba(X)[:, 1], sample_weight=w)
        ),
        "smece": lambda e, X, y, w: (
            -smooth_calibration_error(y, e.predict_proba(X)[:, 1], sample_weight=w)
        ),
        "ece": lambda e, X, y, w: (
            -expected_calibration_error(y, e.predict_proba(X)[:, 1], sample_weight=w)
        ),
        "auac": lambda e, X, y, w: area_under_accuracy_confidence(
            y, e.predict_proba(X)[:, 1], sample_weight=w
        ),
        "beta_own": lambda e, X, y, w: (
            -beta_calibration_error(
                y, e.predict_proba(X)[:, 1], cells=e.apply(X), sample_weight=w
            )
        ),
        "beta_fixed": lambda e, X, y, w: (
            -beta_calibration_error(
                y,
                e.predict_proba(X)[:, 1],
                cells=_fixed_cells(X[:, 1:]),
                sample_weight=w,
            )
        ),
    }
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = copy.deepcopy(_scoring(X)[name]).set_score_request(sample_weight=True)
        est = _CellCalibrator().set_fit_request(sample_weight=True)
        res = cross_validate(
            est, X, y, cv=KFold(3), scoring=scorer, params={"sample_weight": w}
        )
        expected = _manual_cv(X, y, w, KFold(3), metrics[name])
        assert_allclose(res["test_score"], expected, rtol=1e-12)
        # the weights reached the scorer (unweighted scores differ)
        unweighted = copy.deepcopy(_scoring(X)[name])
        plain = cross_validate(
            est,
            X,
            y,
            cv=KFold(3),
            scoring=unweighted.set_score_request(sample_weight=False),
            params={"sample_weight": w},
        )
        assert not np.allclose(plain["test_score"], res["test_score"])


def test_scorers_route_sample_weight_with_groups_in_grid_search():
    # `groups` goes to the splitter; the beta scorer computes its own cells
    # and must not ask for (or choke on) the routed `groups`
    X, y, w = _data()
    cv_groups = np.arange(len(y)) % 5
    with sklearn.config_context(enable_metadata_routing=True):
        scoring = {
            k: copy.deepcopy(s).set_score_request(sample_weight=True)
            for k, s in _scoring(X).items()
        }
        search = GridSearchCV(
            _CellCalibrator().set_fit_request(sample_weight=True),
            {"depth": [1, 2]},
            scoring=scoring,
            refit="beta_fixed",
            cv=GroupKFold(5),
        ).fit(X, y, sample_weight=w, groups=cv_groups)
    assert search.best_params_["depth"] in (1, 2)
    assert np.all(np.isfinite(search.cv_results_["mean_test_beta_own"]))


# -------------------------------------------------------------------- errors


def test_neg_beta_calibration_error_scorer_needs_apply():
    X, y, _ = _data()
    est = LogisticRegression().fit(X, y)
    with pytest.raises(TypeError, match="has no apply method"):
        neg_beta_calibration_error_scorer(est, X, y)


def test_make_beta_calibration_error_scorer_rejects_unfitted_partitioner():
    from sklearn.preprocessing import KBinsDiscretizer

    with pytest.raises(ValueError, match="already-fitted partitioner"):
        make_beta_calibration_error_scorer(KBinsDiscretizer())


def test_make_beta_calibration_error_scorer_rejects_bad_cell_ids():
    X, y, _ = _data()
    est = _CellCalibrator().fit(X, y)
    bad = FunctionTransformer(lambda Z: Z[:, 0] + 0.5).fit(X[:, 1:])
    with pytest.raises(ValueError, match="integer cell ids"):
        make_beta_calibration_error_scorer(bad)(est, X, y)
    missing = make_beta_calibration_error_scorer(
        _fixed_partitioner(X), confidence_column="conf"
    )
    with pytest.raises(ValueError, match="not a column"):
        missing(est, pd.DataFrame(X, columns=["a", "b"]), y)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"partitioner": "kdtree"},
        {"n_bins": 0},
        {"strategy": "kmeans"},
        {"norm": "l0"},
        {"confidence_column": 1.5},
    ],
)
def test_make_beta_calibration_error_scorer_param_validation(kwargs):
    with pytest.raises(InvalidParameterError):
        make_beta_calibration_error_scorer(**kwargs)


def test_beta_scorer_repr():
    assert "partitioner=None" in repr(neg_beta_calibration_error_scorer)
    X, _, _ = _data()
    r = repr(make_beta_calibration_error_scorer(_fixed_partitioner(X), n_bins=7))
    assert "FunctionTransformer" in r and "n_bins=7" in r


class _ReprCounting(FunctionTransformer):
    """A fitted partitioner that counts how often it is pretty-printed."""

    n_repr = 0

    def __repr__(self, N_CHAR_MAX=700):
        type(self).n_repr += 1
        return super().__repr__(N_CHAR_MAX)


def test_beta_scorer_call_does_not_format_its_partitioner():
    # scikit-learn formats the scorer's routing name on every call; with
    # repr(self) that pretty-printed the carried partitioner each time (a
    # third of the demo's tuning time went into it)
    X, y, _ = _data()
    est = _CellCalibrator(depth=1).fit(X, y)
    scorer = make_beta_calibration_error_scorer(
        _ReprCounting(_fixed_cells).fit(X[:, 1:])
    )
    _ReprCounting.n_repr = 0
    for _ in range(3):
        scorer(est, X, y)
    assert _ReprCounting.n_repr == 0
    assert "_ReprCounting" in scorer._routing_repr()
    assert "partitioner=None" in neg_beta_calibration_error_scorer._routing_repr()


# --------------------------------------------------- with the real calibrator


def test_scorers_grid_search_beta_binning_as_designed():
    # DESIGN.md: GridSearchCV(BetaBinningCalibrator(partitioner=KDTreePartitioner()),
    # {"partitioner__max_depth": [...], "points_per_bin": [...]}, scoring=...)
    from sklearn_betacal import BetaBinningCalibrator, KDTreePartitioner

    rng = np.random.default_rng(0)
    n = 1200
    h = rng.uniform(size=n)
    Z = rng.normal(size=(n, 2))
    y = (rng.uniform(size=n) < np.clip(h + 0.25 * np.sign(Z[:, 0]), 0, 1)).astype(int)
    X = np.column_stack([h, Z])
    beta = KDTreePartitioner(max_depth=2).fit(Z[:300])
    scoring = {
        "beta_fixed": make_beta_calibration_error_scorer(beta),
        "beta_own": neg_beta_calibration_error_scorer,
        "ece": neg_expected_calibration_error_scorer,
        "ecce": neg_cumulative_calibration_error_scorer,
        "smece": neg_smooth_calibration_error_scorer,
        "auac": area_under_accuracy_confidence_scorer,
    }
    search = GridSearchCV(
        BetaBinningCalibrator(partitioner=KDTreePartitioner(), random_state=0),
        {"partitioner__max_depth": [0, 2], "points_per_bin": [50, 100]},
        scoring=scoring,
        refit="beta_fixed",
        cv=KFold(2),
    ).fit(X[300:], y[300:])
    res = search.cv_results_
    # depth 0 is plain calibration: its own-partition beta-CE is its ECE
    depth0 = np.asarray(res["param_partitioner__max_depth"]) == 0
    assert_allclose(res["mean_test_beta_own"][depth0], res["mean_test_ece"][depth0])
    # the sign-dependent accuracy is only fixed with a partition
    assert search.best_params_["partitioner__max_depth"] == 2


def test_neg_beta_calibration_error_scorer_takes_calibrated_classifier():
    # the cells of a CalibratedClassifier are those of its calibrator's
    # partition over the partition features of the model's input
    from sklearn_betacal import (
        BetaBinningCalibrator,
        CalibratedClassifier,
        KDTreePartitioner,
        TemperatureScaler,
    )

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    y = (rng.uniform(size=2000) < 1 / (1 + np.exp(-X[:, 0] - X[:, 2] ** 2))).astype(int)
    clf = FrozenEstimator(LogisticRegression().fit(X, y))
    cal = BetaBinningCalibrator(KDTreePartitioner(max_depth=2), points_per_bin=50)
    model = CalibratedClassifier(clf, calibrator=cal, partition_features=[2]).fit(X, y)
    fitted = model.calibrated_classifiers_[0]["calibrators"][0]
    groups = fitted.partitioner_.transform(X[:, [2]])
    assert np.unique(groups).size == 4
    p = model.predict_proba(X)[:, 1]
    assert_allclose(
        neg_beta_calibration_error_scorer(model, X, y),
        -beta_calibration_error(y, p, cells=groups),
        rtol=1e-15,
    )
    plain = CalibratedClassifier(clf, calibrator=TemperatureScaler()).fit(X, y)
    with pytest.raises(TypeError, match="TemperatureScaler has no partition"):
        neg_beta_calibration_error_scorer(plain, X, y)


def test_make_beta_calibration_error_scorer_polars_frame_as_pandas():
    # the scorer's own pandas-only split raised TypeError on a polars frame
    # that BetaBinningCalibrator fits (DataFrame.drop(columns=...))
    pl = pytest.importorskip("polars")
    from sklearn_betacal import BetaBinningCalibrator, GroupColumnPartitioner

    # three topics, each miscalibrated its own way
    rng = np.random.default_rng(0)
    h, u = rng.uniform(size=(2, 600))
    k = rng.integers(0, 3, 600)
    topic = np.array(["a", "b", "c"])[k]
    y = (u < h ** (0.7 + 0.3 * k)).astype(int)
    frames = {
        "pandas": pd.DataFrame({"topic": topic, "conf": h}),
        "polars": pl.DataFrame({"topic": topic, "conf": h}),
    }
    scores = {}
    for kind, df in frames.items():
        bb = BetaBinningCalibrator(
            GroupColumnPartitioner("topic"), confidence_column="conf", random_state=0
        ).fit(df, y)
        part = GroupColumnPartitioner("topic").fit(frames["pandas"][["topic"]])
        for col in ("conf", 1):
            scorer = make_beta_calibration_error_scorer(part, confidence_column=col)
            scores[kind, col] = scorer(bb, df, y)
    p = bb.predict_proba(frames["polars"])[:, 1]
    cells = part.transform(frames["pandas"][["topic"]])
    expected = -beta_calibration_error(y, p, cells=cells)
    for got in scores.values():
        assert_allclose(got, expected, rtol=1e-15)


# --- labels other than {0, 1} and the calibrator's pos_label (session 15) ---

_LABEL_SCORERS = [
    neg_expected_calibration_error_scorer,
    neg_cumulative_calibration_error_scorer,
    neg_smooth_calibration_error_scorer,
    area_under_accuracy_confidence_scorer,
    neg_beta_calibration_error_scorer,
]


def _labelled_rows(n=600, seed=0):
    rng = np.random.default_rng(seed)
    h = rng.uniform(0.05, 0.95, size=n)
    X = np.column_stack([h, rng.integers(0, 3, n)])
    correct = rng.uniform(size=n) < h
    return X, correct


@pytest.mark.parametrize("scorer", _LABEL_SCORERS, ids=repr)
@pytest.mark.parametrize(
    "labels", [("wrong", "correct"), (-1, 1), (1, 2), (False, True)], ids=str
)
def test_scorers_read_labels_as_the_calibrator_does(scorer, labels):
    """String, {-1, 1}, {1, 2} and bool labels score what 0/1 labels score
    (before, a metric of 0/1 correctness refused them, and a search scored
    NaN and chose at random)."""
    from sklearn_betacal import BetaBinningCalibrator, GroupColumnPartitioner

    X, correct = _labelled_rows()
    y01 = correct.astype(int)
    y = np.where(correct, labels[1], labels[0])
    est = BetaBinningCalibrator(
        GroupColumnPartitioner(0), points_per_bin=20, random_state=0
    )
    want = scorer(sklearn.clone(est).fit(X, y01), X, y01)
    # "correct" is the positive class (for the strings, not the greater label)
    got = scorer(sklearn.clone(est).set_params(pos_label=labels[1]).fit(X, y), X, y)
    assert np.isfinite(got)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_search_with_string_labels_scores_every_candidate():
    from sklearn_betacal import UMDBinner

    X, correct = _labelled_rows()
    y = np.where(correct, "correct", "wrong")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a failing fold warns
        gs = GridSearchCV(
            UMDBinner(random_state=0, pos_label="correct"),
            {"points_per_bin": [20, 100]},
            scoring=neg_expected_calibration_error_scorer,
            cv=3,
        ).fit(X[:, 0], y)
    assert np.all(np.isfinite(gs.cv_results_["mean_test_score"]))


def test_scorers_score_the_calibrators_pos_label():
    """With ``pos_label=False`` the probability scored is the one of False
    and ``y`` is read as "is False" (AUAC is not symmetric: column 1 scored
    the other class before)."""
    from sklearn_betacal import UMDBinner

    X, correct = _labelled_rows()
    h = X[:, 0]
    y = ~correct  # False = correct
    est = UMDBinner(random_state=0, pos_label=False).fit(h, y)
    p_false = est.predict_proba(h)[:, list(est.classes_).index(False)]
    got = area_under_accuracy_confidence_scorer(est, h, y)
    assert got == pytest.approx(area_under_accuracy_confidence(correct, p_false))
    wrong_column = area_under_accuracy_confidence(~correct, 1 - p_false)
    assert got != pytest.approx(wrong_column)
    # through a Pipeline: the last step's pos_label
    pipe = make_pipeline(
        FunctionTransformer(), UMDBinner(random_state=0, pos_label=False)
    )
    assert area_under_accuracy_confidence_scorer(pipe.fit(h, y), h, y) == got


def test_scorers_refuse_labels_the_estimator_was_not_fitted_with():
    from sklearn_betacal import UMDBinner

    X, correct = _labelled_rows()
    y = np.where(correct, "correct", "wrong")
    est = UMDBinner(random_state=0).fit(X[:, 0], y)
    y_other = y.copy()
    y_other[:3] = "maybe"
    with pytest.raises(ValueError, match=r"labels \['maybe'\].*not fitted with"):
        neg_expected_calibration_error_scorer(est, X[:, 0], y_other)
