# SPDX-License-Identifier: MIT
"""Shared estimator glue for the binary "is this answer correct" calibrators.

Used by UMDBinner, ScalingBinningCalibrator, PlattScaler and
BetaBinningCalibrator (hence ScalingBetaBinningCalibrator).
"""

import numpy as np
from sklearn.utils.validation import check_is_fitted


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
