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

import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import GridSearchCV, PredefinedSplit

#: Calibrators of the paper's Table 2 plus temperature scaling, in its order.
CALIBRATORS = ("BB", "HS-BB", "S-BB", "S-B", "S", "B", "TS", "None")

#: What each abbreviation of the tables stands for (printed under them).
METHOD_LEGEND = {
    "BB": "beta-binning: UMD histogram binning inside each kd-tree cell of "
    "beta, root calibrator for small cells (Alg. 1-2)",
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
        best_params, n_test, warnings``; ``warnings`` is a tuple of the
        distinct ``"Category: message"`` warnings raised while that
        calibrator was tuned, fitted and scored (they are recorded, not
        shown, so that the caller can report each once).
    predictions : dict
        Calibrator name -> test-split calibrated confidences, plus
        ``"_y"`` (test labels), ``"_h"`` (raw test confidences),
        ``"_cells"`` (evaluation-beta cell ids of the test rows) and, with
        ``config.group_column``, ``"_groups"`` (that column on the test rows).
    """
    from sklearn_betacal.metrics import (
        area_under_accuracy_confidence,
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
    if config.group_column is not None:
        predictions["_groups"] = frame[config.group_column].to_numpy()[test]
    for name, (estimator, grid, columns) in specs.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            p, best = _fit_and_predict(
                estimator, grid, columns, X, y, cal, test, search_rows, fold, h
            )
        predictions[name] = p
        raised = []
        for w in caught:
            if issubclass(w.category, (DeprecationWarning, FutureWarning)):
                # about the code, not the calibration: pass on as raised
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            else:
                raised.append(f"{w.category.__name__}: {w.message}")
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
                "warnings": tuple(dict.fromkeys(raised)),
            }
        )
        if on_step is not None:
            on_step(name)
    return pd.DataFrame(rows), predictions


def _fit_and_predict(estimator, grid, columns, X, y, cal, test, search_rows, fold, h):
    """Tune (AUAC on the tuning split), refit on D_cal, predict the test split."""
    from sklearn_betacal.metrics import area_under_accuracy_confidence_scorer

    Xc = X if columns == "all" else X[:, :1]
    best = {}
    if estimator is None:
        return h[test], best
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
    return model.predict_proba(Xc[test])[:, 1], best


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

    Returns a DataFrame with ``beta_ce_mean, beta_ce_ci, ece_mean, ece_ci,
    auac_mean, auac_ci, n_seeds`` per group (half-width NaN with one seed:
    no interval can be had from a single value).
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
    """Markdown table in the layout of the paper's Table 2 (best in bold).

    Values are ``mean ± half-width`` of the 95% t-interval over seeds when a
    row has at least two seeds, the plain value otherwise.
    """
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
            # an interval needs at least two seeds; one seed gives the value
            spread = getattr(row, "n_seeds", 1) >= 2

            def cell(mean, ci, spread=spread):
                return f"{mean:.3f} ± {ci:.3f}" if spread else f"{mean:.3f}"

            ce = cell(row.beta_ce_mean, row.beta_ce_ci)
            auac = cell(row.auac_mean, row.auac_ci)
            ece = cell(row.ece_mean, row.ece_ci)
            if row.beta_ce_mean == best_ce:
                ce = f"**{ce}**"
            if row.auac_mean == best_auac:
                auac = f"**{auac}**"
            cells = [str(row[k]) for k in keys]
            lines.append("| " + " | ".join([*cells, ce, ece, auac]) + " |")
    return "\n".join(lines)
