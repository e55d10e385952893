# SPDX-License-Identifier: MIT
"""Keep resolution: S-BB with a feature-aware scaler (issue 21, item 4).

``ScalingBetaBinningCalibrator(scaler="features")`` fits a boosted
recalibration on ``[logit(h), features]`` on D1 and beta-bins *its output*
on D2 (proxies = its fitted values, Alg. 3). Side by side in one process, on
the same cells and splits:

- ``S (Platt)``; ``BB``: beta-binning on the labels; ``S-BB``: the pooled
  Platt scaler, binning ``h``; ``HS-BB``: the hierarchical scaler, binning
  ``h``; ``S-BB features``: the new scaler, binning its output;
  ``features scaler alone``: that scaler's probabilities on the test rows
  without the binning (``proxy_proba``): what binning costs.
- Planted groups (``_planted.py``: 16 blobs in 32-d, sizes 20 b .. 5,000,
  b = 50; cells: KMeans(16) on the calibration rows), true CE against the
  planted probabilities; and the influences study with the QA dataset
  hidden (per model and confidence kind, 20:60:10:10 split, the
  partition split fits a 32-d TF-IDF+SVD embedding and KMeans(8) cells;
  calibration on 60 %, the tuning split unused, b = 40; beta = the dataset).

Scores on the test rows: Brier, log loss, AUROC, plug-in CE(h; beta) (l1,
10 bins), debiased squared CE(h; beta) x100, and the resolution term of the
Brier decomposition (uncertainty - refinement, 20 equal-mass bins of the
prediction), and the fit time.

Run: ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/feature_scaler.py``
(``--seeds``, ``--out``).
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
from sklearn.cluster import KMeans
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(__file__))
from _planted import planted_groups, true_calibration_error  # noqa: E402

import sklearn_betacal  # noqa: E402
from sklearn_betacal import (  # noqa: E402
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    ClusterPartitioner,
    PlattScaler,
    ScalingBetaBinningCalibrator,
    TextEmbedder,
)
from sklearn_betacal.cli._protocol import CONFIDENCE_COLUMNS, split_indices  # noqa: E402
from sklearn_betacal.metrics import (  # noqa: E402
    beta_calibration_error,
    brier_decomposition,
)

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data" / "influences"


def resolution(y, f):
    d = brier_decomposition(y, f, n_bins=20, strategy="quantile")
    m = float(np.mean(y))
    return m * (1 - m) - d.refinement


def scores(y, f, g, p=None):
    f = np.clip(f, 1e-6, 1 - 1e-6)
    out = {
        "brier": brier_score_loss(y, f),
        "log_loss": log_loss(y, f),
        "auroc": roc_auc_score(y, f),
        "beta_ce": beta_calibration_error(y, f, groups=g),
        "debiased_x100": 100
        * beta_calibration_error(y, f, groups=g, norm="l2_squared", debiased=True),
        "resolution": resolution(y, f),
    }
    if p is not None:
        out["true_ce"] = true_calibration_error(f, p, g)
    return out


def methods(part, b, seed):
    def sbb(scaler):
        return ScalingBetaBinningCalibrator(
            part, scaler=scaler, points_per_bin=b, random_state=seed
        )

    return {
        "BB": BetaBinningCalibrator(part, points_per_bin=b, random_state=seed),
        "S-BB": sbb("pooled"),
        "HS-BB": sbb("hierarchical"),
        "S-BB features": sbb("features"),
    }


def run_all(X, y, Xt, yt, ht, gt, part, b, seed, key, pt=None, extra=None):
    rows = []

    def rec(name, f, fit_s):
        rows.append({**key, "method": name, **scores(yt, f, gt, pt), "fit_s": fit_s})

    t0 = time.perf_counter()
    platt = PlattScaler().fit(X[:, 0], y)
    rec("S (Platt)", platt.predict_proba(ht)[:, 1], time.perf_counter() - t0)
    for name, est in {**methods(part, b, seed), **(extra or {})}.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # small-cell fallbacks
            t0 = time.perf_counter()
            est.fit(X, y)
            dt = time.perf_counter() - t0
        rec(name, est.predict_proba(Xt)[:, 1], dt)
        if name == "S-BB features":
            rec("features scaler alone", est.proxy_proba(Xt), dt)
    return rows


def planted(seeds, b=50):
    rows = []
    for seed in seeds:
        h, E, g, p, y, truth = planted_groups(
            16, size_range=(20 * b, 5000), random_state=seed
        )
        ht, Et, gt, pt, yt, _ = planted_groups(
            truth=truth, sizes=2000, random_state=1000 + seed
        )
        part = ClusterPartitioner(KMeans(16, n_init=1, random_state=seed))
        rows += run_all(
            np.column_stack([h, E]),
            y,
            np.column_stack([ht, Et]),
            yt,
            ht,
            gt,
            part,
            b,
            seed,
            {"set": "planted", "config": f"seed {seed}"},
            pt,
        )
        print("planted", seed, flush=True)
    return rows


def load(path):
    A = pd.read_parquet(path / "influences_llm_calibration_all.parquet")
    A = A[(A.prompt_style == "verb") & A.correct_judge.isin([0, 1])].copy()
    A["answer"] = A["extracted_answer"].fillna("").astype(str)
    A["question"] = A["question"].fillna("").astype(str)
    return A


def influences(seeds, data, b=40):
    A = load(data)
    rows = []
    for kind in ("verbal", "token"):
        col = CONFIDENCE_COLUMNS[kind]
        for model in sorted(A.model.unique()):
            R = A[(A.model == model) & A[col].between(0, 1)]
            h = R[col].to_numpy(float)
            y = R.correct_judge.to_numpy(int)
            g = pd.factorize(R.dataset, sort=True)[0]  # hidden from everything
            for seed in seeds:
                part, cal, _, test = split_indices(len(R), (0.2, 0.6, 0.1, 0.1), seed)
                emb = TextEmbedder(
                    text_columns=["question", "answer"],
                    n_components=32,
                    random_state=seed,
                ).fit(R.iloc[part])
                Z = np.asarray(emb.transform(R), dtype=float)
                X = np.column_stack([h, Z])
                km = ClusterPartitioner(KMeans(8, n_init=3, random_state=seed))
                cells = FrozenEstimator(km.fit(Z[part]))
                extra = {
                    "BB tree() one-liner": BetaBinningCalibrator(
                        CalibrationTreePartitioner(),
                        points_per_bin=b,
                        random_state=seed,
                    )
                }
                rows += run_all(
                    X[cal],
                    y[cal],
                    X[test],
                    y[test],
                    h[test],
                    g[test],
                    cells,
                    b,
                    seed,
                    {"set": f"influences {kind}", "config": f"{model} seed {seed}"},
                    extra=extra,
                )
                print(kind, model, seed, flush=True)
    return rows


def _markdown(M):
    """A Markdown table of the means (no tabulate dependency)."""
    head = "| method | " + " | ".join(M.columns) + " |"
    rule = "|---|" + "---:|" * len(M.columns)
    body = [
        f"| {name} | " + " | ".join(f"{v:.4f}" for v in row) + " |"
        for name, row in zip(M.index, M.to_numpy(), strict=True)
    ]
    return "\n".join([head, rule, *body])


def report(D, elapsed, load_before, load_after):
    cols = ["brier", "log_loss", "auroc", "beta_ce", "debiased_x100", "resolution"]
    lines = [
        "# Keep resolution: S-BB with the feature-aware scaler (issue 21, item 4)",
        "",
        f"`benchmarks/feature_scaler.py`; sklearn_betacal {sklearn_betacal.__version__},"
        f" scikit-learn {sklearn.__version__}, Python {platform.python_version()};"
        f" one BLAS/OpenMP thread; {elapsed:.0f} s; load average before/after:"
        f" {load_before} / {load_after}.",
        "",
        "Means over configurations (planted: seeds; influences: model x seed)."
        " `resolution`: the Brier decomposition's resolution term (uncertainty -"
        " refinement, 20 equal-mass bins); `features scaler alone`: the"
        " scaler of `S-BB features` without its binning (what binning costs).",
        "",
    ]
    for name, S in D.groupby("set", sort=False):
        use = cols + (["true_ce"] if S["true_ce"].notna().any() else []) + ["fit_s"]
        M = S.groupby("method", sort=False)[use].mean()
        lines += [f"## {name} ({S.config.nunique()} configurations)", ""]
        lines += [_markdown(M), ""]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--sets", nargs="+", default=["planted", "influences"])
    ap.add_argument(
        "--from-csv",
        type=Path,
        default=None,
        help="only write the report from an earlier run's CSV (with --elapsed, "
        "--loads)",
    )
    ap.add_argument("--elapsed", type=float, default=float("nan"))
    ap.add_argument("--loads", nargs=2, default=["?", "?"])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "feature_scaler.md")
    args = ap.parse_args(argv)
    if args.from_csv is not None:
        D = pd.read_csv(args.from_csv)
        text = report(D, args.elapsed, *args.loads)
        args.out.write_text(text)
        print(text)
        return
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    t0 = time.perf_counter()
    rows = []
    with threadpool_limits(1):
        if "planted" in args.sets:
            rows += planted(range(args.seeds + 1))
        if "influences" in args.sets:
            rows += influences(range(args.seeds), args.data)
    D = pd.DataFrame(rows)
    D.to_csv(args.out.with_suffix(".csv"), index=False)
    load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    text = report(D, time.perf_counter() - t0, load_before, load_after)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
