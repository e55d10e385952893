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

from sklearn_betacal import BetaBinningCalibrator, CalibrationTreePartitioner


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=120)
    args = parser.parse_args()
    ps, cells = [], []
    for r in range(args.samples):
        h, E, _, _, y, _ = planted_groups(
            16, size_range=(1000, 5000), null=True, random_state=500 + r
        )
        bb = BetaBinningCalibrator(
            CalibrationTreePartitioner(), points_per_bin=50, random_state=r
        ).fit(np.column_stack([h, E]), y)
        ps.append(bb.partitioner_.split_pvalue_)
        cells.append(len(bb.cells_))
    ps, cells = np.array(ps), np.array(cells)
    n, k = args.samples, int(np.count_nonzero(cells > 1))
    print(header(prefix=""))
    print(f"null samples: {n}; kept > 1 cell: {k} ({k / n:.3f})")
    print(f"p < 0.05: {int((ps < 0.05).sum())}; p < 0.01: {int((ps < 0.01).sum())}")
    print(f"P(>= {k} of {n} at a true 5 %): {binom.sf(k - 1, n, 0.05):.3f}")
    q = np.quantile(ps, [0.05, 0.1, 0.25, 0.5, 0.75])
    print("p-value quantiles 5/10/25/50/75 %:", np.round(q, 3).tolist())
    ks = kstest(ps, "uniform")
    print(f"Kolmogorov-Smirnov vs uniform: D = {ks.statistic:.3f}, p = {ks.pvalue:.3f}")


if __name__ == "__main__":
    main()
