# SPDX-License-Identifier: MIT
"""
=====================================================
Calibrating a scikit-learn classifier in one line
=====================================================

:class:`~sklearn_betacal.CalibratedClassifier` wraps any scikit-learn
classifier and one of this package's calibrators, the way
:class:`sklearn.calibration.CalibratedClassifierCV` wraps one with
``method="isotonic"``. A fitted model goes in as
``FrozenEstimator(clf)``; labels of any type stay as they are.

We calibrate

* a gradient-boosting model on the breast-cancer data set (labels
  ``"malignant"`` / ``"benign"``), with UMD histogram binning and with
  beta-binning over two of the model's own input features;
* a logistic model on the 10-class digits data set, top-label and by
  predicted class;
* the stored softmax outputs of a WideResNet on CIFAR-10 (the netcal records,
  when they are available), by top-label histogram binning per predicted
  class.

Everything runs offline in a few seconds; the plot needs the ``plot`` extra.
"""

# %%
# Binary: a fitted model and string labels
# ----------------------------------------
# The model is fitted on one third of the rows; the calibrator on the second
# third; the last third measures the result.
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV, CalibrationDisplay
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss
from sklearn.model_selection import train_test_split

from sklearn_betacal import (
    BetaBinningCalibrator,
    CalibratedClassifier,
    KDTreePartitioner,
    TemperatureScaler,
    UMDBinner,
)
from sklearn_betacal.metrics import expected_calibration_error

data = load_breast_cancer(as_frame=True)
X = data.frame[data.feature_names]
y = np.asarray(data.target_names)[data.target]  # "malignant" / "benign"
X_fit, X_rest, y_fit, y_rest = train_test_split(X, y, train_size=1 / 3, random_state=0)
X_cal, X_test, y_cal, y_test = train_test_split(
    X_rest, y_rest, train_size=0.5, random_state=0
)
clf = HistGradientBoostingClassifier(random_state=0).fit(X_fit, y_fit)

models = {
    "uncalibrated": clf,
    "isotonic (CalibratedClassifierCV)": CalibratedClassifierCV(
        FrozenEstimator(clf), method="isotonic"
    ).fit(X_cal, y_cal),
    "UMD (CalibratedClassifier)": CalibratedClassifier(
        FrozenEstimator(clf), UMDBinner(points_per_bin=20, random_state=0)
    ).fit(X_cal, y_cal),
    # beta over two of the model's own inputs: a kd-tree on them splits the
    # calibration rows into two cells, each with its own binning
    "beta-binning (CalibratedClassifier)": CalibratedClassifier(
        FrozenEstimator(clf),
        BetaBinningCalibrator(
            KDTreePartitioner(max_depth=1), points_per_bin=20, random_state=0
        ),
        partition_features=["mean radius", "mean texture"],
    ).fit(X_cal, y_cal),
}
is_benign = y_test == "benign"
for name, model in models.items():
    p = model.predict_proba(X_test)[:, list(model.classes_).index("benign")]
    print(
        f"{name:36s} ECE {expected_calibration_error(is_benign, p):.3f}  "
        f"Brier {brier_score_loss(is_benign, p):.3f}"
    )
print("classes_:", models["UMD (CalibratedClassifier)"].classes_)

# %%
# scikit-learn's own calibration plot works on the wrapper.
fig, ax = plt.subplots(figsize=(5, 5))
for name, model in models.items():
    CalibrationDisplay.from_estimator(
        model, X_test, y_test, n_bins=5, strategy="quantile", name=name, ax=ax
    )
ax.set_title("Breast cancer, held-out third")
ax.legend(fontsize=7)

# %%
# Multiclass: top-label calibration
# ---------------------------------
# With ``K > 2`` classes a binary calibrator calibrates the top-label
# confidence ``max_k p_k`` against "the predicted class is right"; the
# calibrated value replaces the top entry and the other entries are rescaled
# so the row sums to 1. ``multiclass="top-label-by-class"`` fits one
# calibrator per predicted class (the predicted class is the cell of beta).
# :class:`~sklearn_betacal.TemperatureScaler` calibrates the whole logit
# matrix instead.
Xd, yd = load_digits(return_X_y=True)
Xd_fit, Xd_rest, yd_fit, yd_rest = train_test_split(
    Xd, yd, train_size=1 / 3, random_state=0
)
Xd_cal, Xd_test, yd_cal, yd_test = train_test_split(
    Xd_rest, yd_rest, train_size=0.5, random_state=0
)
digits = LogisticRegression(max_iter=5000).fit(Xd_fit, yd_fit)


def top_label_ece(model):
    P = model.predict_proba(Xd_test)
    correct = model.classes_[P.argmax(1)] == yd_test
    return expected_calibration_error(correct, P.max(1), n_bins=10)


frozen = FrozenEstimator(digits)
multiclass = {
    "uncalibrated": digits,
    "temperature (CalibratedClassifierCV)": CalibratedClassifierCV(
        frozen, method="temperature"
    ).fit(Xd_cal, yd_cal),
    "temperature (CalibratedClassifier)": CalibratedClassifier(
        frozen, TemperatureScaler()
    ).fit(Xd_cal, yd_cal),
    "UMD, top-label": CalibratedClassifier(
        frozen, UMDBinner(points_per_bin=30, random_state=0)
    ).fit(Xd_cal, yd_cal),
}
for name, model in multiclass.items():
    print(f"{name:38s} top-label ECE {top_label_ece(model):.3f}")

# %%
# CIFAR-10: top-label histogram binning per predicted class
# ---------------------------------------------------------
# The netcal records hold a WideResNet-16-4's softmax outputs on the CIFAR-10
# test set. A classifier whose input *is* its stored softmax row lets the
# wrapper calibrate them; half the rows calibrate, half measure. The records
# are not part of the package: this part is skipped when they are absent.


class StoredSoftmax(ClassifierMixin, BaseEstimator):
    """A 'classifier' whose input rows are its own stored softmax outputs."""

    def fit(self, X, y):
        self.classes_ = np.arange(np.asarray(X).shape[1])
        return self

    def predict_proba(self, X):
        return np.asarray(X, dtype=np.float64)

    def predict(self, X):
        return self.classes_[np.argmax(X, axis=1)]


data_folder = os.environ.get("BETACAL_SHARED_DATA")
record_path = None
if data_folder:
    record_path = Path(data_folder) / "cifar" / "wideresnet-16-4-cifar-10.npz"
if record_path is not None and record_path.exists():
    record = np.load(record_path)
    P = record["predictions"].astype(np.float64)
    labels = record["ground_truth"].astype(np.int64).ravel()
    order = np.random.default_rng(0).permutation(labels.size)
    cal, test = order[:5000], order[5000:]
    stored = FrozenEstimator(StoredSoftmax().fit(P, labels))
    by_class = CalibratedClassifier(
        stored,
        UMDBinner(points_per_bin=50, random_state=0),
        multiclass="top-label-by-class",
    ).fit(P[cal], labels[cal])
    Q = by_class.predict_proba(P[test])
    for name, M in [("uncalibrated", P[test]), ("UMD by predicted class", Q)]:
        ece = expected_calibration_error(
            M.argmax(1) == labels[test], M.max(1), n_bins=15
        )
        print(f"CIFAR-10 {name:24s} top-label ECE {ece:.3f}")
elif os.environ.get("CI", "").lower() == "true":
    raise FileNotFoundError(
        f"CIFAR-10 record {record_path} must be present under CI=true "
        "(set BETACAL_SHARED_DATA)"
    )
else:
    print("CIFAR-10 record not found: set BETACAL_SHARED_DATA to the data folder")

plt.show()
