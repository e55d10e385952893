# SPDX-License-Identifier: MIT
"""``betacal fit``: fit a calibrator on a labelled file, save a model file.

The model file (:mod:`sklearn_betacal.io`, skops format) holds the fitted
estimator and, in its header, how ``betacal apply`` must read a new file: the
confidence column and its format, the feature columns. The estimator is fitted
on a DataFrame of exactly those columns, so its ``feature_names_in_`` names them
too.
"""

import sys
import warnings
from pathlib import Path

import numpy as np

from .._cells import fit_takes
from .._io import TableReadError, read_table
from ._common import (
    EXIT_OK,
    Progress,
    UsageError,
    add_confidence_scale,
    add_pos_label,
    add_progress_flags,
    check_output,
    decimal_comma_hint,
    one_line,
    open_unit,
    read_labels,
    separator,
    verbalized_options,
)
from ._gate import (
    add_gate_flags,
    gate_estimator,
    gate_metadata,
    inner,
    is_gate,
    print_gate_summary,
)

#: method name -> (estimator class name, uses partition features)
METHODS = {
    "temperature": ("TemperatureScaler", False),
    "platt": ("PlattScaler", False),
    "umd": ("UMDBinner", False),
    "s-b": ("ScalingBinningCalibrator", False),
    "bb": ("BetaBinningCalibrator", True),
    "hls": ("HierarchicalLogisticScaler", True),
    "hs-bb": ("ScalingBetaBinningCalibrator", True),
    "s-bb": ("ScalingBetaBinningCalibrator", True),
}
#: methods with a points-per-bin hyper-parameter (tunable with --tune)
BINNING = {"umd", "s-b", "bb", "hs-bb", "s-bb"}
#: the text embeddings --embedding chooses (TextEmbedder's methods)
TEXT_METHODS = ("tfidf-svd", "tfidf-char-svd", "minilm")
#: the scalers --scaler chooses for hs-bb/s-bb
SCALERS = ("hierarchical", "pooled", "features")
#: candidate points per bin for --tune
TUNE_GRID = (10, 20, 35, 50, 75, 100, 150, 200, 300)


# --------------------------------------------------------------------------
# confidences: numbers, percentages or verbalized strings
# --------------------------------------------------------------------------


#: how a model file's ``confidence_format`` reads a column, for messages
FORMAT_FLAGS = {
    "number": "probabilities in [0, 1] (fitted without --percent/--verbalized)",
    "percent": "percentages in [0, 100] (fitted with --percent)",
    "verbalized": "text read by the verbalized parser (fitted with --verbalized)",
}


#: what each reason of the verbalized parser means, for the warnings
UNREAD_REASONS = {
    "none": "state no confidence",
    "ambiguous": "state two different values (never guessed)",
    "negated-or-bound": "negate or bound it ('not 90% sure', 'at least 80%')",
    "out-of-range": "give a number outside [0, 1] ('85' without %%: see --scale)",
    "needs-scale": "give a point of a scale ('Confidence: 4': pass --scale 1,5)",
    "unknown-expression": "use words not in the tables (see --table, --qualitative)",
}


def add_unread(unread, values, source, failed):
    """Count the unread texts of one chunk into ``unread`` (``{reason:
    [count, examples]}``, at most three examples a reason)."""
    import pandas as pd

    values = pd.Series(values).reset_index(drop=True)
    source = np.asarray(source, dtype=object)
    for i in np.flatnonzero(failed):
        entry = unread.setdefault(str(source[i]), [0, []])
        entry[0] += 1
        example = one_line(values.iloc[i])[:50]
        if len(entry[1]) < 3 and example not in entry[1]:
            entry[1].append(example)


def unread_lines(unread, *, total, command):
    """The warnings of ``betacal fit/report/apply`` about unread texts: one
    line a reason, largest first, with its count and examples."""
    n = sum(count for count, _ in unread.values())
    if not n:
        return []
    what = {"fit": "left out of the fit", "report": "left out of the report",
            "apply": "written with an empty calibrated value"}[command]  # fmt: skip
    lines = [f"{n} of {total} confidence text(s) could not be read and were {what}:"]
    for reason, (count, examples) in sorted(unread.items(), key=lambda kv: -kv[1][0]):
        meaning = UNREAD_REASONS.get(reason, reason).replace("%%", "%")
        shown = ", ".join(repr(e) for e in examples)
        lines.append(f"  {count} {meaning} [{reason}], e.g. {shown}")
    return lines


def unread_reasons(unread):
    """``"; by reason: 12 none (e.g. '...'), ..."`` for a one-line error."""
    if not unread:
        return ""
    parts = [
        f"{count} {reason} (e.g. {examples[0]!r})"
        for reason, (count, examples) in sorted(
            unread.items(), key=lambda kv: -kv[1][0]
        )
    ]
    return "; unread by reason: " + ", ".join(parts)


def lost_groups(groups, lost, *, name, command):
    """Warnings naming the groups that lost rows to unread texts (see
    :func:`group_lines`); ``groups`` the column's values, ``lost`` a mask."""
    import pandas as pd

    if groups is None or not np.any(lost):
        return []
    frame = pd.DataFrame({"g": pd.Series(groups).to_numpy(), "lost": lost})
    table = frame.groupby("g", sort=True, dropna=False)["lost"].agg(["sum", "size"])
    return group_lines(
        {g: (int(r["sum"]), int(r["size"])) for g, r in table.iterrows()},
        name=name,
        command=command,
    )


def group_lines(table, *, name, command):
    """``table``: ``{group: (rows lost, rows)}``. One line listing every
    group that lost rows, and one line a group that lost all of them (it
    is missing from the result)."""
    hit = sorted(
        ((g, n_lost, n) for g, (n_lost, n) in table.items() if n_lost),
        key=lambda t: -t[1],
    )
    if not hit:
        return []
    where = {"fit": "the model", "report": "the report", "apply": "the output"}
    listed = ", ".join(f"{g!r} {n_lost}/{n}" for g, n_lost, n in hit[:20])
    lines = [
        f"group column {name!r}: {len(hit)} group(s) lost rows to unread "
        f"texts: {listed}" + (" ..." if len(hit) > 20 else "")
    ]
    what = "calibrated value" if command == "apply" else "row"
    for g, n_lost, n in hit:
        if n_lost == n:
            lines.append(
                f"group {g!r} of column {name!r} lost all its {n} row(s) to "
                f"unread texts: no {what} of it in {where[command]}"
            )
    return lines


def confidence_values(
    values,
    fmt,
    *,
    column,
    check_scale=True,
    command="fit",
    options=None,
    unread=None,
):
    """Float confidences in [0, 1] (NaN where missing/unparseable) and the
    number of strings that could not be parsed.

    ``fmt``: ``"number"`` (probabilities), ``"percent"`` (0-100) or
    ``"verbalized"`` (free text, read by
    :func:`~sklearn_betacal.parse_verbalized_confidence`). Booleans,
    timestamps and durations are refused. ``check_scale`` refuses
    percentages that are all at most 1 (probabilities given ``--percent`` by
    mistake); ``apply`` makes that check on the whole file instead (one
    chunk may legitimately hold only small values). ``command`` (``"fit"``,
    ``"report"`` or ``"apply"``) chooses hints that name only that command's
    flags (``fit`` and ``report`` share theirs). ``options``: the
    parser's ``scale``/``table``/``qualitative`` (``--scale`` ...);
    ``unread``: a dict that counts the texts left unread by reason (see
    :func:`add_unread`).
    """
    import pandas as pd

    from ._common import check_confidence_kind

    values = pd.Series(values)
    check_confidence_kind(values, column)
    from .._elicitation import read_confidence, read_confidence_values

    # the reading of ConfidenceReader (stored in the model file): the same
    # numbers in betacal and in Python
    if fmt == "verbalized":
        h, source = read_confidence(values, fmt, **(options or {}))
        # of the NaN rows, the empty ones are not "unparseable"
        failed = np.isnan(h) & ~empty_responses(values)
        if unread is not None:
            add_unread(unread, values, source, failed)
        return h, int(np.count_nonzero(failed))
    numeric = read_confidence_values(values, "number")
    bad = np.isnan(numeric) & values.notna().to_numpy()
    if bad.any():
        example = values[bad].iloc[0]
        hint = decimal_comma_hint(example) or (
            # fit and report share their flags (the docstring); apply has a model
            "pass --verbalized to parse text confidences"
            if command in ("fit", "report")
            else f"the model reads {FORMAT_FLAGS[fmt]}; to parse text "
            "confidences refit it with 'betacal fit --verbalized'"
        )
        raise UsageError(
            f"confidence column {column!r} has {int(bad.sum())} non-numeric "
            f"value(s) such as {str(example)[:40]!r}; {hint}"
        )
    if fmt == "percent":
        seen = numeric[~np.isnan(numeric)]
        if check_scale and seen.size > 1 and seen.max() <= 1:
            raise UsageError(
                f"confidence column {column!r} holds values in [0, 1] only (max "
                f"{seen.max():.6g}): they look like probabilities; drop --percent"
            )
        numeric = numeric / 100.0
    finite = numeric[~np.isnan(numeric)]
    n_out = int(np.count_nonzero((finite < 0) | (finite > 1) | np.isinf(finite)))
    if n_out:
        if command == "apply":
            hint = f"the model reads {FORMAT_FLAGS[fmt]}" + (
                "; if they are percentages divide them by 100, or refit with "
                "'betacal fit --percent'"
                if fmt == "number"
                else ""
            )
        elif fmt == "percent":
            hint = "they are percentages: drop --percent"
        else:
            hint = "if they are percentages pass --percent"
        scale = 100 if fmt == "percent" else 1
        lo, hi = finite.min() * scale, finite.max() * scale
        raise UsageError(
            f"confidence column {column!r} has {n_out} value(s) outside "
            f"[0, {scale}] (min {lo:.6g}, max {hi:.6g}); {hint}"
        )
    return numeric, 0


#: what pandas' CSV reader takes for a missing value (``read_csv``'s
#: ``na_values`` default): a response holding only one of these is empty in
#: a Parquet file as in a CSV one
_NA_TEXTS = frozenset(
    ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
     "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
     "nan", "null"]
)  # fmt: skip


def empty_responses(values):
    """Where a verbalized response is empty: missing, blank, or one of the
    texts pandas' CSV reader reads as missing (``N/A``, ``None``, ``null``,
    ...), so that a file counts the same in CSV and in Parquet."""
    import pandas as pd

    values = pd.Series(values)
    empty = values.isna().to_numpy(copy=True)
    text = ~empty & values.map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
    if text.any():
        stripped = values[text].str.strip()
        empty[text] = stripped.isin(_NA_TEXTS).to_numpy()
    return empty


def plain_numbers_only(values):
    """Whether every value of a column was read as a number (no text at all;
    a column with no value at all holds no number either)."""
    import pandas as pd

    values = pd.Series(values)
    return bool(
        pd.api.types.is_numeric_dtype(values.dtype)
        and not pd.api.types.is_bool_dtype(values.dtype)
        and values.notna().any()
    )


# --------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------


def _partitioner(args):
    """The partitioner for the feature flags, and the feature columns."""
    from sklearn.pipeline import make_pipeline

    from .. import (
        CalibrationTreePartitioner,
        CrossPartitioner,
        GroupColumnPartitioner,
        KDTreePartitioner,
        TextEmbedder,
    )

    learned = args.partition == "learned"
    if args.embedding != "tfidf-svd" and not args.text:
        raise UsageError(
            f"--embedding {args.embedding} embeds the --text columns: give "
            "--text COL ..."
        )
    if learned and not args.text:
        raise UsageError(
            "--partition learned grows a tree on the text embedding: give "
            "--text COL ... (groups alone are already their own cells)"
        )

    # groups first: CrossPartitioner treats the first component as the
    # coarsest, so a crossed cell too small for its own binning falls back
    # within its group (and model) rather than to a text cell across groups
    parts = []
    for flag, column in (("group", args.group), ("model", args.model_column)):
        if column is not None:
            parts.append((flag, GroupColumnPartitioner(column), [column]))
    if args.text:
        embed = TextEmbedder(
            list(args.text),
            method=args.embedding,
            n_components=args.n_components,
            random_state=args.random_state,
        )
        if learned:  # grown on half of the rows, the other half binned
            tree = CalibrationTreePartitioner(
                max_depth=args.max_depth, random_state=args.random_state
            )
        else:
            tree = KDTreePartitioner(max_depth=args.max_depth)
        parts.append(("text", make_pipeline(embed, tree), list(args.text)))
    features = [c for _, _, cols in parts for c in cols]
    if len(parts) == 1:
        return parts[0][1], features
    return CrossPartitioner(parts), features


#: ``--method`` omitted with --text/--group/--model-column: the recommended
#: calibrator for grouped miscalibration (issue 38, the protocol of
#: ``benchmarks/studies/recommended.py``). With --text whose every row is a
#: question of its own: S-BB with the feature-aware scaler cross-fitted over
#: 3 folds, over the learned partition of the text (it beat the tree
#: one-liner on every score there); where questions repeat (several answers
#: per question, or no text): BB over the learned partition (the groups'
#: cells without text), which S-BB lost to on those logs.
RECOMMENDED = {"method": "s-bb", "scaler": "features", "cv": 3}
RECOMMENDED_REPEATED = {"method": "bb", "scaler": None, "cv": None}


def _has_embeddings_extra():
    """Whether the ``embeddings`` extra (sentence-transformers) is installed,
    without importing it."""
    import importlib.util

    return importlib.util.find_spec("sentence_transformers") is not None


def resolve_method(args, frame=None):
    """Fill ``--method`` (and its scaler, cv and partition) when omitted:
    the recommended calibrator where features are given (:data:`RECOMMENDED`,
    or :data:`RECOMMENDED_REPEATED` without --text or once ``frame`` shows a
    --text value on more than one row); ``--partition`` is ``learned`` for
    it with --text, else ``kdtree``. Returns whether the method was chosen."""
    chosen = getattr(args, "recommended", False)
    if args.method is None:
        if not (args.text or args.group or args.model_column):
            raise UsageError(
                "give --method NAME (temperature, platt, umd, s-b for the "
                "confidence alone), or --text/--group/--model-column COL for the "
                "recommended calibrator within groups"
            )
        chosen = args.recommended = True
        args.given = {k: getattr(args, k) for k in ("scaler", "cv")}
        args.method = "s-bb" if args.text else "bb"
    if chosen:
        if frame is not None:  # remembered for the calls without the rows
            # a question answered more than once: by its text, or by the
            # --question-column (the same rule for either)
            said = [c for c in [getattr(args, "question_column", None)] if c]
            args.text_repeats = bool(
                frame[list(args.text or [])].duplicated().any()
                or (said and frame[said[0]].duplicated().any())
            )
        repeated = not args.text or getattr(args, "text_repeats", False)
        keep_sbb = any(v is not None for v in args.given.values())  # S-BB flags
        pick = RECOMMENDED_REPEATED if repeated and not keep_sbb else RECOMMENDED
        args.repeated = repeated
        args.method = pick["method"]
        for key in ("scaler", "cv"):
            given = args.given[key]
            setattr(args, key, pick[key] if given is None else given)
    if args.partition is None:
        args.partition = "learned" if chosen and args.text else "kdtree"
    return chosen


def build_estimator(args):
    """The unfitted calibrator for ``args.method``, and its feature columns."""
    import sklearn_betacal as sb

    resolve_method(args)
    name, grouped = METHODS[args.method]
    has_features = bool(args.text or args.group or args.model_column)
    if grouped and not has_features:
        raise UsageError(
            f"--method {args.method} calibrates within groups: give --group COL, "
            "--text COL ... and/or --model-column COL (or use a method without "
            "groups: temperature, platt, umd, s-b)"
        )
    if not grouped and has_features:
        raise UsageError(
            f"--method {args.method} uses the confidence only; drop --group/--text/"
            "--model-column or choose a group method (bb, hs-bb, s-bb, hls)"
        )
    if args.points_per_bin is not None and args.method not in BINNING:
        raise UsageError(
            f"--points-per-bin applies to the binning methods "
            f"({', '.join(sorted(BINNING))}), not to {args.method}"
        )
    if args.epsilon is not None:
        if args.method not in ("bb", "hs-bb", "s-bb"):
            raise UsageError(
                f"--epsilon sets b from Thm 3.1's bound for bb, hs-bb and s-bb, "
                f"not for {args.method}"
            )
        if args.points_per_bin is not None or args.tune:
            raise UsageError(
                "--epsilon chooses points per bin; drop --points-per-bin/--tune"
            )
    sbb = METHODS["s-bb"][0]  # the methods with a scaler to cross-fit
    if args.scaler is not None and name != sbb:
        scaling = sorted(m for m, (n, _) in METHODS.items() if n == sbb)
        raise UsageError(
            f"--scaler chooses the scaler of {' and '.join(scaling)}, "
            f"not of {args.method}"
        )
    if args.cv is not None and name != sbb:
        scaling = sorted(m for m, (n, _) in METHODS.items() if n == sbb)
        raise UsageError(
            f"--cv cross-fits the scaler of {' and '.join(scaling)}, "
            f"not of {args.method}"
        )
    cls = getattr(sb, name)
    b = 50 if args.points_per_bin is None else args.points_per_bin
    if args.epsilon is not None:
        b = "auto"
    if not grouped:
        params = {}
        if args.method in ("umd", "s-b"):
            params = {"points_per_bin": b, "random_state": args.random_state}
        return cls(**params), []
    partitioner, features = _partitioner(args)
    est = cls(partitioner)
    params = {"confidence_column": args.confidence}
    if args.method != "hls":
        params.update(points_per_bin=b, random_state=args.random_state)
    if args.method == "s-bb":
        params["scaler"] = "pooled"
    if args.scaler is not None:
        params["scaler"] = args.scaler
    if args.cv is not None:
        params["cv"] = args.cv
    if args.epsilon is not None:
        params["epsilon"] = args.epsilon
    return est.set_params(**params), features


def _tune(est, X, y, args, out, progress, questions=None):
    """Choose points_per_bin by the cross-validated Brier score; return the
    estimator set to the chosen value.

    The Brier score is a proper score: calibration and resolution together
    (its refinement term). A calibration error alone is smallest for a
    constant per cell (one bin: every answer of a cell gets the cell's mean
    accuracy), so tuning by it chose the largest ``b`` and lost the ranking
    of the confidences; the Brier score chooses one bin only where the data
    give nothing better. Each candidate is scored on the same 5 folds; the
    warnings of its fold fits (cells too small in a fold, ...) are recorded
    per candidate and not shown: they describe fold models, not the model
    written, whose own fit warns afresh. ``questions``
    (``--question-column``): the folds keep every question whole
    (:func:`_tune_folds`) and each fold's fits get their rows' questions for
    their own splits.
    """
    from sklearn.base import clone
    from sklearn.metrics import get_scorer
    from sklearn.model_selection import cross_val_score

    n = X.shape[0]
    grid = [b for b in TUNE_GRID if 4 * b <= n] or [TUNE_GRID[0]]
    scorer = get_scorer("neg_brier_score")
    cv = _tune_folds(X, args, questions)
    folds = _embedded_bb_folds(est, X, y, cv, args, questions)
    if folds is None:
        folds = _fold_partitions(est, X, cv, args, progress)
        if folds is not None:
            folds = [
                _refit_scorer(
                    scorer,
                    X.iloc[train],
                    y[train],
                    X.iloc[test],
                    y[test],
                    p,
                    None if questions is None else questions[train],
                )
                for train, test, p in folds
            ]
    scores, fold_warnings = [], {}
    for k, b in enumerate(grid, 1):
        progress.update(f"tuning points per bin: candidate {k}/{len(grid)} (b = {b})")
        candidate = clone(est).set_params(points_per_bin=b)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if folds is None:
                fold_scores = cross_val_score(
                    candidate,
                    X,
                    y,
                    scoring=scorer,
                    cv=cv,
                    error_score="raise",
                    params=None if questions is None else {"groups": questions},
                )
            else:
                fold_scores = [score(candidate) for score in folds]
        fold_warnings[b] = [one_line(w.message) for w in caught]
        scores.append(float(np.mean(fold_scores)))
    # the first best on ties, as GridSearchCV's rank
    best_at = int(np.argmax(scores))
    best = grid[best_at]
    progress.update(f"tuning points per bin: {len(grid)} candidates scored")
    if progress.enabled and progress.tty:
        progress.stream.write("\n")
    print(
        f"tuned points per bin by 5-fold cross-validated Brier score (a proper "
        f"score: calibration and resolution together): b = {best}; "
        + ", ".join(f"b={b}: {-v:.5f}" for b, v in zip(grid, scores, strict=True)),
        file=out,
    )
    return est.set_params(points_per_bin=best)


def _tune_folds(X, args, questions=None):
    """The 5 folds of ``--tune``: shuffled ``KFold`` (seed ``--random-state``,
    or 0), or with ``--question-column`` shuffled ``GroupKFold`` (the same
    seed): every question in one fold, as fixed splits (``check_cv`` of the
    list) so that every use below sees the same ones."""
    from sklearn.model_selection import GroupKFold, KFold, check_cv

    seed = args.random_state or 0
    if questions is None:
        return KFold(5, shuffle=True, random_state=seed)
    n_questions = np.unique(questions).shape[0]
    if n_questions < 5:
        raise UsageError(
            f"--tune scores on 5 folds of whole questions, but "
            f"--question-column {args.question_column!r} names {n_questions} "
            "question(s); give a file with at least 5 questions, or drop --tune"
        )
    splitter = GroupKFold(5, shuffle=True, random_state=seed)
    return check_cv(list(splitter.split(X, groups=questions)))


def _fold_partitions(est, X, cv, args, progress):
    """``[(train, test, fitted partitioner)]`` of every fold, or None.

    An unsupervised partition (groups, kd-tree on the text embedding) does
    not depend on points per bin: each fold's is fitted once, as the
    calibrator's own fit would fit it (same clone, same seed), and frozen
    for every candidate, instead of embedding the text again for each. A
    learned tree depends on b (its leaf minimum) and is refitted for each,
    on the embedding computed once per fold (:func:`_learned_fold_partitions`).
    """
    from sklearn.base import clone

    from .._cells import is_supervised
    from .._random import seed_inner

    if "partitioner" not in est.get_params(deep=False):
        return None
    if est.partitioner is None:
        return None
    if is_supervised(est.partitioner):
        return _learned_fold_partitions(est, X, cv, args)
    Z = X.drop(columns=[args.confidence])
    folds = []
    splits = list(cv.split(X))
    with progress.step(f"tuning: fitting the partition of {len(splits)} folds"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # fold partitions, not the model's
            for train, test in splits:
                part = clone(est.partitioner)
                seed_inner(part, getattr(est, "random_state", None), name="partitioner")
                part.fit(Z.iloc[train], None)
                folds.append((train, test, _row_cells(part, Z)))
    return folds


def _refit_scorer(scorer, X_fit, y_fit, X_test, y_test, part, questions=None):
    """A fold's score of a candidate: the candidate with the fold's
    partitioner ``part``, fitted on the fold's rows (with their
    ``questions``, when given), scored on the others."""
    from sklearn.base import clone

    kwargs = {} if questions is None else {"groups": questions}

    def score(candidate):
        fitted = clone(candidate).set_params(partitioner=part)
        fitted.fit(X_fit, y_fit, **kwargs)
        return scorer(fitted, X_test, y_test)

    return score


def _embedded_bb_folds(est, X, y, cv, args, questions=None):
    """Per fold, the score of a candidate, for ``--method bb`` on a text
    embedder then a learned tree (a two-step Pipeline); None otherwise.

    Within a fold every
    candidate grows its tree on the same rows (the honest split does not
    depend on b), so the embedder it would fit there is the same: it is
    fitted once per fold and every row embedded once (as
    :func:`_learned_fold_partitions`). A candidate is then the calibrator
    fitted on plain numbers, the confidence and the fold's embedding, with
    the fold's tree as its partitioner: no text, no DataFrame validated
    again for every candidate, no pipeline. Its binning reads only the
    confidences and the cells, so its scores are those of refitting the
    whole partition, bit for bit (tested); S-BB/HS-BB, whose scaler may read
    the features, take the general path. The tree's per-row recalibration
    scores (a global Platt fit on its rows) are computed once per fold too.
    ``questions``: the rows' question ids, which the honest split and the
    tree's folds keep whole.
    """
    from sklearn.base import clone
    from sklearn.pipeline import Pipeline

    from .. import BetaBinningCalibrator
    from .._cells import is_supervised
    from .._groups import check_groups
    from .._random import seed_inner

    part = est.get_params(deep=False).get("partitioner")
    if type(est) is not BetaBinningCalibrator:
        return None
    if not isinstance(part, Pipeline) or len(part.steps) != 2:
        return None
    if not is_supervised(part):
        return None
    Z = X.drop(columns=[args.confidence])
    h = X[args.confidence].to_numpy(dtype=np.float64)
    tree_type = type(part.steps[-1][1])
    scores = {}  # (h, y, w bytes) -> a tree's recalibration scores

    class FoldTree(tree_type):
        """The learned tree, its per-row recalibration scores computed once
        per set of rows: every candidate of a fold grows its tree on the
        same rows, with the same global Platt fit (the scores are a function
        of the rows' confidences, labels and weights alone)."""

        def _recalibration_scores(self, h, y, w):
            key = (h.tobytes(), y.tobytes(), w.tobytes())
            if key not in scores:
                scores[key] = super()._recalibration_scores(h, y, w)
            return scores[key].copy()

    # named as the tree it stands for, in any message of a fold's fit
    FoldTree.__name__ = FoldTree.__qualname__ = tree_type.__name__
    cache = hasattr(tree_type, "_recalibration_scores")
    folds = []
    for train, test in cv.split(X):
        # seeded as the calibrator's fit seeds its clone of the partition
        fold = clone(part)
        seed_inner(fold, getattr(est, "random_state", None), name="partitioner")
        (_, head), (_, tree) = fold.steps
        if cache:
            tree = FoldTree(**tree.get_params(deep=False))
        # the rows the calibrator grows its tree on (the same for every b)
        q_fit = None
        if questions is not None:
            q_fit = check_groups(questions[train], len(train), who=type(est).__name__)
        plan = (
            clone(est)
            .set_params(partitioner=tree)
            ._fit_plan(tree, len(train), None, q_fit)
        )
        grow = train[plan.grow_rows]
        head = clone(head)
        out = head.fit_transform(Z.iloc[grow])
        # the tree grows on the embedder's fit_transform, as in the pipeline;
        # the other rows (binned, scored) are embedded once, row by row as
        # the pipeline's transform embeds them
        E = np.empty((len(Z), out.shape[1]))
        E[grow] = out
        rest = np.setdiff1d(np.arange(len(Z)), grow)
        E[rest] = head.transform(Z.iloc[rest])
        F = np.column_stack([h, E])
        folds.append(
            _EmbeddedFold(tree, F[train], y[train], F[test], y[test], q_fit)
        )
    return folds


class _EmbeddedFold:
    """One fold of :func:`_embedded_bb_folds`: ``fit(candidate)`` fits the
    candidate on the fold's ``[confidence, embedding]`` rows with ``tree``
    as its partitioner; calling it scores the candidate as the search's
    scorer does (the negated Brier score of ``predict_proba``'s column of
    the greater label on the held-out rows); ``questions``: the fit rows'
    question codes (or None)."""

    def __init__(self, tree, F_fit, y_fit, F_test, y_test, questions=None):
        self.tree, self.questions = tree, questions
        self.F_fit, self.y_fit = F_fit, y_fit
        self.F_test, self.y_test = F_test, y_test

    def fit(self, candidate):
        from sklearn.base import clone

        fitted = clone(candidate).set_params(partitioner=self.tree, confidence_column=0)
        if self.questions is None:
            return fitted.fit(self.F_fit, self.y_fit)
        return fitted.fit(self.F_fit, self.y_fit, groups=self.questions)

    def __call__(self, candidate):
        from sklearn.metrics import brier_score_loss

        p = self.fit(candidate).predict_proba(self.F_test)[:, -1]
        return -brier_score_loss(self.y_test, p)


def _learned_fold_partitions(est, X, cv, args):
    """``[(train, test, partitioner)]`` of every fold for a learned tree
    after a text embedder (a two-step Pipeline), or None for any other
    supervised partition (a CrossPartitioner with groups: refitted whole).
    ``--method bb`` takes the faster :func:`_embedded_bb_folds` instead.

    The tree depends on points per bin (its leaf minimum) and is refitted
    for every candidate; the embedding does not: within a fold, every
    candidate's calibrator grows its tree on the same honest rows
    (``_fit_plan``), so the embedder it would fit there is the same. Each
    fold's partitioner is therefore the Pipeline with its embedder wrapped
    in ``FoldEmbedding``, which fits it once per set of rows and embeds
    every row of the file once, for all candidates. The
    calibrator's fit is otherwise the one it would run: the scores are
    those of refitting the whole partition (tested).
    """
    from sklearn.base import clone
    from sklearn.frozen import FrozenEstimator
    from sklearn.pipeline import Pipeline

    from .._random import seed_inner

    # two steps: the tree keeps its place (and so its derived seed)
    if not isinstance(est.partitioner, Pipeline) or len(est.partitioner.steps) != 2:
        return None

    class FoldEmbedding(FrozenEstimator):
        """The unsupervised head of the partition, fitted once per set of
        rows, every row of ``Z`` embedded once.

        ``fit_transform(X)`` on rows of ``Z`` fits a clone of the head on
        them (or reuses the clone fitted on the same rows before) and
        returns its ``fit_transform``; ``transform`` then gives the stored
        embedding of rows of ``Z``, other rows go through the fitted clone.
        Frozen: a clone is the same object, shared by every candidate.
        """

        def fit_transform(self, X, y=None, **params):
            at = _same_rows(Z, X)
            key = None if at is None else at.tobytes()
            if key is None:  # not rows of Z: fitted as the Pipeline would
                self.head_, self.every_ = clone(self.estimator), None
                return self.head_.fit_transform(X, y, **params)
            if key not in fitted:
                head = clone(self.estimator)
                out = head.fit_transform(X, y, **params)
                fitted[key] = (head, out, np.asarray(head.transform(Z)))
            self.head_, out, self.every_ = fitted[key]
            return out

        def transform(self, X):
            at = None if self.every_ is None else _same_rows(Z, X)
            return self.head_.transform(X) if at is None else self.every_[at]

    Z = X.drop(columns=[args.confidence])
    fitted = {}  # rows' bytes -> (fitted head, its fit_transform, every row of Z)
    folds = []
    for train, test in cv.split(X):
        # seeded as the calibrator's fit seeds its clone of the partition
        part = clone(est.partitioner)
        seed_inner(part, getattr(est, "random_state", None), name="partitioner")
        (name, head), tree = part.steps
        folds.append((train, test, Pipeline([(name, FoldEmbedding(head)), tree])))
    return folds


def _same_rows(Z, X):
    """The positions of ``X``'s rows in ``Z`` when ``X`` holds exactly rows
    of ``Z`` (by their integer index labels), else None."""
    index = getattr(X, "index", None)
    if index is None or index.dtype.kind not in "iu" or not len(index):
        return None
    rows = index.to_numpy()
    if rows.min() < 0 or rows.max() >= len(Z):
        return None
    same = Z.iloc[rows]
    if list(X.columns) != list(same.columns) or not X.equals(same):
        return None
    return rows


def _row_cells(part, Z):
    """``part`` frozen, with the cells of the rows of ``Z`` computed once.

    The candidates of a search see the same rows again and again (``Z``'s
    rows by their index labels); embedding their text once per fold instead
    of once per candidate is most of the search's time. Rows that are not
    exactly rows of ``Z`` go through ``part`` itself.
    """
    from sklearn.frozen import FrozenEstimator

    class RowCells(FrozenEstimator):
        def transform(self, X):
            rows = _same_rows(Z, X)
            return self.estimator.transform(X) if rows is None else cells[rows]

    cells = np.asarray(part.transform(Z))
    return RowCells(part)


# --------------------------------------------------------------------------
# the summary
# --------------------------------------------------------------------------


def _tree_paths(tree, prefix, axis="e"):
    """``{cell: "prefix[e3<=0.12, e0>-0.40]"}``: the splits from the root to
    every leaf of a tree's node arrays (``tree_``; ``<axis><k>`` is
    coordinate k of the features the tree splits: ``e`` the embedding's,
    ``d`` a learned tree's directions, ``pc`` a kd-tree's principal axes)."""
    left, right = tree["children_left"], tree["children_right"]
    feature, threshold, cell = tree["feature"], tree["threshold"], tree["cell"]
    names, stack = {}, [(0, [])]
    while stack:
        node, path = stack.pop()
        if left[node] < 0:
            names[int(cell[node])] = f"{prefix}[{', '.join(path) or 'all'}]"
            continue
        f, t = int(feature[node]), float(threshold[node])
        stack.append((int(right[node]), [*path, f"{axis}{f}>{t:.3g}"]))
        stack.append((int(left[node]), [*path, f"{axis}{f}<={t:.3g}"]))
    return names


def _component_labels(part, prefix=""):
    """A readable name for every cell id of a fitted partitioner, where it
    can say one: the group value, the tree path, the crossed combination."""
    from sklearn.pipeline import Pipeline

    if isinstance(part, Pipeline):
        return _component_labels(part[-1], prefix or "text")
    groups = getattr(part, "groups_", None)
    if groups is not None:
        column = getattr(part, "group_column", "")
        head = f"{prefix or column}="
        return {i: f"{head}{g}" for i, g in enumerate(groups.tolist())}
    tree = getattr(part, "tree_", None)
    if isinstance(tree, dict) and "children_left" in tree:
        if getattr(part, "components_", None) is not None:
            # a learned tree on its directions, a kd-tree on principal axes
            axis = "pc" if getattr(part, "split_axis", None) == "pca" else "d"
        else:
            axis = "e"
        return _tree_paths(tree, prefix or "tree", axis)
    codes = getattr(part, "cell_codes_", None)
    if codes is not None:
        parts = [
            _component_labels(p, "text" if name == "text" else "")
            for name, p, _ in part.partitioners_
        ]
        return {
            c: " x ".join(
                names.get(int(k), str(int(k)))
                for names, k in zip(parts, row, strict=True)
            )
            for c, row in enumerate(codes.tolist())
        }
    return {}


def _cell_labels(est):
    """A readable name for every cell id of the estimator's partition."""
    part = getattr(est, "partitioner_", None)
    return {} if part is None else _component_labels(part)


def _learned_tree(est):
    """The fitted CalibrationTreePartitioner inside ``est``'s partition, or None."""
    from sklearn.pipeline import Pipeline

    from .. import CalibrationTreePartitioner

    part = getattr(est, "partitioner_", None)
    found = [part]
    found += [p for _, p, _ in getattr(part, "partitioners_", [])]
    for p in found:
        p = p[-1] if isinstance(p, Pipeline) else p
        if isinstance(p, CalibrationTreePartitioner):
            return p
    return None


def summarize(est, X, args, out):
    """Print cells, fallbacks and the bound per cell of a fitted estimator."""
    from ..bounds import umd_epsilon

    alpha = 0.1
    if hasattr(est, "n_bins_"):  # UMD, S-B
        n = X.shape[0]
        try:
            bound = f"{umd_epsilon(n, est.n_bins_, alpha=alpha):.4f} (alpha 0.1)"
        except ValueError:  # Thm 3.1 needs at least 2 rows per bin
            bound = f"undefined ({n} row(s) in {est.n_bins_} bin(s))"
        print(f"bins: {est.n_bins_}; UMD bound epsilon = {bound}", file=out)
        return
    if hasattr(est, "temperature_"):
        print(f"temperature: {est.temperature_:.4f}", file=out)
        return
    if hasattr(est, "coef_") and not hasattr(est, "random_effects_"):
        a, b = np.ravel(est.coef_)[0], np.ravel(est.intercept_)[0]
        print(f"Platt: sigmoid({a:.4f} * logit(h) + {b:.4f})", file=out)
        return
    if hasattr(est, "random_effects_"):
        print(
            f"cells: {len(est.cells_)} with random effects; fixed effects "
            f"{np.round(est.fixed_effects_, 4).tolist()}, random-effect SDs "
            f"{np.round(est.sigma_, 4).tolist()}",
            file=out,
        )
        return
    members = getattr(est, "estimators_", None)
    if members is not None:  # --cv: one Alg. 3 per fold, each with its bounds
        k = len(members)
        print(
            f"cross-fitted over {k} folds (--cv {k}): each fold binned by a "
            "scaler fitted on the other folds, so every row is binned once",
            file=out,
        )
        for j, member in enumerate(members):
            print(f"fold {j + 1} of {k}:", file=out)
            summarize(member, X, args, out)
        return
    cells = est.apply(X)
    rows = getattr(est, "binning_indices_", None)
    if rows is not None:
        cells = cells[rows]
    ids, counts = np.unique(cells, return_counts=True)
    b = est.points_per_bin_
    labels = _cell_labels(est)
    # the estimator's own Thm 3.1 bounds: per cell, simultaneous over cells
    eps = dict(zip(est.cells_.tolist(), est.epsilon_.tolist(), strict=True))
    up = dict(zip(est.fallback_cells_.tolist(), est.fallback_to_.tolist(), strict=True))
    print(
        f"cells: {est.n_cells_fitted_} with their own calibrator, "
        f"{est.n_cells_fallback_} with fewer than b = {b} rows (served by an "
        f"ancestor region or the root); points per bin b = {b}; Thm 3.1 bound "
        f"of the root epsilon = {est.epsilon_root_:.4f}, per cell below "
        f"(simultaneous, alpha {est.alpha})",
        file=out,
    )
    tree = _learned_tree(est)
    if tree is not None and tree.n_cells_ == 1:
        why = (
            "no direction of the text embedding along which the "
            "miscalibration differs enough for its leaves of at least "
            f"{tree.min_samples_leaf_} rows"
        )
        print(
            f"the learned tree found nothing to split: {why}; it is one cell, "
            "so every row gets the same calibrator, as without --text (more "
            "rows may show a split; --partition kdtree splits at medians "
            "regardless)",
            file=out,
        )
    elif tree is not None:
        print(f"the learned tree split the text into {tree.n_cells_} leaves", file=out)
    _serving_table(est, ids, counts, labels, eps, up, out)


def _region_name(names):
    """The part of the cell names ``names`` that all cells below a region
    share: equal components of a crossed name kept, a tree path cut to its
    common first conditions (``text[e0<=0.48, e1>0.1]`` and ``text[e0<=0.48,
    e1<=0.1]`` give ``text[e0<=0.48]``)."""
    split = [n.split(" x ") for n in names if n]
    if not split or len({len(p) for p in split}) != 1:
        return ""
    shared = []
    for parts in zip(*split, strict=True):
        if len(set(parts)) == 1:
            shared.append(parts[0])
            continue
        heads = {p.split("[", 1)[0] for p in parts}
        if len(heads) != 1 or not all(p.endswith("]") for p in parts):
            continue
        paths = [p.split("[", 1)[1][:-1].split(", ") for p in parts]
        common = []
        for conds in zip(*paths, strict=False):
            if len(set(conds)) != 1:
                break
            common.append(conds[0])
        shared.append(f"{heads.pop()}[{', '.join(common) or 'all'}]")
    # a component that no longer splits says nothing beside the others
    named = [p for p in shared if not p.endswith("[all]")]
    return " x ".join(named or shared)


def _serving_table(est, ids, counts, labels, eps, up, out):
    """The summary's table: one line per cell with its own calibrator, one
    line per ancestor region (or the root) for all the cells it serves, each
    with the bins of the calibrator that serves it; a warning line where
    that calibrator has one bin (a constant: the confidences of its rows are
    no longer ranked)."""
    tables = est.tables_
    route = est._router()(np.asarray(ids, dtype=np.int64))
    n_bins = {int(t): int(tables.table(int(t)).values.shape[0]) for t in set(route)}
    print("| cell | name | rows | served by | bins | epsilon |", file=out)
    print("|---:|---|---:|---|---:|---:|", file=out)
    shared = {}  # serving table -> [(cell, rows)] of the cells it serves
    for s, n_s, t in zip(ids.tolist(), counts.tolist(), route.tolist(), strict=True):
        if s in up or s == -1:
            shared.setdefault(t, []).append((s, n_s))
            continue
        name = labels.get(s, "")
        e = eps.get(s, est.epsilon_root_)
        print(
            f"| {s} | {name} | {n_s} | own calibrator | {n_bins[t]} | {e:.4f} |",
            file=out,
        )
    one_bin = []
    for t, members in sorted(shared.items()):
        cells = [s for s, _ in members]
        rows = sum(n for _, n in members)
        node = up.get(cells[0], -1)
        if t == 0:
            region, who = "(all rows)", "root"
        else:
            region = _region_name([labels.get(s, "") for s in cells])
            who = f"ancestor region {node}"
        shown = ", ".join(map(str, cells[:8])) + (", ..." if len(cells) > 8 else "")
        what = f"{len(cells)} cells: {shown}" if len(cells) > 1 else shown
        if cells == [-1]:
            what, region = "-1", "(outside)"
        e = eps.get(cells[0], est.epsilon_root_)
        print(
            f"| {what} | {region} | {rows} | {who} | {n_bins[t]} | {e:.4f} |",
            file=out,
        )
        if n_bins[t] == 1:
            one_bin.append((who if not region else f"{who} ({region})", rows))
    for s, n_s, t in zip(ids.tolist(), counts.tolist(), route.tolist(), strict=True):
        if s not in up and s != -1 and n_bins[t] == 1:
            one_bin.append((f"cell {s} ({labels.get(s, '')})", n_s))
    if one_bin:
        listed = "; ".join(f"{who}: {rows} rows" for who, rows in one_bin[:6])
        more = f"; and {len(one_bin) - 6} more" if len(one_bin) > 6 else ""
        print(
            f"betacal: warning: {len(one_bin)} serving calibrator(s) have one "
            f"bin, so every row they serve gets the same calibrated value and "
            f"the confidences are no longer ranked there ({listed}{more}); "
            "lower --points-per-bin, or use fewer, larger cells",
            file=sys.stderr,
        )


# --------------------------------------------------------------------------
# the subcommand
# --------------------------------------------------------------------------


def add_fit(subparsers):
    parser = subparsers.add_parser(
        "fit",
        help="fit a calibrator on a labelled file and save a model file",
        description=(
            "Fit a calibrator on FILE (CSV/TSV, optionally compressed, or "
            "Parquet) and save it as a model file for 'betacal apply'."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="labelled input file")
    parser.add_argument("--confidence", required=True, metavar="COL")
    parser.add_argument("--label", required=True, metavar="COL", help="1 = correct")
    parser.add_argument(
        "--text", nargs="+", metavar="COL", help="text columns embedded for beta"
    )
    parser.add_argument("--group", metavar="COL", help="precomputed group column")
    parser.add_argument(
        "--model-column", metavar="COL", help="column naming the answering model"
    )
    parser.add_argument(
        "--method",
        choices=sorted(METHODS),
        help="the calibrator; omitted with --text/--group/--model-column: the "
        "recommended one, s-bb with --scaler features --cv 3 over the learned "
        "partition of the text",
    )
    parser.add_argument("--output", required=True, metavar="MODEL")
    add_confidence_scale(parser)
    parser.add_argument(
        "--sep", type=separator, help="CSV separator (default: detected)"
    )
    parser.add_argument("--points-per-bin", type=_int_at_least(2), metavar="B")
    parser.add_argument(
        "--tune",
        action="store_true",
        help="choose points per bin by the cross-validated Brier score",
    )
    parser.add_argument(
        "--epsilon",
        type=open_unit,
        metavar="E",
        help="bb/hs-bb/s-bb: the smallest points per bin whose Thm 3.1 bound is E",
    )
    parser.add_argument(
        "--partition",
        choices=["kdtree", "learned"],
        default=None,
        help="cells of the --text embedding (default: learned without --method, "
        "else kdtree): the paper's kd-tree (median "
        "splits), or cells learned where the miscalibration differs "
        "(CalibrationTreePartitioner: a tree along the directions in which "
        "the recalibration changes, grown on half of the rows)",
    )
    parser.add_argument(
        "--cv",
        type=_int_at_least(2),
        metavar="K",
        help="hs-bb/s-bb: cross-fit the scaler over K folds (every row binned, "
        "each by a scaler that did not see it) instead of one split",
    )
    parser.add_argument(
        "--scaler",
        choices=SCALERS,
        help="hs-bb/s-bb: the scaler fitted before the binning (default: "
        "hierarchical for hs-bb, pooled for s-bb); 'features': the "
        "hierarchical scaler, then a boosted recalibration on the --text "
        "embedding (and group ids), whose output is binned",
    )
    parser.add_argument("--max-depth", type=_int_at_least(0), default=3)
    parser.add_argument("--n-components", type=_int_at_least(1), default=16)
    parser.add_argument(
        "--embedding",
        choices=TEXT_METHODS,
        default="tfidf-svd",
        help="how --text is embedded (TextEmbedder's method): word TF-IDF + "
        "SVD, character n-gram TF-IDF + SVD (sees the style of a question "
        "too), or MiniLM (needs the embeddings extra)",
    )
    parser.add_argument(
        "--question-column",
        metavar="COL",
        help="column naming the question of every row (several answers per "
        "question): every internal split (the learned tree's honest split, "
        "--cv folds, the scaler's split, --tune's folds) keeps a question on "
        "one side; not a feature of the model",
    )
    parser.add_argument("--random-state", type=int, default=0)
    parser.add_argument(
        "--dropna",
        action="store_true",
        help="leave out rows with a missing label or feature",
    )
    add_pos_label(parser)
    add_progress_flags(parser)
    parser.add_argument("--force", action="store_true", help="replace --output")
    add_gate_flags(parser)
    parser.set_defaults(func=run_fit)
    return parser


def _int_at_least(low):
    def parse(text):
        import argparse

        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer, got {text!r}"
            ) from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    return parse


def warn_unread(frame, h, unread, args, command):
    """Print the unread texts by reason and the groups (``--group``,
    ``--model``) that lost rows to them, on stderr."""
    lines = unread_lines(unread, total=len(h), command=command)
    failed = np.isnan(h) & ~empty_responses(frame[args.confidence])
    for flag in ("group", "model_column"):
        name = getattr(args, flag, None)
        if name is not None and name in frame.columns:
            lines += lost_groups(
                frame[name].to_numpy(), failed, name=name, command=command
            )
    for line in lines:
        print(f"betacal: warning: {line}", file=sys.stderr)


def confidence_format(args):
    return "percent" if args.percent else "verbalized" if args.verbalized else "number"


def run_fit(args):
    import pandas as pd

    from .. import io as model_io

    path = Path(args.file)
    output = check_output(args.output, path, args.force)
    if args.tune and args.points_per_bin is not None:
        raise UsageError("--tune chooses --points-per-bin; give one or the other")
    resolve_method(args)
    if args.tune and args.method not in BINNING:
        raise UsageError(
            f"--tune chooses points per bin of a binning method "
            f"({', '.join(sorted(BINNING))}); {args.method} has none"
        )
    try:
        model_io._skops()
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    est, features = build_estimator(args)
    question = args.question_column
    if question is not None and question in (args.confidence, args.label):
        raise UsageError(
            f"--question-column {question!r} is the confidence or label column; "
            "name the column that identifies each row's question"
        )
    extra = [] if question is None else [question]
    columns = list(dict.fromkeys([args.confidence, args.label, *features, *extra]))
    try:
        frame = read_table(path, columns, sep=args.sep)
    except TableReadError as exc:
        raise UsageError(str(exc)) from None
    if resolve_method(args, frame):  # the recommended one, for these rows
        est, features = build_estimator(args)
    fmt = confidence_format(args)
    if fmt == "verbalized" and plain_numbers_only(frame[args.confidence]):
        raise UsageError(
            f"--verbalized: confidence column {args.confidence!r} holds plain "
            "numbers only, no text; drop --verbalized (and pass --percent for "
            "0-100)"
        )
    options = verbalized_options(args)
    unread = {}
    h, n_failed = confidence_values(
        frame[args.confidence],
        fmt,
        column=args.confidence,
        options=options,
        unread=unread,
    )
    keep = ~np.isnan(h)
    n_missing = int(np.count_nonzero(~keep)) - n_failed
    if n_missing and not args.dropna and fmt != "verbalized":
        raise UsageError(
            f"confidence column {args.confidence!r} has {n_missing} missing "
            "value(s); pass --dropna to leave those rows out"
        )
    other = frame[[args.label, *features, *extra]].notna().all(axis=1).to_numpy()
    if not other.all() and not args.dropna:
        what = "feature or question" if extra else "feature"
        raise UsageError(
            f"{int((~other).sum())} row(s) have a missing label or {what}; pass "
            "--dropna to leave them out"
        )
    keep &= other
    n_used = int(keep.sum())
    if len(frame) == 0:
        raise UsageError(f"{path} has a header line but no rows: nothing to fit")
    if n_used == 0:
        raise UsageError(
            f"no usable rows in {path} (all confidences missing)"
            + unread_reasons(unread)
        )
    y = read_labels(frame[args.label][keep], args.label, args.pos_label)
    if fmt == "verbalized":  # every check of the input passed: say what is lost
        warn_unread(frame, h, unread, args, "fit")
    X = frame.loc[keep, [args.confidence, *features]].reset_index(drop=True)
    X[args.confidence] = h[keep]
    if not features:
        X = X[[args.confidence]]
    questions = None if question is None else frame[question][keep].to_numpy()
    # only a calibrator with splits of its own takes them (--tune's folds
    # use them for every method)
    fit_groups = {}
    if questions is not None and fit_takes(est, "groups"):
        fit_groups["groups"] = questions
    out = sys.stdout
    progress = Progress(args.progress)
    scaler = f" (scaler: {args.scaler})" if args.scaler is not None else ""
    print(f"# betacal fit: {args.method}{scaler} on {path.name}", file=out)
    if getattr(args, "recommended", False):
        why = (
            "a --text value repeats (several answers per question), or no --text"
            if args.repeated
            else "every --text value once"
        )
        print(f"# the recommended calibrator where {why} (no --method)", file=out)
        if args.text and args.embedding == "tfidf-svd" and _has_embeddings_extra():
            print(
                "# the embeddings extra is installed: --embedding minilm gives "
                "the learned partition purer cells of topics (docs: embeddings)",
                file=out,
            )
    out.flush()
    try:
        if args.tune:
            est = _tune(est, X, y, args, out, progress, questions)
        est = gate_estimator(est, args)
        if questions is not None and fit_takes(est, "groups"):
            # the gate splits and certifies by question too
            fit_groups["groups"] = questions
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            what = f"fitting {args.method} on {len(X)} rows"
            if args.text:
                what += (
                    " (embedding the text, growing the learned tree on half "
                    "of the rows)"
                    if args.partition == "learned"
                    else " (embedding the text, splitting it by the kd-tree)"
                )
            with progress.step(what):
                est.fit(X, y, **fit_groups)
    except (ValueError, TypeError) as exc:
        raise UsageError(
            f"fitting {args.method} on the {len(X)} usable row(s) of {path} "
            f"failed: {one_line(exc)}"
        ) from None
    # the written model's warnings (small cells, separation, convergence),
    # once each and on one line, as the command's own messages are
    for message in dict.fromkeys(one_line(w.message) for w in caught):
        print(f"betacal: warning: {message}", file=sys.stderr)
    metadata = {
        "command": "betacal fit",
        "method": args.method,
        "confidence": args.confidence,
        "confidence_format": fmt,
        "features": features,
        # read as text by apply (pandas would infer numbers for a chunk
        # whose group values all look numeric)
        "text_columns": [
            c for c in features if not pd.api.types.is_numeric_dtype(X[c])
        ],
        "label": args.label,
        "pos_label": args.pos_label,
        # apply names the groups of these columns that lose rows
        "group_columns": [c for c in (args.group, args.model_column) if c],
        "n_rows": n_used,
    }
    dropped = len(frame) - n_used
    print(
        f"rows: {n_used} used, {dropped} left out"
        + (
            f" ({n_failed} unparseable confidence text(s)"
            + (f", {n_missing} empty or N/A response(s)" if n_missing else "")
            + ")"
            if fmt == "verbalized"
            else ""
        ),
        file=out,
    )
    if questions is not None:
        head = (
            f"questions: {np.unique(questions).shape[0]} (--question-column {question})"
        )
        if fit_groups:
            what = "the fit's internal splits" + (
                " and --tune's folds" if args.tune else ""
            )
            tail = f"{what} keep each question on one side"
        elif args.tune:
            tail = f"--tune's folds keep each question on one side ({args.method} "
            tail += "itself splits no rows)"
        else:
            tail = f"{args.method} splits no rows, so they change nothing"
        print(f"{head}: {tail}", file=out)
    summarize(inner(est), X, args, out)
    print_gate_summary(est, out)
    if is_gate(est):
        metadata["gate"] = gate_metadata(est)
    model = est
    if fmt != "number":
        # the reading goes into the model: io.load(...).predict_proba(raw)
        # reads percentages / model text as this fit did (and as apply does)
        from sklearn.pipeline import Pipeline

        from .._elicitation import ConfidenceReader

        reader = ConfidenceReader(args.confidence, confidence_format=fmt, **options)
        model = Pipeline(
            [
                ("read", reader.fit(frame[[args.confidence, *features]])),
                ("calibrate", est),
            ]
        )
    # written last: a failure anywhere above leaves no model file
    with progress.step(f"writing {output}"):
        model_io.dump(model, output, metadata=metadata)
    print(f"model written to {output}", file=out)
    return EXIT_OK
