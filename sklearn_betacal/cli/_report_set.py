# SPDX-License-Identifier: MIT
"""``betacal report`` from merged statistics: a Parquet set, out of core.

:func:`report_from_statistics` turns a
:class:`~sklearn_betacal.metrics._statistics.CalibrationStatistics` (merged
over the partitions of a data set by
:func:`sklearn_betacal.dask.calibration_statistics`) into the very dict
:func:`._report.compute_report` builds from arrays in memory, number for
number (to rounding), so the Markdown, JSON and figures are the same.
"""

import numpy as np

from ._report import SIGNIFICANCE, _group_rows_from, _report_body


def report_from_statistics(stats, *, strategy="uniform"):
    """The report dict of :func:`._report.compute_report` from statistics."""
    if strategy != "uniform":
        raise ValueError(
            "the report of a Parquet set bins equal-width (--strategy uniform); "
            "equal-mass bins need global quantiles, which this version does not "
            "compute out of core"
        )
    binning = {"n_bins": stats.n_bins, "strategy": strategy}
    brier = stats.brier_decomposition()
    n = stats.n_rows
    totals = stats.bin_totals()
    metrics = {
        "ece": stats.calibration_error("l1"),
        "mce": stats.calibration_error("max"),
        "brier": brier.brier,
        "brier_calibration": brier.calibration,
        "brier_refinement": brier.refinement,
        "nll": stats.log_loss(),
        "auc": stats.roc_auc(),
        "auac": stats.auac(),
    }
    extra = {}
    if stats.grouped:
        metrics["beta_ce"] = stats.beta_calibration_error()
        metrics["beta_ce_noise_floor"] = stats.noise_floor()
        metrics["beta_ce_squared_debiased"] = stats.beta_calibration_error(
            "l2_squared", debiased=True
        )
        metrics["n_groups"] = int(stats.labels.shape[0])
        tests = stats.calibration_test(alpha=SIGNIFICANCE)
        extra = _group_rows_from(stats.group_table(), tests, n)
    return _report_body(
        n_rows=n,
        accuracy=float(np.sum(totals["n_pos"]) / n),
        mean_confidence=float(np.sum(totals["sum_p"]) / n),
        binning=binning,
        metrics=metrics,
        table=stats.reliability_table(),
        extra=extra,
    )
