# SPDX-License-Identifier: MIT
"""BetaBinningCalibrator: one UMD histogram binning per partition cell (BB).

Estimator glue for the beta-binning scheme of the paper (Sec. 3.1, Alg. 1
and 2): a partitioner maps the partition features of each row to a cell
``s = beta(q, a)``; a root UMD calibrator is fitted on all rows and one UMD
calibrator per cell on the cell's rows, with ``points_per_bin`` points per
bin. The binning and the prediction are those of ``_group_binning``, which
:class:`~sklearn_betacal.ScalingBetaBinningCalibrator` (Alg. 3) shares with
proxy targets ``t``; the input side (confidence column, partition features,
weights, the partitioner) is the group-calibrator template of ``_base``.
"""

import numpy as np
from sklearn.utils import check_random_state

from ._base import check_group_columns
from ._docstrings import fill_doc
from ._group_binning import GROUP_BINNING_STATE, _check_routing, _GroupBinningBase
from ._state import CLASSES, COMMON_RULES, FEATURES, Schema


@fill_doc
class BetaBinningCalibrator(_GroupBinningBase):
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
        ``None`` means ``KDTreePartitioner()``. A supervised partitioner
        (:class:`CalibrationTreePartitioner`) gets the labels, confidences,
        weights and ``points_per_bin``, and is grown on the rows of its
        ``honest_split`` only; the other rows are binned, so that beta is
        fixed before the binned labels are seen (Thm 3.1).
    points_per_bin : int >= 2 or "auto", default=50
        Minimum number of points per bin ``b``. ``"auto"`` takes the smallest
        ``b`` whose Thm 3.1 bound reaches ``epsilon``
        (:func:`sklearn_betacal.bounds.points_per_bin_for_epsilon` with the
        total sample weight as ``N`` and ``nu = 0``).
    epsilon : float in (0, 1), default=None
        Target calibration error of Thm 3.1; required by, and only used with,
        ``points_per_bin="auto"``.
    alpha : float in (0, 1), default=0.1
        Failure probability of the guarantee, for ``points_per_bin="auto"``
        and ``epsilon_``.
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
        Seeds the tie-breaking nudges and a supervised partitioner's honest
        split. It also reaches the partitioner: every ``random_state`` left
        at ``None`` in the fitted clone (its own, a Pipeline step's, a
        CrossPartitioner component's, a clusterer's) gets a seed derived
        from this one; a seed set there is kept. An int gives byte-identical
        fits.
    %(label_floor)s
    %(pos_label)s

    Attributes
    ----------
    %(classes_)s
    partitioner_ : transformer
        The fitted partitioner (the given ``FrozenEstimator`` itself when
        one was passed).
    points_per_bin_ : int
        The ``b`` actually used (resolved from ``"auto"``).
    root_ : dict of ndarray
        Root calibrator ``G[root]``, fitted on all rows with ``B = floor(N /
        b)`` bins (at least one): ``{"bin_edges": (B - 1,), "bin_values":
        (B,), "bin_counts": (B,)}``, the arrays ``UMDBinner`` calls
        ``bin_edges_``, ``bin_values_`` and ``bin_counts_`` (edges on the
        nudged scale; a score ``x`` falls in bin ``searchsorted(bin_edges,
        x, side="right")``).
    cell_tables_ : mapping of int to dict of ndarray
        ``G[s]`` for every cell ``s`` with at least ``b`` points (total
        weight), with ``B = floor(n_s / b)`` bins, as ``root_``. A
        read-only, dict-like view of ``tables_`` (a table is sliced out when
        it is looked up).
    tables_ : CellTables
        All calibrators stacked, for prediction in one pass: a named tuple
        of arrays (``edges``, ``edge_start``, ``values``, ``counts``,
        ``delta`` and the raw-score lookup). Table 0 is ``root_``, table ``i
        + 1`` the ``i``-th cell of ``cell_tables_`` in increasing cell id,
        then one table per ancestor region in ``fallback_to_`` in increasing
        node id; table ``j``'s edges are ``edges[edge_start[j]:edge_start[j
        + 1]]`` and its values and counts ``values[edge_start[j] +
        j:edge_start[j + 1] + j + 1]`` (see
        :mod:`sklearn_betacal._kernels._cell_binning`).
    fallback_cells_ : ndarray of int64
        Cells seen in ``fit`` with fewer than ``b`` points.
    fallback_to_ : ndarray of int64, aligned with ``fallback_cells_``
        What calibrates each of them: the node id (in the partitioner's tree,
        see ``cell_ancestors``) of the nearest ancestor region with at least
        ``b`` points, whose binning is fitted on the rows of all the leaves
        below it; ``-1`` for the root calibrator (no such ancestor, or a
        partitioner without a hierarchy).
    cells_ : ndarray of int64
        The cell ids seen in ``fit`` (``-1`` excluded), sorted.
    epsilon_ : ndarray of float64, aligned with ``cells_``
        The Thm 3.1 bound that holds for each cell's rows at level
        ``alpha``: with probability at least ``1 - alpha``, simultaneously
        for all cells, every bin of the calibrator serving the cell is within
        ``epsilon_`` of that bin's true accuracy. Computed from the serving
        table's smallest bin of ``m`` points (``m - 1`` averaged labels, the
        table's ``counts``) and the total number of bins ``M`` of all
        tables: ``sqrt(log(2 M / alpha) / (2 (m - 1)))`` (plus ``nu_`` for
        proxies), Thm 3.1 with the actual bin sizes. For a fallback cell the
        bound is over the serving region (ancestor or root), not the cell
        alone.
    epsilon_root_ : float
        The same bound for the root calibrator (rows with cell ``-1``).
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

    **No certainty from agreeing labels** (``label_floor=True``): in every
    table (root, cells, ancestor regions) a bin of weight ``n`` whose labels
    all agree predicts ``1 / (2 (m + 1))`` (or one minus it), ``m = N_s /
    B_s`` the table's nominal bin weight, not 0 (or 1).
    ``epsilon_`` holds as before (the argument is
    :class:`~sklearn_betacal.UMDBinner`'s, Notes); the log loss is finite.

    **Small cells.** A cell with at least ``b`` points gets its own binning
    (Thm 3.1's condition; between ``b`` and ``2 b`` points that is a single
    bin, the cell's accuracy). A smaller cell falls back to the nearest
    ancestor region with at least ``b`` points when the partitioner has a
    hierarchy (a ``cell_ancestors()`` method: :class:`KDTreePartitioner`,
    :class:`CalibrationTreePartitioner`), else to the root calibrator. It is
    listed in ``fallback_cells_`` (what serves it in ``fallback_to_``) and
    ``fit`` warns with the numbers of rows and cells that fell back: their
    bound (``epsilon_``) holds for the serving region, not for the cell.
    With ``points_per_bin="auto"``, a ``b`` so large that *every* cell would
    fall back to the root (beta-binning silently turned into plain UMD) is an
    error that says what to change.

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

    **Cost and memory.** All cells are fitted at once (one sort of the
    rows by confidence, a blockwise counting sort by cell, then every
    cell's bins together) and predicted at once (one count of every row's
    breakpoints in all tables merged, by a uniform grid, then one gather),
    so the cost does not grow with the number of cells. Prediction runs in
    blocks of ``PREDICT_BLOCK_ROWS = 65,536`` rows: beyond the returned
    array and what ``validate_data`` makes of ``X`` (nothing for a float64
    array), its extra memory is that of one block, a few MiB whatever the
    number of rows. Fitting needs about 31 bytes per row beyond the input
    with labels as targets (the labels and nudged confidences as float64,
    cell ids, the sort order and the bin of every sorted row in int32).

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
        **_GroupBinningBase._parameter_constraints,
        "label_floor": ["boolean"],
    }

    _state_schema = Schema(
        **FEATURES,
        classes_=CLASSES,
        **GROUP_BINNING_STATE,
        rules=(*COMMON_RULES, check_group_columns, _check_routing),
    )

    def __init__(
        self,
        partitioner=None,
        *,
        points_per_bin=50,
        epsilon=None,
        alpha=0.1,
        confidence_column=0,
        delta=1e-10,
        random_state=None,
        label_floor=True,
        pos_label=None,
    ):
        super().__init__(
            partitioner,
            points_per_bin=points_per_bin,
            epsilon=epsilon,
            alpha=alpha,
            confidence_column=confidence_column,
            delta=delta,
            random_state=random_state,
            pos_label=pos_label,
        )
        self.label_floor = label_floor

    def _planned_points_per_bin(self, n_rows, sample_weight):
        """``"auto"`` resolved on the rows to be binned, before the partitioner
        is fitted (a learned tree's leaves then hold ``2 * b`` as promised):
        the same ``b`` as ``_fit`` resolves on those rows."""
        total = float(n_rows) if sample_weight is None else sample_weight.sum()
        return self._resolve_points_per_bin(float(total))

    def _fit(self, fit_rows, h, y, sample_weight, cells, groups=None):
        """Alg. 1 on the rows the template ``fit`` kept (see ``_base``); no
        split of its own (``groups`` served the partitioner's)."""
        total = float(h.shape[0]) if sample_weight is None else sample_weight.sum()
        self.points_per_bin_ = self._resolve_points_per_bin(float(total))
        rng = check_random_state(self.random_state)
        self._fit_binning(
            h, y, sample_weight, cells, rng, labels=bool(self.label_floor)
        )
        self._check_auto_kept_cells(total)
        return self

    def _check_auto_kept_cells(self, total):
        """``points_per_bin="auto"`` must not silently turn BB into plain UMD."""
        if self.points_per_bin != "auto" or self.cells_.size < 2:
            return
        if self.n_cells_fitted_ or np.any(self.fallback_to_ >= 0):
            return
        from .bounds import beta_binning_epsilon

        largest = int(max(np.max(self._cell_counts), 2))
        reachable = beta_binning_epsilon(
            max(int(total), largest), largest, alpha=self.alpha
        )
        raise ValueError(
            f"points_per_bin='auto' with epsilon={self.epsilon} and "
            f"alpha={self.alpha} gives b={self.points_per_bin_} points per bin, "
            f"but the largest of the {self.cells_.size} cells has {largest} "
            "points: every cell would fall back to the root calibrator and "
            "beta-binning would be plain UMD binning. Raise epsilon (b <= "
            f"{largest} needs epsilon >= {reachable:.3f}), use fewer, larger "
            "cells, or calibrate on more rows; or pass an int points_per_bin."
        )


__all__ = ["BetaBinningCalibrator"]
