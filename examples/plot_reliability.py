# SPDX-License-Identifier: MIT
"""
==========================================================
Reliability tables, ECE and beta-CE of LLM confidences
==========================================================

Twelve LLMs answered 1,000 TriviaQA questions and stated how sure they were
(the bundled :func:`~sklearn_betacal.datasets.load_triviaqa_confidence` set).
We read their reliability table with counts and exact intervals (chapter 000),
recalibrate the confidences globally (UMD histogram binning, paper Alg. 4) and
per model (beta-binning, Alg. 1-2, with one cell per model), and compare the
average-case error (ECE, Def. 2.2) with the beta-calibration error
(CE(h; beta), Def. 2.4) and the selective-QA score AUAC (Sec. 5).

Runs offline in a few seconds; the plot needs the ``plot`` extra
(matplotlib).
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

from sklearn_betacal import BetaBinningCalibrator, GroupColumnPartitioner, UMDBinner
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
bb = BetaBinningCalibrator(partitioner=GroupColumnPartitioner(column=0), random_state=0)
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
            "beta-CE (model)": beta_calibration_error(y[test], p, groups=model[test]),
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
# Points at (mean confidence, accuracy) with their exact intervals, and the
# bin counts underneath, so that a sparse bin never looks like a measurement.
fig, axes = plt.subplots(
    2, 3, figsize=(10, 5), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
)
for j, (name, p) in enumerate(confidences.items()):
    t = reliability_table(y[test], p)
    full = t[~t["empty"]]
    ax, bars = axes[0, j], axes[1, j]
    ax.plot([0, 1], [0, 1], ls="--", color="0.6", lw=1)
    yerr = np.vstack(
        [full["accuracy"] - full["ci_lower"], full["ci_upper"] - full["accuracy"]]
    )
    ax.errorbar(full["mean_confidence"], full["accuracy"], yerr=yerr, fmt="o", ms=4)
    ax.set_title(f"{name}\nECE {expected_calibration_error(y[test], p):.3f}")
    ax.set_ylim(0, 1)
    bars.bar(t["bin_lower"], t["count"], width=0.1, align="edge", color="0.5")
    bars.set_yscale("log")
    bars.set_xlabel("confidence")
axes[0, 0].set_ylabel("accuracy")
axes[1, 0].set_ylabel("count")
fig.tight_layout()
plt.show()
