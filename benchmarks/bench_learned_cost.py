# SPDX-License-Identifier: MIT
"""Cost of the learned partition (issue 21, item 6), as ratios.

1. ``BetaBinningCalibrator(CalibrationTreePartitioner())`` fit against
   ``BetaBinningCalibrator(KDTreePartitioner())`` on the same rows (goal: within
   3x), today's default (``strategy="merge"``) and the tree before it, on
   planted groups (16 blobs in 32-d) at two sizes.
2. ``betacal fit --partition learned --tune`` against the same command
   without ``--tune`` (goal: within 10x), on the first 600 and 5,000 rows of
   the bundled TriviaQA set (question + answer text).

Fits interleaved, median of ``REPEATS``; one BLAS thread. Run:
``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_learned_cost.py``.
"""

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _planted import planted_groups  # noqa: E402

from sklearn_betacal import (  # noqa: E402
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    KDTreePartitioner,
)
from sklearn_betacal.cli import main as cli_main  # noqa: E402
from sklearn_betacal.datasets import load_triviaqa_confidence  # noqa: E402

REPEATS = 3
CLI_REPEATS = 2
HERE = Path(__file__).parent


def _time(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def fit_ratios():
    rows = []
    for per_group in ((300, 600), (1000, 5000)):
        h, E, *_, y, _ = planted_groups(16, size_range=per_group, random_state=0)
        X = np.column_stack([h, E])
        makers = {
            "kd-tree": lambda: KDTreePartitioner(),
            "merge (default)": lambda: CalibrationTreePartitioner(),
            "tree (before)": lambda: CalibrationTreePartitioner(strategy="tree"),
        }
        times = {k: [] for k in makers}
        for _ in range(REPEATS):
            for name, make in makers.items():
                bb = BetaBinningCalibrator(make(), points_per_bin=50, random_state=0)
                times[name].append(_time(lambda bb=bb, X=X, y=y: bb.fit(X, y)))
        med = {k: float(np.median(v)) for k, v in times.items()}
        rows.append((X.shape[0], med))
    return rows


def cli_ratios():
    frame = load_triviaqa_confidence().frame
    frame = frame.dropna(subset=["answer"]).reset_index(drop=True)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (600, 5000):
            path = Path(tmp) / f"tqa{n}.csv"
            frame.iloc[:n].to_csv(path, index=False)
            base = [
                "fit",
                str(path),
                "--confidence",
                "verbal_confidence",
                "--label",
                "correct_judge",
                "--text",
                "question",
                "answer",
                "--method",
                "bb",
                "--partition",
                "learned",
                "--random-state",
                "0",
                "--output",
            ]
            single, tuned = [], []
            for r in range(CLI_REPEATS):
                for extra, acc in (([], single), (["--tune"], tuned)):
                    model = Path(tmp) / f"m{n}_{r}_{len(extra)}.skops"
                    argv = [*base, str(model), *extra]
                    with open(os.devnull, "w") as null:
                        stdout, sys.stdout = sys.stdout, null
                        try:
                            acc.append(_time(lambda argv=argv: cli_main(argv)))
                        finally:
                            sys.stdout = stdout
            out.append((n, float(np.median(single)), float(np.median(tuned))))
    return out


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    load0 = " ".join(open("/proc/loadavg").read().split()[:3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = fit_ratios()
        clis = cli_ratios()
    load1 = " ".join(open("/proc/loadavg").read().split()[:3])
    lines = [
        "# Cost of the learned partition (issue 21, item 6)",
        "",
        f"Median of {REPEATS} (CLI: {CLI_REPEATS}) interleaved runs, one BLAS thread; load average "
        f"{load0} (start) / {load1} (end), 2 cores shared.",
        "",
        "## BB fit: learned partition / kd-tree (goal <= 3x)",
        "",
        "| rows | kd-tree s | merge (default) s | ratio | tree (before) s | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for n, m in fits:
        kd = m["kd-tree"]
        lines.append(
            f"| {n} | {kd:.3f} | {m['merge (default)']:.3f} | "
            f"{m['merge (default)'] / kd:.1f}x | {m['tree (before)']:.3f} | "
            f"{m['tree (before)'] / kd:.1f}x |"
        )
    lines += [
        "",
        "## `betacal fit --partition learned`: --tune / single fit (goal <= 10x)",
        "",
        "| rows | single s | --tune s | ratio |",
        "|---|---|---|---|",
    ]
    for n, single, tuned in clis:
        lines.append(f"| {n} | {single:.2f} | {tuned:.2f} | {tuned / single:.1f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    (HERE / "results" / "learned_cost.md").write_text(text)


if __name__ == "__main__":
    main()
