# SPDX-License-Identifier: MIT
"""Share of the oracle's gain each partition recovers on planted groups (issue 21).

Run: ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/studies/planted_groups.py``
(``PLANTED_SEEDS``, ``PLANTED_N_NULL``: seeds and null samples, 5 and 20).
``tree()`` is ``CalibrationTreePartitioner()`` (a depth-3 tree on two
learned directions with its significance stop; the merge strategy measured
here until issue 38 is retired, ``results/planted_groups.md`` keeps it).
Calibration rows: 16 blobs in 32-d, sizes 20 b .. 5,000 (b = 50); test rows:
2,000 per group from the same truth. Reports true CE (against the planted
probabilities), Brier and log loss on the test rows, the share
``(UMD - method) / (UMD - oracle)`` of the true CE, and on calibrated null
samples how often each learned partition keeps more than one cell.
"""

import argparse
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(
    0, os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)  # the harness
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sklearn
from _measure import RESULTS  # noqa: E402
from _planted import planted_groups, true_calibration_error  # noqa: E402
from sklearn.cluster import KMeans  # noqa: E402

import sklearn_betacal
from sklearn_betacal import (  # noqa: E402
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    ClusterPartitioner,
    GroupColumnPartitioner,
    KDTreePartitioner,
    UMDBinner,
)

B = 50
SEEDS = tuple(range(int(os.environ.get("PLANTED_SEEDS", "5"))))
N_NULL = int(os.environ.get("PLANTED_N_NULL", "20"))


def partitions():
    return {
        "kd-tree": lambda: KDTreePartitioner(),
        "KMeans(8)": lambda: ClusterPartitioner(KMeans(8, n_init=1)),
        "KMeans(16)": lambda: ClusterPartitioner(KMeans(16, n_init=1)),
        "KMeans(32)": lambda: ClusterPartitioner(KMeans(32, n_init=1)),
        "tree()": lambda: CalibrationTreePartitioner(),
        "tree(stop off)": lambda: CalibrationTreePartitioner(split_alpha=None),
        # lever (a) of the session-11 one-liner study: the honest fraction
        "tree(honest 0.3)": lambda: CalibrationTreePartitioner(honest_fraction=0.3),
        "tree(honest 0.7)": lambda: CalibrationTreePartitioner(honest_fraction=0.7),
    }


def scores(f, p, g, y):
    f = np.clip(f, 1e-12, 1 - 1e-12)
    return (
        true_calibration_error(f, p, g),
        float(np.mean((f - y) ** 2)),
        float(-np.mean(y * np.log(f) + (1 - y) * np.log1p(-f))),
    )


def run_seed(seed, only=None):
    h, E, g, p, y, truth = planted_groups(
        16, size_range=(20 * B, 5000), random_state=seed
    )
    ht, Et, gt, pt, yt, _ = planted_groups(
        truth=truth, sizes=2000, random_state=1000 + seed
    )
    X, Xt = np.column_stack([h, E]), np.column_stack([ht, Et])
    out = {}
    umd = UMDBinner(points_per_bin=B, random_state=seed).fit(h.reshape(-1, 1), y)
    out["UMD"] = scores(umd.predict_proba(ht.reshape(-1, 1))[:, 1], pt, gt, yt)
    oracle = BetaBinningCalibrator(
        GroupColumnPartitioner(0), points_per_bin=B, random_state=seed
    ).fit(np.column_stack([h, g]), y)
    out["oracle"] = scores(
        oracle.predict_proba(np.column_stack([ht, gt]))[:, 1], pt, gt, yt
    )
    for name, make in partitions().items():
        if only and name not in only:
            continue
        t0 = time.perf_counter()
        bb = BetaBinningCalibrator(make(), points_per_bin=B, random_state=seed)
        bb.fit(X, y)
        out[name] = scores(bb.predict_proba(Xt)[:, 1], pt, gt, yt) + (
            len(bb.cells_),
            time.perf_counter() - t0,
        )
    out.update(run_mcgrad(h, E, y, ht, Et, gt, pt, yt))
    return out


def run_mcgrad(h, E, y, ht, Et, gt, pt, yt):
    """MCGrad on the embedding (benchmark peer; skipped when not importable)."""
    try:
        import pandas as pd
        from mcgrad.methods import MCGrad
    except ImportError:
        return {}
    cols = [f"e{j}" for j in range(E.shape[1])]

    def frame(hh, EE, yy=None):
        df = pd.DataFrame(EE, columns=cols)
        # MCGrad takes the logit of the confidence: exactly 0 or 1 is clipped
        df["h"] = np.clip(hh, 1e-7, 1 - 1e-7)
        if yy is not None:
            df["y"] = yy
        return df

    t0 = time.perf_counter()
    model = MCGrad()
    model.fit(frame(h, E, y), "h", "y", numerical_feature_column_names=cols)
    t1 = time.perf_counter()
    f = np.asarray(
        model.predict(frame(ht, Et), "h", numerical_feature_column_names=cols)
    )
    t2 = time.perf_counter()
    return {"MCGrad": scores(f, pt, gt, yt) + (float("nan"), t1 - t0, t2 - t1)}


#: the partitions whose calibrated-null split rate the report gives
NULL_NAMES = (
    "tree()",
    "tree(stop off)",
)


def null_split_rate(makers=None, n_null=None):
    """Share of calibrated samples on which each partition keeps > 1 cell.

    ``makers``: name -> callable of the sample index returning an unfitted
    partitioner (default: :data:`NULL_NAMES` of :func:`partitions`);
    ``n_null``: number of samples (default ``PLANTED_N_NULL``).
    """
    if makers is None:
        makers = {
            name: (lambda r, name=name: partitions()[name]()) for name in NULL_NAMES
        }
    n_null = N_NULL if n_null is None else n_null
    split = dict.fromkeys(makers, 0)
    for r in range(n_null):
        h, E, g, p, y, _ = planted_groups(
            16, size_range=(20 * B, 5000), null=True, random_state=500 + r
        )
        X = np.column_stack([h, E])
        for name, make in makers.items():
            bb = BetaBinningCalibrator(make(r), points_per_bin=B, random_state=r).fit(
                X, y
            )
            split[name] += len(bb.cells_) > 1
    return {k: v / n_null for k, v in split.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", nargs="+", default=None, help="partitions to run (default: all)"
    )
    parser.add_argument("--out", default=str(RESULTS / "planted_groups.md"))
    args = parser.parse_args(argv)
    load0 = open("/proc/loadavg").read().split()[:3]
    t0 = time.perf_counter()
    runs = [run_seed(s, args.only) for s in SEEDS]
    null_names = [n for n in NULL_NAMES if not args.only or n in args.only]
    null_names += [n for n in args.only or () if n.startswith("tree(honest")]
    null = null_split_rate(
        {name: (lambda r, name=name: partitions()[name]()) for name in null_names}
    )
    names = ["UMD", *(n for n in partitions() if not args.only or n in args.only)]
    names.append("oracle")
    if "MCGrad" in runs[0]:
        names.append("MCGrad")
    else:
        print("mcgrad is not importable: MCGrad skipped")
    lines = [
        "# Planted groups: share of the oracle's gain (issue 21, items 2-3)",
        "",
        f"16 Gaussian blobs in 32-d, own intercept/slope on the logit; sizes "
        f"{20 * B}..5000 (log-uniform), b = {B}; test 2,000 rows per group; "
        f"seeds {SEEDS}; null split rate over {N_NULL} calibrated samples.",
        f"Python {platform.python_version()}, numpy {np.__version__}, "
        f"scikit-learn {sklearn.__version__}, sklearn_betacal "
        f"{getattr(sklearn_betacal, '__version__', '?')}; load average "
        f"{' '.join(load0)} (start) / "
        f"{' '.join(open('/proc/loadavg').read().split()[:3])} (end); "
        f"{time.perf_counter() - t0:.0f} s.",
        "",
        "| partition | true CE | Brier | log loss | share of oracle gain | cells | fit s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in names:
        v = np.array([[*r[name][:3]] for r in runs])
        share = [
            (r["UMD"][0] - r[name][0]) / (r["UMD"][0] - r["oracle"][0]) for r in runs
        ]
        cells = (
            f"{np.mean([r[name][3] for r in runs]):.1f}"
            if len(runs[0][name]) > 3
            else "-"
        )
        fit = (
            f"{np.mean([r[name][4] for r in runs]):.2f}"
            if len(runs[0][name]) > 3
            else "-"
        )
        m = v.mean(axis=0)
        lines.append(
            f"| {name} | {m[0]:.4f} | {m[1]:.4f} | {m[2]:.4f} | "
            f"{np.mean(share):.2f} ({min(share):.2f}..{max(share):.2f}) | {cells} | {fit} |"
        )
    lines += [
        "",
        "Calibrated null: share of samples where the partition keeps > 1 cell:",
        "",
    ]
    lines += [f"- {k}: {v:.2f}" for k, v in null.items()]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out, "w") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
