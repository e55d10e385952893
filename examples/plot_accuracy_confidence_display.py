# SPDX-License-Identifier: MIT
"""
=====================================================================
Selective answering: accuracy-confidence and risk-coverage curves
=====================================================================

A selective QA system answers only when its confidence reaches a threshold.
:class:`~sklearn_betacal.AccuracyConfidenceDisplay` draws the accuracy of
the answers it would still give at each threshold (its area is the AUAC of
the paper's Sec. 5, given in the legend), the share of answers kept (dashed),
and the risk-coverage curve: the error rate against the share answered.

We compare the verbalized and the token-probability confidences of the
bundled TriviaQA set, raw and after beta-binning per model.

Runs offline in a few seconds; needs the ``plot`` extra (matplotlib).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from sklearn_betacal import (
    AccuracyConfidenceDisplay,
    BetaBinningCalibrator,
    GroupColumnPartitioner,
)
from sklearn_betacal.datasets import load_triviaqa_confidence

frame = load_triviaqa_confidence().frame
frame = frame[frame["extracted_seq_prob"].between(0, 1)]
y = frame["correct_judge"].to_numpy()
model = frame["model"].to_numpy()
codes = np.searchsorted(np.unique(model), model)
fit = frame["question_id"].to_numpy() % 2 == 0
test = ~fit

# %%
# Raw and calibrated, both kinds of confidence
# --------------------------------------------
# The raw verbalized confidences are crowded above 0.8, so their accuracy
# curve stays flat until the very top: the threshold barely separates right
# from wrong answers. The token probabilities rank answers better. After
# beta-binning per model a threshold means the same for every model, and at
# each threshold the answers kept are more accurate than the raw ones. Its
# largest confidence is below 0.9, though: above it nothing is answered,
# which the AUAC counts as zero (see
# :func:`~sklearn_betacal.metrics.area_under_accuracy_confidence`), so the
# verbalized AUAC drops a little while the token-probability AUAC rises. The
# risk-coverage curve shows the same from the other side: at any share of
# questions answered, the calibrated token probabilities make the fewest
# errors.
fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
for column, label in [
    ("verbal_confidence", "verbalized"),
    ("extracted_seq_prob", "token prob."),
]:
    h = frame[column].to_numpy()
    X = np.column_stack([h, codes])
    bb = BetaBinningCalibrator(partitioner=GroupColumnPartitioner(), random_state=0)
    bb.fit(X[fit], y[fit])
    AccuracyConfidenceDisplay.from_predictions(
        y[test], h[test], name=f"{label}, raw", ax=axes
    )
    AccuracyConfidenceDisplay.from_estimator(
        bb,
        X[test],
        y[test],
        name=f"{label}, beta-binning",
        ax=axes,
        linestyle="-.",
    )
plt.show()
