# SPDX-License-Identifier: MIT
"""Cumulative (Kuiper) calibration statistics and multiplicity adjustments.

Pure NumPy/SciPy kernels behind :func:`sklearn_betacal.metrics.calibration_test`
and :func:`~sklearn_betacal.metrics.cumulative_calibration_error`. Inputs are
validated by the caller: ``p`` float64 in ``[0, 1]``, ``y`` 0/1 (bool, integer
or float), ``w`` non-negative float64 or ``None`` (unit weights).

The statistic (Arrieta-Ibarra, Gujral, Tannen, Tygert and Xu, "Metrics of
calibration for probabilistic predictions", JMLR 23 (2022), Sec. 3): sort the
rows by score, form the cumulative differences

    C_k = (1 / W) sum_{j <= k} w_j (y_j - p_j),   C_0 = 0,

and take their range ``ECCE = max_k C_k - min_k C_k`` (the Kuiper statistic).
Tied scores are one point of the curve: ``C`` is evaluated only after the last
row of each run of equal scores, so the value does not depend on how rows with
equal scores are ordered (a sort leaves that order arbitrary). Under perfect
calibration ``W C`` is a sum of independent centred terms with variance
``sum_j v_j p_j (1 - p_j)``, ``v_j = w_j`` for frequency weights (a row of
weight ``m`` is ``m`` answers) and ``v_j = w_j**2`` for sampling weights (one
answer that stands for ``w_j``); ``sigma`` is its standard deviation divided
by ``W``. ``ECCE / sigma`` is asymptotically the range of a standard Brownian
motion on ``[0, 1]``, whose distribution (Feller 1951) gives the p-value.
"""

import numpy as np
from scipy.special import erfc

#: Below this standardized value the small-x (theta) series of the range's
#: CDF is used, above it the erfc series of its survival function; both are
#: exact, each converges in a handful of terms on its side.
_SERIES_SWITCH = 1.5
_N_TERMS = 40


def _tie_ends(p_sorted):
    """Mask of the last row of every run of equal sorted scores."""
    ends = np.empty(p_sorted.shape[0], dtype=bool)
    np.not_equal(p_sorted[1:], p_sorted[:-1], out=ends[:-1])
    ends[-1] = True
    return ends


def signed_residuals(p, y, w):
    """``w (y - p)`` (``y - p`` without weights) as float64."""
    d = np.subtract(y, p, dtype=np.float64)
    if w is not None:
        d *= w
    return d


def null_variance(p, w, weight_type):
    """``sum_j v_j p_j (1 - p_j)``: the variance of ``W C_n`` under calibration."""
    v = p * (1.0 - p)
    if w is None:
        return float(np.sum(v))
    if weight_type == "sampling":
        return float(np.dot(w * w, v))
    return float(np.dot(w, v))


def cumulative_path(p, y, w, order=None):
    """Sorted distinct scores and the cumulative differences ``W C`` there.

    Returns ``(order, ends, cum)``: ``order`` sorts ``p``, ``ends`` marks the
    last row of each tie run in sorted order, and ``cum[k]`` is
    ``sum_{j <= k} w_j (y_j - p_j)`` over the first ``k + 1`` sorted rows
    (not normalized; only ``cum[ends]`` is a point of the curve).
    """
    if order is None:
        order = np.argsort(p)
    d = signed_residuals(p, y, w)[order]
    cum = np.cumsum(d, out=d)
    return order, _tie_ends(p[order]), cum


def kuiper_range(p, y, w, order=None):
    """Unnormalized Kuiper range ``max(0, max C) - min(0, min C)`` times ``W``."""
    _, ends, cum = cumulative_path(p, y, w, order)
    if not ends.all():
        cum = cum[ends]
    return max(float(cum.max()), 0.0) - min(float(cum.min()), 0.0)


def grouped_kuiper_range(p, y, w, codes, n_cells, order=None):
    """Per cell: unnormalized Kuiper range, its rows and total weight.

    One argsort of the scores (or the given ``order``, which sorts ``p``),
    then a stable sort of the cell codes in score order -- one 16-bit radix
    pass, two (low then high half) beyond 65,536 cells -- so that each cell's
    rows are contiguous and sorted by score. Each cell's curve is the global
    cumulative sum minus its value before the cell's first row; the cells'
    bounds follow from their row counts, so the sorted codes are never built.
    """
    if order is None:
        order = np.argsort(p)
    low = (codes & 0xFFFF).astype(np.uint16)[order]
    order = order[np.argsort(low, kind="stable")]
    del low
    if n_cells > 1 << 16:
        high = (codes >> 16).astype(np.uint16)[order]
        order = order[np.argsort(high, kind="stable")]
        del high
    p_sorted = p[order]
    cum = signed_residuals(p, y, w)[order]  # one gather instead of three
    np.cumsum(cum, out=cum)
    rows = np.bincount(codes, minlength=n_cells)
    stop = np.cumsum(rows)
    start = stop - rows
    ends = _tie_ends(p_sorted)
    occupied = rows > 0
    ends[stop[occupied] - 1] = True  # the last row of every cell
    base = np.where(start > 0, cum[np.maximum(start - 1, 0)], 0.0)
    end_pos = np.flatnonzero(ends)
    first = np.searchsorted(end_pos, start[occupied], side="left")
    values = cum[end_pos]
    hi = np.zeros(n_cells)
    lo = np.zeros(n_cells)
    if end_pos.shape[0]:
        hi[occupied] = np.maximum.reduceat(values, first)
        lo[occupied] = np.minimum.reduceat(values, first)
    hi = np.maximum(hi - base, 0.0)
    lo = np.minimum(lo - base, 0.0)
    if w is None:
        weight = rows.astype(np.float64)
    else:
        weight = np.bincount(codes, weights=w, minlength=n_cells)
    return hi - lo, rows, weight


def null_variance_terms(p, w, weight_type):
    """Per row ``v_j p_j (1 - p_j)``, the terms of :func:`null_variance`."""
    v = p * (1.0 - p)
    if w is not None:
        v *= w * w if weight_type == "sampling" else w
    return v


def grouped_null_variance(p, w, codes, n_cells, weight_type):
    """Per-cell ``sum_j v_j p_j (1 - p_j)`` (see :func:`null_variance`)."""
    v = null_variance_terms(p, w, weight_type)
    return np.bincount(codes, weights=v, minlength=n_cells)


def kuiper_sf(x):
    """``P(R > x)`` for the range ``R`` of a standard Brownian motion on [0, 1].

    Feller (1951), "The asymptotic distribution of the range of sums of
    independent random variables", Ann. Math. Statist. 22. For ``x`` below
    :data:`_SERIES_SWITCH` the theta series of the CDF,
    ``F(x) = sum_{k>=0} (8/x^2 + 2/(a_k^2 pi^2)) exp(-2 a_k^2 pi^2 / x^2)``
    with ``a_k = k + 1/2`` (the form used by Arrieta-Ibarra et al.); above it
    the series obtained from it by Poisson summation,
    ``1 - F(x) = 4 sum_{m>=1} (-1)^(m+1) m erfc(m x / sqrt(2))``, which keeps
    the tail's relative precision. ``x <= 0`` gives 1, ``inf`` gives 0.
    """
    x = np.asarray(x, dtype=np.float64)
    out = np.ones(x.shape, dtype=np.float64)
    flat_x, flat_out = x.reshape(-1), out.reshape(-1)
    small = (flat_x > 0) & (flat_x < _SERIES_SWITCH)
    if small.any():
        xs = flat_x[small][:, None]
        a = np.arange(_N_TERMS)[None, :] + 0.5
        with np.errstate(under="ignore"):
            terms = (8.0 / xs**2 + 2.0 / (a**2 * np.pi**2)) * np.exp(
                -2.0 * a**2 * np.pi**2 / xs**2
            )
        flat_out[small] = 1.0 - terms.sum(axis=1)
    large = flat_x >= _SERIES_SWITCH
    if large.any():
        xl = flat_x[large][:, None]
        m = np.arange(1, _N_TERMS + 1)[None, :]
        sign = np.where(m % 2 == 1, 1.0, -1.0)
        with np.errstate(under="ignore"):
            terms = sign * m * erfc(m * xl / np.sqrt(2.0))
        flat_out[large] = 4.0 * terms.sum(axis=1)
    np.clip(out, 0.0, 1.0, out=out)
    return out if out.ndim else float(out)


def kuiper_isf(q):
    """Inverse of :func:`kuiper_sf`: the ``x`` with ``P(R > x) = q``."""
    from scipy.optimize import brentq

    return float(brentq(lambda x: kuiper_sf(x) - q, 1e-3, 50.0, xtol=1e-12))


def standardize(stat, sigma):
    """``stat / sigma`` with ``0/0 = 0`` and ``x/0 = inf`` (mcgrad's convention)."""
    stat = np.asarray(stat, dtype=np.float64)
    sigma = np.asarray(sigma, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sigma > 0, stat / np.where(sigma > 0, sigma, 1.0), np.inf)
    z = np.where((sigma <= 0) & (stat == 0), 0.0, z)
    return z if z.ndim else float(z)


def _adjust_sorted(pvalues, step):
    """Apply ``step`` to the sorted non-NaN p-values; NaN entries stay NaN."""
    pvalues = np.asarray(pvalues, dtype=np.float64)
    out = np.full_like(pvalues, np.nan)
    keep = np.flatnonzero(~np.isnan(pvalues))
    if keep.shape[0]:
        order = np.argsort(pvalues[keep], kind="stable")
        out[keep[order]] = np.minimum(step(pvalues[keep][order]), 1.0)
    return out


def holm(pvalues):
    """Holm's step-down adjusted p-values (controls the family-wise error).

    ``p_adj(i) = max_{j <= i} min(1, (m - j + 1) p_(j))`` over the sorted
    p-values (Holm 1979); NaN entries are left out of the family and stay NaN.
    """

    def step(sorted_p):
        m = sorted_p.shape[0]
        return np.maximum.accumulate((m - np.arange(m)) * sorted_p)

    return _adjust_sorted(pvalues, step)


def benjamini_hochberg(pvalues):
    """Benjamini-Hochberg step-up adjusted p-values (controls the FDR).

    ``p_adj(i) = min_{j >= i} min(1, m p_(j) / j)`` (Benjamini and Hochberg
    1995); NaN entries are left out and stay NaN.
    """

    def step(sorted_p):
        m = sorted_p.shape[0]
        scaled = m * sorted_p / np.arange(1, m + 1)
        return np.minimum.accumulate(scaled[::-1])[::-1]

    return _adjust_sorted(pvalues, step)
