# SPDX-License-Identifier: MIT
"""
=====================================================
Temperature scaling of CIFAR-100 and LLM confidences
=====================================================

Temperature scaling divides every logit by one fitted scalar ``tau``
(the calibration chapter, "Temperature scaling: the one-scalar repair";
Guo et al. 2017).
We fit it

* on the softmax outputs of a DenseNet-BC-100 on the CIFAR-100 test set (the
  example record ``densenet-bc-100-cifar-100.npz`` of the netcal calibration
  framework, from its repository's ``examples/classification/records/cifar100``;
  the package does not bundle it: put it in ``<folder>/cifar/`` and set the
  environment variable ``BETACAL_SHARED_DATA=<folder>``, otherwise this part is
  skipped with a message), as a multiclass calibrator ``softmax(z / tau)``, and
* on the answer-token probabilities of twelve LLMs answering TriviaQA
  questions (the bundled
  :func:`~sklearn_betacal.datasets.load_triviaqa_confidence` set), as a
  binary "is this answer correct" calibrator ``sigma(s / tau)``, next to
  :class:`~sklearn_betacal.PlattScaler`.

Both fits use the held-out negative log-likelihood and half of the data; the
other half measures the result. Runs offline in a few seconds; the plot needs
the ``plot`` extra.
"""

# %%
# CIFAR-100: one temperature for 100 classes
# ------------------------------------------
# The records hold softmax probabilities only; ``input="probability"`` takes
# ``log(p)`` (clipped at ``1e-12``) as the logits, which is exact up to a
# per-row constant that the softmax ignores.
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from sklearn_betacal import PlattScaler, TemperatureScaler
from sklearn_betacal.datasets import load_triviaqa_confidence
from sklearn_betacal.metrics import expected_calibration_error


def nll(prob, y):
    return float(-np.mean(np.log(np.clip(prob[np.arange(y.size), y], 1e-300, 1))))


def top_label(prob, y):
    return prob.max(axis=1), (prob.argmax(axis=1) == y).astype(int)


folder = os.environ.get("BETACAL_SHARED_DATA")
path = Path(folder or ".") / "cifar" / "densenet-bc-100-cifar-100.npz"
have_cifar = folder is not None and path.is_file()
if have_cifar:
    record = np.load(path)
    P = record["predictions"].astype(np.float64)
    labels = record["ground_truth"].astype(np.int64).ravel()

    order = np.random.default_rng(0).permutation(labels.size)
    cal, test = order[:5000], order[5000:]
    ts = TemperatureScaler().fit(P[cal], labels[cal])
    Q = ts.predict_proba(P[test])
    print(f"tau = {ts.temperature_:.4f} after {ts.n_iter_} Newton passes")

    conf_before, correct = top_label(P[test], labels[test])
    conf_after, correct_after = top_label(Q, labels[test])
    print(f"test NLL {nll(P[test], labels[test]):.4f} -> {nll(Q, labels[test]):.4f}")
    print(
        "top-label ECE "
        f"{expected_calibration_error(correct, conf_before, n_bins=15):.4f} -> "
        f"{expected_calibration_error(correct_after, conf_after, n_bins=15):.4f}"
    )
else:
    print(
        f"CIFAR-100 record not found at {path}: set BETACAL_SHARED_DATA to run "
        "this part; skipped."
    )

# %%
# The invariance theorem, asserted exactly
# ----------------------------------------
# ``tau > 0`` cannot change a single decision: the argmax of every row, hence
# the accuracy, is bit-identical before and after (the calibration chapter).
if have_cifar:
    assert np.array_equal(P[test].argmax(axis=1), Q.argmax(axis=1))
    assert np.array_equal(correct, correct_after)
    print(f"accuracy {correct.mean():.4f} before and after")

# %%
# Reliability diagram
# -------------------
edges = np.linspace(0, 1, 16)


def reliability(conf, y):
    idx = np.clip(np.digitize(conf, edges) - 1, 0, 14)
    keep = np.bincount(idx, minlength=15) > 0
    acc = np.bincount(idx, weights=y, minlength=15)[keep]
    mean_conf = np.bincount(idx, weights=conf, minlength=15)[keep]
    n = np.bincount(idx, minlength=15)[keep]
    return mean_conf / n, acc / n


if have_cifar:
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls=":")
    ax.plot(*reliability(conf_before, correct), "o-", label="softmax (tau = 1)")
    label = f"tau = {ts.temperature_:.2f}"
    ax.plot(*reliability(conf_after, correct), "s-", label=label)
    ax.set_xlabel("confidence (top label)")
    ax.set_ylabel("accuracy")
    ax.set_title("DenseNet-BC-100, CIFAR-100 test half")
    ax.legend(loc="upper left")
    fig.tight_layout()

# %%
# LLM answers: temperature versus Platt
# -------------------------------------
# The token probability of each answer span (``extracted_seq_prob``), fit on
# the even question ids and evaluated on the odd ones. Almost every
# confidence is above 0.5 while only half of the answers are right: the
# temperature has to flatten everything toward 0.5 (``tau`` near the upper
# bound 20 of the calibration chapter's bracket; the verbalized confidences of the same
# set reach it and trigger a ``ConvergenceWarning``). Temperature scaling keeps
# every "above 0.5" decision; Platt scaling (two parameters) may move the
# threshold, which repairs a bias of the model as a whole.
frame = load_triviaqa_confidence().frame.dropna(subset=["extracted_seq_prob"])
h = frame["extracted_seq_prob"].to_numpy()
y = frame["correct_judge"].to_numpy()
fit = frame["question_id"].to_numpy() % 2 == 0

ts_llm = TemperatureScaler().fit(h[fit], y[fit])
platt = PlattScaler().fit(h[fit], y[fit])
p_ts = ts_llm.predict_proba(h[~fit])[:, 1]
p_platt = platt.predict_proba(h[~fit])[:, 1]
print(f"tau = {ts_llm.temperature_:.3f}")
print(f"Platt: a = {platt.coef_[0, 0]:.3f}, b = {platt.intercept_[0]:.3f}")
for name, p in [("raw", h[~fit]), ("temperature", p_ts), ("Platt", p_platt)]:
    ece = expected_calibration_error(y[~fit], p, n_bins=15)
    print(f"{name:>12}: ECE {ece:.4f}, mean confidence {p.mean():.3f}")
print(f"accuracy {y[~fit].mean():.3f}")
assert np.array_equal(h[~fit] > 0.5, p_ts > 0.5)  # decisions kept exactly
