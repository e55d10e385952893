# SPDX-License-Identifier: MIT
"""Tests of calibration: cumulative (Kuiper) error, p-values, smooth ECE, segments.

A binned error says how large a gap looks, not whether it is real. These
functions answer the second question without bins: the Estimated Cumulative
Calibration Error (ECCE) of Arrieta-Ibarra et al. (2022) with its standard
deviation under perfect calibration and its p-value, per-cell tests with a
multiplicity correction, the smooth ECE of Blasiok and Nakkiran (2024), and
the multicalibration error over feature-defined segments of Guy et al.
(2025). The numerical work is in :mod:`sklearn_betacal._kernels._cumulative`
and :mod:`sklearn_betacal._kernels._smooth`.
"""

import itertools
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from .._compat import Interval, StrOptions, validate_params
from .._docstrings import fill_doc
from .._kernels import _cumulative as _k
from .._kernels import _smooth
from ._beta_calibration import _check_cells
from ._calibration_error import _INPUTS, _check_inputs

_WEIGHT_TYPES = StrOptions({"frequency", "sampling"})


@dataclass(frozen=True)
class CalibrationTestResult:
    """Result of :func:`calibration_test`.

    Attributes
    ----------
    statistic : float
        ECCE of all rows, :func:`cumulative_calibration_error`.
    sigma : float
        Its standard deviation under perfect calibration.
    standardized : float
        ``statistic / sigma`` (``mcgrad``'s ``ecce_sigma``): the statistic in
        standard deviations; 0 when both are 0, ``inf`` when only ``sigma``
        is.
    pvalue : float
        ``P(R > standardized)`` for the range ``R`` of a standard Brownian
        motion (the Kuiper distribution): small means miscalibrated.
    table : pandas.DataFrame or None
        With ``cells``: one row per cell (see :func:`calibration_test`).
    max_standardized : float or None
        With ``cells``: the largest per-cell ``standardized`` value.
    max_pvalue : float or None
        With ``cells``: its p-value as the maximum of independent cells,
        ``1 - (1 - P(R > max_standardized)) ** S`` over the ``S`` cells with a
        p-value (Sidak): the test that *some* cell is miscalibrated.
    method : str or None
        With ``cells``: the multiplicity adjustment of ``pvalue_adjusted``.
    alpha : float
        The level of ``mde`` and of the ``significant`` column.
    """

    statistic: float
    sigma: float
    standardized: float
    pvalue: float
    table: object = None
    max_standardized: float = None
    max_pvalue: float = None
    method: str = None
    alpha: float = 0.05


def _sigma(p, w, total, weight_type):
    return float(np.sqrt(_k.null_variance(p, w, weight_type)) / total)


@fill_doc
@validate_params(_INPUTS, prefer_skip_nested_validation=True)
def cumulative_calibration_error(y_true, y_prob, *, sample_weight=None, pos_label=None):
    """Estimated cumulative calibration error (ECCE): the Kuiper statistic.

    Sort the answers by confidence and accumulate the differences between
    correctness and confidence, ``C_k = (1/W) sum_{j <= k} w_j (y_j - p_j)``;
    the ECCE is the range ``max_k C_k - min_k C_k`` of that path (with
    ``C_0 = 0``). It needs no bins: a run of over- or underconfidence shows as
    a steady slope, and noise as a random walk of size about ``sigma`` (see
    :func:`calibration_test`).

    Read more in the :ref:`User Guide <calibration_tests>`.

    Parameters
    ----------
    %(metric_inputs)s

    Returns
    -------
    ecce : float
        In ``[0, 1]``; lower is better. For a confidence that is off by the
        same ``delta`` everywhere, about ``|delta|``.

    See Also
    --------
    calibration_test : The same statistic with its standard deviation and
        p-value, also per cell.
    expected_calibration_error : The binned estimate.

    Notes
    -----
    Rows with equal confidences are one point of the path (``C`` is read
    only after the last of them), so the value does not depend on how tied
    rows are ordered. ``mcgrad.metrics.ecce`` reads the path after every row
    in the order ``np.argsort`` leaves ties in: both agree whenever
    confidences are distinct (and whenever tied rows share their label);
    otherwise ours is never larger. One argsort of the scores: ``O(n log n)``.

    References
    ----------
    %(arrieta_ibarra)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import cumulative_calibration_error
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> y = rng.uniform(size=2000) < p
    >>> round(cumulative_calibration_error(y, p), 4)
    0.0104
    >>> round(cumulative_calibration_error(y, np.clip(p + 0.1, 0, 1)), 4)
    0.0899
    """
    y, p, w, total = _check_inputs(y_true, y_prob, sample_weight, pos_label=pos_label)
    return _k.kuiper_range(p, y, w) / total


def _adjust(pvalues, method):
    if method == "holm":
        return _k.holm(pvalues)
    return _k.benjamini_hochberg(pvalues)


def _factorize_cells(cells, n_rows):
    """Sorted distinct cell labels and the code ``0 .. S-1`` of every row.

    Integer ids spanning at most ``4 n + 4096`` values are numbered with one
    ``bincount`` (no sort of the rows); anything else goes through the
    shared check and ``np.unique``.
    """
    g = np.asarray(cells)
    if g.ndim == 2 and g.shape[1] == 1:
        g = g[:, 0]
    if g.ndim == 1 and g.shape[0] == n_rows and g.dtype.kind in "iu" and n_rows:
        lo, hi = int(g.min()), int(g.max())
        if hi - lo <= 4 * n_rows + 4096:
            shifted = (g - lo).astype(np.intp, copy=False)
            present = np.bincount(shifted, minlength=hi - lo + 1) > 0
            rank = np.cumsum(present) - 1
            labels = (np.flatnonzero(present) + lo).astype(g.dtype)
            return labels, rank[shifted]
    codes, _ = _check_cells(cells, n_rows)
    return np.unique(np.asarray(cells).reshape(n_rows)), codes


def _cell_table(y, p, w, order, cells, method, alpha, weight_type, crit):
    labels, codes = _factorize_cells(cells, p.shape[0])
    n_cells = labels.shape[0]
    # zero-weight rows add nothing to any cell's path or variance; they are
    # only left out of the counts
    ranges, count, weight = _k.grouped_kuiper_range(
        p, y, w, codes, n_cells, order=order
    )
    if w is not None:
        count = np.bincount(codes[w > 0], minlength=n_cells)
    var = _k.grouped_null_variance(p, w, codes, n_cells, weight_type)
    return _group_test_table(labels, ranges, count, weight, var, method, alpha, crit)


def _group_test_table(labels, ranges, count, weight, var, method, alpha, crit):
    """The per-cell test table from each cell's Kuiper range (times its
    weight), row count, weight and null variance; also the test of the worst
    cell. Shared by :func:`calibration_test` and the report's mergeable
    statistics."""
    import pandas as pd

    n_cells = labels.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        ecce = ranges / weight
        sigma = np.sqrt(var) / weight
    occupied = count > 0
    z = np.full(n_cells, np.nan)
    z[occupied] = _k.standardize(ecce[occupied], sigma[occupied])
    pvalue = np.full(n_cells, np.nan)
    pvalue[occupied] = _k.kuiper_sf(z[occupied])
    adjusted = _adjust(pvalue, method)
    table = pd.DataFrame(
        {
            "count": count,
            "weight": weight,
            "ecce": np.where(occupied, ecce, np.nan),
            "sigma": np.where(occupied, sigma, np.nan),
            "standardized": z,
            "pvalue": pvalue,
            "pvalue_adjusted": adjusted,
            "mde": np.where(occupied, crit * sigma, np.nan),
            "significant": adjusted < alpha,
        },
        index=pd.Index(labels, name="cell"),
    )
    n_tests = int(np.sum(~np.isnan(pvalue)))
    z_max = float(np.nanmax(z)) if n_tests else np.nan
    p_one = _k.kuiper_sf(z_max) if n_tests else np.nan
    # 1 - (1 - p)**S without cancellation for tiny p
    with np.errstate(divide="ignore"):  # p_one = 1 gives log1p(-1) = -inf
        p_max = float(-np.expm1(n_tests * np.log1p(-p_one))) if n_tests else np.nan
    return table, z_max, p_max


@fill_doc
@validate_params(
    {
        **_INPUTS,
        "cells": ["array-like", None],
        "method": [StrOptions({"holm", "fdr_bh"})],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "weight_type": [_WEIGHT_TYPES],
    },
    prefer_skip_nested_validation=True,
)
def calibration_test(
    y_true,
    y_prob,
    *,
    sample_weight=None,
    pos_label=None,
    cells=None,
    method="holm",
    alpha=0.05,
    weight_type="frequency",
):
    """Kuiper test of perfect calibration, overall and per cell.

    The null hypothesis is ``E[y | p] = p``. Under it the cumulative
    differences of :func:`cumulative_calibration_error` are a sum of
    independent centred terms: their final value has standard deviation
    ``sigma = sqrt(sum_i w_i p_i (1 - p_i)) / W`` and ``ECCE / sigma`` is
    asymptotically the range of a standard Brownian motion on ``[0, 1]``,
    whose survival function (Kuiper's distribution, Feller 1951) is the
    p-value. With ``cells``, every cell is tested on its own rows and the
    p-values are adjusted for the number of cells.

    Read more in the :ref:`User Guide <calibration_tests>`.

    Parameters
    ----------
    %(metric_inputs)s
    cells : array-like of shape (n_samples,), default=None
        Cell of each row (ids of a partitioner, ``-1`` included, or names).
        ``None`` tests all rows together only.
    method : {"holm", "fdr_bh"}, default="holm"
        Adjustment of the per-cell p-values: ``"holm"`` (Holm's step-down,
        controls the probability of flagging any calibrated cell) or
        ``"fdr_bh"`` (Benjamini-Hochberg, controls the expected share of
        calibrated cells among the flagged ones).
    alpha : float, default=0.05
        Level of the ``significant`` column and of ``mde``.
    %(weight_type)s

    Returns
    -------
    result : CalibrationTestResult
        ``statistic`` (ECCE), ``sigma``, ``standardized`` and ``pvalue`` of
        all rows. With ``cells`` also ``table``, indexed by ``cell`` (sorted
        distinct values of ``cells``), with columns ``count`` (rows with
        positive weight), ``weight``, ``ecce``, ``sigma``, ``standardized``,
        ``pvalue``, ``pvalue_adjusted`` (by ``method``), ``mde`` (minimum
        detectable error: the smallest ECCE this cell's size rejects at level
        ``alpha`` before adjustment, ``sigma`` times the Kuiper ``1 - alpha``
        quantile) and ``significant`` (``pvalue_adjusted < alpha``); and
        ``max_standardized`` / ``max_pvalue``, the test of the worst cell.

    See Also
    --------
    cumulative_calibration_error : The statistic alone.
    cell_calibration_table : Binned errors per cell with noise levels.
    multicalibration_error : The worst standardized ECCE over overlapping
        feature-defined segments.

    Notes
    -----
    The p-value is asymptotic; it is accurate once each cell has a few dozen
    answers whose confidences are not all 0 or 1 (see the size study in the
    User Guide). A cell whose confidences are all 0 or 1 has ``sigma = 0``:
    its p-value is 1 if it is exactly calibrated and 0 otherwise. With
    unit or ``weight_type="sampling"`` weights ``statistic``, ``sigma``,
    ``standardized`` and ``pvalue`` equal ``mcgrad.metrics.ecce``,
    ``_ecce_standard_deviation``, ``ecce_sigma`` and ``ecce_pvalue`` (for
    distinct confidences; see :func:`cumulative_calibration_error` for
    ties). ``mcgrad`` reports p-values below about ``2e-16`` as
    ``2.2e-16``; here the tail is computed from its own series.

    References
    ----------
    %(arrieta_ibarra)s
    .. [2] W. Feller, "The asymptotic distribution of the range of sums of
       independent random variables", Ann. Math. Statist. 22 (1951).
    .. [3] S. Holm, "A simple sequentially rejective multiple test
       procedure", Scand. J. Statist. 6 (1979).
    .. [4] Y. Benjamini and Y. Hochberg, "Controlling the false discovery
       rate", J. R. Statist. Soc. B 57 (1995).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import calibration_test
    >>> rng = np.random.default_rng(0)
    >>> cells = np.repeat(["calibrated", "overconfident"], 1000)
    >>> p = rng.uniform(size=2000)
    >>> y = rng.uniform(size=2000) < np.where(cells == "calibrated", p, p * 0.8)
    >>> result = calibration_test(y, p, cells=cells)
    >>> round(result.pvalue, 4)
    0.0
    >>> result.table[["count", "ecce", "pvalue_adjusted", "significant"]].round(3)
                   count   ecce  pvalue_adjusted  significant
    cell
    calibrated      1000  0.012            0.957        False
    overconfident   1000  0.093            0.000         True
    """
    y, p, w, total = _check_inputs(y_true, y_prob, sample_weight, pos_label=pos_label)
    order = np.argsort(p)  # the one sort, shared by the cells
    stat = _k.kuiper_range(p, y, w, order) / total
    sigma = _sigma(p, w, total, weight_type)
    z = _k.standardize(stat, sigma)
    result = {
        "statistic": stat,
        "sigma": sigma,
        "standardized": z,
        "pvalue": _k.kuiper_sf(z),
        "alpha": float(alpha),
    }
    if cells is not None:
        crit = _k.kuiper_isf(alpha)
        table, z_max, p_max = _cell_table(
            y, p, w, order, cells, method, alpha, weight_type, crit
        )
        result.update(
            table=table, max_standardized=z_max, max_pvalue=p_max, method=method
        )
    return CalibrationTestResult(**result)


@fill_doc
@validate_params(_INPUTS, prefer_skip_nested_validation=True)
def smooth_calibration_error(y_true, y_prob, *, sample_weight=None, pos_label=None):
    """Smooth ECE (smECE): kernel-smoothed calibration error, no bins.

    The residuals ``p - y`` are smoothed over the confidence axis with a
    Gaussian kernel reflected at 0 and 1, and the smECE is the mean absolute
    smoothed residual under the smoothed density of confidences; the
    kernel's bandwidth is the fixed point ``sigma = smECE(sigma)`` (Blasiok
    and Nakkiran 2024), so there is no tuning parameter. It is a consistent
    estimate (up to a factor of at most 2) of the distance of the
    confidences to the nearest perfectly calibrated predictor.

    Read more in the :ref:`User Guide <calibration_tests>`.

    Parameters
    ----------
    %(metric_inputs)s
        Weights are rescaled to sum to the number of rows with positive
        weight, so that unit weights give the unweighted statistic.

    Returns
    -------
    smece : float
        In ``[0, 1]``; lower is better.

    See Also
    --------
    cumulative_calibration_error : A binning-free error that needs no
        smoothing either.
    expected_calibration_error : The binned estimate.

    Notes
    -----
    The discretization (a linear-interpolation grid of ``max(1001, 10 /
    sigma + 1)`` nodes, the reflected kernel's convolution, 200 or ``10 /
    sigma`` evaluation points, ten bisection steps for the bandwidth) is the
    one of the authors' package ``relplot`` 1.0, whose ``smECE`` this equals
    (to rounding). The density has a small absolute regularizer (``1e-4``),
    so integer weights equal repeated rows up to a relative ``1e-9``.

    References
    ----------
    .. [1] J. Blasiok and P. Nakkiran, "Smooth ECE: Principled reliability
       diagrams via kernel smoothing", ICLR 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import smooth_calibration_error
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> y = rng.uniform(size=2000) < p
    >>> round(smooth_calibration_error(y, p), 3)
    0.025
    >>> round(smooth_calibration_error(y, p ** 0.5), 3)  # overconfident
    0.16
    """
    y, p, w, _ = _check_inputs(y_true, y_prob, sample_weight, pos_label=pos_label)
    y = y.astype(np.float64, copy=False)
    if w is not None:
        keep = w > 0
        y, p, w = y[keep], p[keep], w[keep]
        w = w * (p.shape[0] / np.sum(w))
    return _smooth.smooth_ece(p, y, w)[0]


def _feature_codes(column, categorical, n_bins, order):
    """Integer code per row for one feature column, in mcgrad's value order.

    Categorical: the ``n_bins - 1`` most frequent values kept, the rest one
    "other" value (when there are more than ``n_bins``). Numeric: as is when
    it has at most ``n_bins`` distinct values, else ``n_bins`` quantile bins
    (``pandas.cut`` at the ``k / n_bins`` quantiles, duplicate edges
    dropped). Missing values are a value of their own. The column is read in
    score order (``order``), as mcgrad reads its score-sorted frame: codes
    number the values by their first row in that order, and frequency ties
    are broken the same way. Returns ``(codes, n_values)``.
    """
    import pandas as pd

    s = pd.Series(column[order])
    missing = s.isna().to_numpy()
    if categorical:
        values = s.astype(object).where(~s.isna(), "__missing__")
        if values.nunique() > n_bins:
            n_collapse = values.nunique() - n_bins + 1
            rare = values.value_counts().index[-n_collapse:]
            values = values.where(~values.isin(rare), "__other__")
        keys = values.astype(str)
    else:
        s = pd.to_numeric(s)
        if s.nunique() > n_bins:
            edges = s.quantile(np.linspace(0.0, 1.0, n_bins + 1))
            s = pd.cut(
                s, bins=edges, labels=False, include_lowest=True, duplicates="drop"
            )
        keys = pd.Series(np.where(missing, np.inf, s.to_numpy(dtype=np.float64)))
    sorted_codes, uniques = pd.factorize(keys)  # numbered by first appearance
    codes = np.empty(sorted_codes.shape[0], dtype=np.int64)
    codes[order] = sorted_codes
    return codes, uniques.shape[0]


def _check_features(features, n_rows, categorical_features):
    """Feature columns as a list of (column, is_categorical)."""
    import pandas as pd

    if hasattr(features, "columns"):
        frame = features.to_pandas() if hasattr(features, "to_pandas") else features
        frame = pd.DataFrame(frame)
    else:
        arr = np.asarray(features)
        if arr.ndim == 1:
            arr = arr.reshape(-1, 1)
        if arr.ndim != 2:
            raise ValueError(
                f"features must be 2-D, one row per answer; got shape {arr.shape}."
            )
        frame = pd.DataFrame(arr)
    if frame.shape[0] != n_rows:
        raise ValueError(
            f"features must have one row per answer ({n_rows}); got "
            f"{frame.shape[0]} rows."
        )
    if frame.shape[1] == 0:
        raise ValueError("features has no columns; pass at least one feature.")
    names = list(frame.columns)
    if isinstance(categorical_features, str):  # "auto"
        categorical = [
            not pd.api.types.is_numeric_dtype(frame[c])
            or pd.api.types.is_bool_dtype(frame[c])
            for c in names
        ]
    else:
        chosen = set()
        for c in categorical_features:
            if isinstance(c, Integral) and not isinstance(c, bool) and c not in names:
                if not -len(names) <= c < len(names):
                    raise ValueError(
                        f"categorical_features names column {c}, but features has "
                        f"{len(names)} columns."
                    )
                chosen.add(names[c])
            elif c in names:
                chosen.add(c)
            else:
                raise ValueError(
                    f"categorical_features names {c!r}, which is not a column of "
                    f"features (columns: {names[:10]})."
                )
        categorical = [c in chosen for c in names]
        for c, cat in zip(names, categorical, strict=True):
            if not cat and not pd.api.types.is_numeric_dtype(frame[c]):
                raise ValueError(
                    f"feature column {c!r} is not numeric; list it in "
                    "categorical_features (or use 'auto')."
                )
    # mcgrad enumerates categorical columns before numerical ones
    pairs = list(zip(names, categorical, strict=True))
    cols = [(frame[c].to_numpy(), True) for c, k in pairs if k]
    cols += [(frame[c].to_numpy(), False) for c, k in pairs if not k]
    return cols


@fill_doc
@validate_params(
    {
        **_INPUTS,
        "features": ["array-like"],
        "categorical_features": [StrOptions({"auto"}), "array-like"],
        "max_depth": [Interval(Integral, 0, None, closed="left")],
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "min_samples_per_segment": [Interval(Integral, 1, None, closed="left")],
        "max_n_segments": [Interval(Integral, 1, None, closed="left"), None],
        "weight_type": [_WEIGHT_TYPES],
    },
    prefer_skip_nested_validation=True,
)
def multicalibration_error(
    y_true,
    y_prob,
    *,
    features,
    sample_weight=None,
    pos_label=None,
    categorical_features="auto",
    max_depth=3,
    n_bins=3,
    min_samples_per_segment=10,
    max_n_segments=1000,
    weight_type="frequency",
):
    """Multicalibration error (MCE): the worst standardized ECCE over segments.

    Segments are built from feature columns (Guy et al. 2025, as in
    ``mcgrad``): each categorical column contributes its values, each
    numeric column its values or ``n_bins`` quantile bins, and the segments
    are all rows (depth 0), every value of one feature (depth 1), every
    combination of values of two features (depth 2), ... up to
    ``max_depth``. Each segment with at least ``min_samples_per_segment``
    rows is tested with the ECCE of :func:`calibration_test`; the MCE is the
    largest ``ECCE_s / sigma_s`` times the ``sigma`` of all rows, i.e. the
    worst segment's evidence expressed on the probability scale.

    Read more in the :ref:`User Guide <calibration_tests>`.

    Parameters
    ----------
    %(metric_inputs)s
    features : array-like or DataFrame of shape (n_samples, n_features)
        The columns that define segments (pandas or polars DataFrames keep
        their column types).
    categorical_features : "auto" or list of int or str, default="auto"
        Columns whose values are categories. ``"auto"``: the non-numeric and
        boolean columns. The other columns are numeric.
    max_depth : int, default=3
        Largest number of features crossed in one segment.
    n_bins : int, default=3
        Values kept per feature: categorical columns keep their ``n_bins -
        1`` most frequent values and merge the rest; numeric columns with
        more than ``n_bins`` distinct values are cut at quantiles into
        ``n_bins`` bins (``mcgrad``'s ``max_values_per_segment_feature``).
    min_samples_per_segment : int, default=10
        Segments with fewer rows (of positive weight) are not tested.
    max_n_segments : int or None, default=1000
        At most this many segments, in the order above (depth first, then
        features, then values by their lowest confidence); ``None``: all.
    %(weight_type)s

    Returns
    -------
    mce : float
        Non-negative, on the scale of a probability; lower is better.

    See Also
    --------
    calibration_test : The per-cell test over a partition, with
        multiplicity-adjusted p-values.
    beta_calibration_error : The binned error averaged over a partition.

    Notes
    -----
    Equal to ``mcgrad.metrics.MulticalibrationError(...).mce`` with
    ``precision_dtype="float64"`` on the same segments (for distinct
    confidences; with mcgrad's default float32 the stored cases agree to
    ``1e-7`` relative). Each feature combination is a partition of the
    rows, so one grouped pass per combination tests all its segments.
    Quantile bin edges are computed from the rows, unweighted, as in
    ``mcgrad``; zero-weight rows are dropped first.

    References
    ----------
    .. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax and
       M. Tygert, "Measuring multi-calibration", arXiv:2506.11251 (2025).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import multicalibration_error
    >>> rng = np.random.default_rng(0)
    >>> topic = rng.choice(["art", "math", "news"], size=3000)
    >>> p = rng.uniform(size=3000)
    >>> y = rng.uniform(size=3000) < np.where(topic == "math", p * 0.8, p)
    >>> round(multicalibration_error(y, p, features=topic.reshape(-1, 1)), 4)
    0.0546
    """
    y, p, w, total = _check_inputs(y_true, y_prob, sample_weight, pos_label=pos_label)
    cols = _check_features(features, p.shape[0], categorical_features)
    if w is not None:
        keep = w > 0
        y, p, w = y[keep], p[keep], w[keep]
        cols = [(c[keep], cat) for c, cat in cols]
    order = np.argsort(p)
    codes = [_feature_codes(c, cat, n_bins, order) for c, cat in cols]
    sigma_all = _sigma(p, w, total, weight_type)
    limit = np.inf if max_n_segments is None else max_n_segments
    found, best = 0, 0.0
    for depth in range(max_depth + 1):
        for subset in itertools.combinations(range(len(codes)), depth):
            cell = np.zeros(p.shape[0], dtype=np.int64)
            n_cells = 1
            for j in subset:  # the first feature is the most significant
                cell = cell * codes[j][1] + codes[j][0]
                n_cells *= codes[j][1]
            used, cell = np.unique(cell, return_inverse=True)
            cell = cell.reshape(-1)
            ranges, count, weight = _k.grouped_kuiper_range(
                p, y, w, cell, used.shape[0], order=order
            )
            var = _k.grouped_null_variance(p, w, cell, used.shape[0], weight_type)
            tested = np.flatnonzero(count >= min_samples_per_segment)
            tested = tested[: int(min(limit - found, tested.shape[0]))]
            if tested.shape[0]:
                z = _k.standardize(
                    ranges[tested] / weight[tested],
                    np.sqrt(var[tested]) / weight[tested],
                )
                best = max(best, float(np.max(z)))
            found += tested.shape[0]
            if found >= limit:
                return best * sigma_all
    return best * sigma_all
