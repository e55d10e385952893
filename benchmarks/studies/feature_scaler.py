# SPDX-License-Identifier: MIT
"""Keep resolution: S-BB with the feature-aware scaler, cross-fitted (issue 21, item 4).

``ScalingBetaBinningCalibrator(scaler="features")`` fits the hierarchical
scaler (Eq. 5) and a boosted recalibration on ``[logit q, features]`` on D1
and beta-bins *its output* on D2 (proxies = its fitted values, Alg. 3).
With ``cv=k`` it does so once per fold (scaler on the other ``k - 1`` folds,
binning on the fold) and averages the ``k`` binned predictions. Side by side
in one process, on the rows, sets and cells of ``peers_mcgrad.py`` (its
loaders, its scores, its per-set loop with the order rotated):

- ``UMD`` (b = 50, the reference of the CE ratios); ``BB tree()``: the
  one-liner ``BetaBinningCalibrator(CalibrationTreePartitioner())``;
  ``HS-BB tree()``: the hierarchical scaler, binning ``h``;
  ``S-BB features tree()``: the feature-aware scaler, one split (50/50);
  ``... cv=2`` (the two halves swapped), ``... cv=3`` and ``... cv=5``;
  ``features scaler alone``: the one-split model's scaler without its
  binning (``proxy_proba``): what the binning costs; ``MCGrad`` on the same features.
- Studies (``peers_mcgrad.py``): the influences study with the QA dataset
  hidden (verbal and token confidences, 12 models, question-level 30 %
  holdout), planted groups of known truth (16 blobs in 32-d), CIFAR
  top-label (six record sets, beta = the predicted class).

Scores on the test rows: plug-in beta-CE (l1, 10 bins per cell), debiased
squared beta-CE, ECE, Brier, log loss, AUROC, the resolution term of the
Brier decomposition (uncertainty - refinement, 20 equal-mass bins), fit
seconds; ratios as in ``peers_mcgrad.py`` (CE / UMD: geometric mean;
debiased / UMD: median; fit / MCGrad: geometric mean of the same-process
ratio). MCGrad runs where ``mcgrad`` is importable (a benchmark peer).

Boosting settings (``--boosting NAME ...``, names of :data:`BOOSTINGS`):
``current`` is the library's ``BOOSTING``; each other name adds the
``S-BB features`` methods again, fitted with ``BOOSTING`` updated by that
entry (suffix ``[NAME]``), side by side on the same rows. ``--methods``
keeps only the listed methods (and their ``[NAME]`` copies). With several
settings and seeds the report adds the per-seed tables (:func:`paired`:
means and standard errors over seeds, paired differences from ``current``)
and the verdict of the rule of a change (:func:`verdict`).

Run: ``OMP_NUM_THREADS=1 python benchmarks/studies/feature_scaler.py --data
FOLDER`` (``--studies``, ``--seeds``, ``--models``, ``--boosting``,
``--methods``; the data folder from ``$BETACAL_SHARED_DATA`` if not given);
results in
``results/feature_scaler.md`` and a CSV beside it.
"""

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

sys.path.insert(
    0, os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)  # the harness
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _measure import (  # noqa: E402
    RESULTS,
    add_data_argument,
    data_dir,
    header,
    markdown_frame,
    markdown_table,
    write_result,
)
from threadpoolctl import threadpool_limits  # noqa: E402

from sklearn_betacal import (  # noqa: E402
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    ScalingBetaBinningCalibrator,
    UMDBinner,
)
from sklearn_betacal import _scaling_beta_binning as _sbb  # noqa: E402
from sklearn_betacal.metrics import brier_decomposition  # noqa: E402

B = 50
SCORES = [
    "beta_ce",
    "beta_ce_debiased",
    "ece",
    "brier",
    "log_loss",
    "auroc",
    "resolution",
]


#: Candidate boosting settings: updates of the library's ``BOOSTING``
#: (issue 21 item 4: fewer, larger leaves and L2 for small folds).
BOOSTINGS = {
    "current": {},
    "small": {
        "max_leaf_nodes": 4,
        "min_samples_leaf": 100,
        "l2_regularization": 1.0,
        "max_iter": 800,
    },
    "mid": {
        "max_leaf_nodes": 7,
        "min_samples_leaf": 50,
        "l2_regularization": 1.0,
        "max_iter": 800,
    },
    # between current and mid (mid and small lost planted-group calibration):
    # scikit-learn's 31 leaves with L2 and larger leaves, and 15 leaves
    "l2msl50": {"min_samples_leaf": 50, "l2_regularization": 1.0},
    "l2msl100": {"min_samples_leaf": 100, "l2_regularization": 1.0},
    "leaves15": {
        "max_leaf_nodes": 15,
        "min_samples_leaf": 50,
        "l2_regularization": 1.0,
        "max_iter": 800,
    },
    # session 15, MiniLM verbal (where S-BB features trailed MCGrad's Brier
    # and AUROC): a slower rate, and a longer, larger early-stopping check
    "lr05": {"learning_rate": 0.05, "max_iter": 600},
    "val20": {"validation_fraction": 0.2, "n_iter_no_change": 20},
}


@contextlib.contextmanager
def boosting(update):
    """The library's ``BOOSTING`` updated by ``update`` while inside."""
    saved = _sbb.BOOSTING
    _sbb.BOOSTING = {**saved, **update}
    try:
        yield
    finally:
        _sbb.BOOSTING = saved


def resolution(y, f):
    """The Brier decomposition's resolution: uncertainty - refinement."""
    d = brier_decomposition(y, f, n_bins=20, strategy="quantile")
    m = float(np.mean(y))
    return m * (1 - m) - d.refinement


def scores(y, f, g, truth=None):
    """``peers_mcgrad.scores`` plus the resolution term: one scoring function
    for both studies of the feature-aware scaler."""
    from peers_mcgrad import scores as peer_scores

    return {
        **peer_scores(y, f, g, truth),
        "resolution": resolution(y, np.clip(f, 0, 1)),
    }


def methods(seed, MCGrad, needs=False, settings=("current",)):
    """The contenders of one (set, seed); ``settings``: names of
    :data:`BOOSTINGS` (each but ``current`` adds ``S-BB features``
    copies suffixed ``[NAME]``)."""
    from peers_mcgrad import Ours, Peer

    class Boosted(Ours):
        """A feature-aware method fitted with other boosting settings."""

        def __init__(self, inner, update):
            self.inner, self.update = inner, update

        def fit(self, h, Z, g, y, qid):
            with boosting(self.update):
                self.inner.fit(h, Z, g, y, qid)
            self.model = self.inner.model
            return self

        def predict(self, h, Z, g):
            return self.inner.predict(h, Z, g)

    class Alone(Ours):
        """The feature-aware scaler's own probabilities, without the binning."""

        def predict(self, h, Z, g):
            return self.model.proxy_proba(self._X(h, Z, g))

    def sbb(scaler, cv=None):
        return lambda: ScalingBetaBinningCalibrator(
            CalibrationTreePartitioner(),
            scaler=scaler,
            cv=cv,
            points_per_bin=B,
            random_state=seed,
        )

    out = {
        "UMD": Ours(lambda: UMDBinner(points_per_bin=B, random_state=seed), "h"),
        "BB tree()": Ours(
            lambda: BetaBinningCalibrator(
                CalibrationTreePartitioner(), points_per_bin=B, random_state=seed
            ),
            "hZ",
        ),
        "HS-BB tree()": Ours(sbb("hierarchical"), "hZ"),
        "S-BB features tree()": Ours(sbb("features"), "hZ"),
        "S-BB features tree() cv=2": Ours(sbb("features", 2), "hZ"),
        "S-BB features tree() cv=3": Ours(sbb("features", 3), "hZ"),
        "S-BB features tree() cv=5": Ours(sbb("features", 5), "hZ"),
        "features scaler alone": Alone(sbb("features"), "hZ"),
    }
    featured = [k for k in out if "features" in k]
    for name in settings:
        if name == "current":
            continue
        for key in featured:
            fresh = methods(seed, None)[key]  # its own (unfitted) instance
            out[f"{key} [{name}]"] = Boosted(fresh, BOOSTINGS[name])
    if MCGrad is not None:
        out["MCGrad"] = Peer(MCGrad, seed)
    return out


def _geo(x):
    x = np.asarray(x, dtype=float)
    return float(np.exp(np.mean(np.log(x))))


def summary(R):
    """One frame per reported group: means, CE ratios, fit ratio to MCGrad."""
    from peers_mcgrad import _groups

    out = []
    order = list(methods(0, object, settings=list(BOOSTINGS)))
    for label, G in _groups(R):
        key = ["set", "seed"]
        umd = G[G.method == "UMD"].set_index(key)
        mc = (
            G[G.method == "MCGrad"].set_index(key)
            if (G.method == "MCGrad").any()
            else None
        )
        rows = {}
        for method in sorted(G.method.unique(), key=order.index):
            m = G[G.method == method].set_index(key)
            u = umd.loc[m.index]
            row = {
                "CE / UMD": _geo(m.beta_ce / u.beta_ce),
                "debiased / UMD": float(
                    np.median(m.beta_ce_debiased / u.beta_ce_debiased)
                ),
                **{c: float(m[c].mean()) for c in SCORES},
                "fit s": float(m.fit_s.mean()),
            }
            row["beta_ce_debiased"] *= 100
            if "true_ce" in m and m.true_ce.notna().all():
                row["true CE"] = float(m.true_ce.mean())
            if mc is not None:
                row["fit / MCGrad"] = _geo(m.fit_s / mc.loc[m.index].fit_s)
            rows[method] = row
        frame = pd.DataFrame.from_dict(rows, orient="index")
        frame = frame.rename(columns={"beta_ce_debiased": "debiased x100"})
        frame.index.name = "method"
        out.append(
            (f"{label} ({G.set.nunique()} sets x {G.seed.nunique()} seeds)", frame)
        )
    return out


#: The scores of the per-seed tables (column title, CSV column, scale)
PAIRED = [
    ("beta-CE", "beta_ce", 1),
    ("debiased x100", "beta_ce_debiased", 100),
    ("Brier", "brier", 1),
    ("log loss", "log_loss", 1),
    ("AUROC", "auroc", 1),
    ("true CE", "true_ce", 1),
]
#: The rule of a change of ``BOOSTING``, fixed before the runs: no set worse
#: beyond this many standard errors of the paired difference over seeds in
#: Brier, log loss or debiased beta-CE, and no larger mean AUROC loss.
RULE_SE, RULE_AUROC = 2.0, 0.002


def _mean_se(x):
    x = np.asarray(x, dtype=float)
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.shape[0]))


def paired(R):
    """Per seed: each score averaged over a group's sets within a seed,
    then mean and standard error over seeds; and the paired differences of
    every ``[NAME]`` setting from ``current`` (same set and seed rows).

    Returns ``(tables, diffs)``: the lines per group, and a frame of the
    paired differences (group, method, setting, score, mean, se, worse
    seeds) that :func:`verdict` reads.
    """
    from peers_mcgrad import _groups

    lines, diffs = [], []
    for label, G in _groups(R):
        G = G.assign(
            base=G.method.str.split(" [", regex=False).str[0],
            setting=G.method.str.extract(r"\[(.*)\]$")[0].fillna("current"),
        )
        G = G[G.base.str.startswith("S-BB features")]
        if G.empty:
            continue
        scores = [p for p in PAIRED if p[1] in G and G[p[1]].notna().all()]
        seeds = G.seed.nunique()
        head = ["method", "setting", *(t for t, _, _ in scores), "fit s"]
        head += ["fit / current"]
        dhead = ["method", "setting", *(f"Δ {t}" for t, _, _ in scores)]
        dhead += ["worse seeds (debiased)"]
        rows, drows = [], []
        for base, B in G.groupby("base", sort=True):  # one split, then cv
            cur = B[B.setting == "current"].set_index(["set", "seed"])
            for setting in sorted(B.setting.unique(), key=list(BOOSTINGS).index):
                S = B[B.setting == setting].set_index(["set", "seed"])
                per_seed = S.groupby(level="seed")
                row = [base, setting]
                for _, col, k in scores:
                    m, se = _mean_se(per_seed[col].mean() * k)
                    row.append(
                        f"{m:.4f} ± {se:.4f}" if k == 1 else f"{m:.3f} ± {se:.3f}"
                    )
                row.append(f"{S.fit_s.mean():.3f}")
                logr = np.log(S.fit_s / cur.loc[S.index].fit_s)
                m, se = _mean_se(logr.groupby(level="seed").mean())
                row.append(f"{np.exp(m):.2f} (×/÷ {np.exp(se):.2f})")
                rows.append(row)
                if setting == "current":
                    continue
                drow = [base, setting]
                for _, col, k in scores:
                    d = ((S[col] - cur.loc[S.index, col]) * k).groupby(level="seed")
                    d = d.mean()
                    m, se = _mean_se(d)
                    star = "*" if abs(m) > RULE_SE * se else ""
                    fmt = ".4f" if k == 1 else ".3f"
                    drow.append(f"{m:+{fmt}} ± {se:{fmt}}{star}")
                    diffs.append(
                        {
                            "group": label,
                            "method": base,
                            "setting": setting,
                            "score": col,
                            "mean": m,
                            "se": se,
                            "worse": int(
                                (d < 0).sum() if col == "auroc" else (d > 0).sum()
                            ),
                            "seeds": seeds,
                        }
                    )
                worse = next(
                    r["worse"]
                    for r in diffs[-len(scores) :]
                    if r["score"] == "beta_ce_debiased"
                )
                drow.append(f"{worse} of {seeds}")
                drows.append(drow)
        n_sets = G.set.nunique()
        lines += [
            f"### {label} ({n_sets} sets x {seeds} seeds)",
            "",
            *markdown_table(head, rows),
            "",
            "Paired differences vs current (candidate − current; mean ± SE over "
            f"seeds; * = |diff| > {RULE_SE:g} SE; worse seeds: seeds whose "
            "debiased beta-CE difference is > 0):",
            "",
            *markdown_table(dhead, drows),
            "",
        ]
    return lines, pd.DataFrame(diffs)


def verdict(diffs):
    """Per setting: the rule's outcome, and the (group, method, score) cells
    that break it."""
    out = {}
    for setting, D in diffs.groupby("setting", sort=False):
        broken = []
        for r in D.itertuples():
            if r.score in ("brier", "log_loss", "beta_ce_debiased"):
                bad = r.mean > 0 and r.mean > RULE_SE * r.se
            elif r.score == "auroc":
                bad = r.mean < -RULE_AUROC
            else:
                continue
            if bad:
                broken.append(f"{r.group}, {r.method}, {r.score}")
        out[setting] = broken
    return out


def report(R, elapsed, load0, load1):
    lines = [
        "# Keep resolution: S-BB with the feature-aware scaler, cross-fitted "
        "(issue 21, item 4)",
        "",
        header("mcgrad", "lightgbm", prefix=""),
        "",
        f"`benchmarks/studies/feature_scaler.py`; {elapsed:.0f} s; one BLAS/OpenMP "
        f"thread; load average (1, 5, 15 min) at start {load0}, at end {load1}; "
        f"per-(set, seed) 1-min load in the CSV (mean {R.load.mean():.2f}, max "
        f"{R.load.max():.2f}).",
        "",
        "Means over (set, seed); `CE / UMD`: geometric mean of the plug-in "
        "beta-CE ratio to UMD (b = 50); `debiased / UMD`: median ratio of the "
        "debiased squared beta-CE; `resolution`: uncertainty - refinement of the "
        "Brier decomposition (20 equal-mass bins); `fit / MCGrad`: geometric mean "
        "of the same-process time ratio. `features scaler alone`: the scaler of "
        "`S-BB features tree()` without its binning (what binning costs).",
        "",
    ]
    for label, frame in summary(R):
        lines += [f"## {label}", "", *markdown_frame(frame), ""]
    if R.method.str.contains(r" \[", regex=True).any() and R.seed.nunique() > 1:
        tables, diffs = paired(R)
        lines += [
            "## Per seed: mean ± standard error, and paired differences vs current",
            "",
            "Each score averaged over the sets of a group within a seed, then "
            "mean and standard error (sd / sqrt(seeds)) over seeds; `fit / "
            "current`: geometric mean over seeds of the per-seed mean log "
            "same-process fit-time ratio (×/÷ its standard error on the log "
            "scale). Negative differences are better except for AUROC.",
            "",
            *tables,
            f"Rule (fixed before the run): a setting passes if no group, for "
            f"either calibrator, is worse by more than {RULE_SE:g} SE in Brier, "
            f"log loss or debiased beta-CE and no mean AUROC loss exceeds "
            f"{RULE_AUROC:g}.",
            "",
        ]
        for setting, broken in verdict(diffs).items():
            state = "passes" if not broken else "fails: " + "; ".join(broken)
            lines.append(f"- `{setting}` {state}")
        lines.append("")
    return lines


def main(argv=None):
    import peers_mcgrad as peers
    from peers_mcgrad import (
        _mcgrad,
        add_set_arguments,
        cifar_sets,
        influences_sets,
        planted_sets,
        run_set,
    )

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(ap)
    add_set_arguments(ap)
    ap.add_argument(
        "--boosting",
        nargs="+",
        choices=list(BOOSTINGS),
        default=["current"],
        help="boosting settings side by side (names of BOOSTINGS)",
    )
    ap.add_argument(
        "--methods",
        nargs="+",
        default=None,
        help="keep only these methods (and their [NAME] copies)",
    )
    ap.add_argument("--out", type=Path, default=RESULTS / "feature_scaler.md")
    args = ap.parse_args(argv)

    if args.combine:
        R = pd.concat([pd.read_csv(f) for f in args.combine], ignore_index=True)
        write_result(args.out, report(R, float("nan"), "?", "?"))
        return
    folder = data_dir(
        args.data, required=bool({"influences", "cifar"} & set(args.studies))
    )
    MCGrad = _mcgrad()
    load0 = tuple(round(v, 2) for v in os.getloadavg())
    start = time.perf_counter()
    sets = []
    if "influences" in args.studies:
        peers.MINILM_CACHE = args.minilm_cache
        for emb in args.embedding:
            name = "influences" if len(args.embedding) == 1 else f"influences {emb}"
            gen = influences_sets(folder, args.seeds, args.models, args.kinds, emb)
            sets.append((name, gen))
    if "planted" in args.studies:
        sets.append(("planted", planted_sets(args.seeds)))
    if "cifar" in args.studies:
        sets.append(("cifar", cifar_sets(folder, args.seeds)))
    only = None
    if args.methods:
        every = methods(0, object, settings=args.boosting)
        keep = {"UMD", *args.methods}  # UMD: the reference of the ratios
        only = [k for k in every if k.split(" [")[0] in keep]

    def make(seed, MCGrad, needs=False):
        return methods(seed, MCGrad, needs, settings=args.boosting)

    records, turn = [], 0
    with threadpool_limits(limits=1):
        for study, gen in sets:
            for name, seed, data in gen:
                records += run_set(
                    study,
                    name,
                    seed,
                    data,
                    MCGrad,
                    turn,
                    only=only,
                    make=make,
                    score=scores,
                )
                turn += 1
                print(
                    f"{study} {name} seed {seed} "
                    f"({time.perf_counter() - start:.0f} s, "
                    f"load {os.getloadavg()[0]:.2f})",
                    file=sys.stderr,
                    flush=True,
                )
    R = pd.DataFrame(records)
    R.to_csv(args.out.with_suffix(".csv"), index=False, float_format="%.6g")
    load1 = tuple(round(v, 2) for v in os.getloadavg())
    write_result(args.out, report(R, time.perf_counter() - start, load0, load1))


if __name__ == "__main__":
    main()
