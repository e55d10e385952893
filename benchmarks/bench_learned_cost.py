# SPDX-License-Identifier: MIT
"""Cost of the learned partition (issue 21, item 6), as ratios.

1. ``BetaBinningCalibrator(CalibrationTreePartitioner())`` fit against
   ``BetaBinningCalibrator(KDTreePartitioner())`` on the same rows (goal: within
   3x), on planted groups (16 blobs in 32-d) at two sizes, side by side.
   (The retired merge strategy's contenders were measured here until issue
   38; ``results/learned_cost.md`` keeps their figures.)
2. ``betacal fit --partition learned --tune`` against the same command
   without ``--tune`` (goal: within 10x), on the first 600 and 5,000 rows of
   the bundled TriviaQA set (question + answer text), and, side by side, the
   ``--tune`` of session 7 (each candidate refitted through the text
   pipeline with the fold's embedding frozen: ``_fit._embedded_bb_folds``
   switched off, so ``_learned_fold_partitions`` serves every method). Every
   command's exit status is checked: a failing command stops the benchmark
   with its message (it was once timed as a 0.00 s run).

Contenders interleaved round-robin (``_measure.median_times``), medians of
``REPEATS``; one BLAS thread. The tables give CPU seconds of this process
(``time.process_time``: on a shared machine the other processes' load
inflates wall-clock times unevenly); the wall-clock ratios follow them. Run:
``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_learned_cost.py``
(``--out`` writes elsewhere than ``results/learned_cost.md``, e.g. to time
another checkout of the package with the same script).
"""

import argparse
import contextlib
import io
import os
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from _measure import RESULTS, header, load_average, median_times, write_result
from _planted import planted_groups
from threadpoolctl import threadpool_limits

from sklearn_betacal import (
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    KDTreePartitioner,
)
from sklearn_betacal.cli import _fit as cli_fit
from sklearn_betacal.cli import main as cli_main
from sklearn_betacal.datasets import load_triviaqa_confidence

REPEATS = 3
CLI_REPEATS = 2
#: the contenders of the fit ratio: name -> partitioner maker
PARTITIONERS = {
    "kd-tree": lambda: KDTreePartitioner(),
    "tree": lambda: CalibrationTreePartitioner(),
}


def fit_ratios():
    """``[(rows, {name: median seconds})]`` of the BB fits at two sizes."""
    rows = []
    for per_group in ((300, 600), (1000, 5000)):
        h, E, *_, y, _ = planted_groups(16, size_range=per_group, random_state=0)
        X = np.column_stack([h, E])

        def fit(name, X=X, y=y):
            part = PARTITIONERS[name]()
            BetaBinningCalibrator(part, points_per_bin=50, random_state=0).fit(X, y)

        fns = {name: (lambda name=name: fit(name)) for name in PARTITIONERS}
        med = median_times(fns, REPEATS, warmup=1, cpu=True)
        rows.append((X.shape[0], {k: cpu for k, (_, cpu) in med.items()}, med))
    return rows


def run_cli(argv):
    """``betacal`` in this process, its output swallowed; raises with its
    message unless it exits 0."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli_main(argv)
    if status != 0:
        raise RuntimeError(
            f"betacal {' '.join(argv)} exited {status}: {err.getvalue().strip()}"
        )
    return out.getvalue()


def _pipeline_folds(*args):
    """``_embedded_bb_folds`` switched off: the --tune of session 7."""
    return None


def cli_ratios():
    """``[(rows, single s, --tune s, --tune before s, chosen b line)]`` of
    the CLI fits (the same choice before and after, checked)."""
    frame = load_triviaqa_confidence().frame
    frame = frame.dropna(subset=["answer"]).reset_index(drop=True)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (600, 5000):
            path = Path(tmp) / f"tqa{n}.csv"
            frame.iloc[:n].to_csv(path, index=False)
            base = ["fit", str(path), "--confidence", "verbal_confidence",
                    "--label", "correct_judge", "--text", "question", "answer",
                    "--method", "bb", "--partition", "learned",
                    "--random-state", "0", "--force", "--output"]  # fmt: skip
            said = {}

            def command(extra, name, base=base, n=n, said=said):
                model = str(Path(tmp) / f"m{n}_{name}.skops")
                said[name] = run_cli([*base, model, *extra])

            def before():
                fast = getattr(cli_fit, "_embedded_bb_folds", None)
                if fast is None:  # a checkout before it: its --tune is this
                    return command(["--tune"], "before")
                cli_fit._embedded_bb_folds = _pipeline_folds
                try:
                    command(["--tune"], "before")
                finally:
                    cli_fit._embedded_bb_folds = fast

            fns = {
                "single": lambda: command([], "single"),
                "tune": lambda: command(["--tune"], "tune"),
                "before": before,
            }
            both = median_times(fns, CLI_REPEATS, warmup=1 if n == 600 else 0, cpu=True)
            med = {k: cpu for k, (_, cpu) in both.items()}
            wall = {k: w for k, (w, _) in both.items()}
            chosen = next(
                (line for line in said["tune"].splitlines() if "tuned" in line), ""
            )
            if chosen not in said["before"]:
                raise RuntimeError(f"--tune chose otherwise before: {said['before']}")
            out.append((n, med["single"], med["tune"], med["before"], chosen, wall))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS / "learned_cost.md")
    parser.add_argument(
        "--label", default="", help="which code was timed (a line of the result)"
    )
    args = parser.parse_args(argv)
    top = header(prefix="")
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")
        load0 = load_average()
        fits = fit_ratios()
        load1 = load_average()
        clis = cli_ratios()
        load2 = load_average()
    names = [n for n in PARTITIONERS if n != "kd-tree"]
    lines = [
        "# Cost of the learned partition (issue 21, item 6)",
        "",
        *top.splitlines(),
        *([f"code timed: {args.label}"] if args.label else []),
        "",
        f"CPU seconds (process_time), medians of {REPEATS} (CLI: {CLI_REPEATS}) "
        f"interleaved runs, one BLAS thread, `{Path(sys.argv[0]).name}`; load "
        f"average {load0} (start), "
        f"{load1} (after the fits), {load2} (end), {os.cpu_count()} cores shared.",
        "",
        "## BB fit: learned partition / kd-tree (goal <= 3x)",
        "",
        "| rows | kd-tree s | " + " | ".join(f"{n} s | ratio" for n in names) + " |",
        "|---|---|" + "---|---|" * len(names),
    ]
    walls = []
    for n, med, both in fits:
        kd = med["kd-tree"]
        cells = " | ".join(f"{med[k]:.3f} | {med[k] / kd:.1f}x" for k in names)
        lines.append(f"| {n} | {kd:.3f} | {cells} |")
        w = {k: wall for k, (wall, _) in both.items()}
        walls.append(f"{n} rows {w['tree'] / w['kd-tree']:.1f}x")
    lines += ["", "Wall-clock ratio of the default: " + ", ".join(walls) + "."]
    lines += [
        "",
        "## `betacal fit --partition learned`: --tune / single fit (goal <= 10x)",
        "",
        "| rows | single s | --tune s | ratio | --tune before s | ratio "
        "| --tune chose (before and after) |",
        "|---|---|---|---|---|---|---|",
    ]
    walls = []
    for n, single, tuned, old, chosen, wall in clis:
        walls.append(
            f"{n} rows {wall['tune'] / wall['single']:.1f}x "
            f"(before {wall['before'] / wall['single']:.1f}x)"
        )
        b = chosen.split("b = ")[1].split(" ")[0] if "b = " in chosen else "?"
        lines.append(
            f"| {n} | {single:.2f} | {tuned:.2f} | {tuned / single:.1f}x | "
            f"{old:.2f} | {old / single:.1f}x | b = {b} |"
        )
    lines += ["", "Wall-clock ratio of --tune: " + ", ".join(walls) + "."]
    write_result(args.out, lines)


if __name__ == "__main__":
    main()
