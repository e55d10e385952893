# SPDX-License-Identifier: MIT
"""Size, load time and apply time of a ``betacal fit --text`` model file.

For each data set (the Influences study's verbalized-confidence rows of one
QA set, or the bundled TriviaQA data), 5,000 rows are drawn for ``betacal
fit --text question --method bb`` and 2,000 other rows for ``betacal apply``.
Each CLI call runs in a fresh process (startup included, as a user sees
it). A ``--method temperature`` model is fitted and applied on the same rows
as the reference the text model's apply is compared with: the calls are
interleaved (text, temperature, text, ...) and the median of ``--repeat``
runs is reported. ``io.load`` is timed in a fresh process after its imports.

Usage::

    python benchmarks/bench_text_model.py --workdir /tmp/bench_text \
        --data /path/to/data  # the folder holding influences/
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _measure import add_data_argument, verbal_sets

import sklearn_betacal

BETACAL = [
    sys.executable,
    "-c",
    "import sys; from sklearn_betacal.cli import main; sys.exit(main())",
]
# the children import the same checkout as this driver (run it with
# PYTHONPATH=<checkout> to measure another one)
ENV = {
    **os.environ,
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "PYTHONPATH": str(Path(sklearn_betacal.__file__).parents[1]),
}
LOAD = (
    "import sys, time\n"
    "from sklearn_betacal import io\n"
    "import skops.io, sklearn_betacal\n"
    "t = time.perf_counter(); io.load(sys.argv[1])\n"
    "print(time.perf_counter() - t)\n"
)


def wall(argv):
    t = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, env=ENV)
    if r.returncode != 0:
        raise RuntimeError(f"{argv} failed:\n{r.stderr}")
    return time.perf_counter() - t, r.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    add_data_argument(parser)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"sklearn_betacal {sklearn_betacal.__version__} from {sklearn_betacal.__file__}"
    )
    print(f"loadavg before: {Path('/proc/loadavg').read_text().strip()}\n")
    print(
        "| data | vocabulary | model file (MB) | io.load (s) | apply text (s) "
        "| apply temperature (s) | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, frame in verbal_sets(args.data).items():
        if args.only and not any(o in name for o in args.only):
            continue
        rng = np.random.default_rng(0)
        idx = rng.permutation(len(frame))
        slug = name.replace(" ", "_")
        fit_csv, apply_csv = work / f"{slug}_fit.csv", work / f"{slug}_apply.csv"
        frame.iloc[idx[:5000]].to_csv(fit_csv, index=False)
        frame.iloc[idx[5000:7000]].to_csv(apply_csv, index=False)
        models = {}
        for method, flags in (
            ("bb", ["--text", "question", "--method", "bb", "--random-state", "0"]),
            ("temperature", ["--method", "temperature"]),
        ):
            models[method] = work / f"{slug}_{method}.skops"
            wall(
                [
                    *BETACAL,
                    "fit",
                    str(fit_csv),
                    "--confidence",
                    "verbal_confidence",
                    "--label",
                    "correct_judge",
                    *flags,
                    "--output",
                    str(models[method]),
                    "--force",
                ]
            )
        size = models["bb"].stat().st_size / 1e6
        load_s = float(wall([sys.executable, "-c", LOAD, str(models["bb"])])[1])
        vocab = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from sklearn_betacal import io; m = io.load(sys.argv[1]);"
                "e = m.partitioner_.steps[0][1] if hasattr(m, 'partitioner_') else None;"
                "print(len(e.vectorizer_.vocabulary_))",
                str(models["bb"]),
            ],
            capture_output=True,
            text=True,
            env=ENV,
        ).stdout.strip()
        times = {"bb": [], "temperature": []}
        for _ in range(args.repeat):
            for method, model in models.items():
                out = work / f"{slug}_{method}_out.csv"
                times[method].append(
                    wall(
                        [
                            *BETACAL,
                            "apply",
                            str(model),
                            str(apply_csv),
                            str(out),
                            "--force",
                        ]
                    )[0]
                )
        text_s = statistics.median(times["bb"])
        temp_s = statistics.median(times["temperature"])
        print(
            f"| {name} | {vocab} | {size:.2f} | {load_s:.2f} | {text_s:.2f} "
            f"| {temp_s:.2f} | {text_s / temp_s:.2f} |",
            flush=True,
        )
    print(f"\nloadavg after: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
