# SPDX-License-Identifier: MIT
"""BetaBinningCalibrator: one UMD histogram binning per partition cell (BB).

Estimator glue for the beta-binning scheme of the paper (Sec. 3.1, Alg. 1
and 2): a partitioner maps the partition features of each row to a cell
``s = beta(q, a)``; a root UMD calibrator is fitted on all rows and one UMD
calibrator per cell on the cell's rows, with ``points_per_bin`` points per
bin. All numerical work is in :mod:`sklearn_betacal._kernels._binning`.

:class:`~sklearn_betacal.ScalingBetaBinningCalibrator` (Alg. 3) subclasses
this estimator and reuses ``_fit_partitioner``, ``_cells``,
``_fit_binning`` and ``_predict_binning`` with proxy targets ``t``.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context, clone
from sklearn.frozen import FrozenEstimator
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data

from ._base import _BinaryCalibratorMixin
from ._kernels._binning import UMDTable, tie_break, umd_fit, umd_predict
from ._umd import max_bins, resolve_n_bins
from ._validation import (
    MAX_COUNT_TOTAL,
    check_binary_labels,
    check_cell_ids,
    check_confidence,
    check_weights,
    require_labels,
    split_confidence_features,
)


def _take_rows(Z, rows):
    """Rows of the partition features ``Z`` (array or DataFrame)."""
    return Z.iloc[rows] if hasattr(Z, "iloc") else Z[rows]


class BetaBinningCalibrator(_BinaryCalibratorMixin, ClassifierMixin, BaseEstimator):
    """Beta-binning (BB): one UMD histogram binning per partition cell.

    The rows of ``X`` are a confidence column plus partition features. A
    partitioner (by default a :class:`~sklearn_betacal.KDTreePartitioner`)
    maps the features to a cell ``s``; UMD histogram binning (Alg. 4) is then
    fitted separately within every cell, with ``B = floor(n_s / b)`` bins for
    a cell of ``n_s`` points, plus a *root* UMD on all rows with ``B =
    floor(N / b)`` bins (Alg. 1). At prediction time a row is calibrated by
    its cell's binning, or by the root one when its cell has none (Alg. 2).
    The result is beta-calibrated: calibrated *within* every cell, not only
    on average (Def. 2.3, Thm 3.1).

    Read more in the :ref:`User Guide <beta_binning>`.

    Parameters
    ----------
    partitioner : transformer or None, default=None
        Maps the partition features to one integer cell id per row
        (``transform`` returning shape ``(n,)`` or ``(n, 1)``; ``-1`` means
        "outside every cell"). It is cloned and fitted on the partition
        features of the calibration rows; pass
        ``sklearn.frozen.FrozenEstimator(fitted)`` to use an already-fitted
        one as is (the paper fits the kd-tree on a separate unlabeled split).
        ``None`` means ``KDTreePartitioner()``.
    points_per_bin : int >= 2 or "auto", default=50
        Minimum number of points per bin ``b``. ``"auto"`` takes the smallest
        ``b`` whose Thm 3.1 bound reaches ``epsilon``
        (:func:`sklearn_betacal.bounds.points_per_bin_for_epsilon` with the
        total sample weight as ``N`` and ``nu = 0``).
    epsilon : float in (0, 1), default=None
        Target calibration error of Thm 3.1; required by, and only used with,
        ``points_per_bin="auto"``.
    alpha : float in (0, 1), default=0.1
        Failure probability of the guarantee, for ``points_per_bin="auto"``.
    confidence_column : int or str, default=0
        Position of the confidence column in ``X``, or its name when ``X`` is
        a DataFrame. The other columns are the partition features, passed to
        the partitioner in their order (as a DataFrame, with their names and
        dtypes, when ``X`` is one).
    delta : float >= 0, default=1e-10
        Randomized tie-breaking of UMD (Gupta & Ramdas, Alg. 2): every
        calibration confidence is nudged to ``(h + U(0, delta)) / (1 +
        delta)`` before binning; ``0`` turns it off. See
        :class:`~sklearn_betacal.UMDBinner`, Notes.
    random_state : int, RandomState instance or None, default=None
        Seeds the tie-breaking nudges. It is not passed to the partitioner,
        which has its own (``partitioner__random_state``).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``[0, 1]``: incorrect, correct.
    partitioner_ : transformer
        The fitted partitioner (the given ``FrozenEstimator`` itself when
        one was passed).
    points_per_bin_ : int
        The ``b`` actually used (resolved from ``"auto"``).
    root_ : UMDTable
        Root calibrator ``G[root]``, fitted on all rows with ``B = floor(N /
        b)`` bins (at least one). A named tuple ``(edges, values, counts,
        delta)``, see :mod:`sklearn_betacal._kernels._binning`.
    cell_tables_ : dict of int to UMDTable
        ``G[s]`` for every cell ``s`` with at least ``2 b`` points (total
        weight), with ``B = floor(n_s / b)`` bins.
    fallback_cells_ : ndarray of int64
        Cells seen in ``fit`` with fewer than ``2 b`` points; their rows are
        calibrated by ``root_``.
    n_cells_fitted_ : int
        ``len(cell_tables_)``.
    n_cells_fallback_ : int
        ``len(fallback_cells_)``.
    n_features_in_ : int
        Number of columns of ``X`` (confidence plus partition features).
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names of ``X``, when it is a DataFrame with string names.

    See Also
    --------
    UMDBinner : The same binning without a partition (``max_depth=0``).
    ScalingBetaBinningCalibrator : Scaling before beta-binning (Alg. 3).
    KDTreePartitioner : The paper's partition of text embeddings.
    GroupColumnPartitioner : A partition from a precomputed column.

    Notes
    -----
    **Guarantee** (Thm 3.1): if the calibration rows are i.i.d., the
    confidences distinct, ``b >= 2`` and every cell has ``n_s >= b`` rows,
    then with probability at least ``1 - alpha`` the calibrator a row gets
    is within ``epsilon = sqrt(log(2N / (b alpha)) / (2 (b - 1)))`` of the
    true accuracy of its bin, in every cell simultaneously.

    **Small cells.** A cell with fewer than ``2 b`` points (total sample
    weight) is not given its own binning: it falls back to the root
    calibrator (the partitioner interface has no notion of a parent cell).
    It is listed in ``fallback_cells_`` and counted in
    ``n_cells_fallback_``; this is never an error. So every per-cell
    calibrator has at least two bins; a cell that is too small to split its
    confidences is better served by the whole-data bins than by one
    constant.

    **Cell -1 and unseen cells.** Rows whose cell id is ``-1`` (outside
    every bounded kd-tree leaf) or a cell that no calibration row fell in
    are calibrated by the root (Alg. 2, line 6). Calibration rows with cell
    ``-1`` only enter the root calibrator.

    **Ties and randomness.** The nudges are drawn once per calibration row,
    in row order, before the rows are split by cell, exactly as
    :class:`~sklearn_betacal.UMDBinner` draws them; a partition with a single
    cell therefore reproduces ``UMDBinner(points_per_bin=b, delta=delta,
    random_state=random_state)`` exactly. Predictions are deterministic.

    **Sample weights** are frequency weights. Zero-weight rows are removed
    before anything else (the partitioner is fitted without them and no
    nudge is drawn for them), so a zero weight is exactly the same as
    dropping the row. The partitioner itself is fitted without the weights
    (a kd-tree median does not take weights), so an integer weight equals
    repeating the row when the partition does not depend on the
    multiplicity, e.g. a ``FrozenEstimator`` or a ``GroupColumnPartitioner``,
    and -- as for ``UMDBinner`` -- with ``delta=0``.

    References
    ----------
    .. [1] "beta-calibration of Language Model Confidence Scores for
       Generative QA", Sec. 3.1 (Alg. 1, 2), Thm 3.1, App. A.2 (Alg. 4).
    .. [2] C. Gupta and A. Ramdas. Distribution-free calibration guarantees
       for histogram binning without sample splitting. ICML 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import BetaBinningCalibrator, GroupColumnPartitioner
    >>> rng = np.random.default_rng(0)
    >>> group = rng.integers(0, 2, size=4000)
    >>> h = rng.uniform(size=4000)
    >>> # group 0 is over-confident, group 1 under-confident
    >>> y = rng.uniform(size=4000) < np.where(group == 0, h**2, np.sqrt(h))
    >>> X = np.column_stack([h, group])
    >>> bb = BetaBinningCalibrator(GroupColumnPartitioner(), points_per_bin=200,
    ...                            random_state=0).fit(X, y)
    >>> bb.n_cells_fitted_, bb.n_cells_fallback_
    (2, 0)
    >>> # true accuracy at h = 0.5: 0.25 in group 0, 0.71 in group 1
    >>> np.round(bb.predict_proba([[0.5, 0], [0.5, 1]])[:, 1], 2)
    array([0.22, 0.76])
    >>> bb.apply([[0.5, 0], [0.5, 1], [0.5, 7]])  # group 7 is unseen: root
    array([ 0,  1, -1])
    """

    _parameter_constraints: dict = {
        "partitioner": [HasMethods(["fit", "transform"]), None],
        "points_per_bin": [
            Interval(Integral, 2, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "epsilon": [Interval(Real, 0, 1, closed="neither"), None],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "confidence_column": [Integral, str],
        "delta": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        partitioner=None,
        points_per_bin=50,
        epsilon=None,
        alpha=0.1,
        confidence_column=0,
        delta=1e-10,
        random_state=None,
    ):
        self.partitioner = partitioner
        self.points_per_bin = points_per_bin
        self.epsilon = epsilon
        self.alpha = alpha
        self.confidence_column = confidence_column
        self.delta = delta
        self.random_state = random_state

    # ------------------------------------------------------------------ input
    def _split_X(self, X, y=None, *, reset):
        """Validate ``X`` (and ``y``); return ``(h, Z)`` or ``(h, Z, y)``.

        ``h`` is the float64 confidence vector in ``[0, 1]``, ``Z`` the
        partition features: the other columns, as a DataFrame when ``X`` is
        one (select rows with :func:`_take_rows`), else a 2-D array; ``y``
        the labels as float64 zeros and ones.
        """
        kwargs = {"reset": reset, "dtype": None, "ensure_min_features": 1}
        if y is None:
            X_arr = validate_data(self, X, **kwargs)
        else:
            X_arr, y = validate_data(self, X, y, **kwargs)
        if X_arr.shape[1] == 1:
            raise ValueError(
                f"X has 1 feature(s), only the confidence column; "
                f"{type(self).__name__} needs the confidence plus at least one "
                "partition feature. For calibration without a partition use "
                "UMDBinner."
            )
        if y is not None:
            y = check_binary_labels(y)
        idx = self._confidence_index()
        h, Z = split_confidence_features(X_arr, idx)
        if hasattr(X, "columns") and hasattr(X, "drop"):
            # keep the partition features' names and dtypes (a group column
            # read by name, a partitioner fitted on a DataFrame)
            Z = X.drop(columns=[X.columns[idx]])
        h = self._check_confidence(h)
        return (h, Z) if y is None else (h, Z, y)

    def _confidence_index(self):
        """Position of the confidence column, resolving a column name."""
        col = self.confidence_column
        if isinstance(col, Integral):
            return col
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            raise ValueError(
                f"confidence_column={col!r} is a column name, but X has no "
                "column names; pass a DataFrame or an integer position."
            )
        if col not in names:
            raise ValueError(
                f"confidence_column={col!r} is not a column of X; X has no such "
                f"column (columns are {list(names)[:10]})."
            )
        return int(np.flatnonzero(names == col)[0])

    def _check_confidence(self, h):
        """The confidence column as float64 probabilities in ``[0, 1]``."""
        if h.dtype.kind == "O":
            try:
                # A non-number object (e.g. a dict) raises numpy's TypeError.
                h = h.astype(np.float64)
            except ValueError:
                raise ValueError(
                    f"The confidence column (confidence_column="
                    f"{self.confidence_column!r}) must be numeric; got values "
                    f"such as {h[:3].tolist()}."
                ) from None
        return check_confidence(h, input="probability", name="confidence column")

    def _resolve_points_per_bin(self, total_weight, nu=0.0):
        """``b``: the int parameter, or Thm 3.1 inverted for ``"auto"``."""
        if self.points_per_bin != "auto":
            return int(self.points_per_bin)
        if self.epsilon is None:
            raise ValueError(
                "points_per_bin='auto' derives b from a target epsilon "
                "(Thm 3.1); set epsilon, e.g. epsilon=0.1, or give "
                "points_per_bin as an int."
            )
        from .bounds import points_per_bin_for_epsilon

        n = int(total_weight)
        if n < 2:
            raise ValueError(
                "points_per_bin='auto' needs at least 2 calibration points; "
                f"got a total weight of {total_weight:g}."
            )
        return points_per_bin_for_epsilon(
            self.epsilon, n, alpha=self.alpha, nu=float(nu)
        )

    # -------------------------------------------------------------- partition
    def _fit_partitioner(self, Z, y=None):
        """Fit a clone of ``partitioner`` on ``Z``; store it in ``partitioner_``.

        A ``FrozenEstimator`` is used as is (never refit); ``None`` means a
        default ``KDTreePartitioner()``.
        """
        if isinstance(self.partitioner, FrozenEstimator):
            self.partitioner_ = self.partitioner
            return self.partitioner_
        if self.partitioner is None:
            from ._partition import KDTreePartitioner

            part = KDTreePartitioner()
        else:
            part = clone(self.partitioner)
        self.partitioner_ = part.fit(Z, y)
        return self.partitioner_

    def _cells(self, Z):
        """Cell id of every row of ``Z``: ``partitioner_.transform``, checked."""
        who = f"partitioner ({type(self.partitioner_).__name__})"
        return check_cell_ids(self.partitioner_.transform(Z), Z.shape[0], who=who)

    # ---------------------------------------------------------------- binning
    def _fit_binning(self, h, t, sample_weight, cells, rng):
        """Alg. 1: root UMD on all rows, one UMD per cell with ``n_s >= 2b``.

        Parameters
        ----------
        h : ndarray of shape (n,), float64
            Raw confidences in ``[0, 1]``.
        t : ndarray of shape (n,), float64
            Targets in ``[0, 1]``: labels, or fitted values (Alg. 3).
        sample_weight : ndarray of shape (n,), float64, or None
            Positive frequency weights (zero-weight rows already removed).
        cells : ndarray of shape (n,), int64
            Cell id of every row (``-1``: outside every cell).
        rng : numpy.random.RandomState
            Source of the tie-breaking nudges, one draw per row in row order
            (the order ``UMDBinner`` uses).

        Sets ``root_``, ``cell_tables_``, ``fallback_cells_``,
        ``n_cells_fitted_`` and ``n_cells_fallback_``; needs
        ``points_per_bin_``.
        """
        b = self.points_per_bin_
        delta = float(self.delta)
        h = tie_break(h, delta, rng)
        total = float(h.shape[0]) if sample_weight is None else sample_weight.sum()
        # Alg. 1, lines 1-2: G[root] = UMD(D, B = floor(|D| / b)).
        n_root = resolve_n_bins(
            None, b, total, who=type(self).__name__, n_rows=h.shape[0]
        )
        # stored as plain dicts (UMDTable._asdict()) so that the fitted state
        # loads with skops; root_ and cell_tables_ are views of them
        self._root_table = umd_fit(h, t, sample_weight, n_root, delta=delta)._asdict()

        # Alg. 1, lines 3-8: one UMD per non-empty cell s, B = floor(n_s / b).
        order = np.argsort(cells, kind="stable")
        ids, starts = np.unique(cells[order], return_index=True)
        ends = np.append(starts[1:], order.shape[0])
        tables, fallback = {}, []
        for s, lo, hi in zip(ids.tolist(), starts, ends, strict=True):
            if s == -1:
                continue  # not a cell: these rows only enter the root
            rows = order[lo:hi]
            w = None if sample_weight is None else sample_weight[rows]
            n_s = float(rows.shape[0]) if w is None else float(w.sum())
            if n_s < 2 * b:
                fallback.append(s)  # Thm 3.1 needs n_s >= b; see Notes
                continue
            # capped as the root is (see resolve_n_bins), so the cost follows
            # the rows even when the weights are huge
            n_bins = min(int(n_s // b), max_bins(rows.shape[0], h.shape[0]))
            tables[s] = umd_fit(h[rows], t[rows], w, n_bins, delta=delta)._asdict()
        self._cell_tables = tables
        self.fallback_cells_ = np.asarray(fallback, dtype=np.int64)
        self.n_cells_fitted_ = len(tables)
        self.n_cells_fallback_ = len(fallback)
        return self

    def _predict_binning(self, h, cells):
        """Alg. 2: each row's cell calibrator, or the root one if it has none."""
        out = umd_predict(self._root_table, h)
        if not self._cell_tables:
            return out
        order = np.argsort(cells, kind="stable")
        ids, starts = np.unique(cells[order], return_index=True)
        ends = np.append(starts[1:], order.shape[0])
        for s, lo, hi in zip(ids.tolist(), starts, ends, strict=True):
            table = self._cell_tables.get(s)
            if table is not None:
                rows = order[lo:hi]
                out[rows] = umd_predict(table, h[rows])
        return out

    @property
    def root_(self):
        """Root calibrator ``G[root]`` as a ``UMDTable`` (see Attributes)."""
        return UMDTable(**self._root_table)

    @property
    def cell_tables_(self):
        """``{cell id: UMDTable}`` of the cells with their own calibrator."""
        return {s: UMDTable(**t) for s, t in self._cell_tables.items()}

    # ----------------------------------------------------------------- public
    @_fit_context(
        # the partitioner is validated when it is fitted
        prefer_skip_nested_validation=False
    )
    def fit(self, X, y, sample_weight=None):
        """Fit the partitioner, the root binning and one binning per cell.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1 + n_partition_features)
            Confidence column (see ``confidence_column``), probabilities in
            ``[0, 1]``, plus the partition features.
        y : array-like of shape (n_samples,)
            1 if the answer was correct, else 0 (or bool).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative frequency weights (see Notes).

        Returns
        -------
        self : BetaBinningCalibrator
            Fitted calibrator.
        """
        require_labels(self, y)
        # weights first: their errors do not depend on the data's values
        sw = None
        if sample_weight is not None:
            sw = check_weights(
                sample_weight, _num_samples(X), max_total=MAX_COUNT_TOTAL
            )
        h, Z, y = self._split_X(X, y, reset=True)
        if sw is not None:
            keep = sw > 0  # check_weights rejects all-zero weights
            if not keep.all():
                h, Z, y, sw = h[keep], _take_rows(Z, keep), y[keep], sw[keep]
        total = float(h.shape[0]) if sw is None else float(sw.sum())
        self.points_per_bin_ = self._resolve_points_per_bin(total)
        rng = check_random_state(self.random_state)
        self._fit_partitioner(Z)
        cells = self._cells(Z)
        self._fit_binning(h, y, sw, cells, rng)
        self.classes_ = np.array([0, 1])
        return self

    def apply(self, X):
        """Cell id of every row (the partition beta), as a 1-D array.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1 + n_partition_features)
            Same columns as in ``fit``.

        Returns
        -------
        cells : ndarray of shape (n_samples,), dtype int64
            The partitioner's cell id; ``-1`` for rows outside every cell.
            Rows of a cell without its own calibrator (``fallback_cells_``
            or unseen in ``fit``) keep their cell id here.
        """
        check_is_fitted(self)
        _, Z = self._split_X(X, reset=False)
        return self._cells(Z)

    def _calibrated(self, X):
        """Alg. 2: the cell's UMD (root for -1 / unseen cells) at each row."""
        h, Z = self._split_X(X, reset=False)
        return self._predict_binning(h, self._cells(Z))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


__all__ = ["BetaBinningCalibrator"]
