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

``--cli`` times the command line instead: N rows (a confidence and an
integer group column) written as ``--files`` Parquet files, a BB model
fitted by ``betacal fit`` on 100,000 labelled rows, then ``betacal apply
MODEL 'DIR/*.parquet' OUT/`` against its I/O floor in the same process
(the same files read as a dask DataFrame and written back, one Parquet file
per partition, without the calibration), interleaved, the second of two
runs each::

    python benchmarks/bench_dask_scale.py --cli --sizes 1e6 1e7 [--files 8]
"""

import argparse
import os
import platform
import time

import numpy as np
from threadpoolctl import threadpool_limits

import sklearn_betacal
from sklearn_betacal import BetaBinningCalibrator, KDTreePartitioner


def rows(n, chunk, seed):
    """``(n, 5)``: a confidence in [0, 1] and 4 Gaussian features, lazily."""
    import dask.array as da

    rs = da.random.RandomState(seed)
    h = rs.uniform(size=(n, 1), chunks=(chunk, 1))
    F = rs.standard_normal(size=(n, 4), chunks=(chunk, 4))
    return da.concatenate([h, F], axis=1)


def _timed(func):
    t0, c0 = time.perf_counter(), time.process_time()
    func()
    return time.perf_counter() - t0, time.process_time() - c0


def _write_part(frame, folder, i):
    frame.to_parquet(folder / f"part.{i}.parquet", index=False)


def cli(sizes, n_files):
    """``betacal apply`` on a set of Parquet files against its I/O floor."""
    import tempfile
    from pathlib import Path

    import dask
    import dask.dataframe as dd
    import pandas as pd

    from sklearn_betacal.cli import main as betacal

    print(
        f"# python {platform.python_version()}, numpy {np.__version__}, dask "
        f"{dask.__version__}, sklearn_betacal {sklearn_betacal.__version__}; "
        f"nproc {os.cpu_count()}; dask's default (threaded) scheduler"
    )
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        g = rng.integers(0, 12, 100_000)
        h = rng.uniform(size=100_000)
        y = rng.uniform(size=100_000) < h ** (0.5 + g / 8)
        pd.DataFrame({"conf": h, "ok": y.astype(int), "grp": g}).to_csv(
            tmp / "train.csv", index=False
        )
        model = tmp / "bb.skops"
        argv = ["fit", str(tmp / "train.csv"), "--confidence", "conf", "--label",
                "ok", "--group", "grp", "--method", "bb", "--points-per-bin",
                "50", "--output", str(model)]  # fmt: skip
        assert betacal(argv) == 0
        print(
            "\n| N | files | I/O floor wall s (CPU) | betacal apply wall s (CPU) "
            "| rows/s | calibration share wall s | load before -> after |"
        )
        print("|---:|---:|---:|---:|---:|---:|---|")
        for n in [int(x) for x in sizes]:
            src = tmp / f"in{n}"
            src.mkdir()
            per = -(-n // n_files)
            for i in range(n_files):
                m = min(per, n - i * per)
                pd.DataFrame(
                    {"conf": rng.uniform(size=m), "grp": rng.integers(0, 12, m)}
                ).to_parquet(src / f"part-{i}.parquet")
            load0 = os.getloadavg()[0]
            floor_out = tmp / f"floor{n}"
            floor_out.mkdir()

            def floor(src=src, out=floor_out):
                parts = dd.read_parquet(str(src / "*.parquet")).to_delayed()
                write = dask.delayed(_write_part)
                dask.compute(*[write(p, out, i) for i, p in enumerate(parts)])

            out = tmp / f"out{n}"
            argv = ["apply", str(model), str(src / "*.parquet"), str(out), "--force"]
            # interleaved twice, the second of each reported (warm imports,
            # file cache)
            for _ in range(2):
                w_f, c_f = _timed(floor)
                w_a, c_a = _timed(lambda argv=argv: betacal(argv))
            print(
                f"| {n:.0e} | {n_files} | {w_f:.1f} ({c_f:.1f}) | {w_a:.1f} "
                f"({c_a:.1f}) | {n / w_a:,.0f} | {w_a - w_f:.1f} | "
                f"{load0:.1f} -> {os.getloadavg()[0]:.1f} |",
                flush=True,
            )
            for d in (src, floor_out, out):
                for f in d.iterdir():
                    f.unlink()
                d.rmdir()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e7, 1e8])
    parser.add_argument("--chunk", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cli", action="store_true")
    parser.add_argument("--files", type=int, default=8)
    args = parser.parse_args()
    # dask is an optional peer: imported once the arguments are read
    import dask

    from sklearn_betacal.dask import predict_proba

    if args.cli:
        cli(args.sizes, args.files)
        return
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
