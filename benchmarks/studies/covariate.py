# SPDX-License-Identifier: MIT
"""Which covariate should HS-BB's and S-BB's scaler regress on: h or logit(h)?

Issue 10 item 4: switch the default to the (data-aware clipped) logit only if
simulation with known truth AND every real set agree. For each set, the rows
are split 60:40 (calibration : test) per seed, ``ScalingBetaBinningCalibrator``
(HS-BB, and S-BB with ``scaler="pooled"``) is fitted with each covariate on the
same calibration rows and cells, and the test rows are scored by

- the debiased squared beta-CE (Kumar et al. 2019) on the set's own cells, x100;
- the Brier score.

Sets:

- simulation "flat-then-steep": accuracy ``0.3`` up to ``h = 0.7``, then
  rising steeply to ``0.95`` at ``h = 1``, a different offset per group
  (the shape the issue reports for verbal confidences);
- simulation "linear": accuracy ``a_g + 0.6 h`` (Eq. 5 on the raw confidence
  is exactly right: the case for the paper's choice);
- the Influences study (``$BETACAL_SHARED_DATA/influences``), verb prompt, per
  dataset and confidence kind (verbal, token), all models pooled, the model
  as the cell;
- the six CIFAR record sets (``$BETACAL_SHARED_DATA/cifar``), top-label confidence,
  the predicted class as the cell.

Usage::

    nice .venv/bin/python benchmarks/studies/covariate.py --seeds 3 \
        --out benchmarks/results/covariate.md
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import brier_score_loss

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness
from _measure import (  # noqa: E402
    RESULTS,
    add_data_argument,
    cifar_records,
    load_influences,
)

from sklearn_betacal import GroupColumnPartitioner, ScalingBetaBinningCalibrator
from sklearn_betacal.metrics import beta_calibration_error


def simulated(shape, n=6000, n_groups=6, seed=0):
    rng = np.random.default_rng(1000 + seed)
    g = rng.integers(0, n_groups, size=n)
    h = rng.beta(5, 1.5, size=n)  # overconfident-looking mass near 1
    offset = np.linspace(-0.15, 0.15, n_groups)[g]
    if shape == "flat-then-steep":
        acc = np.where(h < 0.7, 0.3, 0.3 + 0.65 * ((h - 0.7) / 0.3) ** 2)
    else:
        acc = 0.2 + 0.6 * h
    acc = np.clip(acc + offset, 0.01, 0.99)
    y = (rng.uniform(size=n) < acc).astype(int)
    return h, g, y


def influences_sets(data):
    A = load_influences(data)
    for dataset in sorted(A.dataset.unique()):
        D = A[A.dataset == dataset]
        for kind, col in (
            ("verbal", "verbal_confidence"),
            ("token", "extracted_seq_prob"),
        ):
            rows = D[D[col].between(0, 1)]
            g = pd.factorize(rows.model, sort=True)[0]
            yield (
                f"influences {dataset} {kind}",
                rows[col].to_numpy(float),
                g,
                rows.correct_judge.to_numpy(int),
            )


def cifar_sets(data):
    for path in cifar_records(data):
        d = np.load(path)
        probs, truth = d["predictions"], d["ground_truth"]
        pred = probs.argmax(axis=1)
        yield (
            f"cifar {path.stem}",
            probs.max(axis=1),
            pred,
            (pred == truth).astype(int),
        )


def score(h, g, y, seed, scaler, covariate, b):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(h.size)
    cut = int(0.6 * h.size)
    cal, test = perm[:cut], perm[cut:]
    X = np.column_stack([h, g])
    est = ScalingBetaBinningCalibrator(
        GroupColumnPartitioner(),
        points_per_bin=b,
        scaler=scaler,
        covariate=covariate,
        random_state=seed,
    ).fit(X[cal], y[cal])
    p = est.predict_proba(X[test])[:, 1]
    deb = beta_calibration_error(
        y[test], p, cells=g[test], norm="l2_squared", debiased=True
    )
    return 100 * deb, brier_score_loss(y[test], p)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--points-per-bin", type=int, default=50)
    parser.add_argument("--out", type=Path, default=RESULTS / "covariate.md")
    add_data_argument(parser)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    sets = [
        (f"simulation {s}", *simulated(s, seed=0))
        for s in ("flat-then-steep", "linear")
    ]
    sets += list(influences_sets(args.data)) + list(cifar_sets(args.data))
    rows = []
    for name, h, g, y in sets:
        for scaler in ("hierarchical", "pooled"):
            res = {}
            for covariate in ("confidence", "logit"):
                vals = [
                    score(h, g, y, seed, scaler, covariate, args.points_per_bin)
                    for seed in range(args.seeds)
                ]
                res[covariate] = np.mean(vals, axis=0)
            rows.append(
                {
                    "set": name,
                    "method": "HS-BB" if scaler == "hierarchical" else "S-BB",
                    "n": h.size,
                    "debCE_conf": res["confidence"][0],
                    "debCE_logit": res["logit"][0],
                    "brier_conf": res["confidence"][1],
                    "brier_logit": res["logit"][1],
                }
            )
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    table["logit_better_CE"] = table.debCE_logit <= table.debCE_conf
    table["logit_better_brier"] = table.brier_logit <= table.brier_conf
    lines = [
        "# HS-BB / S-BB scaler covariate: raw confidence vs logit",
        "",
        f"Seeds: {args.seeds} (60:40 calibration/test split per seed), "
        f"points_per_bin={args.points_per_bin}. Load: `{os.getloadavg()}` "
        f"(2 cores shared by 8 engineers). Runtime {time.perf_counter() - start:.0f} s.",
        "debiased CE²(h;β) x100 on the set's own cells (lower is better); Brier "
        "(lower is better). Mean over seeds.",
        "",
        "| set | method | n | CE² conf | CE² logit | Brier conf | Brier logit |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        lines.append(
            f"| {r.set} | {r.method} | {r.n} | {r.debCE_conf:.3f} | "
            f"{r.debCE_logit:.3f} | {r.brier_conf:.4f} | {r.brier_logit:.4f} |"
        )
    lines += [
        "",
        f"logit at least as good by debiased CE²: {int(table.logit_better_CE.sum())} "
        f"of {len(table)} rows; by Brier: {int(table.logit_better_brier.sum())} of "
        f"{len(table)}.",
        "",
    ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
