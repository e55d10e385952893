# SPDX-License-Identifier: MIT
"""How far can any partition of a text view go? The ceiling on influences.

Issue 21 asks the one-liner ``BetaBinningCalibrator(CalibrationTreePartitioner())``
for <= 0.65x UMD's beta-CE on the Influences study with the QA dataset hidden
(the oracle, given the dataset, reaches ~0.55x verbal, ~0.49x token). This
study asks what the *view* allows, apart from how the partition is learned.
Per model, confidence kind and seed (``merge_stop.py``'s 20:60:10:10 split,
``b`` tuned over 20, 40, 80 on the tuning split by the debiased beta-CE):

- ``UMD``, ``oracle`` (BB given the true dataset) as in ``merge_stop.py``;
- ``oracle, half the rows``: the oracle binning a random half of the
  calibration rows, the share the one-liner's honest split leaves it;
- ``ceiling <view>``: BB whose cells are the dataset *predicted from the
  view* by a multinomial logistic regression fitted on the partition
  split's rows and their true datasets -- a partition told which groups
  matter, limited only by how well the view separates them (its test
  accuracy is reported). No label-driven partition of the view should be
  expected to beat it;
- ``one-liner <view>``: today's default on the same view.

Views: ``TextEmbedder`` of question + answer fitted on the partition split,
word TF-IDF + SVD at 32 and 128 dimensions and character TF-IDF + SVD at 32;
with ``--minilm`` also all-MiniLM-L6-v2 (the ``embeddings`` extra) at 384
dimensions and its PCA to 32, and of the question alone at 32 (the view
``peers_mcgrad.py --embedding minilm`` gives every method). The MiniLM
encodings of the study's ~71,000 distinct texts take ~15 minutes on one
core: ``--minilm-cache FILE`` keeps
them in an ``.npz`` between runs (the same ``TextEmbedder`` code runs on the
cached vectors).

Run: ``OMP_NUM_THREADS=1 python benchmarks/studies/partition_ceiling.py``
(the data folder in ``$BETACAL_SHARED_DATA`` or ``--data``; ``--seeds``,
``--minilm``); writes ``results/partition_ceiling.md`` and its CSV.
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
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from sklearn_betacal import (
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    GroupColumnPartitioner,
    TextEmbedder,
    UMDBinner,
)
from sklearn_betacal.cli._protocol import CONFIDENCE_COLUMNS, split_indices

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE.parent))
from _measure import (  # noqa: E402
    RESULTS,
    add_data_argument,
    load_influences,
    memo_minilm,
)
from merge_stop import ratio_rows, tuned  # noqa: E402
from peers_mcgrad import scores  # noqa: E402

#: (TextEmbedder method, dimensions, text columns) of each view
QA = ("question", "answer")
VIEWS = [("tfidf-svd", 32, QA), ("tfidf-svd", 128, QA), ("tfidf-char-svd", 32, QA)]


def view(rows, part, method, n_components, columns, seed):
    emb = TextEmbedder(
        text_columns=list(columns),
        method=method,
        n_components=n_components,
        random_state=seed,
    ).fit(rows.iloc[part])
    return np.asarray(emb.transform(rows), dtype=float)


def one_set(rows, kind, seed):
    """The records of one (model, kind, seed)."""
    col = CONFIDENCE_COLUMNS[kind]
    h = rows[col].to_numpy(float)
    y = rows.correct_judge.to_numpy(int)
    g = pd.factorize(rows.dataset, sort=True)[0]  # the hidden groups
    part, cal, tun, test = split_indices(len(rows), (0.2, 0.6, 0.1, 0.1), seed)
    out = []

    def add(method, model, X, **extra):
        p = model.predict_proba(X[test])[:, 1]
        out.append(
            {"set": f"influences {kind}", "seed": seed, "method": method}
            | scores(y[test], p, g[test])
            | extra
        )

    def bb(b):
        return BetaBinningCalibrator(
            GroupColumnPartitioner(0), points_per_bin=b, random_state=seed
        )

    def one_liner(b):
        return BetaBinningCalibrator(
            CalibrationTreePartitioner(random_state=seed),
            points_per_bin=b,
            random_state=seed,
        )

    H = h.reshape(-1, 1)
    umd = tuned(
        lambda b: UMDBinner(points_per_bin=b, random_state=seed), H, y, g, cal, tun
    )
    add("UMD", umd, H)
    XO = np.column_stack([h, g])
    add("oracle", tuned(bb, XO, y, g, cal, tun), XO)
    half = np.sort(np.random.RandomState(seed).permutation(cal)[: len(cal) // 2])
    add("oracle, half the rows", tuned(bb, XO, y, g, half, tun), XO)
    for method, d, columns in VIEWS:
        name = f"{method} {d}" + ("" if columns == QA else " (question)")
        Z = view(rows, part, method, d, columns, seed)
        clf = LogisticRegression(max_iter=3000).fit(Z[part], g[part])
        guess = clf.predict(Z)
        XP = np.column_stack([h, guess])
        acc = float(np.mean(guess[test] == g[test]))
        add(f"ceiling {name}", tuned(bb, XP, y, g, cal, tun), XP, accuracy=acc)
        X = np.column_stack([h, Z])
        add(f"one-liner {name}", tuned(one_liner, X, y, g, cal, tun), X)
    return out


def summary(R):
    """The table of :func:`merge_stop.summary`'s ratios, with the mean
    accuracy of the predicted dataset in place of its last columns."""
    lines = [
        "| set | method | beta-CE / UMD | debiased / UMD | Brier | log loss | AUROC "
        "| dataset accuracy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for set_name, method, r, _, ratio, deb in ratio_rows(R, ("set", "model", "seed")):
        acc = "-" if r.accuracy.isna().all() else f"{r.accuracy.mean():.3f}"
        lines.append(
            f"| {set_name} | {method} | {ratio:.3f} | {deb:.3f} | "
            f"{r.brier.mean():.4f} | {r.log_loss.mean():.4f} | "
            f"{r.auroc.mean():.4f} | {acc} |"
        )
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "partition_ceiling.md")
    parser.add_argument("--minilm", action="store_true", help="add the MiniLM views")
    parser.add_argument("--minilm-cache", type=Path, default=None)
    parser.add_argument(
        "--encode-only", action="store_true", help="fill --minilm-cache and stop"
    )
    args = parser.parse_args(argv)
    if args.minilm:
        memo_minilm(args.minilm_cache)
        VIEWS.extend(
            [("minilm", 384, QA), ("minilm", 32, QA), ("minilm", 32, ("question",))]
        )
    threadpool_limits(1)
    load0, t0 = os.getloadavg(), time.perf_counter()
    A = load_influences(args.data)
    if args.encode_only:
        import sklearn_betacal._text as _text

        # the texts of the views: question + answer, and the question alone
        texts = pd.unique(pd.concat([A.question + "\n" + A.answer, A.question]))
        for start in range(0, len(texts), 10000):  # saved every 10,000
            _text._minilm_encode(texts[start : start + 10000], 64)
            print(
                f"encoded {min(start + 10000, len(texts))} / {len(texts)}", flush=True
            )
        return
    records = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model in sorted(A.model.unique()):
            for kind in ("verbal", "token"):
                col = CONFIDENCE_COLUMNS[kind]
                rows = A[(A.model == model) & A[col].between(0, 1)]
                rows = rows.reset_index(drop=True)
                for seed in range(args.seeds):
                    records += [r | {"model": model} for r in one_set(rows, kind, seed)]
    R = pd.DataFrame(records)
    if "accuracy" not in R:
        R["accuracy"] = np.nan
    R.to_csv(args.out.with_suffix(".csv"), index=False)
    load1 = os.getloadavg()
    lines = [
        "# The ceiling of a partition of a text view (issue 21)",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"{time.perf_counter() - t0:.0f} s; load average "
        f"{load0[0]:.2f} (start) / {load1[0]:.2f} (end), 2 shared cores. "
        f"Python {platform.python_version()}, numpy {np.__version__}, "
        f"scikit-learn {sklearn.__version__}. Influences, 12 models, seeds "
        f"{list(range(args.seeds))}; methods in the script's docstring.",
        "",
        "beta-CE / UMD: geometric mean over (model, seed) of the plug-in beta-CE "
        "over UMD's; debiased / UMD: median of the debiased squared beta-CE "
        "ratio; scores are means; dataset accuracy: how often the view's "
        "classifier names a test row's hidden dataset (4 datasets).",
        "",
        *summary(R),
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
