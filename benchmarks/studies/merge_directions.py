# SPDX-License-Identifier: MIT
"""Learned directions for the merge, size-safe and cheap? (issue 21, item 3).

``CalibrationTreePartitioner(directions="recalibration")`` adds two learned
directions (a ridge varying-coefficient Platt fit, ``recalibration_directions``)
to the k-means coordinates of the fine cells. Cross-fitted positions keep a
row's position free of its own label but not of its cell-mates' labels, and
the heterogeneity test then judges the rows the directions were fitted on
(it split calibrated samples 1-2 times in 10). The variants, side by side in
one process on the same rows (merge_stop.py's sets and protocol, its
``split_protocol`` / ``null_rate`` run with these variants in place of its two
stops):

- ``default``: today's one-liner (no directions);
- ``cross-fit 0.25``: ``directions="recalibration"``, ``DIRECTION_SHARE`` 0.25,
  the cross-fitted positions (5 folds x 6 penalties + 1 = 31 logistic fits);
- ``split 0.25`` / ``split 1.0``: the directions fitted on a random half of
  the partition rows only (those rows then get weight 0: k-means, the global
  Platt scores, the chi^2 test and the merges see only the other half, whose
  positions do not depend on their labels), share 0.25 / 1.0, full fit (31);
- ``cross-fit 0.25 cheap`` / ``split 0.25 cheap``: the same with 3 folds x 3
  penalties (0.01, 0.1, 1) + 1 = 10 fits.

The variants are coded here (module switches of ``_tree`` set while each
partition is fitted); the package is unchanged. Prints the summary (recorded
in results/merge_stop.md); ``--out`` writes every row as CSV. Run, one set a
process: ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python
benchmarks/studies/merge_directions.py --sets planted`` (``influences``,
``triviaqa``; ``--variants``, ``--seeds``, ``--other-seeds``, ``--n-null``).
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

import sklearn_betacal._partition._tree as _tree
from sklearn_betacal import CalibrationTreePartitioner

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE.parent))
import merge_stop  # noqa: E402
from _measure import add_data_argument  # noqa: E402

FULL = {"DIRECTION_FOLDS": 5, "DIRECTION_CS": np.logspace(-3, 2, 6)}
CHEAP = {"DIRECTION_FOLDS": 3, "DIRECTION_CS": np.array([0.01, 0.1, 1.0])}
#: name -> (directions, share, split, fit settings)
VARIANTS = {
    "default": (None, 1.0, False, FULL),
    "cross-fit 0.25": ("recalibration", 0.25, False, FULL),
    "cross-fit 0.25 cheap": ("recalibration", 0.25, False, CHEAP),
    "split 0.25": ("recalibration", 0.25, True, FULL),
    "split 1.0": ("recalibration", 1.0, True, FULL),
    "split 0.25 cheap": ("recalibration", 0.25, True, CHEAP),
}
FIT_SECONDS = dict.fromkeys(VARIANTS, 0.0)
_ORIGINAL = _tree.recalibration_directions


class _Variant(CalibrationTreePartitioner):
    variant = "default"

    def fit(
        self, X, y=None, *, confidence=None, sample_weight=None, points_per_bin=None
    ):
        directions, share, split, fit = VARIANTS[self.variant]
        w = sample_weight
        if split:
            n = np.shape(X)[0]
            w = np.ones(n) if w is None else np.asarray(w, dtype=float)
            rng = check_random_state(self.random_state)
            half = rng.permutation(n) < n // 2  # the direction rows
            w_dir, w = w * half, w * ~half

            def directions_on_half(X_, y_, w_, h_, random_state):
                # fitted on the half; the others (weight 0 there) projected
                # on the full-half directions: free of their own labels
                return _ORIGINAL(X_, y_, w_dir, h_, random_state)

            _tree.recalibration_directions = directions_on_half
        saved = {k: getattr(_tree, k) for k in fit} | {
            "DIRECTION_SHARE": _tree.DIRECTION_SHARE
        }
        for k, v in fit.items():
            setattr(_tree, k, v)
        _tree.DIRECTION_SHARE = share
        self.directions = directions
        t0 = time.perf_counter()
        try:
            return super().fit(
                X,
                y,
                confidence=confidence,
                sample_weight=w,
                points_per_bin=points_per_bin,
            )
        finally:
            FIT_SECONDS[self.variant] += time.perf_counter() - t0
            self.directions = "auto"
            _tree.recalibration_directions = _ORIGINAL
            for k, v in saved.items():
                setattr(_tree, k, v)


CLASSES = {
    name: type(f"_V{i}", (_Variant,), {"variant": name})
    for i, name in enumerate(VARIANTS)
}


def one_liner(variant, seed):
    return CLASSES[variant](random_state=seed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--sets", nargs="+", default=["planted"])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--other-seeds", type=int, default=3)
    parser.add_argument("--n-null", type=int, default=20)
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS))
    parser.add_argument("--out", type=Path, help="CSV of every row (default: none)")
    args = parser.parse_args(argv)
    threadpool_limits(1)
    merge_stop.STOPS = dict.fromkeys(args.variants or VARIANTS)
    merge_stop.one_liner = one_liner
    load0, t0 = os.getloadavg(), time.perf_counter()
    records, null = [], None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if "planted" in args.sets:
            records += list(merge_stop.planted_rows(range(5)))
            null = merge_stop.null_rate(args.n_null)
        if "influences" in args.sets:
            records += list(merge_stop.influences_rows(args.data, range(args.seeds)))
        if "triviaqa" in args.sets:
            records += list(merge_stop.triviaqa_rows(range(args.other_seeds)))
    R = pd.DataFrame(records)
    R["model"] = R.get("model", pd.Series(index=R.index, dtype=object)).fillna("-")
    if args.out is not None:
        R.to_csv(args.out, index=False)
    load1 = os.getloadavg()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"{time.perf_counter() - t0:.0f} s; load {load0} -> {load1}; sets {args.sets}"
    )
    print("\n".join(merge_stop.summary(R)))
    if null is not None:
        print(f"null splits of {args.n_null}:", null)
    print("partition fit seconds:", {k: round(v, 1) for k, v in FIT_SECONDS.items()})


if __name__ == "__main__":
    main()
