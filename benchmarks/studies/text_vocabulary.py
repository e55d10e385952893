# SPDX-License-Identifier: MIT
"""Which TF-IDF vocabulary bound keeps beta-binning as good as the full one.

For each data set (the bundled TriviaQA data; the Influences study's
verbalized-confidence rows of each QA set), 5,000 rows fit the model that
``betacal fit --text question --method bb`` builds (TextEmbedder ->
KDTreePartitioner, beta-binning with b = 50, seed 0) and 2,000 other rows
score it. Vocabulary settings: every term (the old default, ``min_df=1``,
``max_features=None``) and bounded ones. Reported on the held-out rows: the
Brier score, the beta-CE on the model's own text cells and the beta-CE on a
fixed yardstick (the cells of the old default's partition, so every setting
is judged on the same beta), with the vocabulary size and the bytes of the
fitted state a model file stores (terms + idf + SVD components).

Usage::

    python benchmarks/studies/text_vocabulary.py \
        --data /path/to/data  # the folder holding influences/
"""

import argparse
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import brier_score_loss
from sklearn.pipeline import make_pipeline
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness
from _measure import (  # noqa: E402
    add_data_argument,
    header,
    load_average,
    verbal_sets,
)

from sklearn_betacal import BetaBinningCalibrator, KDTreePartitioner, TextEmbedder
from sklearn_betacal.metrics import beta_calibration_error

SETTINGS = {
    "all terms (old)": {"min_df": 1, "max_features": None},
    "min_df=2": {"min_df": 2, "max_features": None},
    "min_df=2, max 5000": {"min_df": 2, "max_features": 5000},
    "min_df=2, max 2000": {"min_df": 2, "max_features": 2000},
    "min_df=3, max 5000": {"min_df": 3, "max_features": 5000},
    "min_df=1, max 1000": {"min_df": 1, "max_features": 1000},
}


def model(setting):
    embed = TextEmbedder(["question"], random_state=0, **setting)
    return BetaBinningCalibrator(
        make_pipeline(embed, KDTreePartitioner()),
        confidence_column="verbal_confidence",
        points_per_bin=50,
        random_state=0,
    )


def stored_bytes(embedder):
    vec = embedder.vectorizer_
    terms = sum(len(t.encode()) + 1 for t in vec.vocabulary_)
    return terms + vec.idf_.nbytes + embedder.svd_.components_.nbytes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    args = parser.parse_args(argv)
    print(header(prefix="") + "\n")
    print(
        "| data | vocabulary | terms | stored state (MB) | Brier | beta-CE own "
        "cells | beta-CE fixed cells |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, frame in verbal_sets(args.data).items():
        idx = np.random.default_rng(0).permutation(len(frame))
        fit, test = frame.iloc[idx[:5000]], frame.iloc[idx[5000:7000]]
        X, y = fit[["verbal_confidence", "question"]], fit.correct_judge.to_numpy()
        Xt, yt = test[["verbal_confidence", "question"]], test.correct_judge.to_numpy()
        fixed = None
        for label, setting in SETTINGS.items():
            est = model(setting).fit(X, y)
            p = est.predict_proba(Xt)[:, 1]
            own = est.apply(Xt)
            if fixed is None:
                fixed = own
            embedder = est.partitioner_.steps[0][1]
            print(
                f"| {name} | {label} | {len(embedder.vectorizer_.vocabulary_)} "
                f"| {stored_bytes(embedder) / 1e6:.2f} "
                f"| {brier_score_loss(yt, p):.4f} "
                f"| {beta_calibration_error(yt, p, cells=own):.4f} "
                f"| {beta_calibration_error(yt, p, cells=fixed):.4f} |",
                flush=True,
            )
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    with threadpool_limits(1):
        main()
