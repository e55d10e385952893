# SPDX-License-Identifier: MIT
"""Internal splits by row or by question, on the bundled TriviaQA log.

The bundled log holds 11,666 answers to 1,000 questions (about 12 models
each). Per seed the *questions* are split 50:50 into calibration and test
rows; on the calibration rows each calibrator is fitted twice, once as
before (``fit(X, y)``: the honest split, the recalibration folds and the
``cv`` folds draw rows, so most questions straddle them) and once with
``fit(X, y, groups=question)`` (every internal split draws whole
questions). Both fits use the same seed, so the only difference is how the
internal splits are drawn. Scored on the test questions: the debiased
squared beta-CE on one evaluation partition (a kd-tree of depth 2 on the
test rows' TF-IDF + SVD(32) embedding of the question, fitted without labels,
crossed with the answering model), its ratio to plain UMD's, Brier, log loss
and AUROC, and the share of fitted cells whose test error exceeds the
calibrator's own Thm 3.1 bound (``epsilon_``; BB only).

Run (one thread; a minute or two)::

    OMP_NUM_THREADS=1 python benchmarks/studies/question_groups.py --seeds 5

writes ``results/question_groups.md`` and its CSV.
"""

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))
from _measure import RESULTS, header, markdown_table, write_result  # noqa: E402

CONF, LABEL = "verbal_confidence", "correct_judge"


def _arms():
    from sklearn.pipeline import make_pipeline

    from sklearn_betacal import (
        BetaBinningCalibrator,
        CalibrationTreePartitioner,
        ScalingBetaBinningCalibrator,
        TextEmbedder,
    )

    def part(seed, **kw):
        embed = TextEmbedder(["question", "answer"], n_components=32)
        return make_pipeline(embed, CalibrationTreePartitioner(**kw))

    return {
        "BB, learned tree (one-liner)": lambda s: BetaBinningCalibrator(
            part(s), random_state=s
        ),
        "BB, strategy='tree'": lambda s: BetaBinningCalibrator(
            part(s, strategy="tree"), random_state=s
        ),
        "S-BB features cv=3": lambda s: ScalingBetaBinningCalibrator(
            part(s), scaler="features", cv=3, random_state=s
        ),
    }


def _cells(test):
    """The evaluation partition of the test rows: kd-tree (depth 2) on the
    question's embedding (no labels) crossed with the answering model."""
    from sklearn_betacal import KDTreePartitioner, TextEmbedder

    E = TextEmbedder(["question"], n_components=32, random_state=0).fit_transform(
        test[["question"]]
    )
    leaf = np.ravel(KDTreePartitioner(max_depth=2).fit(E).transform(E))
    model = pd.factorize(test["model"])[0]
    return pd.factorize(leaf * 1000 + model)[0]


def _scores(y, p, cells):
    from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

    from sklearn_betacal.metrics import beta_calibration_error

    ce = beta_calibration_error(
        y, p, cells=cells, norm="l2_squared", debiased=True, n_bins=10
    )
    return {
        "ce2": ce,
        "brier": brier_score_loss(y, p),
        "logloss": log_loss(y, np.clip(p, 1e-6, 1 - 1e-6)),
        "auroc": roc_auc_score(y, p),
    }


def _over_bound(est, X, y):
    """Share of BB's fitted cells whose test |mean(y) - mean(p)| over the
    cell's bins exceeds its ``epsilon_`` (a coarse check of Thm 3.1 on
    unseen questions; None for calibrators without one bound per cell)."""
    if not hasattr(est, "epsilon_") or not hasattr(est, "cells_"):
        return None
    cells = est.apply(X)
    p = est.predict_proba(X)[:, 1]
    eps = dict(zip(est.cells_.tolist(), np.ravel(est.epsilon_).tolist(), strict=True))
    over = []
    for c, e in eps.items():
        rows = cells == c
        if rows.sum() < 50:
            continue
        # the cell's binned values: mean label per distinct prediction
        frame = pd.DataFrame({"p": p[rows], "y": y[rows]})
        gap = frame.groupby("p")["y"].mean() - frame.groupby("p")["p"].mean()
        size = frame.groupby("p").size() / rows.sum()
        over.append(float(np.sqrt((size * gap**2).sum())) > e)
    return float(np.mean(over)) if over else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "question_groups.md")
    args = parser.parse_args(argv)

    from sklearn_betacal import UMDBinner
    from sklearn_betacal.datasets import load_triviaqa_confidence

    frame = load_triviaqa_confidence().frame
    keep = frame[[CONF, "question", "answer", LABEL]].notna().all(axis=1)
    frame = frame[keep].reset_index(drop=True)
    questions = frame["question_id"].unique()
    rows = []
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        cal_q = rng.permutation(questions)[: len(questions) // 2]
        is_cal = frame["question_id"].isin(cal_q).to_numpy()
        cal, test = frame[is_cal], frame[~is_cal].reset_index(drop=True)
        X_cal = cal[[CONF, "question", "answer"]].reset_index(drop=True)
        X_test = test[[CONF, "question", "answer"]]
        y_cal = cal[LABEL].to_numpy().astype(int)
        y_test = test[LABEL].to_numpy().astype(int)
        q_cal = cal["question_id"].to_numpy()
        cells = _cells(test)
        umd = UMDBinner(random_state=seed).fit(X_cal[[CONF]], y_cal)
        base = _scores(y_test, umd.predict_proba(X_test[[CONF]])[:, 1], cells)
        for name, make in _arms().items():
            for split in ("rows", "questions"):
                kw = {"groups": q_cal} if split == "questions" else {}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = make(seed).fit(X_cal, y_cal, **kw)
                p = est.predict_proba(X_test)[:, 1]
                s = _scores(y_test, p, cells)
                rows.append(
                    {
                        "seed": seed,
                        "arm": name,
                        "split": split,
                        **s,
                        "ce2_vs_umd": s["ce2"] / base["ce2"],
                        "over_bound": _over_bound(est, X_test, y_test),
                    }
                )
                print(rows[-1], file=sys.stderr)
    table = pd.DataFrame(rows)
    table.to_csv(args.out.with_suffix(".csv"), index=False)
    lines = [
        "# Internal splits by row or by question (question_groups.py)",
        "",
        header(prefix=""),
        "",
        f"TriviaQA bundled log, {args.seeds} seeds; calibration/test split by "
        "question 50:50; each calibrator fitted on the same rows and seed with "
        "its internal splits by row (`fit(X, y)`) and by question "
        "(`fit(X, y, groups=question_id)`). Mean over seeds; `paired diff` is "
        "questions minus rows, mean +/- standard error over seeds.",
        "",
    ]
    body = []
    for name in _arms():
        sub = table[table["arm"] == name]
        r = sub[sub["split"] == "rows"].set_index("seed")
        g = sub[sub["split"] == "questions"].set_index("seed")
        for metric in ("ce2_vs_umd", "brier", "logloss", "auroc", "over_bound"):
            if r[metric].isna().all():
                continue
            d = (g[metric] - r[metric]).astype(float)
            se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
            body.append(
                [
                    name,
                    metric,
                    f"{r[metric].mean():.4f}",
                    f"{g[metric].mean():.4f}",
                    f"{d.mean():+.4f} +/- {se:.4f}",
                ]
            )
    lines += markdown_table(
        [
            "calibrator",
            "score (test questions)",
            "by row",
            "by question",
            "paired diff",
        ],
        body,
        align="llrrr",
    )
    lines += [
        "",
        "`ce2_vs_umd`: debiased squared beta-CE over UMD's on the evaluation "
        "partition (lower is better); `over_bound`: share of BB's cells (>= 50 "
        "test rows) whose test RMS gap exceeds the cell's `epsilon_`.",
    ]
    write_result(args.out, lines)


if __name__ == "__main__":
    main()
