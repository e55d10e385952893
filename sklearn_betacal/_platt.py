# SPDX-License-Identifier: MIT
"""Platt scaling: ``sigma(a s + b)`` fitted by maximum likelihood (baseline S).

:class:`PlattScaler` validates the input, turns probabilities into logits,
and fits ``a`` and ``b`` with the Platt kernel
:func:`~sklearn_betacal._kernels._scaling.fit_platt` (the weighted
cross-entropy minimised by SciPy's trust-region Newton method on its exact
2 x 2 Hessian).
"""

import warnings
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning

from ._base import _BinaryCalibratorMixin, logit_eps_spec
from ._compat import Interval, StrOptions, _fit_context
from ._docstrings import fill_doc
from ._kernels import _scaling
from ._kernels._scaling import data_logit_eps, to_logit
from ._state import CLASSES, COMMON_RULES, FEATURES, Array, Int, Schema
from ._validation import (
    MAX_COUNT_TOTAL,
    check_weights,
    require_labels,
    validate_confidence_data,
)


@fill_doc
class PlattScaler(_BinaryCalibratorMixin, ClassifierMixin, BaseEstimator):
    """Platt scaling: logistic regression of correctness on one score.

    Fits ``p = sigma(a * s + b)`` by maximum likelihood, where ``s`` is the
    confidence's logit (or a raw score). With two parameters it can both
    stretch the score axis (like temperature scaling) and shift it, which
    repairs a global bias but may move the 0.5 decision threshold. This is
    the scaling baseline *S* of the beta-calibration paper.

    Read more in the User Guide (``docs/platt_scaling.rst``).

    Parameters
    ----------
    input : {"probability", "logit"}, default="probability"
        What ``X`` holds. ``"probability"``: confidences in ``[0, 1]``,
        converted to ``s = log(p / (1 - p))`` after clipping ``p`` at a
        data-aware level (see ``logit_eps_``), so that 0 and 1 map to finite
        logits of a few units rather than -/+27.6.
        ``"logit"``: any finite real score, used as it is (pass a raw
        probability with ``input="logit"`` to fit ``sigma(a p + b)`` on the
        probability scale, as Eq. 5 of the paper does).
    target_smoothing : bool, default=False
        Use Platt's (1999) smoothed targets ``(N+ + 1) / (N+ + 2)`` for
        positives and ``1 / (N- + 2)`` for negatives instead of 1 and 0
        (``N+``, ``N-``: weighted counts). This is a mild regulariser that keeps
        the fit finite on separable data; off by default so the fit is the
        plain maximum-likelihood logistic regression.
    max_iter : int, default=100
        Maximum number of Newton (trust-region) iterations.
    %(pos_label)s

    Attributes
    ----------
    coef_ : ndarray of shape (1, 1)
        The slope ``a`` (as in :class:`~sklearn.linear_model.LogisticRegression`).
    intercept_ : ndarray of shape (1,)
        The intercept ``b``.
    n_iter_ : int
        Number of Newton iterations.
    logit_eps_ : ndarray of shape (2,)
        Only for ``input="probability"``: confidences are clipped to
        ``[logit_eps_[0], 1 - logit_eps_[1]]`` before the logit. Each side is
        the larger of ``1 / (W + 2)`` (``W`` the total fitted weight: closer to
        the boundary than Laplace's rule of succession, ``W`` labels cannot
        tell a probability from it) and half the distance from the boundary
        to the closest fitted confidence strictly inside ``(0, 1)`` (a
        verbalized 1.0 next to a largest 0.95 is one step of the model's
        scale above it). A confidence of exactly 1.0 thus gets a logit of a
        few units, not 27.6, and cannot flatten the slope by leverage.
    %(classes_)s
    n_features_in_ : int
        Always 1.
    feature_names_in_ : ndarray of shape (1,)
        The column name, when ``X`` is a one-column DataFrame.

    See Also
    --------
    TemperatureScaler : one parameter, ``sigma(s / tau)``; keeps every
        ranking and 0.5-decision.
    sklearn.linear_model.LogisticRegression : the same model with
        ``penalty=None`` on the logit feature.

    Notes
    -----
    The loss is the weighted mean cross-entropy
    ``sum_i w_i [softplus(f_i) - t_i f_i] / sum_i w_i`` with ``f = a s + b``
    and targets ``t`` (labels, or Platt's smoothed targets). It is convex in
    ``(a, b)``; SciPy's ``trust-exact`` Newton method with the exact Hessian
    ``sum w sigma'(f) [[s^2, s], [s, 1]]`` (the IRLS system) converges
    quadratically from ``(a, b) = (1, 0)``, the identity map.

    On separable data (every positive scored at or above every negative, or
    the reverse, or a single class) the maximum-likelihood slope or intercept
    is infinite. The fit then stops where the gradient falls below tolerance,
    with a large slope, and raises a ``ConvergenceWarning`` that suggests
    ``target_smoothing=True``, which always gives a finite fit.

    ``sample_weight`` scales each row's loss term: a zero weight equals
    dropping the row and an integer weight equals repeating it.

    References
    ----------
    .. [1] J. Platt, "Probabilistic Outputs for Support Vector Machines and
       Comparisons to Regularized Likelihood Methods", Advances in Large
       Margin Classifiers, 1999.
    .. [2] H.-T. Lin, C.-J. Lin and R. C. Weng, "A note on Platt's
       probabilistic outputs for support vector machines", Machine Learning
       68, 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import PlattScaler
    >>> rng = np.random.default_rng(0)
    >>> conf = rng.uniform(0.5, 1.0, size=1000)  # overconfident model
    >>> y = (rng.random(1000) < conf - 0.2).astype(int)
    >>> ps = PlattScaler().fit(conf, y)
    >>> print(np.round([ps.coef_[0, 0], ps.intercept_[0]], 3))
    [ 0.462 -0.311]
    >>> ps.predict_proba([0.6, 0.9]).round(3)
    array([[0.531, 0.469],
           [0.331, 0.669]])
    """

    _smooth_proba = True  # see sklearn_betacal._base.smooth_proba

    _parameter_constraints: dict = {
        "pos_label": "no_validation",  # checked against y in fit
        "input": [StrOptions({"probability", "logit"})],
        "target_smoothing": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    _state_schema = Schema(
        **{**FEATURES, "n_features_in_": Int(low=1, high=1)},  # one confidence
        classes_=CLASSES,
        logit_eps_=logit_eps_spec(when=lambda s: s["input"] == "probability"),
        coef_=Array("f", (1, 1)),
        intercept_=Array("f", (1,)),
        n_iter_=Int(low=0),
        rules=COMMON_RULES,
    )

    def __init__(
        self,
        input="probability",
        *,
        target_smoothing=False,
        max_iter=100,
        pos_label=None,
    ):
        self.input = input
        self.target_smoothing = target_smoothing
        self.max_iter = max_iter
        self.pos_label = pos_label

    def _scores(self, h, w=None):
        """The input scores, or the logits of probabilities clipped at a
        data-aware level (:func:`~sklearn_betacal._kernels._scaling.data_logit_eps`
        of the fitted total weight ``w``; set when ``w`` is given, in fit)."""
        if self.input == "logit":
            return h
        if w is not None:
            self.logit_eps_ = data_logit_eps(h, w)
        return to_logit(h, self.logit_eps_)

    @fill_doc
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit ``a`` and ``b`` by maximum likelihood.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            One confidence (or score) per row; see ``input``.
        y : array-like of shape (n_samples,)
            Two classes of any type (1 / 0, bool, strings, ...), or soft
            labels (a judge's probability of "correct", in [0, 1]); the
            confidence is the probability of ``pos_label``.
        %(scaler_sample_weight)s

        Returns
        -------
        self : PlattScaler
            The fitted calibrator.
        """
        require_labels(self, y)
        h, y = validate_confidence_data(self, X, y, reset=True, input=self.input)
        w = check_weights(sample_weight, h.shape[0], max_total=MAX_COUNT_TOTAL)
        s = self._scores(h, w)
        t = _scaling.platt_targets(y, w) if self.target_smoothing else y
        fit = _scaling.fit_platt(s, t, w, max_iter=self.max_iter)
        if not self.target_smoothing and _scaling.separable(s, y, w):
            warnings.warn(
                "PlattScaler: the calibration data are separable (every positive "
                "scored at or above every negative, or one class only), so the "
                "maximum-likelihood slope or intercept is infinite; the "
                "coefficients are where the solver stopped. Set "
                "target_smoothing=True for a finite fit.",
                ConvergenceWarning,
                stacklevel=2,
            )
        elif not fit.converged:
            warnings.warn(
                f"PlattScaler did not converge in max_iter={self.max_iter} "
                f"Newton steps ({fit.message}); the largest gradient entry is "
                f"{fit.grad:.3g}. Increase max_iter.",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.coef_ = np.array([[fit.coef]])
        self.intercept_ = np.array([fit.intercept])
        self.n_iter_ = fit.n_iter
        return self

    def _calibrated(self, X):
        """``sigma(a s + b)`` for every row of ``X``."""
        s = self._scores(
            validate_confidence_data(self, X, reset=False, input=self.input)
        )
        f = self.coef_[0, 0] * s + self.intercept_[0]
        return _scaling.sigmoid_scaled(f, 1.0)


__all__ = ["PlattScaler"]
