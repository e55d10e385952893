# SPDX-License-Identifier: MIT
"""Size and power of the Kuiper calibration test, whole-data and per cell.

Simulations (seeded; confidences ``Beta(2, 2)``, labels ``Bernoulli``):

1. Size: perfectly calibrated samples of n rows; the share of samples that
   the whole-data test rejects at alpha (should be <= alpha; the p-value is
   asymptotic, so small n is shown too).
2. Size per cell: 10 calibrated cells; the share of samples in which Holm
   (family-wise) or Benjamini-Hochberg flag any cell, the share of
   calibrated cells the raw test rejects, and the max-over-cells test.
3. Power: one of the 10 cells miscalibrated by ``y ~ Bernoulli(p + delta)``
   (clipped to [0, 1]), delta from 0 to 0.12, cells of ``--cell-size`` rows;
   power of Holm and BH to flag the planted cell, of the max-over-cells test,
   and of the whole-data test (which sees the miscalibration diluted 10x),
   with the share of calibrated cells flagged.

Usage: ``python benchmarks/studies/calibration_tests_power.py [--sims 400]``;
writes ``benchmarks/results/calibration_tests_power.md``. About a minute.
"""

import argparse
import datetime
import platform
import sys
from pathlib import Path

import numpy as np

import sklearn_betacal
from sklearn_betacal.metrics import calibration_test

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness
from _measure import RESULTS, markdown_table  # noqa: E402

OUT = RESULTS / "calibration_tests_power.md"


def _binomial_se(rate, sims):
    return np.sqrt(max(rate * (1 - rate), 1e-12) / sims)


def size_whole(rng, sims, alpha, sizes):
    rows = []
    for n in sizes:
        rej = 0
        for _ in range(sims):
            p = rng.beta(2, 2, size=n)
            y = rng.uniform(size=n) < p
            rej += calibration_test(y, p).pvalue < alpha
        rows.append((n, rej / sims))
    return rows


def cells_sample(rng, n_cells, cell_size, delta, planted=0):
    groups = np.repeat(np.arange(n_cells), cell_size)
    p = rng.beta(2, 2, size=groups.size)
    truth = np.where(groups == planted, np.clip(p + delta, 0, 1), p)
    y = rng.uniform(size=groups.size) < truth
    return y, p, groups


def per_cell(rng, sims, alpha, n_cells, cell_size, delta):
    holm = bh = max_test = whole = 0
    false_holm = false_bh = raw_false = 0
    for _ in range(sims):
        y, p, g = cells_sample(rng, n_cells, cell_size, delta)
        res_h = calibration_test(y, p, cells=g, alpha=alpha)
        res_b = calibration_test(y, p, cells=g, alpha=alpha, method="fdr_bh")
        th, tb = res_h.table, res_b.table
        others = th.index != 0
        if delta > 0:
            holm += bool(th.loc[0, "significant"])
            bh += bool(tb.loc[0, "significant"])
        else:  # size: any cell flagged
            holm += bool(th["significant"].any())
            bh += bool(tb["significant"].any())
        false_holm += th.loc[others, "significant"].sum()
        false_bh += tb.loc[others, "significant"].sum()
        raw_false += (th.loc[others, "pvalue"] < alpha).sum()
        max_test += res_h.max_pvalue < alpha
        whole += res_h.pvalue < alpha
    calibrated_cells = sims * (n_cells - 1)
    return {
        "holm": holm / sims,
        "bh": bh / sims,
        "max": max_test / sims,
        "whole": whole / sims,
        "false_holm": false_holm / calibrated_cells,
        "false_bh": false_bh / calibrated_cells,
        "raw_false": raw_false / calibrated_cells,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=400)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--cell-size", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    sims, alpha = args.sims, args.alpha
    load_before = open("/proc/loadavg").read().split()[:3]
    t0 = datetime.datetime.now(datetime.timezone.utc)

    lines = [
        "# Size and power of the Kuiper calibration test",
        "",
        "Script: `benchmarks/studies/calibration_tests_power.py` "
        f"(`--sims {sims} --alpha {alpha} --cell-size {args.cell_size}`).",
        f"date: {t0:%Y-%m-%d %H:%M} UTC; python {platform.python_version()}, "
        f"numpy {np.__version__}, sklearn_betacal {sklearn_betacal.__version__}; "
        f"load average at start {' '.join(load_before)}.",
        "Confidences Beta(2, 2), labels Bernoulli; seed 2026. Binomial standard "
        f"error of a rate near {alpha} over {sims} samples: "
        f"{_binomial_se(alpha, sims):.3f}.",
        "",
        "## 1. Size of the whole-data test (calibrated samples)",
        "",
        *markdown_table(
            ["n", "rejection rate at alpha"],
            [
                [n, f"{rate:.3f}"]
                for n, rate in size_whole(rng, sims, alpha, [30, 100, 500, 2000])
            ],
            align="rr",
        ),
    ]
    lines += [
        "",
        f"## 2. Size per cell: 10 calibrated cells of {args.cell_size} rows",
        "",
    ]
    r = per_cell(rng, sims, alpha, 10, args.cell_size, 0.0)
    quantities = {
        "samples with any cell flagged, Holm (family-wise error)": "holm",
        "samples with any cell flagged, BH (= FDR here, all nulls true)": "bh",
        "max-over-cells test rejects": "max",
        "calibrated cells with raw p < alpha": "raw_false",
        "whole-data test rejects": "whole",
    }
    lines += [
        *markdown_table(
            ["quantity", "rate"],
            [[name, f"{r[key]:.3f}"] for name, key in quantities.items()],
            align="lr",
        ),
        "",
        "## 3. Power: cell 0 of 10 miscalibrated by delta "
        f"({args.cell_size} rows per cell)",
        "",
    ]
    head = ["delta", "Holm flags cell 0", "BH flags cell 0", "max-over-cells"]
    head += ["whole data", "calibrated cells flagged (Holm / BH)"]
    rows = []
    for delta in [0.02, 0.04, 0.06, 0.08, 0.10, 0.12]:
        r = per_cell(rng, sims, alpha, 10, args.cell_size, delta)
        rates = [f"{r[key]:.3f}" for key in ("holm", "bh", "max", "whole")]
        flagged = f"{r['false_holm']:.4f} / {r['false_bh']:.4f}"
        rows.append([f"{delta:.2f}", *rates, flagged])
    lines += markdown_table(head, rows, align="rrrrrr")
    t1 = datetime.datetime.now(datetime.timezone.utc)
    load_after = open("/proc/loadavg").read().split()[:3]
    lines += [
        "",
        f"Run time {(t1 - t0).total_seconds():.0f} s; load average at the end "
        f"{' '.join(load_after)}.",
    ]
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
