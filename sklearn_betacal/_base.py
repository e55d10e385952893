# SPDX-License-Identifier: MIT
"""Shared estimator glue for the binary "is this answer correct" calibrators.

Used by UMDBinner, ScalingBinningCalibrator, PlattScaler and
BetaBinningCalibrator (hence ScalingBetaBinningCalibrator); also the bin-count
rule that every binning calibrator shares (:func:`resolve_n_bins`).
"""

import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._validation import MAX_DENSE_BINS


class _BinaryCalibratorMixin:
    """``predict_proba`` / ``predict`` from a ``_calibrated(X)`` method.

    A subclass implements ``_calibrated(X)``: the calibrated probability that
    the answer is correct, one value per row of ``X`` (validated there).
    """

    def predict_proba(self, X):
        """Calibrated probability of each class.

        Parameters
        ----------
        X : array-like
            Same columns as in ``fit``.

        Returns
        -------
        proba : ndarray of shape (n_samples, 2)
            Column 1 is the calibrated probability that the answer is
            correct, column 0 its complement.
        """
        check_is_fitted(self)
        p = self._calibrated(X)
        proba = np.empty((p.shape[0], 2))
        proba[:, 1] = p
        proba[:, 0] = 1.0 - p
        return proba

    def predict(self, X):
        """Predict 1 (correct) where the calibrated probability exceeds 0.5.

        Parameters
        ----------
        X : array-like
            Same columns as in ``fit``.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        return self.classes_[(self._calibrated(X) > 0.5).astype(np.intp)]


#: Number of bins when neither ``n_bins`` nor ``points_per_bin`` is given.
DEFAULT_N_BINS = 15


def resolve_n_bins(n_bins, points_per_bin, total_weight, *, who, n_rows=None):
    """Number of bins ``B`` for a calibration set of total weight ``N``.

    ``n_bins`` and ``points_per_bin`` are mutually exclusive; with
    ``points_per_bin = b`` the paper's ``B = floor(N / b)`` (Alg. 1, line 1)
    is used; with neither, ``DEFAULT_N_BINS``. ``B`` is then reduced, with a
    ``UserWarning``, to ``max(1, floor(N / 2))`` when ``N < 2B``: Thm A.1
    needs ``N >= 2B``, which is also what keeps every bin non-empty once the
    edge points are left out.

    ``B`` never exceeds :func:`max_bins` of ``n_rows`` (the rows with
    positive weight): weights are frequency weights, but the copies of one
    row share its confidence, so bins far beyond one per row separate nothing
    and only cost memory (400 rows of weight 1e6 with ``b = 20`` asked for
    2e7 bins, 2.8 GB). Reducing ``B`` there warns.
    """
    if n_bins is not None and points_per_bin is not None:
        raise ValueError(
            f"{who}: n_bins={n_bins} and points_per_bin={points_per_bin} are "
            "mutually exclusive; set one of them to None."
        )
    if points_per_bin is not None:
        B = int(total_weight // points_per_bin)
        if B < 1:
            warnings.warn(
                f"{who}: only {total_weight:g} calibration point(s) for "
                f"points_per_bin={points_per_bin}; using a single bin.",
                UserWarning,
                stacklevel=4,
            )
            B = 1
    else:
        B = DEFAULT_N_BINS if n_bins is None else int(n_bins)
    if total_weight < 2 * B and B > 1:
        reduced = max(1, int(total_weight // 2))
        warnings.warn(
            f"{who}: {B} bins need at least {2 * B} calibration points (the "
            f"guarantee of Thm A.1 assumes N >= 2B); got {total_weight:g}. "
            f"Using {reduced} bin(s) instead.",
            UserWarning,
            stacklevel=4,
        )
        B = reduced
    if n_rows is not None and B > max_bins(n_rows):
        warnings.warn(
            f"{who}: {B} bins for a total weight of {total_weight:g} but only "
            f"{n_rows} row(s) with positive weight; bins beyond one per row "
            f"cannot separate confidences. Using {max_bins(n_rows)} bin(s).",
            UserWarning,
            stacklevel=4,
        )
        B = max_bins(n_rows)
    return B


def max_bins(n_rows, n_rows_total=None):
    """Most bins worth allocating for ``n_rows`` rows (of ``n_rows_total``).

    ``max(n_rows, MAX_DENSE_BINS * n_rows / n_rows_total)``: one bin per row,
    and never fewer than a share of ``MAX_DENSE_BINS`` proportional to the
    rows, so the cap never binds for unit or moderate frequency weights
    (where an integer weight must equal repeating the row) and the total over
    all cells of a partition stays below ``n_rows_total + MAX_DENSE_BINS``.
    """
    n_rows = int(n_rows)
    n_total = n_rows if n_rows_total is None else int(n_rows_total)
    return max(n_rows, MAX_DENSE_BINS * n_rows // max(n_total, 1), 1)
