# SPDX-License-Identifier: MIT
"""Which feature-aware scaler, and which binning targets (issue 21, item 4).

The measurement behind ``ScalingBetaBinningCalibrator(scaler="features")``:
candidate scalers fitted on D1 (half of the calibration rows), scored on the
test rows on their own, and the chosen one binned on D2 two ways.

Scalers: ``Platt`` (on ``h``); ``HLS``: the hierarchical scaler of Eq. 5 on
the cells; ``VC-Platt``: a ridge logistic regression on ``[s, Z, s Z]``
(``s = logit h``, standardised, penalty by 5-fold CV: the linear
varying-coefficient Platt model the learned tree fits its directions with);
``HGB [s, Z]``: scikit-learn's histogram gradient boosting on ``[logit h,
features]``, increasing in ``logit h``; ``HGB [logit HLS, Z]``: the same
started from the hierarchical scaler's logit (what ``scaler="features"``
does). Binning of ``HGB [logit HLS, Z]``'s output on D2 within the cells:
with its proxies (``S-BB features``, Alg. 3; the library's own, on its own
D1/D2 split, its boosting also seeing the cell code as a feature) or with
D2's own labels (``BB`` of the score: Thm 3.1 with ``nu = 0``).

Sets and cells: planted groups (16 blobs in 32-d, KMeans(16)); the
influences study with the dataset hidden (20:60:10:10 split per model and
confidence kind, a 32-d TF-IDF+SVD embedding and KMeans(8) cells fitted on
the partition split). Scored by ``feature_scaler.scores`` (the scoring of
the feature-scaler study). Run: ``OMP_NUM_THREADS=1 python
benchmarks/studies/feature_scaler_candidates.py --data FOLDER`` (default
``$BETACAL_SHARED_DATA``); results in ``results/feature_scaler_candidates.md``.
"""

import argparse
import os
import sys
import time
import warnings

sys.path.insert(
    0, os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)  # the harness
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the studies
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _measure import (  # noqa: E402
    RESULTS,
    add_data_argument,
    data_dir,
    header,
    load_influences,
    markdown_frame,
    write_result,
)
from _planted import planted_groups  # noqa: E402
from feature_scaler import scores  # noqa: E402
from scipy.special import expit  # noqa: E402
from sklearn.cluster import KMeans  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402
from sklearn.linear_model import LogisticRegressionCV  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from sklearn_betacal import (  # noqa: E402
    BetaBinningCalibrator,
    GroupColumnPartitioner,
    HierarchicalLogisticScaler,
    PlattScaler,
    ScalingBetaBinningCalibrator,
    TextEmbedder,
)
from sklearn_betacal._scaling_beta_binning import BOOSTING  # noqa: E402
from sklearn_betacal.cli._protocol import CONFIDENCE_COLUMNS, split_indices  # noqa: E402


def logit(p):
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p) - np.log1p(-p)


def hgb(F1, y1):
    cst = [1] + [0] * (F1.shape[1] - 1)
    return HistGradientBoostingClassifier(
        monotonic_cst=cst, random_state=0, **BOOSTING
    ).fit(F1, y1)


def candidates(h, Z, c, y, cal, test, g, key, p=None, b=50):
    """Scalers on D1 of ``cal``; binnings on D2; scores on ``test``."""
    rng = np.random.RandomState(0)
    perm = rng.permutation(cal)
    d1, d2 = np.sort(perm[: len(cal) // 2]), np.sort(perm[len(cal) // 2 :])
    rows = []

    def rec(name, f):
        rows.append({**key, "method": name, **scores(y[test], f, g, p)})

    rec("Platt", PlattScaler().fit(h[d1], y[d1]).predict_proba(h[test])[:, 1])
    hls = HierarchicalLogisticScaler(partitioner="precomputed", covariate="logit")
    hls.fit(np.column_stack([h[d1], c[d1]]), y[d1])
    q = hls.predict_proba(np.column_stack([h, c]))[:, 1]
    rec("HLS", q[test])
    s = logit(h)[:, None]
    V = np.column_stack([s, Z, s * Z])
    sc = StandardScaler().fit(V[d1])
    vc = LogisticRegressionCV(Cs=np.logspace(-3, 2, 6), cv=5, max_iter=2000)
    vc.fit(sc.transform(V[d1]), y[d1])
    rec("VC-Platt", vc.predict_proba(sc.transform(V[test]))[:, 1])
    F = np.column_stack([logit(h), Z])
    rec("HGB [s, Z]", hgb(F[d1], y[d1]).predict_proba(F[test])[:, 1])
    G = np.column_stack([logit(q), Z])
    gm = hgb(G[d1], y[d1])
    score = expit(gm.decision_function(G))
    rec("HGB [logit HLS, Z]", score[test])
    cells = FrozenEstimator(GroupColumnPartitioner(0).fit(c[:, None]))
    bb = BetaBinningCalibrator(cells, points_per_bin=b, random_state=0)
    bb.fit(np.column_stack([score[d2], c[d2]]), y[d2])
    rec(
        "... binned, D2 labels",
        bb.predict_proba(np.column_stack([score, c])[test])[:, 1],
    )
    X = np.column_stack([h, c, Z])  # the group column first, then the features
    cells = FrozenEstimator(GroupColumnPartitioner(0).fit(X[:, 1:]))
    sbb = ScalingBetaBinningCalibrator(
        cells, scaler="features", covariate="logit", points_per_bin=b, random_state=0
    )
    sbb.fit(X[cal], y[cal])
    rec("S-BB features (proxies)", sbb.predict_proba(X[test])[:, 1])
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(ap)
    args = ap.parse_args(argv)
    folder = data_dir(args.data)
    t0 = time.perf_counter()
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in (0, 1):
            h, E, g, p, y, truth = planted_groups(
                16, size_range=(1000, 5000), random_state=seed
            )
            ht, Et, gt, pt, yt, _ = planted_groups(
                truth=truth, sizes=2000, random_state=1000 + seed
            )
            n = len(h)
            H, Z = np.concatenate([h, ht]), np.vstack([E, Et])
            Y = np.concatenate([y, yt])
            c = KMeans(16, n_init=1, random_state=seed).fit(E).predict(Z)
            test = np.arange(n, len(H))
            rows += candidates(
                H, Z, c, Y, np.arange(n), test, gt, {"set": "planted"}, pt
            )
        A = load_influences(folder)
        for kind in ("verbal", "token"):
            col = CONFIDENCE_COLUMNS[kind]
            for model in sorted(A.model.unique()):
                R = A[(A.model == model) & A[col].between(0, 1)]
                h = R[col].to_numpy(float)
                y = R.correct_judge.to_numpy(int)
                g = pd.factorize(R.dataset, sort=True)[0]
                part, cal, _, test = split_indices(len(R), (0.2, 0.6, 0.1, 0.1), 0)
                emb = TextEmbedder(
                    text_columns=["question", "answer"],
                    n_components=32,
                    random_state=0,
                ).fit(R.iloc[part])
                Z = np.asarray(emb.transform(R), dtype=float)
                c = KMeans(8, n_init=3, random_state=0).fit(Z[part]).predict(Z)
                rows += candidates(
                    h,
                    Z,
                    c,
                    y,
                    cal,
                    test,
                    g[test],
                    {"set": f"influences {kind}"},
                    b=40,
                )
    D = pd.DataFrame(rows)
    cols = ["brier", "log_loss", "auroc", "beta_ce", "beta_ce_debiased", "resolution"]
    lines = [
        "# Feature-aware scaler candidates (issue 21, item 4)",
        "",
        header(prefix=""),
        "",
        f"`benchmarks/studies/feature_scaler_candidates.py`; one thread; "
        f"{time.perf_counter() - t0:.0f} s; load average before/after: "
        f"{load_before} / {' '.join(f'{x:.2f}' for x in os.getloadavg())}. "
        "Planted: 2 seeds; influences: 12 models, seed 0. Scalers fitted on D1 "
        "(half the calibration rows). Log loss of the probabilities as given "
        "(clipped to [0, 1] only, as in `peers_mcgrad.py`): a binning on labels "
        "that predicts 0 or 1 pays for it.",
        "",
    ]
    for name, S in D.groupby("set", sort=False):
        use = cols + (["true_ce"] if S["true_ce"].notna().any() else [])
        table = S.groupby("method", sort=False)[use].mean()
        table["beta_ce_debiased"] *= 100
        table = table.rename(columns={"beta_ce_debiased": "debiased x100"})
        lines += [f"## {name}", "", *markdown_frame(table), ""]
    write_result(RESULTS / "feature_scaler_candidates.md", lines)


if __name__ == "__main__":
    main()
