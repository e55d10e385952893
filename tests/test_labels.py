# SPDX-License-Identifier: MIT
"""Labels of any kind in every calibrator: classes_, pos_label, errors."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone

from sklearn_betacal import (
    BetaBinningCalibrator,
    GroupColumnPartitioner,
    HierarchicalLogisticScaler,
    PlattScaler,
    ScalingBetaBinningCalibrator,
    ScalingBinningCalibrator,
    TemperatureScaler,
    UMDBinner,
)
from sklearn_betacal._validation import EVIDENT_LABEL_PAIRS, encode_binary_labels

CONFIDENCE_ONLY = [
    UMDBinner(n_bins=5, random_state=0),
    PlattScaler(),
    TemperatureScaler(),
    ScalingBinningCalibrator(n_bins=5, random_state=0),
]
GROUPED = [
    BetaBinningCalibrator(GroupColumnPartitioner(), points_per_bin=50, random_state=0),
    HierarchicalLogisticScaler(GroupColumnPartitioner()),
    ScalingBetaBinningCalibrator(
        GroupColumnPartitioner(), points_per_bin=50, random_state=0
    ),
]
ALL = CONFIDENCE_ONLY + GROUPED


def _data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    h = rng.uniform(size=n)
    group = rng.integers(0, 2, size=n)
    correct = rng.uniform(size=n) < h ** np.where(group == 0, 2.0, 0.7)
    return h, np.column_stack([h, group]), correct


def _X(est, h, X):
    return X if est in GROUPED or hasattr(est, "confidence_column") else h


# (labels for [incorrect, correct], pos_label needed to name "correct")
ENCODINGS = [
    (np.array([0, 1]), None),
    (np.array([False, True]), None),
    (np.array([-1, 1]), None),
    (np.array([1, 2]), None),
    (np.array(["no", "yes"]), None),
    (np.array(["ham", "spam"], dtype=object), "spam"),
    (np.array([1.0, 0.0]), 0.0),
    (np.array(["incorrect", "correct"]), "correct"),
    # evident without pos_label (issue 39 item 2), whatever the sort order
    (np.array(["incorrect", "correct"]), None),
    (np.array(["Wrong", "Right"]), None),
    (np.array(["fail", "pass"], dtype=object), None),
    (np.array(["False", "True"]), None),
]


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize(
    "labels,pos_label", ENCODINGS, ids=lambda v: repr(v)[:30] if v is not None else ""
)
def test_labels_any_two_classes_same_calibration(est, labels, pos_label):
    h, X, correct = _data()
    Xe = _X(est, h, X)
    reference = clone(est).fit(Xe, correct.astype(int))
    p_ref = reference.predict_proba(Xe)[:, 1]

    model = clone(est).set_params(pos_label=pos_label).fit(Xe, labels[correct * 1])
    # classes_ is [incorrect, correct]: the original labels, the positive
    # one second, so that column 1 of predict_proba is P(correct)
    assert_array_equal(model.classes_, labels)
    assert model.classes_.dtype == labels.dtype
    P = model.predict_proba(Xe)
    # the same fit: column 1 is the 0/1 fit's column 1
    assert_allclose(P[:, 1], p_ref, rtol=1e-12)
    assert_allclose(P.sum(axis=1), 1.0)
    assert_array_equal(model.predict(Xe), np.where(p_ref > 0.5, labels[1], labels[0]))


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_labels_two_arbitrary_strings_warn_and_keep_sorted_order(est):
    """Neither of "ham"/"spam" is evidently correct: scikit-learn's
    classes_[1] (the later) is taken, with a warning that asks for
    pos_label; with pos_label, no warning."""
    h, X, correct = _data(n=400)
    y = np.where(correct, "spam", "ham")
    with pytest.warns(UserWarning, match="'spam', the later in sorted order"):
        model = clone(est).fit(_X(est, h, X), y)
    assert_array_equal(model.classes_, ["ham", "spam"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = clone(est).set_params(pos_label="ham").fit(_X(est, h, X), y)
    assert not [w for w in caught if "not evident" in str(w.message)]
    assert_array_equal(model.classes_, ["spam", "ham"])


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_labels_more_than_two_classes_sklearn_wording(est):
    h, X, correct = _data(n=300)
    y = np.arange(300) % 3
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        clone(est).fit(_X(est, h, X) if est not in CONFIDENCE_ONLY else h, y)
    with pytest.raises(ValueError, match="multiclass='top-label'"):
        clone(est).fit(_X(est, h, X), y)


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_labels_pos_label_not_a_label(est):
    h, X, correct = _data(n=300)
    y = np.where(correct, "yes", "no")
    with pytest.raises(ValueError, match=r"pos_label='maybe' is not a label of y"):
        clone(est).set_params(pos_label="maybe").fit(_X(est, h, X), y)


@pytest.mark.parametrize(
    "y,classes",
    [
        ([1, 1, 1], [0, 1]),
        ([0, 0], [0, 1]),
        ([-1, -1], [-1, 1]),
        ([True, True], [False, True]),
    ],
)
def test_encode_binary_labels_single_class_completed(y, classes):
    t, found = encode_binary_labels(np.asarray(y))
    assert_array_equal(found, classes)
    assert_array_equal(t, np.asarray(y) == classes[1])


def test_encode_binary_labels_errors():
    with pytest.raises(ValueError, match="single class 'spam'"):
        encode_binary_labels(np.array(["spam", "spam"]))
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        encode_binary_labels(np.array([0.2, 1.7]))  # [0, 1]: soft labels
    with pytest.raises(ValueError, match="Input y contains NaN"):
        encode_binary_labels(np.array([0.0, np.nan, 1.0]))


def test_hierarchical_decision_function_follows_classes():
    h, X, correct = _data()
    est = HierarchicalLogisticScaler(GroupColumnPartitioner())
    up = clone(est).fit(X, correct)
    down = clone(est).set_params(pos_label=False).fit(X, ~correct)
    # the same model: "correct" is True in one, False in the other, and
    # second in classes_ in both, so the decision functions agree
    assert_array_equal(down.classes_, [True, False])
    assert_allclose(up.decision_function(X), down.decision_function(X))
    assert_array_equal(up.decision_function(X) > 0, up.predict(X) == up.classes_[1])
    assert_array_equal(
        down.decision_function(X) > 0, down.predict(X) == down.classes_[1]
    )


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_labels_pos_label_survives_construction_and_clone(est):
    made = type(est)(pos_label="correct")
    assert made.get_params()["pos_label"] == "correct"
    assert clone(made).pos_label == "correct"
    h, X, correct = _data(n=400)
    y = np.where(correct, "correct", "wrong")
    fitted = clone(est).set_params(pos_label="correct").fit(_X(est, h, X), y)
    assert_array_equal(fitted.classes_, ["wrong", "correct"])


@pytest.mark.parametrize(
    "y",
    [
        np.array([0, 1, 1, 0]),
        np.array([True, False]),
        np.array([1, 1, 1], dtype=np.uint8),
        np.array([-1.0, 1.0, -1.0]),
        np.array([-0.0, 0.0, 1.0]),
        np.array([0.0, -0.0]),
        np.array([3, 7, 3], dtype=np.int16),
        np.array([0.0, 0.5, 1.0]),
        np.array([0.0, 1.0, 2.0]),
        np.array([0.0, 1.0, np.nan]),
        np.array([0.0, np.inf]),
        np.array([0.25, 0.75]),
        np.array([2**60, 2**60 + 1, 2**60]),
        np.array([1e300, -1e300]),
        np.array([-(2.0**63), 0.0]),
        np.array([0.0, 2.0**63]),
        np.array([-(2.0**63), 0.0]),
        np.array([0.0, 2.0**63]),
        np.arange(3).reshape(3, 1),
        np.zeros((3, 2)),
        np.array(["a", "b"]),
    ],
)
def test_encode_binary_labels_fast_path_is_type_of_target(y, monkeypatch):
    # numeric labels skip type_of_target's np.unique when they are plainly two
    # whole numbers; the outcome (targets, classes, or the error) must be what
    # type_of_target gives
    from sklearn_betacal import _validation

    def run():
        try:
            return encode_binary_labels(y)
        except ValueError as exc:
            return str(exc)

    fast = run()
    if _validation._numeric_binary_classes(np.asarray(y)) is not None:
        from sklearn.utils.multiclass import type_of_target

        assert type_of_target(y) == "binary"
        assert_array_equal(_validation._numeric_binary_classes(y), np.unique(y))
    monkeypatch.setattr(_validation, "_numeric_binary_classes", lambda y: None)
    slow = run()
    if isinstance(slow, str):
        assert fast == slow
    else:
        assert fast[0].tobytes() == slow[0].tobytes()
        assert fast[1].tobytes() == slow[1].tobytes()
        assert fast[1].dtype == slow[1].dtype


def test_encode_binary_labels_empty():
    with pytest.raises(ValueError, match="y is empty"):
        encode_binary_labels(np.array([], dtype=float))


@pytest.mark.parametrize(
    "pair",
    sorted(tuple(sorted(p)) for p in EVIDENT_LABEL_PAIRS),
    ids=lambda p: "/".join(p),
)
def test_calibrators_and_metrics_agree_on_every_pair_the_cli_reads(pair):
    """Issue 39 item 2: for every label pair the CLI understands, a calibrator
    puts "correct" second in classes_ (predict_proba[:, 1] is P(correct))
    and the metrics read the same word as correct, whatever the case."""
    from sklearn_betacal.metrics import expected_calibration_error

    h, _, correct = _data(n=600)
    word = next(w for w in pair if EVIDENT_LABEL_PAIRS[frozenset(pair)] == w)
    other = next(w for w in pair if w != word)
    for case in (str.lower, str.upper, str.title):
        y = np.where(correct, case(word), case(other))
        model = UMDBinner(n_bins=5, random_state=0).fit(h, y)
        assert model.classes_.tolist() == [case(other), case(word)]
        ref = UMDBinner(n_bins=5, random_state=0).fit(h, correct)
        p = model.predict_proba(h)[:, 1]
        assert_allclose(p, ref.predict_proba(h)[:, 1])
        assert expected_calibration_error(y, p) == expected_calibration_error(
            correct, p
        )
