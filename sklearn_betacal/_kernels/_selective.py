# SPDX-License-Identifier: MIT
"""Selective answering: what is kept above a threshold, and its certification.

Pure NumPy/SciPy functions on validated arrays:

- :func:`kept_sums`: weight and positive weight of the rows with confidence
  ``>= t``, for every threshold ``t`` (the accuracy-confidence and
  risk-coverage curves of ``metrics/_selective.py``, and the gate below);
- :func:`binomial_pvalue` and :func:`binomial_upper_bound`: the exact
  binomial test of "the error rate is above alpha" and its dual, the
  Clopper-Pearson upper confidence bound;
- :func:`fixed_sequence_threshold`: Learn-Then-Test (Angelopoulos et al.
  2021) with fixed-sequence testing over a decreasing grid of thresholds:
  the lowest threshold (largest coverage) whose risk is certified <= alpha.

Conventions: ``p`` float64 confidences, ``err`` 0/1 float64 (1: the answer
was wrong), ``w`` integer-valued float64 frequency weights or ``None``
(unit), thresholds float64. A row is *answered* at threshold ``t`` when
``p >= t``.
"""

import numpy as np
from scipy.stats import beta, binom


def kept_sums(p, y, w, thresholds):
    """``(kept_wy, kept_w)``: weight of positives and weight kept at ``p >= t``.

    One pair per threshold (any order). Few thresholds (a grid): every row
    is placed among the sorted thresholds (``searchsorted``, no sort of the
    rows) and the band totals summed from the top; many (one per distinct
    confidence): suffix sums over the confidences sorted ascending. Either
    way an empty suffix is exactly zero rather than a cancellation residue.
    """
    w_all = np.ones_like(p) if w is None else w
    if 16 * thresholds.shape[0] < p.shape[0]:
        order = np.argsort(thresholds, kind="stable")
        t_sorted = thresholds[order]
        # band j holds the rows with t_sorted[j - 1] <= p < t_sorted[j]
        band = np.searchsorted(t_sorted, p, side="right")
        m = t_sorted.shape[0] + 1
        band_w = np.bincount(band, weights=w_all, minlength=m)
        band_wy = np.bincount(band, weights=w_all * y, minlength=m)
        # kept at t_sorted[j]: the bands above j, summed from the top
        suffix_w = np.cumsum(band_w[::-1])[::-1][1:]
        suffix_wy = np.cumsum(band_wy[::-1])[::-1][1:]
        kept_w, kept_wy = np.empty(m - 1), np.empty(m - 1)
        kept_w[order], kept_wy[order] = suffix_w, suffix_wy
        return kept_wy, kept_w
    order = np.argsort(p, kind="stable")
    p_sorted = p[order]
    w_sorted = w_all[order]
    wy_sorted = w_sorted * y[order]
    suffix_w = np.append(np.cumsum(w_sorted[::-1])[::-1], 0.0)
    suffix_wy = np.append(np.cumsum(wy_sorted[::-1])[::-1], 0.0)
    first = np.searchsorted(p_sorted, thresholds, side="left")
    return suffix_wy[first], suffix_w[first]


def binomial_pvalue(k, n, alpha):
    """P-value of ``H0: risk > alpha`` from ``k`` errors among ``n`` answers.

    ``P(Binomial(n, alpha) <= k)``: given the number of answered rows ``n``,
    i.i.d. rows make the error count binomial with the (conditional) risk as
    its rate, and the binomial CDF decreases in the rate, so this p-value is
    valid for every risk >= alpha. 1 where ``n = 0`` (nothing to test).
    """
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    out = np.ones(np.broadcast(k, n).shape)
    some = n > 0
    out[some] = binom.cdf(np.broadcast_to(k, out.shape)[some], n[some], alpha)
    return out


def binomial_upper_bound(k, n, delta):
    """Clopper-Pearson upper confidence bound (level ``1 - delta``) of a rate.

    The largest rate ``r`` with ``P(Binomial(n, r) <= k) >= delta``: the
    dual of :func:`binomial_pvalue` (``bound <= alpha`` exactly when the
    p-value at ``alpha`` is ``<= delta``). 1 where ``n = 0`` or ``k = n``.
    """
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    out = np.ones(np.broadcast(k, n).shape)
    kk = np.broadcast_to(k, out.shape)
    some = (n > 0) & (kk < n)
    out[some] = beta.ppf(1.0 - delta, kk[some] + 1.0, n[some] - kk[some])
    return out


def fixed_sequence_threshold(p, err, w, grid, alpha, delta):
    """The certified threshold of one set of rows, by fixed-sequence testing.

    The hypotheses ``H_j: R(grid[j]) > alpha``, ``R(t)`` the error rate of
    the rows answered at ``t``, are tested in the order of ``grid``
    (decreasing thresholds: increasing coverage) with the exact binomial
    p-value, each at level ``delta``, stopping at the first one not
    rejected. Fixed-sequence testing controls the family-wise error at
    ``delta`` without splitting it (LTT, Angelopoulos et al. 2021, Sec. 3)
    provided the order does not depend on the labels tested.

    Parameters
    ----------
    p, err : ndarray of shape (n,)
        Confidences and 0/1 errors of the certification rows.
    w : ndarray of shape (n,) or None
        Integer-valued frequency weights.
    grid : ndarray of shape (m,)
        Thresholds, strictly decreasing.
    alpha, delta : float
        Target risk and level of each test.

    Returns
    -------
    index : int
        Position in ``grid`` of the certified threshold (the last rejected
        hypothesis: the largest coverage), ``-1`` when the first is not
        rejected.
    n_answered, n_errors : ndarray of shape (m,)
        Weight answered and weight of errors among them, per threshold.
    pvalues : ndarray of shape (m,)
    """
    n_errors, n_answered = kept_sums(p, err, w, grid)
    # integer counts: weights are integer-valued, the sums exact below 2**53
    n_errors, n_answered = np.rint(n_errors), np.rint(n_answered)
    pvalues = binomial_pvalue(n_errors, n_answered, alpha)
    accepted = np.flatnonzero(pvalues > delta)
    index = (accepted[0] if accepted.size else grid.shape[0]) - 1
    return int(index), n_answered, n_errors, pvalues


def sequence_start(p, err, w, grid, n_certify, alpha):
    """Where a fixed sequence over ``grid`` should start, from other rows.

    ``p, err, w`` are rows apart from the certification rows (those that
    fitted the calibrator): for each threshold they give a risk estimate
    ``r`` and a coverage, hence an expected number of answers ``n`` among
    ``n_certify`` certification rows. The start is the threshold whose test
    is the most likely to pass, the largest ``(alpha - r) sqrt(n)``
    (the normal margin of the binomial test). Thresholds above it (less
    coverage) are not tested; starting where few rows are answered would
    stop the sequence at once (29 answers, all right, are the fewest that
    certify 10 % at delta = 0.05). Any rule works for validity as long as
    it never reads the certification labels.
    """
    kept_err, kept = kept_sums(p, err, w, grid)
    total = kept[-1] if kept.shape[0] and kept[-1] > 0 else 1.0
    risk = np.divide(kept_err, kept, out=np.ones_like(kept), where=kept > 0)
    margin = (alpha - risk) * np.sqrt(n_certify * kept / total)
    return int(np.argmax(margin))


#: Rows a quantile grid is read from, at most (see :func:`quantile_grid`).
_QUANTILE_ROWS = 20_000


def quantile_grid(q, n_thresholds):
    """Decreasing thresholds at which ``q`` keeps coverages ``1/m .. 1``.

    ``m = n_thresholds`` coverages equally spaced from ``1 / m`` to 1; the
    threshold of coverage ``c`` is the lower ``c``-quantile of ``q`` from
    the top (``inverted_cdf``: a value of ``q``), duplicates dropped (tied
    confidences of a binning calibrator give one threshold per level). From
    more than ``_QUANTILE_ROWS`` rows, every ``k``-th one (and the extremes)
    places the grid: a grid only has to be independent of the rows it is
    tested on, not exact.
    """
    coverage = np.linspace(1.0 / n_thresholds, 1.0, n_thresholds)
    # every k-th row is as good a place for a grid as all of them and saves
    # the partition of a large q; the top and the bottom are kept exactly
    step = max(1, q.shape[0] // _QUANTILE_ROWS)
    if step > 1:
        q = np.concatenate([q[::step], [q.min(), q.max()]])
    t = np.quantile(q, 1.0 - coverage, method="inverted_cdf")
    return np.unique(t)[::-1]
