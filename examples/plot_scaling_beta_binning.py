# SPDX-License-Identifier: MIT
"""
=====================================================================
Scaling-beta-binning (HS-BB, S-BB) of LLM confidences, per LLM group
=====================================================================

Twelve LLMs answered the same 1,000 TriviaQA questions and verbalized their
confidence (the bundled
:func:`~sklearn_betacal.datasets.load_triviaqa_confidence` set). Each model is
miscalibrated in its own way, so a calibrator that is right *on average* can
still be wrong for every single model. Beta-calibration (Def. 2.3 of the
paper) asks for calibration within each cell of a partition -- here the cell
is simply the model (a precomputed group column).

We compare

* no calibration, Platt scaling (S) and UMD histogram binning (B): one map
  for all models;
* beta-binning (BB, Alg. 1-2): one UMD per model;
* scaling-beta-binning (Alg. 3): fit a scaler on half the calibration rows,
  use its fitted values as proxy labels for beta-binning on the other half --
  with the hierarchical logistic scaler of Eq. (5) (HS-BB) or one pooled
  logistic regression (S-BB);

and then estimate the misspecification ``nu`` of the HS-BB proxies on a
hold-out split, to pick the points per bin from Thm 3.1 (Sec. 3.3).

Runs offline in a few seconds; the plot needs the ``plot`` extra.
"""

# %%
# The data
# --------
# Calibrate on the even question ids, test on the odd ones (no question on
# both sides). ``X`` is the confidence plus the group column.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_betacal import (
    BetaBinningCalibrator,
    GroupColumnPartitioner,
    HierarchicalLogisticScaler,
    PlattScaler,
    ScalingBetaBinningCalibrator,
    UMDBinner,
    estimate_misspecification,
)
from sklearn_betacal.bounds import points_per_bin_for_epsilon
from sklearn_betacal.datasets import load_triviaqa_confidence
from sklearn_betacal.metrics import (
    area_under_accuracy_confidence,
    beta_calibration_error,
)

frame = load_triviaqa_confidence().frame
h = frame["verbal_confidence"].to_numpy()
y = frame["correct_judge"].to_numpy()
model_id, model_names = pd.factorize(frame["model"])
X = np.column_stack([h, model_id])
cal = frame["question_id"].to_numpy() % 2 == 0
test = ~cal
print(f"{cal.sum()} calibration rows, {test.sum()} test rows, {len(model_names)} LLMs")

# %%
# Fit the calibrators
# -------------------
b = 50  # points per bin
part = GroupColumnPartitioner()
models = {
    "none": None,
    "Platt (S)": PlattScaler(),
    "UMD (B)": UMDBinner(points_per_bin=b, random_state=0),
    "BB": BetaBinningCalibrator(part, points_per_bin=b, random_state=0),
    "S-BB": ScalingBetaBinningCalibrator(
        part, points_per_bin=b, scaler="pooled", random_state=0
    ),
    "HS-BB": ScalingBetaBinningCalibrator(part, points_per_bin=b, random_state=0),
}
scores = {}
for name, model in models.items():
    if model is None:
        scores[name] = h[test]
    elif name in ("Platt (S)", "UMD (B)"):
        scores[name] = model.fit(h[cal], y[cal]).predict_proba(h[test])[:, 1]
    else:
        scores[name] = model.fit(X[cal], y[cal]).predict_proba(X[test])[:, 1]

print(f"{'method':10s} {'beta-CE':>8s} {'AUAC':>6s}")
for name, p in scores.items():
    ce = beta_calibration_error(y[test], p, cells=model_id[test])
    auac = area_under_accuracy_confidence(y[test], p)
    print(f"{name:10s} {ce:8.3f} {auac:6.3f}")

# %%
# The hierarchical scaler on its own
# ----------------------------------
# HS-BB's scaler is a logistic regression of correctness on the confidence
# with a random intercept and slope per model (Eq. 5), fitted the way lme4's
# ``glmer`` fits it. Its fixed effects are the population curve; the random
# effects move each model's curve, shrunk toward the population.
hls = HierarchicalLogisticScaler(partitioner=part).fit(X[cal], y[cal])
print("fixed effects (B0, B1):", hls.fixed_effects_.round(2))
print("random-effect SDs (intercept, slope):", hls.sigma_.round(2))

grid = np.linspace(0, 1, 101)
fig, ax = plt.subplots(figsize=(5, 4))
for k in range(len(model_names)):
    Xg = np.column_stack([grid, np.full(grid.size, k)])
    ax.plot(grid, hls.predict_proba(Xg)[:, 1], color="0.7", lw=1)
Xpop = np.column_stack([grid, np.full(grid.size, -1)])  # no cell: population
ax.plot(grid, hls.predict_proba(Xpop)[:, 1], color="C3", lw=2, label="population")
ax.plot([0, 1], [0, 1], "k:", lw=1, label="identity")
ax.set_xlabel("verbalized confidence h")
ax.set_ylabel("P(correct | h, model)")
ax.set_title("Hierarchical logistic scaler, one curve per LLM")
ax.legend()
fig.tight_layout()

# %%
# How many points per bin? Estimate nu, apply Thm 3.1
# ----------------------------------------------------
# The proxies of HS-BB are not the true labels: Thm 3.1 adds their
# misspecification ``nu`` (Def. 3.2) to the bound. Estimate it on a labelled
# hold-out split (here: half of the test questions), then choose ``b``. The
# bound is per cell, and a scaler can be off in one cell while its pooled gap
# is small (the cells' gaps cancel), so take the largest of the pooled
# estimate and each LLM's own (the rule of ``nu="auto"``: bins of at least
# 100 rows, up to 10 per cell).
hold = test & (frame["question_id"].to_numpy() % 4 == 1)
hsbb = models["HS-BB"]
proxy = hsbb.proxy_proba(X[hold])
nu = pooled = estimate_misspecification(y[hold], proxy, h[hold])
for m in range(len(model_names)):
    rows = model_id[hold] == m
    if rows.sum() >= 100:
        per_llm = estimate_misspecification(
            y[hold][rows], proxy[rows], h[hold][rows], n_bins=min(10, rows.sum() // 100)
        )
        nu = max(nu, per_llm)
print(f"nu on the hold-out: pooled {pooled:.3f}, largest of it and the LLMs' {nu:.3f}")
print(f"nu_ of the fit (the same rule, on D2): {hsbb.nu_:.3f}")
n2 = len(hsbb.binning_indices_)
for eps in (0.15, 0.2, 0.3, 0.4):
    b0 = points_per_bin_for_epsilon(eps, n2, alpha=0.1, nu=0.0)
    try:
        bnu = points_per_bin_for_epsilon(eps, n2, alpha=0.1, nu=nu)
    except ValueError:
        bnu = "unreachable"
    print(f"epsilon={eps}: b={b0} with nu=0, b={bnu} with nu={nu:.3f}")
