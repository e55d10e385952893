"""Why BB-T lost on the paper's experiment when the merge became the default.

Two parts (issue 21):

``--compare``: paired differences (merge minus the growing tree) of BB-T's
recorded test scores, per dataset and kind, from two recorded runs of
``paper_experiment.py`` that differ only in BB-T's partitioner (same seeds,
splits and other calibrators): the plug-in CE(h;beta) and the debiased
CE^2(h;beta), with a 95 % t-interval over the (model, seed) pairs and over
the models (seeds averaged first), beside the seed-to-seed spread of BB-T
itself; plus the ``b`` the tuning picked.

``--cells``: what the partition sees in that protocol. For each dataset and
kind (per-model configurations, a few models, a few seeds) it rebuilds the
protocol's split and embedding (``run_protocol``'s partition split, the
TF-IDF+SVD view fitted there) and fits BB-T's partitioners the way
``run_protocol`` does (``max_depth`` in the depth grid, ``min_samples_leaf``
for about ``2 b`` calibration rows at the smallest ``b``): rows, leaf minimum,
fine cells, merged cells and the heterogeneity p-value of the merge, and the
cells of the growing tree (``strategy="tree"``) at each depth. It also fits
the one-liner ``BetaBinningCalibrator(CalibrationTreePartitioner(),
points_per_bin="auto", epsilon=0.1)`` on the calibration rows and reports the ``b`` that
``"auto"`` resolves to and its cells (the paper's protocol itself tunes ``b``
over a fixed grid and never uses ``"auto"``).
"""

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from sklearn_betacal import BetaBinningCalibrator, CalibrationTreePartitioner
from sklearn_betacal.cli._protocol import (
    CONFIDENCE_COLUMNS,
    ProtocolConfig,
    _features,
    split_indices,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness
from _measure import RESULTS, add_data_argument, load_influences  # noqa: E402

DATASETS = ("triviaqa", "nq", "sciq", "wikiqa")


def markdown(tab, fmt="{:.4f}"):
    """A plain markdown table (no tabulate dependency)."""
    cols = [str(c) for c in tab.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in tab.itertuples(index=False):
        cells = [fmt.format(v) if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def t_interval(x):
    x = np.asarray(x, dtype=float)
    if x.size < 2:
        return float(np.mean(x)), float("nan")
    half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    return float(x.mean()), float(half)


def compare(tree_csv, merge_csv):
    """Paired merge - tree differences of BB-T, per dataset."""
    keys = ["dataset", "model", "kind", "seed"]
    cols = ["beta_ce", "beta_ce_floor", "beta_ce_debiased", "brier", "best_params"]
    a = pd.read_csv(tree_csv)
    b = pd.read_csv(merge_csv)
    a = a[a.calibrator == "BB-T"][keys + cols]
    b = b[b.calibrator == "BB-T"][keys + cols]
    m = a.merge(b, on=keys, suffixes=("_tree", "_merge"))
    for v in ("tree", "merge"):  # the plug-in CE above its noise floor
        m[f"excess_{v}"] = m[f"beta_ce_{v}"] - m[f"beta_ce_floor_{v}"]
    out = []
    for (kind, dataset), g in list(m.groupby(["kind", "dataset"])) + [
        ((k, "all"), g) for k, g in m.groupby("kind")
    ]:
        row = {"kind": kind, "dataset": dataset, "pairs": len(g)}
        row["identical"] = float((g.beta_ce_tree == g.beta_ce_merge).mean())
        for s, scale in (
            ("beta_ce", 1.0),
            ("beta_ce_floor", 1.0),
            ("excess", 1.0),
            ("beta_ce_debiased", 100.0),
        ):
            d = scale * (g[f"{s}_merge"] - g[f"{s}_tree"])
            row[f"{s} tree"] = scale * g[f"{s}_tree"].mean()
            row[f"{s} merge"] = scale * g[f"{s}_merge"].mean()
            mu, half = t_interval(d)
            row[f"{s} diff (pairs)"] = f"{mu:+.4f} ± {half:.4f}"
            per_model = d.groupby(g.model).mean()
            mu, half = t_interval(per_model)
            row[f"{s} diff (models)"] = f"{mu:+.4f} ± {half:.4f}"
            # seed-to-seed spread of one configuration's BB-T (tree), mean sd
            row[f"{s} seed sd"] = float(
                (scale * g[f"{s}_tree"]).groupby(g.model).std(ddof=1).mean()
            )
        for v in ("tree", "merge"):
            bb = g[f"best_params_{v}"].str.extract(r"points_per_bin=(\d+)")[0]
            row[f"b picked {v}"] = " ".join(
                f"{k}:{c}" for k, c in bb.value_counts().sort_index().items()
            )
        out.append(row)
    return pd.DataFrame(out)


def cells(A, kinds, seeds, n_models, config):
    rows = []
    b_min = min(config.points_per_bin)
    for dataset in DATASETS:
        D = A[A.dataset == dataset]
        for kind in kinds:
            col = CONFIDENCE_COLUMNS[kind]
            ok = D[col].between(0, 1) & D.correct_judge.isin([0, 1])
            models = sorted(D.model.unique())[:n_models]
            for model in models:
                frame = D[ok & (D.model == model)].reset_index(drop=True)
                h = frame[col].to_numpy(dtype=np.float64)
                y = frame.correct_judge.to_numpy(dtype=np.float64)
                for seed in seeds:
                    part, cal, _, _ = split_indices(len(frame), config.fractions, seed)
                    Z = _features(frame, config, part, seed)
                    leaf = max(int(np.ceil(2 * b_min * len(part) / len(cal))), 10)
                    r = {
                        "dataset": dataset,
                        "kind": kind,
                        "model": model,
                        "seed": seed,
                        "rows": len(frame),
                        "partition rows": len(part),
                        "cal rows": len(cal),
                        "leaf": leaf,
                        "mean y": y[part].mean(),
                    }
                    merge = CalibrationTreePartitioner(
                        max_depth=2, min_samples_leaf=leaf, random_state=seed
                    ).fit(Z[part], y[part], confidence=h[part])
                    r["fine cells"] = merge.centers_.shape[0]
                    r["merged cells"] = merge.n_cells_
                    r["merge p"] = merge.split_pvalue_
                    r["smallest merged cell"] = int(merge.leaf_n_samples_.min())
                    for depth in config.depths:
                        tree = CalibrationTreePartitioner(
                            max_depth=depth,
                            min_samples_leaf=leaf,
                            strategy="tree",
                            random_state=seed,
                        ).fit(Z[part], y[part], confidence=h[part])
                        r[f"tree cells d{depth}"] = tree.n_cells_
                    X = np.column_stack([h, Z])
                    one = BetaBinningCalibrator(
                        CalibrationTreePartitioner(random_state=seed),
                        points_per_bin="auto",
                        epsilon=0.1,
                        random_state=seed,
                    ).fit(X[cal], y[cal])
                    r["auto b"] = one.points_per_bin_
                    p = one.partitioner_
                    p = getattr(p, "estimator", p)
                    r["one-liner fine"] = p.centers_.shape[0]
                    r["one-liner cells"] = p.n_cells_
                    rows.append(r)
                    print(r, file=sys.stderr)
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--compare", action="store_true")
    parser.add_argument(
        "--controlled",
        action="store_true",
        help="--compare the controlled runs (same code, BB-T's strategy only: "
        "paper_experiment.py --tree-strategy {tree,merge}, "
        "paper_bbt_strategy_KIND_STRATEGY.csv) instead of the recorded ones",
    )
    parser.add_argument("--cells", action="store_true")
    parser.add_argument("--kinds", nargs="+", default=["verbal", "token"])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--models", type=int, default=3, help="first N models")
    parser.add_argument("--out", type=Path, default=RESULTS / "paper_bbt_cells")
    args = parser.parse_args(argv)
    if args.compare:
        if args.controlled:
            files = [
                (
                    RESULTS / f"paper_bbt_strategy_{k}_tree.csv",
                    RESULTS / f"paper_bbt_strategy_{k}_merge.csv",
                )
                for k in args.kinds
            ]
        else:
            files = [
                (
                    RESULTS / f"paper_experiment_{k}.csv",
                    RESULTS / f"paper_experiment_{k}_merge.csv",
                )
                for k in args.kinds
            ]
        tab = pd.concat([compare(*f) for f in files], ignore_index=True)
        name = "_compare_controlled" if args.controlled else "_compare"
        tab.to_csv(f"{args.out}{name}.csv", index=False)
        print(markdown(tab))
    if args.cells:
        config = ProtocolConfig(depths=(1, 2, 3), points_per_bin=(20, 40, 80))
        A = load_influences(args.data)
        tab = cells(A, args.kinds, list(range(args.seeds)), args.models, config)
        tab.to_csv(f"{args.out}.csv", index=False)
        num = tab.drop(columns=["model", "seed"]).groupby(["dataset", "kind"])
        print(markdown(num.mean().reset_index(), "{:.2f}"))


if __name__ == "__main__":
    main()
