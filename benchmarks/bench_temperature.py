# SPDX-License-Identifier: MIT
"""Benchmark: TemperatureScaler fit against scikit-learn, netcal and a NumPy floor.

All contenders run side by side in one process on the same data; each time is
the median of ``--repeat`` (>= 5) runs after one warm-up run. Printed as a
Markdown table, the form recorded in ``benchmarks/results/temperature.md``.

Goals (issue 3): at N = 1e6 and 1e7 binary scores, our fit <= 12x one
``np.logaddexp(0, s)`` pass (the "floor") and >= 3x faster than both
``CalibratedClassifierCV(method="temperature")`` and netcal's
``TemperatureScaling``; multiclass (N = 1e5, K = 100) >= 3x faster than
scikit-learn.

Run from the repository root::

    .venv/bin/python benchmarks/bench_temperature.py            # full
    .venv/bin/python benchmarks/bench_temperature.py --quick    # N = 1e5 only
"""

import argparse
import warnings

import numpy as np
from _measure import header, median_times
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator

from sklearn_betacal import TemperatureScaler
from sklearn_betacal._kernels import _scaling

try:  # netcal pulls torch; the benchmark says so when it is missing
    import torch
    from netcal.scaling import TemperatureScaling as NetcalTemperature
except ImportError as exc:  # pragma: no cover
    NetcalTemperature = None
    NETCAL_MISSING = str(exc)


class StoredScores(ClassifierMixin, BaseEstimator):
    """A 'model' whose decision_function returns the stored scores (X itself)."""

    def fit(self, X, y):
        self.classes_ = np.unique(y) if X.ndim == 1 else np.arange(X.shape[1])
        return self

    def decision_function(self, X):
        return X

    def predict(self, X):
        return (X > 0).astype(int) if X.ndim == 1 else X.argmax(axis=1)


def timed_row(row, fns, netcal, repeat):
    """Add the contenders' interleaved medians and fitted temperatures to ``row``.

    ``netcal`` joins the contenders when netcal is installed. The fitted
    values come from the warm-up round (imports, first-touch of memory,
    torch init), which is not timed; they are returned too.
    """
    if NetcalTemperature is not None:
        fns = {**fns, "netcal": netcal}
    outs = {name: fn() for name, fn in fns.items()}
    row.update(median_times(fns, repeat))
    row["tau"], row["tau_sklearn"] = outs["ours"], outs["sklearn"]
    row["tau_netcal"] = outs.get("netcal", float("nan"))
    return outs


def sklearn_tau(X, y, binary):
    clf = FrozenEstimator(StoredScores().fit(X, y))
    cal = CalibratedClassifierCV(clf, method="temperature").fit(X, y)
    beta = float(cal.calibrated_classifiers_[0].calibrators[0].beta_)
    # a 1-D decision_function s becomes logits (-s, s): sigma(2 beta s)
    return 1.0 / (2.0 * beta) if binary else 1.0 / beta


def netcal_tau(P, y):
    ts = NetcalTemperature()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts.fit(P, y)
    return 1.0 / float(np.ravel(ts.temperature)[0])  # netcal stores 1/T


def ours_tau(X, y):
    return TemperatureScaler(input="logit").fit(X, y).temperature_


def kernel_tau(s, y):
    t = _scaling.binary_margins(s, y)
    beta, _, _ = _scaling.fit_inverse_temperature_binary(t, None, 0.05, 20.0)
    return 1.0 / beta


def binary_row(n, repeat, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.normal(scale=3.0, size=n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-s / 2.0))).astype(np.int64)
    row = {"case": f"binary N={n:.0e}"}
    p = 1.0 / (1.0 + np.exp(-s))
    fns = {
        "floor": lambda: np.logaddexp(0.0, s),
        "ours": lambda: ours_tau(s, y),
        "kernel": lambda: kernel_tau(s, y.astype(float)),
        "sklearn": lambda: sklearn_tau(s, y, True),
    }
    tau = timed_row(row, fns, lambda: netcal_tau(p, y), repeat)
    assert tau["ours"] == tau["kernel"]
    return row


def multiclass_row(n, k, repeat, seed=1):
    rng = np.random.default_rng(seed)
    Z = rng.normal(scale=3.0, size=(n, k))
    P = np.exp(Z / 2.0)
    P /= P.sum(axis=1, keepdims=True)
    y = (P.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    row = {"case": f"multiclass N={n:.0e} K={k}"}
    Pz = np.exp(Z - Z.max(axis=1, keepdims=True))
    Pz /= Pz.sum(axis=1, keepdims=True)
    fns = {
        "floor": lambda: np.exp(Z),
        "ours": lambda: ours_tau(Z, y),
        "sklearn": lambda: sklearn_tau(Z, y, False),
    }
    timed_row(row, fns, lambda: netcal_tau(Pz, y), repeat)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.repeat < 5 and not args.quick:
        parser.error("--repeat must be >= 5 for recorded results")

    print(header("netcal", "torch", prefix=""))
    if NetcalTemperature is not None:
        print(f"torch threads {torch.get_num_threads()}")
    else:
        print(f"netcal NOT installed ({NETCAL_MISSING})")
    print(f"medians of {args.repeat} interleaved rounds after 1 warm-up, seconds\n")

    sizes = [10**5] if args.quick else [10**6, 10**7]
    rows = [binary_row(n, args.repeat) for n in sizes]
    rows.append(multiclass_row(10**4 if args.quick else 10**5, 100, args.repeat))

    print(
        "| case | floor | ours (fit) | kernel only | sklearn | netcal | "
        "ours/floor | sklearn/ours | netcal/ours | tau ours | tau sklearn | "
        "tau netcal |"
    )
    print("|" + "---|" * 12)
    for r in rows:
        net = r.get("netcal", float("nan"))
        print(
            f"| {r['case']} | {r['floor']:.4f} | {r['ours']:.4f} | "
            f"{r.get('kernel', float('nan')):.4f} | {r['sklearn']:.4f} | "
            f"{net:.4f} | {r['ours'] / r['floor']:.1f}x | "
            f"{r['sklearn'] / r['ours']:.1f}x | {net / r['ours']:.1f}x | "
            f"{r['tau']:.8f} | {r['tau_sklearn']:.8f} | "
            f"{r.get('tau_netcal', float('nan')):.6f} |"
        )
    print(
        "\nfloor: one np.logaddexp(0, s) pass (binary) or one np.exp(Z) pass "
        "(multiclass). sklearn: CalibratedClassifierCV(FrozenEstimator(stored "
        "scores), method='temperature').fit. netcal: TemperatureScaling().fit on "
        "sigma(s) / softmax(Z) (its default 'mle' method)."
    )


if __name__ == "__main__":
    main()
