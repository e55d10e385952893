# SPDX-License-Identifier: MIT
"""The paper's experimental protocol (Sec. 5, App. B), as reusable functions.

One *run* takes a table of question/answer records with a confidence and a
judge label and, for one random seed:

1. splits the rows 20:60:10:10 into a partition split (kd-tree beta, fitted
   without labels), a calibration split, a tuning split and a test split;
2. embeds question + answer text (:class:`~sklearn_betacal.TextEmbedder`,
   fitted on the partition split only) and fits one frozen
   :class:`~sklearn_betacal.KDTreePartitioner` per candidate depth on it;
3. tunes every calibrator's hyper-parameters with scikit-learn's
   ``GridSearchCV`` over a ``PredefinedSplit`` (train on the calibration
   split, score on the tuning split), by default with the debiased squared
   CE(h; beta) on the evaluation beta (Kumar et al. 2019), with
   ``tune_by="auac"`` by AUAC as the paper does, then refits the chosen
   configuration on the calibration split alone;
4. scores the calibrated test confidences by CE(h; beta) (Def. 2.4, estimated
   as in App. A.1 on one fixed evaluation beta shared by all calibrators),
   its noise floor and debiased squared version, ECE, Brier score and AUAC.

Why not AUAC by default: the AUAC changes under monotone rescaling and
rewards high confidences, so a search that maximises it picks the smallest
``points_per_bin`` and the deepest tree (the noisiest, most overconfident
candidate); raw confidences often have the best AUAC of all.

Both ``betacal demo`` and ``benchmarks/studies/paper_experiment.py`` call
:func:`run_protocol`; nothing here prints, so the callers own progress output.
"""

import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import GridSearchCV, PredefinedSplit

from ._parallel import limit_threads

#: Calibrators of the paper's Table 2 plus temperature scaling, in its order.
CALIBRATORS = ("BB", "BB-T", "HS-BB", "S-BB", "S-B", "S", "B", "TS", "None")

#: Calibrators a run can ask for beyond the paper's table.
OPTIONAL_CALIBRATORS = ("BB-KT",)

#: What each abbreviation of the tables stands for (printed under them).
METHOD_LEGEND = {
    "BB": "beta-binning: UMD histogram binning inside each kd-tree cell of "
    "beta; a cell with fewer than b points uses its nearest ancestor region "
    "with b points, else the root calibrator (Alg. 1-2)",
    "BB-T": "beta-binning on a learned partition: CalibrationTreePartitioner "
    "grown on the partition split's labels and confidences where the "
    "miscalibration differs, frozen, then BB",
    "BB-KT": "beta-binning tuned over both partitions: the kd-trees of BB and "
    "the learned trees of BB-T in one grid (not in the default table)",
    "HS-BB": "hierarchical scaling + beta-binning: a per-cell logistic "
    "scaler with partial pooling gives proxy labels that beta-binning "
    "recalibrates (Alg. 3, Eq. 5)",
    "S-BB": "scaling + beta-binning: as HS-BB with one pooled logistic scaler",
    "S-B": "scaling-binning: Platt scaling, then binning of its outputs "
    "(Kumar et al. 2019)",
    "S": "Platt scaling, sigma(a*s + b) (Platt 1999)",
    "B": "UMD histogram binning of the confidence alone (Alg. 4)",
    "TS": "temperature scaling, sigma(logit(h) / T) (Guo et al. 2017)",
    "None": "the raw confidence, uncalibrated",
}

#: Confidence kinds in the Influences study: column name per kind.
CONFIDENCE_COLUMNS = {"verbal": "verbal_confidence", "token": "extracted_seq_prob"}


@dataclass
class ProtocolConfig:
    """Knobs of one protocol run (defaults follow Sec. 5 / App. B).

    ``depths`` is the kd-tree depth grid and ``points_per_bin`` the b grid for
    the beta-binning family; the UMD and scaling-binning baselines search the
    same b grid (App. B: "for every B ... there is a b such that
    B = floor(N/b)"). ``eval_depth`` is the depth of the fixed evaluation
    beta on which CE(h; beta) is measured for every calibrator, and
    ``n_bins`` the number of equal-width confidence bins inside each cell.
    ``group_column`` (e.g. ``"model"`` for rows pooled over several LLMs)
    makes that column part of beta: every kd-tree, the evaluation one
    included, is crossed with the groups (:class:`CrossPartitioner`).
    ``tree_kwargs`` are passed to the learned tree of BB-T
    (:class:`CalibrationTreePartitioner`, e.g. ``{"n_components": 8}``).
    ``tune_by`` is the tuning score: ``"beta_ce"`` (debiased squared
    CE(h; beta) on the evaluation beta, the default) or ``"auac"`` (the
    paper's choice). ``blas_threads`` caps the BLAS/OpenMP threads of a run
    (threadpoolctl; ``None`` leaves them alone): one thread per run keeps
    parallel runs from oversubscribing the cores and is faster even alone
    on a small machine.
    """

    fractions: tuple = (0.2, 0.6, 0.1, 0.1)
    depths: tuple = (1, 2, 3, 4)
    points_per_bin: tuple = (15, 30, 60, 120)
    eval_depth: int = 2
    n_bins: int = 10
    n_components: int = 32
    calibrators: tuple = CALIBRATORS
    text_columns: tuple = ("question", "answer")
    extra_feature_columns: tuple = ()
    group_column: str = None
    hierarchical_kwargs: dict = field(default_factory=dict)
    tree_kwargs: dict = field(default_factory=dict)
    tune_by: str = "beta_ce"
    blas_threads: int = 1


def split_indices(n, fractions, seed):
    """Shuffle ``range(n)`` with ``seed`` and cut it at the given fractions."""
    fractions = np.asarray(fractions, dtype=float)
    if np.any(fractions <= 0) or not np.isclose(fractions.sum(), 1.0):
        raise ValueError(
            f"fractions must be positive and sum to 1; got {fractions.tolist()}."
        )
    perm = np.random.default_rng(seed).permutation(n)
    cuts = np.floor(np.cumsum(fractions)[:-1] * n).astype(int)
    return np.split(perm, cuts)


def _calibrator_specs(names, partitioners, b_grid, n_cal, seed, hier_kwargs, trees=()):
    """Estimator + param grid per calibrator name (lazy imports keep it light)."""
    from sklearn_betacal import (
        BetaBinningCalibrator,
        PlattScaler,
        ScalingBetaBinningCalibrator,
        ScalingBinningCalibrator,
        TemperatureScaler,
        UMDBinner,
    )

    frozen = [FrozenEstimator(p) for p in partitioners]
    b_grid = [int(b) for b in b_grid if 2 * b <= n_cal] or [max(1, n_cal // 2)]
    beta_grid = {"partitioner": frozen, "points_per_bin": b_grid}
    tree_grid = {
        "partitioner": [FrozenEstimator(t) for t in trees],
        "points_per_bin": b_grid,
    }
    specs = {
        "BB": (BetaBinningCalibrator(random_state=seed), beta_grid, "all"),
        "BB-T": (BetaBinningCalibrator(random_state=seed), tree_grid, "all"),
        "BB-KT": (
            BetaBinningCalibrator(random_state=seed),
            {
                "partitioner": beta_grid["partitioner"] + tree_grid["partitioner"],
                "points_per_bin": b_grid,
            },
            "all",
        ),
        "HS-BB": (
            ScalingBetaBinningCalibrator(
                scaler="hierarchical", random_state=seed, **hier_kwargs
            ),
            beta_grid,
            "all",
        ),
        "S-BB": (
            ScalingBetaBinningCalibrator(scaler="pooled", random_state=seed),
            beta_grid,
            "all",
        ),
        "S-B": (
            ScalingBinningCalibrator(random_state=seed),
            {"points_per_bin": b_grid},
            "confidence",
        ),
        "S": (PlattScaler(), {}, "confidence"),
        "B": (
            UMDBinner(random_state=seed),
            {"points_per_bin": b_grid},
            "confidence",
        ),
        "TS": (TemperatureScaler(), {}, "confidence"),
        "None": (None, {}, "confidence"),
    }
    unknown = set(names) - set(specs)
    if unknown:
        raise ValueError(
            f"unknown calibrator(s) {sorted(unknown)}; choose from {list(specs)}."
        )
    return {name: specs[name] for name in names}


def _features(frame, config, fit_rows, seed):
    """Text embedding (fitted on the partition split) + optional extra columns."""
    from sklearn_betacal import TextEmbedder

    embedder = TextEmbedder(
        text_columns=list(config.text_columns),
        n_components=config.n_components,
        random_state=seed,
    )
    embedder.fit(frame.iloc[fit_rows])
    Z = np.asarray(embedder.transform(frame), dtype=np.float64)
    if config.extra_feature_columns:
        extra = frame[list(config.extra_feature_columns)].to_numpy(dtype=np.float64)
        Z = np.hstack([Z, extra])
    if config.group_column is not None:
        codes = pd.factorize(frame[config.group_column], sort=True)[0]
        Z = np.hstack([Z, codes.reshape(-1, 1).astype(np.float64)])
    return Z


def _partitioner(depth, n_features, config):
    """kd-tree beta of one depth, crossed with the group column if any."""
    from sklearn_betacal import (
        CrossPartitioner,
        GroupColumnPartitioner,
        KDTreePartitioner,
    )

    if config.group_column is None:
        return KDTreePartitioner(max_depth=depth)
    n_text = n_features - 1
    # the group first: a small (group, leaf) cell falls back within its group
    # (CrossPartitioner.cell_ancestors), not to the other groups' rows
    return CrossPartitioner(
        [
            ("group", GroupColumnPartitioner(), [n_text]),
            ("text", KDTreePartitioner(max_depth=depth), slice(0, n_text)),
        ]
    )


def recorded_warnings(caught):
    """The distinct ``"Category: message"`` strings of the recorded warnings.

    Deprecation and future warnings are about the code, not the calibration:
    they are passed on as raised instead of recorded.
    """
    raised = []
    for w in caught:
        if issubclass(w.category, (DeprecationWarning, FutureWarning)):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        else:
            raised.append(f"{w.category.__name__}: {w.message}")
    return tuple(dict.fromkeys(raised))


def run_protocol(
    frame, confidence, *, label="correct_judge", seed=0, config=None, on_step=None
):
    """Run one seed of the paper's protocol on ``frame``.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per (question, answer) with the text columns named in
        ``config.text_columns``, the ``confidence`` column (a probability in
        [0, 1]) and the ``label`` column (0/1 judge label).
    confidence : str
        Name of the confidence column.
    label : str, default="correct_judge"
    seed : int, default=0
        Seeds the split, the embedding and every calibrator's tie-breaking.
    config : ProtocolConfig, default=None
    on_step : callable, default=None
        Called as ``on_step(name)`` after each calibrator is scored (progress).

    Returns
    -------
    results : pandas.DataFrame
        One row per calibrator: ``calibrator, seed, beta_ce, beta_ce_floor,
        beta_ce_debiased, ece, brier, auac, best_params, tune_by, n_test,
        warnings``; ``warnings`` is a tuple of the
        distinct ``"Category: message"`` warnings raised while that
        calibrator was tuned, fitted and scored (they are recorded, not
        shown, so that the caller can report each once).
    predictions : dict
        Calibrator name -> test-split calibrated confidences, plus
        ``"_y"`` (test labels), ``"_h"`` (raw test confidences),
        ``"_cells"`` (evaluation-beta cell ids of the test rows) and, with
        ``config.group_column``, ``"_groups"`` (that column on the test rows).
        The run uses at most ``config.blas_threads`` BLAS/OpenMP threads.
    """
    config = config or ProtocolConfig()
    with limit_threads(config.blas_threads):
        return _run_protocol(frame, confidence, label, seed, config, on_step)


def _run_protocol(frame, confidence, label, seed, config, on_step):
    """``run_protocol`` inside its thread limit."""
    from sklearn.metrics import brier_score_loss

    from sklearn_betacal.metrics import (
        area_under_accuracy_confidence,
        area_under_accuracy_confidence_scorer,
        beta_calibration_error,
        beta_calibration_noise_floor,
        expected_calibration_error,
        make_beta_calibration_error_scorer,
    )

    if config.tune_by not in ("beta_ce", "auac"):
        raise ValueError(
            f"tune_by must be 'beta_ce' or 'auac'; got {config.tune_by!r}."
        )
    frame = frame.reset_index(drop=True)
    h = frame[confidence].to_numpy(dtype=np.float64)
    y = frame[label].to_numpy(dtype=np.float64)
    part, cal, tune, test = split_indices(len(frame), config.fractions, seed)

    Z = _features(frame, config, part, seed)
    X = np.column_stack([h, Z])
    partitioners = [
        _partitioner(d, Z.shape[1], config).fit(Z[part]) for d in config.depths
    ]
    evaluator = _partitioner(config.eval_depth, Z.shape[1], config).fit(Z[part])
    trees = []
    if {"BB-T", "BB-KT"} & set(config.calibrators):
        from sklearn_betacal import CalibrationTreePartitioner

        # grown on the partition split (never binned: honest); a leaf of m
        # rows there holds about m * |cal| / |part| calibration rows, so m is
        # chosen for about 2 b of them at the smallest b of the grid
        b_min = min(config.points_per_bin)
        leaf = max(int(np.ceil(2 * b_min * len(part) / len(cal))), 10)
        trees = [
            CalibrationTreePartitioner(
                max_depth=d,
                min_samples_leaf=leaf,
                random_state=seed,
                **config.tree_kwargs,
            ).fit(Z[part], y[part], confidence=h[part])
            for d in config.depths
        ]
    test_cells = np.asarray(evaluator.transform(Z[test])).ravel()
    if config.tune_by == "auac":
        scoring = area_under_accuracy_confidence_scorer
    else:  # every candidate on the same beta, noise taken out
        scoring = make_beta_calibration_error_scorer(
            FrozenEstimator(evaluator),
            n_bins=config.n_bins,
            norm="l2_squared",
            debiased=True,
        )

    search_rows = np.concatenate([cal, tune])
    fold = np.r_[np.full(len(cal), -1), np.zeros(len(tune), dtype=int)]
    specs = _calibrator_specs(
        config.calibrators,
        partitioners,
        config.points_per_bin,
        len(cal),
        seed,
        config.hierarchical_kwargs,
        trees,
    )

    rows, predictions = [], {"_y": y[test], "_h": h[test], "_cells": test_cells}
    if config.group_column is not None:
        predictions["_groups"] = frame[config.group_column].to_numpy()[test]
    for name, (estimator, grid, columns) in specs.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            p, best = _fit_and_predict(
                estimator, grid, columns, X, y, (cal, test, search_rows, fold), scoring
            )
        predictions[name] = p
        raised = recorded_warnings(caught)
        rows.append(
            {
                "calibrator": name,
                "seed": seed,
                "beta_ce": beta_calibration_error(
                    y[test], p, cells=test_cells, n_bins=config.n_bins
                ),
                "beta_ce_floor": beta_calibration_noise_floor(
                    y[test], p, cells=test_cells, n_bins=config.n_bins
                ),
                "beta_ce_debiased": beta_calibration_error(
                    y[test],
                    p,
                    cells=test_cells,
                    n_bins=config.n_bins,
                    norm="l2_squared",
                    debiased=True,
                ),
                "ece": expected_calibration_error(y[test], p, n_bins=config.n_bins),
                "brier": brier_score_loss(y[test], p, labels=[0, 1]),
                "auac": area_under_accuracy_confidence(y[test], p),
                "best_params": _describe(best),
                "tune_by": config.tune_by,
                "n_test": len(test),
                "warnings": raised,
            }
        )
        if on_step is not None:
            on_step(name)
    return pd.DataFrame(rows), predictions


def _fit_and_predict(estimator, grid, columns, X, y, splits, scoring):
    """Tune (``scoring`` on the tuning split), refit on D_cal, predict the test.

    Confidence-only calibrators see ``X[:, :1]`` through a column selector,
    so that a beta-CE scorer can still read the partition features of ``X``.
    """
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    cal, test, search_rows, fold = splits
    best = {}
    if estimator is None:
        return X[test, 0], best
    if columns != "all":
        estimator = make_pipeline(FunctionTransformer(_confidence_only), estimator)
        grid = {f"{estimator.steps[-1][0]}__{k}": v for k, v in grid.items()}
    if grid:
        search = GridSearchCV(
            estimator,
            grid,
            scoring=scoring,
            cv=PredefinedSplit(fold),
            refit=False,
            error_score="raise",
        )
        search.fit(X[search_rows], y[search_rows])
        best = search.best_params_
    model = clone(estimator).set_params(**best)
    model.fit(X[cal], y[cal])
    best = {k.split("__", 1)[-1]: v for k, v in best.items()}
    return model.predict_proba(X[test])[:, 1], best


def _confidence_only(X):
    """The confidence column of ``X = [h, features...]``."""
    return X[:, :1]


def collect_warnings(results):
    """Each distinct warning once, with the calibrator(s) that raised it.

    Numbers inside a message (row counts, iterations) are ignored when
    deciding whether two messages are the same warning; the first wording
    is kept. Returns a list of ``(calibrators, n_runs, message)``, in order
    of first appearance, ``calibrators`` as a comma-separated string and
    ``n_runs`` the number of (seed, kind, calibrator) runs that raised it.
    """
    seen = {}
    for row in results.itertuples():
        for message in getattr(row, "warnings", ()) or ():
            key = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "#", message)
            entry = seen.setdefault(key, {"names": {}, "runs": 0, "text": message})
            entry["names"][row.calibrator] = None
            entry["runs"] += 1
    return [(", ".join(e["names"]), e["runs"], e["text"]) for e in seen.values()]


def format_legend(names):
    """One Markdown line per abbreviation in ``names`` (known ones only)."""
    return [f"- **{n}**: {METHOD_LEGEND[n]}" for n in names if n in METHOD_LEGEND]


def _describe(params):
    """Short text for chosen hyper-parameters (a frozen kd-tree -> its depth)."""
    out = []
    for key, value in sorted(params.items()):
        inner = getattr(value, "estimator", value)
        for _, component, _ in getattr(inner, "partitioners_", ()):
            inner = component if hasattr(component, "max_depth") else inner
        if hasattr(inner, "max_depth"):
            out.append(f"depth={inner.max_depth}")
        else:
            out.append(f"{key}={value}")
    return ", ".join(out)


def summarize(results, by=("calibrator",)):
    """Mean and 95% t-interval half-width over seeds, per group.

    Returns a DataFrame with ``<metric>_mean, <metric>_ci`` for every metric
    column present (``beta_ce, beta_ce_floor, beta_ce_debiased, ece, brier,
    auac``) and ``n_seeds`` per group (half-width NaN with one seed: no
    interval can be had from a single value).
    """
    from scipy import stats

    def ci(values):
        values = np.asarray(values, dtype=float)
        if len(values) < 2:
            return float("nan")
        return float(
            stats.t.ppf(0.975, len(values) - 1)
            * values.std(ddof=1)
            / np.sqrt(len(values))
        )

    grouped = results.groupby(list(by), sort=False)
    metrics = [m for m in _METRICS if m in results.columns]
    spec = {}
    for m in metrics:
        spec[f"{m}_mean"] = (m, "mean")
        spec[f"{m}_ci"] = (m, ci)
    out = grouped.agg(**spec, n_seeds=("seed", "nunique"))
    return out.reset_index()


# metric columns of run_protocol's results, in table order
_METRICS = ("beta_ce", "beta_ce_floor", "beta_ce_debiased", "ece", "brier", "auac")
_HEADS = {
    "beta_ce": "CE(h;β)",
    "beta_ce_floor": "floor",
    "beta_ce_debiased": "CE²(h;β) debiased ×100",
    "ece": "ECE",
    "brier": "Brier",
    "auac": "AUAC",
}


def format_table(summary, keys=("calibrator",)):
    """Markdown table in the layout of the paper's Table 2 (best in bold).

    Values are ``mean ± half-width`` of the 95% t-interval over seeds when a
    row has at least two seeds, the plain value otherwise. Columns: CE(h;β),
    its noise floor and debiased squared version (x100) where present, ECE,
    Brier where present, and AUAC; the best CE(h;β), debiased CE and AUAC of
    each group are bold.
    """
    metrics = [m for m in _METRICS if f"{m}_mean" in summary.columns]
    lines = []
    head = [*keys, *(_HEADS[m] for m in metrics)]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    group_keys = [k for k in keys if k != "calibrator"]
    groups = summary.groupby(group_keys, sort=False) if group_keys else [((), summary)]
    bold = {"beta_ce": "min", "beta_ce_debiased": "min", "auac": "max"}
    for _, block in groups:
        best = {
            m: getattr(block[f"{m}_mean"], how)()
            for m, how in bold.items()
            if m in metrics
        }
        for _, row in block.iterrows():
            # an interval needs at least two seeds; one seed gives the value
            spread = getattr(row, "n_seeds", 1) >= 2
            cells = [str(row[k]) for k in keys]
            for m in metrics:
                scale = 100.0 if m == "beta_ce_debiased" else 1.0
                mean, half = row[f"{m}_mean"] * scale, row[f"{m}_ci"] * scale
                text = f"{mean:.3f} ± {half:.3f}" if spread else f"{mean:.3f}"
                if m in best and row[f"{m}_mean"] == best[m]:
                    text = f"**{text}**"
                cells.append(text)
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
