# SPDX-License-Identifier: MIT
"""Binned calibration statistics: bin indices, quantile edges, per-bin sums.

Pure NumPy kernels behind :mod:`sklearn_betacal.metrics`. Inputs are already
validated: ``p`` is a float64 vector in ``[0, 1]``, ``y`` a vector of 0/1
values (bool, integer or float dtype), ``w`` a non-negative float64 vector or
``None`` (unit weights). Nothing here checks its input.

The equal-width bin of a confidence is ``min(floor(p * M), M - 1)``
(the calibration chapter, "The reliability table, built from its definition"), so
bin ``b`` covers ``[b/M, (b+1)/M)`` and the last bin also holds ``p = 1``.
"""

import numpy as np

#: Rows processed per block by :func:`uniform_gap_sums`. Small enough that the
#: block's temporaries stay in L2 cache and are reused (no page faults from
#: fresh N-sized allocations), large enough that the Python loop is cheap.
_BLOCK = 1 << 15


def uniform_bin_index(p, n_bins):
    """Equal-width bin of each confidence: ``min(floor(p * M), M - 1)``."""
    idx = (p * n_bins).astype(np.intp)
    np.minimum(idx, n_bins - 1, out=idx)
    return idx


def quantile_edges(p, w, n_bins):
    """Interior equal-mass edges ``e_1 <= ... <= e_{M-1}`` (weighted).

    ``e_k`` is the weighted inverted-CDF quantile at level ``k/M``: the
    smallest confidence whose cumulative weight (in sorted order) reaches
    ``k/M`` of the total. With unit weights this is
    ``np.quantile(p, k/M, method="inverted_cdf")``. Because only cumulative
    weights enter, a zero weight never moves an edge and an integer weight
    ``m`` moves them exactly as ``m`` repeated rows would.
    """
    n = p.shape[0]
    if w is None:
        # unit weights: the cumulative count first reaches k n / M at 0-based
        # position ceil(k n / M) - 1, so a partial sort (O(n)) suffices
        kth = np.ceil(np.arange(1, n_bins) * n / n_bins).astype(np.intp) - 1
        kth = np.clip(kth, 0, n - 1)
        return np.partition(p, kth)[kth]
    order = np.argsort(p, kind="stable")
    p_sorted = p[order]
    cum = np.cumsum(w[order])
    # k * W / M: exact whenever it is an integer (integer weights)
    levels = np.arange(1, n_bins) * cum[-1] / n_bins
    pos = np.searchsorted(cum, levels, side="left")
    return p_sorted[np.minimum(pos, n - 1)]


def quantile_bin_index(p, interior_edges):
    """Bin of each confidence for edges from :func:`quantile_edges`.

    Bin ``k`` is ``(e_k, e_{k+1}]`` (left-open, as the inverted CDF puts a
    value equal to an edge below it), with ``e_0 = -inf``, ``e_M = +inf``.
    """
    return np.searchsorted(interior_edges, p, side="left").astype(np.intp)


def bin_sums(idx, n_bins, p, y, w):
    """Per-bin count, weight, sum of ``w*p`` and sum of ``w*y``.

    ``count`` counts rows with positive weight (a zero weight drops the
    row); the weighted sums are the reliability-table numerators.
    """
    if w is None:
        count = np.bincount(idx, minlength=n_bins).astype(np.int64)
        weight = count.astype(np.float64)
        sum_p = np.bincount(idx, weights=p, minlength=n_bins)
        sum_y = np.bincount(idx, weights=y, minlength=n_bins)
    else:
        count = np.bincount(idx[w > 0], minlength=n_bins).astype(np.int64)
        weight = np.bincount(idx, weights=w, minlength=n_bins)
        sum_p = np.bincount(idx, weights=w * p, minlength=n_bins)
        sum_y = np.bincount(idx, weights=w * y, minlength=n_bins)
    return count, weight, sum_p, sum_y


def uniform_gap_sums(p, y, w, n_bins, *, with_weight=False):
    """Per-bin signed gap ``D_b = sum_i w_i (y_i - p_i)`` (equal-width bins).

    The fast path of the ECE: ``ECE_l1 = sum_b |D_b| / W`` needs a single
    weighted ``bincount``. Rows are processed in cache-sized blocks into
    reused buffers. Instead of clipping the index to ``M - 1`` the block
    index may reach ``M`` (only for ``p == 1``) and that extra bin is folded
    into the last one afterwards, which saves a pass and gives exactly
    ``min(floor(p * M), M - 1)``.

    Returns ``(D, W)`` where ``W`` (per-bin weight) is ``None`` unless
    ``with_weight``.
    """
    n = p.shape[0]
    size = min(n, _BLOCK)
    fbuf = np.empty(size, dtype=np.float64)
    ibuf = np.empty(size, dtype=np.intp)
    gap = np.zeros(n_bins + 1, dtype=np.float64)
    weight = np.zeros(n_bins + 1, dtype=np.float64) if with_weight else None
    for start in range(0, n, size):
        stop = min(start + size, n)
        k = stop - start
        pb, fb, ib = p[start:stop], fbuf[:k], ibuf[:k]
        np.multiply(pb, n_bins, out=fb)
        np.copyto(ib, fb, casting="unsafe")  # truncation == floor for p >= 0
        np.subtract(y[start:stop], pb, out=fb)
        if w is not None:
            np.multiply(fb, w[start:stop], out=fb)
        gap += np.bincount(ib, weights=fb, minlength=n_bins + 1)
        if with_weight:
            if w is None:
                weight += np.bincount(ib, minlength=n_bins + 1)
            else:
                weight += np.bincount(ib, weights=w[start:stop], minlength=n_bins + 1)
    gap[n_bins - 1] += gap[n_bins]
    if with_weight:
        weight[n_bins - 1] += weight[n_bins]
        weight = weight[:n_bins]
    return gap[:n_bins], weight


def uniform_cell_sums(p, y, w, cells, n_cells, n_bins):
    """Per-(cell, bin) signed gap ``D_sb`` and weight ``W_sb``, shape (S, M).

    One ``bincount`` over the combined index ``s * M + b`` with equal-width
    bins: the App. A.1 estimate of CE(h; beta) bins each cell's confidences
    separately, and equal-width bins are the same in every cell.
    """
    combined = cells * n_bins + uniform_bin_index(p, n_bins)
    size = n_cells * n_bins
    diff = y - p if w is None else w * (y - p)
    gap = np.bincount(combined, weights=diff, minlength=size)
    weight = np.bincount(combined, weights=w, minlength=size).astype(np.float64)
    return gap.reshape(n_cells, n_bins), weight.reshape(n_cells, n_bins)


def occupied_cell_sums(p, y, w, cells, n_bins):
    """Signed gap and weight of every *occupied* (cell, equal-width bin) pair.

    The same sums as :func:`uniform_cell_sums` without the dense ``(S, M)``
    grid: memory and time follow the rows, not ``S * M`` (1e5 cells x 1e4
    bins would be 7.45 GiB dense). Returns ``(pair_cell, gap, weight)``, one
    entry per occupied pair.
    """
    combined = cells.astype(np.int64) * n_bins + uniform_bin_index(p, n_bins)
    pairs, inverse = np.unique(combined, return_inverse=True)
    inverse = inverse.reshape(-1)
    diff = y - p if w is None else w * (y - p)
    gap = np.bincount(inverse, weights=diff, minlength=pairs.shape[0])
    weight = np.bincount(inverse, weights=w, minlength=pairs.shape[0])
    return pairs // n_bins, gap, weight.astype(np.float64)


def occupied_cell_errors(pair_cell, gap, weight, n_cells, norm):
    """Each cell's binned CE from :func:`occupied_cell_sums`; NaN if empty.

    Same formulas as :func:`cell_calibration_errors` (an empty bin adds
    nothing to any norm).
    """
    cell_weight = np.bincount(pair_cell, weights=weight, minlength=n_cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        if norm == "l1":
            num = np.bincount(pair_cell, weights=np.abs(gap), minlength=n_cells)
            return num / cell_weight, cell_weight
        per_bin = np.where(weight > 0, gap / weight, 0.0)
        if norm == "l2":
            num = np.bincount(pair_cell, weights=gap * per_bin, minlength=n_cells)
            return np.sqrt(num / cell_weight), cell_weight
        err = np.zeros(n_cells)
        np.maximum.at(err, pair_cell, np.abs(per_bin))
    return np.where(cell_weight > 0, err, np.nan), cell_weight


def cell_calibration_errors(gap, weight, norm):
    """Each cell's binned CE from ``(S, M)`` gaps and weights; NaN if empty."""
    cell_weight = weight.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if norm == "l1":
            return np.abs(gap).sum(axis=1) / cell_weight
        per_bin = np.where(weight > 0, gap / weight, 0.0)
        if norm == "l2":
            return np.sqrt((gap * per_bin).sum(axis=1) / cell_weight)
        err = np.abs(per_bin).max(axis=1)
    return np.where(cell_weight > 0, err, np.nan)


def calibration_error_from_sums(gap, weight, total_weight, norm):
    """Binned calibration error from per-bin signed gaps and weights.

    ``l1``: ``sum_b (W_b/W) |acc_b - conf_b|`` (the calibration chapter ECE, paper
    Def. 2.2 estimated by binning, App. A.1); ``l2``: the square root of the
    weighted mean squared gap; ``max``: the largest gap over non-empty bins
    (MCE). ``weight`` may be ``None`` for ``l1``.
    """
    if norm == "l1":
        return float(np.sum(np.abs(gap)) / total_weight)
    nonempty = weight > 0
    per_bin = gap[nonempty] / weight[nonempty]
    if norm == "l2":
        return float(np.sqrt(np.sum(gap[nonempty] * per_bin) / total_weight))
    return float(np.max(np.abs(per_bin)))
