# SPDX-License-Identifier: MIT
"""Scale of beta-binning (BB, S-BB): speed and memory against NumPy floors.

Everything a sub-command reports is measured in ONE process, side by side,
so the ratios are meaningful on a shared machine (say how loaded it was:
the script prints ``os.getloadavg()`` before every table).

``predict`` -- BB and S-BB (``scaler="pooled"``) fitted on each of
``--fit-rows`` rows with a ``KDTreePartitioner(max_depth=3)`` on d = 4 Gaussian features
(8 cells) and ``--points-per-bin`` b, then ``predict_proba`` on N new rows,
against the floor: ONE ``np.searchsorted`` of the same N confidences into
199 edges (200 bins). With the defaults (20,000 rows, b = 100) the root
table has 200 bins, like the floor, and every cell about 25; with 100,000
rows and b = 50 the root has 2,000. ``--fit-rows 1e4 1e6 1e7
--points-per-bin 50`` sweeps the root table over 200, 20,000 and 200,000
bins; a summary table ends the run (ratio against the number of bins and
of predicted rows). Goal: ``predict_proba`` <= 2x the floor for models
fitted on 1e4, 1e5 and 1e6 rows, at N = 1e6 and 1e7.

``fit`` -- BB with a ``GroupColumnPartitioner`` on 1e5 groups of 10 rows
(N = 1e6, ``points_per_bin=5``: two bins per cell), against
``UMDBinner(points_per_bin=5).fit`` on the same confidences and labels.
Goal: BB fit <= 2x the UMDBinner fit.

``memory`` -- tracemalloc peak of the extra memory (NumPy allocations above
what was allocated before the call, the returned array excluded for
predict) per row, at N rows: BB fit and ``predict_proba``, S-BB fit and
``predict_proba``, ``KDTreePartitioner.fit``, on ``--d`` partition
features. Goals at 1e7 (d = 4): <= 32 B/row BB fit, <= 16 B/row predict,
<= 32 B/row kd-tree fit; with d = 384 (3,080 B/row of input): BB fit with
the kd-tree <= 128 B/row beyond the input.

Usage::

    python benchmarks/bench_beta_binning.py predict [--sizes 1e6 1e7] [--repeats 5]
        [--fit-rows 1e4 1e5 1e6] [--points-per-bin 50]
    python benchmarks/bench_beta_binning.py fit [--groups 100000] [--rows 10]
    python benchmarks/bench_beta_binning.py memory [--n 1e7] [--d 4]
"""

import argparse
import os
import platform
import sys

import numpy as np
import scipy
import sklearn
from _measure import markdown_row, markdown_table, median_times, peak_bytes
from sklearn.frozen import FrozenEstimator

import sklearn_betacal
from sklearn_betacal import (
    BetaBinningCalibrator,
    GroupColumnPartitioner,
    KDTreePartitioner,
    ScalingBetaBinningCalibrator,
    UMDBinner,
)


def in_blocks(n, fn):
    """Call ``fn(lo, hi)`` on the estimators' prediction blocks of ``n`` rows."""
    from sklearn_betacal._base import PREDICT_BLOCK_ROWS

    def run():
        for lo in range(0, n, PREDICT_BLOCK_ROWS):
            fn(lo, min(lo + PREDICT_BLOCK_ROWS, n))

    return run


def header():
    print(
        f"# python {platform.python_version()}, numpy {np.__version__}, "
        f"scipy {scipy.__version__}, scikit-learn {sklearn.__version__}, "
        f"sklearn_betacal {sklearn_betacal.__version__}; {platform.machine()}, "
        f"nproc {os.cpu_count()}"
    )


def load():
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def simulate(n, d, rng):
    """Confidences, d Gaussian features and labels whose calibration varies."""
    F = rng.standard_normal((n, d))
    h = rng.uniform(size=n)
    power = np.where(F[:, 0] > 0, 2.0, 0.5)
    y = (rng.uniform(size=n) < h**power).astype(np.float64)
    return np.column_stack([h, F]), y


def binning_only(model, x, cells):
    """BB's binning (routing, lookup, gather) of given cells, block by block."""

    def run():
        predict = model._binning_predictor()  # prepared once per call
        in_blocks(x.shape[0], lambda lo, hi: predict(x[lo:hi], cells[lo:hi]))()

    return run


def cmd_predict(args):
    b = args.points_per_bin
    part = KDTreePartitioner(max_depth=3)
    fitted = {}
    for fit_rows in args.fit_rows:
        X_fit, y_fit = simulate(fit_rows, 4, np.random.default_rng(0))
        fitted[fit_rows] = {
            "BB": BetaBinningCalibrator(part, points_per_bin=b, random_state=0),
            "S-BB": ScalingBetaBinningCalibrator(
                part, points_per_bin=b, scaler="pooled", random_state=0
            ),
        }
        for m in fitted[fit_rows].values():
            m.fit(X_fit, y_fit)
        del X_fit, y_fit
    edges = np.sort(np.random.default_rng(0).uniform(size=199))
    summary = []
    for n in [int(s) for s in args.sizes]:
        X, _ = simulate(n, 4, np.random.default_rng(1))
        x = np.ascontiguousarray(X[:, 0])
        for fit_rows, models in fitted.items():
            bb = models["BB"]
            bins = bb.root_.values.shape[0]
            print(
                f"\n## predict, N = {n:.0e}, fitted on {fit_rows:.0e} rows, b = {b}, "
                f"root table {bins} bins ({load()})\n"
            )
            fns = {
                "floor: np.searchsorted(199 edges)": lambda x=x: np.searchsorted(
                    edges, x, side="right"
                )
            }
            for name, m in models.items():
                fns[f"{name}.predict_proba"] = lambda m=m, X=X: m.predict_proba(X)
            Z = X[:, 1:]
            # what bounds BB.predict_proba: its parts, each over the same blocks
            fns["BB part: validate X + confidence check"] = lambda bb=bb, X=X: [
                bb._split_block(X, Xa, 0, Xa.shape[0])
                for Xa in [bb._validate_X(X, reset=False)]
            ]
            fns["BB part: partitioner transform (blocks)"] = in_blocks(
                n, lambda lo, hi, bb=bb, Z=Z: bb.partitioner_.transform(Z[lo:hi])
            )
            cells = bb.apply(X)
            fns["BB part: binning of given cells (blocks)"] = binning_only(bb, x, cells)
            res = median_times(fns, args.repeats)
            del cells
            floor = res["floor: np.searchsorted(199 edges)"]
            print(_ratio_table(res, floor, "x floor"))
            print(f"\n({load()} after)")
            summary.append(
                (
                    fit_rows,
                    bins,
                    n,
                    res["BB.predict_proba"] / floor,
                    res["S-BB.predict_proba"] / floor,
                )
            )
        del X, x
    print(f"\n## summary: predict_proba / floor (goal <= 2), b = {b}\n")
    rows = [
        [f"{fit_rows:.0e}", bins, f"{n:.0e}", f"{r_bb:.2f}", f"{r_sbb:.2f}"]
        for fit_rows, bins, n, r_bb, r_sbb in summary
    ]
    head = ["fitted on rows", "root bins", "predicted rows", "BB", "S-BB"]
    print("\n".join(markdown_table(head, rows, align="rrrrr")))


def _ratio_table(res, base, ratio):
    """The median seconds of each step and its ratio to ``base``."""
    rows = [[name, f"{sec:.4f}", f"{sec / base:.2f}"] for name, sec in res.items()]
    return "\n".join(markdown_table(["step", "median s", ratio], rows, align="lrr"))


def cmd_fit(args):
    rng = np.random.default_rng(0)
    g, r = args.groups, args.rows
    n = g * r
    group = np.repeat(np.arange(g), r)
    rng.shuffle(group)
    h = rng.uniform(size=n)
    y = (rng.uniform(size=n) < h**2).astype(np.float64)
    X = np.column_stack([h, group])
    b = args.points_per_bin
    print(f"\n## fit, {g} groups x {r} rows, b = {b} ({load()})\n")
    frozen = FrozenEstimator(GroupColumnPartitioner().fit(X[:, 1:]))
    bb = BetaBinningCalibrator(frozen, points_per_bin=b, random_state=0).fit(X, y)
    umd = UMDBinner(points_per_bin=b, random_state=0).fit(h, y)
    res = median_times(
        {
            "UMDBinner(points_per_bin=b).fit": lambda: UMDBinner(
                points_per_bin=b, random_state=0
            ).fit(h, y),
            "BetaBinningCalibrator(GroupColumnPartitioner()).fit": lambda: (
                BetaBinningCalibrator(
                    GroupColumnPartitioner(), points_per_bin=b, random_state=0
                ).fit(X, y)
            ),
            "BetaBinningCalibrator(FrozenEstimator(fitted)).fit": lambda: (
                BetaBinningCalibrator(frozen, points_per_bin=b, random_state=0).fit(
                    X, y
                )
            ),
            "part: GroupColumnPartitioner.transform (same rows)": lambda: (
                frozen.transform(X[:, 1:])
            ),
            "BetaBinningCalibrator.predict_proba (same rows)": lambda: bb.predict_proba(
                X
            ),
            "UMDBinner.predict_proba (same rows)": lambda: umd.predict_proba(h),
        },
        args.repeats,
    )
    print(_ratio_table(res, res["UMDBinner(points_per_bin=b).fit"], "x UMDBinner.fit"))
    print(f"\n({load()} after)")


def cmd_memory(args):
    n = int(args.n)
    rng = np.random.default_rng(0)
    X, y = simulate(n, args.d, rng)
    print(
        f"\n## memory, N = {n:.0e}, X float64 (N, {args.d + 1}), "
        f"{X.nbytes / n:.0f} B/row of input ({load()})\n"
    )
    # the default kd-tree (depth 4) and the first fit's one-off costs, once
    # outside the measurement
    BetaBinningCalibrator(random_state=0).fit(X, y)
    head = ["call", "peak extra B/row", "of which output B/row"]
    print("\n".join(markdown_table(head, align="lrr")))
    part = KDTreePartitioner(max_depth=3)
    tree, peak = peak_bytes(lambda: KDTreePartitioner(max_depth=3).fit(X[:, 1:]))
    print(
        markdown_row(
            [f"KDTreePartitioner(max_depth=3).fit (N, {args.d})", f"{peak / n:.2f}", 0]
        )
    )
    frozen = FrozenEstimator(tree)
    for name, make in {
        "BB(default kd-tree)": lambda: BetaBinningCalibrator(random_state=0),
        "BB(kd-tree depth 3)": lambda: BetaBinningCalibrator(
            part, points_per_bin=50, random_state=0
        ),
        "BB(frozen kd-tree)": lambda: BetaBinningCalibrator(
            frozen, points_per_bin=50, random_state=0
        ),
        "S-BB pooled (frozen kd-tree)": lambda: ScalingBetaBinningCalibrator(
            frozen, points_per_bin=50, scaler="pooled", random_state=0
        ),
    }.items():
        model, peak = peak_bytes(lambda make=make: make().fit(X, y))
        print(markdown_row([f"{name}.fit", f"{peak / n:.2f}", 0]))
        out, peak = peak_bytes(lambda model=model: model.predict_proba(X))
        print(
            markdown_row(
                [f"{name}.predict_proba", f"{peak / n:.2f}", f"{out.nbytes / n:.0f}"]
            )
        )
        del out
    print(f"\n({load()} after)")


def main():
    sys.stdout.reconfigure(line_buffering=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict")
    p.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument(
        "--fit-rows", type=lambda v: int(float(v)), nargs="+", default=[20_000]
    )
    p.add_argument("--points-per-bin", type=int, default=100)
    p = sub.add_parser("fit")
    p.add_argument("--groups", type=int, default=100_000)
    p.add_argument("--rows", type=int, default=10)
    p.add_argument("--points-per-bin", type=int, default=5)
    p.add_argument("--repeats", type=int, default=5)
    p = sub.add_parser("memory")
    p.add_argument("--n", type=float, default=1e7)
    p.add_argument("--d", type=int, default=4, help="partition features")
    args = parser.parse_args()
    header()
    {"predict": cmd_predict, "fit": cmd_fit, "memory": cmd_memory}[args.cmd](args)


if __name__ == "__main__":
    main()
