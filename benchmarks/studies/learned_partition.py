# SPDX-License-Identifier: MIT
"""Does the partition find the miscalibration? Learned tree vs kd-trees vs a clusterer.

Issue 10 item 1 / goal 1. On the Influences-on-LLM-Calibration study
(``$BETACAL_SHARED_DATA/influences``, verb prompt), per answering model and
confidence kind, the four QA datasets (NQ, SciQ, TriviaQA, WikiQA) are pooled
and the **dataset is the evaluation beta**, hidden from the calibrators: they
see the confidence and a TF-IDF+SVD embedding of question + answer text only
(:class:`TextEmbedder`, fitted on the partition split), so a partition has to
*find* the datasets (on which the model is miscalibrated differently) in the
text.

Protocol per (model, kind, seed): 20:60:10:10 split (partition : calibration
: tuning : test). Partitions fitted on the partition split (the learned tree
with its labels and confidences; it is never binned: honest), frozen:

- ``tree``: :class:`CalibrationTreePartitioner` (depths 1-3), its defaults
  (splits along the two learned recalibration directions, significance
  stop); ``tree-free``: the same without the stop (``split_alpha=None``; the
  depth is tuned anyway); ``tree-pca-free``: the learned directions and the
  top 8 principal directions of the embedding (``n_components=8``), no stop;
  ``tree-raw``, ``tree-raw-pca``, ``tree-raw-pca-free``: the same without
  the learned directions (``directions=None``: the raw coordinates, the top
  8 principal directions, the latter without the stop). Each is grown on the
  partition split with its labels and confidences and frozen: honest by a
  separate split, as the paper's kd-tree; ``tree-honest``,
  ``tree-free-honest`` and ``tree-raw-pca-free-honest`` (not in the default
  run, ``--partitions``): ``tree``, ``tree-free`` and ``tree-raw-pca-free``
  given unfitted to the calibrator, whose honest split grows it on half of
  the calibration rows and bins the other half (what
  ``BetaBinningCalibrator(CalibrationTreePartitioner())`` does);
- ``kd-cycle``, ``kd-max_spread``, ``kd-pca``: :class:`KDTreePartitioner`
  (depths 1-3);
- ``kmeans``: :class:`ClusterPartitioner` with KMeans (2, 4, 8 clusters).

Not in the default run (``--partitions``): ``tree-raw-pca-free-residual`` (the
learned tree on the residual ``y - h`` instead of the Platt scores) and two
diagnostics that are not methods: ``oracle`` (the hidden dataset itself given
to the calibrators as the partition, the ceiling of any partition) and
``text-oracle`` (the dataset as a logistic regression on the embedding
predicts it, trained on the partition split: what the text can tell).
``--b-grid`` and ``--n-components`` change the points-per-bin grid (of UMD
and the beta-methods alike) and the embedding's dimension.

Each partition is used by BB (:class:`BetaBinningCalibrator`) and HS-BB
(:class:`ScalingBetaBinningCalibrator`); baselines UMD (B), Platt (S) and
isotonic regression. Hyper-parameters (depth / clusters x points per bin) are
tuned on the tuning split by the debiased squared CE(h; dataset). Reported on
the test split: CE(h; dataset) (plug-in, l1) with its noise floor, the
debiased squared CE x100, and the Brier score.

Usage::

    nice .venv/bin/python benchmarks/studies/learned_partition.py --seeds 3 \
        --out benchmarks/results/learned_partition.md
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans
from sklearn.frozen import FrozenEstimator
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss

from sklearn_betacal import (
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    ClusterPartitioner,
    GroupColumnPartitioner,
    KDTreePartitioner,
    PlattScaler,
    ScalingBetaBinningCalibrator,
    TextEmbedder,
    UMDBinner,
    _text,
)
from sklearn_betacal.cli._protocol import CONFIDENCE_COLUMNS, split_indices
from sklearn_betacal.metrics import (
    beta_calibration_error,
    beta_calibration_noise_floor,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness
from _measure import (  # noqa: E402
    RESULTS,
    add_data_argument,
    load_influences,
    markdown_table,
)

B_GRID = (20, 40, 80)
DEPTHS = (1, 2, 3)
CLUSTERS = (2, 4, 8)


#: the learned tree's variants: its defaults (learned recalibration
#: directions, significance stop), the same without the stop (the depth is
#: tuned on the tuning split, which guards against noise splits), with the
#: top 8 principal directions too; and each without the learned directions
TREES = {
    "tree": {},
    "tree-free": {"split_alpha": None},
    "tree-pca-free": {"n_components": 8, "split_alpha": None},
    "tree-raw": {"directions": None},
    "tree-raw-pca": {"directions": None, "n_components": 8},
    "tree-raw-pca-free": {"directions": None, "n_components": 8, "split_alpha": None},
}
DEFAULT_KINDS = (*TREES, "kd-cycle", "kd-max_spread", "kd-pca", "kmeans")
#: not in the default run (``--partitions``): the learned tree on the
#: residual ``y - h`` instead of the Platt (logit-scale) scores
TREES["tree-raw-pca-free-residual"] = {
    **TREES["tree-raw-pca-free"],
    "criterion": "residual",
}


#: diagnostics, not methods (``--partitions``): the hidden beta given to the
#: calibrator (``oracle``: the ceiling of any partition), and the dataset as a
#: logistic regression on the embedding predicts it, trained on the
#: partition split's datasets (``text-oracle``: what the text can tell)
ORACLES = ("oracle", "text-oracle")


#: grown *inside* the calibrator instead (unfitted, so BB's honest split
#: grows it on half of the calibration rows and bins the other half; the
#: partition split is then left to the unsupervised partitions)
HONEST = {
    "tree-raw-pca-free-honest": TREES["tree-raw-pca-free"],
    "tree-honest": TREES["tree"],
    "tree-free-honest": TREES["tree-free"],
}
#: the one-liner ``BetaBinningCalibrator(CalibrationTreePartitioner())``,
#: only its points per bin tuned (issue 21; the merge arms measured here
#: until issue 38 are retired): the tree, and the tree on the raw features
ONELINERS = {
    "oneliner": {},
    "oneliner-raw": {"directions": None},
}


def partitions(kind, Zp, yp, hp, leaf, seed):
    if kind in ORACLES:  # a column of X: the beta itself, or its text estimate
        return [GroupColumnPartitioner(group_column=0)]
    if kind in ONELINERS:  # unfitted, defaults: the calibrator's honest split
        return [CalibrationTreePartitioner(random_state=seed, **ONELINERS[kind])]
    if kind in HONEST:  # unfitted: min_samples_leaf "auto" = 2 b of the grid
        return [
            CalibrationTreePartitioner(max_depth=d, random_state=seed, **HONEST[kind])
            for d in DEPTHS
        ]
    if kind in TREES:
        return [
            CalibrationTreePartitioner(
                max_depth=d, min_samples_leaf=leaf, random_state=seed, **TREES[kind]
            ).fit(Zp, yp, confidence=hp)
            for d in DEPTHS
        ]
    if kind == "kmeans":
        return [
            ClusterPartitioner(KMeans(n_clusters=k, n_init=3, random_state=seed)).fit(
                Zp
            )
            for k in CLUSTERS
        ]
    axis = kind.split("-", 1)[1]
    return [
        KDTreePartitioner(max_depth=d, split_axis=axis, random_state=seed).fit(Zp)
        for d in DEPTHS
    ]


def debiased(y, p, g):
    return beta_calibration_error(y, p, cells=g, norm="l2_squared", debiased=True)


def tune(make, grid, X, y, cal, tune_rows, g):
    """Fit every grid point on cal, keep the best debiased CE on tune_rows."""
    best, best_score = None, np.inf
    for params in grid:
        model = make(**params).fit(X[cal], y[cal])
        score = debiased(
            y[tune_rows], model.predict_proba(X[tune_rows])[:, 1], g[tune_rows]
        )
        if score < best_score:
            best, best_score = model, score
    return best


def tune_umd(h, y, cal, tune_rows, g, b_grid, seed):
    """The UMD baseline: :func:`tune` over its points per bin ``b_grid``."""
    return tune(
        lambda b: UMDBinner(points_per_bin=b, random_state=seed),
        [{"b": b} for b in b_grid],
        h.reshape(-1, 1),
        y,
        cal,
        tune_rows,
        g,
    )


def run_one(
    rows,
    column,
    seed,
    kinds=DEFAULT_KINDS,
    b_grid=B_GRID,
    n_components=32,
    embedding="tfidf-svd",
):
    h = rows[column].to_numpy(float)
    y = rows.correct_judge.to_numpy(int)
    g = pd.factorize(rows.dataset, sort=True)[0]  # evaluation beta: hidden
    part, cal, tun, test = split_indices(len(rows), (0.2, 0.6, 0.1, 0.1), seed)
    emb = TextEmbedder(
        text_columns=["question", "answer"],
        method=embedding,
        n_components=n_components,
        random_state=seed,
    )
    emb.fit(rows.iloc[part])
    Z = np.asarray(emb.transform(rows), dtype=float)
    X = np.column_stack([h, Z])
    leaf = max(int(np.ceil(2 * min(b_grid) * len(part) / len(cal))), 10)
    out = {}

    def record(name, p):
        out[name] = {
            "beta_ce": beta_calibration_error(y[test], p, cells=g[test]),
            "floor": beta_calibration_noise_floor(y[test], p, cells=g[test]),
            "debiased_x100": 100 * debiased(y[test], p, g[test]),
            "brier": brier_score_loss(y[test], p),
        }

    record("None", h[test])
    umd = tune_umd(h, y, cal, tun, g, b_grid, seed)
    record("B (UMD)", umd.predict_proba(h[test].reshape(-1, 1))[:, 1])
    record("S (Platt)", PlattScaler().fit(h[cal], y[cal]).predict_proba(h[test])[:, 1])
    iso = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(h[cal], y[cal])
    record("isotonic", iso.predict(h[test]))
    for kind in kinds:
        parts = partitions(kind, Z[part], y[part], h[part], leaf, seed)
        XK = X
        if kind == "oracle":
            XK = np.column_stack([h, g])
        elif kind == "text-oracle":  # the dataset as the text predicts it
            clf = LogisticRegression(max_iter=1000).fit(Z[part], g[part])
            XK = np.column_stack([h, clf.predict(Z)])
        grid = [
            {
                "partitioner": pt
                if kind in HONEST or kind in ORACLES or kind in ONELINERS
                else FrozenEstimator(pt),
                "points_per_bin": b,
            }
            for pt in parts
            for b in b_grid
        ]
        for method, cls in (
            ("BB", BetaBinningCalibrator),
            ("HS-BB", ScalingBetaBinningCalibrator),
        ):
            est = tune(
                lambda cls=cls, **kw: cls(random_state=seed, **kw),
                grid,
                XK,
                y,
                cal,
                tun,
                g,
            )
            record(f"{method} {kind}", est.predict_proba(XK[test])[:, 1])
    return out


EMBEDDING_NAMES = {"tfidf-svd": "TF-IDF+SVD", "minilm": "MiniLM (PCA)"}


def _encode_each_text_once():
    """Memoise the MiniLM encoder per text for this process.

    MiniLM is fixed (nothing is fitted), so a text's 384-d vector is the same
    for every seed, split and kind; only TextEmbedder's PCA is fitted per seed.
    Stored as float32, the model's own output type (lossless); a text may sit
    in another batch than without the memo, which changes its vector only by
    the encoder's float32 rounding.
    """
    encode = _text._minilm_encode
    memo = {}

    def cached(texts, batch_size):
        texts = list(texts)
        new = [t for t in dict.fromkeys(texts) if t not in memo]
        if new:
            for t, v in zip(new, encode(new, batch_size), strict=True):
                memo[t] = v.astype(np.float32)
        return np.array([memo[t] for t in texts], dtype=np.float64)

    _text._minilm_encode = cached


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--kinds", nargs="+", default=["verbal", "token"])
    parser.add_argument("--models", nargs="*", default=None)
    parser.add_argument(
        "--b-grid",
        nargs="+",
        type=int,
        default=list(B_GRID),
        help="points per bin tried on the tuning split (UMD and every beta-method)",
    )
    parser.add_argument(
        "--n-components",
        type=int,
        default=32,
        help="dimension of the TF-IDF+SVD embedding the partitions see",
    )
    parser.add_argument(
        "--embedding",
        choices=["tfidf-svd", "minilm"],
        default="tfidf-svd",
        help="TextEmbedder method of the embedding the partitions see (minilm: "
        "the embeddings extra; each text is encoded once per run, the PCA to "
        "--n-components is fitted per seed on the partition split)",
    )
    parser.add_argument(
        "--partitions",
        nargs="+",
        default=list(DEFAULT_KINDS),
    )
    parser.add_argument(
        "--reuse",
        type=Path,
        default=None,
        help="CSV of an earlier run (same seeds): its rows of the partitions not "
        "recomputed are kept",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "learned_partition.md")
    parser.add_argument(
        "--combine",
        nargs="+",
        type=Path,
        default=None,
        help="only write the report from the CSVs of runs over disjoint models "
        "(e.g. two halves run in parallel); with --elapsed and --loads",
    )
    parser.add_argument("--elapsed", type=float, default=float("nan"))
    parser.add_argument(
        "--note",
        default=None,
        help="with --combine: how the combined runs were made (replaces the "
        "default note in the report's first paragraph)",
    )
    parser.add_argument("--loads", nargs=6, type=float, default=None)
    args = parser.parse_args(argv)
    if args.combine:
        R = pd.concat(
            [
                pd.read_csv(f, keep_default_na=False, na_values=[""])
                for f in args.combine
            ],
            ignore_index=True,
        )
        R.to_csv(args.out.with_suffix(".csv"), index=False)
        loads = args.loads or [float("nan")] * 6
        note = args.note or (
            f"; {len(args.combine)} runs over disjoint models, in parallel"
        )
        text = report(R, args, args.elapsed, loads[:3], loads[3:], note)
        args.out.write_text(text)
        print(text)
        return
    if args.embedding == "minilm":
        _encode_each_text_once()
    start = time.perf_counter()
    load_before = os.getloadavg()
    A = load_influences(args.data)
    models = args.models or sorted(A.model.unique())
    records = []
    for model in models:
        for kind in args.kinds:
            col = CONFIDENCE_COLUMNS[kind]
            rows = A[(A.model == model) & A[col].between(0, 1)].reset_index(drop=True)
            if rows.dataset.nunique() < 2 or len(rows) < 1000:
                continue
            for seed in range(args.seeds):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = run_one(
                        rows,
                        col,
                        seed,
                        args.partitions,
                        tuple(args.b_grid),
                        args.n_components,
                        args.embedding,
                    )
                for name, m in res.items():
                    records.append(
                        {
                            "model": model,
                            "kind": kind,
                            "seed": seed,
                            "method": name,
                            **m,
                        }
                    )
            print(
                f"{model} {kind} done ({time.perf_counter() - start:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    R = pd.DataFrame(records)
    if args.reuse is not None:
        old = pd.read_csv(args.reuse)
        redone = set(R.method)
        R = pd.concat([old[~old.method.isin(redone)], R], ignore_index=True)
        order = {m: i for i, m in enumerate(old.method.unique())}
        R = R.sort_values(
            ["model", "kind", "seed", "method"],
            key=lambda c: c.map(order) if c.name == "method" else c,
            kind="stable",
        )
    R.to_csv(args.out.with_suffix(".csv"), index=False)
    text = report(R, args, time.perf_counter() - start, load_before)
    args.out.write_text(text)
    print(text)


def report(R, args, elapsed, load_before, load_after=None, note=""):
    mean = R.groupby(["model", "kind", "method"], sort=False).mean(numeric_only=True)
    mean = mean.drop(columns="seed").reset_index()
    beta_methods = [
        m
        for m in mean.method.unique()
        if m.startswith(("BB", "HS-BB")) and m.split(" ", 1)[1] not in ORACLES
    ]  # the oracles are diagnostics: never the "best beta-method"
    lines = [
        "# Learned partition vs kd-trees vs a clusterer (evaluation beta hidden)",
        "",
        f"Seeds: {args.seeds}; {elapsed:.0f} s; load average at start "
        f"{tuple(round(v, 1) for v in load_before)}, at end "
        f"{tuple(round(v, 1) for v in load_after or os.getloadavg())} (2 shared "
        f"cores, run with nice){note}. Evaluation beta = the QA "
        "dataset, hidden from every calibrator (they see the confidence and a "
        f"{args.n_components}-d {EMBEDDING_NAMES[args.embedding]} embedding of "
        "question + answer). Means over seeds of "
        "the test split. Every partition is fitted on the partition split (the "
        "learned trees with its labels and confidences) and frozen: the learned "
        "trees are honest by a separate split, like the paper's kd-tree. tree: "
        "CalibrationTreePartitioner's defaults (splits along the two learned "
        "recalibration directions, significance stop); tree-free: the same "
        "without the stop (split_alpha=None; the depth is tuned on the tuning "
        "split); tree-pca-free: the learned and the top 8 principal directions "
        "(n_components=8), no stop; tree-raw, tree-raw-pca, tree-raw-pca-free: "
        "the same three kinds without the learned directions (directions=None): "
        "raw coordinates with the stop, the top 8 principal directions with "
        "and without it; tree-raw-pca-free-honest (where run): the last grown "
        "inside the calibrator, on half of the calibration rows (its honest "
        "split), binning the other half.",
        "",
        "## Summary over (model, kind) rows",
        "",
        "Geometric mean of each method's CE(h;dataset) relative to UMD's, share of "
        "rows where it beats UMD's CE with a Brier no worse, and mean Brier.",
        "",
    ]
    head = ["method", "CE / UMD CE (geo. mean)", "per seed (min-max)"]
    head += ["debiased CE² / UMD's (median)", "rows CE ≤ 0.8 UMD and Brier ≤ UMD"]
    head += ["mean Brier"]
    rows = []
    umd = mean[mean.method == "B (UMD)"].set_index(["model", "kind"])
    keyed = R.set_index(["model", "kind", "seed"])
    umd_seed = keyed[keyed.method == "B (UMD)"].beta_ce
    for method in mean.method.unique():
        m = mean[mean.method == method].set_index(["model", "kind"])
        u = umd.reindex(m.index)  # a method run on only some rows (e.g. -honest)
        ratio = m.beta_ce / u.beta_ce
        per_seed = np.log(keyed[keyed.method == method].beta_ce / umd_seed)
        per_seed = np.exp(per_seed.groupby(level="seed").mean())
        dratio = m.debiased_x100 / u.debiased_x100
        good = (m.beta_ce <= 0.8 * u.beta_ce) & (m.brier <= u.brier)
        rows.append(
            [
                method,
                f"{np.exp(np.log(ratio).mean()):.3f}",
                f"{per_seed.min():.3f}-{per_seed.max():.3f}",
                f"{dratio.median():.3f}",
                f"{int(good.sum())} / {len(good)}",
                f"{m.brier.mean():.4f}",
            ]
        )
    lines += markdown_table(head, rows)
    best = []
    for (model, kind), block in mean.groupby(["model", "kind"], sort=False):
        u = block[block.method == "B (UMD)"].iloc[0]
        beta = block[block.method.isin(beta_methods)]
        top = beta.loc[beta.beta_ce.idxmin()]
        real = block[~block.method.str.endswith(ORACLES)]
        winner = real.loc[real.debiased_x100.idxmin(), "method"]
        best.append(
            {
                "model": model,
                "kind": kind,
                "best beta-method": top.method,
                "its CE / UMD": top.beta_ce / u.beta_ce,
                "its Brier - UMD": top.brier - u.brier,
                "best by debiased CE": winner,
            }
        )
    B = pd.DataFrame(best)
    goal = (B["its CE / UMD"] <= 0.8) & (B["its Brier - UMD"] <= 0)
    lines += [
        "",
        "## Goal: best beta-method <= 0.8 x UMD's CE(h;dataset), Brier no worse",
        "",
        f"Met in {int(goal.sum())} of {len(B)} (model, kind) rows; a beta-method is "
        f"best by debiased CE in {int(B['best by debiased CE'].isin(beta_methods).sum())} "
        f"of {len(B)}.",
        "",
    ]
    head = ["model", "kind", "best beta-method", "its CE / UMD", "its Brier − UMD"]
    head += ["best by debiased CE"]
    rows = [
        [*r[:3], f"{r[3]:.3f}", f"{r[4]:+.4f}", r[5]] for r in B.itertuples(index=False)
    ]
    lines += markdown_table(head, rows)
    lines += ["", "## All methods (means over seeds)", ""]
    head = ["model", "kind", "method", "CE(h;dataset)", "floor"]
    head += ["debiased CE² ×100", "Brier"]
    rows = [
        [r.model, r.kind, r.method, f"{r.beta_ce:.4f}", f"{r.floor:.4f}"]
        + [f"{r.debiased_x100:.3f}", f"{r.brier:.4f}"]
        for r in mean.itertuples(index=False)
    ]
    lines += markdown_table(head, rows)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
