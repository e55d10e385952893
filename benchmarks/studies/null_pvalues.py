# SPDX-License-Identifier: MIT
"""Is the one-liner's heterogeneity test sized right? (issue 21, planted null)

``CalibrationTreePartitioner()`` keeps one cell unless its test that the fine
cells differ rejects at ``split_alpha = 0.05`` (``split_pvalue_``). On
calibrated samples of the planted-group simulation (``planted_groups.py``'s
null: 16 blobs in 32-d, sizes 1,000-5,000, labels drawn from the confidence
itself) the p-values should be uniform and the split rate about 5 %. Fits
``BetaBinningCalibrator(CalibrationTreePartitioner(), points_per_bin=50)`` on
``--samples`` null samples (the seeds of ``planted_groups.py``'s null rate)
and reports the split rate, the p-value quantiles and a Kolmogorov-Smirnov
test against the uniform.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/studies/null_pvalues.py --samples 120
"""

import argparse
import os
import sys

import numpy as np
from scipy.stats import binom, kstest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _measure import header  # noqa: E402
from _planted import planted_groups  # noqa: E402

import sklearn_betacal._partition._tree as _tree
from sklearn_betacal import BetaBinningCalibrator, CalibrationTreePartitioner


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=120)
    parser.add_argument(
        "--split-test",
        nargs="+",
        choices=["pooled", "score"],
        default=["score"],
        help="the heterogeneity test's variance: each fine cell's own "
        "information (score, today's) or the pooled one (before session 13); "
        "several run side by side on the same samples",
    )
    args = parser.parse_args()
    ps = {t: [] for t in args.split_test}
    cells = {t: [] for t in args.split_test}
    for r in range(args.samples):
        h, E, _, _, y, _ = planted_groups(
            16, size_range=(1000, 5000), null=True, random_state=500 + r
        )
        for t in args.split_test:
            _tree.SCORE_SPLIT_TEST = t == "score"
            bb = BetaBinningCalibrator(
                CalibrationTreePartitioner(), points_per_bin=50, random_state=r
            ).fit(np.column_stack([h, E]), y)
            ps[t].append(bb.partitioner_.split_pvalue_)
            cells[t].append(len(bb.cells_))
    _tree.SCORE_SPLIT_TEST = True
    print(header(prefix=""))
    n = args.samples
    for t in args.split_test:
        p, c = np.array(ps[t]), np.array(cells[t])
        k = int(np.count_nonzero(c > 1))
        print(f"[{t} test] null samples: {n}; kept > 1 cell: {k} ({k / n:.3f})")
        counts = {a: int((p < a).sum()) for a in (0.05, 0.025, 0.01)}
        print(
            "  " + "; ".join(f"p < {a:g}: {v} ({v / n:.3f})" for a, v in counts.items())
        )
        print(f"  P(>= {k} of {n} at a true 5 %): {binom.sf(k - 1, n, 0.05):.3f}")
        q = np.quantile(p, [0.05, 0.1, 0.25, 0.5, 0.75])
        print("  p-value quantiles 5/10/25/50/75 %:", np.round(q, 3).tolist())
        ks = kstest(p, "uniform")
        print(
            f"  Kolmogorov-Smirnov vs uniform: D = {ks.statistic:.3f}, p = {ks.pvalue:.3f}"
        )


if __name__ == "__main__":
    main()
