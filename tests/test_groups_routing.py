# SPDX-License-Identifier: MIT
"""Question groups: every internal split keeps a question on one side.

A log of 12 answers per question (``_log``). The first partition feature is
the question id itself, so the rows every step of a fit actually saw are
read off the fitted objects (or recorded by a small subclass): the learned
tree's honest split, its recalibration folds, the scaler's D1/D2 split and
``cv`` folds, CalibratedClassifier's folds, ``betacal fit --tune``'s folds.
"""

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_betacal import (
    BetaBinningCalibrator,
    CalibratedClassifier,
    CalibrationTreePartitioner,
    KDTreePartitioner,
    PlattScaler,
    ScalingBetaBinningCalibrator,
    ScalingBinningCalibrator,
)
from sklearn_betacal._partition import _tree as tree_module

PER_QUESTION = 12


def _log(n_questions=150, seed=0):
    """``(X, y, q)``: 12 answers per question; ``X = [h, question id, e0, e1]``
    (the question's two features shared by its answers, as an embedding of
    its text is), accuracy shifted by the question's first feature."""
    rng = np.random.default_rng(seed)
    q = np.repeat(np.arange(n_questions), PER_QUESTION)
    emb = rng.normal(size=(n_questions, 2))[q]
    h = rng.uniform(0.02, 0.98, size=q.shape[0])
    p = np.clip(h + np.where(emb[:, 0] > 0, 0.25, -0.25), 0.01, 0.99)
    y = (rng.uniform(size=q.shape[0]) < p).astype(np.int64)
    return np.column_stack([h, q, emb]), y, q


class RecordingTree(CalibrationTreePartitioner):
    """The learned tree, recording the question ids (feature 0 of what it is
    given) of every ``fit`` and ``transform``, and whether ``fit`` got groups."""

    calls = []

    def fit(
        self,
        X,
        y=None,
        *,
        confidence=None,
        sample_weight=None,
        points_per_bin=None,
        groups=None,
    ):
        RecordingTree.calls.append(
            ("fit", np.asarray(X)[:, 0].copy(), groups is not None)
        )
        return super().fit(
            X,
            y,
            confidence=confidence,
            sample_weight=sample_weight,
            points_per_bin=points_per_bin,
            groups=groups,
        )

    def transform(self, X):
        RecordingTree.calls.append(("transform", np.asarray(X)[:, 0].copy(), None))
        return super().transform(X)


def _tree(**params):
    RecordingTree.calls = []
    return RecordingTree(directions="recalibration", **params)


def _disjoint(a, b):
    a, b = np.unique(a), np.unique(b)
    assert a.size and b.size
    assert np.intersect1d(a, b).size == 0, "a question on both sides"


def _honest_sides():
    """The question ids the tree grew on and those the calibrator binned
    (its first ``transform`` after ``fit``), per fit recorded."""
    sides = []
    for k, (kind, ids, got_groups) in enumerate(RecordingTree.calls):
        if kind == "fit":
            nxt = RecordingTree.calls[k + 1]
            assert nxt[0] == "transform"
            sides.append((ids, nxt[1], got_groups))
    return sides


@pytest.fixture
def folds_seen(monkeypatch):
    """Every recalibration-direction fold of a learned tree: ``(F, helds)``."""
    seen = []
    original = tree_module._cross_validated_coefs

    def recording(F, y, w, random_state, **kwargs):
        out = original(F, y, w, random_state, **kwargs)
        seen.append((F, out[1]))
        return out

    monkeypatch.setattr(tree_module, "_cross_validated_coefs", recording)
    return seen


def _check_direction_folds(seen):
    """Column 1 of the direction fit's design is the standardised question
    id (``[s, X, s X]``): no question in a held-out fold and its training
    rows."""
    assert seen
    for F, helds in seen:
        ids = F[:, 1]
        assert len(helds) == tree_module.DIRECTION_FOLDS
        for held in helds:
            rest = np.setdiff1d(np.arange(F.shape[0]), held)
            _disjoint(ids[held], ids[rest])


def test_honest_split_and_recalibration_folds_keep_questions_whole(folds_seen):
    X, y, q = _log()
    bb = BetaBinningCalibrator(_tree(), points_per_bin=20, random_state=0)
    bb.fit(X, y, groups=q)
    ((grown, binned, got_groups),) = _honest_sides()
    assert got_groups
    _disjoint(grown, binned)
    # every question on one side, about half of the rows on each
    assert np.union1d(grown, binned).size == np.unique(q).size
    assert abs(grown.size - q.size / 2) <= PER_QUESTION
    _check_direction_folds(folds_seen)


def test_without_groups_the_splits_are_by_row(folds_seen):
    """The control: row splits put questions on both sides (so the checks
    above can fail), and groups=None is the default's fit, bit for bit."""
    X, y, q = _log()
    a = BetaBinningCalibrator(_tree(), points_per_bin=20, random_state=0).fit(X, y)
    ((grown, binned, got_groups),) = _honest_sides()
    assert not got_groups
    assert np.intersect1d(grown, binned).size > 0
    F, helds = folds_seen[0]
    rest = np.setdiff1d(np.arange(F.shape[0]), helds[0])
    assert np.intersect1d(F[helds[0], 1], F[rest, 1]).size > 0
    b = BetaBinningCalibrator(_tree(), points_per_bin=20, random_state=0)
    b.fit(X, y, groups=None)
    assert a.predict_proba(X).tobytes() == b.predict_proba(X).tobytes()


@pytest.mark.parametrize("cv", [None, 3])
def test_scaling_beta_binning_splits_keep_questions_whole(cv, folds_seen):
    X, y, q = _log()
    sbb = ScalingBetaBinningCalibrator(
        _tree(), cv=cv, points_per_bin=20, random_state=0
    )
    sbb.fit(X, y, groups=q)
    ((grown, binned, _),) = _honest_sides()
    _disjoint(grown, binned)
    # binned: the question of every row the scaling calibrator was given
    members = [sbb] if cv is None else sbb.estimators_
    for m in members:
        _disjoint(binned[m.scaling_indices_], binned[m.binning_indices_])
    if cv is not None:  # the folds partition the rows, by question
        for i in range(cv):
            for j in range(i):
                _disjoint(
                    binned[members[i].binning_indices_],
                    binned[members[j].binning_indices_],
                )
        assert sum(len(m.binning_indices_) for m in members) == binned.size
    _check_direction_folds(folds_seen)


def test_scaling_beta_binning_unsupervised_partition_folds():
    """Without an honest split the indices are rows of ``X`` itself."""
    X, y, q = _log()
    sbb = ScalingBetaBinningCalibrator(
        KDTreePartitioner(max_depth=1), cv=4, points_per_bin=20, random_state=0
    ).fit(X, y, groups=q)
    sizes = []
    for m in sbb.estimators_:
        _disjoint(q[m.scaling_indices_], q[m.binning_indices_])
        sizes.append(len(m.binning_indices_))
    # whole questions, folds as even as 12-row questions allow
    assert max(sizes) - min(sizes) <= PER_QUESTION


class RecordingPlatt(PlattScaler):
    """Platt scaling recording the confidences it is fitted on."""

    seen = []

    def fit(self, X, y, sample_weight=None):
        RecordingPlatt.seen.append(np.asarray(X, dtype=float).ravel().copy())
        return super().fit(X, y, sample_weight=sample_weight)


def test_scaling_binning_split_keeps_questions_whole():
    X, y, q = _log()
    h = X[:, 0]
    RecordingPlatt.seen = []
    ScalingBinningCalibrator(RecordingPlatt(), points_per_bin=20, random_state=0).fit(
        h, y, groups=q
    )
    (d1,) = RecordingPlatt.seen
    in_d1 = np.isin(h, d1)  # the confidences are distinct
    assert in_d1.sum() == d1.size
    _disjoint(q[in_d1], q[~in_d1])


def test_zero_weight_rows_drop_their_groups_too():
    X, y, q = _log()
    w = np.ones(q.size)
    w[::5] = 0.0
    RecordingPlatt.seen = []
    ScalingBinningCalibrator(RecordingPlatt(), random_state=0).fit(
        X[:, 0], y, sample_weight=w, groups=q
    )
    (d1,) = RecordingPlatt.seen
    kept = w > 0
    in_d1 = np.isin(X[:, 0], d1) & kept
    _disjoint(q[in_d1], q[kept & ~in_d1])


def test_grid_search_routes_groups_to_the_calibrator_and_its_tree(folds_seen):
    X, y, q = _log()
    with sklearn.config_context(enable_metadata_routing=True):
        est = BetaBinningCalibrator(_tree(), random_state=0)
        est.set_fit_request(groups=True)
        search = GridSearchCV(
            est, {"points_per_bin": [20, 40]}, cv=GroupKFold(3), error_score="raise"
        )
        search.fit(X, y, groups=q)
    sides = _honest_sides()
    assert len(sides) == 2 * 3 + 1  # two candidates x 3 folds, the refit
    for grown, binned, got_groups in sides:
        assert got_groups
        _disjoint(grown, binned)
    _check_direction_folds(folds_seen)


def test_pipeline_routes_groups_to_the_calibrator():
    X, y, q = _log()
    with sklearn.config_context(enable_metadata_routing=True):
        est = BetaBinningCalibrator(_tree(), points_per_bin=20, random_state=0)
        pipe = make_pipeline(FunctionTransformer(), est.set_fit_request(groups=True))
        pipe.fit(X, y, groups=q)
    ((grown, binned, got_groups),) = _honest_sides()
    assert got_groups
    _disjoint(grown, binned)
    # without routing, by the step's name
    _tree()
    pipe = make_pipeline(
        FunctionTransformer(),
        BetaBinningCalibrator(_tree(), points_per_bin=20, random_state=0),
    )
    pipe.fit(X, y, betabinningcalibrator__groups=q)
    ((grown, binned, got_groups),) = _honest_sides()
    assert got_groups
    _disjoint(grown, binned)


@pytest.mark.parametrize("routing", [False, True])
def test_calibrated_classifier_folds_and_calibrator_get_the_groups(routing):
    from sklearn.linear_model import LogisticRegression

    X, y, q = _log()
    with sklearn.config_context(enable_metadata_routing=routing):
        cal = BetaBinningCalibrator(_tree(), points_per_bin=20, random_state=0)
        if routing:
            cal.set_fit_request(groups=True)
        clf = CalibratedClassifier(LogisticRegression(), cal, cv=3, random_state=0)
        clf.fit(X, y, groups=q)
    sides = _honest_sides()
    assert len(sides) == 3
    for grown, binned, got_groups in sides:
        assert got_groups
        _disjoint(grown, binned)
    # the classifier's folds: each calibrator binned rows of questions its
    # classifier never saw (its fold) -- the binned ids of the three folds
    # are disjoint
    binned = [b for _, b, _ in sides]
    for i in range(3):
        for j in range(i):
            _disjoint(binned[i], binned[j])


@pytest.mark.filterwarnings("ignore:The groups parameter is ignored")
def test_calibrated_classifier_refuses_a_splitter_that_splits_questions():
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold

    X, y, q = _log(40)
    clf = CalibratedClassifier(LogisticRegression(), cv=KFold(3))
    with pytest.raises(ValueError, match="on both sides of a fold"):
        clf.fit(X, y, groups=q)


def test_same_seed_same_bytes_with_groups():
    X, y, q = _log()
    fits = [
        ScalingBetaBinningCalibrator(
            _tree(), cv=3, points_per_bin=20, random_state=3
        ).fit(X, y, groups=q)
        for _ in range(2)
    ]
    assert fits[0].predict_proba(X).tobytes() == fits[1].predict_proba(X).tobytes()


def test_too_few_questions_is_a_clear_error():
    X, y, q = _log()
    few = q % 3  # three questions
    with pytest.raises(ValueError, match="needs at least 5 question groups"):
        ScalingBetaBinningCalibrator(
            KDTreePartitioner(max_depth=1), cv=5, random_state=0
        ).fit(X, y, groups=few)
    with pytest.raises(ValueError, match="honest split.*at least 2 question groups"):
        BetaBinningCalibrator(_tree(), random_state=0).fit(
            X, y, groups=np.zeros_like(q)
        )
    with pytest.raises(ValueError, match="at least 2 question groups"):
        ScalingBinningCalibrator(random_state=0).fit(
            X[:, 0], y, groups=np.zeros_like(q)
        )
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(ValueError, match="needs at least that many groups"):
        CalibratedClassifier(LogisticRegression(), cv=5).fit(X, y, groups=few)


def test_bad_groups_are_named():
    X, y, q = _log(20)
    with pytest.raises(ValueError, match="one question id per row"):
        BetaBinningCalibrator(_tree(), random_state=0).fit(X, y, groups=q[:-1])
    missing = q.astype(object)
    missing[3] = None
    with pytest.raises(ValueError, match="missing"):
        BetaBinningCalibrator(_tree(), random_state=0).fit(X, y, groups=missing)


def test_cli_question_column_keeps_questions_whole(tmp_path, monkeypatch, capsys):
    pytest.importorskip("skops")
    import pandas as pd

    from sklearn_betacal.cli import _fit, main

    X, y, q = _log(100)
    words = np.array(["alpha", "beta", "gamma", "delta", "omega", "kappa"])
    text = [f"{words[int(i) % 6]} {words[int(i) % 5]} q{int(i)}" for i in q]
    src = tmp_path / "log.csv"
    pd.DataFrame(
        {"conf": X[:, 0], "ok": y, "qid": [f"Q{int(i)}" for i in q], "text": text}
    ).to_csv(src, index=False)
    folds, honest = [], []
    tune_folds = _fit._tune_folds

    def recording_folds(*args):
        cv = tune_folds(*args)
        folds.extend(cv.split(None))
        return cv

    honest_split = CalibrationTreePartitioner.honest_split

    def recording_split(self, n_rows, random_state=None, groups=None):
        honest.append(groups is not None)
        return honest_split(self, n_rows, random_state, groups)

    monkeypatch.setattr(_fit, "_tune_folds", recording_folds)
    monkeypatch.setattr(CalibrationTreePartitioner, "honest_split", recording_split)
    argv = [
        "fit", str(src), "--confidence", "conf", "--label", "ok", "--text", "text",
        "--partition", "learned", "--method", "bb", "--n-components", "2",
        "--tune", "--question-column", "qid", "--output", str(tmp_path / "m.skops"),
    ]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "questions: 100 (--question-column qid)" in out
    assert len(folds) == 5
    for train, test in folds:
        _disjoint(q[train], q[test])
    assert honest and all(honest)  # every fit of the search and the model's
    # too few questions for --tune's folds: one line, exit 2
    small = tmp_path / "small.csv"
    pd.read_csv(src).iloc[: 4 * PER_QUESTION].to_csv(small, index=False)
    argv[1], argv[-1] = str(small), str(tmp_path / "s.skops")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "at least 5 questions" in err and "\n" not in err


def test_feature_scaler_early_stopping_holds_out_whole_questions(monkeypatch):
    """``scaler="features"``: the boosting's early-stopping split of D1 (a
    row split inside scikit-learn without groups) holds out questions."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    seen = []
    original = HistGradientBoostingClassifier.fit

    def recording(self, X, y, sample_weight=None, **kwargs):
        seen.append((X[:, 1].copy(), kwargs.get("X_val")))
        return original(self, X, y, sample_weight=sample_weight, **kwargs)

    monkeypatch.setattr(HistGradientBoostingClassifier, "fit", recording)
    X, y, q = _log(200)
    sbb = ScalingBetaBinningCalibrator(
        KDTreePartitioner(max_depth=1),
        scaler="features",
        points_per_bin=20,
        random_state=0,
    ).fit(X, y, groups=q)
    ((fit_ids, X_val),) = seen
    assert X_val is not None  # column 1 of [logit q, view]: the question id
    _disjoint(fit_ids, X_val[:, 1])
    d1 = q[sbb.scaling_indices_]
    assert np.union1d(fit_ids, X_val[:, 1]).size == np.unique(d1).size
    assert abs(X_val.shape[0] - 0.1 * d1.size) <= PER_QUESTION


def test_pipeline_partitioner_under_metadata_routing():
    """The text one-liner's shape (a Pipeline partitioner whose last step is
    the learned tree) under metadata routing: the calibrator passes the
    confidences, ``b`` and the groups to that step by name (a Pipeline with
    routing enabled refused them as unrequested metadata)."""
    from sklearn.preprocessing import StandardScaler

    X, y, q = _log()
    with sklearn.config_context(enable_metadata_routing=True):
        part = make_pipeline(StandardScaler(), _tree())
        est = BetaBinningCalibrator(part, points_per_bin=20, random_state=0)
        GridSearchCV(
            est.set_fit_request(groups=True),
            {"points_per_bin": [20, 40]},
            cv=GroupKFold(2),
            error_score="raise",
        ).fit(X, y, groups=q)
    sides = _honest_sides()
    assert len(sides) == 2 * 2 + 1
    for grown, binned, got_groups in sides:
        assert got_groups
        _disjoint(grown, binned)


class RowSplitTree(CalibrationTreePartitioner):
    """A partitioner whose ``honest_split`` knows no groups."""

    def honest_split(self, n_rows, random_state=None):
        return super().honest_split(n_rows, random_state)


def test_an_honest_split_without_groups_is_refused_when_groups_are_given():
    X, y, q = _log(30)
    bb = BetaBinningCalibrator(RowSplitTree(), points_per_bin=20, random_state=0)
    bb.fit(X, y)  # without groups as before
    with pytest.raises(TypeError, match="does not take them"):
        bb.fit(X, y, groups=q)
