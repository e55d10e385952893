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


def skops_import_seconds(env):
    """``(skops' own import, of which all_estimators())`` after numpy, scipy,
    pandas and scikit-learn's base are imported (apply needs those anyway)."""
    code = (
        "import time\n"
        "import numpy, scipy, pandas, sklearn.base, sklearn.utils.validation\n"
        "t = time.perf_counter()\n"
        "from sklearn.utils import all_estimators; all_estimators()\n"
        "t1 = time.perf_counter()\n"
        "import skops.io\n"
        "print(time.perf_counter() - t, t1 - t)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    total, estimators = map(float, out.stdout.split())
    return total, estimators


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/cli_day.md"
    )
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}  # fmt: skip
    runs, loads = [], [uptime()]
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as folder:
            runs.append(run_day(folder, env))
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
        f"{skops_s[0]:.2f} s, of which {skops_s[1]:.2f} s is scikit-learn's "
        "`all_estimators()`, which skops' `_trusted_types` calls at import (it "
        "imports every scikit-learn estimator module to list the default trusted "
        "types). Paid by every `apply` and by `fit` when it writes the model.",
        "",
    ]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
