# SPDX-License-Identifier: MIT
"""``label_floor`` on and off: UMD, the oracle and the one-liner on every set.

A bin whose labels all agree predicted exactly 0 or 1 before ``label_floor``
(Alg. 4's plain mean); one disagreeing test row then costs ~34.5 nats
(scikit-learn's clip), enough to decide a comparison of log losses. This runs
``merge_stop.py``'s protocol (planted groups, influences with the dataset
hidden, TriviaQA, CIFAR top-label; the one-liner with today's stop) twice in
one process, ``UMDBinner`` and ``BetaBinningCalibrator`` given
``label_floor=False`` and then ``True``, on the same rows and seeds. The
ratios' denominators are the plain UMD's throughout (so "UMD, floor" shows
what the floor alone does to UMD), the share of the oracle's gain the plain
oracle's.

Run: ``OMP_NUM_THREADS=1 python benchmarks/studies/label_floor.py`` (the
data folder in ``$BETACAL_SHARED_DATA`` or ``--data``); writes
``results/label_floor.md`` and its CSV.
"""

import argparse
import functools
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE.parent))
import merge_stop  # noqa: E402
from _measure import RESULTS, add_data_argument  # noqa: E402

from sklearn_betacal import BetaBinningCalibrator, UMDBinner  # noqa: E402


def run_arm(floor, argv, tmp):
    """merge_stop's records with every UMD and BB given ``label_floor=floor``."""
    merge_stop.UMDBinner = functools.partial(UMDBinner, label_floor=floor)
    merge_stop.BetaBinningCalibrator = functools.partial(
        BetaBinningCalibrator, label_floor=floor
    )
    try:
        out = Path(tmp) / f"floor_{floor}.md"
        merge_stop.main([*argv, "--out", str(out)])
    finally:
        merge_stop.UMDBinner = UMDBinner
        merge_stop.BetaBinningCalibrator = BetaBinningCalibrator
    return pd.read_csv(out.with_suffix(".csv"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--seeds", type=int, default=2, help="influences seeds")
    parser.add_argument("--other-seeds", type=int, default=3, help="other sets")
    parser.add_argument("--out", type=Path, default=RESULTS / "label_floor.md")
    args = parser.parse_args(argv)
    common = ["--seeds", str(args.seeds), "--other-seeds", str(args.other_seeds)]
    common += ["--n-null", "1"]  # (the null rate is not this study's)
    if args.data is not None:
        common += ["--data", str(args.data)]
    load0, t0 = os.getloadavg(), time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        plain = run_arm(False, common, tmp)
        floor = run_arm(True, common, tmp)
    floor["method"] = floor["method"] + ", floor"
    R = pd.concat([plain, floor], ignore_index=True)
    R["model"] = R["model"].fillna("-")
    R = R.sort_values(["set", "model", "seed"], kind="stable")
    R.to_csv(args.out.with_suffix(".csv"), index=False)
    # test rows whose probability was exactly 0 or 1 cannot be counted from
    # the scores; the log loss difference is their effect
    load1 = os.getloadavg()
    lines = [
        "# label_floor on and off (UMDBinner, BetaBinningCalibrator)",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"{time.perf_counter() - t0:.0f} s; load average {load0[0]:.2f} (start) / "
        f"{load1[0]:.2f} (end), {os.cpu_count()} cores. Python "
        f"{platform.python_version()}, numpy {np.__version__}, scikit-learn "
        f"{sklearn.__version__}. Influences seeds 0-{args.seeds - 1}, TriviaQA and "
        f"CIFAR seeds 0-{args.other_seeds - 1}, planted seeds 0-4; the one-liner is "
        "`BetaBinningCalibrator(CalibrationTreePartitioner())` with today's stop "
        "(`score test`). Ratios to the plain UMD's beta-CE; scores are means.",
        "",
        *merge_stop.summary(R),
        "",
    ]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
