# SPDX-License-Identifier: MIT
"""
==========================================================
Reliability tables, ECE and beta-CE of LLM confidences
==========================================================

Twelve LLMs answered 1,000 TriviaQA questions and stated how sure they were
(the bundled :func:`~sklearn_betacal.datasets.load_triviaqa_confidence` set).
We read their reliability table with counts and exact intervals (the
calibration chapter),
recalibrate the confidences globally (UMD histogram binning, paper Alg. 4) and
per model (beta-binning, Alg. 1-2, with one cell per model), and compare the
average-case error (ECE, Def. 2.2) with the beta-calibration error
(CE(h; beta), Def. 2.4) and the selective-QA score AUAC (Sec. 5).

Runs offline in a few seconds; the plots (:class:`~sklearn_betacal.ReliabilityDisplay`)
need the ``plot`` extra (matplotlib).
"""

# %%
# The data
# --------
# One row per (question, model): the verbalized confidence and whether an LLM
# judge accepted the answer. We fit calibrators on the even question ids and
# evaluate on the odd ones, so no question is on both sides.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_betacal import (
    BetaBinningCalibrator,
    GroupColumnPartitioner,
    ReliabilityDisplay,
    UMDBinner,
)
from sklearn_betacal.datasets import load_triviaqa_confidence
from sklearn_betacal.metrics import (
    area_under_accuracy_confidence,
    beta_calibration_error,
    brier_decomposition,
    expected_calibration_error,
    reliability_table,
)

frame = load_triviaqa_confidence().frame
y = frame["correct_judge"].to_numpy()
h = frame["verbal_confidence"].to_numpy()
model = frame["model"].astype("category").cat.codes.to_numpy()
fit = frame["question_id"].to_numpy() % 2 == 0
test = ~fit
print(f"{len(frame)} answers, accuracy {y.mean():.3f}, mean confidence {h.mean():.3f}")

# %%
# The reliability table
# ---------------------
# One row per equal-width bin, empty bins kept. ``ci_lower``/``ci_upper`` is
# the exact Clopper-Pearson 95 % interval of the bin's accuracy: the top bin
# holds thousands of answers and a narrow interval, the middle bins a few
# dozen and wide ones.
table = reliability_table(y[test], h[test])
cols = ["count", "mean_confidence", "accuracy", "gap", "ci_lower", "ci_upper"]
print(table[cols].round(3))

# %%
# Recalibrate: globally and per model
# -----------------------------------
# ``UMDBinner`` learns one map for everybody; ``BetaBinningCalibrator`` with a
# ``GroupColumnPartitioner`` on the model column learns one map per model.
X = np.column_stack([h, model])
umd = UMDBinner(random_state=0).fit(h[fit], y[fit])
bb = BetaBinningCalibrator(
    partitioner=GroupColumnPartitioner(group_column=0), random_state=0
)
bb.fit(X[fit], y[fit])
confidences = {
    "verbalized": h[test],
    "UMD (global)": umd.predict_proba(h[test])[:, 1],
    "beta-binning (per model)": bb.predict_proba(X[test])[:, 1],
}

rows = []
for name, p in confidences.items():
    brier = brier_decomposition(y[test], p)
    rows.append(
        {
            "confidence": name,
            "ECE": expected_calibration_error(y[test], p),
            "beta-CE (model)": beta_calibration_error(y[test], p, cells=model[test]),
            "Brier": brier.brier,
            "AUAC": area_under_accuracy_confidence(y[test], p),
        }
    )
print(pd.DataFrame(rows).set_index("confidence").round(3))

# %%
# The global map fixes the average (ECE ~0.03) but not the groups: its beta-CE
# stays well above its ECE, because the models are overconfident by different
# amounts (the paper's Example 2.1 on real data). Calibrating per model brings
# the beta-CE down as well.
#
# Reliability diagrams with counts
# --------------------------------
# :class:`~sklearn_betacal.ReliabilityDisplay` draws the same table: points
# at (mean confidence, accuracy) with their exact intervals, the ECE in the
# legend, and the counts -- here as marker areas, since the three diagrams
# share one row of axes. A sparse bin has a small marker and a long bar, so it
# never looks like a measurement.
fig, axes = plt.subplots(1, 3, figsize=(11, 4), sharey=True, layout="constrained")
for ax, (name, p) in zip(axes, confidences.items(), strict=True):
    ReliabilityDisplay.from_predictions(y[test], p, name=name, ax=ax)
    ax.set_title(name)
plt.show()

# %%
# Overlaid, with the count histogram
# ----------------------------------
# Drawing into the same axes overlays the calibrators; when the display makes
# its own figure, the counts are a histogram under the diagram. Equal-mass
# bins (``strategy="quantile"``) put the same number of answers in every bin:
# the raw verbalized confidences are so concentrated that several quantile
# bins coincide.
raw = ReliabilityDisplay.from_predictions(
    y[test], h[test], name="verbalized", strategy="quantile"
)
ReliabilityDisplay.from_estimator(
    bb,
    X[test],
    y[test],
    name="beta-binning",
    strategy="quantile",
    ax=raw.ax_,
    hist_ax=raw.hist_ax_,
)
plt.show()
