# SPDX-License-Identifier: MIT
"""
================================================================
Beta from question text: TextEmbedder + beta-binning
================================================================

Beta-calibration (paper Def. 2.3) asks a confidence to be right *within
groups of similar questions*. The groups come from a partition beta of an
embedding of the question text (Sec. 2.3: a bounded kd-tree on text
vectors). Here we build that embedding with :class:`~sklearn_betacal.TextEmbedder`
(TF-IDF + truncated SVD, no model download), put it next to the verbalized
confidence with a :class:`~sklearn.compose.ColumnTransformer`, and fit
:class:`~sklearn_betacal.BetaBinningCalibrator` (Alg. 1-2) on the bundled
TriviaQA answers of twelve LLMs. We also read raw model outputs with
:func:`~sklearn_betacal.parse_verbalized_confidence`.

Runs offline in a few seconds; the plot needs the ``plot`` extra
(matplotlib).
"""

# %%
# Reading elicited confidences
# ----------------------------
# The models were asked the paper's Verb1S-Top1 prompt (Table 5). Their raw
# outputs are messy; the parser reads labeled numbers, percentages, bare
# numbers and probability words, and returns NaN (counted) for the rest.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline

from sklearn_betacal import (
    VERB1S_TOP1_PROMPT,
    BetaBinningCalibrator,
    KDTreePartitioner,
    TextEmbedder,
    UMDBinner,
    parse_verbalized_confidence,
)
from sklearn_betacal.datasets import load_triviaqa_confidence
from sklearn_betacal.metrics import beta_calibration_error, expected_calibration_error

print(VERB1S_TOP1_PROMPT.format(question="Which planet is closest to the sun?"))
outputs = [
    "Guess: Mercury\nProbability: 0.95",
    "assistant\n\nMercury\n0.9",
    "Mercury, 0.99",
    "Guess: Venus\nConfidence: Highly Likely",
    "I am not sure.",
]
parsed = parse_verbalized_confidence(outputs)
for text, p, g, rule in zip(
    outputs, parsed.confidence, parsed.guess, parsed.source, strict=True
):
    print(f"{text!r:45} -> {p:.2f} guess={g!r} ({rule})")
print("unparseable:", parsed.n_unparseable)

# %%
# Features: confidence column + question embedding
# ------------------------------------------------
# Calibrators are fitted on the even question ids and evaluated on the odd
# ones, so no question text is on both sides.
frame = load_triviaqa_confidence().frame
y = frame["correct_judge"].to_numpy()
fit = frame["question_id"].to_numpy() % 2 == 0
X = frame[["verbal_confidence", "question"]]

features = ColumnTransformer(
    [
        ("conf", "passthrough", ["verbal_confidence"]),
        ("emb", TextEmbedder(n_components=8, random_state=0), ["question"]),
    ]
)
beta_binning = make_pipeline(
    features,
    BetaBinningCalibrator(
        partitioner=KDTreePartitioner(max_depth=2, split_axis="pca"),
        points_per_bin=100,
        random_state=0,
    ),
)
beta_binning.fit(X[fit], y[fit])
print(features.get_feature_names_out())

# %%
# Beta-CE: plain binning vs. beta-binning
# ---------------------------------------
# Both are scored with the same cells: the fitted kd-tree applied to the
# held-out questions' embeddings.
#
# Read the numbers honestly: on this one dataset of 1,000 trivia questions
# the text cells separate the models' accuracy only a little, and
# beta-binning pays for its smaller per-cell samples, so it does *not* beat
# one global binning here (try other splits: the two trade places). The
# text beta earns its keep when questions of different kinds are mixed:
# ``benchmarks/results/embeddings.md`` measures it on four QA datasets,
# where it lowers the calibration error within each dataset by 17-26 %
# compared with global binning.
Z_test = beta_binning[0].transform(X[~fit])[:, 1:]
cells = np.ravel(beta_binning[-1].partitioner_.transform(Z_test))
h_test = X["verbal_confidence"].to_numpy()[~fit]
umd = UMDBinner(n_bins=int(fit.sum()) // 100, random_state=0).fit(
    X["verbal_confidence"][fit], y[fit]
)
scores = {
    "none": h_test,
    "UMD (global)": umd.predict_proba(h_test)[:, 1],
    "beta-binning": beta_binning.predict_proba(X[~fit])[:, 1],
}
for name, p in scores.items():
    ece = expected_calibration_error(y[~fit], p)
    bce = beta_calibration_error(y[~fit], p, cells=cells)
    print(f"{name:14} ECE {ece:.3f}  beta-CE {bce:.3f}")

# %%
# Accuracy per cell
# -----------------
# Cells of similar questions differ in how often the models are right; a
# single global recalibration cannot serve them all.
ids, inverse = np.unique(cells, return_inverse=True)
acc = np.bincount(inverse, weights=y[~fit]) / np.bincount(inverse)
conf = np.bincount(inverse, weights=h_test) / np.bincount(inverse)
fig, ax = plt.subplots(figsize=(6, 3))
x = np.arange(len(ids))
ax.bar(x - 0.2, conf, 0.4, label="mean stated confidence")
ax.bar(x + 0.2, acc, 0.4, label="accuracy")
ax.set_xticks(x, [str(i) for i in ids])
ax.set_xlabel("kd-tree cell of the question embedding (-1: outside)")
ax.legend(loc="lower right")
fig.tight_layout()
