# SPDX-License-Identifier: MIT
"""Scoring many rows with a calibrator fitted on one machine, through dask.

A ``BetaBinningCalibrator`` (kd-tree beta of depth 3 on d = 4 features,
fitted on 100,000 rows in memory) scores N rows of a dask Array that is
generated block by block (``dask.array.random``, blocks of ``--chunk``
rows), so no N-sized array ever exists: ``sklearn_betacal.dask.
predict_proba`` maps the estimator over the blocks and the calibrated
confidences are reduced to their mean (a stand-in for writing them out).
Timed against the same pipeline without the calibrator (generating every
column and reducing the row sums), with dask's threaded scheduler on ``--workers`` threads,
one BLAS thread each. Prints rows per second and the extrapolation to
1e9 rows. Usage::

    python benchmarks/bench_dask_scale.py --sizes 1e7 1e8 [--workers 2]
"""

import argparse
import os
import platform
import time

import dask
import dask.array as da
import numpy as np
from threadpoolctl import threadpool_limits

import sklearn_betacal
from sklearn_betacal import BetaBinningCalibrator, KDTreePartitioner
from sklearn_betacal.dask import predict_proba


def rows(n, chunk, seed):
    """``(n, 5)``: a confidence in [0, 1] and 4 Gaussian features, lazily."""
    rs = da.random.RandomState(seed)
    h = rs.uniform(size=(n, 1), chunks=(chunk, 1))
    F = rs.standard_normal(size=(n, 4), chunks=(chunk, 4))
    return da.concatenate([h, F], axis=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e7, 1e8])
    parser.add_argument("--chunk", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    print(
        f"# python {platform.python_version()}, numpy {np.__version__}, dask "
        f"{dask.__version__}, sklearn_betacal {sklearn_betacal.__version__}; "
        f"nproc {os.cpu_count()}; threaded scheduler, {args.workers} workers, "
        f"blocks of {args.chunk} rows"
    )
    rng = np.random.default_rng(0)
    X_fit = np.column_stack(
        [rng.uniform(size=100_000), rng.standard_normal((100_000, 4))]
    )
    y_fit = rng.uniform(size=100_000) < X_fit[:, 0] ** np.where(X_fit[:, 1] > 0, 2, 0.5)
    bb = BetaBinningCalibrator(
        KDTreePartitioner(max_depth=3), points_per_bin=50, random_state=0
    ).fit(X_fit, y_fit)
    print(
        "\n| N | generate + reduce (s) | + BB.predict_proba (s) | rows/s with BB | "
        "BB share (s) | load before -> after |"
    )
    print("|---:|---:|---:|---:|---:|---|")
    with (
        threadpool_limits(1),
        dask.config.set(scheduler="threads", num_workers=args.workers),
    ):
        for n in [int(s) for s in args.sizes]:
            load0 = os.getloadavg()[0]
            X = rows(n, args.chunk, 1)
            t0 = time.perf_counter()
            X.sum(axis=1).mean().compute()  # every column generated
            t_floor = time.perf_counter() - t0
            t0 = time.perf_counter()
            predict_proba(bb, X)[:, 1].mean().compute()
            t_bb = time.perf_counter() - t0
            print(
                f"| {n:.0e} | {t_floor:.1f} | {t_bb:.1f} | {n / t_bb:,.0f} | "
                f"{t_bb - t_floor:.1f} | {load0:.1f} -> {os.getloadavg()[0]:.1f} |",
                flush=True,
            )
    print(
        f"\nExtrapolated to 1e9 rows at the largest N's rate: {1e9 / (n / t_bb) / 60:.0f} min "
        f"on {args.workers} threads of this machine"
    )


if __name__ == "__main__":
    main()
