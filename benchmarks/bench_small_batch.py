# SPDX-License-Identifier: MIT
"""Per-call time of small-batch ``predict_proba`` against isotonic regression.

A serving path asks for one answer (or a hundred) at a time. Each calibrator
(BB, S-BB and HLS with the default kd-tree on four partition features, fitted
on 5,000 synthetic rows) predicts 1 and 100 rows, interleaved in one process
with scikit-learn's ``IsotonicRegression.predict`` on the same rows; the
median of ``--repeat`` rounds of ``--calls`` calls each is reported, with the
ratio to isotonic regression. The goal is a ratio <= 2.

Usage (run it once per checkout to compare them)::

    PYTHONPATH=<checkout> python benchmarks/bench_small_batch.py
"""

import argparse
from pathlib import Path

import numpy as np
from _measure import header, load_average, markdown_row, markdown_table, median_times
from sklearn.isotonic import IsotonicRegression
from threadpoolctl import threadpool_limits

import sklearn_betacal
from sklearn_betacal import (
    BetaBinningCalibrator,
    HierarchicalLogisticScaler,
    KDTreePartitioner,
    ScalingBetaBinningCalibrator,
)


def calls_of(f, calls):
    """``f`` called ``calls`` times: one timed round of the harness."""

    def run():
        for _ in range(calls):
            f()

    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = 5000
    X = np.column_stack([rng.uniform(0.01, 0.99, size=n), rng.normal(size=(n, 4))])
    y = (rng.uniform(size=n) < X[:, 0] ** (1 + (X[:, 1] > 0))).astype(int)
    models = {
        "BB": BetaBinningCalibrator(KDTreePartitioner(), random_state=0),
        "S-BB": ScalingBetaBinningCalibrator(KDTreePartitioner(), random_state=0),
        "HLS": HierarchicalLogisticScaler(KDTreePartitioner(), random_state=0),
    }
    for est in models.values():
        est.fit(X, y)
    iso = IsotonicRegression(out_of_bounds="clip").fit(X[:, 0], y)
    print(header(prefix=""))
    print(f"sklearn_betacal from {Path(sklearn_betacal.__file__).parent}\n")
    head = [
        "calibrator",
        "rows",
        "predict_proba (us/call)",
        "isotonic (us/call)",
        "ratio",
    ]
    print("\n".join(markdown_table(head, align="lrrrr")))
    # new answers (a serving path), and rows of the fit, whose confidences sit
    # on the bin edges (the edges are fitted confidences): those take the
    # edge-averaging path of the binning kernel
    fresh = np.column_stack(
        [rng.uniform(0.01, 0.99, size=100), rng.normal(size=(100, 4))]
    )
    for source, rows in (("new", 1), ("new", 100), ("fit", 1), ("fit", 100)):
        pool = fresh if source == "new" else X
        batch = pool[rng.choice(pool.shape[0], size=rows, replace=False)]
        h = batch[:, 0].copy()
        for name, est in models.items():
            med = median_times(
                {
                    "ours": calls_of(
                        lambda e=est, b=batch: e.predict_proba(b), args.calls
                    ),
                    "isotonic": calls_of(lambda h=h: iso.predict(h), args.calls),
                },
                args.repeat,
            )
            a, b = (1e6 * med[k] / args.calls for k in ("ours", "isotonic"))
            row = [name, f"{rows} {source}", f"{a:.0f}", f"{b:.0f}", f"{a / b:.2f}"]
            print(markdown_row(row), flush=True)
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    with threadpool_limits(1):
        main()
