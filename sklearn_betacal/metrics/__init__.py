# SPDX-License-Identifier: MIT
"""Calibration metrics and scorers.

Plain functions ``metric(y_true, y_prob, *, sample_weight=None, ...)``:
:func:`reliability_table`, :func:`expected_calibration_error`,
:func:`maximum_calibration_error`, :func:`brier_decomposition`,
:func:`beta_calibration_error` (with a debiased option and
:func:`beta_calibration_noise_floor`) and
:func:`area_under_accuracy_confidence`; the tables and curves behind them,
:func:`reliability_table`, :func:`cell_calibration_table`,
:func:`accuracy_confidence_curve` and :func:`risk_coverage_curve`, which the
displays draw.
Tests of calibration without bins: :func:`cumulative_calibration_error`
(ECCE), :func:`calibration_test` (its sigma and p-value, per cell with
multiplicity control), :func:`smooth_calibration_error` (smECE) and
:func:`multicalibration_error` (over feature-defined segments).
Out of core: :class:`CalibrationStatistics`, the mergeable sufficient
statistics of every number above (per cell x bin sums and the ordered
summaries of the ECCE and the AUC), and :func:`calibration_drift_test`
between two periods' statistics.
Names ending in ``_error`` are lower-is-better. For NLL, AUC and the plain
Brier score use :func:`sklearn.metrics.log_loss`,
:func:`sklearn.metrics.roc_auc_score` and
:func:`sklearn.metrics.brier_score_loss`.

Scorers for ``cross_validate`` and ``GridSearchCV``:
``neg_expected_calibration_error_scorer``,
``neg_cumulative_calibration_error_scorer``,
``neg_smooth_calibration_error_scorer``,
``area_under_accuracy_confidence_scorer``,
``neg_beta_calibration_error_scorer`` (the estimator's own partition) and
:func:`make_beta_calibration_error_scorer` (a fixed partition). The module
level scorer objects are shared: ``set_score_request`` changes them in place,
so call it on a ``copy.deepcopy`` when different searches need different
requests.
"""

from ._beta_calibration import (
    beta_calibration_error,
    beta_calibration_noise_floor,
    cell_calibration_table,
)
from ._calibration_error import (
    BrierDecomposition,
    brier_decomposition,
    expected_calibration_error,
    maximum_calibration_error,
    reliability_table,
)
from ._calibration_tests import (
    CalibrationTestResult,
    calibration_test,
    cumulative_calibration_error,
    multicalibration_error,
    smooth_calibration_error,
)
from ._scorers import (
    area_under_accuracy_confidence_scorer,
    make_beta_calibration_error_scorer,
    neg_beta_calibration_error_scorer,
    neg_cumulative_calibration_error_scorer,
    neg_expected_calibration_error_scorer,
    neg_smooth_calibration_error_scorer,
)
from ._selective import (
    accuracy_confidence_curve,
    area_under_accuracy_confidence,
    risk_coverage_curve,
)
from ._statistics import CalibrationStatistics, calibration_drift_test

__all__ = [
    "BrierDecomposition",
    "CalibrationStatistics",
    "CalibrationTestResult",
    "accuracy_confidence_curve",
    "area_under_accuracy_confidence",
    "area_under_accuracy_confidence_scorer",
    "beta_calibration_error",
    "beta_calibration_noise_floor",
    "brier_decomposition",
    "calibration_drift_test",
    "calibration_test",
    "cell_calibration_table",
    "cumulative_calibration_error",
    "expected_calibration_error",
    "make_beta_calibration_error_scorer",
    "maximum_calibration_error",
    "multicalibration_error",
    "neg_beta_calibration_error_scorer",
    "neg_cumulative_calibration_error_scorer",
    "neg_expected_calibration_error_scorer",
    "neg_smooth_calibration_error_scorer",
    "reliability_table",
    "risk_coverage_curve",
    "smooth_calibration_error",
]
