# SPDX-License-Identifier: MIT
"""Compare the text embeddings the partitions see (evaluation beta hidden).

Reads the 2-seed runs of ``learned_partition.py`` stored in
``results/learned_partition_hypotheses.csv`` (TF-IDF+SVD: runs A + E + G at
32-d, F + H at 128-d) and ``results/learned_partition_minilm.csv``
(``--embedding minilm``: runs M32, M128). Per embedding and confidence kind:
UMD's mean CE(h;dataset), each beta-method's CE relative to UMD's (geometric
mean over models), the geometric mean of the best beta-method's ratio per row
(picked on the test split, the text-oracle diagnostic excluded), and the goal
count (that best method has CE <= 0.8 x UMD's and a Brier no worse), for the
partitions and for the text-oracle diagnostic alone.

Usage::

    python benchmarks/studies/learned_partition_embeddings.py
"""

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness
from _measure import RESULTS  # noqa: E402

PARTS = ("text-oracle", "kmeans", "kd-pca", "tree-raw-pca-free")
METHODS = [f"{a} {p}" for p in PARTS for a in ("BB", "HS-BB")]
REAL = [m for m in METHODS if "oracle" not in m]
ORACLE = [m for m in METHODS if "oracle" in m]
EMBEDDINGS = {
    "TF-IDF+SVD 32-d": ("hypotheses", ("A", "E", "G")),
    "TF-IDF+SVD 128-d": ("hypotheses", ("F", "H")),
    "MiniLM 32-d": ("minilm", ("M32",)),
    "MiniLM 128-d": ("minilm", ("M128",)),
}


def _goal(block, umd, methods):
    b = block[block.method.isin(methods)]
    top = b.loc[b.beta_ce.idxmin()]
    met = top.beta_ce <= 0.8 * umd.beta_ce and top.brier <= umd.brier
    return bool(met), top.beta_ce / umd.beta_ce


def table(frames):
    lines = [
        "| embedding | kind | UMD CE | "
        + " | ".join(METHODS)
        + " | best (geo. mean) | goal met | goal, text-oracle |",
        "|---|---|---|" + "---|" * len(METHODS) + "---|---|---|",
    ]
    for name, (file, runs) in EMBEDDINGS.items():
        R = frames[file]
        R = R[R.run.isin(runs) & R.method.isin(["B (UMD)", *METHODS])]
        if R.empty:
            continue
        R = R.drop_duplicates(["model", "kind", "seed", "method"])
        m = R.groupby(["model", "kind", "method"]).mean(numeric_only=True)
        m = m.reset_index()
        for kind in ("verbal", "token"):
            mm = m[m.kind == kind]
            u = mm[mm.method == "B (UMD)"].set_index("model").beta_ce
            cells = []
            for meth in METHODS:
                x = mm[mm.method == meth].set_index("model").beta_ce
                ratio = np.exp(np.log(x / u.loc[x.index]).mean()) if len(x) else np.nan
                cells.append(f"{ratio:.3f}")
            met = met_oracle = 0
            best = []
            for _, block in mm.groupby("model"):
                umd = block[block.method == "B (UMD)"].iloc[0]
                ok, ratio = _goal(block, umd, REAL)
                met += ok
                best.append(ratio)
                met_oracle += _goal(block, umd, ORACLE)[0]
            n = mm.model.nunique()
            lines.append(
                f"| {name} | {kind} | {u.mean():.4f} | "
                + " | ".join(cells)
                + f" | {np.exp(np.mean(np.log(best))):.3f} | {met} / {n} "
                f"| {met_oracle} / {n} |"
            )
    return "\n".join(lines)


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    frames = {
        f: pd.read_csv(RESULTS / f"learned_partition_{f}.csv")
        for f in ("hypotheses", "minilm")
    }
    print(table(frames))


if __name__ == "__main__":
    main()
