# SPDX-License-Identifier: MIT
"""Where is the one-liner's gap on the influences study? (issue 21, goals)

``BetaBinningCalibrator(CalibrationTreePartitioner())`` on the influences
study with the QA dataset hidden (the sets, split and scores of
``benchmarks/peers_mcgrad.py``: 12 models x {verbal, token}, question-level
30 % test split, ``b = 50``, plug-in beta-CE with 10 bins per dataset and
the debiased squared one) is far from BB given the true datasets. Three
places the gap can sit:

1. **the evaluation**: the plug-in beta-CE of a confidence with few distinct
   values per dataset has little binning noise (a constant has none); the
   noise floor (``beta_calibration_noise_floor``: what the same values would
   score if perfectly calibrated) is reported beside every plug-in figure,
   with the distinct values per dataset;
2. **the cells**: how many cells the one-liner keeps, how pure they are with
   respect to the hidden dataset (share of test rows in their cell's
   majority dataset), and how well the embedding carries the dataset at all
   (a logistic regression predicting the dataset from the embedding, fitted
   on the calibration rows, accuracy on the test rows);
3. **the binning inside cells**: BB on the true datasets vs the group mean
   (one value per dataset) vs a per-dataset Platt fit.

Embeddings: ``tfidf`` = the benchmark's (``TextEmbedder`` TF-IDF+SVD, 32-d,
question + answer, fitted on the calibration rows); ``minilm`` = MiniLM
(all-MiniLM-L6-v2) of the question, PCA to 32-d fitted on the calibration
rows (the question embeddings are computed once and cached, ``--minilm``).

Usage::

    python benchmarks/studies/oneliner_gap.py --minilm /tmp/minilm_q.npy \
        --out benchmarks/results/oneliner_gap.md
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from peers_mcgrad import B, _default_data, influence_rows, scores  # noqa: E402
from sklearn.decomposition import TruncatedSVD  # noqa: E402
from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402
from sklearn.model_selection import (  # noqa: E402
    GroupKFold,
    GroupShuffleSplit,
    cross_val_predict,
)

from sklearn_betacal import (  # noqa: E402
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    ClusterPartitioner,
    GroupColumnPartitioner,
    TextEmbedder,
    UMDBinner,
)
from sklearn_betacal.metrics import beta_calibration_noise_floor  # noqa: E402


def purity(cells, g):
    """Share of rows in their cell's majority hidden group."""
    tab = pd.crosstab(cells, g).to_numpy()
    return float(tab.max(axis=1).sum() / tab.sum())


def distinct_per_group(p, g):
    return float(
        np.mean([np.unique(np.round(p[g == k], 12)).size for k in np.unique(g)])
    )


def bb(part, seed):
    return BetaBinningCalibrator(part, points_per_bin=B, random_state=seed)


def sets(data_dir, seeds, models, kinds):
    """``peers_mcgrad.influences_sets``'s rows and split, with the question
    texts of both sides (for the MiniLM view)."""
    for model, kind, rows, h, y, g, q in influence_rows(data_dir, models, kinds):
        for seed in seeds:
            split = GroupShuffleSplit(n_splits=1, test_size=0.3, random_state=seed)
            tr, te = next(split.split(rows, groups=q))
            emb = TextEmbedder(
                text_columns=["question", "answer"],
                n_components=32,
                random_state=seed,
            ).fit(rows.iloc[tr])
            Z = np.asarray(emb.transform(rows), dtype=float)
            yield f"{model} {kind}", seed, h, y, g, q, Z, tr, te


def run(data_dir, seeds, models, kinds, minilm, csv=None):
    E = index = None
    if minilm:
        E = np.load(minilm)
        qtext = np.load(Path(minilm).with_name("minilm_qtext.npy"), allow_pickle=True)
        index = {t: i for i, t in enumerate(qtext)}
    rows = []
    for name, seed, h, y, g, q, Z, tr, te in sets(data_dir, seeds, models, kinds):
        ht, yt, gt = h[te], y[te], g[te]
        h0, y0, g0 = h[tr], y[tr], g[tr]
        views = {"tfidf": Z}
        if E is not None:
            M = E[[index[t] for t in q]]
            pca = PCA(32, random_state=seed).fit(M[tr])
            views["minilm"] = pca.transform(M)
        found = []
        umd = UMDBinner(points_per_bin=B, random_state=seed).fit(h0.reshape(-1, 1), y0)
        found.append(
            ("UMD", "-", umd.predict_proba(ht.reshape(-1, 1))[:, 1], None, None)
        )
        orc = bb(GroupColumnPartitioner(0), seed).fit(np.column_stack([h0, g0]), y0)
        p = orc.predict_proba(np.column_stack([ht, gt]))[:, 1]
        found.append(("BB oracle", "-", p, gt, orc))
        acc = np.array([y0[g0 == k].mean() for k in range(g.max() + 1)])
        found.append(("group mean (1 value)", "-", acc[gt], gt, None))
        # character n-grams of the question, case kept (style as well as words)
        texts = np.asarray(q, dtype=object)
        char = TfidfVectorizer(
            analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True, lowercase=False
        ).fit(texts[tr])
        C = char.transform(texts)
        views["char"] = TruncatedSVD(32, random_state=seed).fit(C[tr]).transform(C)
        # a ceiling: cells = the dataset as predicted from the full character
        # TF-IDF by a classifier trained WITH the hidden labels (out-of-fold on
        # the calibration rows): what a text partition this separable gives
        clf = LogisticRegression(max_iter=3000, C=10.0)
        cv = GroupKFold(5).split(C[tr], g0, q[tr])
        pred0 = cross_val_predict(clf, C[tr], g0, cv=list(cv))
        predt = clf.fit(C[tr], g0).predict(C[te])
        rows.append(
            {
                "set": name,
                "seed": seed,
                "view": "char full",
                "method": "dataset acc.",
                "value": float(np.mean(predt == gt)),
            }
        )
        ceil = bb(GroupColumnPartitioner(0), seed).fit(np.column_stack([h0, pred0]), y0)
        p = ceil.predict_proba(np.column_stack([ht, predt]))[:, 1]
        found.append(("BB predicted dataset (ceiling)", "char full", p, predt, ceil))
        for view, V in views.items():
            X, Xt = np.column_stack([h0, V[tr]]), np.column_stack([ht, V[te]])
            lr = LogisticRegression(max_iter=3000).fit(V[tr], g0)
            rows.append(
                {
                    "set": name,
                    "seed": seed,
                    "view": view,
                    "method": "dataset acc.",
                    "value": float(np.mean(lr.predict(V[te]) == gt)),
                }
            )
            one = bb(CalibrationTreePartitioner(), seed).fit(X, y0)
            found.append(
                ("one-liner", view, one.predict_proba(Xt)[:, 1], one._cells(V[te]), one)
            )
            for k in (4, 8, 32):
                km = bb(
                    ClusterPartitioner(KMeans(k, n_init=1, random_state=seed)), seed
                )
                km.fit(X, y0)
                found.append(
                    (
                        f"KMeans({k})",
                        view,
                        km.predict_proba(Xt)[:, 1],
                        km._cells(V[te]),
                        km,
                    )
                )
        for mname, view, p, cells, model in found:
            rec = {
                "set": name,
                "seed": seed,
                "view": view,
                "method": mname,
                **scores(yt, p, gt),
            }
            rec["floor"] = beta_calibration_noise_floor(yt, np.clip(p, 0, 1), cells=gt)
            rec["distinct"] = distinct_per_group(p, gt)
            if cells is not None:
                rec["purity"] = purity(cells, gt)
            if model is not None:
                rec["cells"] = len(model.cells_)
                rec["b"] = model.points_per_bin_
            rows.append(rec)
        if csv is not None:  # after every set: a partial run keeps its rows
            pd.DataFrame(rows).to_csv(csv, index=False)
        print(
            f"{name} seed {seed} done (load {os.getloadavg()[0]:.2f})",
            file=sys.stderr,
            flush=True,
        )
    return pd.DataFrame(rows)


def summarize(R):
    """Markdown tables over the sets: ratios to UMD of the same (set, seed)."""
    acc = R[R.method == "dataset acc."]
    S = R[R.method != "dataset acc."].copy()
    umd = S[S.method == "UMD"].set_index(["set", "seed"])
    key = pd.MultiIndex.from_frame(S[["set", "seed"]])
    S["ratio"] = S.beta_ce.to_numpy() / umd.beta_ce.reindex(key).to_numpy()
    S["ratio_deb"] = (
        S.beta_ce_debiased.to_numpy() / umd.beta_ce_debiased.reindex(key).to_numpy()
    )
    S["excess"] = S.beta_ce - S.floor
    S["kind"] = S.set.str.split().str[-1]
    out = []
    for kind, K in S.groupby("kind", sort=False):
        out += [
            f"### {kind} ({K.set.nunique()} sets x {K.seed.nunique()} seeds)",
            "",
            "| view | method | CE / UMD | debiased / UMD | beta-CE | noise floor "
            "| CE - floor | distinct values per dataset | cells | purity | Brier "
            "| log loss | AUROC |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for (view, method), M in K.groupby(["view", "method"], sort=False):
            out.append(
                f"| {view} | {method} | {np.exp(np.log(M.ratio).mean()):.3f} "
                f"| {M.ratio_deb.median():.3f} | {M.beta_ce.mean():.4f} "
                f"| {M.floor.mean():.4f} | {M.excess.mean():.4f} "
                f"| {M.distinct.mean():.1f} | {M['cells'].mean():.1f} "
                f"| {M['purity'].mean():.3f} | {M.brier.mean():.4f} "
                f"| {M.log_loss.mean():.4f} | {M.auroc.mean():.4f} |"
            )
        out.append("")
    out += [
        "### How well each embedding carries the hidden dataset",
        "",
        "Accuracy of a logistic regression predicting the dataset from the "
        "view, fitted on the calibration rows, on the test rows (mean over "
        "sets; the largest dataset's share is the chance level).",
        "",
        "| view | accuracy (mean) | min | max |",
        "|---|---|---|---|",
    ]
    for view, M in acc.groupby("view", sort=False):
        out.append(
            f"| {view} | {M.value.mean():.3f} | {M.value.min():.3f} "
            f"| {M.value.max():.3f} |"
        )
    return "\n".join(out) + "\n"


def case_check(data_dir, model="gemma9", seed=0):
    """How much of the character view's dataset accuracy is letter case:
    full and 32-d character TF-IDF of the question with case kept and
    lower-cased, and NQ vs WikiQA alone (``--case-check``)."""
    *_, h, y, g, q, Z, tr, te = next(sets(data_dir, [seed], [model], ["verbal"]))
    del h, y, Z
    q = np.asarray(q, dtype=object)

    def acc(fit, test, labels_fit, labels_test):
        lr = LogisticRegression(max_iter=3000).fit(fit, labels_fit)
        return float(np.mean(lr.predict(test) == labels_test))

    out = []
    for lower in (False, True):
        C = (
            TfidfVectorizer(
                analyzer="char_wb",
                ngram_range=(2, 4),
                sublinear_tf=True,
                lowercase=lower,
            )
            .fit(q[tr])
            .transform(q)
        )
        S = TruncatedSVD(32, random_state=seed).fit(C[tr]).transform(C)
        out.append(
            f"char, lowercase={lower}: full {acc(C[tr], C[te], g[tr], g[te]):.3f}, "
            f"32-d SVD {acc(S[tr], S[te], g[tr], g[te]):.3f}"
        )
        if not lower:
            two = np.isin(g, [0, 3])  # nq, wikiqa (factorized in sorted order)
            a, b = tr[two[tr]], te[two[te]]
            chance = np.bincount(g[b]).max() / b.size
            out.append(
                f"NQ vs WikiQA, full char with case: {acc(C[a], C[b], g[a], g[b]):.3f}"
                f" (chance {chance:.3f})"
            )
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=_default_data())
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--models", nargs="*", default=None)
    ap.add_argument("--kinds", nargs="+", default=["verbal", "token"])
    ap.add_argument("--minilm", default=None)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--summarize", type=Path, default=None, help="a CSV of a run")
    ap.add_argument("--case-check", action="store_true")
    args = ap.parse_args(argv)
    if args.case_check:
        print(case_check(args.data))
        return
    if args.summarize:
        print(summarize(pd.read_csv(args.summarize)))
        return
    t0 = time.time()
    with threadpool_limits(1):
        csv = args.out.with_suffix(".csv") if args.out else None
        R = run(args.data, args.seeds, args.models, args.kinds, args.minilm, csv)
    print(R, time.time() - t0)


if __name__ == "__main__":
    main()
