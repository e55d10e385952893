# SPDX-License-Identifier: MIT
"""Temperature scaling: ``sigma(s / tau)`` or ``softmax(z / tau)``, one scalar.

:class:`TemperatureScaler` validates the input, turns probabilities into
logits, calls the Newton kernel in :mod:`sklearn_betacal._kernels._scaling`
and stores ``temperature_``. The fit follows the calibration chapter ("Temperature
scaling: the one-scalar repair"): held-out NLL, convex in ``1 / tau``, bracket
``tau in [0.05, 20]``; prediction keeps the chapter's invariance theorem.
"""

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted

from ._base import binary_predict, binary_proba, logit_eps_spec, positive_index
from ._compat import StrOptions, _fit_context, validate_data
from ._docstrings import fill_doc
from ._kernels import _scaling
from ._kernels._scaling import LOGIT_EPS, to_logit
from ._state import COMMON_RULES, FEATURES, Array, Float, Int, Schema, StateChecked
from ._validation import (
    MAX_COUNT_TOTAL,
    check_weights,
    require_labels,
    squeeze_column,
    validate_confidence_data,
)


def _n_columns(X):
    """Number of columns of a 2-D ``X``, or 1 for 1-D input."""
    shape = getattr(X, "shape", None)
    if shape is None:
        shape = np.asarray(X).shape
    return shape[1] if len(shape) == 2 else 1


#: How far from 1 a row of class probabilities may sum (rounded softmax
#: outputs written to a file: 100 classes at 4 decimals stay within 0.005)
ROW_SUM_TOLERANCE = 0.01


def _check_score_matrix(Z, input):
    """Finite check for an ``(n, K)`` matrix, plus ``[0, 1]`` for probabilities."""
    if Z.dtype.kind not in "uifb":
        raise ValueError(f"X must be numeric scores; got dtype {Z.dtype}.")
    Z = Z.astype(np.float64, copy=False)
    bad = ~np.isfinite(Z)
    if bad.any():
        raise ValueError(
            f"X contains NaN or infinite values in {int(bad.any(axis=1).sum())} "
            "row(s); every entry of the (n, K) score matrix must be finite. Drop "
            "or impute those rows."
        )
    if input == "probability":
        out = (Z < 0) | (Z > 1)
        if out.any():
            raise ValueError(
                f"X has {int(out.any(axis=1).sum())} row(s) with probabilities "
                f"outside [0, 1] (min {Z.min():.6g}, max {Z.max():.6g}). Pass "
                "softmax outputs, or set input='logit' for raw logits."
            )
        # rows of a softmax sum to 1; a [confidence, group] matrix (a group
        # calibrator's layout passed by mistake) was read as two classes
        off = np.abs(Z.sum(axis=1) - 1.0) > ROW_SUM_TOLERANCE
        if Z.shape[1] > 1 and off.any():
            sums = Z.sum(axis=1)[off]
            raise ValueError(
                f"X has {int(off.sum())} row(s) whose {Z.shape[1]} probabilities "
                f"do not sum to 1 (e.g. {sums[0]:.6g}); an (n, K) matrix holds "
                "one probability per class (softmax rows). For one confidence "
                "per row pass a single column; for raw scores set input='logit'."
            )
    return Z


def _encode_multiclass_labels(y, n_classes):
    """Map ``y`` to column indices of an ``(n, K)`` score matrix.

    Integer labels in ``{0, ..., K-1}`` index the columns directly (a class may
    be absent from the calibration set). Otherwise ``y`` must hold exactly
    ``K`` distinct labels, and column ``k`` belongs to the ``k``-th smallest.
    """
    y = squeeze_column(y)
    y_type = type_of_target(y, input_name="y", raise_unknown=True)
    if y_type not in ("binary", "multiclass"):
        raise ValueError(
            f"Unknown label type: {y_type}. With an (n, K) score matrix y must "
            "hold one class label per row (integers 0..K-1)."
        )
    if y.dtype.kind in "uifb":
        yf = y.astype(np.float64)
        if np.all((yf == np.round(yf)) & (yf >= 0) & (yf < n_classes)):
            return np.arange(n_classes), yf.astype(np.intp)
    classes = np.unique(y)
    if classes.shape[0] != n_classes:
        raise ValueError(
            f"X has {n_classes} columns (one logit or probability per class), but "
            f"y has {classes.shape[0]} distinct labels that are not all in "
            f"{{0, ..., {n_classes - 1}}}. Encode the labels as column indices "
            "0..K-1 (for example with LabelEncoder), or pass one confidence per "
            "row for binary 'is this answer correct' calibration."
        )
    return classes, np.searchsorted(classes, y)


#: Distance of the calibrated mean confidence from the accuracy beyond which a
#: temperature pinned at its upper bound is reported as unable to reach it.
_FAR_FROM_ACCURACY = 0.05


def _ranks_labels(s, y, w):
    """Whether the scores rank the positive rows first, significantly.

    A one-sided Mann-Whitney test: the (weighted) AUC against its null
    standard error ``sqrt((n0 + n1 + 1) / (12 n0 n1))`` (no tie correction,
    which makes the test conservative), z > 2.
    """
    from sklearn.metrics import roc_auc_score

    w = np.ones_like(s) if w is None else w
    n1, n0 = float(w[y == 1].sum()), float(w[y != 1].sum())
    if not n1 * n0 > 0:  # one class only, or weights whose product underflows
        return False
    auc = roc_auc_score(y == 1, s, sample_weight=w)
    return (auc - 0.5) / np.sqrt((n0 + n1 + 1.0) / (12.0 * n0 * n1)) > 2.0


class TemperatureScaler(StateChecked, ClassifierMixin, BaseEstimator):
    """Temperature scaling: divide every logit by one fitted scalar ``tau``.

    Binary input (one confidence or score per row) is calibrated as
    ``p = sigma(s / tau)``; an ``(n, K)`` matrix of multiclass logits as
    ``softmax(z / tau)`` per row. ``tau`` minimises the negative
    log-likelihood of the calibration data, which is convex in ``1 / tau``.

    Read more in the User Guide (``docs/temperature_scaling.rst``).

    Parameters
    ----------
    input : {"probability", "logit"}, default="probability"
        What ``X`` holds. ``"probability"``: values in ``[0, 1]``. One column
        is converted to ``s = log(p / (1 - p))`` after clipping ``p`` at a
        data-aware level (see ``logit_eps_``), so that a confidence of
        exactly 0 or 1 gets a logit just beyond the closest fitted
        confidence, not -/+27.6; an ``(n, K)`` matrix of softmax rows is
        converted to ``z = log(p)`` after clipping ``p`` to ``[1e-12, 1]``.
        ``"logit"``: any finite real scores, used as they are.
    temperature_bounds : tuple of two floats, default=(0.05, 20.0)
        Bracket ``(tau_min, tau_max)`` of the search (the calibration chapter uses
        ``[0.05, 20]``). When the NLL keeps decreasing beyond a bound,
        ``temperature_`` is set to that bound and a ``ConvergenceWarning`` is
        raised; see Notes.

    pos_label : label, default=None
        For one confidence per row: the class of ``y`` that the confidence is
        the probability of. ``None`` means the greater of the two labels,
        ``classes_[1]``. Not used with an ``(n, K)`` matrix.
    Attributes
    ----------
    temperature_ : float
        The fitted temperature ``tau`` (``> 1`` softens an overconfident
        model, ``< 1`` sharpens an underconfident one).
    n_iter_ : int
        Number of derivative evaluations (passes over the data) of the fit.
    logit_eps_ : ndarray of shape (2,)
        Only for one probability per row (``input="probability"``):
        confidences are clipped to ``[logit_eps_[0], 1 - logit_eps_[1]]``
        before the logit, each side half the distance from the boundary to
        the closest fitted confidence strictly inside ``(0, 1)`` (``1 / (W +
        2)``, ``W`` the total fitted weight, on a side without one). A
        verbalized 1.0 next to a largest 0.95 maps to 0.975: one step of the
        model's scale above it. Unlike :class:`PlattScaler`'s clip there is
        no ``1 / (W + 2)`` floor, so no two distinct fitted confidences share
        a logit and the fitted data's ranking is kept.
    classes_ : ndarray
        The two sorted labels of ``y`` for one confidence per row (any two
        classes; see ``pos_label``). For an ``(n, K)`` matrix:
        ``arange(K)`` when ``y`` holds integer column indices, else the
        ``K`` sorted distinct labels of ``y`` (column ``k`` is
        ``classes_[k]``).
    n_features_in_ : int
        ``1`` for binary input, ``K`` for a multiclass matrix.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names, when ``X`` is a DataFrame with string column names.

    See Also
    --------
    PlattScaler : ``sigma(a s + b)``, two parameters; can move the 0.5
        threshold.
    sklearn.calibration.CalibratedClassifierCV : ``method="temperature"``
        wraps a classifier; this estimator calibrates stored scores.

    Notes
    -----
    *Fit.* With signed labels ``y^pm = 2y - 1`` the NLL is
    ``sum_i w_i softplus(-y^pm_i s_i beta)`` in ``beta = 1/tau`` (the
    calibration chapter),
    convex in ``beta``; the multiclass NLL
    ``sum_i w_i [logsumexp(beta z_i) - beta z_i,y_i]`` is convex too. The
    minimiser is found by Newton's method on ``beta`` with exact first and
    second derivatives, safeguarded by bisection inside the bracket, to a
    relative tolerance of ``1e-12`` (typically 3-10 passes over the data; at
    most 200, never an endless loop). The result agrees with the chapter's
    80-step golden-section search to its precision, at a fraction of the
    cost.

    *Separable and degenerate data.* If every weighted score has the sign of
    its label (binary), or every label is a row maximum (multiclass), the NLL
    decreases all the way to ``tau -> 0``: the maximum-likelihood temperature
    does not exist. ``temperature_`` is then the lower bound (``0.05``) and a
    ``ConvergenceWarning`` says so. If the NLL decreases toward
    ``tau -> infinity``, ``temperature_`` is the upper bound (``20``), with a
    warning: when even there the calibrated confidences lie more than 0.05
    from the accuracy, it says that no temperature can lower (or raise) them
    to it -- overconfident verbalized confidences whose accuracy is below
    0.5: a temperature moves confidences toward 0.5, never past it -- and
    points to :class:`PlattScaler` (whose bias can) and :class:`UMDBinner`;
    otherwise, when the scores carry no usable signal or point the wrong way
    (their AUC is not significantly above 0.5), it says so. Scores that rank
    the labels and end within 0.05 of the accuracy give no warning. If
    every score is 0 the NLL does not depend on ``tau``: ``temperature_`` is
    ``1.0``, with a warning.

    *Invariance theorem (the calibration chapter).* ``tau > 0`` preserves
    every order and every sign. Prediction computes ``sigma(s * (1/tau))`` by a chain of
    non-decreasing floating-point steps, so no two rows ever swap order, and
    forces a negative score strictly below 0.5 and a positive one strictly
    above: every 0.5-decision (``p > 0.5`` and ``p >= 0.5``) and hence the
    accuracy are exactly those of the input. For a matrix, every row's argmax
    is exactly the input's argmax (a top entry merged by rounding with a
    runner-up is kept one ulp above it). The stable argsort and the AUC are
    bit-identical unless two distinct inputs merge: this can only happen
    (a) in the clip above (binary: probabilities closer to 0 or 1 than
    ``logit_eps_``, which no fitted confidence is; matrix: within ``1e-12``
    of 0), (b) in ``sigma``'s upper tail, when ``tau < 1`` pushes
    ``z = s / tau`` high: doubles near 1 are ``1.1e-16`` apart, so scores
    closer than about ``1e-16 * exp(z)`` merge (``z > 20``), and from
    ``z ~ 37`` on every probability is exactly 1.0 (likewise 0.0 below
    ``z ~ -745``), or (c) for inputs within a few ulps of each other. Such
    merges never invert an order. On the CIFAR records and the LLM verbal
    confidences of the test suite the argsort and the AUC stay bit-identical;
    among 1e5 LLM token-probability confidences one pair of inputs one ulp
    apart (``0.4999843828746414`` and ``...415``) merges for ``tau > 1``,
    which moves the AUC by ``2e-10``.

    *Weights.* ``sample_weight`` scales each row's NLL term: a zero weight
    equals dropping the row and an integer weight equals repeating it.

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import TemperatureScaler
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(scale=4.0, size=2000)  # overconfident logits
    >>> y = (rng.random(2000) < 1 / (1 + np.exp(-s / 2))).astype(int)
    >>> ts = TemperatureScaler(input="logit").fit(s, y)
    >>> round(ts.temperature_, 2)
    1.86
    >>> ts.predict_proba(np.array([-4.0, 0.0, 4.0])).round(3)
    array([[0.896, 0.104],
           [0.5  , 0.5  ],
           [0.104, 0.896]])
    """

    #: see sklearn_betacal._base.calibrator_input and smooth_proba
    _calibrator_input = "confidence"
    _smooth_proba = True

    _parameter_constraints: dict = {
        "pos_label": "no_validation",  # checked against y in fit
        "input": [StrOptions({"probability", "logit"})],
        "temperature_bounds": [tuple],
    }

    _state_schema = Schema(
        **FEATURES,
        classes_=Array(
            "key", (lambda s: 2 if s["n_features_in_"] == 1 else s["n_features_in_"],)
        ),
        # binary probabilities are clipped beside the fitted extremes
        logit_eps_=logit_eps_spec(
            when=lambda s: s["input"] == "probability" and s["n_features_in_"] == 1
        ),
        temperature_=Float(low=0, strict=True),
        n_iter_=Int(low=0),
        rules=COMMON_RULES,
    )

    def __init__(
        self, input="probability", *, temperature_bounds=(0.05, 20.0), pos_label=None
    ):
        self.input = input
        self.temperature_bounds = temperature_bounds
        self.pos_label = pos_label

    def _bracket(self):
        """Validated ``(beta_lo, beta_hi) = (1/tau_max, 1/tau_min)``."""
        b = self.temperature_bounds
        ok = (
            len(b) == 2
            and all(isinstance(v, numbers.Real) for v in b)
            and 0 < b[0] < b[1] < np.inf
        )
        if not ok:
            raise ValueError(
                "temperature_bounds must be a tuple (tau_min, tau_max) with "
                f"0 < tau_min < tau_max < inf; got {b!r}."
            )
        return 1.0 / float(b[1]), 1.0 / float(b[0])

    def _validate(self, X, y=None, *, reset):
        """Return ``(scores, before, y)`` for the mode of ``X``.

        ``scores`` are float64 logits (vector or ``(n, K)`` matrix) and
        ``before`` the validated input itself, whose argmax defines the
        multiclass decisions to keep.
        """
        # 0 columns goes to the matrix branch for sklearn's standard message
        multiclass = _n_columns(X) != 1 if reset else self.n_features_in_ > 1
        if not multiclass:
            out = validate_confidence_data(self, X, y, reset=reset, input=self.input)
            h, y = out if y is not None else (out, None)
            # probabilities: the logit needs the fitted clip (see fit)
            s = h if self.input == "logit" or reset else to_logit(h, self.logit_eps_)
            return s, h, y
        kwargs = {
            "reset": reset,
            "ensure_all_finite": False,
            "dtype": "numeric",
            # on predict, let the n_features_in_ check speak first
            "ensure_min_features": 2 if reset else 1,
        }
        if y is None:
            Z = validate_data(self, X, **kwargs)
        else:
            Z, y = validate_data(self, X, y, **kwargs)
        Z = _check_score_matrix(Z, self.input)
        logits = Z if self.input == "logit" else np.log(np.clip(Z, LOGIT_EPS, 1.0))
        return logits, Z, y

    @fill_doc
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the temperature by minimising the NLL of ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, K)
            One confidence (or score) per row, or a matrix of ``K`` class
            probabilities (or logits) per row; see ``input``.
        y : array-like of shape (n_samples,)
            For one confidence per row, two classes of any type (the
            confidence is the probability of ``pos_label``); class labels for
            a matrix (see ``classes_``).
        %(scaler_sample_weight)s

        Returns
        -------
        self : TemperatureScaler
            The fitted calibrator.
        """
        lo, hi = self._bracket()
        require_labels(self, y)
        s, _, y = self._validate(X, y, reset=True)
        sw = None
        if sample_weight is not None:
            sw = check_weights(sample_weight, s.shape[0], max_total=MAX_COUNT_TOTAL)
        if s.ndim == 1:  # classes_ set by validate_confidence_data
            if self.input == "probability":
                # clip beside the closest fitted confidence, not at 1e-12 (a
                # 1.0 would become 27.6); no labels' floor, to keep rankings
                self.logit_eps_ = _scaling.data_logit_eps(s, sw, label_floor=False)
                s = to_logit(s, self.logit_eps_)
            if np.any((y != 0.0) & (y != 1.0)):
                # soft labels: the NLL is linear in y, a positive of weight y
                # and a negative of weight 1 - y (margins need 0/1 labels)
                w1 = np.ones_like(s) if sw is None else sw
                t = _scaling.binary_margins(
                    np.concatenate([s, s]), np.repeat([1.0, 0.0], s.shape[0])
                )
                w2 = np.concatenate([w1 * y, w1 * (1.0 - y)])
                beta, n_iter, status = _scaling.fit_inverse_temperature_binary(
                    t, w2, lo, hi
                )
            else:
                t = _scaling.binary_margins(s, y)
                beta, n_iter, status = _scaling.fit_inverse_temperature_binary(
                    t, sw, lo, hi
                )
        else:
            self.classes_, y_idx = _encode_multiclass_labels(y, s.shape[1])
            zs, zy = _scaling.multiclass_shift(s, y_idx)
            beta, n_iter, status = _scaling.fit_inverse_temperature_multiclass(
                zs, zy, sw, lo, hi
            )
        self.temperature_ = float(1.0 / beta)
        self.n_iter_ = int(n_iter)
        gap = None
        if status == _scaling.AT_LOWER and s.ndim == 1:
            ranks = _ranks_labels(s, y, sw)
            # the scores sit on the wrong side of 0.5 (overconfident verbalized
            # answers: mean confidence 0.85, accuracy 0.32): no temperature
            # moves them past 0.5, so the NLL falls toward tau -> inf; say so
            # when even there they stay far from the accuracy
            p = 1.0 / (1.0 + np.exp(-s / self.temperature_))
            gap = (
                float(np.average(p, weights=sw)),
                float(np.average(y == 1, weights=sw)),
                ranks,
            )
            if abs(gap[0] - gap[1]) <= _FAR_FROM_ACCURACY:
                gap = None
                if ranks:
                    status = _scaling.CONVERGED
        self._warn(status, gap)
        return self

    def _warn(self, status, gap=None):
        tau_min, tau_max = self.temperature_bounds
        if gap is not None:
            mean, accuracy, ranks = gap
            way = "lower" if mean > accuracy else "raise"
            msg = (
                f"temperature_ is pinned at the upper bound {tau_max}: even there "
                f"the calibrated confidences (mean {mean:.2f}) lie far from the "
                f"accuracy ({accuracy:.2f}). A temperature only moves confidences "
                f"toward 0.5, never past it, so no temperature can {way} them to "
                "the accuracy. Use PlattScaler (betacal fit --method platt), "
                "whose bias can, or UMDBinner (--method umd)."
            )
            if not ranks:
                msg += (
                    " The scores also carry no or inverted signal about the "
                    "labels (AUC not significantly above 0.5)."
                )
            warnings.warn(msg, ConvergenceWarning, stacklevel=3)
            return
        if status == _scaling.AT_UPPER:
            msg = (
                "The NLL keeps decreasing as the temperature falls: the "
                "calibration data are separable (every score has the sign of its "
                "label, or every label is its row's maximum), so no finite "
                f"optimum exists. temperature_ is set to the lower bound "
                f"{tau_min}; lower temperature_bounds[0] to sharpen further."
            )
        elif status == _scaling.AT_LOWER:
            msg = (
                "The NLL keeps decreasing as the temperature rises: the scores "
                "carry no or inverted signal about the labels (they do not rank "
                "the correct rows above the others: AUC not significantly above "
                f"0.5). temperature_ is set to the upper bound {tau_max}."
            )
        elif status == _scaling.FLAT:
            msg = (
                "Every score is 0 (or every weighted row is uninformative), so "
                "the NLL does not depend on the temperature; temperature_ is set "
                "to 1.0."
            )
        elif status == _scaling.MAX_ITER:
            msg = "Temperature search stopped at the iteration limit."
        else:
            return
        warnings.warn(msg, ConvergenceWarning, stacklevel=3)

    @fill_doc
    def predict_proba(self, X):
        """Calibrated probabilities ``sigma(s / tau)`` or ``softmax(z / tau)``.

        %(temperature_X)s
        proba : ndarray of shape (n_samples, 2) or (n_samples, K)
            Column ``k`` is the probability of ``classes_[k]``; for binary
            input the column of ``pos_label`` is the calibrated confidence.
        """
        check_is_fitted(self)
        s, before, _ = self._validate(X, reset=False)
        beta = 1.0 / self.temperature_
        if s.ndim == 1:
            return binary_proba(self, _scaling.sigmoid_scaled(s, beta))
        return _scaling.softmax_scaled(s, beta, before.argmax(axis=1))

    @fill_doc
    def predict(self, X):
        """Predicted class: ``1`` where ``p > 0.5`` (binary), else the argmax.

        %(temperature_X)s
        y_pred : ndarray of shape (n_samples,)
            Elements of ``classes_``; by the invariance theorem these are the
            uncalibrated model's own decisions.
        """
        check_is_fitted(self)
        proba = self.predict_proba(X)
        if self.n_features_in_ == 1:
            return binary_predict(self, proba[:, positive_index(self)])
        return self.classes_[proba.argmax(axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags


__all__ = ["TemperatureScaler"]
