# SPDX-License-Identifier: MIT
"""Scorers for ``cross_validate`` and ``GridSearchCV``: calibration errors, AUAC.

The confidence that is scored is the probability of the estimator's positive
class (``pos_label`` of a calibrator, else ``classes_[1]``: column 1 of
``predict_proba``), and ``y`` is read as "is of that class", so labels such as
``"correct"``/``"wrong"``, {-1, 1} or ``bool`` are scored as the estimator
reads them.
The beta-CE additionally needs one cell id per row, from one of two sources:

- the estimator's own partition (:data:`neg_beta_calibration_error_scorer`):
  the group-conditional calibrators expose ``apply(X)``; for a
  :class:`~sklearn.pipeline.Pipeline` the scorer calls
  ``est[-1].apply(est[:-1].transform(X))``; for a
  :class:`~sklearn_betacal.CalibratedClassifier` it takes its calibrator's
  partition over the ``partition_features`` of ``X`` (the first fold's with
  ``ensemble=True``). Each candidate of a search is
  then judged on its *own* beta, so candidates with different partitions
  are scored on different yardsticks;
- a fixed, already-fitted partitioner carried by the scorer
  (:func:`make_beta_calibration_error_scorer`), so that every candidate is
  scored on the *same* beta, as the paper does when it tunes the kd-tree
  depth (Sec. 5).
"""

import numbers

import numpy as np
from sklearn.base import is_classifier
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from .._compat import HasMethods, _BaseScorer, _num_samples, validate_params
from .._docstrings import fill_doc
from .._validation import check_cell_ids, is_soft_labels, split_confidence_features
from ._beta_calibration import beta_calibration_error
from ._calibration_error import (
    _BETA_NORMS,
    _N_BINS,
    _STRATEGIES,
    expected_calibration_error,
)
from ._calibration_tests import cumulative_calibration_error, smooth_calibration_error
from ._selective import area_under_accuracy_confidence


def _positive_class(estimator):
    """The class whose probability the scorers score, or None.

    A binary classifier's positive class: a calibrator's ``pos_label`` (the
    last step's, through a :class:`~sklearn.pipeline.Pipeline`), else
    ``classes_[1]``. None for an estimator without two ``classes_`` (its
    ``y`` is then scored as given).
    """
    classes = getattr(estimator, "classes_", None)
    if classes is None or len(classes) != 2:
        return None
    final = estimator[-1] if isinstance(estimator, Pipeline) else estimator
    pos_label = getattr(final, "pos_label", None)
    return classes[1] if pos_label is None else pos_label


def _is_positive(y_true, positive, classes):
    """``y_true == positive`` as 0/1, refusing labels the estimator lacks."""
    y = np.asarray(y_true)
    classes_arr = np.asarray(classes)
    if (
        classes_arr.dtype.kind == "f"
        and set(classes_arr.tolist()) == {0.0, 1.0}
        and is_soft_labels(y)
    ):
        # soft labels (a judge's probability of "correct"): scored as they are
        return y if positive == 1.0 else 1.0 - y
    unseen = np.setdiff1d(np.unique(y), np.asarray(classes))
    if unseen.size:
        raise ValueError(
            f"y holds labels {unseen.tolist()[:5]} that the estimator was not "
            f"fitted with (its classes_ are {list(classes)}); score it on labels "
            "of those two classes."
        )
    return (y == positive).astype(np.int64)


class _PositiveClassScorer(_BaseScorer):
    """A scorer of ``score_func(y is positive, P(positive))``.

    scikit-learn's ``make_scorer`` passes ``y`` through as given, so a metric
    of 0/1 correctness failed on string or {-1, 1} labels (and a search
    scored NaN), and column 1 was scored whatever the calibrator's
    ``pos_label``. This one reads both through :func:`_positive_class`.
    """

    def _positive_response(self, method_caller, estimator, X, y_true):
        positive = _positive_class(estimator)
        y_prob = method_caller(estimator, "predict_proba", X, pos_label=positive)
        if positive is not None:
            y_true = _is_positive(y_true, positive, estimator.classes_)
        return y_true, y_prob

    #: what the overlap warning tells to pass the kwargs to
    _maker = "make_scorer"

    def _warn_kwargs_overlap(self, kwargs):
        self._warn_overlap(
            message=(
                "There is an overlap between set kwargs of this scorer instance "
                f"and passed metadata. Please pass them either as kwargs to "
                f"{self._maker} or metadata, but not both."
            ),
            kwargs=kwargs,
        )

    def _score(self, method_caller, estimator, X, y_true, **kwargs):
        self._warn_kwargs_overlap(kwargs)
        y_true, y_prob = self._positive_response(method_caller, estimator, X, y_true)
        return self._sign * self._score_func(
            y_true, y_prob, **{**self._kwargs, **kwargs}
        )


#: ``-expected_calibration_error`` of the positive class's probability (10
#: equal-width bins). Greater is better.
neg_expected_calibration_error_scorer = _PositiveClassScorer(
    expected_calibration_error, -1, {}, response_method="predict_proba"
)

#: ``-cumulative_calibration_error`` (ECCE) of the positive class's
#: probability: no bins to choose, so candidates are compared on one
#: yardstick. Greater is better.
neg_cumulative_calibration_error_scorer = _PositiveClassScorer(
    cumulative_calibration_error, -1, {}, response_method="predict_proba"
)

#: ``-smooth_calibration_error`` (smECE) of the positive class's probability.
#: Greater is better.
neg_smooth_calibration_error_scorer = _PositiveClassScorer(
    smooth_calibration_error, -1, {}, response_method="predict_proba"
)

#: :func:`area_under_accuracy_confidence` of the positive class's probability.
area_under_accuracy_confidence_scorer = _PositiveClassScorer(
    area_under_accuracy_confidence, 1, {}, response_method="predict_proba"
)


class _BetaCalibrationErrorScorer(_PositiveClassScorer):
    """``-beta_calibration_error`` with cell ids from a partitioner.

    A scikit-learn scorer object (``_BaseScorer``), so it takes part in
    multi-metric caching of ``predict_proba`` and in metadata routing
    (``set_score_request(sample_weight=True)``).
    """

    _maker = "make_beta_calibration_error_scorer"

    def __init__(self, partitioner, confidence_column, kwargs):
        super().__init__(
            beta_calibration_error, -1, kwargs, response_method="predict_proba"
        )
        self._partitioner = partitioner
        self._confidence_column = confidence_column

    def __repr__(self):
        kwargs = "".join(f", {k}={v!r}" for k, v in self._kwargs.items())
        if self._partitioner is None:
            return f"make_beta_calibration_error_scorer(partitioner=None{kwargs})"
        return (
            f"make_beta_calibration_error_scorer({self._partitioner!r}, "
            f"confidence_column={self._confidence_column!r}{kwargs})"
        )

    def _routing_repr(self):
        # scikit-learn formats this name for its metadata-routing messages on
        # every call of the scorer; repr(self) would pretty-print the carried
        # partitioner each time (a third of the demo's tuning time)
        inner = (
            "partitioner=None"
            if self._partitioner is None
            else (type(self._partitioner).__name__ + "(...)")
        )
        return f"make_beta_calibration_error_scorer({inner}, ...)"

    def _own_cells(self, estimator, X):
        from .._calibrated import CalibratedClassifier

        if isinstance(estimator, CalibratedClassifier):
            return _calibrated_classifier_cells(estimator, X), "apply"
        if isinstance(estimator, Pipeline):
            final, Xt = estimator[-1], estimator[:-1].transform(X)
        else:
            final, Xt = estimator, X
        if not callable(getattr(final, "apply", None)):
            raise TypeError(
                "neg_beta_calibration_error_scorer takes the cells from the "
                f"estimator's own partition through apply(X), but "
                f"{type(final).__name__} has no apply method. Score it with "
                "make_beta_calibration_error_scorer(fitted_partitioner) instead."
            )
        return final.apply(Xt), "apply"

    def _carried_cells(self, X):
        col = self._confidence_column
        # a DataFrame's other columns stay one (pandas or polars), with their
        # names, for a partitioner that reads a column by name
        Z = X if col is None else split_confidence_features(X, col)[1]
        return self._partitioner.transform(Z), "partitioner"

    def _score(self, method_caller, estimator, X, y_true, **kwargs):
        self._warn_kwargs_overlap(kwargs)
        if not is_classifier(estimator):
            raise TypeError(
                "The beta-calibration-error scorer needs a classifier with "
                f"predict_proba; got {type(estimator).__name__}."
            )
        # cells first: a misconfigured partition fails before predict_proba
        if self._partitioner is None:
            ids, who = self._own_cells(estimator, X)
        else:
            ids, who = self._carried_cells(X)
        y_true, y_prob = self._positive_response(method_caller, estimator, X, y_true)
        cells = check_cell_ids(ids, y_prob.shape[0], who=who)
        params = {**self._kwargs, **kwargs}
        return self._sign * beta_calibration_error(
            y_true, y_prob, cells=cells, **params
        )


def _calibrated_classifier_cells(estimator, X):
    """Cells of a fitted CalibratedClassifier's partition for the rows of X.

    The partition of its (first) calibrator over the partition features of X
    (``partition_features``): the cells the calibrated probabilities come
    from. With ``ensemble=True`` every fold has its own calibrator and
    partition; the first fold's is used, so all rows are scored on one beta.
    """
    check_is_fitted(estimator)
    first = estimator.calibrated_classifiers_[0]["calibrators"][0]
    if estimator._kind != "group" or estimator.multiclass_ in (
        "native",
        "one-vs-rest",
    ):
        what = (
            f"its calibrator {type(first).__name__} has no partition"
            if estimator._kind != "group"
            else f"multiclass={estimator.multiclass_!r} has one partition per class"
        )
        raise TypeError(
            "neg_beta_calibration_error_scorer takes the cells from the "
            f"CalibratedClassifier's own partition, but {what}. Score it with "
            "make_beta_calibration_error_scorer(fitted_partitioner) instead."
        )
    F = estimator._features(X)
    # apply reads only the partition features; the confidence column is there
    # because the calibrator's input has it first
    h = np.zeros(_num_samples(X), dtype=np.float64)
    return first.apply(estimator._calibrator_input(h, F))


#: ``-beta_calibration_error`` on the estimator's own partition: cell ids
#: from ``estimator.apply(X)`` (or ``est[-1].apply(est[:-1].transform(X))``
#: for a Pipeline). Greater is better.
neg_beta_calibration_error_scorer = _BetaCalibrationErrorScorer(None, 0, {})


@fill_doc
@validate_params(
    {
        "partitioner": [HasMethods(["transform"]), None],
        "confidence_column": [numbers.Integral, str, None],
        "n_bins": [_N_BINS],
        "strategy": [_STRATEGIES],
        "norm": [_BETA_NORMS],
        "debiased": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def make_beta_calibration_error_scorer(
    partitioner=None,
    *,
    confidence_column=0,
    n_bins=10,
    strategy="uniform",
    norm="l1",
    debiased=False,
):
    """Make a ``-beta_calibration_error`` scorer with a fixed (or own) partition.

    The scorer computes ``-beta_calibration_error(y == positive,
    P(positive), cells=cells)``, greater is better (the positive class: the
    estimator's ``pos_label``, else ``classes_[1]``). With a fitted
    ``partitioner`` every candidate of a search is scored on the same cells
    (the same beta), which makes the scores comparable across partitioner
    hyperparameters.

    Read more in the :ref:`User Guide <metrics>`.

    Parameters
    ----------
    partitioner : fitted transformer or None, default=None
        Any already-fitted object whose ``transform`` returns one integer cell
        id per row (a fitted ``KDTreePartitioner``, a ``FrozenEstimator``, a
        fitted ``Pipeline`` ending in a partitioner, ...). It is never refit.
        ``None`` uses the scored estimator's own partition through its
        ``apply(X)`` method (for a ``Pipeline``: ``est[-1].apply`` on
        ``est[:-1].transform(X)``), like :data:`neg_beta_calibration_error_scorer`.
    confidence_column : int, str or None, default=0
        Where the confidence sits in the ``X`` that the search passes to the
        estimator. The partitioner is applied to the *other* columns (a
        DataFrame keeps its column names). ``None`` applies the partitioner to
        ``X`` as given, for pipelines whose raw input is not a confidence
        column plus features (e.g. text: the carried partitioner is then itself
        a fitted ``Pipeline`` such as embedder + partitioner).
    %(cell_binning)s
    norm : {"l1", "l2", "max", "l2_squared"}, default="l1"
        Per-cell error, see :func:`beta_calibration_error`.
    debiased : bool, default=False
        Score with Kumar et al.'s debiased estimate (needs
        ``norm="l2_squared"``): the plug-in beta-CE rewards a candidate whose
        bins happen to be large (less noise), the debiased one does not, so
        this is the honest choice for tuning ``points_per_bin`` or the
        partition depth.

    Returns
    -------
    scorer : callable
        A scikit-learn scorer ``scorer(estimator, X, y)``; it supports
        ``set_score_request(sample_weight=True)`` under metadata routing.

    See Also
    --------
    beta_calibration_error : The metric.
    neg_expected_calibration_error_scorer : The average-case counterpart.

    Notes
    -----
    Cell id ``-1`` ("outside every bounded leaf") is scored as one more cell.
    The confidence is the probability of the estimator's positive class (its
    ``pos_label``, else ``classes_[1]``: "the answer is correct"), and ``y``
    is scored as "is of that class", whatever the labels' type.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import cross_val_score
    >>> from sklearn.preprocessing import FunctionTransformer
    >>> from sklearn_betacal.metrics import make_beta_calibration_error_scorer
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([rng.uniform(size=400), rng.integers(0, 3, 400)])
    >>> y = (rng.uniform(size=400) < X[:, 0]).astype(int)
    >>> cells = FunctionTransformer(lambda Z: Z[:, 0].astype(int)).fit(X[:, 1:])
    >>> scorer = make_beta_calibration_error_scorer(cells)
    >>> scores = cross_val_score(LogisticRegression(), X, y, scoring=scorer, cv=2)
    >>> bool(np.all(scores <= 0))
    True
    """
    if partitioner is not None:
        try:
            check_is_fitted(partitioner)
        except Exception as exc:  # NotFittedError or a partitioner's own check
            raise ValueError(
                "make_beta_calibration_error_scorer needs an already-fitted "
                f"partitioner (it is never refit); {type(partitioner).__name__} "
                f"is not fitted: {exc}"
            ) from None
    if debiased and norm != "l2_squared":
        raise ValueError(
            "debiased=True needs norm='l2_squared' (Kumar et al.'s correction is "
            f"for squared gaps); got norm={norm!r}."
        )
    kwargs = {"n_bins": n_bins, "strategy": strategy, "norm": norm}
    if debiased:
        kwargs["debiased"] = True
    return _BetaCalibrationErrorScorer(partitioner, confidence_column, kwargs)
