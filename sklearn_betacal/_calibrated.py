# SPDX-License-Identifier: MIT
"""CalibratedClassifier: any scikit-learn classifier plus one of our calibrators.

The meta-estimator follows ``sklearn.calibration.CalibratedClassifierCV``: a
fitted classifier goes in as ``FrozenEstimator(clf)`` and only the calibrator
is fitted; an unfitted one is cross-fitted (k folds: a classifier on k - 1
folds, a calibrator on its outputs for the held-out fold). What it adds:

* any calibrator of this package, among them the group-conditional ones, for
  which the partition features are the classifier's own input ``X`` (all
  columns, the ones named in ``partition_features``, or a transformer's
  output): beta-calibration of a tabular model in one line;
* multiclass reductions: top-label (Gupta & Ramdas, 2022), top-label by
  predicted class, one-vs-rest, and ``TemperatureScaler`` on the whole
  logit matrix.

The calibrators always see 0/1 targets ("the predicted class is right",
"the row belongs to class k"); ``classes_`` keeps the original labels.
"""

import warnings
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import LeaveOneOut, check_cv
from sklearn.utils import get_tags, indexable
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    process_routing,
)
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d

from ._base import calibrator_input, smooth_proba
from ._cells import fit_takes
from ._compat import (
    HasMethods,
    Hidden,
    StrOptions,
    _check_method_params,
    _fit_context,
    _num_samples,
    _routing_enabled,
    _safe_indexing,
)
from ._defaults import default_calibrator
from ._docstrings import fill_doc
from ._kernels._scaling import LOGIT_EPS, to_logit
from ._random import seed_inner
from ._state import COMMON_RULES, Array, Custom, Est, Int, Schema, StateChecked, Str
from ._validation import (
    check_array_state,
    check_confidence_kind,
    check_finite,
    check_unit_interval,
    damaged,
    is_dataframe,
    join_confidence_features,
)

_MULTICLASS = ("auto", "top-label", "top-label-by-class", "one-vs-rest", "native")


def _native_multiclass(calibrator):
    """Whether the calibrator takes the ``(n, K)`` score matrix itself.

    scikit-learn's own marker: a calibrator of this package that fits more
    than two classes (``TemperatureScaler``) does so on the whole matrix.
    """
    return get_tags(calibrator).classifier_tags.multi_class


def _check_group_splits(splits, groups, cv):
    """A clear error when ``cv`` put rows of one group on both sides."""
    for train, test in splits:
        shared = np.intersect1d(groups[train], groups[test])
        if shared.size:
            raise ValueError(
                f"CalibratedClassifier: the cv {type(cv).__name__} put rows of "
                f"the group {shared[0]!r} on both sides of a fold although "
                "groups were given; use a group splitter (GroupKFold, "
                "StratifiedGroupKFold) or an int cv (then grouped folds)."
            )


def _softmax(Z):
    Z = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


def _rescale_top_label(P, top, conf):
    """Rows of ``P`` with the top entry replaced by ``conf``, summing to 1.

    The other entries keep their proportions, ``min(conf, lam * p_j)`` with
    ``lam`` chosen so that they sum to ``1 - conf`` (water-filling; a capped
    entry is one ulp below ``conf``), so no other entry reaches the
    calibrated top one and the argmax is kept whenever ``conf >= 1 / K``.
    When the non-zero others cannot hold ``1 - conf`` below ``conf``, they
    are capped and the zero ones share the remainder equally. With
    ``conf < 1 / K`` a row cannot sum to 1 with ``conf`` on top: the others
    are then plainly rescaled. Rows whose other entries are all 0 share
    ``1 - conf`` equally.
    """
    n, K = P.shape
    rows = np.arange(n)
    mask = np.ones_like(P, dtype=bool)
    mask[rows, top] = False
    others = P[mask].reshape(n, K - 1)
    others[others.sum(axis=1) == 0] = 1.0
    others /= others.sum(axis=1, keepdims=True)
    mass = 1.0 - conf
    # capped entries sit one ulp below conf, so the argmax is not a tie
    cap = np.maximum(np.nextafter(conf, -1.0), 0.0)
    R = -np.sort(-others, axis=1)
    tail = np.cumsum(R[:, ::-1], axis=1)[:, ::-1]  # tail[:, m] = sum_{j>=m} R_j
    # with m entries capped at conf the rest is scaled by num[m] / tail[m];
    # take the first m whose largest uncapped entry stays below conf
    num = mass[:, None] - np.arange(K - 1) * conf[:, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = R / tail  # <= 1; ratios rather than scales, for tiny tails
        ok = (num >= 0) & (tail > 0) & (ratio * num <= conf[:, None] * (1 + 1e-12))
        found = ok.any(axis=1)
        first = ok.argmax(axis=1)
        scaled = others / tail[rows, first][:, None] * num[rows, first][:, None]
        # inf * 0 only happens for capped entries: fmin keeps conf there
        new = np.fmin(scaled, cap[:, None])
    # no such m: every non-zero other is capped and the zero ones share the rest
    zero = others == 0
    n_zero = zero.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = (mass - (K - 1 - n_zero) * conf) / n_zero
    fill = ~found & (n_zero > 0) & (share <= conf * (1 + 1e-12))
    new[fill] = np.where(zero[fill], share[fill, None], cap[fill, None])
    plain = ~found & ~fill
    new[plain] = others[plain] * mass[plain, None]
    out = np.empty_like(P)
    out[mask] = new.ravel()
    out[rows, top] = conf
    return out


#: Calibrators per pair, by ``multiclass_`` (``K`` classes).
_N_CALIBRATORS = {
    "binary": lambda k: 1,
    "top-label": lambda k: 1,
    "native": lambda k: 1,
    "one-vs-rest": lambda k: k,
    "top-label-by-class": lambda k: k + 1,
}


def _check_pairs(owner, name, pairs, state):
    """``calibrated_classifiers_``: fitted ``(classifier, columns,
    calibrators)`` dicts of the classes the parameters name, as many
    calibrators as ``multiclass_`` fits."""
    from ._defaults import default_calibrator

    k = state["classes_"].shape[0]
    cal_type = type(state["calibrator"] or default_calibrator())
    n_cal = _N_CALIBRATORS[state["multiclass_"]](k)
    if not isinstance(pairs, list) or not pairs:
        raise damaged(owner, f"{name} is not a non-empty list")
    for j, pair in enumerate(pairs):
        where = f"{name}[{j}]"
        if not isinstance(pair, dict) or set(pair) != {
            "estimator", "columns", "calibrators"
        }:  # fmt: skip
            raise damaged(owner, f"{where} is not a fitted pair's dict")
        est = pair["estimator"]
        if type(est) is not type(state["estimator"]) or not (
            hasattr(est, "predict_proba") or hasattr(est, "decision_function")
        ):
            raise damaged(owner, f"{where} holds a {type(est).__name__}, not the "
                          "classifier of the estimator parameter")  # fmt: skip
        cols = pair["columns"]
        if cols is not None:
            cols = check_array_state(owner, f"{where}['columns']", cols, "i", (None,))
            if (
                np.unique(cols).shape != cols.shape
                or cols.size
                and (cols.min() < 0 or cols.max() >= k)
            ):
                raise damaged(owner, f"{where}['columns'] are not distinct classes")
            pair["columns"] = cols
        cals = pair["calibrators"]
        if not isinstance(cals, list) or len(cals) != n_cal:
            raise damaged(owner, f"{where} does not hold {n_cal} calibrator(s)")
        for c, cal in enumerate(cals):
            if cal is None and state["multiclass_"] == "top-label-by-class" and c:
                continue
            if type(cal) is not cal_type:
                raise damaged(owner, f"{where} holds a {type(cal).__name__}, not "
                              f"the {cal_type.__name__} calibrator")  # fmt: skip
    return pairs


def _check_kind(owner, state):
    from ._defaults import default_calibrator

    if state["_kind"] != calibrator_input(state["calibrator"] or default_calibrator()):
        raise damaged(owner, "_kind is not the calibrator's input")
    cv, n_pairs = state["cv"], len(state["calibrated_classifiers_"])
    if isinstance(state["estimator"], FrozenEstimator) or state["ensemble"] is False:
        want = 1
    elif cv is None or isinstance(cv, Integral):
        want = 5 if cv is None else int(cv)
    else:
        try:
            want = int(cv.get_n_splits())
        except Exception:  # a splitter that needs the data: not checked
            want = n_pairs
    if n_pairs != want:
        raise damaged(owner, f"calibrated_classifiers_ holds {n_pairs} fitted "
                      f"pairs, not the {want} the parameters fit")  # fmt: skip
    if state["classes_"].shape[0] < 2 or (
        (state["multiclass_"] == "binary") != (state["classes_"].shape[0] == 2)
    ):
        raise damaged(owner, "multiclass_ does not fit the number of classes_")


def _pair(estimator, columns, calibrators):
    """A fitted classifier with the calibrator(s) fitted on its outputs.

    A plain dict (model files keep only plain types). ``columns``:
    ``estimator.classes_[j]`` is ``classes_[columns[j]]``. ``calibrators``
    depends on the mode: ``[cal]`` for binary, top-label and native;
    ``[cal_0, ..., cal_{K-1}]`` for one-vs-rest; for top-label-by-class
    ``[root, cal_0, ..., cal_{K-1}]`` where a class predicted on fewer than
    two calibration rows has ``None`` (its rows use ``root``).
    """
    return {"estimator": estimator, "columns": columns, "calibrators": calibrators}


#: How far a row of ``predict_proba`` may sum from 1 (float32 models round).
PROBA_SUM_TOL = 1e-5


def _check_scores(out, clf, n, k, *, proba):
    """The classifier's ``predict_proba`` / ``decision_function`` output, checked.

    ``predict_proba`` must be ``(n, k)`` for ``k = len(classes_)``, finite, in
    ``[0, 1]`` with rows summing to 1 within ``PROBA_SUM_TOL``;
    ``decision_function`` ``(n,)`` for two classes (or ``(n, k)``) and
    finite. Anything else would be calibrated into a silently wrong answer,
    so it is a ``ValueError`` naming the classifier and what was wrong.
    """
    method = "predict_proba" if proba else "decision_function"
    inner = clf.estimator if isinstance(clf, FrozenEstimator) else clf
    who = f"{type(inner).__name__}.{method}"
    try:
        raw = np.asarray(out)
    except (TypeError, ValueError):  # ragged
        raw = out
    else:
        # the library's one check of what a confidence is: booleans would
        # become 1.0 / 0.0 and timestamps counts of time units, silently
        check_confidence_kind(
            raw,
            f"{who}'s output",
            fix="CalibratedClassifier needs one numeric score per class and row.",
        )
    try:
        a = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"{who} returned non-numeric output (type {type(out).__name__}); "
            "CalibratedClassifier needs one numeric score per class and row."
        ) from None
    shapes = [(n, k)] if proba else ([(n,), (n, k)] if k == 2 else [(n, k)])
    if a.shape not in shapes:
        raise ValueError(
            f"{who} returned shape {a.shape}; expected "
            f"{' or '.join(str(s) for s in shapes)} for {n} row(s) and the "
            f"{k} classes of classes_. Check that the classifier's "
            f"{method} follows scikit-learn's convention."
        )
    check_finite(
        a,
        f"{who}'s output",
        "every score must be finite (check the classifier and its input rows).",
    )
    if proba and a.size:
        check_unit_interval(
            a,
            f"{who}'s output",
            "probabilities are expected. Wrap a scorer's output in a "
            "classifier whose decision_function returns it instead.",
        )
        off = np.abs(a.sum(axis=1) - 1.0)
        n_off = int(np.count_nonzero(off > PROBA_SUM_TOL))
        if n_off:
            raise ValueError(
                f"{who} returned {n_off} row(s) that do not sum to 1 (largest "
                f"deviation {off.max():.3g}, tolerance {PROBA_SUM_TOL:g}); "
                "class probabilities are expected, one column per class."
            )
    return a


def _already_fitted(estimator):
    """Whether ``estimator`` is fitted (scikit-learn's own test)."""
    from sklearn.exceptions import NotFittedError

    try:
        check_is_fitted(estimator)
    except (NotFittedError, TypeError):
        return False
    return True


class CalibratedClassifier(
    StateChecked, MetaEstimatorMixin, ClassifierMixin, BaseEstimator
):
    """Calibrate any scikit-learn classifier with one of this package's calibrators.

    Like :class:`sklearn.calibration.CalibratedClassifierCV`, with any of the
    calibrators of this package instead of ``method``. A fitted classifier
    goes in as ``FrozenEstimator(clf)``: ``fit`` then only fits the
    calibrator, on ``(X, y)``. An unfitted classifier is cross-fitted: for
    each of the ``cv`` folds a clone is fitted on the other folds and a
    calibrator on its outputs for the fold (``ensemble=True``: the
    predictions are averaged over the folds' pairs), so the calibrator never
    sees outputs on the rows the classifier was trained on.

    Group-conditional calibrators (:class:`BetaBinningCalibrator`,
    :class:`ScalingBetaBinningCalibrator`,
    :class:`HierarchicalLogisticScaler`) receive ``[confidence, features]``
    with the confidence in column 0: the features are the classifier's own
    input ``X`` (all columns by default), so the partition (beta) is a
    partition of the model's input space.

    Read more in the :ref:`User Guide <calibrating_classifiers>`.

    Parameters
    ----------
    estimator : classifier
        Has ``fit`` and ``predict_proba`` or ``decision_function``.
        ``FrozenEstimator(fitted_clf)`` uses a fitted classifier as it is.
    calibrator : estimator or None, default=None
        One of this package's calibrators, cloned for every fit. ``None``
        means ``UMDBinner()``. Probabilities are fed to it unless its
        ``input`` is ``"logit"``, in which case it gets the classifier's
        ``decision_function`` (or the logit of ``predict_proba``).
    cv : int, cross-validation generator or iterable, default=None
        Folds for an unfitted ``estimator``, as in
        ``CalibratedClassifierCV``: ``None`` means 5-fold stratified
        (``StratifiedGroupKFold`` when ``fit`` is given ``groups``). Not
        used with a ``FrozenEstimator``.
    multiclass : {"auto", "top-label", "top-label-by-class", "one-vs-rest", \
"native"}, default="auto"
        How a binary calibrator is used with ``K > 2`` classes (binary targets
        always calibrate the probability of ``classes_[1]``):

        - ``"top-label"``: calibrate the top-label confidence ``max_k p_k``
          against "the predicted class is right"; the calibrated value
          replaces the top entry and the others are rescaled to sum to 1
          (capped at the top value, so the argmax is kept whenever the
          calibrated value is at least ``1 / K``).
        - ``"top-label-by-class"``: the same, with one calibrator per predicted
          class (the predicted class is a cell of beta; Gupta & Ramdas'
          top-label histogram binning). A class predicted on fewer than two
          calibration rows uses a top-label calibrator fitted on all rows.
        - ``"one-vs-rest"``: one calibrator per class on ``p_k`` against
          ``y == k``; rows are renormalised to sum to 1 (as
          ``CalibratedClassifierCV`` does).
        - ``"native"``: the calibrator takes the ``(n, K)`` matrix itself
          (:class:`TemperatureScaler`: ``softmax(z / tau)``).
        - ``"auto"``: ``"native"`` for :class:`TemperatureScaler`, else
          ``"top-label"``.
    partition_features : None, list of str or int, slice, or transformer, \
default=None
        For group-conditional calibrators only: the columns of ``X`` the
        partitioner sees. ``None``: all columns. Column names (DataFrame
        ``X``) or positions select some. A transformer (``fit`` /
        ``transform``, e.g. ``PCA``) is cloned, fitted on the ``X`` given to
        ``fit`` and its output used (``FrozenEstimator`` keeps a fitted one).
    ensemble : bool or "auto", default="auto"
        For an unfitted ``estimator``: ``True`` keeps one (classifier,
        calibrator) pair per fold and averages their probabilities;
        ``False`` fits one calibrator on the out-of-fold outputs of all rows
        (more points per bin) and one classifier on all rows. ``"auto"`` is
        ``True`` (``False`` for a ``FrozenEstimator``, where there are no
        folds).
    random_state : int, RandomState instance or None, default=None
        Seeds every ``random_state`` left at ``None`` in the clones that are
        fitted: the calibrator (the default ``UMDBinner``'s tie-breaking,
        and through it its partitioner and scaler), the classifier (each
        fold's clone gets the same seed) and a ``partition_features``
        transformer. A seed set on them is kept; a ``FrozenEstimator`` and
        a ``cv`` splitter keep their own. An int gives byte-identical
        results; ``None`` sets nothing.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, of the type given in ``y``.
    calibrated_classifiers_ : list of dict
        One pair per fold (one in all with a ``FrozenEstimator`` or
        ``ensemble=False``): ``{"estimator": fitted classifier, "columns":
        its classes' positions in classes_, "calibrators": list of fitted
        calibrators}``.
    multiclass_ : str
        The resolved ``multiclass`` mode (``"binary"`` for two classes).
    partition_transformer_ : transformer
        The fitted ``partition_features`` transformer, when one was given.
    n_features_in_ : int
        Number of features seen by the classifier.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen by the classifier, when it recorded them.

    See Also
    --------
    sklearn.calibration.CalibratedClassifierCV : sigmoid, isotonic and
        temperature calibration of a classifier.
    BetaBinningCalibrator : beta-binning of stored confidences.

    Notes
    -----
    ``sample_weight`` is passed to the classifier's ``fit`` when it accepts
    it (with a warning otherwise, as ``CalibratedClassifierCV`` does) and to
    the calibrator's. With metadata routing enabled it goes where it is
    requested (``estimator.set_fit_request(sample_weight=True)``,
    ``calibrator.set_fit_request(sample_weight=True)``); the default
    calibrator (``calibrator=None``) requests it.

    References
    ----------
    .. [1] C. Gupta and A. Ramdas. Top-label calibration and multiclass-to-
       binary reductions. ICLR 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.frozen import FrozenEstimator
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn_betacal import (
    ...     BetaBinningCalibrator, CalibratedClassifier, KDTreePartitioner)
    >>> X, y = make_classification(n_samples=6000, random_state=0)
    >>> labels = np.array(["ham", "spam"])[y]
    >>> clf = LogisticRegression().fit(X[:2000], labels[:2000])
    >>> bb = BetaBinningCalibrator(KDTreePartitioner(max_depth=2),
    ...                            points_per_bin=100, random_state=0)
    >>> cal = CalibratedClassifier(FrozenEstimator(clf), bb).fit(
    ...     X[2000:4000], labels[2000:4000])
    >>> cal.classes_
    array(['ham', 'spam'], dtype='<U4')
    >>> cal.predict_proba(X[4000:]).shape
    (2000, 2)
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"])],
        # checked in fit, with a message that lists our calibrators
        "calibrator": "no_validation",
        # "prefit" (scikit-learn's old spelling) is refused in fit, with
        # the FrozenEstimator that replaces it
        "cv": ["cv_object", Hidden(StrOptions({"prefit"}))],
        "multiclass": [StrOptions(set(_MULTICLASS))],
        "partition_features": [
            None,
            list,
            tuple,
            slice,
            Integral,
            str,
            np.ndarray,
            HasMethods(["fit", "transform"]),
        ],
        "ensemble": ["boolean", StrOptions({"auto"})],
        "random_state": ["random_state"],
    }

    _state_schema = Schema(
        _kind=Str({"confidence", "group"}),
        classes_=Array("key", (None,)),
        multiclass_=Str(set(_N_CALIBRATORS)),
        partition_transformer_=Est(methods=["transform"], optional=True),
        calibrated_classifiers_=Custom(_check_pairs),
        n_features_in_=Int(low=1, optional=True),
        feature_names_in_=Array("key", (None,), optional=True),
        rules=(*COMMON_RULES, _check_kind),
    )

    def __init__(
        self,
        estimator,
        calibrator=None,
        *,
        cv=None,
        multiclass="auto",
        partition_features=None,
        ensemble="auto",
        random_state=None,
    ):
        self.estimator = estimator
        self.calibrator = calibrator
        self.cv = cv
        self.multiclass = multiclass
        self.partition_features = partition_features
        self.ensemble = ensemble
        self.random_state = random_state

    # ------------------------------------------------------------ checking
    def _get_calibrator(self):
        if self.calibrator is None:
            cal = default_calibrator()
            if _routing_enabled():
                # built here, so the user cannot set its request: it takes
                # the weights, as it does without routing
                cal.set_fit_request(sample_weight=True)
            return cal
        return self.calibrator

    def _check_setup(self):
        """Kind of calibrator (``"confidence"`` / ``"group"``), with clear errors."""
        est = self.estimator
        if not (hasattr(est, "predict_proba") or hasattr(est, "decision_function")):
            raise TypeError(
                f"CalibratedClassifier needs a classifier with predict_proba or "
                f"decision_function; {type(est).__name__} has neither. Use a "
                "probabilistic classifier (e.g. LogisticRegression, "
                "HistGradientBoostingClassifier)."
            )
        cal = self._get_calibrator()
        # declared by the calibrator's class (see _base.calibrator_input)
        kind = calibrator_input(cal)
        if kind not in ("confidence", "group"):
            raise TypeError(
                f"calibrator must be one of sklearn_betacal's calibrators "
                "(TemperatureScaler, PlattScaler, UMDBinner, "
                "ScalingBinningCalibrator, BetaBinningCalibrator, "
                "ScalingBetaBinningCalibrator, HierarchicalLogisticScaler); got "
                f"{type(cal).__name__}. For sigmoid or isotonic calibration use "
                "sklearn.calibration.CalibratedClassifierCV."
            )
        if kind == "confidence" and self.partition_features is not None:
            raise ValueError(
                f"partition_features is only used by group-conditional "
                f"calibrators; {type(cal).__name__} calibrates the confidence "
                "alone. Use BetaBinningCalibrator, ScalingBetaBinningCalibrator "
                "or HierarchicalLogisticScaler, or drop partition_features."
            )
        return kind

    def _resolve_multiclass(self, n_classes):
        cal = self._get_calibrator()
        if n_classes == 2:
            return "binary"
        native = _native_multiclass(cal)
        mode = self.multiclass
        if mode == "auto":
            mode = "native" if native else "top-label"
        if mode == "native" and not native:
            raise ValueError(
                f"multiclass='native' needs a calibrator that takes the (n, K) "
                f"matrix (TemperatureScaler); {type(cal).__name__} calibrates one "
                "confidence per row. Use multiclass='top-label', "
                "'top-label-by-class' or 'one-vs-rest'."
            )
        if mode == "native" and self.partition_features is not None:
            raise ValueError("partition_features is not used by multiclass='native'.")
        return mode

    # ------------------------------------------------------------- outputs
    def _wants_logit(self):
        return self._get_calibrator().get_params().get("input") == "logit"

    @staticmethod
    def _scores(clf, X, *, logit):
        """``(n, K)`` class probabilities, or logits, in ``clf.classes_`` order.

        Probabilities come from ``predict_proba`` (``softmax`` of
        ``decision_function`` when it has none); logits from
        ``decision_function`` (``log`` of ``predict_proba`` when it has
        none). Binary logits are ``[0, d]``, so ``softmax`` of them is
        ``[1 - expit(d), expit(d)]``.
        """
        has_proba = hasattr(clf, "predict_proba")
        has_dec = hasattr(clf, "decision_function")
        n, k = _num_samples(X), len(clf.classes_)
        if (logit and has_dec) or not has_proba:
            d = _check_scores(clf.decision_function(X), clf, n, k, proba=False)
            if d.ndim == 1:
                d = np.column_stack([np.zeros_like(d), d])
            return d if logit else _softmax(d)
        P = _check_scores(clf.predict_proba(X), clf, n, k, proba=True)
        return np.log(np.clip(P, LOGIT_EPS, 1.0)) if logit else P

    def _features(self, X):
        """The partition features of ``X`` (array, or DataFrame when ``X`` is)."""
        pf = self.partition_features
        if pf is None:
            F = X
        elif hasattr(pf, "transform"):
            F = self.partition_transformer_.transform(X)
        else:
            try:
                F = _safe_indexing(X, pf, axis=1)
            except (ValueError, IndexError, KeyError, TypeError) as exc:
                raise ValueError(
                    f"partition_features={pf!r} does not select columns of X "
                    f"({exc}). Give column names of the DataFrame X or positions "
                    f"below {_num_samples(np.asarray(X).T)}."
                ) from None
        if hasattr(F, "iloc") and F.ndim == 1:  # a pandas column by name
            F = F.to_frame()
        elif hasattr(F, "to_frame") and not is_dataframe(F):  # a polars column
            F = F.to_frame()
        if is_dataframe(F):
            return F
        F = check_array(
            F,
            accept_sparse=False,
            dtype=np.float64,
            ensure_2d=False,
            input_name="partition features",
        )
        return F.reshape(-1, 1) if F.ndim == 1 else F

    @staticmethod
    def _calibrator_input(h, F):
        """``[confidence, features...]`` (a DataFrame when ``F`` is one)."""
        return join_confidence_features(h, F)

    def _h(self, P, k=None):
        """Confidence fed to a binary calibrator: ``P[:, k]`` or its logit."""
        p = P if k is None else P[:, k]
        return to_logit(p) if self._wants_logit() else p

    # -------------------------------------------------------------- fitting
    def _fit_calibrators(self, S, F, y_idx, cal_params):
        """Fit the calibrator(s) of one pair on scores ``S`` (classes_ order)."""
        proto = seed_inner(
            clone(self._get_calibrator()), self.random_state, name="calibrator"
        )
        if self._kind == "group":
            proto.set_params(confidence_column=0)
        # the targets below are 0/1 ("is right", "is class k"); the wrapper's
        # own classes_ keeps the user's labels
        if "pos_label" in proto.get_params():
            proto.set_params(pos_label=None)
        mode = self.multiclass_
        logit = self._wants_logit()

        def fit_one(h, target, rows=None):
            Fr, params = F, cal_params
            if rows is not None:
                h, target = h[rows], target[rows]
                Fr = None if F is None else _safe_indexing(F, rows)
                params = _check_method_params(S, params=cal_params, indices=rows)
            return clone(proto).fit(self._calibrator_input(h, Fr), target, **params)

        if mode == "native":
            return [clone(proto).fit(S, y_idx, **cal_params)]
        P = _softmax(S) if logit else S
        if mode == "binary":
            h = S[:, 1] - S[:, 0] if logit else S[:, 1]
            return [fit_one(h, (y_idx == 1).astype(np.int64))]
        if mode == "one-vs-rest":
            return [
                fit_one(self._h(P, k), (y_idx == k).astype(np.int64))
                for k in range(P.shape[1])
            ]
        top = P.argmax(axis=1)
        h = self._h(P.max(axis=1))
        correct = (y_idx == top).astype(np.int64)
        root = fit_one(h, correct)
        if mode == "top-label":
            return [root]
        per_class = []
        for k in range(P.shape[1]):
            rows = np.flatnonzero(top == k)
            per_class.append(fit_one(h, correct, rows) if rows.size >= 2 else None)
        return [root, *per_class]

    def _fit_pair(self, clf, X, y_idx, cal_params):
        S, columns = self._aligned_scores(clf, X)
        F = self._features(X) if self._kind == "group" else None
        return _pair(clf, columns, self._fit_calibrators(S, F, y_idx, cal_params))

    def _aligned_scores(self, clf, X, columns=None):
        """Scores of ``clf`` with columns in ``classes_`` order."""
        if columns is None:
            clf_classes = np.asarray(clf.classes_)
            if clf_classes.shape[0] != self.classes_.shape[0] or not np.all(
                np.isin(clf_classes, self.classes_)
            ):
                raise ValueError(
                    f"The classifier was fitted on classes "
                    f"{clf_classes.tolist()[:10]}, but y has classes "
                    f"{self.classes_.tolist()[:10]}. Every class must be seen "
                    "by every fitted classifier: use a stratified cv, or a "
                    "frozen classifier fitted on all classes."
                )
            columns = np.searchsorted(self.classes_, clf_classes)
        S_raw = self._scores(clf, X, logit=self._wants_logit())
        S = np.empty_like(S_raw)
        S[:, columns] = S_raw
        return S, columns

    @_fit_context(
        # the estimator and the calibrator are validated by their own fit
        prefer_skip_nested_validation=False
    )
    def fit(self, X, y, sample_weight=None, groups=None, **fit_params):
        """Fit (or reuse) the classifier and fit the calibrator on its outputs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input of the classifier (and the partition features).
        y : array-like of shape (n_samples,)
            Class labels of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights for the classifier (when its ``fit`` accepts them) and
            the calibrator.
        groups : array-like of shape (n_samples,), default=None
            The question (or other group) of every row: the cross-fitting
            folds keep each group in one fold (an int or ``None`` ``cv``
            becomes ``StratifiedGroupKFold``; a splitter that puts a group
            on both sides is an error), and a calibrator whose ``fit`` takes
            ``groups`` gets its rows' groups for its own splits. With
            metadata routing they go where requested (a group splitter asks
            for them; ``calibrator.set_fit_request(groups=True)``). See
            :ref:`groups`.
        **fit_params : dict
            Passed to the classifier's ``fit`` (routed, when metadata routing
            is enabled).

        Returns
        -------
        self : CalibratedClassifier
            The fitted meta-estimator.
        """
        if isinstance(self.cv, str):  # "prefit", the only string allowed
            raise ValueError(
                "cv='prefit' is not a cv of CalibratedClassifier: pass the fitted "
                "classifier as FrozenEstimator(clf) (from sklearn.frozen import "
                "FrozenEstimator), and only the calibrator is fitted, on the "
                "rows given to fit (as scikit-learn >= 1.6 replaced cv='prefit')."
            )
        self._kind = self._check_setup()
        check_classification_targets(y)
        X, y = indexable(X, y)
        y = column_or_1d(y, warn=True)
        frozen = isinstance(self.estimator, FrozenEstimator)
        if not frozen and _already_fitted(self.estimator):
            warnings.warn(
                f"the {type(self.estimator).__name__} given is already fitted; "
                "CalibratedClassifier cross-fits unfitted clones of it on the "
                "cv folds and does not use its fitted state. To calibrate this "
                "fitted classifier as it is, pass FrozenEstimator(clf).",
                UserWarning,
                stacklevel=2,
            )
        if frozen:
            check_is_fitted(self.estimator)
            self.classes_ = np.asarray(self.estimator.classes_)
            unseen = ~np.isin(y, self.classes_)
            if unseen.any():
                raise ValueError(
                    f"y has {int(unseen.sum())} row(s) with labels the frozen "
                    f"classifier does not know (e.g. {y[unseen][:3].tolist()}); "
                    f"its classes_ are {self.classes_.tolist()[:10]}."
                )
            self.classes_ = np.sort(self.classes_)
        else:
            self.classes_ = np.unique(y)
        y_idx = np.searchsorted(self.classes_, y)
        if self.classes_.shape[0] < 2:
            raise ValueError(
                "Classifier can't train when only one class is present: y has "
                f"the single class {self.classes_.tolist()}."
            )
        self.multiclass_ = self._resolve_multiclass(self.classes_.shape[0])
        if self._kind == "group" and self.multiclass_ == "native":
            raise ValueError("multiclass='native' needs TemperatureScaler.")

        if _routing_enabled():
            routed = process_routing(
                self, "fit", sample_weight=sample_weight, groups=groups, **fit_params
            )
            est_params = routed.estimator.fit
            cal_params = routed.calibrator.fit
            split_params = routed.splitter.split if not frozen else {}
        else:
            est_params = dict(fit_params)
            cal_params = {}
            split_params = {}
            if groups is not None:
                split_params = {} if frozen else {"groups": groups}
                if fit_takes(self._get_calibrator(), "groups"):
                    cal_params["groups"] = groups
            if sample_weight is not None:
                cal_params["sample_weight"] = sample_weight
                if fit_takes(self.estimator, "sample_weight"):
                    est_params["sample_weight"] = sample_weight
                elif not frozen:
                    warnings.warn(
                        f"{type(self.estimator).__name__}.fit does not accept "
                        "sample_weight; the weights are only used by the "
                        "calibrator.",
                        UserWarning,
                        stacklevel=2,
                    )

        pf = self.partition_features
        if hasattr(pf, "transform"):
            self.partition_transformer_ = (
                pf
                if isinstance(pf, FrozenEstimator)
                else seed_inner(
                    clone(pf), self.random_state, name="partition_features"
                ).fit(X)
            )

        if frozen:
            params = _check_method_params(X, params=cal_params)
            self.calibrated_classifiers_ = [
                self._fit_pair(self.estimator, X, y_idx, params)
            ]
        else:
            self._cross_fit(X, y, y_idx, est_params, cal_params, split_params, groups)

        first = self.calibrated_classifiers_[0]["estimator"]
        if hasattr(first, "n_features_in_"):
            self.n_features_in_ = first.n_features_in_
        if hasattr(first, "feature_names_in_"):
            self.feature_names_in_ = first.feature_names_in_
        return self

    def _cross_fit(self, X, y, y_idx, est_params, cal_params, split_params, groups):
        if isinstance(self.cv, Integral):
            n_folds = self.cv
        elif hasattr(self.cv, "n_splits"):
            n_folds = self.cv.n_splits
        else:
            n_folds = None
        if n_folds and np.any(np.bincount(y_idx) < n_folds):
            raise ValueError(
                f"Requesting {n_folds}-fold cross-validation but provided less "
                f"than {n_folds} examples for at least one class."
            )
        if isinstance(self.cv, LeaveOneOut):
            raise ValueError(
                "LeaveOneOut cross-validation does not allow all classes to be "
                "present in test splits; use a stratified cv."
            )
        if groups is not None and (self.cv is None or isinstance(self.cv, Integral)):
            # folds of whole groups, stratified as the default folds are
            from sklearn.model_selection import StratifiedGroupKFold

            groups = column_or_1d(groups)
            if np.unique(groups).shape[0] < (n_folds or 5):
                raise ValueError(
                    f"CalibratedClassifier: {n_folds or 5}-fold cross-fitting "
                    "by group needs at least that many groups; got "
                    f"{np.unique(groups).shape[0]}. Pass more groups or a "
                    "smaller cv."
                )
            cv = StratifiedGroupKFold(n_folds or 5)
            split_params = {**split_params, "groups": groups}
        else:
            cv = check_cv(self.cv, y, classifier=True)
        splits = list(cv.split(X, y, **split_params))
        if groups is not None:
            _check_group_splits(splits, column_or_1d(groups), cv)
        ensemble = self.ensemble if self.ensemble != "auto" else True

        def fit_clf(rows):
            params = _check_method_params(X, params=est_params, indices=rows)
            Xr, yr = _safe_indexing(X, rows), _safe_indexing(y, rows)
            est = seed_inner(clone(self.estimator), self.random_state, name="estimator")
            return est.fit(Xr, yr, **params)

        if ensemble:
            pairs = []
            for train, test in splits:
                clf = fit_clf(train)
                params = _check_method_params(X, params=cal_params, indices=test)
                Xt = _safe_indexing(X, test)
                pairs.append(self._fit_pair(clf, Xt, y_idx[test], params))
            self.calibrated_classifiers_ = pairs
            return
        # one calibrator on the out-of-fold scores of all rows
        S = None
        for train, test in splits:
            clf = fit_clf(train)
            S_test, _ = self._aligned_scores(clf, _safe_indexing(X, test))
            if S is None:
                S = np.zeros((_num_samples(X), S_test.shape[1]))
            S[test] = S_test
        clf = fit_clf(np.arange(_num_samples(X)))
        _, columns = self._aligned_scores(clf, _safe_indexing(X, [0]))
        F = self._features(X) if self._kind == "group" else None
        params = _check_method_params(X, params=cal_params)
        calibrators = self._fit_calibrators(S, F, y_idx, params)
        self.calibrated_classifiers_ = [_pair(clf, columns, calibrators)]

    # ----------------------------------------------------------- predicting
    def _pair_proba(self, pair, X, F):
        S, _ = self._aligned_scores(pair["estimator"], X, pair["columns"])
        mode = self.multiclass_
        cals = pair["calibrators"]
        if mode == "native":
            return cals[0].predict_proba(S)
        logit = self._wants_logit()
        P = _softmax(S) if logit else S

        def calibrated(cal, h):
            return cal.predict_proba(self._calibrator_input(h, F))[:, 1]

        if mode == "binary":
            h = S[:, 1] - S[:, 0] if logit else S[:, 1]
            q = calibrated(cals[0], h)
            return np.column_stack([1.0 - q, q])
        if mode == "one-vs-rest":
            Q = np.column_stack(
                [calibrated(c, self._h(P, k)) for k, c in enumerate(cals)]
            )
            total = Q.sum(axis=1, keepdims=True)
            uniform = np.full_like(Q, 1.0 / Q.shape[1])
            return np.divide(Q, total, out=uniform, where=total > 0)
        top = P.argmax(axis=1)
        h = self._h(P.max(axis=1))
        conf = calibrated(cals[0], h)
        if mode == "top-label-by-class":
            for k, cal in enumerate(cals[1:]):
                rows = np.flatnonzero(top == k)
                if cal is not None and rows.size:
                    Fr = None if F is None else _safe_indexing(F, rows)
                    conf[rows] = cal.predict_proba(self._calibrator_input(h[rows], Fr))[
                        :, 1
                    ]
        return _rescale_top_label(P, top, conf)

    @fill_doc
    def predict_proba(self, X):
        """Calibrated class probabilities.

        %(classifier_X)s
        proba : ndarray of shape (n_samples, n_classes)
            Column ``k`` is the calibrated probability of ``classes_[k]``,
            averaged over the folds' pairs; rows sum to 1.
        """
        check_is_fitted(self)
        F = self._features(X) if self._kind == "group" else None
        proba = np.zeros((_num_samples(X), self.classes_.shape[0]))
        for pair in self.calibrated_classifiers_:
            proba += self._pair_proba(pair, X, F)
        proba /= len(self.calibrated_classifiers_)
        return np.clip(proba, 0.0, 1.0)

    @fill_doc
    def predict(self, X):
        """The class with the highest calibrated probability.

        %(classifier_X)s
        y_pred : ndarray of shape (n_samples,)
            Elements of ``classes_``.
        """
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def _outputs_scores(self):
        """True for the scaling calibrators, whose probabilities are smooth."""
        return smooth_proba(self._get_calibrator())

    @available_if(_outputs_scores)
    @fill_doc  # below: available_if reads the docstring when it wraps
    def decision_function(self, X):
        """Log-odds of the calibrated probabilities (scaling calibrators only).

        Only with :class:`TemperatureScaler`, :class:`PlattScaler` and
        :class:`HierarchicalLogisticScaler`: a binning calibrator's
        probabilities are piecewise constant and often exactly 0 or 1, so
        their log-odds would be infinite; use :meth:`predict_proba` there.

        %(classifier_X)s
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            Binary: ``log(p_1 / p_0)``, positive for ``classes_[1]``.
            Multiclass: ``log(p_k)``, whose argmax is :meth:`predict`.
        """
        P = self.predict_proba(X)
        with np.errstate(divide="ignore"):
            logP = np.log(P)
        if P.shape[1] == 2:
            return logP[:, 1] - logP[:, 0]
        return logP

    # ------------------------------------------------------ scikit-learn API
    def get_metadata_routing(self):
        """Routing of ``fit`` metadata to the classifier, calibrator and splitter.

        Returns
        -------
        routing : MetadataRouter
            ``sample_weight`` and ``**fit_params`` go to ``estimator.fit`` and
            ``calibrator.fit`` where requested; ``groups`` to ``cv.split``
            (an int ``cv`` takes them: its folds are then grouped) and to
            ``calibrator.fit`` where requested.
        """
        router = (
            MetadataRouter(owner=type(self).__name__)
            .add(
                estimator=self.estimator,
                method_mapping=MethodMapping().add(caller="fit", callee="fit"),
            )
            .add(
                calibrator=self._get_calibrator(),
                method_mapping=MethodMapping().add(caller="fit", callee="fit"),
            )
        )
        if not isinstance(self.estimator, FrozenEstimator):
            splitter = self.cv
            if splitter is None or isinstance(splitter, Integral):
                # an int cv takes groups: its folds are then grouped (fit)
                from sklearn.model_selection import StratifiedGroupKFold

                splitter = StratifiedGroupKFold(5 if splitter is None else splitter)
            router.add(
                splitter=check_cv(splitter, classifier=True),
                method_mapping=MethodMapping().add(caller="fit", callee="split"),
            )
        return router

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        est_tags = get_tags(self.estimator)
        # group calibrators read X itself as partition features
        reads_X = calibrator_input(self.calibrator) == "group" and not hasattr(
            self.partition_features, "transform"
        )
        tags.input_tags.sparse = est_tags.input_tags.sparse and not reads_X
        tags.input_tags.allow_nan = est_tags.input_tags.allow_nan and not reads_X
        return tags


__all__ = ["CalibratedClassifier"]
