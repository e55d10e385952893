# SPDX-License-Identifier: MIT
"""Calibration metrics per cell of a partition beta: beta-CE, its floor, the cell table.

:func:`beta_calibration_error` (``CE(h; beta)``, the paper's Def. 2.4 as
estimated in its App. A.1: the binned calibration error within each cell,
weighted by the cells' sizes, with a debiased option),
:func:`beta_calibration_noise_floor` (what perfectly calibrated confidences
would score on the same cells and bins) and
:func:`cell_calibration_table` (one row per cell, with Clopper-Pearson
intervals and a resampled spread). Inputs, weights and bins follow
:mod:`._calibration_error`, whose checks and binned error they reuse.
"""

from numbers import Integral, Real

import numpy as np
from scipy.special import gammaln
from sklearn.utils import check_random_state

from .._compat import Interval, StrOptions, validate_params
from .._docstrings import fill_doc
from .._kernels import _calibration as _k
from .._validation import squeeze_column
from ._calibration_error import (
    _BETA_NORMS,
    _COMMON,
    _NORMS,
    _bin_index_and_edges,
    _binned_error,
    _check_inputs,
    _clopper_pearson,
)

#: Resampled draws held in memory at once by :func:`cell_calibration_table`.
_RESAMPLE_BLOCK = 1 << 21


def _check_cells(cells, n_rows):
    """Return one integer code ``0 .. S-1`` per row and ``S`` (cells)."""
    g = squeeze_column(cells)
    if g.ndim != 1 or g.shape[0] != n_rows:
        raise ValueError(
            f"cells must hold one cell id per row, shape ({n_rows},); got shape "
            f"{g.shape}."
        )
    if g.dtype.kind == "f" and not np.all(np.isfinite(g)):
        raise ValueError(
            f"cells contains {int(np.sum(~np.isfinite(g)))} NaN or infinite "
            "value(s); every row needs a cell id (use -1 for 'outside every "
            "bounded leaf')."
        )
    try:
        _, codes = np.unique(g, return_inverse=True)
    except TypeError as exc:
        raise ValueError(
            "cells must be comparable labels of one type (integers or "
            f"strings); np.unique failed with: {exc}"
        ) from None
    codes = codes.reshape(-1)
    return codes, int(codes.max()) + 1


def _cell_rows(codes, n_cells):
    """The row indices of each cell ``0 .. n_cells - 1``, each in row order.

    One stable sort of the codes for all cells, instead of a mask per cell.
    """
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(n_cells + 1), side="left")
    for s in range(n_cells):
        yield order[bounds[s] : bounds[s + 1]]


@fill_doc
@validate_params(
    {
        **_COMMON,
        "cells": ["array-like"],
        "norm": [_BETA_NORMS],
        "debiased": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def beta_calibration_error(
    y_true,
    y_prob,
    *,
    cells,
    sample_weight=None,
    pos_label=None,
    n_bins=10,
    strategy="uniform",
    norm="l1",
    debiased=False,
):
    """Beta-calibration error CE(h; beta): per-group binned CE, weighted by size.

    Estimates ``CE(h; beta) = E |E[Y | h, beta] - h|`` (paper Def. 2.4) as in
    the paper's App. A.1: split the rows by their cell ``s = beta(q, a)``,
    compute the binned calibration error within each cell, and average the
    cells' errors with weights ``W_s / W`` (their share of the total weight).

    Read more in the :ref:`User Guide <metrics>`.

    Parameters
    ----------
    %(y_true)s
    %(y_prob)s
    cells : array-like of shape (n_samples,)
        The cell of each row: integer ids from a partitioner's ``transform``
        or ``apply`` (``-1``, "outside every bounded leaf", is a cell like
        any other here) or any other labels, e.g. topic names.
    %(sample_weight)s
    %(metric_pos_label)s
    %(cell_binning)s
    norm : {"l1", "l2", "max", "l2_squared"}, default="l1"
        Per-cell error, as in :func:`expected_calibration_error`;
        ``"l2_squared"`` averages the cells' *squared* l2 errors:
        ``sum_{s,b} (W_sb/W) gap_sb**2``.
    debiased : bool, default=False
        Only with ``norm="l2_squared"``: subtract from every bin's squared gap
        the part that sampling noise adds to it, ``acc_sb (1 - acc_sb) /
        (W_sb - 1)`` (Kumar et al. 2019, Sec. 5). The result is then an
        unbiased estimate of the squared binned beta-CE of the population
        (for fixed confidences and bins) and can be slightly negative when the
        true error is below the noise. Bins with ``W_sb <= 1`` cannot be
        corrected and keep their plug-in term.

    Returns
    -------
    beta_ce : float
        In ``[0, 1]`` (with ``debiased=True`` in ``[-1, 1]``); lower is
        better. With a single cell it equals
        :func:`expected_calibration_error` exactly.

    See Also
    --------
    expected_calibration_error : The average-case error (one cell).
    beta_calibration_noise_floor : What a perfectly calibrated confidence
        would score on the same cells and bins.
    make_beta_calibration_error_scorer : A scorer with a fixed partition.

    Notes
    -----
    Average-case calibration can hide group-wise miscalibration: in the
    paper's Example 2.1 every confidence is 0.8 and the average accuracy is
    0.8 (ECE 0), while the two cells have accuracy 0.65 and 0.95 (beta-CE
    0.15). Cells with zero total weight are ignored.

    The plug-in estimate is biased upward by sampling noise, the more so the
    fewer rows per (cell, bin): compare it with
    :func:`beta_calibration_noise_floor`, or use ``norm="l2_squared",
    debiased=True``, whose expectation is the population value. Why the
    correction is exact: in a bin of ``n`` rows with accuracy ``mu``, ``E
    (acc - conf)**2 = (mu - conf)**2 + mu (1 - mu) / n`` and ``E acc (1 -
    acc) / (n - 1) = mu (1 - mu) / n``.

    References
    ----------
    .. [1] "beta-calibration of Language Model Confidence Scores for
       Generative QA", Def. 2.4 and App. A.1.
    .. [2] A. Kumar, P. Liang and T. Ma, "Verified Uncertainty Calibration",
       NeurIPS 2019, Sec. 5 (the debiased estimator).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import (
    ...     beta_calibration_error, expected_calibration_error)
    >>> p = np.full(8, 0.8)                  # paper's Example 2.1, Table 1:
    >>> y = np.tile([1, 0], 4)               # each QA pair as a correct and an
    >>> w = np.array([.6, .4, .7, .3, .9, .1, 1., 0.])  # incorrect weighted row
    >>> cells = np.repeat([1, 2], 4)
    >>> round(expected_calibration_error(y, p, sample_weight=w), 4)
    0.0
    >>> round(beta_calibration_error(y, p, cells=cells, sample_weight=w), 4)
    0.15
    """
    if debiased and norm != "l2_squared":
        raise ValueError(
            "debiased=True is only defined for norm='l2_squared': Kumar et al.'s "
            "correction removes the noise from squared gaps. Pass "
            f"norm='l2_squared' (got norm={norm!r})."
        )
    y, p, w, total = _check_inputs(
        y_true, y_prob, sample_weight, n_bins, pos_label=pos_label
    )
    codes, n_cells = _check_cells(cells, p.shape[0])
    if norm == "l2_squared":
        weight, sum_y, sum_p = _cell_bin_sums(y, p, w, codes, n_cells, n_bins, strategy)
        gap2, noise = _squared_gaps(weight, sum_y, sum_p)
        return float(np.sum(gap2 - noise if debiased else gap2) / total)
    if n_cells == 1:  # the ECE itself, bit for bit
        return _binned_error(y, p, w, total, n_bins, strategy, norm)
    if strategy == "uniform" and n_cells * n_bins > 4 * p.shape[0] + 4096:
        # sparse in (cell, bin): never allocate the mostly empty S x M grid
        pair_cell, gap, weight = _k.occupied_cell_sums(p, y, w, codes, n_bins)
        errors, cell_weight = _k.occupied_cell_errors(
            pair_cell, gap, weight, n_cells, norm
        )
        share = cell_weight / total
        keep = share > 0
        return float(np.sum(share[keep] * errors[keep]))
    if strategy == "uniform":
        gap, weight = _k.uniform_cell_sums(p, y, w, codes, n_cells, n_bins)
        errors = _k.cell_calibration_errors(gap, weight, norm)
        share = weight.sum(axis=1) / total
        keep = share > 0  # a cell of zero weight is dropped, like its rows
        return float(np.sum(share[keep] * errors[keep]))
    # quantile edges differ per cell: bin each cell on its own
    result = 0.0
    for rows in _cell_rows(codes, n_cells):
        w_s = None if w is None else w[rows]
        total_s = float(rows.shape[0]) if w is None else float(np.sum(w_s))
        if total_s <= 0:
            continue
        err = _binned_error(y[rows], p[rows], w_s, total_s, n_bins, strategy, norm)
        result += total_s / total * err
    return float(result)


def _resampled_cell_errors(y, p, w, bins, n_bins, norm, n_resamples, rng):
    """Binned CE of one cell under bootstrap and under perfect calibration.

    Returns two arrays of ``n_resamples`` errors: the cell's rows resampled
    with replacement (multinomial frequency weights, so sample weights
    compose), and the cell's own confidences with labels redrawn as
    ``Bernoulli(p)`` (what a perfectly calibrated cell of this size and
    these confidences would show). Both go through
    :func:`~sklearn_betacal._kernels._calibration.cell_calibration_errors`
    with the replicates as rows.
    """
    n = p.shape[0]
    base_w = np.ones(n) if w is None else w
    onehot = np.zeros((n, n_bins))
    onehot[np.arange(n), bins] = 1.0
    signed = onehot * (y - p)[:, None]
    bin_weight = base_w @ onehot
    boot, null = [], []
    # replicates in blocks of about 2e6 draws: memory stays flat in n
    block = max(1, _RESAMPLE_BLOCK // n)
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        freq = rng.multinomial(n, np.full(n, 1.0 / n), size=size) * base_w
        boot.append(_k.cell_calibration_errors(freq @ signed, freq @ onehot, norm))
        y_null = rng.uniform(size=(size, n)) < p
        null.append(
            _k.cell_calibration_errors(
                (base_w * (y_null - p)) @ onehot, np.tile(bin_weight, (size, 1)), norm
            )
        )
    boot, null = np.concatenate(boot), np.concatenate(null)
    return boot, null


@fill_doc
@validate_params(
    {
        **_COMMON,
        "cells": ["array-like"],
        "norm": [_NORMS],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "n_resamples": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def cell_calibration_table(
    y_true,
    y_prob,
    *,
    cells,
    sample_weight=None,
    pos_label=None,
    n_bins=10,
    strategy="uniform",
    norm="l1",
    alpha=0.05,
    n_resamples=200,
    random_state=None,
):
    """Per-cell calibration table: the terms of CE(h; beta), with intervals.

    One row per cell (group) with its size, accuracy, mean confidence, the
    exact interval of its accuracy, and its binned calibration error -- the
    per-cell term that :func:`beta_calibration_error` averages (paper
    Def. 2.4, App. A.1) -- with a bootstrap interval and the noise level of
    a perfectly calibrated cell of the same size.

    Read more in the :ref:`User Guide <metrics>`.

    Parameters
    ----------
    %(y_true)s
    %(y_prob)s
    cells : array-like of shape (n_samples,)
        The cell of each row (integer ids from a partitioner, ``-1``
        included, or names such as topics).
    %(sample_weight)s
    %(metric_pos_label)s
    %(cell_binning)s
    norm : {"l1", "l2", "max"}, default="l1"
        Per-cell error, as in :func:`expected_calibration_error`.
    alpha : float, default=0.05
        Miscoverage of the intervals (``1 - alpha`` two-sided).
    n_resamples : int, default=200
        Resamples for the bootstrap interval and the noise level; 0 skips
        both (their columns are NaN).
    random_state : int, RandomState instance or None, default=None
        Seeds the resamples; an int gives identical tables on every call.

    Returns
    -------
    table : pandas.DataFrame
        Indexed by ``cell`` (the sorted distinct values of ``cells``), with
        columns

        - ``count`` (rows with positive weight), ``weight`` (``W_s``) and
          ``share`` (``W_s / W``);
        - ``mean_confidence``, ``accuracy`` and ``gap = accuracy -
          mean_confidence`` (negative: overconfident on average);
        - ``ci_lower``, ``ci_upper``: exact Clopper-Pearson interval of the
          cell's accuracy, as in :func:`reliability_table`;
        - ``calibration_error``: the cell's binned CE, so that
          ``sum(share * calibration_error)`` is
          :func:`beta_calibration_error`;
        - ``ce_lower``, ``ce_upper``: bootstrap percentile interval of the
          binned CE (rows resampled within the cell);
        - ``noise_level``: the ``1 - alpha`` quantile of the binned CE of a
          perfectly calibrated cell with the same confidences (labels drawn
          as ``Bernoulli(h)``). A cell whose error is below it is
          indistinguishable from a calibrated one at this size.

    See Also
    --------
    beta_calibration_error : The table's errors averaged by share.
    reliability_table : The same numbers per confidence bin.

    Notes
    -----
    The binned CE is biased upwards in small cells (sampling noise never
    cancels inside ``|.|``), and the bootstrap interval inherits that bias:
    it shows how much the estimate moves, not where the true error lies.
    ``noise_level`` is the honest yardstick: it is the error that sampling
    noise alone produces (the consistency resampling of Broecker & Smith).

    References
    ----------
    .. [1] "beta-calibration of Language Model Confidence Scores for
       Generative QA", Def. 2.4 and App. A.1.
    .. [2] J. Broecker and L. A. Smith, "Increasing the reliability of
       reliability diagrams", Weather and Forecasting 22 (2007).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import cell_calibration_table
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> cells = np.repeat(["calibrated", "overconfident"], 1000)
    >>> y = rng.uniform(size=2000) < np.where(cells == "calibrated", p, p / 2)
    >>> table = cell_calibration_table(y, p, cells=cells, random_state=0)
    >>> table["gap"].round(3).tolist()  # accuracy - mean confidence
    [0.001, -0.23]
    >>> table["calibration_error"].round(3).tolist()
    [0.037, 0.23]
    >>> table["noise_level"].round(3).tolist()  # a calibrated cell's noise
    [0.045, 0.043]
    """
    import pandas as pd

    y, p, w, total = _check_inputs(
        y_true, y_prob, sample_weight, n_bins, pos_label=pos_label
    )
    codes, n_cells = _check_cells(cells, p.shape[0])
    labels = np.unique(np.asarray(cells).reshape(p.shape[0]))
    rng = check_random_state(random_state)
    columns = {
        name: np.full(n_cells, np.nan)
        for name in (
            "weight",
            "mean_confidence",
            "accuracy",
            "calibration_error",
            "ce_lower",
            "ce_upper",
            "noise_level",
        )
    }
    count = np.zeros(n_cells, dtype=np.int64)
    sum_y = np.zeros(n_cells)
    for s, rows in enumerate(_cell_rows(codes, n_cells)):
        w_s = None if w is None else w[rows]
        y_s, p_s = y[rows], p[rows]
        if w_s is not None:
            keep = w_s > 0  # zero weight drops the row, resampling included
            y_s, p_s, w_s = y_s[keep], p_s[keep], w_s[keep]
        count[s] = p_s.shape[0]
        if count[s] == 0:
            continue
        weight = float(p_s.shape[0]) if w_s is None else float(np.sum(w_s))
        ww = np.ones_like(p_s) if w_s is None else w_s
        columns["weight"][s] = weight
        columns["mean_confidence"][s] = float(ww @ p_s) / weight
        sum_y[s] = float(ww @ y_s)
        columns["accuracy"][s] = sum_y[s] / weight
        columns["calibration_error"][s] = _binned_error(
            y_s, p_s, w_s, weight, n_bins, strategy, norm
        )
        if n_resamples:
            idx, _, _ = _bin_index_and_edges(p_s, w_s, n_bins, strategy)
            boot, null = _resampled_cell_errors(
                y_s.astype(np.float64), p_s, w_s, idx, n_bins, norm, n_resamples, rng
            )
            columns["ce_lower"][s], columns["ce_upper"][s] = np.quantile(
                boot, [alpha / 2.0, 1.0 - alpha / 2.0]
            )
            columns["noise_level"][s] = np.quantile(null, 1.0 - alpha)
    weight = np.nan_to_num(columns["weight"])
    ci_lower, ci_upper = _clopper_pearson(sum_y, weight, alpha)
    table = pd.DataFrame(
        {
            "count": count,
            "weight": weight,
            "share": weight / total,
            "mean_confidence": columns["mean_confidence"],
            "accuracy": columns["accuracy"],
            "gap": columns["accuracy"] - columns["mean_confidence"],
            "ci_lower": ci_lower,
            "ci_upper": ci_upper,
            "calibration_error": columns["calibration_error"],
            "ce_lower": columns["ce_lower"],
            "ce_upper": columns["ce_upper"],
            "noise_level": columns["noise_level"],
        },
        index=pd.Index(labels, name="cell"),
    )
    return table


def _cell_bin_sums(y, p, w, codes, n_cells, n_bins, strategy):
    """Per-(cell, bin) weight, ``sum w y`` and ``sum w p``, flat.

    Dense ``(S * M,)`` when that is small; otherwise only the occupied pairs
    (every caller sums over pairs, and an empty pair adds nothing), so that
    1e5 cells x 1e4 bins never allocate a 7.45 GiB grid.
    """
    if strategy == "uniform":
        idx = _k.uniform_bin_index(p, n_bins)
    else:  # quantile edges are computed per cell, as in beta_calibration_error
        idx = np.empty(p.shape[0], dtype=np.intp)
        for rows in _cell_rows(codes, n_cells):
            w_s = None if w is None else w[rows]
            if w_s is not None and not np.sum(w_s) > 0:
                idx[rows] = 0
                continue
            idx[rows] = _k.quantile_bin_index(
                p[rows], _k.quantile_edges(p[rows], w_s, n_bins)
            )
    combined = codes.astype(np.int64) * n_bins + idx
    size = n_cells * n_bins
    if size > 4 * p.shape[0] + 4096:
        pairs, combined = np.unique(combined, return_inverse=True)
        combined, size = combined.reshape(-1), pairs.shape[0]
    _, weight, sum_p, sum_y = _k.bin_sums(combined, size, p, y, w)
    return weight, sum_y, sum_p


def _binomial_mad(n, mu):
    """``E|X - n mu|`` for ``X ~ Binomial(n, mu)``, elementwise.

    De Moivre's closed form ``2 k C(n, k) mu^k (1 - mu)^(n - k + 1)`` with
    ``k = floor(n mu) + 1`` (Diaconis and Zabell, "Closed form summation for
    classical distributions", Statist. Sci. 1991); through ``gammaln`` it
    also takes the non-integer ``n`` of weighted bins. 0 where ``mu`` is 0 or
    1 or ``n`` is 0.

    Beyond ``n = 2**28`` the ``gammaln`` terms (about ``n log n``) cancel
    catastrophically (NaN for 1e308-scale weights, a relative error of 3e-4
    at ``2**40``), so there the limits are used: the normal one,
    ``sqrt(2 n mu (1 - mu) / pi)``, when ``n mu (1 - mu) > 2**20`` (relative
    error below 1e-6), else the Poisson one of the rarer outcome, ``2 e^-l
    l^(j+1) / j!`` with ``l = n min(mu, 1 - mu)`` and ``j = floor(l)``
    (relative error about ``min(mu, 1 - mu) / 2 < 2**-9``).
    """
    inside = (mu > 0) & (mu < 1) & (n > 0)
    out = np.zeros_like(n, dtype=np.float64)
    large = inside & (n > 2.0**28)
    if large.any():
        nl, ml = n[large], mu[large]
        rare = np.minimum(ml, 1.0 - ml)
        var = nl * ml * (1.0 - ml)
        lam = nl * rare
        j = np.floor(lam)
        with np.errstate(over="ignore", invalid="ignore"):
            poisson = 2.0 * np.exp(-lam + (j + 1.0) * np.log(lam) - gammaln(j + 1.0))
        out[large] = np.where(var > 2.0**20, np.sqrt(2.0 * var / np.pi), poisson)
        inside &= ~large
    n, mu = n[inside], mu[inside]
    k = np.minimum(np.floor(n * mu) + 1, n)
    log_mad = (
        np.log(2 * k)
        + gammaln(n + 1)
        - gammaln(k + 1)
        - gammaln(n - k + 1)
        + k * np.log(mu)
        + (n - k + 1) * np.log1p(-mu)
    )
    out[inside] = np.exp(log_mad)
    return out


def _squared_gaps(weight, sum_y, sum_p):
    """Per bin: ``W_b gap_b**2`` and its noise part ``W_b acc(1-acc)/(W_b-1)``.

    ``E[acc_b (1 - acc_b)] / (W_b - 1) = mu_b (1 - mu_b) / W_b = Var(acc_b)``
    for ``W_b`` rows of accuracy ``mu_b`` (Kumar et al. 2019, Sec. 5), so the
    difference of the two is unbiased for ``W_b (mu_b - conf_b)**2``. Bins
    with ``W_b <= 1`` have no noise estimate (0).
    """
    ok = weight > 0
    acc = np.divide(sum_y, weight, out=np.zeros_like(weight), where=ok)
    conf = np.divide(sum_p, weight, out=np.zeros_like(weight), where=ok)
    gap2 = weight * (acc - conf) ** 2
    big = weight > 1
    noise = np.zeros_like(weight)
    noise[big] = weight[big] * acc[big] * (1 - acc[big]) / (weight[big] - 1)
    return gap2, noise


@fill_doc
@validate_params(
    {
        **_COMMON,
        "cells": ["array-like", None],
        "norm": [StrOptions({"l1", "l2", "l2_squared"})],
    },
    prefer_skip_nested_validation=True,
)
def beta_calibration_noise_floor(
    y_true,
    y_prob,
    *,
    cells=None,
    sample_weight=None,
    pos_label=None,
    n_bins=10,
    strategy="uniform",
    norm="l1",
):
    """The beta-CE that sampling noise alone produces on these cells and bins.

    The expected plug-in :func:`beta_calibration_error` of these very
    confidences if they were *perfectly calibrated* (labels drawn as
    ``Bernoulli(confidence)``), on the same cells and bins: a beta-CE at or
    below the floor is indistinguishable from perfect calibration, and
    differences between two calibrators that are smaller than the floor are
    not evidence that one is better calibrated.
    Report it beside every binned beta-CE (Kumar et al. 2019 show that the
    plug-in estimate is dominated by this term when bins are small).

    Read more in the :ref:`User Guide <metrics>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Correctness labels, 0/1 or bool; validated with ``y_prob`` but not
        used by the floor.
    y_prob : array-like of shape (n_samples,)
        Confidence that the answer is correct, in ``[0, 1]``: it sets the bins
        and the accuracy a calibrated confidence would have.
    cells : array-like of shape (n_samples,), default=None
        Cell id per row, as in :func:`beta_calibration_error`; ``None`` is a
        single cell (the floor of :func:`expected_calibration_error`).
    %(sample_weight)s
    %(metric_pos_label)s
    %(cell_binning)s
    norm : {"l1", "l2", "l2_squared"}, default="l1"
        The norm of the beta-CE this floor goes with. With ``conf_sb`` the
        mean confidence of bin ``(s, b)`` and ``X_sb ~ Binomial(W_sb,
        conf_sb)`` (the bin's correct answers under perfect calibration):
        ``"l1"``: ``sum_{s,b} E|X_sb - W_sb conf_sb| / W``, by de Moivre's
        closed form for the binomial mean absolute deviation;
        ``"l2_squared"``: ``sum_{s,b} (W_sb/W) Var(X_sb / W_sb) = sum_{s,b}
        conf_sb (1 - conf_sb) / W``; ``"l2"``: its square root. Confidences
        that vary inside a bin make the true floor slightly smaller (the
        binomial is the most spread-out sum of Bernoullis of that mean).

    Returns
    -------
    floor : float
        Non-negative; in the units of the matching beta-CE.

    See Also
    --------
    beta_calibration_error : The error this floor is read against.
    cell_calibration_table : Per cell, a simulated ``1 - alpha`` quantile of
        the same null (``noise_level``) beside each cell's error.

    References
    ----------
    .. [1] A. Kumar, P. Liang and T. Ma, "Verified Uncertainty Calibration",
       NeurIPS 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import (
    ...     beta_calibration_error, beta_calibration_noise_floor)
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=300)
    >>> y = rng.uniform(size=300) < p          # perfectly calibrated
    >>> g = rng.integers(0, 10, size=300)      # 10 cells of ~30 rows
    >>> round(beta_calibration_error(y, p, cells=g), 3)   # looks bad ...
    0.192
    >>> round(beta_calibration_noise_floor(y, p, cells=g), 3)  # ... is noise
    0.178
    """
    y, p, w, total = _check_inputs(
        y_true, y_prob, sample_weight, n_bins, pos_label=pos_label
    )
    if cells is None:
        codes, n_cells = np.zeros(p.shape[0], dtype=np.intp), 1
    else:
        codes, n_cells = _check_cells(cells, p.shape[0])
    weight, _, sum_p = _cell_bin_sums(y, p, w, codes, n_cells, n_bins, strategy)
    ok = weight > 0
    conf = np.divide(sum_p, weight, out=np.zeros_like(weight), where=ok)
    if norm == "l1":
        return float(np.sum(_binomial_mad(weight, conf)) / total)
    floor = float(np.sum(conf * (1 - conf)) / total)  # sum (W_sb/W) Var(acc_sb)
    return floor if norm == "l2_squared" else float(np.sqrt(floor))
