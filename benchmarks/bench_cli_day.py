# SPDX-License-Identifier: MIT
"""Wall time of the practitioner's day of ``docs/cli.rst``, run as written.

Reads the ``$ betacal ...`` lines of the section "A day with a raw answer
log" of ``docs/cli.rst`` and runs each, in that order, as its own process
(``python -m sklearn_betacal.cli ...``, what the ``betacal`` script runs) in
an empty folder: write the 5,000-row raw log, report it, fit with text, fit
with --tune, apply, report the calibrated column with the per-group picture.
Records each command's wall and CPU time, the total, the machine load
(``uptime``) before and after, and the import time of skops (which
``apply`` pays to load a model file). Writes ``benchmarks/results/cli_day.md``.

Usage::

    python benchmarks/bench_cli_day.py [--repeat 2] [--out benchmarks/results/cli_day.md]
"""

import argparse
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def day_commands():
    text = (ROOT / "docs" / "cli.rst").read_text(encoding="utf-8")
    section = text.split("A day with a raw answer log", 1)[1].split("\n1. ", 1)[0]
    return [
        line.strip()[2:]
        for line in section.splitlines()
        if line.strip().startswith("$ betacal ")
    ]


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run_day(folder, env):
    rows = []
    for line in day_commands():
        argv = [sys.executable, "-m", "sklearn_betacal.cli", *shlex.split(line)[1:]]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            raise RuntimeError(f"{line} failed:\n{done.stderr}")
        rows.append((line, wall, cpu))
    return rows


def day_quality(folder):
    """What the day's tuned model does to the log (issue 39, item 3): the
    chosen b, the AUAC of the raw and of the calibrated log (rows with a
    stated confidence), and the answering models served by a constant (one
    calibrated value for all their answers)."""
    import numpy as np
    import pandas as pd

    from sklearn_betacal import io, parse_verbalized_confidence
    from sklearn_betacal.metrics import area_under_accuracy_confidence

    folder = Path(folder)
    raw = pd.read_csv(folder / "answers.csv")
    h = parse_verbalized_confidence(raw["response"]).confidence
    y = (raw["correct"] == "yes").to_numpy(dtype=float)
    ok = ~np.isnan(h)
    cal = pd.read_csv(folder / "calibrated.csv")
    p = cal["calibrated_confidence"].to_numpy()
    distinct = cal[ok].groupby("model")["calibrated_confidence"].nunique()
    return {
        "b": int(io.load(folder / "tuned.skops")[-1].points_per_bin_),
        "auac_raw": area_under_accuracy_confidence(y[ok], h[ok]),
        "auac_calibrated": area_under_accuracy_confidence(y[ok], p[ok]),
        "constant_models": sorted(distinct.index[distinct == 1]),
        "n_models": int(distinct.shape[0]),
        "fewest_values": int(distinct.min()),
    }


def skops_import_seconds(env):
    """``(skops' own import, sklearn_betacal.io's import of it)`` after
    numpy, scipy, pandas and scikit-learn's base are imported (apply needs
    those anyway); each in a fresh process."""
    own = (
        "import time\n"
        "import numpy, scipy, pandas, sklearn.base, sklearn.utils.validation\n"
        "t = time.perf_counter()\n"
        "import skops.io\n"
        "print(time.perf_counter() - t)\n"
    )
    ours = own.replace("import skops.io", "from sklearn_betacal import io; io._skops()")
    seconds = []
    for code in (own, ours):
        out = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        seconds.append(float(out.stdout))
    return tuple(seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/cli_day.md"
    )
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}  # fmt: skip
    runs, loads, quality = [], [uptime()], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as folder:
            runs.append(run_day(folder, env))
            quality.append(day_quality(folder))
        loads.append(uptime())
    skops_s = skops_import_seconds(env)
    lines = [
        "# The day of docs/cli.rst, run as written",
        "",
        "`python benchmarks/bench_cli_day.py` (each command a fresh process, in an "
        "empty folder, one BLAS thread; the commands are read from docs/cli.rst).",
        f"Python {platform.python_version()}, {os.cpu_count()} cores; "
        f"{args.repeat} run(s).",
        "",
        "Load (`uptime`) before, and after each run:",
        "",
        *[f"- `{u}`" for u in loads],
        "",
        "| command | "
        + " | ".join(f"run {i + 1} wall s (CPU s)" for i in range(len(runs)))
        + " |",
        "|---|" + "---:|" * len(runs),
    ]
    for k, (line, _, _) in enumerate(runs[0]):
        cells = [f"{run[k][1]:.1f} ({run[k][2]:.1f})" for run in runs]
        lines.append(f"| `{line}` | " + " | ".join(cells) + " |")
    totals = [
        f"**{sum(r[1] for r in run):.1f}** ({sum(r[2] for r in run):.1f})"
        for run in runs
    ]
    lines += [
        "| total | " + " | ".join(totals) + " |",
        "",
        f"`import skops.io` beyond numpy/scipy/pandas/scikit-learn's base: "
        f"{skops_s[0]:.2f} s as skops does it (its trust list calls scikit-learn's "
        "`all_estimators()`, which imports every scikit-learn module, and torch "
        f"where installed); {skops_s[1]:.2f} s as `sklearn_betacal.io` imports it "
        "for `apply` and `fit` (without that list: each type a model file names "
        "is checked on its own).",
        "",
        "What the tuned model does to the log (rows with a stated confidence; "
        "issue 39's goal: no model served by a constant unless the data force "
        "it, calibrated AUAC >= raw AUAC - 0.01):",
        "",
        "| run | b chosen by --tune | AUAC raw | AUAC calibrated | models served "
        "by a constant | fewest calibrated values of a model |",
        "|---:|---:|---:|---:|---|---:|",
        *[
            f"| {i + 1} | {q['b']} | {q['auac_raw']:.3f} | "
            f"{q['auac_calibrated']:.3f} | "
            f"{', '.join(q['constant_models']) or 'none'} of {q['n_models']} | "
            f"{q['fewest_values']} |"
            for i, q in enumerate(quality)
        ],
        "",
    ]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
