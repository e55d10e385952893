# SPDX-License-Identifier: MIT
"""Summarise reduced runs of ``learned_partition.py`` side by side.

Each run is a CSV written by ``learned_partition.py --out RUN.md``. Per run
and confidence kind: UMD's mean CE(h;dataset) and Brier, each beta-method's
CE relative to UMD's (geometric mean over models) and its Brier minus UMD's
(mean, x 10^4), the goal count (the run's best beta-method by CE has
CE <= 0.8 x UMD's and a Brier no worse) and the rows that fail by the Brier
alone (CE <= 0.8 x UMD's, Brier worse). The goal count depends on how many
beta-methods a run holds (the best is picked on the test split), so compare
it only between runs with the same methods.

Usage::

    python benchmarks/studies/learned_partition_summary.py A=runA.csv B=runB.csv \
        --csv benchmarks/results/learned_partition_hypotheses.csv
"""

import argparse
from pathlib import Path

import numpy as np
import pandas as pd


def summarise(R):
    m = R.groupby(["model", "kind", "method"], sort=False).mean(numeric_only=True)
    m = m.reset_index()
    beta = [x for x in m.method.unique() if x.startswith(("BB", "HS-BB"))]
    lines = [
        "| kind | UMD CE | UMD Brier | method | CE / UMD (geo. mean) "
        "| Brier − UMD ×10⁴ (mean) | goal met | fail by Brier only |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind in ("verbal", "token", "all"):
        mm = m if kind == "all" else m[m.kind == kind]
        u = mm[mm.method == "B (UMD)"].set_index(["model", "kind"])
        goal = brier_only = rows = 0
        for _, block in mm.groupby(["model", "kind"]):
            umd = block[block.method == "B (UMD)"].iloc[0]
            bb = block[block.method.isin(beta)]
            top = bb.loc[bb.beta_ce.idxmin()]
            ce_ok = top.beta_ce <= 0.8 * umd.beta_ce
            rows += 1
            goal += bool(ce_ok and top.brier <= umd.brier)
            brier_only += bool(ce_ok and top.brier > umd.brier)
        for i, meth in enumerate(beta):
            x = mm[mm.method == meth].set_index(["model", "kind"])
            ratio = np.exp(np.log(x.beta_ce / u.beta_ce).mean())
            dbrier = 1e4 * (x.brier - u.brier).mean()
            head = (
                f"| {kind} | {u.beta_ce.mean():.4f} | {u.brier.mean():.4f}"
                if i == 0
                else "| | |"
            )
            tail = f"{goal} / {rows} | {brier_only}" if i == 0 else " | "
            lines.append(f"{head} | {meth} | {ratio:.3f} | {dbrier:+.1f} | {tail} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="LABEL=path/to/run.csv")
    parser.add_argument("--csv", type=Path, default=None, help="write all runs here")
    args = parser.parse_args(argv)
    frames = []
    for spec in args.runs:
        label, path = spec.split("=", 1)
        R = pd.read_csv(path)
        frames.append(R.assign(run=label))
        print(f"\n### {label}\n\n{summarise(R)}")
    if args.csv is not None:
        pd.concat(frames, ignore_index=True).to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
