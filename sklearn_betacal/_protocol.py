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
   split, score on the tuning split) with the AUAC scorer, as the paper does,
   then refits the chosen configuration on the calibration split alone;
4. scores the calibrated test confidences by CE(h; beta) (Def. 2.4, estimated
   as in App. A.1 on one fixed evaluation beta shared by all calibrators),
   ECE and AUAC.

Both ``betacal demo`` and ``benchmarks/paper_experiment.py`` call
:func:`run_protocol`; nothing here prints, so the callers own progress output.
"""

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import GridSearchCV, PredefinedSplit

#: Calibrators of the paper's Table 2 plus temperature scaling, in its order.
CALIBRATORS = ("BB", "HS-BB", "S-BB", "S-B", "S", "B", "TS", "None")

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


def _calibrator_specs(names, partitioners, b_grid, n_cal, seed, hier_kwargs):
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
    specs = {
        "BB": (BetaBinningCalibrator(random_state=seed), beta_grid, "all"),
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
        columns=list(config.text_columns),
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
    return CrossPartitioner(
        [
            ("text", KDTreePartitioner(max_depth=depth), slice(0, n_text)),
            ("group", GroupColumnPartitioner(), [n_text]),
        ]
    )


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
        One row per calibrator: ``calibrator, seed, beta_ce, ece, auac,
        best_params, n_test``.
    predictions : dict
        Calibrator name -> test-split calibrated confidences, plus
        ``"_y"`` (test labels), ``"_h"`` (raw test confidences) and
        ``"_cells"`` (evaluation-beta cell ids of the test rows).
    """
    from sklearn_betacal.metrics import (
        area_under_accuracy_confidence,
        area_under_accuracy_confidence_scorer,
        beta_calibration_error,
        expected_calibration_error,
    )

    config = config or ProtocolConfig()
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
    test_cells = np.asarray(evaluator.transform(Z[test])).ravel()

    search_rows = np.concatenate([cal, tune])
    fold = np.r_[np.full(len(cal), -1), np.zeros(len(tune), dtype=int)]
    specs = _calibrator_specs(
        config.calibrators,
        partitioners,
        config.points_per_bin,
        len(cal),
        seed,
        config.hierarchical_kwargs,
    )

    rows, predictions = [], {"_y": y[test], "_h": h[test], "_cells": test_cells}
    for name, (estimator, grid, columns) in specs.items():
        Xc = X if columns == "all" else X[:, :1]
        best = {}
        if estimator is None:
            p = h[test]
        else:
            if grid:
                search = GridSearchCV(
                    estimator,
                    grid,
                    scoring=area_under_accuracy_confidence_scorer,
                    cv=PredefinedSplit(fold),
                    refit=False,
                    error_score="raise",
                )
                search.fit(Xc[search_rows], y[search_rows])
                best = search.best_params_
            model = clone(estimator).set_params(**best)
            model.fit(Xc[cal], y[cal])
            p = model.predict_proba(Xc[test])[:, 1]
        predictions[name] = p
        rows.append(
            {
                "calibrator": name,
                "seed": seed,
                "beta_ce": beta_calibration_error(
                    y[test], p, groups=test_cells, n_bins=config.n_bins
                ),
                "ece": expected_calibration_error(y[test], p, n_bins=config.n_bins),
                "auac": area_under_accuracy_confidence(y[test], p),
                "best_params": _describe(best),
                "n_test": len(test),
            }
        )
        if on_step is not None:
            on_step(name)
    return pd.DataFrame(rows), predictions


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

    Returns a DataFrame with ``beta_ce_mean, beta_ce_ci, ece_mean, ece_ci,
    auac_mean, auac_ci, n_seeds`` per group (half-width 0 with one seed).
    """
    from scipy import stats

    def ci(values):
        values = np.asarray(values, dtype=float)
        if len(values) < 2:
            return 0.0
        return float(
            stats.t.ppf(0.975, len(values) - 1)
            * values.std(ddof=1)
            / np.sqrt(len(values))
        )

    grouped = results.groupby(list(by), sort=False)
    out = grouped.agg(
        beta_ce_mean=("beta_ce", "mean"),
        beta_ce_ci=("beta_ce", ci),
        ece_mean=("ece", "mean"),
        ece_ci=("ece", ci),
        auac_mean=("auac", "mean"),
        auac_ci=("auac", ci),
        n_seeds=("seed", "nunique"),
    )
    return out.reset_index()


def format_table(summary, keys=("calibrator",)):
    """Markdown table in the layout of the paper's Table 2 (best in bold)."""
    lines = []
    head = [*keys, "CE(h;β)", "ECE", "AUAC"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    group_keys = [k for k in keys if k != "calibrator"]
    groups = summary.groupby(group_keys, sort=False) if group_keys else [((), summary)]
    for _, block in groups:
        best_ce = block.beta_ce_mean.min()
        best_auac = block.auac_mean.max()
        for _, row in block.iterrows():
            ce = f"{row.beta_ce_mean:.3f} ± {row.beta_ce_ci:.3f}"
            auac = f"{row.auac_mean:.3f} ± {row.auac_ci:.3f}"
            ece = f"{row.ece_mean:.3f} ± {row.ece_ci:.3f}"
            if row.beta_ce_mean == best_ce:
                ce = f"**{ce}**"
            if row.auac_mean == best_auac:
                auac = f"**{auac}**"
            cells = [str(row[k]) for k in keys]
            lines.append("| " + " | ".join([*cells, ce, ece, auac]) + " |")
    return "\n".join(lines)
