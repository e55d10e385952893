# SPDX-License-Identifier: MIT
"""Speed of ``expected_calibration_error`` against a NumPy floor and peers.

For N = 1e6 and 1e7 rows (uniform confidences, Bernoulli labels, int64
labels, float64 confidences and weights), time in ONE Python process:

- ``numpy floor``: one ``np.bincount(idx, weights=w, minlength=10)`` over N
  rows with the bin index precomputed -- the least any weighted binned
  statistic over N rows costs (the target: our ECE <= 3x this);
- ``ece``: :func:`sklearn_betacal.metrics.expected_calibration_error`,
  unweighted and weighted, with full input validation;
- ``ece l2`` and ``ece quantile``: the other norm / binning paths;
- ``kernel only``: the blocked bincount kernel without input validation
  (what the checks cost is the difference to ``ece (unweighted)``);
- ``sklearn calibration_curve``: scikit-learn's per-bin accuracy and
  confidence (not an ECE, but the nearest built-in);
- ``uncertainty-calibration get_ece``: Kumar et al.'s peer (plug-in ECE,
  equal-width bins) -- its value is also compared with ours;
- ``netcal ECE``: when ``netcal`` is importable (it pulls torch).

Reports medians of ``--runs`` (default 7, at least 5) runs and the ratio to
the NumPy floor. Peers that take seconds per call at 1e7 run
``--slow-runs`` times (default 5).

Usage: ``python benchmarks/bench_metrics.py [--runs 7] [--sizes 1e6 1e7]``
"""

import argparse

import numpy as np
from _measure import header, markdown_table, median_time
from sklearn.calibration import calibration_curve

from sklearn_betacal._kernels._calibration import uniform_gap_sums
from sklearn_betacal.metrics import expected_calibration_error


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--slow-runs", type=int, default=5)
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7])
    args = parser.parse_args()
    runs = max(args.runs, 5)

    peers = {}
    try:
        import calibration

        peers["uncertainty-calibration"] = calibration
    except ImportError:
        pass
    try:
        from netcal.metrics import ECE

        peers["netcal"] = ECE
    except ImportError:
        pass

    print(header("uncertainty-calibration", "netcal", prefix=""))
    print(f"medians of {runs} runs (slow peers: {args.slow_runs}); n_bins=10\n")

    for size in args.sizes:
        _bench_size(int(size), runs, args.slow_runs, peers)


def _bench_size(n, runs, slow_runs, peers):
    rng = np.random.default_rng(0)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(np.int64)
    w = rng.uniform(size=n)
    idx = np.minimum((p * 10).astype(np.intp), 9)

    rows = []
    floor = median_time(lambda: np.bincount(idx, weights=w, minlength=10), runs)
    rows.append(("numpy floor: bincount(idx, weights=w)", floor, None))
    cases = [
        ("ece (unweighted)", lambda: expected_calibration_error(y, p)),
        (
            "ece (weighted)",
            lambda: expected_calibration_error(y, p, sample_weight=w),
        ),
        (
            "ece norm='l2' (weighted)",
            lambda: expected_calibration_error(y, p, sample_weight=w, norm="l2"),
        ),
        (
            "ece strategy='quantile'",
            lambda: expected_calibration_error(y, p, strategy="quantile"),
        ),
        (
            "kernel only: uniform_gap_sums (no validation)",
            lambda: uniform_gap_sums(p, y, None, 10),
        ),
        ("sklearn calibration_curve", lambda: calibration_curve(y, p, n_bins=10)),
    ]
    for name, func in cases:
        rows.append((name, median_time(func, runs), None))
    ours = expected_calibration_error(y, p)
    if "uncertainty-calibration" in peers:
        cal = peers["uncertainty-calibration"]
        value = cal.get_ece(p, y, num_bins=10)
        t = median_time(lambda: cal.get_ece(p, y, num_bins=10), slow_runs)
        rows.append(("uncertainty-calibration get_ece", t, abs(value - ours)))
    if "netcal" in peers:
        ece_obj = peers["netcal"](bins=10)
        value = ece_obj.measure(p, y)
        t = median_time(lambda: ece_obj.measure(p, y), slow_runs)
        rows.append(("netcal ECE.measure", t, abs(value - ours)))

    print(f"### N = {n:.0e}\n")
    cells = [
        [name, f"{t * 1e3:.2f}", f"{t / floor:.2f}", "" if d is None else f"{d:.1e}"]
        for name, t, d in rows
    ]
    head = ["method", "median [ms]", "ratio to floor", "abs diff of ECE to ours"]
    print("\n".join(markdown_table(head, cells, align="lrrr")))
    print()


if __name__ == "__main__":
    main()
