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
    from scipy.stats import binom  # lazily: the metrics import this module

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
    from scipy.stats import beta

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


def betting_pvalue(x, m):
    """P-value of ``H0: E[x] >= m`` for i.i.d. ``x`` in ``[0, 1]``, by betting.

    The capital ``K_i = prod_{k <= i} (1 + lam_k (m - x_k))`` of a gambler
    who bets that ``x`` falls below ``m`` is a nonnegative supermartingale
    under ``H0`` whatever the bets ``lam_k``, as long as each is chosen
    before ``x_k`` is seen and lies in ``[0, 1 / (1 - m))`` (the capital
    stays positive); Ville's inequality
    makes ``1 / max_i K_i`` a valid p-value (Waudby-Smith & Ramdas 2024,
    "Estimating means of bounded random variables by betting", Sec. 4-5).
    The bets are their aGRAPA rule, ``(m - mean) / (var + (m - mean)^2)``
    from the values before ``k`` (a prior of one value at ``m`` and a
    variance of 1/4), clipped to ``[0, 0.75 / (1 - m)]``. Much tighter than
    Hoeffding or empirical Bernstein bounds at the sample sizes of a log.
    """
    n = x.shape[0]
    if n == 0 or m <= 0 or m >= 1:
        return 1.0
    k = np.arange(1, n + 1, dtype=np.float64)
    # running mean and variance of the values before each one, with a prior
    s1 = np.concatenate([[m], m + np.cumsum(x)[:-1]])
    s2 = np.concatenate([[0.25 + m * m], 0.25 + m * m + np.cumsum(x * x)[:-1]])
    mean = s1 / k
    var = np.maximum(s2 / k - mean * mean, 1e-12)
    gap = m - mean
    lam = np.clip(gap / (var + gap * gap), 0.0, 0.75 / (1.0 - m))
    log_capital = np.cumsum(np.log1p(lam * (m - x)))
    return float(min(1.0, np.exp(-log_capital.max())))


def grouped_counts(p, err, w, group, n_groups, t):
    """Per group: weight answered at ``p >= t`` and weight of errors among it."""
    kept = p >= t
    ww = np.ones(p.shape[0]) if w is None else w
    answered = np.bincount(group[kept], weights=ww[kept], minlength=n_groups)
    wrong = np.bincount(group[kept], weights=(ww * err)[kept], minlength=n_groups)
    return answered, wrong


def grouped_sequence_threshold(p, err, w, group, grid, alpha, delta):
    """:func:`fixed_sequence_threshold` for rows that come in groups.

    The answers to one question are not independent (a hard question is
    hard for every model), so the binomial test, which counts rows, would
    overstate the evidence. The groups are i.i.d.: per group ``g`` the
    statistic ``d_g = errors_g - alpha * answered_g`` has mean ``<= 0``
    exactly when the error rate of a fresh answered row, ``E[errors_g] /
    E[answered_g]``, is ``<= alpha``; a test of its mean
    rejects ``R(t) > alpha``: ``d_g`` lies in ``[-alpha M, (1 - alpha) M]``
    (``M`` the largest group's weight), so ``x_g = d_g / M + alpha`` lies in
    ``[0, 1]`` and ``H0`` is ``E[x] >= alpha``, tested by betting
    (:func:`betting_pvalue`, the groups in the order of their codes, fixed
    before any label is read). Tested in the order of ``grid``, stopping at
    the first failure.

    Returns ``(index, n_answered, n_errors)`` at the certified threshold
    (``-1, 0, 0`` when none), with ``group`` the group codes ``0 ..
    n_groups - 1``.
    """
    n_groups = int(group.max()) + 1 if group.shape[0] else 0
    ww = np.ones(p.shape[0]) if w is None else w
    span = (
        float(np.bincount(group, weights=ww, minlength=n_groups).max())
        if n_groups
        else 1.0
    )
    index, found = -1, (0.0, 0.0)
    for j, t in enumerate(grid):
        answered, wrong = grouped_counts(p, err, w, group, n_groups, t)
        x = (wrong - alpha * answered) / span + alpha
        if betting_pvalue(x, alpha) > delta:
            break
        index, found = j, (float(answered.sum()), float(wrong.sum()))
    return index, found[0], found[1]


def grouped_risk_bound(p, err, w, group, t, delta, tol=1e-6):
    """Smallest ``alpha`` that :func:`grouped_sequence_threshold`'s test
    certifies at the single threshold ``t`` (bisection; 1 if none)."""
    n_groups = int(group.max()) + 1 if group.shape[0] else 0
    ww = np.ones(p.shape[0]) if w is None else w
    span = (
        float(np.bincount(group, weights=ww, minlength=n_groups).max())
        if n_groups
        else 1.0
    )
    answered, wrong = grouped_counts(p, err, w, group, n_groups, t)

    def ok(a):
        return betting_pvalue((wrong - a * answered) / span + a, a) <= delta

    hi = 1.0 - tol
    if not ok(hi):
        return 1.0
    lo = 0.0
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi
