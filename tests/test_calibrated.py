# SPDX-License-Identifier: MIT
"""Tests for CalibratedClassifier (a classifier + one of our calibrators)."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.decomposition import PCA
from sklearn.frozen import FrozenEstimator
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.svm import LinearSVC

from sklearn_betacal import (
    BetaBinningCalibrator,
    CalibratedClassifier,
    GroupColumnPartitioner,
    KDTreePartitioner,
    PlattScaler,
    ScalingBetaBinningCalibrator,
    TemperatureScaler,
    UMDBinner,
)
from sklearn_betacal._calibrated import _rescale_top_label
from sklearn_betacal.metrics import expected_calibration_error


@pytest.fixture(scope="module")
def binary_split():
    """A fitted logistic model with string labels, plus calibration/test rows."""
    X, y = make_classification(
        n_samples=6000, n_features=6, n_informative=4, random_state=0
    )
    labels = np.array(["ham", "spam"])[y]
    clf = LogisticRegression().fit(X[:2000], labels[:2000])
    return clf, X[2000:4000], labels[2000:4000], X[4000:], labels[4000:]


@pytest.fixture(scope="module")
def digits_split():
    """A fitted 10-class logistic model with string labels on digits."""
    X, y = load_digits(return_X_y=True)
    names = np.array([f"d{k}" for k in range(10)])
    labels = names[y]
    clf = LogisticRegression(max_iter=3000).fit(X[:600], labels[:600])
    return clf, X[600:1200], labels[600:1200], X[1200:], labels[1200:]


# ----------------------------------------------------------- binary / β
def test_calibrated_one_line_beta_equals_hand_written(binary_split):
    clf, Xc, yc, Xt, _ = binary_split
    bb = BetaBinningCalibrator(
        KDTreePartitioner(max_depth=2), points_per_bin=100, random_state=0
    )
    model = CalibratedClassifier(FrozenEstimator(clf), bb).fit(Xc, yc)
    assert_array_equal(model.classes_, ["ham", "spam"])
    # the user's hand-written version of the same thing, with 0/1 labels
    hand = clone(bb).fit(
        np.column_stack([clf.predict_proba(Xc)[:, 1], Xc]), (yc == "spam")
    )
    expected = hand.predict_proba(np.column_stack([clf.predict_proba(Xt)[:, 1], Xt]))
    assert_allclose(model.predict_proba(Xt), expected, rtol=0, atol=0)
    assert set(model.predict(Xt)) <= {"ham", "spam"}
    assert_array_equal(model.predict(Xt), np.where(expected[:, 1] > 0.5, "spam", "ham"))


def test_calibrated_temperature_matches_sklearn(digits_split, sklearn_temperature):
    # independent reference: scikit-learn's own temperature scaling
    clf, Xc, yc, Xt, _ = digits_split
    ref = CalibratedClassifierCV(FrozenEstimator(clf), method="temperature")
    ours = CalibratedClassifier(FrozenEstimator(clf), TemperatureScaler(input="logit"))
    assert_allclose(
        ours.fit(Xc, yc).predict_proba(Xt),
        ref.fit(Xc, yc).predict_proba(Xt),
        atol=1e-7,
    )
    assert ours.multiclass_ == "native"
    assert_array_equal(ours.classes_, ref.classes_)


def test_calibrated_cross_fit_platt_matches_sklearn_sigmoid():
    # CalibratedClassifierCV(method="sigmoid") is Platt's method with his
    # smoothed targets on decision_function, one pair per stratified fold
    X, y = make_classification(n_samples=1500, random_state=1)
    labels = np.array([-1, 1])[y]
    ref = CalibratedClassifierCV(LogisticRegression(), method="sigmoid", cv=3)
    ours = CalibratedClassifier(
        LogisticRegression(), PlattScaler(input="logit", target_smoothing=True), cv=3
    )
    ref.fit(X[:1000], labels[:1000])
    ours.fit(X[:1000], labels[:1000])
    assert len(ours.calibrated_classifiers_) == 3
    assert_allclose(
        ours.predict_proba(X[1000:]), ref.predict_proba(X[1000:]), atol=1e-7
    )


def test_calibrated_ensemble_false_one_calibrator_on_out_of_fold():
    X, y = make_classification(n_samples=900, random_state=2)
    model = CalibratedClassifier(
        LogisticRegression(), UMDBinner(n_bins=5), cv=3, ensemble=False
    ).fit(X, y)
    assert len(model.calibrated_classifiers_) == 1
    pair = model.calibrated_classifiers_[0]
    # the calibrator saw all 900 out-of-fold confidences
    assert pair["calibrators"][0].bin_counts_.sum() == pytest.approx(900, abs=10)
    assert_allclose(pair["estimator"].coef_, LogisticRegression().fit(X, y).coef_)


def test_calibrated_decision_function_only_classifier():
    X, y = make_classification(n_samples=1200, random_state=3)
    model = CalibratedClassifier(LinearSVC(), UMDBinner(n_bins=5)).fit(X, y)
    P = model.predict_proba(X)
    assert P.shape == (1200, 2)
    assert np.all((P >= 0) & (P <= 1))
    assert (model.predict(X) == y).mean() > 0.8


# ------------------------------------------------------------ multiclass
def _top_label_by_hand(clf, Xc, yc, X, cal):
    P = clf.predict_proba(Xc)
    correct = clf.classes_[P.argmax(1)] == yc
    fitted = clone(cal).fit(P.max(1), correct)
    Pt = clf.predict_proba(X)
    return Pt, fitted.predict_proba(Pt.max(1))[:, 1]


def test_calibrated_top_label(digits_split):
    clf, Xc, yc, Xt, _ = digits_split
    cal = UMDBinner(n_bins=5, random_state=0)
    model = CalibratedClassifier(FrozenEstimator(clf), cal).fit(Xc, yc)
    assert model.multiclass_ == "top-label"
    Pt, conf = _top_label_by_hand(clf, Xc, yc, Xt, cal)
    P = model.predict_proba(Xt)
    top = Pt.argmax(1)
    assert_allclose(P[np.arange(len(top)), top], conf, rtol=1e-12)
    assert_allclose(P.sum(1), 1.0, rtol=1e-12)
    keep = conf >= 0.1  # argmax is kept wherever the row can sum to 1
    assert_array_equal(P[keep].argmax(1), top[keep])
    assert_array_equal(model.classes_, clf.classes_)


def test_calibrated_one_line_beta_multiclass_frozen(digits_split):
    # the one line, on a fitted 10-class model with string labels
    clf, Xc, yc, Xt, _ = digits_split
    model = CalibratedClassifier(
        FrozenEstimator(clf),
        BetaBinningCalibrator(partitioner=KDTreePartitioner(max_depth=1)),
    ).fit(Xc, yc)
    assert_array_equal(model.classes_, clf.classes_)
    assert model.multiclass_ == "top-label"
    P = model.predict_proba(Xt)
    assert_allclose(P.sum(1), 1.0, rtol=1e-12)
    top = clf.predict_proba(Xt).argmax(1)
    conf = P[np.arange(len(top)), top]
    keep = conf >= 0.1
    assert_array_equal(model.predict(Xt)[keep], clf.classes_[top[keep]])
    bb = model.calibrated_classifiers_[0]["calibrators"][0]
    # beta over the model's own 64 pixel inputs, the confidence in column 0
    assert bb.n_features_in_ == 65
    assert bb.n_cells_fitted_ + bb.n_cells_fallback_ >= 1


def test_calibrated_top_label_by_class_is_predicted_class_cell(digits_split):
    # top-label beta-binning with the predicted class as the cell equals
    # BetaBinningCalibrator with a GroupColumnPartitioner on that class
    clf, Xc, yc, Xt, _ = digits_split
    model = CalibratedClassifier(
        FrozenEstimator(clf),
        UMDBinner(points_per_bin=20, delta=0),
        multiclass="top-label-by-class",
    ).fit(Xc, yc)
    P = clf.predict_proba(Xc)
    bb = BetaBinningCalibrator(
        GroupColumnPartitioner(), points_per_bin=20, delta=0
    ).fit(np.column_stack([P.max(1), P.argmax(1)]), clf.classes_[P.argmax(1)] == yc)
    assert bb.n_cells_fallback_ == 0  # every class has >= 2 b rows
    Pt = clf.predict_proba(Xt)
    expected = bb.predict_proba(np.column_stack([Pt.max(1), Pt.argmax(1)]))[:, 1]
    got = model.predict_proba(Xt)[np.arange(len(Pt)), Pt.argmax(1)]
    assert_allclose(got, expected, rtol=1e-12)


def test_calibrated_one_vs_rest(digits_split):
    clf, Xc, yc, Xt, _ = digits_split
    cal = UMDBinner(n_bins=4)
    model = CalibratedClassifier(
        FrozenEstimator(clf), cal, multiclass="one-vs-rest"
    ).fit(Xc, yc)
    Pc, Pt = clf.predict_proba(Xc), clf.predict_proba(Xt)
    Q = np.column_stack(
        [
            clone(cal).fit(Pc[:, k], yc == c).predict_proba(Pt[:, k])[:, 1]
            for k, c in enumerate(clf.classes_)
        ]
    )
    total = Q.sum(1, keepdims=True)
    expected = np.where(total > 0, Q / np.where(total > 0, total, 1), 0.1)
    assert_allclose(model.predict_proba(Xt), expected, rtol=1e-12)


def test_calibrated_multiclass_beta_cross_fit_string_labels():
    X, y = load_digits(return_X_y=True)
    labels = np.array(list("abcdefghij"))[y]
    bb = BetaBinningCalibrator(
        KDTreePartitioner(max_depth=1), points_per_bin=20, random_state=0
    )
    model = CalibratedClassifier(LogisticRegression(max_iter=3000), bb, cv=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs convergence on raw pixels
        model.fit(X, labels)
    P = model.predict_proba(X)
    assert P.shape == (len(X), 10)
    assert_allclose(P.sum(1), 1.0, rtol=1e-12)
    assert set(model.predict(X)) <= set("abcdefghij")
    # each pair's calibrator partitions [confidence, 64 pixels]
    part = model.calibrated_classifiers_[0]["calibrators"][0]
    assert part.n_features_in_ == 65


@settings(max_examples=300, deadline=None)
@given(
    st.integers(3, 8).flatmap(
        lambda K: st.tuples(
            st.lists(
                st.lists(st.floats(0, 1), min_size=K, max_size=K),
                min_size=1,
                max_size=6,
            ),
            st.lists(st.floats(0, 1), min_size=6, max_size=6),
        )
    )
)
def test_rescale_top_label_properties(data):
    rows, confs = data
    P = np.asarray(rows, dtype=float)
    P = np.where(P.sum(1, keepdims=True) > 0, P, 1.0)
    P = P / P.sum(1, keepdims=True)
    top = P.argmax(1)
    K = P.shape[1]
    conf = np.asarray(confs[: len(P)])
    out = _rescale_top_label(P, top, conf)
    n = np.arange(len(P))
    assert_allclose(out.sum(1), 1.0, rtol=1e-9)
    assert_allclose(out[n, top], conf)
    assert np.all(out >= 0)
    ok = conf >= 1.0 / K + 1e-9
    others = out.copy()
    others[n, top] = -1
    assert np.all(others.max(1)[ok] < conf[ok])
    assert_array_equal(out[ok].argmax(1), top[ok])


def test_rescale_top_label_keeps_proportions_when_not_capped():
    P = np.array([[0.5, 0.3, 0.2]])
    out = _rescale_top_label(P, np.array([0]), np.array([0.8]))
    assert_allclose(out, [[0.8, 0.12, 0.08]])
    # capped: 0.35 at the top leaves 0.65, proportional would give 0.39 > 0.35
    out = _rescale_top_label(P, np.array([0]), np.array([0.35]))
    assert_allclose(out, [[0.35, 0.35, 0.30]])


# ------------------------------------------------------ partition features
def test_calibrated_partition_features_by_name_and_transformer():
    X, y = make_classification(n_samples=3000, n_features=5, random_state=4)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(5)])
    frame["topic"] = (X[:, 0] > 0).astype(int)
    clf = LogisticRegression().fit(frame[:1000], y[:1000])
    bb = BetaBinningCalibrator(GroupColumnPartitioner("topic"), points_per_bin=50)
    model = CalibratedClassifier(
        FrozenEstimator(clf), bb, partition_features=["topic"]
    ).fit(frame[1000:2000], y[1000:2000])
    assert_array_equal(model.feature_names_in_, frame.columns)
    cal = model.calibrated_classifiers_[0]["calibrators"][0]
    assert list(cal.feature_names_in_) == ["__confidence__", "topic"]
    assert cal.n_cells_fitted_ == 2
    # a transformer's output as the partition features
    model = CalibratedClassifier(
        FrozenEstimator(clf),
        BetaBinningCalibrator(KDTreePartitioner(max_depth=1), points_per_bin=50),
        partition_features=PCA(n_components=2),
    ).fit(frame[1000:2000], y[1000:2000])
    assert model.partition_transformer_.n_components_ == 2
    assert model.calibrated_classifiers_[0]["calibrators"][0].n_features_in_ == 3
    assert model.predict_proba(frame[2000:]).shape == (1000, 2)


def test_calibrated_grid_search_over_calibrator_params():
    X, y = load_breast_cancer(return_X_y=True)
    clf = LogisticRegression(max_iter=5000).fit(X[:200], y[:200])
    model = CalibratedClassifier(
        FrozenEstimator(clf),
        BetaBinningCalibrator(KDTreePartitioner(), random_state=0),
        partition_features=[0, 1],
    )
    grid = {
        "calibrator__points_per_bin": [20, 40],
        "calibrator__partitioner__max_depth": [0, 1],
    }
    search = GridSearchCV(model, grid, cv=2, scoring="neg_brier_score")
    search.fit(X[200:], y[200:])
    assert len(search.cv_results_["params"]) == 4
    best = search.best_estimator_.calibrated_classifiers_[0]["calibrators"][0]
    assert best.points_per_bin == search.best_params_["calibrator__points_per_bin"]


# ------------------------------------------------------------- bad input
def test_calibrated_rejects_bad_setup(binary_split):
    clf, Xc, yc, _, _ = binary_split
    with pytest.raises(TypeError, match="predict_proba or decision_function"):
        CalibratedClassifier(LinearRegression()).fit(Xc, yc)
    for bad in (IsotonicRegression(), LogisticRegression()):
        with pytest.raises(TypeError, match="one of sklearn_betacal's calibrators"):
            CalibratedClassifier(FrozenEstimator(clf), bad).fit(Xc, yc)
    with pytest.raises(ValueError, match="partition_features is only used"):
        CalibratedClassifier(
            FrozenEstimator(clf), UMDBinner(), partition_features=[0]
        ).fit(Xc, yc)
    frame = pd.DataFrame(Xc, columns=[f"f{j}" for j in range(Xc.shape[1])])
    with pytest.raises(ValueError, match="partition_features=\\['nope'\\]"):
        CalibratedClassifier(
            LogisticRegression(), BetaBinningCalibrator(), partition_features=["nope"]
        ).fit(frame, yc)
    with pytest.raises(ValueError, match="positions below 6"):
        CalibratedClassifier(
            FrozenEstimator(clf), BetaBinningCalibrator(), partition_features=[9]
        ).fit(Xc, yc)
    with pytest.raises(ValueError, match="labels the frozen classifier"):
        CalibratedClassifier(FrozenEstimator(clf)).fit(
            Xc, np.where(yc == "ham", "x", yc)
        )


def test_calibrated_native_needs_temperature(digits_split):
    clf, Xc, yc, _, _ = digits_split
    with pytest.raises(ValueError, match="multiclass='top-label'"):
        CalibratedClassifier(
            FrozenEstimator(clf), UMDBinner(), multiclass="native"
        ).fit(Xc, yc)


# ----------------------------------------------------- interoperability
def test_calibrated_pickle_clone_deterministic(binary_split):
    clf, Xc, yc, Xt, _ = binary_split
    model = CalibratedClassifier(
        LogisticRegression(),
        BetaBinningCalibrator(KDTreePartitioner(max_depth=1), random_state=0),
    )
    a = clone(model).fit(Xc, yc).predict_proba(Xt)
    fitted = model.fit(Xc, yc)
    b = fitted.predict_proba(Xt)
    assert a.tobytes() == b.tobytes()
    restored = pickle.loads(pickle.dumps(fitted))
    assert restored.predict_proba(Xt).tobytes() == b.tobytes()


def test_calibrated_decision_function_only_for_scalers(binary_split, digits_split):
    clf, Xc, yc, Xt, _ = binary_split
    platt = CalibratedClassifier(FrozenEstimator(clf), PlattScaler()).fit(Xc, yc)
    P = platt.predict_proba(Xt)
    assert_allclose(platt.decision_function(Xt), np.log(P[:, 1] / P[:, 0]))
    assert_array_equal(platt.decision_function(Xt) > 0, platt.predict(Xt) == "spam")
    umd = CalibratedClassifier(FrozenEstimator(clf), UMDBinner()).fit(Xc, yc)
    assert not hasattr(umd, "decision_function")
    clf, Xc, yc, Xt, _ = digits_split
    ts = CalibratedClassifier(FrozenEstimator(clf), TemperatureScaler()).fit(Xc, yc)
    scores = ts.decision_function(Xt)
    assert scores.shape == (len(Xt), 10)
    assert_array_equal(ts.classes_[scores.argmax(1)], ts.predict(Xt))


class _RecordingLR(LogisticRegression):
    """LogisticRegression that remembers the weights its fit received."""

    def fit(self, X, y, sample_weight=None):
        self.seen_weight_ = sample_weight
        return super().fit(X, y, sample_weight=sample_weight)


def test_calibrated_sample_weight_reaches_classifier_and_calibrator():
    X, y = make_classification(n_samples=600, random_state=5)
    w = np.where(np.arange(600) % 3 == 0, 0.0, 1.0)
    model = CalibratedClassifier(_RecordingLR(), UMDBinner(n_bins=4), cv=2)
    model.fit(X, y, sample_weight=w)
    for pair in model.calibrated_classifiers_:
        assert pair["estimator"].seen_weight_ is not None
        assert len(pair["estimator"].seen_weight_) == 300
        # zero weights = dropped rows for the calibrator: 200 of 300 rows left
        assert pair["calibrators"][0].bin_counts_.sum() == pytest.approx(200, abs=4)

    with sklearn.config_context(enable_metadata_routing=True):
        routed = CalibratedClassifier(
            _RecordingLR().set_fit_request(sample_weight=True),
            UMDBinner(n_bins=4).set_fit_request(sample_weight=False),
            cv=2,
        ).fit(X, y, sample_weight=w)
        for pair in routed.calibrated_classifiers_:
            assert len(pair["estimator"].seen_weight_) == 300
            assert pair["calibrators"][0].bin_counts_.sum() == pytest.approx(300, abs=4)
        with pytest.raises(ValueError, match="sample_weight"):
            CalibratedClassifier(_RecordingLR(), UMDBinner(), cv=2).fit(
                X, y, sample_weight=w
            )


def test_calibrated_default_calibrator_takes_routed_sample_weight():
    # with routing on, the default calibrator (built inside, so the user
    # cannot call its set_fit_request) raised UnsetMetadataPassedError; it
    # uses the weights as it does without routing
    X, y = make_classification(n_samples=600, random_state=5)
    w = np.where(np.arange(600) % 3 == 0, 0.0, 2.0)
    plain = CalibratedClassifier(LogisticRegression(), cv=2, random_state=0).fit(
        X, y, sample_weight=w
    )
    with sklearn.config_context(enable_metadata_routing=True):
        routed = CalibratedClassifier(
            LogisticRegression().set_fit_request(sample_weight=True),
            cv=2,
            random_state=0,
        ).fit(X, y, sample_weight=w)
        proba = routed.predict_proba(X)
    assert proba.tobytes() == plain.predict_proba(X).tobytes()


def test_calibrated_calibration_display(binary_split):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from sklearn.calibration import CalibrationDisplay

    clf, Xc, yc, Xt, yt = binary_split
    model = CalibratedClassifier(FrozenEstimator(clf), UMDBinner(n_bins=10))
    display = CalibrationDisplay.from_estimator(model.fit(Xc, yc), Xt, yt, n_bins=5)
    assert display.pos_label == "spam"
    assert np.all(np.abs(display.prob_true - display.prob_pred) < 0.1)
    import matplotlib.pyplot as plt

    plt.close("all")


def test_calibrated_scaling_beta_binning_runs():
    # ScalingBetaBinningCalibrator splits each fold's rows again (D1 / D2), so
    # it needs more rows than the estimator checks' toy sets have
    X, y = load_breast_cancer(return_X_y=True)
    sbb = ScalingBetaBinningCalibrator(
        KDTreePartitioner(max_depth=1), points_per_bin=20, random_state=0
    )
    model = CalibratedClassifier(
        LogisticRegression(max_iter=5000), sbb, partition_features=[0, 1, 2], cv=2
    ).fit(X, y)
    P = model.predict_proba(X)
    assert_allclose(P.sum(1), 1.0)
    assert (model.predict(X) == y).mean() > 0.9


class _StoredSoftmax(ClassifierMixin, BaseEstimator):
    """A classifier whose input rows are its own stored softmax outputs."""

    def fit(self, X, y):
        self.classes_ = np.arange(np.asarray(X).shape[1])
        return self

    def predict_proba(self, X):
        return np.asarray(X, dtype=np.float64)


@pytest.mark.parametrize("mode", ["top-label", "top-label-by-class"])
def test_calibrated_cifar10_top_label_binning(cifar_dir, mode):
    # real data: a WideResNet's CIFAR-10 test softmax (top-label ECE 0.05)
    record = np.load(cifar_dir / "wideresnet-16-4-cifar-10.npz")
    P = record["predictions"].astype(np.float64)
    y = record["ground_truth"].astype(np.int64).ravel()
    order = np.random.default_rng(0).permutation(y.size)
    cal, test = order[:5000], order[5000:]
    model = CalibratedClassifier(
        FrozenEstimator(_StoredSoftmax().fit(P, y)),
        UMDBinner(points_per_bin=50, random_state=0),
        multiclass=mode,
    ).fit(P[cal], y[cal])
    Q = model.predict_proba(P[test])

    def ece(M):
        return expected_calibration_error(M.argmax(1) == y[test], M.max(1), n_bins=15)

    assert ece(P[test]) > 0.04
    assert ece(Q) < 0.02
    # the top label is kept wherever the calibrated confidence allows it
    top = P[test].argmax(1)
    conf = Q[np.arange(top.size), top]
    keep = conf >= 0.1
    assert keep.mean() > 0.99
    assert_array_equal(Q.argmax(1)[keep], top[keep])


# ------------------------------- the inner classifier's output (issue 20, item 7)


class _BadOutputClassifier(LogisticRegression):
    """A logistic regression whose predict_proba / decision_function is broken."""

    def __init__(self, bad="shape", C=1.0):
        self.bad = bad
        super().__init__(C=C)

    def predict_proba(self, X):
        P = super().predict_proba(X)
        if self.bad == "shape":
            return P[:, 1:]  # one column for two classes
        if self.bad == "rows":
            return P[:-1]
        if self.bad == "nan":
            P[0] = np.nan
        elif self.bad == "range":
            P = P * 2 - 0.5
        elif self.bad == "sum":
            P = P * 0.8
        return P

    def decision_function(self, X):
        d = super().decision_function(X)
        return np.column_stack([d, d, d]) if self.bad == "dec-shape" else d


@pytest.mark.parametrize(
    "bad, match",
    [
        ("shape", r"predict_proba returned shape \(300, 1\); expected \(300, 2\)"),
        ("rows", r"predict_proba returned shape \(299, 2\)"),
        ("nan", r"predict_proba's output has 2 NaN or infinite"),
        ("range", r"predict_proba's output has \d+ value\(s\) outside \[0, 1\]"),
        ("sum", r"predict_proba returned 300 row\(s\) that do not sum to 1"),
    ],
)
def test_calibrated_checks_the_classifiers_predict_proba(bad, match):
    # a one-column or off-scale predict_proba was calibrated silently
    X, y = make_classification(n_samples=300, random_state=0)
    clf = FrozenEstimator(_BadOutputClassifier(bad).fit(X, y))
    with pytest.raises(ValueError, match="_BadOutputClassifier." + match):
        CalibratedClassifier(clf, UMDBinner(n_bins=5)).fit(X, y)


def test_calibrated_checks_the_classifiers_decision_function():
    X, y = make_classification(n_samples=300, random_state=0)
    clf = FrozenEstimator(_BadOutputClassifier("dec-shape").fit(X, y))
    cal = CalibratedClassifier(clf, PlattScaler(input="logit"))
    match = r"decision_function returned shape \(300, 3\)"
    with pytest.raises(ValueError, match=match):
        cal.fit(X, y)
    # the same classifier's sound predict_proba is accepted
    good = FrozenEstimator(_BadOutputClassifier("none").fit(X, y))
    proba = CalibratedClassifier(good, PlattScaler(input="logit")).fit(X, y)
    assert np.all(np.isfinite(proba.predict_proba(X)))


def test_calibrated_partition_features_of_a_polars_frame():
    # a string group column of a polars frame reaches the partitioner by
    # name, as from pandas (it was converted to float and failed)
    pl = pytest.importorskip("polars")
    rng = np.random.default_rng(0)
    n = 1500
    x = rng.normal(size=n)
    topic = rng.choice(["a", "b", "c"], n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-x))).astype(int)
    frame = pd.DataFrame({"x": x, "topic": topic})
    # the classifier reads x from either kind of frame
    select_x = FunctionTransformer(lambda D: np.asarray(D[["x"]], dtype=np.float64))
    clf = make_pipeline(select_x, LogisticRegression()).fit(frame[:500], y[:500])
    probas = []
    for df in (frame, pl.from_pandas(frame)):
        model = CalibratedClassifier(
            FrozenEstimator(clf),
            BetaBinningCalibrator(GroupColumnPartitioner("topic"), points_per_bin=50),
            partition_features=["topic"],
        ).fit(df[500:1000], y[500:1000])
        cal = model.calibrated_classifiers_[0]["calibrators"][0]
        assert list(cal.feature_names_in_) == ["__confidence__", "topic"]
        assert cal.n_cells_fitted_ == 3
        probas.append(model.predict_proba(df[1000:]))
    assert_array_equal(probas[0], probas[1])


# ------------------------------------------ fitted classifiers (issue 39, item 6)
def test_cv_prefit_points_to_frozen_estimator():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    cal = CalibratedClassifier(clf, cv="prefit")
    with pytest.raises(ValueError, match=r"FrozenEstimator\(clf\)"):
        cal.fit(X, y)


def test_a_fitted_classifier_without_frozen_estimator_is_said_to_be_refitted():
    import warnings

    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    with pytest.warns(UserWarning, match=r"already fitted.*FrozenEstimator\(clf\)"):
        CalibratedClassifier(clf, cv=3).fit(X, y)
    # neither an unfitted classifier nor a frozen one is warned about
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        CalibratedClassifier(LogisticRegression(), cv=3).fit(X, y)
        CalibratedClassifier(FrozenEstimator(clf)).fit(X, y)
