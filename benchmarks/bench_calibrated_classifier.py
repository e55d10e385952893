# SPDX-License-Identifier: MIT
"""CalibratedClassifier vs CalibratedClassifierCV on offline data sets.

For every data set and seed the rows are split 1/3 : 1/3 : 1/3 into fit
(the classifier), calibration (every calibrator, around a
``FrozenEstimator`` of the same fitted classifier) and test (every metric).
Compared, side by side in one process:

* ``CalibratedClassifierCV(method=...)``: sigmoid, isotonic, temperature;
* ``CalibratedClassifier(calibrator)``: UMDBinner, BetaBinningCalibrator
  over the model's own inputs (a kd-tree on ``PCA(2)`` of ``X``, fitted on
  the calibration rows), TemperatureScaler; multiclass sets use the default
  top-label reduction, plus UMD per predicted class.

Metrics on the test rows: top-label ECE (15 equal-width bins), beta-CE of
the top-label confidence over a partition that no calibrator sees (k-means
with 4 clusters on the standardised features, fitted on the fit rows; 10
bins per cell), multiclass Brier score (sum over classes, averaged over
rows), log-loss (probabilities clipped to [1e-6, 1]), and the calibration
fit and test predict times (median over seeds, milliseconds).

Data (all offline): scikit-learn's bundled breast_cancer and digits, a
``make_classification`` problem with a Gaussian naive Bayes model (badly
calibrated, and differently so in different regions), and, when present,
the CIFAR-10 WideResNet-16-4 softmax records (features = the softmax row).

Run::

    python benchmarks/bench_calibrated_classifier.py --out \
        benchmarks/results/calibrated_classifier.md
"""

import argparse
import os
import platform
import subprocess
import time
import warnings
from pathlib import Path

import numpy as np
import sklearn
from _measure import data_dir
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.cluster import KMeans
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.decomposition import PCA
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import sklearn_betacal
from sklearn_betacal import (
    BetaBinningCalibrator,
    CalibratedClassifier,
    KDTreePartitioner,
    TemperatureScaler,
    UMDBinner,
)
from sklearn_betacal.metrics import beta_calibration_error, expected_calibration_error

SHARED = data_dir(required=False) or Path("no data folder")


class StoredSoftmax(ClassifierMixin, BaseEstimator):
    """A classifier whose input rows are its own stored softmax outputs."""

    def fit(self, X, y):
        self.classes_ = np.arange(np.asarray(X).shape[1])
        return self

    def predict_proba(self, X):
        return np.asarray(X, dtype=np.float64)

    def predict(self, X):
        return self.classes_[np.argmax(X, axis=1)]


def datasets():
    """(name, X, y, unfitted classifier) for every offline data set."""
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast_cancer (569, 2 cl., HGB)", X, y, HistGradientBoostingClassifier()
    X, y = load_digits(return_X_y=True)
    yield (
        "digits (1797, 10 cl., logistic)",
        X,
        y,
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
    )
    X, y = make_classification(
        n_samples=15000,
        n_features=8,
        n_informative=5,
        n_redundant=2,
        n_clusters_per_class=3,
        random_state=0,
    )
    yield "make_classification (15000, 2 cl., GaussianNB)", X, y, GaussianNB()
    path = SHARED / "cifar" / "wideresnet-16-4-cifar-10.npz"
    if path.exists():
        rec = np.load(path)
        P = rec["predictions"].astype(np.float64)
        yield (
            "CIFAR-10 WRN-16-4 (10000, 10 cl., stored)",
            P,
            rec["ground_truth"].astype(np.int64).ravel(),
            StoredSoftmax(),
        )


def methods(n_classes, n_cal):
    """(name, unfitted calibrated model factory taking the frozen classifier)."""
    b = max(10, min(50, n_cal // 20))  # points per bin: >= 20 bins' worth of rows
    beta = BetaBinningCalibrator(
        KDTreePartitioner(max_depth=1), points_per_bin=b, random_state=0
    )
    out = [
        ("CCCV sigmoid", lambda f: CalibratedClassifierCV(f, method="sigmoid")),
        ("CCCV isotonic", lambda f: CalibratedClassifierCV(f, method="isotonic")),
        ("CCCV temperature", lambda f: CalibratedClassifierCV(f, method="temperature")),
        (
            f"ours UMD (b={b})",
            lambda f: CalibratedClassifier(
                f, UMDBinner(points_per_bin=b, random_state=0)
            ),
        ),
        (
            f"ours BB kd(PCA2) (b={b})",
            lambda f: CalibratedClassifier(
                f, beta, partition_features=PCA(n_components=2, random_state=0)
            ),
        ),
        ("ours temperature", lambda f: CalibratedClassifier(f, TemperatureScaler())),
    ]
    if n_classes > 2:
        out.append(
            (
                f"ours UMD by class (b={b})",
                lambda f: CalibratedClassifier(
                    f,
                    UMDBinner(points_per_bin=b, random_state=0),
                    multiclass="top-label-by-class",
                ),
            )
        )
    return out


def scores(P, y, classes, groups):
    idx = np.searchsorted(classes, y)
    top = P.argmax(1)
    conf = P.max(1)
    correct = top == idx
    onehot = np.zeros_like(P)
    onehot[np.arange(len(y)), idx] = 1.0
    return {
        "ECE": expected_calibration_error(correct, conf, n_bins=15),
        "beta-CE": beta_calibration_error(correct, conf, cells=groups, n_bins=10),
        "Brier": float(np.mean(np.sum((P - onehot) ** 2, axis=1))),
        "log-loss": float(
            -np.mean(np.log(np.clip(P[np.arange(len(y)), idx], 1e-6, 1.0)))
        ),
    }


def run(seeds):
    rows = []
    for name, X, y, clf in datasets():
        classes = np.unique(y)
        for seed in seeds:
            order = np.random.default_rng(seed).permutation(len(y))
            third = len(y) // 3
            fit, cal, test = order[:third], order[third : 2 * third], order[2 * third :]
            model = sklearn.base.clone(clf).fit(X[fit], y[fit])
            frozen = FrozenEstimator(model)
            scaler = StandardScaler().fit(X[fit])
            km = KMeans(4, n_init=3, random_state=seed).fit(scaler.transform(X[fit]))
            groups = km.predict(scaler.transform(X[test]))
            base = scores(model.predict_proba(X[test]), y[test], classes, groups)
            rows.append((name, "uncalibrated", seed, base, 0.0, 0.0))
            for mname, make in methods(len(classes), len(cal)):
                est = make(frozen)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t0 = time.perf_counter()
                    est.fit(X[cal], y[cal])
                    t1 = time.perf_counter()
                    P = est.predict_proba(X[test])
                    t2 = time.perf_counter()
                s = scores(P, y[test], classes, groups)
                rows.append((name, mname, seed, s, 1e3 * (t1 - t0), 1e3 * (t2 - t1)))
    return rows


def table(rows):
    lines = []
    names = list(dict.fromkeys(r[0] for r in rows))
    metrics = ["ECE", "beta-CE", "Brier", "log-loss"]
    for name in names:
        lines.append(f"\n### {name}\n")
        lines.append("| method | " + " | ".join(metrics) + " | fit ms | predict ms |")
        lines.append("|---" * (len(metrics) + 3) + "|")
        sub = [r for r in rows if r[0] == name]
        mnames = list(dict.fromkeys(r[1] for r in sub))
        means = {
            m: {k: np.mean([r[3][k] for r in sub if r[1] == m]) for k in metrics}
            for m in mnames
        }
        best = {
            k: min(v[k] for m, v in means.items() if m != "uncalibrated")
            for k in metrics
        }
        for m in mnames:
            mine = [r for r in sub if r[1] == m]
            cells = []
            for k in metrics:
                v = means[m][k]
                sd = np.std([r[3][k] for r in mine], ddof=1) if len(mine) > 1 else 0
                txt = f"{v:.4f} ± {sd:.4f}"
                if m != "uncalibrated" and v == best[k]:
                    txt = f"**{txt}**"
                cells.append(txt)
            fit_ms = np.median([r[4] for r in mine])
            pred_ms = np.median([r[5] for r in mine])
            timing = (
                ["", ""] if m == "uncalibrated" else [f"{fit_ms:.1f}", f"{pred_ms:.1f}"]
            )
            lines.append(f"| {m} | " + " | ".join(cells + timing) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    t0 = time.perf_counter()
    rows = run(range(args.seeds))
    body = table(rows)
    header = (
        "# CalibratedClassifier vs CalibratedClassifierCV\n\n"
        f"Produced by `benchmarks/bench_calibrated_classifier.py --seeds "
        f"{args.seeds}`, one process, total runtime "
        f"{(time.perf_counter() - t0) / 60:.1f} min.\n\n"
        f"- Machine: {os.cpu_count()} cores, {platform.machine()}; `uptime` at "
        f"start: {load}\n"
        f"- Versions: python {platform.python_version()}, numpy {np.__version__}, "
        f"scikit-learn {sklearn.__version__}, sklearn-betacal "
        f"{sklearn_betacal.__version__}\n"
        "- Mean ± standard deviation over seeds; bold = best calibrated method "
        "in the column. Fit = calibration fit around a `FrozenEstimator` "
        "(classifier already fitted); predict = `predict_proba` on the test "
        "third; medians over seeds.\n"
    )
    text = header + body + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
