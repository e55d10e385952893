# SPDX-License-Identifier: MIT
"""Speed of the cumulative calibration test against one ``np.argsort``.

For N rows (default 1e7; uniform confidences, Bernoulli labels as int64),
time in ONE process, interleaved round by round (each round runs every
method once, in the same order), medians over ``--runs`` rounds:

- ``np.argsort(p)``: the floor (goal: ECCE and its sigma <= 2x this);
- ``cumulative_calibration_error``: the ECCE alone, with validation;
- ``calibration_test``: ECCE, sigma and p-value (unweighted and weighted);
- ``calibration_test(cells=...)`` with ``--cells`` cells (default 1e5):
  the per-cell table with Holm's adjustment (goal: <= 3x the ECCE);
- ``smooth_calibration_error`` at N = 1e6 only (for reference).

Usage: ``python benchmarks/bench_calibration_tests.py [--n 1e7] [--runs 5]``
"""

import argparse

import numpy as np
from _measure import header, load_average, markdown_table, median_times

from sklearn_betacal.metrics import (
    calibration_test,
    cumulative_calibration_error,
)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e7)
    parser.add_argument("--cells", type=float, default=1e5)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    n, n_cells = int(args.n), int(args.cells)
    rng = np.random.default_rng(0)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(np.int64)
    w = rng.uniform(0.5, 1.5, size=n)
    groups = rng.integers(0, n_cells, size=n)

    methods = {
        "np.argsort(p) [floor]": lambda: np.argsort(p),
        "cumulative_calibration_error": lambda: cumulative_calibration_error(y, p),
        "calibration_test (ECCE + sigma + p)": lambda: calibration_test(y, p),
        "calibration_test weighted": lambda: calibration_test(y, p, sample_weight=w),
        f"calibration_test groups ({n_cells} cells)": lambda: calibration_test(
            y, p, cells=groups
        ),
    }
    print(header(prefix=""))
    med = median_times(methods, args.runs)
    floor = med["np.argsort(p) [floor]"]
    ecce = med["cumulative_calibration_error"]
    print(f"load average after: {load_average()}")
    print(f"N = {n:.0e}, medians of {args.runs} interleaved rounds\n")
    rows = [
        [name, f"{t:.3f}", f"{t / floor:.2f}", f"{t / ecce:.2f}"]
        for name, t in med.items()
    ]
    head = ["method", "median [s]", "/ argsort", "/ ECCE"]
    print("\n".join(markdown_table(head, rows, align="lrrr")))


if __name__ == "__main__":
    main()
