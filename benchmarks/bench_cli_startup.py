# SPDX-License-Identifier: MIT
"""Start-up cost of ``betacal apply`` on a small file, against bare imports.

Issue 39 (item 5): ``betacal apply`` of a small file should cost at most
1.5 s of wall time more than ``python -c "import sklearn_betacal, pandas"``,
with torch importable or not (skops' trust list used to import every
scikit-learn module and, through it, torch).

1. ``betacal fit --method temperature`` on the first 2,000 rows of the raw
   answer log (``betacal demo --write-log``; ``--verbalized``).
2. Fresh processes, interleaved round-robin (a change of the machine's load
   is spread over all of them), each ``--repeats`` times; per process its wall
   time and CPU time (user + system of the child, ``RUSAGE_CHILDREN``):

   - ``bare``: ``import sklearn_betacal, pandas``;
   - ``apply``: ``betacal apply model small.csv out.csv``;
   - ``skops as is``: ``import skops.io`` as skops does it (its trust list
     computed at import), for comparison.

   Each with torch importable (as installed) and with ``import torch``
   refused (an import hook raises ``ModuleNotFoundError`` for it, as if
   torch were not installed).

Usage::

    python benchmarks/bench_cli_startup.py --repeats 7 \\
        --output benchmarks/results/cli_startup.md
"""

import argparse
import importlib.util
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _measure import header, load_average, markdown_table

PRELUDE = "import sys\n{block}"
#: an import hook that refuses torch as if it were not installed
NO_TORCH = (
    "class NoTorch:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] == 'torch':\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
    "sys.meta_path.insert(0, NoTorch())\n"
)
CASES = {
    "bare": "import sklearn_betacal, pandas",
    "apply": (
        "from sklearn_betacal.cli import main\n"
        "sys.argv = ['betacal', 'apply', 'model.skops', 'small.csv', 'out.csv', "
        "'--force']\n"
        "sys.exit(main())"
    ),
    "skops as is": "import sklearn_betacal, pandas, skops.io",
}


def run_child(code, cwd):
    """(wall s, CPU s) of ``python -c code`` in ``cwd``; raises on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{code!r} failed:\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    torch = importlib.util.find_spec("torch") is not None
    work = Path(tempfile.mkdtemp(prefix="bench_cli_startup_"))
    setup = (
        "import sys\n"
        "import pandas as pd\n"
        "from sklearn_betacal.cli import main\n"
        "main(['demo', '--write-log', 'answers.csv'])\n"
        "pd.read_csv('answers.csv').head(2000).to_csv('small.csv', index=False)\n"
        "sys.exit(main(['fit', 'small.csv', '--confidence', 'response', "
        "'--label', 'correct', '--verbalized', '--method', 'temperature', "
        "'--output', 'model.skops', '--quiet']))\n"
    )
    subprocess.run([sys.executable, "-c", setup], cwd=work, check=True)
    load_start = load_average()
    blocks = {"torch importable": ""} if torch else {}
    blocks["torch refused"] = NO_TORCH
    codes = {
        (where, case): PRELUDE.format(block=block) + body
        for where, block in blocks.items()
        for case, body in CASES.items()
    }
    for code in codes.values():  # warm the file cache and .pyc files
        run_child(code, work)
    times = {key: [] for key in codes}
    for _ in range(args.repeats):
        for key, code in codes.items():
            times[key].append(run_child(code, work))
    load_end = load_average()

    lines = [
        "<!-- SPDX-License-Identifier: MIT -->",
        "# `betacal apply` of a small file: start-up against bare imports",
        "",
        "Recorded output of `python benchmarks/bench_cli_startup.py "
        f"--repeats {args.repeats}` (issue 39, item 5).",
        "",
        header("pandas", "skops", "torch", prefix=""),
        "",
        f"Load average at the start of the timed rounds {load_start}, at the end "
        f"{load_end}, on 2 cores shared with other jobs. Each cell: the median "
        f"of {args.repeats} fresh processes, run interleaved; CPU is user + "
        "system time of the child. The model: `betacal fit --method "
        "temperature --verbalized` on 2,000 rows of the raw answer log; "
        "`apply` reads and writes those 2,000 rows.",
        "",
    ]
    head = ["torch", "process", "wall (s)", "CPU (s)", "wall - bare", "CPU - bare"]
    lines += markdown_table(head, align="llrrrr")
    for where in blocks:
        bare = [statistics.median(v) for v in zip(*times[(where, "bare")], strict=True)]
        for case in CASES:
            wall, cpu = (statistics.median(v) for v in zip(*times[(where, case)], strict=True))
            lines.append(
                f"| {where} | {case} | {wall:.2f} | {cpu:.2f} | "
                f"{wall - bare[0]:+.2f} | {cpu - bare[1]:+.2f} |"
            )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output is not None:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
