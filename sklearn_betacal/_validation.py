# SPDX-License-Identifier: MIT
"""Shared input checks: binary labels, confidences, confidence/feature split.

Every public estimator and metric routes its inputs through these helpers so
that bad input always gets the same clear message (what was wrong, how many
rows, how to fix it) instead of a traceback from deep inside NumPy.
"""

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import type_of_target

from ._compat import validate_data

INPUT_KINDS = ("probability", "logit")


def squeeze_column(a):
    """``np.asarray(a)``, with an ``(n, 1)`` column flattened to ``(n,)``.

    Every 1-D input (labels, confidences, cell ids, groups) also accepts the
    one-column 2-D form; what else is allowed is checked by the caller.
    """
    a = np.asarray(a)
    return a[:, 0] if a.ndim == 2 and a.shape[1] == 1 else a


def require_labels(estimator, y):
    """Raise scikit-learn's "requires y" error when ``fit`` got ``y=None``."""
    if y is None:
        raise ValueError(
            f"{type(estimator).__name__} requires y to be passed, but the target "
            "y is None: pass the correctness labels of the calibration set."
        )


#: label pairs whose "correct" word is evident, compared in lower case and
#: without surrounding spaces: the one rule of the calibrators, the metrics,
#: the scorers, the Displays and the CLI (any other two strings need
#: ``pos_label``)
EVIDENT_LABEL_PAIRS = {
    frozenset({"yes", "no"}): "yes",
    frozenset({"y", "n"}): "y",
    frozenset({"true", "false"}): "true",
    frozenset({"t", "f"}): "t",
    frozenset({"correct", "incorrect"}): "correct",
    frozenset({"right", "wrong"}): "right",
    frozenset({"pass", "fail"}): "pass",
}


def evident_positive(classes):
    """The "correct" one of two labels where it is evident, else ``None``.

    ``True`` of bool labels; the greater of two numbers (``1`` of ``{0,
    1}`` and ``{-1, 1}``, as scikit-learn's ``classes_[1]``); of two strings,
    the word of an :data:`EVIDENT_LABEL_PAIRS` pair in any case
    (``"Correct"`` of ``{"Correct", "Incorrect"}``). Two other strings
    (``{"A", "B"}``) give ``None``: which one is correct is not evident.
    """
    classes = np.asarray(classes)
    if classes.shape[0] != 2:
        return None
    if classes.dtype == bool:
        return classes[classes.argmax()]
    if classes.dtype.kind in "uif":
        return classes.max()
    if all(isinstance(c, str | bytes) for c in classes.tolist()):
        words = [
            (c.decode() if isinstance(c, bytes) else c).strip().lower()
            for c in classes.tolist()
        ]
        word = EVIDENT_LABEL_PAIRS.get(frozenset(words))
        if word is not None:
            return classes[words.index(word)]
    return None


def _ambiguous_message(name, classes):
    a, b = (str(c) for c in classes.tolist())
    return (
        f"{name} holds the labels {a!r} and {b!r}: which one means a correct "
        "answer is not evident (yes/no, true/false, correct/incorrect, "
        "right/wrong and pass/fail are read without it)"
    )


def check_binary_labels(y, *, name="y", pos_label=None):
    """Return ``y`` as a float64 array of zeros and ones (metrics, the CLI).

    1 means "correct": ``y == pos_label`` when ``pos_label`` is given;
    else ``{0, 1}`` (any numeric dtype, also an object array of numbers)
    and bool as they are, and two strings of an evident pair
    (:func:`evident_positive`: ``yes``/``no``, ``correct``/``incorrect``,
    ...) by their evident word. Anything else raises a ``ValueError`` that
    says which values were found and how to encode them; its first words
    are scikit-learn's own ("Only binary classification is supported." for
    a multiclass target, "Unknown label type: ..." for continuous values)
    so that generic scikit-learn tooling recognises the error. Two other
    strings need ``pos_label`` (an error that says so, as scikit-learn's
    metrics do). Soft labels (floats in ``[0, 1]``, not all 0 or 1: a
    judge's probability that the answer is correct) are returned as they
    are (``1 - y`` with ``pos_label=0``).
    """
    y = squeeze_column(y)
    if y.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D array of binary labels; got shape {y.shape}."
        )
    if y.dtype.kind == "O" and all(isinstance(v, numbers.Real) for v in y):
        y = y.astype(np.float64)
    if pos_label is not None:
        if is_soft_labels(y):
            return _encode_soft_labels(y, pos_label, name)[0]
        return _labels_equal_to(y, pos_label, name)
    if y.dtype == bool:
        return y.astype(np.float64)
    if y.dtype.kind not in "uif":
        found = np.unique(y.astype(str))
        if found.shape[0] == 2:
            positive = evident_positive(found)
            if positive is None:
                raise ValueError(
                    _ambiguous_message(name, found)
                    + ": pass pos_label, the label of a correct answer."
                )
            return (y.astype(str) == positive).astype(np.float64)
        if found.shape[0] > 2:
            raise ValueError(
                f"Only binary classification is supported. {name} holds "
                f"{found.shape[0]} labels, e.g. {found.tolist()[:5]}; give a "
                "correct and an incorrect label."
            )
        raise ValueError(
            f"Unknown label type: non-numeric. {name} holds the single label "
            f"{found.tolist()[:1]}: name the label of a correct answer with "
            "pos_label, or encode a correct answer as 1 and an incorrect one as 0."
        )
    y = y.astype(np.float64, copy=False)
    check_finite(y, name, "labels must be 0 or 1. Drop or relabel those rows.")
    bad = (y != 0) & (y != 1)
    if bad.any() and is_soft_labels(y):
        # soft labels: a judge's probability that the answer is correct; the
        # metrics average them as they average 0/1 labels
        return y
    if bad.any():
        found = np.unique(y[bad])[:5].tolist()
        integral = bool(np.all(y == np.round(y)))
        lead = (
            "Only binary classification is supported."
            if integral
            else "Unknown label type: continuous."
        )
        raise ValueError(
            f"{lead} {name} must be binary with values in {{0, 1}} (or bool); "
            f"{int(bad.sum())} row(s) have other values, e.g. {found}. This "
            "library calibrates 'is this answer correct' (1) versus not (0); for "
            "multiclass logits use TemperatureScaler with an (n, K) matrix."
        )
    return y


def is_soft_labels(y):
    """Whether numeric ``y`` holds soft labels: finite probabilities in
    ``[0, 1]`` that are not all 0 or 1 (a judge's probability that each
    answer is correct)."""
    y = np.asarray(y)
    if y.dtype.kind != "f" or y.size == 0:
        return False
    lo, hi = y.min(), y.max()  # NaN fails both comparisons
    if not (lo >= 0.0 and hi <= 1.0):
        return False
    return bool(np.any((y != 0.0) & (y != 1.0)))


def _encode_soft_labels(y, pos_label, name):
    """``(t, classes)`` of soft labels: ``classes`` is ``[0.0, 1.0]`` and
    ``t`` the probability of class 1.0 ("correct"); ``pos_label=0`` reads
    them as the probability of an incorrect answer (``t = 1 - y``,
    ``classes`` ``[1.0, 0.0]``)."""
    y = y.astype(np.float64, copy=False)
    if pos_label is None or pos_label == 1:
        return y.copy(), np.array([0.0, 1.0])
    if pos_label == 0:
        return 1.0 - y, np.array([1.0, 0.0])
    raise ValueError(
        f"pos_label={pos_label!r} is not a label of {name}: soft labels are the "
        "probability of class 1 (correct); pos_label must be None, 1 or 0."
    )


def _labels_equal_to(y, pos_label, name):
    """``y == pos_label`` as 0/1 floats; ``pos_label`` must be a label of
    ``y``, and ``y`` hold at most two labels."""
    found = np.unique(y.astype(str)) if y.dtype.kind not in "biuf" else np.unique(y)
    if found.shape[0] > 2:
        raise ValueError(
            f"Only binary classification is supported. {name} holds "
            f"{found.shape[0]} labels, e.g. {found.tolist()[:5]}."
        )
    try:
        hit = np.asarray(y == pos_label, dtype=bool)
    except (TypeError, ValueError):
        hit = np.zeros(y.shape[0], dtype=bool)
    if hit.shape != y.shape:  # numpy compared a scalar it could not broadcast
        hit = np.zeros(y.shape[0], dtype=bool)
    if not hit.any():
        raise ValueError(
            f"pos_label={pos_label!r} is not a label of {name}; its labels are "
            f"{found.tolist()}."
        )
    return hit.astype(np.float64)


def _binary_classes(y):
    """``np.unique(y)`` of labels that hold at most two values (same bytes).

    Numbers: their minimum and maximum, two passes instead of a sort; a
    float zero is settled by ``np.unique`` when a negative zero is present
    (which of the two zeros it returns is its own affair).
    """
    if y.dtype.kind not in "biuf" or y.shape[0] == 0:
        return np.unique(y)
    lo, hi = y.min(), y.max()
    if y.dtype.kind == "f" and (lo == 0 or hi == 0) and np.signbit(y).any():
        return np.unique(y)
    return np.array([lo] if lo == hi else [lo, hi], dtype=y.dtype)


def _numeric_binary_classes(y):
    """The classes of numeric 1-D labels that ``type_of_target`` calls binary.

    A few passes (minimum, maximum, one comparison) instead of
    ``type_of_target``'s ``np.unique``, for the common case of 0/1, bool or
    any two whole numbers; ``None`` for everything else (NaN or infinite
    values, fractions, more than two values, other dtypes), which
    ``type_of_target`` then judges and words as before.
    """
    if y.ndim != 1 or y.dtype.kind not in "biuf" or y.shape[0] == 0:
        return None
    classes = _binary_classes(y)
    lo, hi = classes[0], classes[-1]
    # type_of_target calls floats continuous unless they survive a cast to
    # int64: whole numbers within its range
    if y.dtype.kind == "f" and not (
        -(2.0**63) <= lo <= hi < 2.0**63 and lo == np.round(lo) and hi == np.round(hi)
    ):
        return None
    if lo != hi and not np.all((y == lo) | (y == hi)):
        return None
    return classes


def encode_binary_labels(y, *, pos_label=None, name="y"):
    """Encode labels of any two classes as 0/1 targets "is the positive class".

    Parameters
    ----------
    y : array-like of shape (n,)
        Two distinct labels of any type: ``{0, 1}``, ``{-1, 1}``, ``{1, 2}``,
        bool, strings, ...
    pos_label : label, default=None
        The class whose probability the confidence is (the "correct" one).
        ``None`` means the evident one (:func:`evident_positive`).
    name : str
        Name used in error messages.

    Returns
    -------
    t : ndarray of shape (n,), float64
        1.0 where ``y == pos_label``, else 0.0.
    classes : ndarray of shape (2,)
        The two labels in ``y``'s dtype, ``[negative, positive]``: the
        positive class (``pos_label``, else the evident one of
        :func:`evident_positive`: the greater number, ``True``, ``"yes"``,
        ``"correct"``, ...) second, so that column 1 of ``predict_proba`` is
        P(correct). Numbers and bools are so in sorted order; ``["incorrect",
        "correct"]`` is not. Two strings with no evident "correct" one keep
        their sorted order (``classes_[1]`` positive, as in scikit-learn) with
        a warning that asks for ``pos_label``. A ``y`` with a single class is
        completed to its usual pair when that pair is evident: ``{0, 1}`` for
        0 or 1, ``{-1, 1}`` for -1, ``{False, True}`` for a bool; any other
        single label is an error, since the other class cannot be named.

    Errors use scikit-learn's own wording: "Only binary classification is
    supported." for more than two classes, "Unknown label type: ..." for
    continuous or multi-output targets, "Input y contains NaN." for NaN.
    """
    y = squeeze_column(y)
    if y.ndim == 1 and y.shape[0] == 0:
        raise ValueError(f"{name} is empty: pass one label per row (0 rows given).")
    if y.dtype.kind == "O" and all(isinstance(v, numbers.Real) for v in y):
        y = y.astype(np.float64)
    classes = _numeric_binary_classes(y)
    y_type = (
        "binary"
        if classes is not None
        else type_of_target(y, input_name=name, raise_unknown=True)
    )
    if y_type == "multiclass":
        found = np.unique(y)
        raise ValueError(
            "Only binary classification is supported. The type of the target is "
            f"multiclass: {name} has {found.shape[0]} classes, e.g. "
            f"{found[:5].tolist()}. Encode whether each answer is correct, or "
            "calibrate a multiclass classifier with "
            "CalibratedClassifier(clf, calibrator, multiclass='top-label')."
        )
    if y_type == "continuous" and is_soft_labels(y):
        return _encode_soft_labels(y, pos_label, name)
    if y_type != "binary":
        raise ValueError(
            f"Unknown label type: {y_type}. {name} must hold two classes (e.g. "
            "correct / incorrect as 1 / 0, True / False or two strings), one "
            "label per row, or soft labels: probabilities in [0, 1] that the "
            "answer is correct (a judge's)."
        )
    if classes is None:
        classes = _binary_classes(y)
    if classes.shape[0] == 1:
        only = classes[0]
        pairs = {0: [0, 1], 1: [0, 1], -1: [-1, 1]}
        if y.dtype == bool:
            classes = np.array([False, True])
        elif y.dtype.kind in "uif" and only in pairs:
            classes = np.asarray(pairs[int(only)], dtype=y.dtype)
        else:
            raise ValueError(
                f"{name} has the single class {classes.tolist()[0]!r}: the other class "
                "cannot be named. Pass labels with both classes, or 0/1 (bool) labels."
            )
    if pos_label is not None:
        at = np.flatnonzero(classes == pos_label)
        if at.size == 0:
            raise ValueError(
                f"pos_label={pos_label!r} is not a label of {name}; its labels "
                f"are {classes.tolist()}."
            )
        pos = classes[at[0]]
    else:
        pos = evident_positive(classes)
        if pos is None:  # two strings: scikit-learn would take classes_[1]
            pos = classes[1]
            warnings.warn(
                _ambiguous_message(name, classes)
                + f"; {str(pos)!r}, the later in sorted order (scikit-learn's "
                "classes_[1]), is taken as correct: pass pos_label to say which.",
                UserWarning,
                stacklevel=4,
            )
    # [negative, positive]: predict_proba[:, 1] is P(correct)
    i = int(np.flatnonzero(classes == pos)[0])
    return (y == pos).astype(np.float64), classes[[1 - i, i]]


#: dtype kinds that numpy would turn into numbers but that are no confidence:
#: True as 1.0, a timestamp or a duration as a count of (nano)seconds.
_NOT_CONFIDENCES = {
    "b": "booleans",
    "M": "timestamps (dates and times)",
    "m": "durations (or times of day)",
}


def _not_confidences_message(name, dtype, kind, fix=None):
    what = _NOT_CONFIDENCES[kind]
    read = (
        "True would be read as the confidence 1.0 and False as 0.0"
        if kind == "b"
        else "they would be read as counts of time units"
    )
    if fix is None:
        fix = (
            "If these are the labels, pass them as y; to use them as 0/1 "
            "confidences on purpose, convert them first (.astype(float))."
            if kind == "b"
            else "Pass the column that holds the model's confidences."
        )
    return (
        f"{name} holds {what} (dtype {dtype}), not confidences: {read}. "
        f"Confidences are probabilities in [0, 1] or scores. {fix}"
    )


def _element_kind(values):
    """``"b"``, ``"M"`` or ``"m"`` when an object array holds booleans,
    timestamps (or dates) or durations (or times of day) among its values,
    ``"U"`` when it holds text, else ``None``.

    Read on the values' types: numpy converts such an array to float without
    a word (``True`` is 1.0), and its dtype says only ``object``.
    """
    import datetime

    import pandas as pd

    found = None
    for t in set(map(type, values.ravel())):
        if issubclass(t, bool | np.bool_):
            return "b"  # the silent wrong answer: reported first
        if issubclass(t, datetime.date | np.datetime64 | pd.Period):
            found = "M"
        elif issubclass(t, datetime.timedelta | datetime.time | np.timedelta64):
            found = found or "m"
        elif issubclass(t, str | bytes):
            found = found or "U"
    return found


def check_confidence_kind(values, name, *, fix=None):
    """Refuse booleans, timestamps and durations as confidences.

    ``values`` is one column (a numpy array, a pandas or polars Series, an
    Arrow array): refused by its dtype, or, for an object column, by its
    values (a column of Python ``True`` / ``False`` or of ``datetime``
    objects), before any conversion to float would hide them. ``fix``
    replaces the message's last sentence (the command line names its own
    flags). Returns the values as a numpy array, and ``"U"`` or the dtype's
    kind as the second item (text is for the caller to read or refuse).
    """
    a = np.asarray(values)
    kind = a.dtype.kind
    if kind == "O":
        kind = _element_kind(a) or "O"
    elif kind == "S":
        kind = "U"
    if kind in _NOT_CONFIDENCES:
        raise ValueError(_not_confidences_message(name, a.dtype, kind, fix))
    return a, kind


def _text_confidences(h, name):
    """Text confidences written as plain numbers (``"0.83"``), as float64."""
    try:
        return h.astype(np.float64)
    except ValueError:
        pass
    bad = []
    for v in h.ravel():
        try:
            float(v)
        except (TypeError, ValueError):
            bad.append(v)
    raise ValueError(
        f"{name} holds {len(bad)} text value(s) that are not numbers, such as "
        f"{str(bad[0])[:40]!r}. Confidences are probabilities in [0, 1] or "
        "scores: convert the column to numbers first (e.g. pandas.to_numeric); "
        "verbalized confidences ('80%', 'very likely') are read by "
        "parse_verbalized_confidence or ConfidenceReader."
    )


def dtype_kind(dtype):
    """NumPy-style kind of a column dtype of numpy, pandas, polars or pyarrow.

    ``"b"`` bool, ``"M"`` timestamps and dates, ``"m"`` durations and times
    of day, else the NumPy kind when there is one (``None`` otherwise).
    """
    kind = getattr(dtype, "kind", None)  # numpy and pandas (extension) dtypes
    if isinstance(kind, str):
        return kind
    if hasattr(dtype, "to_pandas_dtype"):  # pyarrow
        try:
            return np.dtype(dtype.to_pandas_dtype()).kind
        except (TypeError, ValueError, NotImplementedError):
            return None
    label = str(dtype)  # polars: Boolean, Datetime(...), Date, Duration(...), Time
    if label == "Boolean":
        return "b"
    if label.startswith(("Datetime", "Date")):
        return "M"
    if label.startswith(("Duration", "Time")):
        return "m"
    return None


def frame_columns(X):
    """``[(name, dtype, kind), ...]`` for the columns of a DataFrame or table."""
    names = getattr(X, "column_names", None)  # pyarrow
    if names is not None:
        dtypes = [f.type for f in X.schema]
    else:
        names = list(X.columns)
        dtypes = getattr(X, "dtypes", None)  # pandas: a Series, polars: a list
        if dtypes is None:
            return []
    return [(n, d, dtype_kind(d)) for n, d in zip(names, list(dtypes), strict=True)]


def missing_values_message(X, who):
    """What scikit-learn's bare "Input contains NaN" meant: which columns of
    ``X`` hold missing values (NaN or None), how many, and what to do."""
    import pandas as pd

    names = column_names(X) if is_dataframe(X) else None
    a = np.asarray(X, dtype=object)
    a = a.reshape(a.shape[0], -1)
    missing = pd.isna(a)
    per_column = missing.sum(axis=0)
    cols = [
        (names[j] if names is not None else j, int(k))
        for j, k in enumerate(per_column)
        if k
    ]
    shown = ", ".join(
        f"{'column' if names is not None else 'column index'} {c!r}: {k}"
        for c, k in cols[:5]
    )
    return (
        f"{who}: X holds missing values (NaN or None) in "
        f"{int(missing.any(axis=1).sum())} row(s) ({shown}). Every row needs its "
        "confidence and its partition features: drop those rows, or fill them "
        "(a missing group, e.g., with its own name such as 'unknown')."
    )


def check_frame_columns(X, confidence):
    """Refuse DataFrame columns that numpy would silently turn into numbers.

    ``confidence`` is the position of the confidence column (``None``: every
    column is one): booleans, timestamps and durations are refused there;
    timestamps and durations also as partition features, which compare them
    as counts of time units (booleans are fine features). Checked on the
    dtypes before any conversion, which would hide them (a bool column next
    to a float one becomes 0.0 / 1.0).
    """
    if not is_dataframe(X):
        return
    cols = frame_columns(X)
    for j, (col, dtype, kind) in enumerate(cols):
        is_conf = confidence is None or j == confidence % len(cols)
        if is_conf and kind in _NOT_CONFIDENCES:
            raise ValueError(_not_confidences_message(f"X column {col!r}", dtype, kind))
        if not is_conf and kind in ("M", "m"):
            raise ValueError(
                f"X column {col!r} holds {_NOT_CONFIDENCES[kind]} (dtype "
                f"{dtype}), which a "
                "partition feature would compare as counts of time units. "
                "Convert it first: to numbers (e.g. days since a reference "
                "date) for a kd-tree or a learned tree, or to strings (e.g. "
                "the date) for a GroupColumnPartitioner."
            )


def check_confidence(h, *, input="probability", name="X", text=True):
    """Validate a 1-D vector of confidences and return it as float64.

    Parameters
    ----------
    h : array-like of shape (n,) or (n, 1)
        Numbers (also as objects, or as text that reads as a plain number,
        such as ``"0.83"``). Booleans, timestamps and durations are refused
        by :func:`check_confidence_kind`, also as the values of an object
        column.
    input : {"probability", "logit"}
        ``"probability"`` requires values in ``[0, 1]``; ``"logit"`` accepts
        any finite real score.
    name : str
        Name used in error messages.
    text : bool, default=True
        Whether text that reads as plain numbers is accepted (a calibrator's
        column read from a file); the metrics refuse text, as scikit-learn's
        ``check_array`` does.
    """
    if input not in INPUT_KINDS:
        raise ValueError(f"input must be one of {INPUT_KINDS}; got {input!r}.")
    h = squeeze_column(h)
    if h.ndim != 1:
        raise ValueError(
            f"{name} must hold one confidence per row, shape (n,) or (n, 1); got "
            f"shape {h.shape}. Pass only the confidence column."
        )
    h, kind = check_confidence_kind(h, name)
    if kind == "U":
        h = _text_confidences(h, name)  # text that is no number: its message
        if not text:
            raise ValueError(
                f"{name} holds numbers written as text, not numbers; convert "
                "them first (e.g. numpy.asarray(..., dtype=float) or "
                "pandas.to_numeric)."
            )
    elif kind == "O":
        # numbers as objects; a non-number (e.g. a dict) raises numpy's
        # TypeError, as scikit-learn's own conversion does
        h = h.astype(np.float64)
    elif kind not in "uif":
        raise ValueError(f"{name} must be numeric confidences; got dtype {h.dtype}.")
    h = h.astype(np.float64, copy=False)
    # the common case in one or two reductions (NaN fails both tests; an
    # overflowing sum of finite scores only takes the full check below)
    if h.size == 0:
        return h
    if input == "probability":
        if 0.0 <= h.min() and h.max() <= 1.0:
            return h
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            if np.isfinite(np.add.reduce(h)):
                return h
    n_nan = int(np.count_nonzero(np.isnan(h)))
    n_inf = int(np.count_nonzero(np.isinf(h)))
    if n_nan or n_inf:
        raise ValueError(
            f"{name} contains {n_nan} NaN and {n_inf} infinite confidence(s); "
            "every row needs a finite confidence. Drop or impute those rows."
        )
    if input == "probability":
        check_unit_interval(
            h,
            name,
            "probabilities must lie in [0, 1]; for raw scores or logits set "
            "input='logit'.",
        )
    return h


def check_finite(a, name, fix):
    """Refuse NaN and infinite values in the float array ``a``: how many,
    and ``fix`` (the rule they break, what to do)."""
    n_bad = int(np.count_nonzero(~np.isfinite(a)))
    if n_bad:
        raise ValueError(f"{name} has {n_bad} NaN or infinite value(s); {fix}")


def check_unit_interval(a, name, fix):
    """Refuse values of the finite array ``a`` outside ``[0, 1]``.

    The message counts them, gives the extremes and ends with ``fix`` (what
    to pass instead): one wording for the confidences of every estimator
    and metric, a classifier's probabilities and the command line.
    """
    n_out = int(np.count_nonzero((a < 0) | (a > 1)))
    if n_out:
        raise ValueError(
            f"{name} has {n_out} value(s) outside [0, 1] (min {a.min():.6g}, "
            f"max {a.max():.6g}); {fix}"
        )


def validate_confidence_data(estimator, X, y=None, *, reset, input="probability"):
    """``validate_data`` for confidence-only calibrators.

    Accepts ``X`` of shape ``(n,)`` or ``(n, 1)`` (any array-like, a Series or
    a one-column DataFrame; numeric object arrays are converted), records
    ``n_features_in_`` (always 1) and ``feature_names_in_`` through
    scikit-learn's ``validate_data``, and returns the confidences as a float64
    vector (plus ``y`` as 0/1 floats when given, setting ``classes_``: see
    :func:`fit_binary_labels`).
    """
    if sp.issparse(X):
        raise TypeError(
            f"{type(estimator).__name__} does not accept sparse input; pass a "
            "dense array of confidences (X.toarray())."
        )
    check_frame_columns(X, None)
    X_arr = X
    names = column_names(X)
    if not hasattr(X, "columns"):
        X_arr = np.asarray(X)
        if X_arr.ndim == 1:
            X_arr = X_arr.reshape(-1, 1)
    # dtype=None: an object column reaches check_confidence as it is (numpy's
    # conversion would read True as 1.0); check_confidence makes it float64
    kwargs = {"reset": reset, "ensure_all_finite": False, "dtype": None}
    if y is None:
        X_arr = validate_data(estimator, X_arr, **kwargs)
    else:
        X_arr, y = validate_data(estimator, X_arr, y, **kwargs)
    if X_arr.shape[1] != 1:
        raise ValueError(
            f"{type(estimator).__name__} calibrates one confidence per row: X "
            f"must have shape (n,) or (n, 1); got {X_arr.shape[1]} columns. "
            "For group-conditional calibration use BetaBinningCalibrator or "
            "ScalingBetaBinningCalibrator with a confidence_column."
        )
    name = "X" if not names else f"X column {names[0]!r}"
    h = check_confidence(X_arr, input=input, name=name)
    return h if y is None else (h, fit_binary_labels(estimator, y))


def fit_binary_labels(estimator, y):
    """Encode ``y`` for ``estimator.fit`` and set ``estimator.classes_``.

    ``estimator.pos_label`` (``None``: the greater label) names the class the
    confidence is the probability of; see :func:`encode_binary_labels`.
    """
    t, estimator.classes_ = encode_binary_labels(
        y, pos_label=getattr(estimator, "pos_label", None)
    )
    return t


def confidence_position(confidence_column, names, n_columns=None):
    """Position of the confidence column: the one rule of the library.

    ``confidence_column`` is an int position (negative counts from the end)
    or a column name; ``names`` are the column names of ``X`` (``None``: it
    has none, an array), ``n_columns`` its number of columns when known (a
    position is then checked against it). Returns the position as given for
    an int (reduce it with ``% n_columns``), the first column of that name
    for a name; a ``ValueError`` says what is wrong and how to fix it.
    """
    col = confidence_column
    if isinstance(col, numbers.Integral):
        if n_columns is not None and not -n_columns <= col < n_columns:
            raise ValueError(
                f"confidence_column={col!r} is out of range for X with "
                f"{n_columns} column(s)."
            )
        return int(col)
    if names is None:
        raise ValueError(
            f"confidence_column={col!r} is a column name, but X has no column "
            "names; pass a DataFrame or an integer position."
        )
    names = list(names)
    if col not in names:
        raise ValueError(
            f"confidence_column={col!r} is not a column of X; X has no such "
            f"column (columns are {names[:10]}{' ...' if len(names) > 10 else ''})."
        )
    return names.index(col)


def column_names(X):
    """The column names of a DataFrame (pandas, polars, pyarrow), else None."""
    if not is_dataframe(X) and getattr(X, "column_names", None) is None:
        return None
    return [name for name, _, _ in frame_columns(X)]


def split_confidence_features(X, confidence_column=0):
    """Split ``X`` into the confidence column and the partition features.

    The one reader of ``X = [confidence | partition features]`` outside the
    estimators' own validation (the scorer, CalibratedClassifier's input):
    ``confidence_column`` is placed by :func:`confidence_position`. Returns
    ``(h, Z)``: ``h`` the confidence column as a 1-D array (not yet checked:
    see :func:`check_confidence`), ``Z`` the remaining columns in order -- a
    DataFrame of the same kind when ``X`` is one (pandas or polars: names
    and dtypes kept, so a partitioner can read a group column by name), else
    a 2-D array (possibly with zero columns).
    """
    frame = is_dataframe(X)
    if not frame:
        X = np.asarray(X)
    if len(X.shape) != 2 or X.shape[1] < 1:
        raise ValueError(
            "X must be 2-D: one confidence column plus the partition features; "
            f"got shape {tuple(X.shape)}."
        )
    n = X.shape[1]
    names = column_names(X) if frame else None
    idx = confidence_position(confidence_column, names, n) % n
    if frame:
        from ._compat import _safe_indexing

        h = np.asarray(_safe_indexing(X, [idx], axis=1)).reshape(-1)
        return h, other_columns(X, X, idx)
    return X[:, idx], np.delete(X, idx, axis=1)


def join_confidence_features(h, F, name="__confidence__"):
    """``[h | F]``, the inverse of :func:`split_confidence_features`.

    ``F`` is ``None`` (then ``h`` alone), a 2-D array, or a DataFrame; a
    pandas or polars DataFrame with string column names stays one, with the
    confidence first under ``name`` (a partitioner may read a column by
    name), any other DataFrame becomes an array.
    """
    if F is None:
        return h
    if is_dataframe(F) and all(isinstance(c, str) for c in F.columns):
        if hasattr(F, "iloc"):  # pandas
            F = F.copy()
            F.insert(0, name, h, allow_duplicates=True)
            return F
        if hasattr(F, "hstack") and hasattr(F, "with_columns"):  # polars
            import polars as pl

            return pl.DataFrame({name: h}).hstack(F)
    return np.column_stack([h, np.asarray(F)])


def is_dataframe(X):
    """Whether ``X`` is a DataFrame (pandas, polars): named columns and a shape."""
    return (
        hasattr(X, "columns") and hasattr(X, "shape") and not isinstance(X, np.ndarray)
    )


def other_columns(X, X_arr, idx):
    """The columns of ``X`` other than position ``idx``, in their order.

    ``X_arr`` is ``X`` validated as an array (only its shape is read when
    ``X`` is a DataFrame: pass ``X`` itself).

    A DataFrame stays a DataFrame of its own kind (names and dtypes kept, so
    a partitioner can read a group column by name); an array gives an array.
    Column and row selection go through scikit-learn's ``_safe_indexing``.
    """
    from ._compat import _safe_indexing

    n = X_arr.shape[1]
    keep = [j for j in range(n) if j != idx % n]
    if is_dataframe(X):
        return _safe_indexing(X, keep, axis=1)
    return X_arr[:, keep]


def take_rows(Z, rows):
    """Rows of an array or DataFrame (pandas, polars): a mask, positions or
    a slice (a view of an array)."""
    from ._compat import _safe_indexing

    if isinstance(rows, slice):
        if not is_dataframe(Z):
            return Z[rows]
        # the block's positions only (an arange of all rows per block made a
        # blockwise predict on a DataFrame quadratic in its rows)
        rows = np.arange(*rows.indices(Z.shape[0]))
    rows = np.asarray(rows)
    if rows.dtype == bool:
        rows = np.flatnonzero(rows)
    return _safe_indexing(Z, rows)


def check_cell_ids(ids, n_rows, *, who="partitioner"):
    """Validate a partitioner's output: one integer cell id per row, ``>= -1``."""
    ids = squeeze_column(ids)
    if ids.ndim != 1 or ids.shape[0] != n_rows:
        raise ValueError(
            f"{who}.transform must return one cell id per row (shape ({n_rows},) "
            f"or ({n_rows}, 1)); got shape {ids.shape}."
        )
    if ids.dtype.kind == "f":
        if not np.all(np.isfinite(ids)) or np.any(ids != np.round(ids)):
            raise ValueError(
                f"{who}.transform must return integer cell ids; got non-integer floats."
            )
    elif ids.dtype.kind not in "iub":
        raise ValueError(
            f"{who}.transform must return integer cell ids; got dtype {ids.dtype}."
        )
    if ids.size and ids.dtype.kind != "b" and ids.min() < -1:
        raise ValueError(
            f"{who}.transform returned {int(np.sum(ids < -1))} cell id(s) below -1 "
            f"(min {ids.min():.0f}); cell ids must be >= 0, with -1 reserved for "
            "rows outside every cell."
        )
    if ids.dtype.kind in "fu" and ids.size and ids.max() > np.iinfo(np.int64).max:
        raise ValueError(
            f"{who}.transform returned cell id(s) too large for int64 (max "
            f"{ids.max():.6g}); number the cells 0, 1, 2, ..."
        )
    return ids.astype(np.int64)


#: Bins are allocated densely; beyond this many, and beyond one bin per row,
#: a request is a mistake (1e10 bins would need 75 GiB per array).
MAX_DENSE_BINS = 2**20


def check_n_bins(n_bins, n_rows, *, name="n_bins"):
    """Validate a number of bins against the data: an int, not a bool, >= 1.

    More than ``max(n_rows, MAX_DENSE_BINS)`` bins is rejected: beyond one
    bin per row the extra bins are empty, and they would be allocated.
    """
    if isinstance(n_bins, (bool, np.bool_)) or not isinstance(n_bins, numbers.Integral):
        raise TypeError(
            f"{name} must be an int >= 1; got {n_bins!r} of type "
            f"{type(n_bins).__name__}."
        )
    n_bins = int(n_bins)
    limit = max(int(n_rows), MAX_DENSE_BINS)
    if n_bins < 1 or n_bins > limit:
        raise ValueError(
            f"{name}={n_bins} is out of range: it must be between 1 and "
            f"{limit} (the larger of the number of rows, {n_rows}, and "
            f"{MAX_DENSE_BINS}); bins beyond one per row are empty."
        )
    return n_bins


def native(a):
    """``a`` as an ndarray in the machine's byte order (a copy only if needed).

    Arithmetic on a big-endian array is correct, but reading its bits (the
    metrics' one-pass range check views floats as unsigned integers) is not,
    so every validated array goes through here first.
    """
    a = np.asarray(a)
    if a.dtype.byteorder not in "=|" and a.dtype.byteorder != _NATIVE:
        a = a.astype(a.dtype.newbyteorder("="))
    return a


_NATIVE = "<" if np.little_endian else ">"

#: The smallest normal float64; below it a weight keeps fewer than 52 bits.
_TINY = float(np.finfo(np.float64).tiny)


#: Largest total of frequency weights for histogram binning: below 2**43 a
#: position on the cumulative-weight axis keeps 10 fractional bits in float64
#: (at 2**52 fractional weights rounded and moved UMD predictions by 0.19).
MAX_COUNT_TOTAL = 2.0**43


def check_weights(sample_weight, n_rows, *, max_total=None):
    """Validate ``sample_weight``: the one weight check of the library.

    ``None`` gives unit weights. A scalar is broadcast to every row. Rejects,
    with a ``ValueError`` that names ``sample_weight`` and says how to fix
    it: non-numeric values, a wrong length, NaN or infinite entries (also a
    scalar NaN/inf), negative entries, all-zero weights and a total that
    overflows float64.

    Parameters
    ----------
    sample_weight : array-like of shape (n_rows,), scalar or None
    n_rows : int
    max_total : float or None, default=None
        Weights whose total exceeds ``max_total`` are divided by a power of
        two (exact: every ratio is kept) so that it does not. The metrics,
        whose sums are bounded by the total weight, pass ``np.inf``: only an
        overflowing total is rescaled. Fits pass ``MAX_COUNT_TOTAL = 2**43``:
        histogram binning counts copies on a cumulative axis and excludes one
        copy per edge, which float64 cannot place near 2**53 (the excluded
        copy is then below 2**-42 of the total either way); Platt and
        temperature scaling multiply the weights by per-row losses of up to
        ~745, and their logit clip counts the total weight as rows. ``None`` (the mixed
        model, whose likelihood is not scale-free): an overflowing total is a
        ``ValueError``.

    Weights that are all subnormal (the largest below ``2**-1022``) are
    multiplied by the power of two that brings the largest to ``[0.5, 1)``
    (exact), so that a fit on ``w * 2**-1070`` is the fit on ``w`` whenever
    the largest of ``w`` is in ``[0.5, 1)``; with ``max_total=None`` they are
    returned as they are.

    Returns
    -------
    sw : ndarray of shape (n_rows,), float64
    """
    if sample_weight is None:
        return np.ones(n_rows, dtype=np.float64)
    sw = native(sample_weight)
    if sw.dtype.kind == "O":
        try:
            sw = sw.astype(np.float64)
        except (TypeError, ValueError):
            sw = None
    if sw is None or sw.dtype.kind not in "biuf":
        kind = "object" if sw is None else str(sw.dtype)
        raise TypeError(
            f"sample_weight must be numeric; got dtype {kind}. Pass one "
            "non-negative number per row."
        )
    if sw.ndim == 0:
        sw = np.full(n_rows, sw, dtype=np.float64)
    elif sw.ndim != 1 or sw.shape[0] != n_rows:
        raise ValueError(
            f"sample_weight must have shape ({n_rows},), one weight per row; got "
            f"shape {sw.shape}."
        )
    sw = sw.astype(np.float64, copy=False)
    check_finite(
        sw, "sample_weight", "every weight must be a finite non-negative number."
    )
    n_neg = int(np.count_nonzero(sw < 0))
    if n_neg:
        raise ValueError(
            f"sample_weight has {n_neg} negative value(s); weights must be "
            "non-negative."
        )
    if n_rows and not np.any(sw > 0):
        raise ValueError(
            "sample_weight is zero for every row; sample weights must contain "
            "at least one non-zero number (a row with a positive weight)."
        )
    top = float(sw.max()) if n_rows else 1.0
    if top < _TINY:
        # every weight subnormal: sums and products of them keep a few bits
        # (Platt returned its starting point), so the weights are multiplied
        # by a power of two bringing the largest to [0.5, 1) -- exact, every
        # ratio kept. With max_total=None the caller rescales (the learned
        # tree) or refuses (the mixed model, whose likelihood is not
        # scale-free).
        if max_total is None:
            return sw
        sw = np.ldexp(sw, -int(np.frexp(top)[1]))
    with np.errstate(over="ignore"):
        total = float(np.sum(sw))
    if max_total is None:
        if not np.isfinite(total):
            raise ValueError(
                f"sample_weight sums to more than the largest float64 (max "
                f"weight {sw.max():.3g}); these are frequency weights (copies of "
                "a row), so divide them all by a constant that keeps the total "
                "finite."
            )
        return sw
    if total > max_total or not np.isfinite(total):
        # an exact power-of-two rescale: every ratio is kept. The exponent is
        # bounded via the largest weight when the total itself overflowed.
        if np.isfinite(total):
            e = int(np.frexp(total)[1])
        else:
            e = int(np.frexp(sw.max())[1]) + int(np.ceil(np.log2(n_rows))) + 1
        target = int(np.frexp(min(max_total, np.finfo(np.float64).max))[1]) - 1
        sw = np.ldexp(sw, target - e)
    return sw


# -- fitted state rebuilt from a file (pickle, skops): checked before use ----


def damaged(owner, what):
    """The one error of a fitted state that does not hold together."""
    return ValueError(
        f"{owner} has damaged fitted state: {what}. Refit it, or load a "
        "model file that was not altered."
    )


def check_array_state(
    owner, name, value, kind, shape, *, allow_none=False, finite=True
):
    """``value`` as a checked ndarray: dtype kind in ``kind`` (``"i"``,
    ``"f"``), shape ``shape`` (``None`` entries match any size); float arrays
    must be finite unless ``finite=False``. Returns it (``float64``/``intp``),
    or ``None`` where allowed."""
    if value is None and allow_none:
        return None
    if not isinstance(value, np.ndarray) or value.dtype.kind not in kind:
        raise damaged(owner, f"{name} is not an array of {_KINDS[kind]}")
    if value.ndim != len(shape) or any(
        want is not None and got != want
        for got, want in zip(value.shape, shape, strict=True)
    ):
        raise damaged(
            owner,
            f"{name} has shape {value.shape}, expected "
            f"{tuple('*' if w is None else w for w in shape)}",
        )
    if value.dtype.kind == "f":
        value = value.astype(np.float64, copy=False)
        if finite and not np.all(np.isfinite(value)):
            raise damaged(owner, f"{name} holds NaN or infinite values")
        return value
    return value.astype(np.intp, copy=False)


_KINDS = {"i": "signed integers", "f": "floats", "if": "numbers"}


def check_real(owner, name, value, *, low, strict):
    """``value`` as a finite Python float ``> low`` (``strict``) or ``>= low``
    (not a bool)."""
    if (
        isinstance(value, bool | np.bool_)
        or not isinstance(value, numbers.Real)
        or not np.isfinite(value)
        or (value <= low if strict else value < low)
    ):
        sign = ">" if strict else ">="
        raise damaged(owner, f"{name} is not a finite number {sign} {low}")
    return float(value)


def check_count(owner, name, value, low=0):
    """``value`` as a Python int ``>= low`` (not a bool)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise damaged(owner, f"{name} is not an integer")
    if int(value) < low:
        raise damaged(owner, f"{name} = {int(value)} is below {low}")
    return int(value)


__all__ = [
    "EVIDENT_LABEL_PAIRS",
    "check_array_state",
    "check_binary_labels",
    "evident_positive",
    "is_soft_labels",
    "check_count",
    "check_real",
    "check_cell_ids",
    "is_dataframe",
    "other_columns",
    "take_rows",
    "check_confidence",
    "check_confidence_kind",
    "check_finite",
    "check_frame_columns",
    "check_n_bins",
    "check_unit_interval",
    "check_weights",
    "native",
    "encode_binary_labels",
    "fit_binary_labels",
    "require_labels",
    "column_names",
    "damaged",
    "confidence_position",
    "join_confidence_features",
    "split_confidence_features",
    "validate_confidence_data",
]


def fitted_float_array(estimator, X, dtypes=(np.float64,)):
    """``X`` itself when ``validate_data(estimator, X, reset=False)`` would
    return it unchanged, else ``None`` (then call ``validate_data``).

    The cheap path of prediction on small batches: a 2-D float ndarray with
    at least one row, the fitted number of columns, no fitted feature names
    (whose absence in ``X`` scikit-learn warns about) and only finite values
    is exactly what scikit-learn's checks accept as it is. Anything else,
    including every input they would refuse, takes the full checks and their
    messages.
    """
    if (
        type(X) is np.ndarray
        and X.ndim == 2
        and X.dtype in dtypes
        and X.shape[0] > 0
        and X.shape[1] == getattr(estimator, "n_features_in_", -1)
        and not hasattr(estimator, "feature_names_in_")
        and _all_finite(X)
    ):
        return X
    return None


def _all_finite(X):
    """``np.isfinite(X).all()`` without an ``X``-sized mask: the sum is
    finite when every value is (scikit-learn's own fast check); only when it
    is not (a NaN or inf, or an overflow of finite values) are the rows
    checked, a block at a time."""
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.add.reduce(X, axis=None)):
            return True
    step = max(1, (1 << 20) // max(X.shape[1], 1))
    return all(np.isfinite(X[a : a + step]).all() for a in range(0, X.shape[0], step))
