# SPDX-License-Identifier: MIT
"""Selective question answering: area under the accuracy-confidence curve.

A selective QA system answers only when its confidence reaches a threshold.
The accuracy-confidence curve records, for each threshold on a grid, the
accuracy of the answers it would still give (paper Sec. 5, "AUAC").
"""

from numbers import Integral

import numpy as np

from .._compat import Interval, validate_params
from .._docstrings import fill_doc
from .._kernels._selective import kept_sums
from .._validation import check_n_bins, native
from ._calibration_error import _INPUTS, _check_inputs


def _check_grid(grid, n_rows):
    if isinstance(grid, Integral):
        return np.linspace(0.0, 1.0, check_n_bins(grid, n_rows, name="grid"))
    g = native(grid)
    if g.ndim != 1 or g.shape[0] < 2 or g.dtype.kind not in "uif":
        raise ValueError(
            "grid must be an int (number of equally spaced thresholds in "
            f"[0, 1]) or a 1-D numeric array of at least 2 thresholds; got {grid!r}."
        )
    g = g.astype(np.float64)
    if not np.all(np.isfinite(g)) or np.any(np.diff(g) <= 0):
        raise ValueError(
            "grid thresholds must be finite and strictly increasing; sort them "
            "and drop duplicates."
        )
    return g


def _accuracy_above(y, p, w, thresholds):
    """Weighted accuracy and kept weight of the rows with ``p >= t``, per ``t``.

    The accuracy is zero where no row (or only zero weight) is retained
    (sums from :func:`~sklearn_betacal._kernels._selective.kept_sums`).
    """
    kept_wy, kept_w = kept_sums(p, y, w, thresholds)
    heights = np.zeros_like(kept_w)
    np.divide(kept_wy, kept_w, out=heights, where=kept_w > 0)
    return heights, kept_w


_GRID = [Interval(Integral, 2, None, closed="left"), "array-like"]


@fill_doc
@validate_params({**_INPUTS, "grid": _GRID}, prefer_skip_nested_validation=True)
def accuracy_confidence_curve(
    y_true, y_prob, *, sample_weight=None, pos_label=None, grid=101
):
    """Accuracy-confidence curve: accuracy of the answers kept at each threshold.

    For each threshold ``t`` of ``grid``: the (weighted) accuracy of the
    rows with confidence ``>= t`` and the share of rows kept. The area under
    the accuracy is :func:`area_under_accuracy_confidence` (paper Sec. 5).

    Read more in the :ref:`User Guide <metrics>`.

    Parameters
    ----------
    %(metric_inputs)s
    grid : int or array-like of shape (n_thresholds,), default=101
        As in :func:`area_under_accuracy_confidence`.

    Returns
    -------
    thresholds : ndarray of shape (n_thresholds,)
    accuracy : ndarray of shape (n_thresholds,)
        Accuracy of the kept rows; 0 where none is kept (see the Notes of
        :func:`area_under_accuracy_confidence`).
    coverage : ndarray of shape (n_thresholds,)
        Share of the total weight kept, in ``[0, 1]``.

    See Also
    --------
    area_under_accuracy_confidence : The area under ``accuracy``.
    risk_coverage_curve : The same trade-off indexed by coverage.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import accuracy_confidence_curve
    >>> y = np.array([0, 1, 1, 1])
    >>> p = np.array([0.2, 0.4, 0.6, 0.9])
    >>> t, acc, cov = accuracy_confidence_curve(y, p, grid=[0.0, 0.5, 1.0])
    >>> acc.tolist(), cov.tolist()
    ([0.75, 1.0, 0.0], [1.0, 0.5, 0.0])
    """
    y, p, w, total = _check_inputs(y_true, y_prob, sample_weight, pos_label=pos_label)
    thresholds = _check_grid(grid, p.shape[0])
    heights, kept = _accuracy_above(y, p, w, thresholds)
    return thresholds, heights, kept / total


@fill_doc
@validate_params(_INPUTS, prefer_skip_nested_validation=True)
def risk_coverage_curve(y_true, y_prob, *, sample_weight=None, pos_label=None):
    """Risk-coverage curve: error rate of the answers kept, against coverage.

    Answering only the questions with confidence ``>= t`` keeps a share
    (coverage) of them and makes errors on a share of those (risk, one minus
    their accuracy). One point per distinct confidence, from the most
    confident answers alone to all answers; tied confidences enter together,
    so a calibrator with few distinct outputs gives few points.

    Read more in the :ref:`User Guide <metrics>`.

    Parameters
    ----------
    %(metric_inputs)s

    Returns
    -------
    coverage : ndarray of shape (n_thresholds,)
        Increasing share of the total weight kept; the last value is 1.
    risk : ndarray of shape (n_thresholds,)
        Weighted error rate of the kept rows.
    thresholds : ndarray of shape (n_thresholds,)
        The distinct confidences, decreasing.

    See Also
    --------
    accuracy_confidence_curve : The same trade-off indexed by threshold.

    References
    ----------
    .. [1] Y. Geifman and R. El-Yaniv, "Selective classification for deep
       neural networks", NeurIPS 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import risk_coverage_curve
    >>> y = np.array([0, 1, 1, 1])
    >>> p = np.array([0.2, 0.4, 0.6, 0.9])
    >>> coverage, risk, t = risk_coverage_curve(y, p)
    >>> coverage.tolist(), risk.tolist()
    ([0.25, 0.5, 0.75, 1.0], [0.0, 0.0, 0.0, 0.25])
    """
    y, p, w, total = _check_inputs(y_true, y_prob, sample_weight, pos_label=pos_label)
    thresholds = np.unique(p)[::-1]
    if w is not None:  # a zero-weight row keeps nothing: not a threshold
        thresholds = np.unique(p[w > 0])[::-1]
    accuracy, kept = _accuracy_above(y, p, w, thresholds)
    return kept / total, 1.0 - accuracy, thresholds


@fill_doc
@validate_params(
    {
        "y_true": ["array-like"],
        "y_prob": ["array-like"],
        "sample_weight": ["array-like", None],
        "grid": _GRID,
    },
    prefer_skip_nested_validation=True,
)
def area_under_accuracy_confidence(
    y_true, y_prob, *, sample_weight=None, pos_label=None, grid=101
):
    """Area under the accuracy-confidence curve (AUAC) for selective QA.

    For each threshold ``t`` of ``grid``, the height of the curve is the
    (weighted) accuracy of all rows with confidence ``>= t``; the AUAC is the
    trapezoidal area under these heights over the grid (paper Sec. 5).
    Higher is better.

    Read more in the :ref:`User Guide <metrics>`.

    Parameters
    ----------
    %(metric_inputs)s
    grid : int or array-like of shape (n_thresholds,), default=101
        An int ``k`` means ``k`` equally spaced thresholds from 0 to 1
        (step 0.01 by default); an array gives strictly increasing thresholds.

    Returns
    -------
    auac : float
        Between 0 and the grid's span (``[0, 1]`` for the default grid).

    See Also
    --------
    accuracy_confidence_curve : The curve whose area this is.
    expected_calibration_error : Whether the confidences mean what they say.
    sklearn.metrics.roc_auc_score : Ranking quality without thresholds.

    Notes
    -----
    **Thresholds above every confidence.** The paper does not say what the
    height is when no answer is retained. Here it is **0**: a system that
    abstains on every question delivers no correct answer. The alternatives
    reward abstention: a height of 1 (or the last non-empty accuracy) would
    let a calibrator that squeezes all confidences towards 0 collect the
    whole area above its largest output for free. With 0, the area grows
    only with confidences that are both high and accurate, which is what the
    metric is meant to reward. Rows with zero weight do not count as
    retained. The same rule is applied at every threshold, so the curve is
    zero from the first threshold above ``max(y_prob)`` on.

    Discretized calibrators produce many tied confidences; ``>=`` keeps all
    rows tied at the threshold, which is why the paper uses this curve
    instead of a risk-coverage curve.

    References
    ----------
    .. [1] "beta-calibration of Language Model Confidence Scores for
       Generative QA", Sec. 5 (selective QA, AUAC).
    .. [2] A. Kamath, R. Jia and P. Liang, "Selective question answering
       under domain shift", ACL 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import area_under_accuracy_confidence
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000)
    >>> y = rng.uniform(size=1000) < p
    >>> round(area_under_accuracy_confidence(y, p), 3)
    0.759
    >>> round(area_under_accuracy_confidence(y, p / 2), 3)  # same ranking
    0.377
    """
    thresholds, heights, _ = accuracy_confidence_curve(
        y_true, y_prob, sample_weight=sample_weight, pos_label=pos_label, grid=grid
    )
    return _area(thresholds, heights)


def _area(thresholds, heights):
    """Trapezoidal area under ``heights`` over ``thresholds`` (the AUAC)."""
    return float(np.sum(0.5 * (heights[1:] + heights[:-1]) * np.diff(thresholds)))
