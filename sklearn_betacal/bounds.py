# SPDX-License-Identifier: MIT
"""Distribution-free calibration bounds and the bin sizes that achieve them.

:func:`beta_binning_epsilon` is the epsilon of the paper's Thm 3.1
(beta-binning, ``b`` points per bin, ``N`` calibration points in total):

.. math:: \\epsilon = \\sqrt{\\frac{\\log(2N / (b\\alpha))}{2(b - 1)}} + \\nu

and :func:`umd_epsilon` the epsilon of eq. (6) (plain UMD with ``B`` bins,
Thm A.1). Both say: with probability at least ``1 - alpha`` over the
calibration data, every bin's calibrated value is within ``epsilon`` of the
true conditional mean of ``Y`` given that bin (and cell). ``nu`` is the
misspecification of a proxy label (Def. 3.2), 0 for true labels.

The inverses :func:`points_per_bin_for_epsilon` and
:func:`n_bins_for_epsilon` pick the bin size for a target epsilon, as the
paper does in Sec. 5 ("use root finding with the epsilon expression in
Theorem 3.1 to choose b").

**Which alpha?** The default ``alpha=0.1`` (a 90 % guarantee, the level of
Gupta & Ramdas 2021) is a convention, not a paper value. The paper's
Figure 2 reading (``nu = 0``, ``epsilon = 0.1``: ``b ~ 300`` for
``N = 1000``, ``~400`` for ``N = 5000``, ``~500`` for ``N = 20000``) is
reproduced by ``alpha = 0.01``, which gives ``b = 323, 394, 456``
(least-squares fit of alpha to the three readings: 0.0096). With
``alpha = 0.1`` the same targets give ``b = 226, 293, 353``.
"""

import math
from numbers import Integral, Real

from scipy.optimize import brentq

from ._compat import Interval, validate_params
from ._docstrings import fill_doc

__all__ = [
    "beta_binning_epsilon",
    "n_bins_for_epsilon",
    "points_per_bin_for_epsilon",
    "umd_epsilon",
]

_POSITIVE_INT = [Interval(Integral, 1, None, closed="left")]
_AT_LEAST_2 = [Interval(Integral, 2, None, closed="left")]
_EPSILON = [Interval(Real, 0, None, closed="neither")]
#: ``alpha`` and ``nu``, shared by every bound
_LEVEL = {
    "alpha": [Interval(Real, 0, 1, closed="neither")],
    "nu": [Interval(Real, 0, None, closed="left")],
}


def _beta_eps(n_samples, b, alpha, nu):
    # Thm 3.1, with b real-valued (b > 1) so that SciPy can root-find in b.
    return math.sqrt(math.log(2.0 * n_samples / (b * alpha)) / (2.0 * (b - 1.0))) + nu


def _umd_eps(n_samples, n_bins, alpha, nu):
    # eq. (6), Thm A.1
    return (
        math.sqrt(math.log(2.0 * n_bins / alpha) / (2.0 * (n_samples // n_bins - 1)))
        + nu
    )


@fill_doc
@validate_params(
    {"n_samples": _AT_LEAST_2, "points_per_bin": _AT_LEAST_2, **_LEVEL},
    prefer_skip_nested_validation=True,
)
def beta_binning_epsilon(n_samples, points_per_bin, *, alpha=0.1, nu=0.0):
    """Epsilon of the beta-binning guarantee (paper Thm 3.1).

    ``epsilon = sqrt(log(2N / (b alpha)) / (2 (b - 1))) + nu``.

    Read more in the :ref:`User Guide <bounds>`.

    Parameters
    ----------
    n_samples : int
        ``N``, the number of calibration points (over all cells).
    points_per_bin : int
        ``b >= 2``, the minimum number of points per bin (Alg. 1); every
        cell must hold at least ``b`` points, so ``b <= N``.
    %(bound_level)s

    Returns
    -------
    epsilon : float
        The calibration error bound; smaller is stronger.

    See Also
    --------
    points_per_bin_for_epsilon : The inverse, ``b`` for a target epsilon.
    umd_epsilon : The bound for plain UMD with a fixed number of bins.

    Notes
    -----
    The bound assumes distinct confidences (UMD breaks ties randomly) and
    ``n_s >= b`` in every cell. It decreases in ``b`` and grows only
    logarithmically in ``N``.

    References
    ----------
    .. [1] "beta-calibration of Language Model Confidence Scores for
       Generative QA", Thm 3.1 and Figure 2.

    Examples
    --------
    >>> from sklearn_betacal.bounds import beta_binning_epsilon
    >>> round(beta_binning_epsilon(1000, 300, alpha=0.01), 4)
    0.1043
    """
    if points_per_bin > n_samples:
        raise ValueError(
            f"points_per_bin={points_per_bin} exceeds n_samples={n_samples}; "
            "a bin cannot hold more points than there are."
        )
    return _beta_eps(n_samples, points_per_bin, alpha, nu)


@fill_doc
@validate_params(
    {"n_samples": _AT_LEAST_2, "n_bins": _POSITIVE_INT, **_LEVEL},
    prefer_skip_nested_validation=True,
)
def umd_epsilon(n_samples, n_bins, *, alpha=0.1, nu=0.0):
    """Epsilon of the UMD histogram-binning guarantee (paper eq. (6), Thm A.1).

    ``epsilon = sqrt(log(2B / alpha) / (2 (floor(N / B) - 1))) + nu``.

    Read more in the :ref:`User Guide <bounds>`.

    Parameters
    ----------
    n_samples : int
        ``N``, the number of calibration points.
    n_bins : int
        ``B``, the number of UMD bins; Thm A.1 needs ``N >= 2B``.
    %(bound_level)s

    Returns
    -------
    epsilon : float
        The calibration error bound.

    See Also
    --------
    n_bins_for_epsilon : The inverse, the largest ``B`` for a target epsilon.
    beta_binning_epsilon : The bound for beta-binning.

    References
    ----------
    .. [1] C. Gupta and A. Ramdas, "Distribution-free calibration guarantees
       for histogram binning without sample splitting", ICML 2021, Thm 3.
    .. [2] "beta-calibration of Language Model Confidence Scores for
       Generative QA", App. A.3, eq. (6).

    Examples
    --------
    >>> from sklearn_betacal.bounds import umd_epsilon
    >>> round(umd_epsilon(1000, 10), 4)
    0.1636
    """
    if 2 * n_bins > n_samples:
        raise ValueError(
            f"umd_epsilon needs n_samples >= 2 * n_bins (Thm A.1); got "
            f"n_samples={n_samples}, n_bins={n_bins}. Use at most "
            f"{n_samples // 2} bins."
        )
    return _umd_eps(n_samples, n_bins, alpha, nu)


@fill_doc
@validate_params(
    {"epsilon": _EPSILON, "n_samples": _AT_LEAST_2, **_LEVEL},
    prefer_skip_nested_validation=True,
)
def points_per_bin_for_epsilon(epsilon, n_samples, *, alpha=0.1, nu=0.0):
    """Smallest points-per-bin ``b`` whose Thm 3.1 bound reaches ``epsilon``.

    Returns the smallest integer ``b`` in ``[2, N]`` with
    ``beta_binning_epsilon(N, b, alpha=alpha, nu=nu) <= epsilon``.

    Read more in the :ref:`User Guide <bounds>`.

    Parameters
    ----------
    %(bound_target)s
    %(bound_level)s

    Returns
    -------
    points_per_bin : int
        The smallest sufficient ``b``.

    Raises
    ------
    ValueError
        If ``epsilon <= nu`` (no ``b`` can reach it) or if even ``b = N``
        (one bin per cell, all data in it) gives a larger bound.

    See Also
    --------
    beta_binning_epsilon : The bound itself.
    n_bins_for_epsilon : The analogue for plain UMD.

    Notes
    -----
    The bound is strictly decreasing in ``b`` on ``[2, N]`` (its log term
    stays above ``log(2/alpha) > 0``), so the continuous root ``b*`` of
    ``epsilon(b) = target`` is found with :func:`scipy.optimize.brentq` and
    the answer is ``ceil(b*)``, then checked against the integer bound
    itself (and moved by one if rounding put it on the wrong side).

    References
    ----------
    .. [1] "beta-calibration of Language Model Confidence Scores for
       Generative QA", Thm 3.1, Figure 2 and Sec. 5.

    Examples
    --------
    >>> from sklearn_betacal.bounds import points_per_bin_for_epsilon
    >>> points_per_bin_for_epsilon(0.1, 1000, alpha=0.01)  # Figure 2: ~300
    323
    >>> points_per_bin_for_epsilon(0.1, 1000)
    226
    """
    if epsilon <= nu:
        raise ValueError(
            f"epsilon={epsilon} must exceed the misspecification nu={nu}: the "
            "bound is sqrt(...) + nu > nu for every points_per_bin."
        )
    best = _beta_eps(n_samples, n_samples, alpha, nu)
    if best > epsilon:
        raise ValueError(
            f"No points_per_bin <= n_samples={n_samples} reaches epsilon={epsilon} "
            f"(alpha={alpha}, nu={nu}); the best, b = n_samples, gives "
            f"{best:.4g}. Collect more data, accept a larger epsilon or alpha, "
            "or reduce nu."
        )
    if _beta_eps(n_samples, 2, alpha, nu) <= epsilon:
        return 2
    root = brentq(lambda b: _beta_eps(n_samples, b, alpha, nu) - epsilon, 2, n_samples)
    b = min(max(math.ceil(root), 2), n_samples)
    while b > 2 and _beta_eps(n_samples, b - 1, alpha, nu) <= epsilon:
        b -= 1
    while _beta_eps(n_samples, b, alpha, nu) > epsilon:
        b += 1
    return int(b)


@fill_doc
@validate_params(
    {"epsilon": _EPSILON, "n_samples": _AT_LEAST_2, **_LEVEL},
    prefer_skip_nested_validation=True,
)
def n_bins_for_epsilon(epsilon, n_samples, *, alpha=0.1, nu=0.0):
    """Largest number of UMD bins ``B`` whose eq. (6) bound reaches ``epsilon``.

    Returns the largest integer ``B`` with ``2B <= N`` and
    ``umd_epsilon(N, B, alpha=alpha, nu=nu) <= epsilon`` (more bins give a
    sharper calibrator, so the largest admissible ``B`` is the useful one).

    Read more in the :ref:`User Guide <bounds>`.

    Parameters
    ----------
    %(bound_target)s
    %(bound_level)s

    Returns
    -------
    n_bins : int
        The largest sufficient ``B``.

    Raises
    ------
    ValueError
        If ``epsilon <= nu`` or if even ``B = 1`` gives a larger bound.

    See Also
    --------
    umd_epsilon : The bound itself.
    points_per_bin_for_epsilon : The analogue for beta-binning.

    Notes
    -----
    The bound is non-decreasing in ``B`` (``log(2B/alpha)`` grows and
    ``floor(N/B)`` shrinks), so an integer bisection gives the exact answer.

    Examples
    --------
    >>> from sklearn_betacal.bounds import n_bins_for_epsilon
    >>> n_bins_for_epsilon(0.1, 5000)
    17
    """
    if epsilon <= nu:
        raise ValueError(
            f"epsilon={epsilon} must exceed the misspecification nu={nu}: the "
            "bound is sqrt(...) + nu > nu for every n_bins."
        )
    if _umd_eps(n_samples, 1, alpha, nu) > epsilon:
        raise ValueError(
            f"Even one bin does not reach epsilon={epsilon} with "
            f"n_samples={n_samples} (alpha={alpha}, nu={nu}); its bound is "
            f"{_umd_eps(n_samples, 1, alpha, nu):.4g}. Collect more data or "
            "accept a larger epsilon."
        )
    lo, hi = 1, n_samples // 2  # invariant: eps(lo) <= epsilon
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _umd_eps(n_samples, mid, alpha, nu) <= epsilon:
            lo = mid
        else:
            hi = mid - 1
    return int(lo)
