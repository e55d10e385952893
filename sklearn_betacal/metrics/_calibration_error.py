# SPDX-License-Identifier: MIT
"""Binned calibration metrics of a whole set: reliability table, ECE, MCE, Brier split.

All functions take ``(y_true, y_prob, *, sample_weight=None, ...)`` where
``y_true`` holds 0/1 correctness labels and ``y_prob`` the confidence that
the answer is correct. Sample weights are frequency weights: a zero weight
drops the row and an integer weight ``m`` counts the row ``m`` times.

The numerical work is in :mod:`sklearn_betacal._kernels._calibration`; this
module validates, calls the kernels and shapes the results. The same metrics
per cell of a partition (beta-CE, its noise floor, the per-cell table) are in
:mod:`._beta_calibration`, which shares the input checks defined here.
"""

from collections import namedtuple
from numbers import Integral, Real

import numpy as np
from scipy.special import betainc, betaincinv, gammaincinv, ndtri
from sklearn.metrics import brier_score_loss

from .._compat import Interval, StrOptions, validate_params
from .._docstrings import fill_doc
from .._kernels import _calibration as _k
from .._kernels._scaling import unit_exponent
from .._validation import (
    check_binary_labels,
    check_confidence,
    check_n_bins,
    check_weights,
    native,
)

_STRATEGIES = StrOptions({"uniform", "quantile"})
_NORMS = StrOptions({"l1", "l2", "max"})
# beta-CE also has the squared l2 norm, the quantity Kumar et al.'s
# debiased estimator is unbiased for.
_BETA_NORMS = StrOptions({"l1", "l2", "max", "l2_squared"})
_N_BINS = Interval(Integral, 1, None, closed="left")
#: the constraints of the inputs of every metric of (correctness, confidence)
_INPUTS = {
    "y_true": ["array-like"],
    "y_prob": ["array-like"],
    "sample_weight": ["array-like", None],
    # any label (checked against y_true)
    "pos_label": "no_validation",
}
#: ... and of the binned metrics
_COMMON = {**_INPUTS, "n_bins": [_N_BINS], "strategy": [_STRATEGIES]}

BrierDecomposition = namedtuple(
    "BrierDecomposition", ["brier", "calibration", "refinement"]
)
BrierDecomposition.__doc__ = """\
Brier score with its binned calibration and refinement terms.

Fields: ``brier`` (weighted mean of ``(p - y)**2``), ``calibration``
(``sum_b W_b/W (conf_b - acc_b)**2``) and ``refinement``
(``sum_b W_b/W acc_b (1 - acc_b)``).
"""


def _is_clean_probability(p):
    """Cheap O(1)-memory test that float ``p`` lies in ``[+0, 1]``.

    For IEEE floats, the bit patterns of ``+0.0 <= x <= 1.0`` read as
    unsigned integers are exactly the integers ``<= bits(1.0)``; negative
    numbers (sign bit), values above one, inf and NaN all read larger. So one
    unsigned ``max`` replaces ``min``, ``max`` and a NaN check. (``-0.0``
    fails here and is accepted by the full check.)
    """
    if p.dtype.itemsize in (4, 8):
        uint = np.dtype(f"u{p.dtype.itemsize}")
        one = np.array(1.0, dtype=p.dtype).view(uint)
        return bool(p.view(uint).max() <= one)
    p_min, p_max = p.min(), p.max()
    return bool(p_min >= 0 and p_max <= 1)  # NaN fails


def _is_clean_binary(y):
    """Cheap O(1)-memory test that ``y`` is 0/1; ``False`` means "check fully"."""
    if y.dtype.kind == "b":
        return True
    if y.dtype.kind in "iu":
        # the bitwise OR of all labels is 0 or 1 iff every label is (a
        # negative label sets the sign bit, anything above 1 a higher bit)
        return 0 <= int(np.bitwise_or.reduce(y)) <= 1
    y_min, y_max = y.min(), y.max()
    if not (y_min >= 0 and y_max <= 1):  # NaN fails here as well
        return False
    # in [0, 1], every value is 0 or 1 iff the sum equals the count of
    # non-zeros (a sum of ones is exact in float64 up to 2**53 rows)
    return float(np.count_nonzero(y)) == float(np.sum(y))


def _check_inputs(y_true, y_prob, sample_weight, n_bins=None, *, pos_label=None):
    """Validate labels, confidences, weights and bins; return ``(y, p, w, W)``.

    A cheap pre-check (one or two reductions, no N-sized temporaries) accepts
    clean 1-D numeric input in native byte order as is. Anything it does not
    accept goes through the shared helpers of
    :mod:`sklearn_betacal._validation`, which raise the library's standard
    error messages. ``w`` is ``None`` for unit weights; ``W`` is the total
    weight. ``n_bins`` (when given) is checked against the number of rows.
    ``pos_label``: the label of a correct answer (``y_true == pos_label``);
    ``None`` reads 0/1, bool and the evident string pairs
    (:func:`~sklearn_betacal._validation.check_binary_labels`).
    """
    y = native(y_true)
    p = native(y_prob)
    fast = (
        y.ndim == 1
        and p.ndim == 1
        and y.shape == p.shape
        and p.size > 0
        and p.dtype.kind == "f"
        and y.dtype.kind in "biuf"
    )
    fast = fast and pos_label is None and _is_clean_probability(p)
    fast = fast and _is_clean_binary(y)
    if not fast:
        y = check_binary_labels(y_true, name="y_true", pos_label=pos_label)
        p = check_confidence(y_prob, input="probability", name="y_prob", text=False)
        if y.shape[0] != p.shape[0]:
            raise ValueError(
                f"y_true and y_prob must have the same length; got {y.shape[0]} "
                f"labels and {p.shape[0]} confidences."
            )
        if p.shape[0] == 0:
            raise ValueError("y_true and y_prob are empty; need at least one row.")
    p = p.astype(np.float64, copy=False)
    if n_bins is not None:
        check_n_bins(n_bins, p.shape[0])
    if sample_weight is None:
        return y, p, None, float(p.shape[0])
    w = native(sample_weight) if hasattr(sample_weight, "dtype") else None
    if w is not None and w.dtype == np.float64 and w.shape == p.shape:
        # same pre-check idea: two reductions instead of a full validation
        with np.errstate(over="ignore"):
            total = float(np.sum(w))
        if np.isfinite(total) and total > 0 and w.min() >= 0 and w.max() >= 2.0**-1022:
            return y, p, w, total
    # rejects NaN/inf (also a scalar), negative and all-zero weights with a
    # clear message; the metrics are ratios, so an overflowing total is
    # rescaled exactly instead
    w = check_weights(sample_weight, p.shape[0], max_total=np.inf)
    return y, p, w, float(np.sum(w))


def _binned_error(y, p, w, total, n_bins, strategy, norm):
    """Calibration error of one (already validated) sample."""
    if strategy == "uniform":
        gap, weight = _k.uniform_gap_sums(p, y, w, n_bins, with_weight=norm != "l1")
    else:
        idx = _k.quantile_bin_index(p, _k.quantile_edges(p, w, n_bins))
        diff = y - p if w is None else w * (y - p)
        gap = np.bincount(idx, weights=diff, minlength=n_bins)
        weight = np.bincount(idx, weights=w, minlength=n_bins).astype(np.float64)
    return _k.calibration_error_from_sums(gap, weight, total, norm)


def _bin_index_and_edges(p, w, n_bins, strategy):
    """Bin index per row plus each bin's reported lower and upper edge."""
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        return _k.uniform_bin_index(p, n_bins), edges[:-1], edges[1:]
    interior = _k.quantile_edges(p, w, n_bins)
    lower = np.concatenate([[0.0], interior])
    upper = np.concatenate([interior, [1.0]])
    return _k.quantile_bin_index(p, interior), lower, upper


def _binned_stats(y, p, w, n_bins, strategy):
    idx, lower, upper = _bin_index_and_edges(p, w, n_bins, strategy)
    count, weight, sum_p, sum_y = _k.bin_sums(idx, n_bins, p, y, w)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = sum_p / weight
        acc = sum_y / weight
    return lower, upper, count, weight, conf, acc, sum_y


def _brier_terms(weight, sum_p, sum_y, total):
    """Calibration and refinement terms of the Brier score from bin sums.

    ``sum_b (W_b/W) (conf_b - acc_b)**2`` and ``sum_b (W_b/W) acc_b (1 -
    acc_b)`` over the non-empty bins; shared by :func:`brier_decomposition`
    and the report's mergeable statistics.
    """
    nonempty = weight > 0
    share = weight[nonempty] / total
    conf = sum_p[nonempty] / weight[nonempty]
    acc = sum_y[nonempty] / weight[nonempty]
    calibration = float(np.sum(share * (conf - acc) ** 2))
    refinement = float(np.sum(share * acc * (1.0 - acc)))
    return calibration, refinement


#: A Clopper-Pearson bound ``t`` from ``betaincinv`` is kept when
#: ``betainc(a, b, t)`` is within this of its level ``alpha / 2``.
CP_LEVEL_TOL = 1e-9

#: Below this shape parameter a beta quantile of a large ``a + b`` is taken
#: from the gamma limit, above it from the normal one; and below this many
#: trials ``betaincinv`` is never second-guessed (the limits need many).
_GAMMA_LIMIT_SHAPE = 2.0**20


def _beta_quantile_large(a, b, q):
    """Quantile ``q`` of ``Beta(a, b)`` for a large ``a + b`` (weighted counts).

    With one shape small (``<= 2**20``), the gamma limit: ``Beta(a, b)`` is
    ``G_a / (G_a + G_b)`` and ``G_b`` is ``b`` within a relative ``b**-0.5 <
    2**-15``, so the quantile is ``g / (g + b)`` with ``g`` the gamma
    quantile (relative error about ``sqrt(1 / b)`` of a quantity near 0).
    With both shapes large, the Cornish-Fisher expansion with the skewness
    term: error ``O(1 / (a + b))``, against an interval half-width of order
    ``(a + b)**-0.5``. Both agree with ``betaincinv`` where it is right, at
    ``2**30`` trials, to within ``1e-3`` of the interval's width (tested).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    out = np.empty_like(a)
    small_a = a <= _GAMMA_LIMIT_SHAPE
    small_b = ~small_a & (b <= _GAMMA_LIMIT_SHAPE)
    both = ~small_a & ~small_b
    if small_a.any():
        g = gammaincinv(a[small_a], q)
        out[small_a] = g / (g + b[small_a])
    if small_b.any():
        g = gammaincinv(b[small_b], 1.0 - q)
        out[small_b] = a[small_b] / (g + a[small_b])  # 1 - Beta(b, a)'s
    if both.any():
        # a + b can be near the float64 maximum: never form a * b
        s = a[both] + b[both]
        m = a[both] / s
        v = m * (1.0 - m)
        sd = np.sqrt(v / (s + 1.0))
        skew = 2.0 * (1.0 - 2.0 * m) * np.sqrt(s + 1.0) / ((s + 2.0) * np.sqrt(v))
        z = ndtri(q)
        out[both] = m + sd * (z + (z * z - 1.0) * skew / 6.0)
    return np.clip(out, 0.0, 1.0)


def _clopper_pearson(successes, trials, alpha):
    """Exact two-sided ``1 - alpha`` interval for a binomial proportion.

    ``lower = B^{-1}(alpha/2; x, n - x + 1)`` and
    ``upper = B^{-1}(1 - alpha/2; x + 1, n - x)`` with ``B^{-1}`` the inverse
    regularized incomplete beta function; ``lower = 0`` when ``x = 0`` and
    ``upper = 1`` when ``x = n``. Real-valued ``x`` and ``n`` (weighted
    counts) are allowed; empty bins (``n = 0``) give NaN. A bound that
    scipy's ``betaincinv`` misses (checked with ``betainc``: it returns NaN
    for 1e300-scale weighted counts, and a point whose probability is 1.0
    instead of ``alpha/2`` for 1000 successes in 1e9 trials) comes from
    :func:`_beta_quantile_large` instead.
    """
    n = np.asarray(trials, dtype=np.float64)
    x = np.clip(np.asarray(successes, dtype=np.float64), 0.0, n)
    lower = np.full_like(n, np.nan)
    upper = np.full_like(n, np.nan)
    ok = n > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = betaincinv(x, n - x + 1.0, alpha / 2.0)
        hi = betaincinv(x + 1.0, n - x, 1.0 - alpha / 2.0)
        for t, a, b, q in (
            (lo, x, n - x + 1.0, alpha / 2.0),
            (hi, x + 1.0, n - x, 1.0 - alpha / 2.0),
        ):
            # kept where its probability is the level asked for
            found = betainc(a, b, t)
            miss = ok & (a > 0) & (b > 0) & (n > _GAMMA_LIMIT_SHAPE)
            miss &= ~(np.abs(found - q) <= CP_LEVEL_TOL)
            if miss.any():
                t[miss] = _beta_quantile_large(a[miss], b[miss], q)
    lower[ok] = np.where(x[ok] <= 0, 0.0, lo[ok])
    upper[ok] = np.where(x[ok] >= n[ok], 1.0, hi[ok])
    # the interval holds the estimate; at 1e300-scale counts its half-width
    # is below one ulp of it and rounding could put a bound past it
    share = x[ok] / n[ok]
    lower[ok] = np.minimum(lower[ok], share)
    upper[ok] = np.maximum(upper[ok], share)
    return lower, upper


@fill_doc
@validate_params(
    {**_COMMON, "alpha": [Interval(Real, 0, 1, closed="neither")]},
    prefer_skip_nested_validation=True,
)
def reliability_table(
    y_true,
    y_prob,
    *,
    sample_weight=None,
    pos_label=None,
    n_bins=10,
    strategy="uniform",
    alpha=0.05,
):
    """Per-bin reliability table with counts, standard errors and exact intervals.

    One row per bin, empty bins included (``count == 0``, ``empty == True``,
    statistics NaN), so that the table never hides where the data is thin.

    Read more in the :ref:`User Guide <metrics>`.

    Parameters
    ----------
    %(y_true)s
    %(y_prob)s
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative frequency weights (zero drops a row, an integer ``m``
        counts it ``m`` times).
    n_bins : int, default=10
        Number of bins ``M``.
    strategy : {"uniform", "quantile"}, default="uniform"
        ``"uniform"``: equal-width bins, row ``i`` in bin
        ``min(floor(p_i * M), M - 1)``, so bin ``b`` is ``[b/M, (b+1)/M)``
        and the last bin also holds ``p = 1``. ``"quantile"``: equal-mass
        bins whose interior edges are the weighted inverted-CDF quantiles at
        levels ``k/M``; bin ``k`` is ``(e_k, e_{k+1}]`` (the first bin starts
        at 0 inclusive). Tied confidences can make quantile bins empty.
    alpha : float, default=0.05
        Miscoverage of the Clopper-Pearson interval: ``[ci_lower, ci_upper]``
        is an exact two-sided ``1 - alpha`` interval for the bin's accuracy
        (its lower end is a one-sided ``1 - alpha/2`` lower bound).

    Returns
    -------
    table : pandas.DataFrame
        Indexed by ``bin`` (0 .. M-1), with columns

        - ``bin_lower``, ``bin_upper``: the bin's edges;
        - ``count``: rows with positive weight in the bin;
        - ``weight``: total weight ``W_b`` (equals ``count`` without weights);
        - ``mean_confidence`` (``conf_b``), ``accuracy`` (``acc_b``), both
          weighted means, and ``gap = acc_b - conf_b``;
        - ``std_error``: ``sqrt(acc_b (1 - acc_b) / W_b)``, the standard
          error of the accuracy;
        - ``ci_lower``, ``ci_upper``: Clopper-Pearson interval with
          ``W_b`` trials and ``acc_b W_b`` successes;
        - ``empty``: True where ``W_b == 0``.

    See Also
    --------
    expected_calibration_error : The table collapsed to one number.
    sklearn.calibration.calibration_curve : Accuracy and confidence per
        non-empty bin, without counts or intervals.

    Notes
    -----
    Weights are frequency weights, so the standard error and the interval use
    the bin's total weight as the number of trials; with unit weights that is
    the bin count. A bin holding one point has an interval of width about
    ``1 - alpha/2``: its gap is mostly noise (the calibration chapter).

    %(equal_width_values)s

    References
    ----------
    .. [1] C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial
       limits illustrated in the case of the binomial", Biometrika 26 (1934).
    .. [2] M. P. Naeini, G. Cooper and M. Hauskrecht, "Obtaining well
       calibrated probabilities using Bayesian binning", AAAI 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import reliability_table
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000)
    >>> y = rng.uniform(size=1000) < p
    >>> table = reliability_table(y, p, n_bins=5)
    >>> table[["count", "mean_confidence", "accuracy"]].round(3)
         count  mean_confidence  accuracy
    bin
    0      193            0.108     0.109
    1      180            0.310     0.306
    2      208            0.504     0.548
    3      207            0.703     0.662
    4      212            0.895     0.925
    """

    y, p, w, _ = _check_inputs(
        y_true, y_prob, sample_weight, n_bins, pos_label=pos_label
    )
    lower, upper, count, weight, conf, acc, sum_y = _binned_stats(
        y, p, w, n_bins, strategy
    )
    return _reliability_frame(lower, upper, count, weight, conf, acc, sum_y, alpha)


def _reliability_frame(lower, upper, count, weight, conf, acc, sum_y, alpha):
    """The :func:`reliability_table` from its per-bin sums (also used by
    the report's mergeable statistics)."""
    import pandas as pd

    with np.errstate(invalid="ignore", divide="ignore"):
        std_error = np.sqrt(acc * (1.0 - acc) / weight)
    ci_lower, ci_upper = _clopper_pearson(sum_y, weight, alpha)
    return pd.DataFrame(
        {
            "bin_lower": lower,
            "bin_upper": upper,
            "count": count,
            "weight": weight,
            "mean_confidence": conf,
            "accuracy": acc,
            "gap": acc - conf,
            "std_error": std_error,
            "ci_lower": ci_lower,
            "ci_upper": ci_upper,
            "empty": weight <= 0,
        },
        index=pd.RangeIndex(conf.shape[0], name="bin"),
    )


@fill_doc
@validate_params({**_COMMON, "norm": [_NORMS]}, prefer_skip_nested_validation=True)
def expected_calibration_error(
    y_true,
    y_prob,
    *,
    sample_weight=None,
    pos_label=None,
    n_bins=10,
    strategy="uniform",
    norm="l1",
):
    """Expected calibration error (ECE): weighted mean gap over confidence bins.

    ``ECE = sum_b (W_b / W) |acc_b - conf_b|`` with ``W_b`` the weight in bin
    ``b`` and ``W`` the total weight: the binned estimate of the average-case
    calibration error ``CE(h)`` (paper Def. 2.2; the calibration chapter).

    Read more in the :ref:`User Guide <metrics>`.

    Parameters
    ----------
    %(metric_inputs)s
    n_bins : int, default=10
        Number of bins ``M``.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width bins (index ``min(floor(p * M), M - 1)``, so ``p = 1`` is
        in the last bin) or equal-mass bins; see :func:`reliability_table`.
    norm : {"l1", "l2", "max"}, default="l1"
        ``"l1"``: the ECE above. ``"l2"``: ``sqrt(sum_b (W_b/W) gap_b**2)``.
        ``"max"``: the largest ``|gap_b|`` over non-empty bins, i.e. the
        :func:`maximum_calibration_error`.

    Returns
    -------
    ece : float
        In ``[0, 1]``; lower is better.

    See Also
    --------
    reliability_table : The per-bin numbers behind the ECE.
    beta_calibration_error : The ECE within each group, averaged.
    sklearn.metrics.brier_score_loss, sklearn.metrics.log_loss : Proper
        scoring rules that also reward sharpness.

    Notes
    -----
    The binned estimator is biased: opposite gaps cancel inside a bin
    (downward bias) and sampling noise inflates each bin's gap (upward
    bias); its value depends on ``n_bins`` and ``strategy``. Compare models
    only at the same binning.

    %(equal_width_values)s

    The equal-width path never builds a table: one weighted ``bincount`` of
    ``y - p`` per block of rows gives every bin's signed gap.

    References
    ----------
    .. [1] M. P. Naeini, G. Cooper and M. Hauskrecht, "Obtaining well
       calibrated probabilities using Bayesian binning", AAAI 2015.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On calibration of
       modern neural networks", ICML 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import expected_calibration_error
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000)
    >>> y = rng.uniform(size=1000) < p
    >>> round(expected_calibration_error(y, p), 4)
    0.0309
    >>> round(expected_calibration_error(y, np.sqrt(p)), 4)  # overconfident
    0.1577
    """
    y, p, w, total = _check_inputs(
        y_true, y_prob, sample_weight, n_bins, pos_label=pos_label
    )
    return _binned_error(y, p, w, total, n_bins, strategy, norm)


@fill_doc
@validate_params(_COMMON, prefer_skip_nested_validation=True)
def maximum_calibration_error(
    y_true, y_prob, *, sample_weight=None, pos_label=None, n_bins=10, strategy="uniform"
):
    """Maximum calibration error (MCE): the largest gap over non-empty bins.

    ``MCE = max_{b: W_b > 0} |acc_b - conf_b|``. Equal to
    ``expected_calibration_error(..., norm="max")``.

    Read more in the :ref:`User Guide <metrics>`.

    Parameters
    ----------
    %(metric_inputs)s
    %(binning)s

    Returns
    -------
    mce : float
        In ``[0, 1]``; lower is better.

    See Also
    --------
    expected_calibration_error : The weighted average instead of the maximum.

    Notes
    -----
    A bin with a single point has a gap of ``conf`` or ``1 - conf``, so the
    MCE is dominated by the sparsest bin; read it next to the
    :func:`reliability_table` counts.

    References
    ----------
    .. [1] M. P. Naeini, G. Cooper and M. Hauskrecht, "Obtaining well
       calibrated probabilities using Bayesian binning", AAAI 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import maximum_calibration_error
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000)
    >>> y = rng.uniform(size=1000) < p
    >>> round(maximum_calibration_error(y, p), 4)
    0.0657
    """
    y, p, w, total = _check_inputs(
        y_true, y_prob, sample_weight, n_bins, pos_label=pos_label
    )
    return _binned_error(y, p, w, total, n_bins, strategy, "max")


@fill_doc
@validate_params(_COMMON, prefer_skip_nested_validation=True)
def brier_decomposition(
    y_true, y_prob, *, sample_weight=None, pos_label=None, n_bins=10, strategy="uniform"
):
    """Brier score split into a binned calibration and a refinement term.

    ``BS = sum_b (W_b/W)(conf_b - acc_b)**2 + sum_b (W_b/W) acc_b (1 - acc_b)``
    (the calibration chapter, "ECE, derived, then the Brier score, decomposed").

    Read more in the :ref:`User Guide <metrics>`.

    Parameters
    ----------
    %(metric_inputs)s
    %(binning)s

    Returns
    -------
    result : BrierDecomposition
        Named tuple ``(brier, calibration, refinement)``. ``brier`` is the
        weighted mean of ``(p - y)**2`` (computed by
        :func:`sklearn.metrics.brier_score_loss`); ``calibration`` is the
        squared-gap sibling of the ECE; ``refinement`` the within-bin
        Bernoulli variance of the labels.

    See Also
    --------
    sklearn.metrics.brier_score_loss : The Brier score alone.
    expected_calibration_error : The absolute-gap summary.

    Notes
    -----
    The split is **exact only when all forecasts inside each bin coincide**
    (then ``brier == calibration + refinement`` up to rounding). Otherwise the
    derivation idealizes each forecast as its bin mean ``conf_b`` and the
    remainder ``brier - calibration - refinement`` equals
    ``sum_b (W_b/W) [var_b(p) - 2 cov_b(p, y)]``, the within-bin spread of the
    forecasts; it shrinks as the bins get finer.

    References
    ----------
    .. [1] G. W. Brier, "Verification of forecasts expressed in terms of
       probability", Monthly Weather Review 78 (1950).
    .. [2] A. H. Murphy, "A new vector partition of the probability score",
       Journal of Applied Meteorology 12 (1973).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import brier_decomposition
    >>> p = np.repeat([0.2, 0.7], 5)
    >>> y = np.array([0, 0, 0, 0, 1, 1, 1, 1, 0, 0])
    >>> result = brier_decomposition(y, p)
    >>> [round(v, 4) for v in result]
    [0.205, 0.005, 0.2]
    """
    y, p, w, total = _check_inputs(
        y_true, y_prob, sample_weight, n_bins, pos_label=pos_label
    )
    idx, _, _ = _bin_index_and_edges(p, w, n_bins, strategy)
    _, weight, sum_p, sum_y = _k.bin_sums(idx, n_bins, p, y, w)
    calibration, refinement = _brier_terms(weight, sum_p, sum_y, total)
    if w is not None:
        # scikit-learn's weighted mean multiplies before it divides, so weights
        # near the float64 maximum overflowed to brier=inf; a power-of-two
        # rescale leaves every ratio exact
        w = np.ldexp(w, -unit_exponent(w))
    y = np.asarray(y, dtype=np.float64)
    if np.any((y != 0.0) & (y != 1.0)):
        # soft labels: the expected Brier score of an outcome drawn
        # Bernoulli(y), (p - y)**2 + y (1 - y), so that brier = calibration +
        # refinement still holds (it is the score of the positive of weight y
        # and the negative of weight 1 - y)
        brier = float(np.average((p - y) ** 2 + y * (1.0 - y), weights=w))
    else:
        brier = float(brier_score_loss(y, p, sample_weight=w, labels=[0, 1]))
    return BrierDecomposition(brier, calibration, refinement)
