# SPDX-License-Identifier: MIT
"""The one-liner ``BetaBinningCalibrator(CalibrationTreePartitioner())`` on every set.

Issue 21, item 3, written for the merge stop of the retired
``strategy="merge"`` (issue 38 retired it; ``results/merge_stop.md`` keeps
its figures). Today it runs the one-liner, or its arms given by
``--honest`` / ``--split-alpha`` (the tree's parameters), side by side in one
process on the same rows, each given unfitted (its honest split); the
harness of ``label_floor.py``:

- ``planted``: 16 Gaussian blobs in 32-d, each its own intercept and slope on
  the logit, 1,000-5,000 calibration rows per group, 2,000 test rows per group,
  b = 50: share of the oracle's gain in the true CE, and on calibrated null
  samples how often the partition keeps more than one cell;
- ``influences``: the Influences study, per model and confidence kind, the QA
  dataset hidden (learned_partition.py's 20:60:10:10 split and 32-d TF-IDF+SVD
  embedding of question + answer; b tuned over 20, 40, 80 on the tuning split
  by the debiased beta-CE; the oracle given the dataset);
- ``triviaqa``: the bundled TriviaQA set (12 models, 1,000 questions), the
  answering model as the evaluation beta; the partition sees the model one-hot
  and a 16-d TF-IDF+SVD embedding (the same split and tuning);
- ``cifar``: CIFAR top-label (peers_mcgrad.py's six softmax record sets, 50/50
  split, b = 50, the predicted class as beta, the softmax row as features).

Run: ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python
benchmarks/studies/merge_stop.py`` (``--sets``, ``--seeds``, ``--n-null``);
writes ``results/oneliner_sets.md`` and its CSV.
"""

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
from threadpoolctl import threadpool_limits

from sklearn_betacal import (
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    GroupColumnPartitioner,
    TextEmbedder,
    UMDBinner,
)
from sklearn_betacal.cli._protocol import CONFIDENCE_COLUMNS, split_indices
from sklearn_betacal.datasets import load_triviaqa_confidence
from sklearn_betacal.metrics import beta_calibration_error

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))  # the harness
sys.path.insert(0, str(HERE.parent))
from _measure import RESULTS, add_data_argument, data_dir, load_influences  # noqa: E402
from _planted import planted_groups  # noqa: E402
from peers_mcgrad import cifar_sets, scores  # noqa: E402
from planted_groups import null_split_rate  # noqa: E402

B = 50
B_GRID = (20, 40, 80)
#: the arms: name -> CalibrationTreePartitioner parameters
STOPS = {"one-liner": {}}


def one_liner(stop, seed):
    """The one-liner's partitioner under arm ``stop`` (:data:`STOPS`)."""
    return CalibrationTreePartitioner(random_state=seed, **STOPS[stop])


def debiased(y, p, g):
    return beta_calibration_error(y, p, cells=g, norm="l2_squared", debiased=True)


def tuned(make, X, y, g, cal, tune_rows):
    """Fit every b of B_GRID on cal, keep the best debiased CE on tune_rows."""
    best, best_score = None, np.inf
    for b in B_GRID:
        model = make(b).fit(X[cal], y[cal])
        score = debiased(
            y[tune_rows], model.predict_proba(X[tune_rows])[:, 1], g[tune_rows]
        )
        if score < best_score:
            best, best_score = model, score
    return best


def split_protocol(set_name, h, y, g, X, XO, seed, split):
    """UMD, the oracle and both stops on learned_partition.py's split."""
    _, cal, tun, test = split
    rows = []

    def add(method, model, XX, cells=np.nan):
        p = model.predict_proba(XX[test])[:, 1]
        rows.append(
            {"set": set_name, "seed": seed, "method": method, "cells": cells}
            | scores(y[test], p, g[test])
        )

    H = h.reshape(-1, 1)
    add(
        "UMD",
        tuned(
            lambda b: UMDBinner(points_per_bin=b, random_state=seed), H, y, g, cal, tun
        ),
        H,
    )
    oracle = tuned(
        lambda b: BetaBinningCalibrator(
            GroupColumnPartitioner(0), points_per_bin=b, random_state=seed
        ),
        XO,
        y,
        g,
        cal,
        tun,
    )
    add("oracle", oracle, XO)
    for stop in STOPS:
        est = tuned(
            lambda b, stop=stop: BetaBinningCalibrator(
                one_liner(stop, seed), points_per_bin=b, random_state=seed
            ),
            X,
            y,
            g,
            cal,
            tun,
        )
        add(stop, est, X, len(est.cells_))
    return rows


def embedded(rows, part, n_components, seed):
    """TF-IDF+SVD of question + answer, fitted on the partition split."""
    emb = TextEmbedder(
        text_columns=["question", "answer"],
        method="tfidf-svd",
        n_components=n_components,
        random_state=seed,
    ).fit(rows.iloc[part])
    return np.asarray(emb.transform(rows), dtype=float)


def influences_rows(data, seeds):
    A = load_influences(data)
    for model in sorted(A.model.unique()):
        for kind in ("verbal", "token"):
            col = CONFIDENCE_COLUMNS[kind]
            rows = A[(A.model == model) & A[col].between(0, 1)].reset_index(drop=True)
            h = rows[col].to_numpy(float)
            y = rows.correct_judge.to_numpy(int)
            g = pd.factorize(rows.dataset, sort=True)[0]  # evaluation beta: hidden
            for seed in seeds:
                split = split_indices(len(rows), (0.2, 0.6, 0.1, 0.1), seed)
                Z = embedded(rows, split[0], 32, seed)
                X, XO = np.column_stack([h, Z]), np.column_stack([h, g])
                for r in split_protocol(
                    f"influences {kind}", h, y, g, X, XO, seed, split
                ):
                    yield r | {"model": model}


def triviaqa_rows(seeds):
    F = load_triviaqa_confidence().frame
    for kind, col in (("verbal", "verbal_confidence"), ("token", "extracted_seq_prob")):
        rows = F[F[col].between(0, 1)].reset_index(drop=True)
        rows["answer"] = rows["answer"].fillna("").astype(str)
        rows["question"] = rows["question"].astype(str)
        h = rows[col].to_numpy(float)
        y = rows.correct_judge.to_numpy(int)
        g = pd.factorize(rows.model, sort=True)[0]  # the answering model
        onehot = np.eye(g.max() + 1)[g]
        for seed in seeds:
            split = split_indices(len(rows), (0.2, 0.6, 0.1, 0.1), seed)
            Z = embedded(rows, split[0], 16, seed)
            X, XO = np.column_stack([h, onehot, Z]), np.column_stack([h, g])
            yield from split_protocol(f"triviaqa {kind}", h, y, g, X, XO, seed, split)


def planted_rows(seeds):
    for seed in seeds:
        h, E, g, p, y, truth = planted_groups(
            16, size_range=(20 * B, 5000), random_state=seed
        )
        ht, Et, gt, pt, yt, _ = planted_groups(
            truth=truth, sizes=2000, random_state=1000 + seed
        )
        X, Xt = np.column_stack([h, E]), np.column_stack([ht, Et])
        base = {"set": "planted", "seed": seed}
        umd = UMDBinner(points_per_bin=B, random_state=seed).fit(h.reshape(-1, 1), y)
        yield (
            base
            | {"method": "UMD"}
            | scores(yt, umd.predict_proba(ht.reshape(-1, 1))[:, 1], gt, pt)
        )
        oracle = BetaBinningCalibrator(
            GroupColumnPartitioner(0), points_per_bin=B, random_state=seed
        ).fit(np.column_stack([h, g]), y)
        yield (
            base
            | {"method": "oracle"}
            | scores(yt, oracle.predict_proba(np.column_stack([ht, gt]))[:, 1], gt, pt)
        )
        for stop in STOPS:
            bb = BetaBinningCalibrator(
                one_liner(stop, seed), points_per_bin=B, random_state=seed
            ).fit(X, y)
            yield (
                base
                | {"method": stop, "cells": len(bb.cells_)}
                | scores(yt, bb.predict_proba(Xt)[:, 1], gt, pt)
            )


def null_rate(n_null):
    """Calibrated samples (of ``n_null``) on which each stop keeps > 1 cell."""
    makers = {stop: (lambda r, stop=stop: one_liner(stop, r)) for stop in STOPS}
    return {k: round(v * n_null) for k, v in null_split_rate(makers, n_null).items()}


def cifar_rows(data, seeds):
    for name, seed, ((h, Z, _g, y, _), (ht, Zt, gt, yt, _)) in cifar_sets(data, seeds):
        base = {"set": "cifar", "model": name, "seed": seed}
        umd = UMDBinner(points_per_bin=B, random_state=seed).fit(h.reshape(-1, 1), y)
        yield (
            base
            | {"method": "UMD"}
            | scores(yt, umd.predict_proba(ht.reshape(-1, 1))[:, 1], gt)
        )
        for stop in STOPS:
            bb = BetaBinningCalibrator(
                one_liner(stop, seed), points_per_bin=B, random_state=seed
            ).fit(np.column_stack([h, Z]), y)
            yield (
                base
                | {"method": stop, "cells": len(bb.cells_)}
                | scores(yt, bb.predict_proba(np.column_stack([ht, Zt]))[:, 1], gt)
            )


def ratio_rows(R, key=("set", "model", "seed")):
    """Per set and method of the records ``R``: ``(set, method, r, u, ratio,
    debiased)``, ``r`` and ``u`` the method's and UMD's rows on the same
    ``key``, ``ratio`` the geometric mean of beta-CE / UMD's and ``debiased``
    the median of the debiased ratio (the leading columns of every study's
    summary table)."""
    key = list(key)
    umd = R[R.method == "UMD"].set_index(key)
    for set_name in R.set.unique():
        for method in R.method.unique():
            r = R[(R.set == set_name) & (R.method == method)].set_index(key)
            if r.empty:
                continue
            u = umd.loc[r.index]
            ratio = np.exp(np.mean(np.log(r.beta_ce / u.beta_ce)))
            deb = np.median(r.beta_ce_debiased / u.beta_ce_debiased)
            yield set_name, method, r, u, ratio, deb


def summary(R):
    """Per set and method: geometric mean of beta-CE / UMD's, median of the
    debiased ratio, mean scores (and the planted share of the oracle's gain)."""
    key = ["set", "model", "seed"]
    oracle = R[R.method == "oracle"].set_index(key)
    lines = [
        "| set | method | beta-CE / UMD | debiased / UMD | share of oracle gain "
        "| Brier | log loss | AUROC | cells |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for set_name, method, r, u, ratio, deb in ratio_rows(R, key):
        col = "true_ce" if set_name == "planted" else "beta_ce"
        share = "-"
        if not oracle.empty and set(r.index) <= set(oracle.index):
            o = oracle.loc[r.index]
            s = (u[col] - r[col]) / (u[col] - o[col])
            share = f"{s.mean():.2f} ({s.min():.2f}..{s.max():.2f})"
        cells = "-" if r.cells.isna().all() else f"{r.cells.mean():.1f}"
        lines.append(
            f"| {set_name} | {method} | {ratio:.3f} | {deb:.3f} | {share} | "
            f"{r.brier.mean():.4f} | {r.log_loss.mean():.4f} | "
            f"{r.auroc.mean():.4f} | {cells} |"
        )
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument(
        "--sets",
        nargs="+",
        choices=["planted", "influences", "triviaqa", "cifar"],
        default=["planted", "influences", "triviaqa", "cifar"],
    )
    parser.add_argument("--seeds", type=int, default=2, help="influences seeds")
    parser.add_argument("--other-seeds", type=int, default=3, help="other sets")
    parser.add_argument("--n-null", type=int, default=20)
    parser.add_argument("--out", type=Path, default=RESULTS / "oneliner_sets.md")
    parser.add_argument(
        "--honest",
        nargs="+",
        type=float,
        default=None,
        help="compare these honest_fraction values",
    )
    parser.add_argument(
        "--split-alpha",
        nargs="+",
        type=float,
        default=None,
        help="compare these split_alpha values",
    )
    args = parser.parse_args(argv)
    if args.honest or args.split_alpha:
        STOPS.clear()
        STOPS.update(
            {f"honest {f:g}": {"honest_fraction": f} for f in args.honest or ()}
        )
        STOPS.update(
            {f"split_alpha {a:g}": {"split_alpha": a} for a in args.split_alpha or ()}
        )
    threadpool_limits(1)
    load0, t0 = os.getloadavg(), time.perf_counter()
    seeds, other = range(args.seeds), range(args.other_seeds)
    records, null = [], None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if "planted" in args.sets:
            records += list(planted_rows(range(5)))
            null = null_rate(args.n_null)
        if "influences" in args.sets:
            records += list(influences_rows(args.data, seeds))
        if "triviaqa" in args.sets:
            records += list(triviaqa_rows(other))
        if "cifar" in args.sets:
            records += list(cifar_rows(data_dir(args.data), other))
    R = pd.DataFrame(records)
    R["model"] = R.get("model", pd.Series(index=R.index, dtype=object)).fillna("-")
    R.to_csv(args.out.with_suffix(".csv"), index=False)
    load1 = os.getloadavg()
    lines = [
        "# The one-liner on every set (issue 21, item 3; arms side by side)",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"{time.perf_counter() - t0:.0f} s; load average (1, 5, 15 min) "
        f"{' '.join(f'{x:.2f}' for x in load0)} (start) / "
        f"{' '.join(f'{x:.2f}' for x in load1)} (end), 2 shared cores. "
        f"Python {platform.python_version()}, numpy {np.__version__}, "
        f"scikit-learn {sklearn.__version__}. The arms side by side in one "
        "process on the same rows (see the script's docstring for the sets); "
        f"influences seeds {list(seeds)}, TriviaQA and CIFAR seeds {list(other)}, "
        "planted seeds 0-4.",
        "",
        "beta-CE / UMD: geometric mean over (set, seed) of the plug-in beta-CE "
        "over UMD's; debiased / UMD: median of the debiased squared beta-CE "
        "ratio; share of the oracle's gain: (UMD - method) / (UMD - oracle) in "
        "the beta-CE (planted: the true CE), mean (min..max); scores are means.",
        "",
        *summary(R),
    ]
    if null is not None:
        lines += [
            "",
            f"Calibrated null (planted, {args.n_null} samples): samples where the "
            "one-liner keeps more than one cell:",
            "",
            *(f"- {k}: {v} / {args.n_null}" for k, v in null.items()),
        ]
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
