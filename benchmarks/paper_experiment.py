# SPDX-License-Identifier: MIT
"""Reproduce the paper's experiment (Sec. 5, App. B, Tables 2/6/7) on real data.

Data: the Influences-on-LLM-Calibration records in ``../shared/data/influences``
(verb prompt style, train + test splits together: about 1,000-2,700 rows per
(dataset, model) pair, far fewer than the paper's 4,800-20,000 per set).

For every (dataset, model, confidence kind) and for a pooled row per dataset
(all models together, the model's identity available to beta as a one-hot
block of features next to the text embedding), run the 20:60:10:10 protocol
of :mod:`sklearn_betacal._protocol` for ``--seeds`` seeds and report CE(h; beta),
ECE and AUAC as mean +- 95% t-interval over seeds, in the layout of Table 2.

Usage::

    .venv/bin/python benchmarks/paper_experiment.py --seeds 8 \
        --out benchmarks/results/paper_experiment.md

Runs several configurations in parallel processes (``--jobs``); writes the
Markdown table, a CSV of every (configuration, seed, calibrator) row and
reliability diagrams for the pooled rows (when matplotlib is installed).
"""

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from sklearn_betacal._protocol import (
    CONFIDENCE_COLUMNS,
    ProtocolConfig,
    format_table,
    run_protocol,
    summarize,
)

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "influences"


def load_verb(data_dir):
    A = pd.read_parquet(data_dir / "influences_llm_calibration_all.parquet")
    A = A[A.prompt_style == "verb"].copy()
    A["answer"] = A["extracted_answer"].fillna("").astype(str)
    A["question"] = A["question"].fillna("").astype(str)
    return A


def configurations(A, kinds, datasets, pooled=True, per_model=True):
    for dataset in datasets:
        D = A[A.dataset == dataset]
        for kind in kinds:
            col = CONFIDENCE_COLUMNS[kind]
            ok = D[col].between(0, 1) & D.correct_judge.isin([0, 1])
            if per_model:
                for model in sorted(D.model.unique()):
                    rows = D[ok & (D.model == model)]
                    yield (dataset, model, kind), rows, ()
            if pooled:
                rows = D[ok]
                onehot = pd.get_dummies(rows.model, prefix="model", dtype=float)
                rows = pd.concat([rows, onehot], axis=1)
                yield (dataset, "pooled", kind), rows, tuple(onehot.columns)


def run_one(args):
    key, rows, extra, seeds, base_config = args
    dataset, model, kind = key
    config = ProtocolConfig(**{**base_config, "extra_feature_columns": extra})
    out = []
    for seed in seeds:
        res, _ = run_protocol(rows, CONFIDENCE_COLUMNS[kind], seed=seed, config=config)
        res.insert(0, "kind", kind)
        res.insert(0, "model", model)
        res.insert(0, "dataset", dataset)
        res["n_rows"] = len(rows)
        out.append(res)
    return pd.concat(out, ignore_index=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--datasets", nargs="+", default=["nq", "sciq", "triviaqa", "wikiqa"]
    )
    parser.add_argument("--kinds", nargs="+", default=["verbal", "token"])
    parser.add_argument("--no-per-model", action="store_true")
    parser.add_argument(
        "--out", type=Path, default=HERE / "results" / "paper_experiment.md"
    )
    args = parser.parse_args(argv)

    A = load_verb(args.data)
    base = {}
    tasks = [
        (key, rows, extra, list(range(args.seeds)), base)
        for key, rows, extra in configurations(
            A, args.kinds, args.datasets, per_model=not args.no_per_model
        )
    ]
    print(f"{len(tasks)} configurations x {args.seeds} seeds", file=sys.stderr)
    start = time.perf_counter()
    frames = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for i, res in enumerate(pool.map(run_one, tasks), 1):
            frames.append(res)
            print(
                f"[{i}/{len(tasks)}] {res.dataset[0]}/{res.model[0]}/{res.kind[0]} "
                f"{time.perf_counter() - start:.0f}s",
                file=sys.stderr,
            )
    results = pd.concat(frames, ignore_index=True)
    keys = ("dataset", "model", "kind", "calibrator")
    summary = summarize(results, by=keys)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    results.to_csv(args.out.with_suffix(".csv"), index=False)
    wins = win_counts(summary)
    text = [
        "# The paper's experiment on the Influences-on-LLM-Calibration data",
        "",
        f"Seeds: {args.seeds}. Runtime: {time.perf_counter() - start:.0f} s on "
        f"{os.cpu_count()} cores. Mean ± 95% t-interval over seeds.",
        "",
        wins,
        "",
        format_table(summary, keys=keys),
        "",
    ]
    args.out.write_text("\n".join(text))
    print(wins)


def win_counts(summary):
    """How often each calibrator has the best CE(h;beta) / AUAC per configuration."""
    lines = [
        "| calibrator | best CE(h;β) | best AUAC | mean rank CE(h;β) |",
        "|---|---|---|---|",
    ]
    groups = summary.groupby(["dataset", "model", "kind"], sort=False)
    best_ce, best_auac, ranks = {}, {}, {}
    for _, block in groups:
        ce_winner = block.loc[block.beta_ce_mean.idxmin(), "calibrator"]
        auac_winner = block.loc[block.auac_mean.idxmax(), "calibrator"]
        best_ce[ce_winner] = best_ce.get(ce_winner, 0) + 1
        best_auac[auac_winner] = best_auac.get(auac_winner, 0) + 1
        for cal, rank in zip(block.calibrator, block.beta_ce_mean.rank(), strict=True):
            ranks.setdefault(cal, []).append(rank)
    for cal in summary.calibrator.unique():
        lines.append(
            f"| {cal} | {best_ce.get(cal, 0)} | {best_auac.get(cal, 0)} | "
            f"{np.mean(ranks[cal]):.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
