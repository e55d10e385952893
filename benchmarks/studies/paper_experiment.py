# SPDX-License-Identifier: MIT
"""Reproduce the paper's experiment (Sec. 5, App. B, Tables 2/6/7) on real data.

Data: the Influences-on-LLM-Calibration records in ``$BETACAL_SHARED_DATA/influences``
(verb prompt style, train + test splits together: about 1,000-2,700 rows per
(dataset, model) pair, far fewer than the paper's 4,800-20,000 per set).

For every (dataset, model, confidence kind) and for a pooled row per dataset
(all models together, the model's identity available to beta: the model
column crossed with every kd-tree, :class:`CrossPartitioner`), run the 20:60:10:10 protocol
of :mod:`sklearn_betacal.cli._protocol` for ``--seeds`` seeds and report CE(h; beta)
with its noise floor and debiased squared version, ECE, Brier and AUAC as
mean +- 95% t-interval over seeds, in the layout of Table 2. Hyper-parameters
are tuned on the tuning split by the debiased CE(h; beta) (``--tune-by
beta_ce``, default) or by AUAC as the paper does (``--tune-by auac``).

Usage::

    .venv/bin/python benchmarks/studies/paper_experiment.py --seeds 8 \
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

from sklearn_betacal.cli._protocol import (
    CALIBRATORS,
    CONFIDENCE_COLUMNS,
    ProtocolConfig,
    format_table,
    run_protocol,
    summarize,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness
from _measure import RESULTS, add_data_argument, load_influences  # noqa: E402


def configurations(A, kinds, datasets, pooled=True, per_model=True, models=None):
    for dataset in datasets:
        D = A[A.dataset == dataset]
        for kind in kinds:
            col = CONFIDENCE_COLUMNS[kind]
            ok = D[col].between(0, 1) & D.correct_judge.isin([0, 1])
            if per_model:
                for model in sorted(D.model.unique()):
                    if models is not None and model not in models:
                        continue
                    rows = D[ok & (D.model == model)]
                    yield (dataset, model, kind), rows, None
            if pooled:
                yield (dataset, "pooled", kind), D[ok], "model"


def run_one(args):
    key, rows, group, seeds, base_config = args
    dataset, model, kind = key
    config = ProtocolConfig(**{**base_config, "group_column": group})
    out, first = [], None
    for seed in seeds:
        res, preds = run_protocol(
            rows, CONFIDENCE_COLUMNS[kind], seed=seed, config=config
        )
        if first is None and model == "pooled":
            first = preds
        res.insert(0, "kind", kind)
        res.insert(0, "model", model)
        res.insert(0, "dataset", dataset)
        res["n_rows"] = len(rows)
        out.append(res)
    return pd.concat(out, ignore_index=True), first


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument(
        "--first-seed",
        type=int,
        default=0,
        help="run seeds first-seed .. first-seed + seeds - 1 (to add seeds to "
        "a recorded run: a seed's results do not depend on the others)",
    )
    parser.add_argument("--models", nargs="+", default=None)
    parser.add_argument("--no-pooled", action="store_true")
    parser.add_argument(
        "--merge",
        type=Path,
        default=None,
        help="CSV of an earlier run of the same code: its rows that this run "
        "did not recompute (other seeds, or other calibrators with "
        "--calibrators) are added before the table is written",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--datasets", nargs="+", default=["nq", "sciq", "triviaqa", "wikiqa"]
    )
    parser.add_argument("--kinds", nargs="+", default=["verbal", "token"])
    parser.add_argument("--no-per-model", action="store_true")
    parser.add_argument("--depths", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--points-per-bin", nargs="+", type=int, default=[20, 40, 80])
    parser.add_argument("--tune-by", choices=["beta_ce", "auac"], default="beta_ce")
    parser.add_argument(
        "--calibrators",
        nargs="+",
        default=None,
        help="run only these (e.g. BB-T B); default: all of the paper's table",
    )
    parser.add_argument(
        "--tree-components",
        type=int,
        default=None,
        help="BB-T's tree splits on this many principal directions",
    )
    parser.add_argument(
        "--tree-no-stop",
        action="store_true",
        help="BB-T's tree without its significance stop (split_alpha=None)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "paper_experiment.md")
    args = parser.parse_args(argv)

    A = load_influences(args.data)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    base = {
        "depths": tuple(args.depths),
        "points_per_bin": tuple(args.points_per_bin),
        "tune_by": args.tune_by,
        "tree_kwargs": {
            "n_components": args.tree_components,
            **({"split_alpha": None} if args.tree_no_stop else {}),
        },
    }
    if args.calibrators:
        base["calibrators"] = tuple(args.calibrators)
    tasks = [
        (key, rows, group, seeds, base)
        for key, rows, group in configurations(
            A,
            args.kinds,
            args.datasets,
            pooled=not args.no_pooled,
            per_model=not args.no_per_model,
            models=args.models,
        )
    ]
    print(f"{len(tasks)} configurations x {args.seeds} seeds", file=sys.stderr)
    start, load = time.perf_counter(), os.getloadavg()
    frames = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for i, (res, preds) in enumerate(pool.map(run_one, tasks), 1):
            frames.append(res)
            if preds is not None:
                write_diagram(args.out.parent, res.iloc[0], preds)
            print(
                f"[{i}/{len(tasks)}] {res.dataset[0]}/{res.model[0]}/{res.kind[0]} "
                f"{time.perf_counter() - start:.0f}s",
                file=sys.stderr,
            )
    results = pd.concat(frames, ignore_index=True)
    if args.merge is not None:
        old = pd.read_csv(args.merge, keep_default_na=False, na_values=[""])
        keys = ["dataset", "model", "kind", "seed", "calibrator"]
        redone = old.set_index(keys).index.isin(results.set_index(keys).index)
        results = pd.concat([old[~redone], results], ignore_index=True)
    n_seeds = results.seed.nunique()
    keys = ("dataset", "model", "kind", "calibrator")
    summary = summarize(results, by=keys)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    results.to_csv(args.out.with_suffix(".csv"), index=False)
    wins = win_counts(summary)
    text = [
        "# The paper's experiment on the Influences-on-LLM-Calibration data",
        "",
        f"Seeds: {n_seeds}. Runtime: {time.perf_counter() - start:.0f} s on "
        f"{os.cpu_count()} cores. Mean ± 95% t-interval over seeds. "
        f"Grid: kd-tree depth {args.depths} x points per bin "
        f"{args.points_per_bin}, tuned by "
        f"{'the debiased CE(h;β)' if args.tune_by == 'beta_ce' else 'AUAC'} on "
        "the tuning split; evaluation beta: depth-2 kd-tree "
        "(crossed with the model for pooled rows). floor: CE(h;β) that "
        "perfectly calibrated confidences would get on the same cells and bins; "
        "CE²(h;β) debiased ×100: Kumar et al.'s unbiased squared error.",
        "",
        f"BB-T's learned tree: {base['tree_kwargs']}. Calibrators: "
        f"{', '.join(base.get('calibrators', CALIBRATORS))}.",
        "",
        f"Load average (1, 5, 15 min) at start {' '.join(f'{v:.2f}' for v in load)}, "
        f"at end {' '.join(f'{v:.2f}' for v in os.getloadavg())}.",
        "",
        wins,
        "",
        format_table(summary, keys=keys),
        "",
    ]
    args.out.write_text("\n".join(text))
    print(wins)


def write_diagram(folder, row, preds):
    """Reliability diagrams (seed 0, test split) of a pooled configuration."""
    from sklearn_betacal.metrics._plot._base import have_matplotlib

    if not have_matplotlib():
        return
    from sklearn_betacal.cli._panels import reliability_grid, save_png

    curves = {c: preds[c] for c in ("None", "S", "B", "BB", "HS-BB") if c in preds}
    if not curves:  # a run of other calibrators only (--calibrators BB-T)
        return
    name = f"paper_{row.dataset}_{row.kind}_pooled.png"
    title = f"{row.dataset}, {row.kind} confidence, all models pooled (seed 0)"
    fig, _ = reliability_grid(preds["_y"], curves, title=title, ncols=5)
    save_png(fig, folder / name)


def win_counts(summary):
    """How often each calibrator is best per configuration, by each score.

    A calibrator is counted when it alone has the best mean; rows where
    several share the best mean exactly (identical results) are counted
    apart, as "(+k tied)", for each of them.
    """
    scores = [("beta_ce", "min", "best CE(h;β)")]
    if "beta_ce_debiased_mean" in summary:
        scores.append(("beta_ce_debiased", "min", "best debiased CE²(h;β)"))
    scores.append(("auac", "max", "best AUAC"))
    head = [name for _, _, name in scores]
    lines = [
        "| calibrator | " + " | ".join(head) + " | mean rank CE(h;β) |",
        "|---" * (len(head) + 2) + "|",
    ]
    groups = summary.groupby(["dataset", "model", "kind"], sort=False)
    wins = {m: {} for m, _, _ in scores}
    tied = {m: {} for m, _, _ in scores}
    ranks = {}
    for _, block in groups:
        for m, how, _ in scores:
            col = block[f"{m}_mean"]
            best = block.calibrator[col == (col.min() if how == "min" else col.max())]
            # identical results (a one-cell tree is plain UMD) share the row
            into = wins[m] if len(best) == 1 else tied[m]
            for cal in best:
                into[cal] = into.get(cal, 0) + 1
        for cal, rank in zip(block.calibrator, block.beta_ce_mean.rank(), strict=True):
            ranks.setdefault(cal, []).append(rank)
    for cal in summary.calibrator.unique():
        counts = " | ".join(
            f"{wins[m].get(cal, 0)}"
            + (f" (+{tied[m][cal]} tied)" if tied[m].get(cal) else "")
            for m, _, _ in scores
        )
        lines.append(f"| {cal} | {counts} | {np.mean(ranks[cal]):.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
