# SPDX-License-Identifier: MIT
"""Shared estimator glue for the binary "is this answer correct" calibrators.

- :class:`_BinaryCalibratorMixin`: ``predict_proba`` / ``predict`` from one
  ``_calibrated(X)`` (UMDBinner, ScalingBinningCalibrator, PlattScaler and the
  group calibrators);
- :class:`_GroupCalibratorMixin`: the template ``fit`` of every calibrator on
  ``X = [confidence | partition features]`` (BetaBinningCalibrator,
  ScalingBetaBinningCalibrator, HierarchicalLogisticScaler);
- :func:`resolve_n_bins`: the bin-count rule every binning calibrator shares;
- :func:`calibrator_input` and :func:`smooth_proba`: what a meta-estimator
  (``CalibratedClassifier``) needs to know about a calibrator, declared by
  the calibrator's class rather than looked up in a list of classes.
"""

import warnings
from inspect import signature
from numbers import Integral
from typing import NamedTuple

import numpy as np
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.utils.validation import check_is_fitted

from ._cells import fit_supervised, is_supervised, supervised_step
from ._compat import _fit_context, _num_samples, validate_data
from ._docstrings import fill_doc
from ._groups import check_groups
from ._random import seed_inner
from ._state import Array, Custom, Int, StateChecked, check_column, check_composite
from ._validation import (
    MAX_COUNT_TOTAL,
    MAX_DENSE_BINS,
    check_array_state,
    check_cell_ids,
    check_confidence,
    check_frame_columns,
    check_real,
    check_weights,
    column_names,
    confidence_position,
    damaged,
    fit_binary_labels,
    fitted_float_array,
    is_dataframe,
    missing_values_message,
    other_columns,
    require_labels,
    split_confidence_features,
    take_rows,
    validate_confidence_data,
)


def check_logit_eps(owner, value):
    """A rebuilt ``logit_eps_``: two clips in ``(0, 0.5]`` (see
    :func:`~sklearn_betacal._kernels._scaling.data_logit_eps`)."""
    eps = check_array_state(owner, "logit_eps_", value, "f", (2,))
    if np.any((eps <= 0) | (eps > 0.5)):
        raise damaged(owner, "logit_eps_ lies outside (0, 0.5]")
    return eps


def _check_steps(owner, name, steps, start, values, *, gaps, keys):
    """One stacked step function of ``len(start) - 1`` tables: ``steps``
    sorted within each table (prediction searches them), ``start`` the
    tables' offsets into it, one more value than steps per table, each in
    [0, 1] (NaN where ``gaps``: the lookup's exact-path markers)."""
    steps_key, start_key, values_key = (f"{name}[{k!r}]" for k in keys)
    n = steps.shape[0]
    if start.shape[0] < 2 or start[0] != 0 or start[-1] != n:
        raise damaged(owner, f"{start_key} does not span {steps_key}")
    if np.any(np.diff(start) < 0):
        raise damaged(owner, f"{start_key} decreases")
    n_tables = start.shape[0] - 1
    if values.shape[0] != n + n_tables:
        raise damaged(
            owner,
            f"{values_key} has shape {values.shape}, expected ({n + n_tables},) "
            "(one more value than steps per table)",
        )
    inner = np.ones(max(n - 1, 0), dtype=bool)
    cuts = start[1:-1]
    inner[cuts[(cuts > 0) & (cuts < n)] - 1] = False
    if np.any(np.diff(steps)[inner] < 0):
        raise damaged(owner, f"{steps_key}: edges are not sorted within a table")
    known = values[~np.isnan(values)] if gaps else values
    if np.any((known < 0) | (known > 1)):
        raise damaged(owner, f"{values_key}: values lie outside [0, 1]")


def check_binning_tables(owner, name, table, *, stacked):
    """A rebuilt UMD binning (``UMDTable._asdict()``, or ``CellTables._asdict()``
    when ``stacked``) whose arrays prediction reads unchecked: NaN or values
    outside [0, 1] were returned as probabilities, edges out of order put
    rows in the wrong bin, short arrays raised IndexError. Returns the number
    of tables."""
    keys = {"edges", "values", "counts", "delta", "lookup_edges", "lookup_values"}
    if stacked:
        keys |= {"edge_start", "lookup_start"}
    if not isinstance(table, dict) or set(table) != keys:
        raise damaged(owner, f"{name} is not a binning table's dict of arrays")
    check_real(owner, f"{name}: delta", table["delta"], low=0, strict=False)

    def arr(key, kind="f", finite=True):
        name_key = f"{name}[{key!r}]"
        return check_array_state(
            owner, name_key, table[key], kind, (None,), finite=finite
        )

    edges, values = arr("edges"), arr("values")
    start = arr("edge_start", "i") if stacked else np.array([0, edges.shape[0]])
    _check_steps(
        owner,
        name,
        edges,
        start,
        values,
        gaps=False,
        keys=("edges", "edge_start", "values"),
    )
    counts = arr("counts")
    if counts.shape != values.shape or np.any(counts < 0):
        raise damaged(owner, f"{name}: counts are not one weight >= 0 per bin")
    lookup = ["lookup_edges", "lookup_values"] + (["lookup_start"] if stacked else [])
    given = [table[key] is not None for key in lookup]
    if any(given) and not all(given):
        raise damaged(owner, f"{name}: the raw-score lookup is incomplete")
    if all(given):
        steps = arr("lookup_edges")
        lstart = arr("lookup_start", "i") if stacked else np.array([0, steps.shape[0]])
        if lstart.shape != start.shape:
            raise damaged(owner, f"{name}: the lookup has another number of tables")
        lvalues = arr("lookup_values", finite=False)
        if np.any(np.isinf(lvalues)):
            raise damaged(owner, f"{name}: lookup values are infinite")
        _check_steps(
            owner,
            name,
            steps,
            lstart,
            lvalues,
            gaps=True,
            keys=("lookup_edges", "lookup_start", "lookup_values"),
        )
    return start.shape[0] - 1


# -- the fitted-state specs the calibrators share (see ``_state``) ------------


def _same_as_table(owner, state):
    """The public bin arrays are the table's (prediction reads the table)."""
    table = state["_table"]
    if state["n_bins_"] != table["values"].shape[0]:
        raise damaged(owner, "n_bins_ is not the table's number of bins")
    for name, key in (("bin_edges_", "edges"), ("bin_values_", "values"),
                      ("bin_counts_", "counts")):  # fmt: skip
        if not np.array_equal(state[name], table[key]):
            raise damaged(owner, f"{name} is not the table's {key!r}")


#: The fitted state of a confidence binner (UMDBinner, S-B).
BINNER_STATE = {
    "n_bins_": Int(low=1),
    "bin_edges_": Array("f", (None,)),
    "bin_values_": Array("f", (None,), low=0, high=1),
    "bin_counts_": Array("f", (None,), low=0),
}
BINNER_RULES = (_same_as_table,)


def logit_eps_spec(**kw):
    """``logit_eps_``: two clips in ``(0, 0.5]``."""
    return Custom(lambda owner, name, value, state: check_logit_eps(owner, value), **kw)


def table_spec(*, stacked, **kw):
    """A UMD binning table's dict (:func:`check_binning_tables`)."""

    def check(owner, name, value, state):
        check_binning_tables(owner, name, value, stacked=stacked)
        return value

    return Custom(check, **kw)


def _partitioner_type(state):
    """The class ``partitioner_`` must have: the parameter's (a
    ``FrozenEstimator`` is used as it is; ``None``: the kd-tree)."""
    param = state["partitioner"]
    if param is None:
        from ._partition import KDTreePartitioner

        return KDTreePartitioner
    return type(param)


def _check_partitioner(owner, name, value, state):
    want = _partitioner_type(state)
    if type(value) is not want:
        raise damaged(
            owner,
            f"{name} is a {type(value).__name__}, but the partitioner "
            f"parameter makes a {want.__name__}",
        )
    if not isinstance(value, str) and not callable(getattr(value, "transform", None)):
        raise damaged(owner, f"{name} cannot transform")
    check_composite(value)
    return value


#: ``partitioner_``: fitted from (and of the class of) ``partitioner``.
PARTITIONER = Custom(_check_partitioner)


def partitioner_cells(state):
    """The number of cells of the fitted partitioner, when it states one."""
    part = state.get("partitioner_")
    part = getattr(part, "estimator", part)  # FrozenEstimator
    steps = getattr(part, "steps", None)
    if isinstance(steps, list) and steps:
        part = steps[-1][1] if isinstance(steps[-1], tuple) else None
    n = getattr(part, "n_cells_", None)
    return n if isinstance(n, int) else None


def _last_step(part):
    part = getattr(part, "estimator", part)  # FrozenEstimator
    steps = getattr(part, "steps", None)
    if isinstance(steps, list) and steps and isinstance(steps[-1], tuple):
        return steps[0][1], steps[-1][1]
    return part, part


def check_group_columns(owner, state):
    """A group calibrator's ``X`` is ``[confidence | partition features]``:
    the confidence column is a fitted column, and the fitted partitioner
    reads the other ``n_features_in_ - 1`` (a partitioner of another width
    failed at predict)."""
    check_column(owner, "confidence_column", state["confidence_column"], state)
    first, _ = _last_step(state.get("partitioner_"))
    width = getattr(first, "n_features_in_", None)
    if isinstance(width, int) and width != state["n_features_in_"] - 1:
        want = state["n_features_in_"] - 1
        raise damaged(owner, f"partitioner_ reads {width} features, not {want}")


def check_cell_range(owner, name, ids, state):
    """Cell ids below the fitted partitioner's number of cells."""
    n = partitioner_cells(state)
    if n is not None and ids.size and (ids.min() < 0 or ids.max() >= n):
        raise damaged(owner, f"{name} names a cell outside 0 .. {n - 1}")


#: Rows per block when a group calibrator predicts (``predict_proba``,
#: ``predict``, ``apply``) or computes cells: the temporaries of one block
#: exist at a time, so the extra memory beyond the returned array is bounded
#: independently of the number of rows (a few MiB).
PREDICT_BLOCK_ROWS = 65_536


def positive_index(estimator):
    """Column of ``estimator.classes_`` that the calibrated probability is for.

    ``classes_`` is ``[negative, positive]`` (see
    :func:`~sklearn_betacal._validation.encode_binary_labels`), so this is 1
    for every model fitted by this version.
    """
    pos_label = getattr(estimator, "pos_label", None)
    if pos_label is None:
        return 1
    return int(np.flatnonzero(estimator.classes_ == pos_label)[0])


def binary_proba(estimator, p):
    """``(n, 2)`` probabilities in ``classes_`` order from ``P(positive) = p``."""
    pos = positive_index(estimator)
    proba = np.empty((p.shape[0], 2))
    proba[:, pos] = p
    proba[:, 1 - pos] = 1.0 - p
    return proba


def binary_predict(estimator, p):
    """The positive label where ``p > 0.5``, the other one elsewhere."""
    pos = positive_index(estimator)
    return estimator.classes_[np.where(p > 0.5, pos, 1 - pos)]


def calibrator_input(estimator):
    """What ``X`` a calibrator takes: ``"confidence"``, ``"group"`` or None.

    Declared by the calibrator's class in ``_calibrator_input``:
    ``"confidence"`` -- one confidence (or score) per row; ``"group"`` --
    ``X = [confidence | partition features]``, with a ``confidence_column``
    parameter. ``None``: not a calibrator of this package's kind (e.g. a
    plain classifier). Read from the class, so that a ``FrozenEstimator``,
    which forwards attribute lookups, is not taken for the calibrator it
    wraps.
    """
    return getattr(type(estimator), "_calibrator_input", None)


def smooth_proba(estimator):
    """Whether a calibrator's probabilities are smooth in its input.

    Declared by the class in ``_smooth_proba``: true for the scalers, whose
    log-odds are finite; a binning calibrator's probabilities are piecewise
    constant and often exactly 0 or 1.
    """
    return bool(getattr(type(estimator), "_smooth_proba", False))


class _BinaryCalibratorMixin(StateChecked):
    """``predict_proba`` / ``predict`` from a ``_calibrated(X)`` method.

    A subclass implements ``_calibrated(X)``: the calibrated probability of
    the positive class (``pos_label``, by default ``classes_[1]``: "the
    answer is correct"), one value per row of ``X`` (validated there).
    """

    #: see :func:`calibrator_input` and :func:`smooth_proba`
    _calibrator_input = "confidence"
    _smooth_proba = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # binary by design; a calibrator of one confidence takes a 1-D X
        tags.classifier_tags.multi_class = False
        tags.input_tags.one_d_array = self._calibrator_input == "confidence"
        return tags

    @fill_doc
    def predict_proba(self, X):
        """Calibrated probability of each class.

        %(calibrator_X)s
        proba : ndarray of shape (n_samples, 2)
            Columns in the order of ``classes_``: the calibrated probability
            of the positive class (``pos_label``, by default ``classes_[1]``)
            and its complement.
        """
        check_is_fitted(self)
        return binary_proba(self, self._calibrated(X))

    @fill_doc
    def predict(self, X):
        """Predict the positive class where its calibrated probability exceeds 0.5.

        %(calibrator_X)s
        y_pred : ndarray of shape (n_samples,)
            Elements of ``classes_``.
        """
        check_is_fitted(self)
        return binary_predict(self, self._calibrated(X))


def confidence_fit_rows(estimator, X, y, sample_weight, groups=None):
    """``(h, y, sample_weight)`` for the fit of a calibrator of one confidence.

    The fit-time input side of UMD binning and scaling-binning (the group
    calibrators have the template ``fit`` of :class:`_GroupCalibratorMixin`):
    labels required, ``X`` validated as confidences on the scale of the
    estimator's ``input`` (``classes_`` set), weights checked as frequency
    weights, and the rows of zero weight dropped, so that a zero weight is
    exactly leaving the row out. ``sample_weight`` stays ``None`` when none
    was given. Given question ``groups`` (a calibrator that splits its rows),
    returns ``(h, y, sample_weight, codes)``: the kept rows' question codes
    (:func:`~sklearn_betacal._groups.check_groups`).
    """
    require_labels(estimator, y)
    h, y = validate_confidence_data(estimator, X, y, reset=True, input=estimator.input)
    codes = check_groups(groups, h.shape[0], who=type(estimator).__name__)
    sw = None
    if sample_weight is not None:
        sw = check_weights(sample_weight, h.shape[0], max_total=MAX_COUNT_TOTAL)
        keep = sw > 0
        if not keep.all():
            h, y, sw = h[keep], y[keep], sw[keep]
            codes = None if codes is None else codes[keep]
    return (h, y, sw) if groups is None else (h, y, sw, codes)


#: Number of bins when neither ``n_bins`` nor ``points_per_bin`` is given.
DEFAULT_N_BINS = 15


def resolve_n_bins(n_bins, points_per_bin, total_weight, *, who, n_rows=None):
    """Number of bins ``B`` for a calibration set of total weight ``N``.

    ``n_bins`` and ``points_per_bin`` are mutually exclusive; with
    ``points_per_bin = b`` the paper's ``B = floor(N / b)`` (Alg. 1, line 1)
    is used; with neither, ``DEFAULT_N_BINS``. ``B`` is then reduced, with a
    ``UserWarning``, to ``max(1, floor(N / 2))`` when ``N < 2B``: Thm A.1
    needs ``N >= 2B``, which is also what keeps every bin non-empty once the
    edge points are left out.

    ``B`` never exceeds :func:`max_bins` of ``n_rows`` (the rows with
    positive weight): weights are frequency weights, but the copies of one
    row share its confidence, so bins far beyond one per row separate nothing
    and only cost memory (400 rows of weight 1e6 with ``b = 20`` asked for
    2e7 bins, 2.8 GB). Reducing ``B`` there warns.
    """
    if n_bins is not None and points_per_bin is not None:
        raise ValueError(
            f"{who}: n_bins={n_bins} and points_per_bin={points_per_bin} are "
            "mutually exclusive; set one of them to None."
        )
    if points_per_bin is not None:
        B = int(total_weight // points_per_bin)
        if B < 1:
            warnings.warn(
                f"{who}: only {total_weight:g} calibration point(s) for "
                f"points_per_bin={points_per_bin}; using a single bin.",
                UserWarning,
                stacklevel=4,
            )
            B = 1
    else:
        B = DEFAULT_N_BINS if n_bins is None else int(n_bins)
    if total_weight < 2 * B and B > 1:
        reduced = max(1, int(total_weight // 2))
        warnings.warn(
            f"{who}: {B} bins need at least {2 * B} calibration points (the "
            f"guarantee of Thm A.1 assumes N >= 2B); got {total_weight:g}. "
            f"Using {reduced} bin(s) instead.",
            UserWarning,
            stacklevel=4,
        )
        B = reduced
    if n_rows is not None and B > max_bins(n_rows):
        warnings.warn(
            f"{who}: {B} bins for a total weight of {total_weight:g} but only "
            f"{n_rows} row(s) with positive weight; bins beyond one per row "
            f"cannot separate confidences. Using {max_bins(n_rows)} bin(s).",
            UserWarning,
            stacklevel=4,
        )
        B = max_bins(n_rows)
    return B


def max_bins(n_rows, n_rows_total=None):
    """Most bins worth allocating for ``n_rows`` rows (of ``n_rows_total``).

    ``max(n_rows, MAX_DENSE_BINS * n_rows / n_rows_total)``: one bin per row,
    and never fewer than a share of ``MAX_DENSE_BINS`` proportional to the
    rows, so the cap never binds for unit or moderate frequency weights
    (where an integer weight must equal repeating the row) and the total over
    all cells of a partition stays below ``n_rows_total + MAX_DENSE_BINS``.
    """
    n_rows = int(n_rows)
    n_total = n_rows if n_rows_total is None else int(n_rows_total)
    return max(n_rows, MAX_DENSE_BINS * n_rows // max(n_total, 1), 1)


class FitPlan(NamedTuple):
    """What a group calibrator's ``fit`` settles before the partitioner is fitted.

    ``grow_rows``: the rows the partitioner is fitted on (a slice or
    positions); ``bin_rows``: the rows the calibrator is then fitted on
    (``None``: all of them; else the ``bin_rows`` of a supervised
    partitioner's ``honest_split``); ``lent``: the keywords the calibrator
    lends a supervised partitioner's ``fit`` (e.g. ``points_per_bin``, by
    which a learned tree sizes its leaves), from
    :meth:`_GroupCalibratorMixin._partitioner_lends`.
    """

    grow_rows: object
    bin_rows: object
    lent: dict


class FitRows(NamedTuple):
    """The rows a group calibrator's ``_fit`` is handed, without a copy of ``X``.

    ``X``: the caller's input, as given (never copied whole); ``rows``: the
    positions in ``X`` of the kept rows (``None``: all of them; else after
    dropping zero weights and the partitioner's honest split); ``Z``: the
    partition features of the kept rows (what the partitioner read).
    ``take(idx)`` returns rows ``idx`` of the kept rows of ``X`` (one copy of
    those rows only), for a calibrator whose inner estimator reads ``X`` as
    the user gave it (a user scaler).
    """

    X: object
    rows: object
    Z: object

    def take(self, idx):
        """Kept rows ``idx`` of ``X`` (positions among the kept rows)."""
        return take_rows(self.X, idx if self.rows is None else self.rows[idx])


class _GroupCalibratorMixin(_BinaryCalibratorMixin):
    """Template ``fit`` for calibrators on ``X = [confidence | features]``.

    **The group-calibrator contract** (the one place it is written; the
    docs page :ref:`contributing` points here). Used by
    BetaBinningCalibrator, ScalingBetaBinningCalibrator and
    HierarchicalLogisticScaler, and meant for anything new that calibrates
    within the cells of a partition. A new calibrator writes two hooks:

    - ``_fit(fit_rows, h, y, sample_weight, cells) -> self`` (required):
      ``h`` the kept rows' float64 confidences, ``y`` their 0/1 labels as
      float64, ``sample_weight`` their weights (``None`` when none were
      given; every weight positive), ``cells`` their int64 cell ids (``-1``:
      outside every cell), and ``fit_rows`` a :class:`FitRows`: the kept
      rows' partition features ``fit_rows.Z`` and, only for an inner
      estimator that must read ``X`` as the user gave it,
      ``fit_rows.take(idx)`` -- ``X`` itself is never copied whole. The plan
      (which rows were kept: zero weights dropped, a supervised
      partitioner's honest split) is settled before ``_fit`` is called, in
      a :class:`FitPlan`; ``_fit`` sees only its result.
    - ``_calibrated(X) -> (n,) float64`` (see :class:`_BinaryCalibratorMixin`;
      :meth:`_blockwise` runs it block by block over ``(h, Z)``), or its
      own ``predict_proba`` / ``predict``.

    Optional hooks, with working defaults: ``_partitioner_lends(n_rows,
    sample_weight)`` (keywords lent to a supervised partitioner's ``fit``;
    a binning calibrator lends ``points_per_bin``), ``_fit_cells(Z)`` (the
    fit's cell ids, e.g. compacted to int32). A binning calibrator
    subclasses ``_GroupBinningBase`` (``_group_binning.py``) instead, whose
    ``_fit`` calls ``_fit_binning`` and which predicts through
    ``_row_predictor`` / ``_binned_score`` (override those only to bin
    another score than the confidence, as the feature-aware scaler does).
    Fitted state is plain arrays (and dicts of them), checked on load in
    ``__setstate__``. The partitioner side is the protocol of
    :mod:`sklearn_betacal._partition._base`.

    ``fit`` runs the same steps for all:

    1. validate the weights, then ``X`` and ``y`` (:meth:`_split_X`): the
       confidence column ``h`` becomes a float64 vector, the partition
       features ``Z`` keep their names and dtypes (a DataFrame stays one, so
       a group column of strings or integers is read by name);
    2. drop the rows of zero weight (a zero weight is exactly dropping the
       row, for the partitioner too);
    3. fit the partitioner (:meth:`_fit_partitioner`, see below) and compute
       every row's cell (:meth:`_cells`);
    4. call the subclass's ``_fit(fit_rows, h, y, sample_weight, cells,
       groups=)``: ``sample_weight`` is ``None`` when no weights were given,
       ``groups`` the kept rows' question codes (``None`` when none were
       given; a subclass that splits its rows keeps each question on one
       side, :mod:`~sklearn_betacal._groups`). It returns ``self``.

    A subclass has the parameters ``partitioner``, ``confidence_column`` and
    ``random_state`` (and ``input`` if it takes logits), defines ``_fit`` and
    either ``_calibrated`` (see :class:`_BinaryCalibratorMixin`) or its own
    ``predict_proba`` / ``predict``.

    **The partitioner hook.** ``None`` means ``KDTreePartitioner()``; a
    ``FrozenEstimator`` is used as it is, never refitted (the way to fit the
    partition on rows apart from the calibration rows, as the paper does).
    Otherwise a clone is fitted on the kept rows, every ``random_state``
    left at ``None`` in it seeded from the calibrator's
    (:func:`~sklearn_betacal._random.seed_inner`):

    - unsupervised (the default): ``fit(Z, None)``;
    - supervised -- its tags say it needs ``y``
      (``__sklearn_tags__().target_tags.required``, scikit-learn's own marker
      of a supervised estimator): ``fit(Z, y, confidence=h,
      sample_weight=w, points_per_bin=b)``, each keyword only if its
      ``fit`` takes it. If it also has ``honest_split(n_rows, random_state)
      -> (grow_rows, bin_rows)``, it is fitted on ``grow_rows`` only and the
      calibrator (step 4) sees only ``bin_rows``: the cells are fixed before
      the rows they bin are looked at (Thm 3.1 conditions on the partition).
      The split and what the calibrator lends are settled first, in a
      :class:`FitPlan` (:meth:`_fit_plan`): each calibrator says what it
      lends in :meth:`_partitioner_lends` (a binning calibrator its ``b``,
      ``"auto"`` resolved on the rows to be binned), the base reads no
      parameter of it by name.
    - a :class:`~sklearn.pipeline.Pipeline` is supervised when its last step
      is (e.g. ``make_pipeline(TextEmbedder(...),
      CalibrationTreePartitioner())``): the keywords go to that step by name
      and its ``honest_split`` is used.
    """

    _calibrator_input = "group"  # see calibrator_input
    #: ``max_total`` passed to :func:`check_weights` (binning counts copies).
    _weights_max_total = None

    # ------------------------------------------------------------------ input
    def _split_X(self, X, y=None, *, reset):
        """Validate ``X`` (and ``y``); return ``(h, Z)`` or ``(h, Z, y)``.

        ``h`` is the float64 confidence vector, ``Z`` the partition features:
        the other columns, as a DataFrame when ``X`` is one (select rows with
        :func:`_take_rows`), else a 2-D array; ``y`` 1.0 for the positive
        class, else 0.0 (``classes_`` set here: labels of any two classes,
        see :func:`~sklearn_betacal._validation.fit_binary_labels`).
        """
        if y is None:
            # predicting: a float ndarray passes scikit-learn's checks as it is
            X_arr = None if reset else fitted_float_array(self, X)
            if X_arr is None:
                X_arr = self._validate_X(X, reset=reset)
        else:
            X_arr, y = self._validate_X(X, y, reset=reset)
            y = fit_binary_labels(self, y)
        h, Z = self._split_block(X, X_arr, 0, X_arr.shape[0])
        return (h, Z) if y is None else (h, Z, y)

    def _validate_X(self, X, y=None, *, reset):
        """``validate_data`` of ``X`` (and ``y``), any dtype, >= 2 columns.

        The dtypes are kept (an object column reaches :func:`check_confidence`
        as it is, where numpy's conversion would read ``True`` as 1.0).
        """
        idx = self._frame_confidence_index(X) if is_dataframe(X) else None
        if idx is not None:
            check_frame_columns(X, idx)
        kwargs = {"reset": reset, "dtype": None, "ensure_min_features": 1}
        try:
            if y is None:
                X_arr = validate_data(self, X, **kwargs)
            else:
                X_arr, y = validate_data(self, X, y, **kwargs)
        except (ValueError, TypeError) as exc:
            # TypeError: pandas' NA (a nullable string column) has no truth
            # value, and scikit-learn's NaN check of object arrays tests one
            if "contains NaN" not in str(exc) and "NA is ambiguous" not in str(exc):
                raise
            raise ValueError(missing_values_message(X, type(self).__name__)) from None
        if X_arr.dtype == object:
            # older scikit-learn (1.7, the floor) lets None through in object
            # columns: a missing group was read as a group of its own type
            import pandas as pd

            if pd.isna(X_arr).any():
                raise ValueError(missing_values_message(X, type(self).__name__))
        if X_arr.shape[1] == 1:
            raise ValueError(
                f"X has 1 feature(s), only the confidence column; "
                f"{type(self).__name__} needs the confidence plus at least one "
                "partition feature. For calibration without a partition use "
                "UMDBinner."
            )
        return X_arr if y is None else (X_arr, y)

    def _split_block(self, X, X_arr, lo, hi):
        """``(h, Z)`` of rows ``lo:hi``: checked confidences, partition features."""
        idx = self._confidence_index()
        whole = lo == 0 and hi == X_arr.shape[0]
        rows = X_arr if whole else X_arr[lo:hi]
        if idx in (0, -rows.shape[1]):
            # the common layout: a view of the features, no copy of them
            h, Z = rows[:, 0], rows[:, 1:]
        else:
            h, Z = split_confidence_features(rows, idx)
        if is_dataframe(X):
            # keep the partition features' names and dtypes (a group column
            # read by name, a partitioner fitted on a DataFrame), for pandas
            # and polars alike
            Z = other_columns(X if whole else take_rows(X, slice(lo, hi)), rows, idx)
        return self._check_confidence(h, frame=is_dataframe(X)), Z

    def _frame_confidence_index(self, X):
        """Position of the confidence column in the DataFrame ``X`` (``None``
        when ``confidence_column`` names none of its columns: reported later)."""
        col = self.confidence_column
        names = column_names(X)
        if not isinstance(col, Integral) and col not in names:
            return None
        return confidence_position(col, names)

    def _confidence_index(self):
        """Position of the confidence column, resolving a column name."""
        return confidence_position(
            self.confidence_column, getattr(self, "feature_names_in_", None)
        )

    def _check_confidence(self, h, *, frame=False):
        """The confidence column as float64: probabilities in ``[0, 1]``, or
        any finite score when the estimator's ``input`` is ``"logit"``
        (``frame``: ``X`` is a DataFrame, whose column is named in errors)."""
        names = getattr(self, "feature_names_in_", None) if frame else None
        if names is not None:
            name = f"X column {names[self._confidence_index()]!r}"
        else:
            name = f"confidence column (confidence_column={self.confidence_column!r})"
        kind = getattr(self, "input", "probability")
        return check_confidence(h, input=kind, name=name)

    # -------------------------------------------------------------- partition
    def _fit_partitioner(self, Z, y=None, h=None, sample_weight=None, groups=None):
        """Fit the partitioner (see the class docstring); set ``partitioner_``.

        Returns the rows the calibrator is fitted on: ``None`` for all of
        them, else the ``bin_rows`` of a supervised partitioner's
        ``honest_split`` (``groups``: the rows' question codes, kept whole
        on one side of it and passed to the partitioner's ``fit``).
        """
        if isinstance(self.partitioner, FrozenEstimator):
            self.partitioner_ = self.partitioner
            return None
        if self.partitioner is None:
            from ._partition import KDTreePartitioner

            part = KDTreePartitioner()
        else:
            part = clone(self.partitioner)
        # the calibrator's seed reaches every random_state left unset inside
        # (a learned tree's folds and ties, KMeans, a text embedder's SVD)
        seed_inner(part, getattr(self, "random_state", None), name="partitioner")
        # a Pipeline (e.g. a text embedder, then a learned tree) is supervised
        # when its last step is; that step gets the keywords, by name
        if y is None or not is_supervised(part):
            # y positionally: FrozenEstimator-like wrappers require it
            self.partitioner_ = part.fit(Z, None)
            return None
        plan = self._fit_plan(part, h.shape[0], sample_weight, groups)
        grow = plan.grow_rows
        # labels as 0.0 / 1.0 (fit passes them as bool)
        self.partitioner_ = fit_supervised(
            part,
            take_rows(Z, grow),
            np.asarray(y[grow], dtype=np.float64),
            confidence=None if h is None else h[grow],
            sample_weight=None if sample_weight is None else sample_weight[grow],
            groups=None if groups is None else groups[grow],
            **plan.lent,
        )
        return plan.bin_rows

    def _fit_plan(self, part, n_rows, sample_weight, groups=None):
        """The :class:`FitPlan` of a supervised partitioner ``part`` on
        ``n_rows`` kept rows (weights ``sample_weight``, or ``None``;
        question codes ``groups``, or ``None``)."""
        final, _ = supervised_step(part)
        grow, rows = slice(None), None
        if hasattr(final, "honest_split"):
            seed = getattr(self, "random_state", None)
            if groups is None:
                grow, rows = final.honest_split(n_rows, random_state=seed)
            elif "groups" in signature(final.honest_split).parameters:
                grow, rows = final.honest_split(
                    n_rows, random_state=seed, groups=groups
                )
            else:
                raise TypeError(
                    f"{type(self).__name__} was given question groups, but the "
                    f"honest_split of its {type(final).__name__} does not take "
                    "them (honest_split(n_rows, random_state, groups=None)), so "
                    "a question could straddle the split. Give it a groups "
                    "parameter, or fit without groups."
                )
            if len(grow) == 0 or len(rows) == 0:
                # else the partitioner's validation said "Found array with 0
                # sample(s)" of rows the user never passed
                raise ValueError(
                    f"{type(self).__name__} grows its {type(final).__name__} on "
                    "part of its rows and bins the others (the honest split), "
                    f"but it has {n_rows} row(s) of non-zero weight, too few to "
                    "give both parts one. Give more rows, or pass a partitioner "
                    "fitted on other rows as FrozenEstimator(partitioner)."
                )
        n_bin = n_rows if rows is None else len(rows)
        w_bin = None
        if sample_weight is not None:
            w_bin = sample_weight if rows is None else sample_weight[rows]
        return FitPlan(grow, rows, dict(self._partitioner_lends(n_bin, w_bin)))

    def _partitioner_lends(self, n_rows, sample_weight):
        """Keywords lent to a supervised partitioner's ``fit``: none here.

        ``n_rows`` and ``sample_weight`` (``None``: unit weights) are the
        rows the calibrator will be fitted on (after an honest split). A
        binning calibrator lends ``points_per_bin`` (see
        ``_group_binning``); the confidences and weights are passed anyway.
        """
        return {}

    def _cells(self, Z):
        """Cell id of every row of ``Z``: ``partitioner_.transform``, checked.

        More than ``PREDICT_BLOCK_ROWS`` rows are transformed block by block,
        so the partitioner's temporaries never cover all rows at once.
        """
        who = f"partitioner ({type(self.partitioner_).__name__})"
        n = Z.shape[0]
        if n <= PREDICT_BLOCK_ROWS:
            return check_cell_ids(self.partitioner_.transform(Z), n, who=who)
        ids = np.empty(n, dtype=np.int64)
        for lo in range(0, n, PREDICT_BLOCK_ROWS):
            hi = min(lo + PREDICT_BLOCK_ROWS, n)
            ids[lo:hi] = check_cell_ids(
                self.partitioner_.transform(take_rows(Z, slice(lo, hi))),
                hi - lo,
                who=who,
            )
        return ids

    # ---------------------------------------------------------------- fitting
    @_fit_context(
        # the partitioner (and any inner estimator) is validated when fitted
        prefer_skip_nested_validation=False
    )
    def fit(self, X, y, sample_weight=None, groups=None):
        """Fit the partitioner, then the calibration within its cells.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1 + n_partition_features)
            Confidence column (see ``confidence_column``) plus the partition
            features.
        y : array-like of shape (n_samples,)
            1 if the answer was correct, else 0 (or bool).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative frequency weights; a zero weight is exactly dropping
            the row (see Notes).
        groups : array-like of shape (n_samples,), default=None
            The question of every row (several answers per question): every
            internal split -- a learned partitioner's honest split and its
            folds, a scaler's D1/D2 split or ``cv`` folds -- keeps each
            question on one side. With metadata routing, request it with
            ``set_fit_request(groups=True)``; see :ref:`groups`.

        Returns
        -------
        self : object
            Fitted calibrator.
        """
        require_labels(self, y)
        # weights first: their errors do not depend on the data's values
        sw = None
        if sample_weight is not None:
            sw = check_weights(
                sample_weight, _num_samples(X), max_total=self._weights_max_total
            )
        h, Z, y = self._split_X(X, y, reset=True)
        groups = check_groups(groups, h.shape[0], who=type(self).__name__)
        # the 0/1 labels kept as bool while the partitioner is fitted (1 byte
        # per row instead of 8 next to the partitioner's own memory); soft
        # labels (a judge's probability) stay as they are
        soft = bool(np.any((y != 0.0) & (y != 1.0)))
        positive = y if soft else y > 0.5
        del y
        rows = None
        if sw is not None and not np.all(sw > 0):
            rows = np.flatnonzero(sw > 0)  # check_weights rejects all-zero
            h, Z, sw = h[rows], take_rows(Z, rows), sw[rows]
            positive = positive[rows]
            groups = None if groups is None else groups[rows]
        bin_rows = self._fit_partitioner(Z, positive, h, sw, groups)
        if bin_rows is not None:
            h, Z, positive = h[bin_rows], take_rows(Z, bin_rows), positive[bin_rows]
            sw = None if sw is None else sw[bin_rows]
            groups = None if groups is None else groups[bin_rows]
            rows = bin_rows if rows is None else rows[bin_rows]
        y = positive.astype(np.float64, copy=not soft)
        del positive
        cells = self._fit_cells(Z)
        return self._fit(FitRows(X, rows, Z), h, y, sw, cells, groups=groups)

    def _fit_cells(self, Z):
        """Cell ids of the fit rows: ``_cells``, which a subclass may compact."""
        return self._cells(Z)

    # ------------------------------------------------------------- prediction
    def _blocks(self, X):
        """Validate ``X`` once, then yield ``(lo, hi, n, h, Z)`` per row block.

        Blocks of ``PREDICT_BLOCK_ROWS`` rows bound the memory of prediction:
        the confidence column, the partition features and every temporary
        of the partitioner and of the calibrator exist for one block at a
        time.
        """
        X_arr = fitted_float_array(self, X)  # the cheap path of a float ndarray
        if X_arr is None:
            X_arr = self._validate_X(X, reset=False)
        n = X_arr.shape[0]
        for lo in range(0, n, PREDICT_BLOCK_ROWS):
            hi = min(lo + PREDICT_BLOCK_ROWS, n)
            h, Z = self._split_block(X, X_arr, lo, hi)
            yield lo, hi, n, h, Z

    def _blockwise(self, X, shape, dtype, write):
        """One output array; ``write(h, Z, out[lo:hi])`` fills it block by block."""
        out = None
        for lo, hi, n, h, Z in self._blocks(X):
            if out is None:
                out = np.empty((n, *shape), dtype=dtype)
            write(h, Z, out[lo:hi])
        return out

    @fill_doc
    def apply(self, X):
        """Cell id of every row (the partition beta), as a 1-D array.

        %(group_X)s
        cells : ndarray of shape (n_samples,), dtype int64
            The partitioner's cell id; ``-1`` for rows outside every cell.
        """
        check_is_fitted(self)

        def write(h, Z, out):
            out[:] = self._cells(Z)

        return self._blockwise(X, (), np.int64, write)
