# SPDX-License-Identifier: MIT
"""
========================================================================
Which groups is my model miscalibrated on, and did calibration fix them?
========================================================================

Average calibration can hide groups that are badly served (the paper's
Example 2.1). :class:`~sklearn_betacal.BetaCalibrationDisplay` lists the
cells of a partition -- here the twelve LLMs of the bundled TriviaQA set --
worst first, by the binned calibration error inside each cell (the term that
CE(h; beta), Def. 2.4, averages), with

* a bootstrap interval of that error,
* the *noise level* (grey tick): what a perfectly calibrated cell of the same
  size would show; a dot at its tick is noise, not miscalibration,
* the cell size, and only cells large enough to say something (by default
  the size that Thm 3.1 pins down to +-0.1),

and, on the right, the reliability diagrams of the worst cells.

Runs offline in a few seconds; needs the ``plot`` extra (matplotlib).
"""

# %%
# The data
# --------
# One row per (question, model): verbalized confidence and judge label. We
# calibrate on the even question ids and look at the odd ones.
import matplotlib.pyplot as plt
import numpy as np

from sklearn_betacal import (
    BetaBinningCalibrator,
    BetaCalibrationDisplay,
    GroupColumnPartitioner,
    UMDBinner,
)
from sklearn_betacal.datasets import load_triviaqa_confidence

frame = load_triviaqa_confidence().frame
y = frame["correct_judge"].to_numpy()
h = frame["verbal_confidence"].to_numpy()
model = frame["model"].to_numpy()
fit = frame["question_id"].to_numpy() % 2 == 0
test = ~fit

# %%
# Where are the raw confidences wrong?
# ------------------------------------
# Every model is overconfident, but not equally: gemma2 and phi4 say "90 %"
# and are right less than half of the time. The intervals are narrow and far
# right of the noise ticks: this is signal.
raw = BetaCalibrationDisplay.from_predictions(
    y[test], h[test], cells=model[test], name="verbalized", random_state=0
)
plt.show()

# %%
# Did calibration fix them?
# -------------------------
# A global histogram binning (:class:`~sklearn_betacal.UMDBinner`) and
# beta-binning with one cell per model
# (:class:`~sklearn_betacal.BetaBinningCalibrator` with a
# :class:`~sklearn_betacal.GroupColumnPartitioner`). Passing
# ``order=raw.cells_`` keeps the raw ordering, so each row is the same model
# in the three panels and the x-axes are shared: a dot that moves left to its
# noise tick is a model that calibration fixed.
codes = np.searchsorted(np.unique(model), model)
X = np.column_stack([h, codes])
umd = UMDBinner(random_state=0).fit(h[fit], y[fit])
bb = BetaBinningCalibrator(partitioner=GroupColumnPartitioner(), random_state=0)
bb.fit(X[fit], y[fit])

fig, axes = plt.subplots(
    1, 3, figsize=(14, 5), sharex=True, sharey=True, layout="constrained"
)
# the same test rows, models and row order in the three panels
panel = {"cells": model[test], "order": raw.cells_, "random_state": 0}
BetaCalibrationDisplay.from_predictions(
    y[test], h[test], name="verbalized", ax=axes[0], **panel
)
BetaCalibrationDisplay.from_estimator(
    umd, h[test], y[test], name="UMD (global)", ax=axes[1], **panel
)
after = BetaCalibrationDisplay.from_estimator(
    bb, X[test], y[test], name="beta-binning (per model)", ax=axes[2], **panel
)
for ax in axes[1:]:
    ax.get_legend().remove()
plt.show()

# %%
# The global map removes most of the average overconfidence but leaves
# several models well above their noise level; beta-binning brings every
# model to it. The per-cell numbers are a table too:
cols = ["count", "accuracy", "mean_confidence", "calibration_error", "noise_level"]
print(after.cell_table[cols].round(3).to_string())

# %%
# Cells of a learned partition
# ----------------------------
# ``from_estimator`` without ``cells`` asks the calibrator for the cell of
# every row (``apply``), names each cell by what it is (a group, or a kd-tree
# path such as ``kd x0<=0.12``) and marks the cells that fall back to the
# root calibrator.
BetaCalibrationDisplay.from_estimator(bb, X[test], y[test], random_state=0)
plt.show()
