# SPDX-License-Identifier: MIT
"""``betacal report`` out of core: a Parquet set against dask's read+sum.

N rows (a float64 confidence, a bool label, an int32 group of 1,000 values;
groups 0-49 overconfident) are written as Parquet files of ``--file-rows``
rows into ``--dir``. In one process, on one ``distributed.LocalCluster``
(``processes=False``, ``--workers`` threads), interleaved:

- ``read+sum``: the same three columns read by ``dask.dataframe`` and summed
  (the I/O floor of any report);
- ``report``: :func:`sklearn_betacal.dask.calibration_statistics` and the
  report from them (every number of ``betacal report --group``). With
  ``--kind verbal`` (confidences stated to 0.01, as LLMs state them) one
  pass with the value table; with ``--kind continuous`` dask sorts the rows
  by confidence first;
- ``in memory`` (up to ``--in-memory-max`` rows): the files read into pandas
  and the in-memory report (``compute_report``).

Peak memory is the process's resident set, sampled every 20 ms during each
phase (the cluster runs in this process). ``--drift`` instead simulates the
drift test's size (no drift) and power (a planted shift in one group).
Usage::

    python benchmarks/bench_report_outofcore.py --sizes 1e6 1e7
    python benchmarks/bench_report_outofcore.py --drift
"""

import argparse
import shutil
import threading
import time
from pathlib import Path

import numpy as np
from _measure import RESULTS, header, load_average, markdown_table

N_GROUPS = 1000


def _rss_mb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class PeakRSS:
    """The largest resident set of this process while the block runs."""

    def __enter__(self):
        self.peak = _rss_mb()
        self._stop = threading.Event()

        def sample():
            while not self._stop.wait(0.02):
                self.peak = max(self.peak, _rss_mb())

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_mb())


def generate(folder, n, file_rows, seed=0, kind="verbal"):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    files = []
    for i, start in enumerate(range(0, n, file_rows)):
        m = min(file_rows, n - start)
        p = rng.beta(2.0, 1.0, size=m)
        if kind == "verbal":  # stated confidences: 0.00, 0.01, ..., 1.00
            p = np.round(p, 2)
        g = rng.integers(0, N_GROUPS, size=m, dtype=np.int32)
        y = rng.uniform(size=m) < np.where(g < 50, 0.8 * p, p)
        path = folder / f"part.{i:05d}.parquet"
        pq.write_table(
            pa.table({"confidence": p, "correct": y, "group": g}),
            path,
            row_group_size=file_rows,
        )
        files.append(path)
    return files


def run_sizes(args):
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    from sklearn_betacal.cli._report import compute_report
    from sklearn_betacal.cli._report_set import report_from_statistics
    from sklearn_betacal.dask import calibration_statistics

    rows = []
    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=args.workers,
            processes=False,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster),
    ):
        for n in [int(float(s)) for s in args.sizes]:
            folder = args.dir / f"{args.kind}{n}"
            t0 = time.perf_counter()
            files = generate(folder, n, int(float(args.file_rows)), kind=args.kind)
            print(
                f"n={n}: generated {len(files)} files in "
                f"{time.perf_counter() - t0:.1f}s",
                flush=True,
            )
            names = [str(f) for f in files]
            cols = ["confidence", "correct", "group"]

            def read_sum(names=names, cols=cols):
                return dd.read_parquet(names, columns=cols).sum().compute()

            def report(names=names, cols=cols):
                frame = dd.read_parquet(names, columns=cols)
                stats = calibration_statistics(
                    frame, y_true="correct", y_prob="confidence", cells="group"
                )
                return report_from_statistics(stats)

            def in_memory(names=names, cols=cols):
                frame = pd.read_parquet(names, columns=cols)
                return compute_report(
                    frame["confidence"].to_numpy(),
                    frame["correct"].to_numpy(dtype=np.float64),
                    groups=frame["group"].to_numpy(),
                )

            contenders = {"read+sum": read_sum, "report": report}
            if n <= float(args.in_memory_max):
                contenders["in memory"] = in_memory
            times = {k: [] for k in contenders}
            peaks = dict.fromkeys(contenders, 0.0)
            results = {}
            for _ in range(args.repeats):
                for name, fn in contenders.items():
                    with PeakRSS() as rss:
                        base = _rss_mb()
                        t = time.perf_counter()
                        results[name] = fn()
                        times[name].append(time.perf_counter() - t)
                    peaks[name] = max(peaks[name], rss.peak - base)
                    print(
                        f"  {name}: {times[name][-1]:.2f}s, peak +{rss.peak - base:.0f} "
                        f"MB (rss {rss.peak:.0f} MB); load {load_average()}",
                        flush=True,
                    )
            if "in memory" in results:
                a, b = results["in memory"]["metrics"], results["report"]["metrics"]
                worst = max(
                    (abs(a[k] - b[k]) / abs(a[k]), k)
                    for k in a
                    if isinstance(a[k], float) and a[k]
                )
                by_name = {r["group"]: r for r in results["report"]["groups"]}
                worst_group = max(
                    (abs(r[k] - by_name[r["group"]][k]) / abs(r[k]), k)
                    for r in results["in memory"]["groups"]
                    for k in r
                    if isinstance(r[k], float) and r[k]
                )
                print(
                    "  largest relative difference: metrics "
                    f"{worst[0]:.1e} ({worst[1]}), groups {worst_group[0]:.1e} "
                    f"({worst_group[1]})"
                )
            floor = min(times["read+sum"])
            row = [
                args.kind,
                f"{n:.0e}",
                len(files),
                f"{floor:.2f}",
                f"{min(times['report']):.2f}",
                f"{min(times['report']) / floor:.1f}x",
                f"{peaks['read+sum']:.0f}",
                f"{peaks['report']:.0f}",
            ]
            if "in memory" in times:
                row += [f"{min(times['in memory']):.2f}", f"{peaks['in memory']:.0f}"]
            else:
                row += ["-", "-"]
            row.append(load_average())
            rows.append(row)
            if not args.keep:
                shutil.rmtree(folder)
    lines = markdown_table(
        [
            "confidences",
            "rows",
            "files",
            "read+sum s",
            "report s",
            "report / read+sum",
            "read+sum peak MB",
            "report peak MB",
            "in memory s",
            "in memory peak MB",
            "load after",
        ],
        rows,
    )
    return lines


def _period(rng, n, shift=0.0):
    from sklearn_betacal.metrics import CalibrationStatistics

    p = rng.uniform(size=n)
    g = rng.choice(np.array(["a", "b", "c", "d"]), size=n)
    y = rng.uniform(size=n) < np.clip(np.where(g == "b", p + shift, p), 0, 1)
    return CalibrationStatistics(10, cells=True).update(y, p, g)


def run_drift(args):
    from sklearn_betacal.metrics import calibration_drift_test

    rng = np.random.default_rng(0)
    rows = []
    for n in (4000, 40000):
        null = [
            calibration_drift_test(_period(rng, n), _period(rng, n))["drifted"].any()
            for _ in range(args.n_sim)
        ]
        rows.append([n, "0 (no drift)", f"{np.mean(null):.3f}", "any group named"])
        for shift in (0.01, 0.02, 0.04, 0.08):
            hits = [
                calibration_drift_test(_period(rng, n, shift), _period(rng, n))[
                    "drifted"
                ]["b"]
                for _ in range(args.n_sim // 2)
            ]
            rows.append(
                [n, f"{shift:+.2f} in group b", f"{np.mean(hits):.3f}", "group b named"]
            )
    return markdown_table(["rows per period", "shift", "rate", "event"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1e6", "1e7"])
    parser.add_argument("--file-rows", default="1e6")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--in-memory-max", default="2e7")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/bench_report_outofcore"))
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--kind",
        choices=["verbal", "continuous"],
        default="verbal",
        help="confidences rounded to 0.01 (101 values: one pass, no sort) or "
        "continuous (sorted by dask first)",
    )
    parser.add_argument("--drift", action="store_true")
    parser.add_argument("--n-sim", type=int, default=400)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    lines = [header("dask", "distributed", "pyarrow"), ""]
    lines += run_drift(args) if args.drift else run_sizes(args)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text)


if __name__ == "__main__":
    RESULTS.mkdir(exist_ok=True)
    main()
