# SPDX-License-Identifier: MIT
"""
==============================================================
Histogram binning (UMD) and scaling-binning of LLM confidences
==============================================================

Twelve LLMs answered 1,000 TriviaQA questions and verbalized how sure they
were (the bundled :func:`~sklearn_betacal.datasets.load_triviaqa_confidence`
set). Verbalized confidences are heavily tied -- a model says "0.9" or
"0.95", rarely "0.8731" -- and badly overconfident. We recalibrate them with

* :class:`~sklearn_betacal.UMDBinner`, uniform-mass double-dipping histogram
  binning (Gupta & Ramdas 2021; the paper's Alg. 4 and baseline B), whose bin
  values come with the distribution-free guarantee of eq. (6);
* :class:`~sklearn_betacal.PlattScaler` (baseline S) and
  :class:`~sklearn_betacal.ScalingBinningCalibrator` (Kumar et al. 2019,
  baseline S-B), which bins Platt-scaled values on a second split.

Runs offline in a few seconds; the plot needs the ``plot`` extra.
"""

# %%
# The data
# --------
# Fit on the even question ids, evaluate on the odd ones (no question on both
# sides).
import matplotlib.pyplot as plt
import numpy as np

from sklearn_betacal import PlattScaler, ScalingBinningCalibrator, UMDBinner
from sklearn_betacal.bounds import umd_epsilon
from sklearn_betacal.datasets import load_triviaqa_confidence
from sklearn_betacal.metrics import brier_decomposition, expected_calibration_error

frame = load_triviaqa_confidence().frame
h = frame["verbal_confidence"].to_numpy()
y = frame["correct_judge"].to_numpy()
fit = frame["question_id"].to_numpy() % 2 == 0
test = ~fit
n_fit = int(fit.sum())
print(f"{n_fit} calibration / {int(test.sum())} test answers")
print(f"{np.unique(h).size} distinct verbalized confidences")
print(f"accuracy {y.mean():.3f}, mean confidence {h.mean():.3f}")

# %%
# How many bins? The guarantee of eq. (6)
# ---------------------------------------
# With ``N`` calibration points and ``B`` bins, UMD's bin values are all within
# ``eps = sqrt(log(2B / alpha) / (2 (floor(N / B) - 1)))`` of the true
# ``P(correct | bin)`` with probability at least ``1 - alpha`` (Thm A.1, for
# i.i.d. data; the tie-breaking noise makes the scores distinct). Fewer bins
# give a tighter bound but a coarser calibrator.
for B in (5, 10, 20, 50):
    print(f"B = {B:3d}: eps = {umd_epsilon(n_fit, B, alpha=0.1):.3f}")

# %%
# Fit and compare
# ---------------
# ``random_state`` seeds the tie-breaking noise (and, for scaling-binning, the
# split of the calibration data into the scaler's and the bins' halves).
calibrators = {
    "UMD, B = 10": UMDBinner(n_bins=10, random_state=0),
    "UMD, b = 200 per bin": UMDBinner(points_per_bin=200, random_state=0),
    "Platt (S)": PlattScaler(),
    "scaling-binning (S-B), B = 10": ScalingBinningCalibrator(
        n_bins=10, random_state=0
    ),
}
results = {"none": h[test]}
for name, calibrator in calibrators.items():
    calibrator.fit(h[fit], y[fit])
    results[name] = calibrator.predict_proba(h[test])[:, 1]

print(f"{'method':32s} {'ECE':>6s} {'Brier':>6s} {'distinct':>8s}")
for name, p in results.items():
    ece = expected_calibration_error(y[test], p, n_bins=15)
    brier = brier_decomposition(y[test], p).brier
    print(f"{name:32s} {ece:6.3f} {brier:6.3f} {np.unique(p).size:8d}")

# %%
# Ties: what a tied confidence is mapped to
# -----------------------------------------
# The tie-breaking noise spreads the 0.95 answers over several uniform-mass
# bins. Instead of nudging each test point at random (Gupta & Ramdas), a
# confidence of 0.95 gets the *expected* output over that nudge: the bin
# values weighted by the share of the calibration 0.95s in each bin. The
# output is deterministic and the same for every row that says 0.95.
umd = calibrators["UMD, B = 10"]
print(f"{np.mean(h[fit] == 0.95):.0%} of the calibration answers say 0.95")
print("bin values:", np.round(umd.bin_values_, 3))
print("0.95 ->", np.round(umd.predict_proba([0.95])[0, 1], 3))

# %%
# The calibration maps
# --------------------
grid = np.linspace(0, 1, 1001)
fig, ax = plt.subplots(figsize=(5.5, 4.5))
ax.plot([0, 1], [0, 1], color="0.7", linestyle=":", label="identity")
for name in ("UMD, B = 10", "Platt (S)", "scaling-binning (S-B), B = 10"):
    ax.plot(grid, calibrators[name].predict_proba(grid)[:, 1], label=name)
levels, counts = np.unique(h[fit], return_counts=True)
acc = np.array([y[fit][h[fit] == v].mean() for v in levels])
ax.scatter(
    levels,
    acc,
    s=4 + 200 * counts / counts.max(),
    color="k",
    alpha=0.4,
    label="accuracy per stated confidence",
)
ax.set_xlabel("verbalized confidence")
ax.set_ylabel("calibrated P(correct)")
ax.legend(loc="upper left", fontsize=8)
fig.tight_layout()
plt.show()
