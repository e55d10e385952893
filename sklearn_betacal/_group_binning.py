# SPDX-License-Identifier: MIT
"""Beta-binning's binning (Alg. 1 and 2), shared by BB and S-BB.

:class:`_GroupBinningBase` fits one UMD histogram binning per partition
cell plus a root binning on confidences ``h`` with targets ``t`` -- the
labels for :class:`~sklearn_betacal.BetaBinningCalibrator`, a scaler's fitted
values for :class:`~sklearn_betacal.ScalingBetaBinningCalibrator` (Alg. 3) --
and predicts each row with its cell's binning, or the root one (Alg. 2). The
input side (confidence column, partition features, weights, the
partitioner) is the group-calibrator template of ``_base``; all numerical
work is in :mod:`sklearn_betacal._kernels._cell_binning`.
"""

import warnings
import weakref
from collections.abc import Mapping
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ._base import (
    PARTITIONER,
    _GroupCalibratorMixin,
    binary_predict,
    check_cell_range,
    positive_index,
    resolve_n_bins,
    table_spec,
)
from ._cells import cell_positions, dense_ids
from ._compat import HasMethods, Interval, StrOptions
from ._docstrings import fill_doc
from ._kernels import _fallback
from ._kernels._cell_binning import (
    CellTables,
    score_order,
    segment_lookup,
    segment_order,
    stack_tables,
    tie_break,
    umd_fit_segments,
    umd_predict_segments,
)
from ._state import Array, Custom, Int
from ._validation import (
    MAX_COUNT_TOTAL,
    MAX_DENSE_BINS,
    check_real,
    damaged,
)

#: Rows per block of the fit's row-wise work on cell ids.
_BLOCK = 1 << 16

#: estimator -> (its fitted tables, their segment_lookup), see _binning_predictor
_LOOKUPS = weakref.WeakKeyDictionary()


def _count_cells(cells, sample_weight):
    """``(ids, n_rows, n_s, lut)`` of the cells >= 0 present in ``cells``.

    ``ids``: sorted distinct cell ids; ``n_rows``: rows per cell; ``n_s``:
    total weight per cell (float, rows summed in row order); ``lut``: an
    int64 work array with one slot per cell plus a last slot for ``-1``
    (set to -1), indexed by :func:`~sklearn_betacal._cells.cell_positions`.
    """
    hi = int(cells.max()) if cells.shape[0] else -1
    if sample_weight is None and dense_ids(hi, cells.shape[0]):
        # counts are exact in any order: block by block, no N-sized copy
        n_rows = np.zeros(hi + 2, dtype=np.int64)  # slot 0: cell -1
        for a in range(0, cells.shape[0], _BLOCK):
            n_rows += np.bincount(cells[a : a + _BLOCK] + 1, minlength=hi + 2)
        n_rows = n_rows[1:]
        ids = np.flatnonzero(n_rows).astype(np.int64)
        n_rows = n_rows[ids]
        n_s = n_rows.astype(np.float64)
        return ids, n_rows, n_s, np.full(ids.shape[0] + 1, -1, dtype=np.int64)
    inside = cells >= 0
    if dense_ids(hi, cells.shape[0]):
        c = cells[inside]
        n_rows = np.bincount(c, minlength=hi + 1)
        ids = np.flatnonzero(n_rows).astype(np.int64)
        n_s = np.bincount(c, weights=sample_weight[inside], minlength=hi + 1)[ids]
        n_rows = n_rows[ids]
    else:
        ids, inv, n_rows = np.unique(
            cells[inside], return_inverse=True, return_counts=True
        )
        if sample_weight is None:
            n_s = n_rows.astype(np.float64)
        else:
            n_s = np.bincount(
                inv, weights=sample_weight[inside], minlength=ids.shape[0]
            )
    lut = np.full(ids.shape[0] + 1, -1, dtype=np.int64)
    return ids.astype(np.int64), n_rows, n_s, lut


class FallbackCounts(NamedTuple):
    """One fit's cells without a binning of their own (``_warn_fallback``)."""

    b: int
    rows: int
    cells: int
    of_cells: int
    up_rows: int
    up_cells: int


def _span(values):
    """``"40"`` or ``"40 to 50"``: one number, or the range over folds."""
    lo, hi = min(values), max(values)
    return f"{lo:g}" if lo == hi else f"{lo:g} to {hi:g}"


def fallback_message(who, counts, n_fits=1):
    """The small-cell warning of one fit, or of ``n_fits`` folds at once.

    ``counts`` holds the :class:`FallbackCounts` of the fits that had such
    cells (a fold without any has none); over several folds each figure is
    the range over those folds.
    """
    c = FallbackCounts(*(list(v) for v in zip(*counts, strict=True)))
    root_rows = [r - u for r, u in zip(c.rows, c.up_rows, strict=True)]
    root_cells = [r - u for r, u in zip(c.cells, c.up_cells, strict=True)]
    where = (
        "" if n_fits == 1 else f"in {len(counts)} of the {n_fits} cross-fitted folds, "
    )
    return (
        f"{who}: {where}{_span(c.rows)} calibration rows in "
        f"{_span(c.cells)} of {_span(c.of_cells)} cells have fewer than "
        f"b={_span(c.b)} points and get no binning of their own (Thm 3.1 "
        f"needs b per cell): {_span(c.up_rows)} rows in {_span(c.up_cells)} "
        "cells use their nearest ancestor region with >= b points, "
        f"{_span(root_rows)} rows in {_span(root_cells)} cells the root "
        "binning. Their bound holds for that region, not for the cell (see "
        "fallback_cells_, fallback_to_, epsilon_"
        + ("" if n_fits == 1 else " of each of estimators_")
        + "); lower points_per_bin or use fewer, larger cells to keep it per "
        "cell."
    )


def _table_arrays(tables):
    """A one-table ``CellTables`` as the public dict of its arrays."""
    return {
        "bin_edges": tables.edges,
        "bin_values": tables.values,
        "bin_counts": tables.counts,
    }


class _CellTableView(Mapping):
    """``cell_tables_``: cell id -> dict of arrays, read from the stacked tables.

    Cell ``cell_ids[i]`` is served by table ``table_index[i]`` of
    ``tables``. Built without a loop over cells; a table is sliced out on
    access.
    """

    def __init__(self, tables, cell_ids, table_index):
        self._tables = tables
        self._ids = np.asarray(cell_ids, dtype=np.int64)
        self._index = np.asarray(table_index, dtype=np.int64)

    def __getitem__(self, cell):
        try:
            cell = int(cell)
        except (TypeError, ValueError):
            raise KeyError(cell) from None
        i = int(np.searchsorted(self._ids, cell))
        if i >= self._ids.shape[0] or self._ids[i] != cell:
            raise KeyError(cell)
        return _table_arrays(self._tables.table(int(self._index[i])))

    def __iter__(self):
        return iter(self._ids.tolist())

    def __len__(self):
        return self._ids.shape[0]

    def __repr__(self):
        return f"<{len(self)} cell tables: cells {self._ids[:5].tolist()}...>"


def _check_routing(owner, state):
    """The root table is table 0 of the stacked tables, every cell is routed
    to an existing table (sorted unique cell ids of the fitted partition;
    a negative table number served another cell's binning: numpy counts
    from the end), and the per-cell arrays are one entry per cell."""
    tables = state["_tables"]
    n_tables = tables["edge_start"].shape[0] - 1
    ids, tab = state["_route_cells"], state["_route_table"]
    if tab.shape != ids.shape:
        raise damaged(owner, f"_route_table has shape {tab.shape}, expected "
                      f"{ids.shape} (one table per routed cell)")  # fmt: skip
    if np.any(np.diff(ids) <= 0):
        raise damaged(owner, "_route_cells is not sorted and unique")
    check_cell_range(owner, "_route_cells", ids, state)
    if np.any((tab < 1) | (tab >= n_tables)):
        raise damaged(owner, f"_route_table names a table outside 1 .. {n_tables - 1}")
    if state["_n_own_tables"] >= n_tables:
        raise damaged(owner, "_n_own_tables is not below the number of tables")
    if state["n_cells_fitted_"] != state["_n_own_tables"]:
        raise damaged(owner, "n_cells_fitted_ is not the number of own tables")
    cells = state["cells_"]
    if np.any(np.diff(cells) <= 0):
        raise damaged(owner, "cells_ is not sorted and unique")
    check_cell_range(owner, "cells_", cells, state)
    if not np.all(np.isin(ids, cells)):
        raise damaged(owner, "_route_cells names a cell that is not in cells_")
    fallback = state["fallback_cells_"]
    if state["fallback_to_"].shape != fallback.shape or not np.all(
        np.isin(fallback, cells)
    ):
        raise damaged(owner, "fallback_cells_ / fallback_to_ are not fitted cells")
    if state["n_cells_fallback_"] != fallback.shape[0]:
        raise damaged(owner, "n_cells_fallback_ is not the number of fallback cells")


def _per_cell(kind, **kw):
    return Array(kind, (lambda s: s["cells_"].shape[0],), **kw)


#: The fitted state of UMD binning within cells (BB, S-BB), once fitted.
GROUP_BINNING_STATE = {
    "partitioner_": PARTITIONER,
    "points_per_bin_": Int(low=1),
    "_tables": table_spec(stacked=True),
    "_route_cells": Array("i", (None,)),
    "_route_table": Array("i", (None,)),
    "_n_own_tables": Int(low=0),
    "n_cells_fitted_": Int(low=0),
    "n_cells_fallback_": Int(low=0),
    "cells_": Array("i", (None,)),
    "fallback_cells_": Array("i", (None,)),
    "fallback_to_": Array("i", (None,), low=-1),
    "_cell_counts": _per_cell("f", low=0),
    "epsilon_": _per_cell("f", finite=False, low=0),
    "epsilon_root_": Custom(
        lambda owner, name, value, state: (
            check_real(owner, name, value, low=0, strict=False)
            if value != np.inf
            else value
        )
    ),
}


class _GroupBinningBase(_GroupCalibratorMixin, ClassifierMixin, BaseEstimator):
    """UMD binning within the cells of a partition (Alg. 1, 2): BB and S-BB.

    Holds what both share: the common parameters (``partitioner``,
    ``points_per_bin``, ``epsilon``, ``alpha``, ``confidence_column``,
    ``delta``, ``random_state``, ``pos_label``; BetaBinningCalibrator adds
    ``label_floor`` and documents them all), the fitted tables and
    prediction. A subclass defines ``_fit(X, h, y, sample_weight, cells)``
    (the hook of the template ``fit``), which sets ``points_per_bin_`` (see
    :meth:`_resolve_points_per_bin`) and calls :meth:`_fit_binning`.
    """

    _parameter_constraints: dict = {
        "pos_label": "no_validation",  # checked against y in fit
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

    _weights_max_total = MAX_COUNT_TOTAL

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
        pos_label=None,
    ):
        self.partitioner = partitioner
        self.points_per_bin = points_per_bin
        self.epsilon = epsilon
        self.alpha = alpha
        self.confidence_column = confidence_column
        self.delta = delta
        self.random_state = random_state
        self.pos_label = pos_label

    def _partitioner_lends(self, n_rows, sample_weight):
        """``points_per_bin``: the ``b`` a learned tree sizes its leaves by
        (``2 * b``), when it is known before the partitioner is fitted
        (:meth:`_planned_points_per_bin`); nothing otherwise."""
        b = self._planned_points_per_bin(n_rows, sample_weight)
        return {} if b is None else {"points_per_bin": int(b)}

    def _planned_points_per_bin(self, n_rows, sample_weight):
        """``b`` as the fit plan knows it (the rows to be binned: ``n_rows``,
        weights ``sample_weight`` or ``None``): the int parameter; a subclass
        resolves ``"auto"`` when it can (``None``: not yet known)."""
        if self.points_per_bin == "auto":
            return None
        return int(self.points_per_bin)

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

    # ---------------------------------------------------------------- binning
    def _fit_binning(self, h, t, sample_weight, cells, rng, *, labels=False):
        """Alg. 1: root UMD on all rows, one UMD per cell with ``n_s >= b``.

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
        labels : bool
            ``t`` are 0/1 labels: no bin predicts exactly 0 or 1
            (``label_floor``; the bounds are unchanged).

        Sets ``root_``, ``tables_``, ``cell_tables_``, ``fallback_cells_``,
        ``n_cells_fitted_``, ``n_cells_fallback_`` and the routing of cells
        to tables (``_route_cells``, ``_route_table``); needs
        ``points_per_bin_``. All cells are fitted at once by the fused
        kernel ``umd_fit_segments`` (one sort by cell and confidence), with
        the same numbers as one single-table fit per cell.
        """
        b = self.points_per_bin_
        delta = float(self.delta)
        h = tie_break(h, delta, rng)
        total = float(h.shape[0]) if sample_weight is None else sample_weight.sum()
        # Alg. 1, lines 1-2: G[root] = UMD(D, B = floor(|D| / b)).
        n_root = resolve_n_bins(
            None, b, total, who=type(self).__name__, n_rows=h.shape[0]
        )
        # One sort of the confidences serves the root, the ancestor regions
        # and the cells; the root is the one-segment case of the fused kernel
        # (without a searchsorted of every row into the edges). Stored as
        # plain dicts so that the fitted state loads with skops.
        order = score_order(h, sample_weight)
        root = umd_fit_segments(
            h,
            t,
            sample_weight,
            None,
            [n_root],
            delta=delta,
            order_of_scores=order,
            labels=labels,
        )

        # Alg. 1, lines 3-8: one UMD per cell s with n_s >= b (Thm 3.1's
        # condition), B = floor(n_s / b); -1 is not a cell (those rows only
        # enter the root). A smaller cell falls back to its nearest ancestor
        # region with >= b points (tree partitions), else to the root.
        ids, n_rows, n_s, lut = _count_cells(cells, sample_weight)
        fit, serving, node_members = self._fallback_plan(ids, n_s, b)
        lut[:-1][fit] = np.arange(int(fit.sum()))  # the last slot: cell -1

        # ancestor regions: one more table each, on the rows of the leaves
        # below the node (rows are shared with their own cells' tables)
        nodes = np.asarray(sorted(node_members), dtype=np.int64)
        regions = self._fit_regions(
            h, t, sample_weight, cells, ids, n_rows, n_s, node_members, order, labels
        )
        parts = [root]
        if fit.any():
            # capped as the root is (see resolve_n_bins and max_bins), so the
            # cost follows the rows even when the weights are huge
            rows_s = n_rows[fit]
            cap = np.maximum(rows_s, MAX_DENSE_BINS * rows_s // max(h.shape[0], 1))
            n_bins = np.minimum((n_s[fit] // b).astype(np.int64), np.maximum(cap, 1))
            # rows sorted by (cell, confidence) block by block, the cells'
            # table numbers read per block; the score order is not needed
            # after it (memory: the fit keeps one int32 order at a time)
            by_cell = segment_order(
                order,
                lambda r: lut[cell_positions(cells[r], ids)],
                n_bins.shape[0],
                sample_weight,
            )
            del order
            parts.append(
                umd_fit_segments(
                    h,
                    t,
                    sample_weight,
                    None,
                    n_bins,
                    delta=delta,
                    rows=by_cell,
                    labels=labels,
                )
            )
            del by_cell
        else:
            del order
        parts.extend(regions)
        del regions
        # a plain dict of arrays (loadable by skops); tables_ is a view of it
        self._tables = stack_tables(parts)._asdict()
        n_own = int(fit.sum())
        first = n_own + 1  # ancestor tables follow the cells' own tables
        node_table = {v: first + k for k, v in enumerate(nodes.tolist())}
        table = np.zeros(ids.shape[0], dtype=np.int64)
        table[fit] = np.arange(1, n_own + 1)
        up = ~fit & (serving >= 0)
        table[up] = [node_table[int(v)] for v in serving[up]]
        routed = fit | up
        self._set_routing(ids[routed], table[routed])
        self._n_own_tables = n_own
        self.fallback_cells_ = ids[~fit]
        self.fallback_to_ = serving[~fit].astype(np.int64)
        self.n_cells_fitted_ = n_own
        self.n_cells_fallback_ = int(self.fallback_cells_.shape[0])
        self._cell_counts = n_s
        self._set_epsilon(ids, table)
        self._warn_fallback(cells, self.fallback_cells_, self.fallback_to_, b, ids.size)
        return self

    def _fit_cells(self, Z):
        """``_cells`` as int32 when every id fits: half the fit's cell column."""
        cells = self._cells(Z)
        if cells.shape[0] and int(cells.max()) < 2**31 - 1:
            return cells.astype(np.int32)
        return cells

    def _fit_regions(
        self, h, t, sample_weight, cells, ids, n_rows, n_s, members, order, labels
    ):
        """The binnings of the ancestor regions, one-table ``CellTables`` in node order.

        A region is the union of the leaves below a node, so nested regions
        overlap: they are fitted in layers of disjoint regions (a region's
        layer is the number of chosen regions above it), one fused call per
        layer, each reading the rows' regions block by block. ``B = floor(n
        / b)`` (at least 1, at most the region's rows) for a region of
        weight ``n``: its cells' weights summed.
        """
        nodes = sorted(members)
        if not nodes:
            return []
        b = self.points_per_bin_
        chosen = set(nodes)
        ancestors = self._cell_ancestors(int(ids[-1]) + 1)
        layer = {}
        for v in nodes:
            chain = [int(u) for u in ancestors[int(members[v][0])]]
            layer[v] = sum(u in chosen for u in chain[chain.index(v) + 1 :])
        # position of every member cell among the cells seen in fit
        at = {v: np.searchsorted(ids, members[v]) for v in nodes}
        for v in nodes:
            ok = at[v] < ids.shape[0]
            ok[ok] = ids[at[v][ok]] == np.asarray(members[v])[ok]
            at[v] = at[v][ok]
        tables = {}
        for L in sorted(set(layer.values())):
            these = [v for v in nodes if layer[v] == L]
            seg_of = np.full(ids.shape[0] + 1, -1, dtype=np.int64)  # last: -1
            n_b = np.empty(len(these), dtype=np.int64)
            for j, v in enumerate(these):
                seg_of[at[v]] = j
                rows = int(n_rows[at[v]].sum())
                n_b[j] = min(max(int(n_s[at[v]].sum() // b), 1), max(rows, 1))
            fitted = umd_fit_segments(
                h,
                t,
                sample_weight,
                lambda r, seg_of=seg_of: seg_of[cell_positions(cells[r], ids)],
                n_b,
                delta=float(self.delta),
                order_of_scores=order,
                labels=labels,
            )
            for j, v in enumerate(these):
                tables[v] = fitted.table(j)
        return [tables[v] for v in nodes]

    def _fallback_plan(self, ids, n_s, b):
        """``(own, serving, node_members)`` aligned with the cell ``ids``."""
        n_ids = int(ids[-1]) + 1 if ids.shape[0] else 0
        ancestors = self._cell_ancestors(n_ids)
        if ancestors is None:
            return n_s >= b, np.full(ids.shape[0], -1, dtype=np.int64), {}
        weight = np.zeros(max(n_ids, len(ancestors)))
        weight[ids] = n_s
        own, serving, members = _fallback.fallback_plan(weight, b, ancestors)
        return own[ids], serving[ids], members

    def _cell_ancestors(self, n_ids):
        """The partitioner's ``cell_ancestors()`` if it has one covering the ids."""
        get = getattr(self.partitioner_, "cell_ancestors", None)
        if not callable(get):
            return None
        ancestors = get()
        return ancestors if len(ancestors) >= n_ids else None

    def _set_epsilon(self, ids, table):
        """Thm 3.1 per cell: ``epsilon_`` aligned with ``cells_``.

        The union bound runs over every bin of every fitted table (root, cells,
        ancestor regions), so the bounds hold simultaneously with probability
        at least ``1 - alpha``. A table whose smallest bin averages ``c``
        labels (``counts``: a bin of ``b`` points less its edge) gets
        ``sqrt(log(2 n_bins / alpha) / (2 c)) + nu``.
        """
        tables = self.tables_
        es = tables.edge_start
        n_bins = int(tables.values.shape[0])
        nu = float(getattr(self, "nu_", 0.0))
        # smallest count of every table (table j: es[j] + j .. es[j + 1] + j)
        c = np.minimum.reduceat(tables.counts, es[:-1] + np.arange(es.shape[0] - 1))
        pos = c > 0
        eps = np.full(c.shape[0], np.inf)
        eps[pos] = np.sqrt(np.log(2 * n_bins / self.alpha) / (2 * c[pos])) + nu
        self.cells_ = np.asarray(ids, dtype=np.int64)
        self.epsilon_ = eps[table]
        self.epsilon_root_ = float(eps[0])

    def _warn_fallback(self, cells, fallback, to, b, n_cells):
        """Warn of the cells binned by an ancestor region or the root.

        A fit that sets ``_fallback_counts`` to a list (``cv=k``'s members)
        appends its counts there instead, for one warning over all folds
        (:func:`fallback_message`).
        """
        if fallback.size == 0:
            return
        rows = np.isin(cells, fallback)
        up = fallback[to >= 0]
        n_up = int(np.isin(cells, up).sum())
        counts = FallbackCounts(
            int(b), int(rows.sum()), int(fallback.size), int(n_cells),
            n_up, int(up.size),
        )  # fmt: skip
        deferred = getattr(self, "_fallback_counts", None)
        if deferred is not None:
            deferred.append(counts)
            return
        warnings.warn(
            fallback_message(type(self).__name__, [counts]),
            UserWarning,
            stacklevel=3,
        )

    def _set_routing(self, cell_ids, table_index):
        """Route cell ``cell_ids[i]`` to table ``table_index[i]`` of ``tables_``.

        Every other cell id (``-1``, unseen cells, cells without a table of
        their own) goes to table 0, the root. ``cell_ids`` must be sorted.
        """
        self._route_cells = np.asarray(cell_ids, dtype=np.int64)
        self._route_table = np.asarray(table_index, dtype=np.int64)

    def _router(self):
        """``cells -> index into tables_`` of every row's calibrator (Alg. 2).

        Built once per prediction call: a lookup array indexed by ``cell +
        1`` when the routed ids are small (every id above them clips to the
        last slot, the root), else a search among the routed ids.
        """
        ids, tab = self._route_cells, self._route_table
        if ids.shape[0] == 0:
            return lambda cells: np.zeros(cells.shape[0], dtype=np.intp)
        hi = int(ids[-1])
        if ids[0] >= 0 and hi < max(1 << 20, 16 * ids.shape[0]):
            direct = np.zeros(hi + 3, dtype=np.intp)  # [cell -1, 0 .. hi, above]
            direct[ids + 1] = tab

            def route(cells):
                # cell ids are >= -1 (checked): cells + 1 indexes the array
                return np.take(direct, cells + 1, mode="clip")

            return route
        lut = np.append(tab, 0)  # the last slot: -1, unseen cells -> root
        return lambda cells: lut[cell_positions(cells, ids)]

    def _binning_predictor(self):
        """``(h, cells) -> calibrated values``, prepared once per call (Alg. 2).

        The tables' prediction lookup (:func:`segment_lookup`: one grid
        count and one gather for all tables) and the routing array are
        built here, so that every block of a prediction only counts,
        routes and gathers.
        """
        tables = self.tables_
        # the lookup depends on the fitted tables alone: built once per fit
        # and kept beside the estimator (predict must not change __dict__)
        cached = _LOOKUPS.get(self)
        if cached is not None and cached[0] is self._tables:
            lookup = cached[1]
        else:
            lookup = segment_lookup(tables)
            _LOOKUPS[self] = (self._tables, lookup)
        route = self._router()

        def predict(h, cells):
            return umd_predict_segments(tables, h, route(cells), lookup)

        return predict

    @property
    def root_(self):
        """Root calibrator ``G[root]``: a dict of arrays (see Attributes)."""
        return _table_arrays(self.tables_.table(0))

    @property
    def cell_tables_(self):
        """``{cell id: dict of arrays}`` of the cells with their own calibrator.

        A read-only dict-like view of ``tables_`` (see Attributes).
        """
        own = self._route_table <= self._n_own_tables  # not ancestor regions
        return _CellTableView(
            self.tables_, self._route_cells[own], self._route_table[own]
        )

    @property
    def tables_(self):
        """All calibrators stacked as one ``CellTables`` (see Attributes)."""
        return CellTables(**self._tables)

    def _binned_score(self, h, Z, cells):
        """The score the tables bin (Alg. 2): the confidence ``h`` itself.

        A subclass whose binning reads another score of the row (a scaler's
        output) overrides this.
        """
        return h

    def _row_inputs(self, Z):
        """``(Z, cells)``: what the row predictor reads of one block's
        partition features ``Z`` -- the features themselves and their cells
        (a subclass whose binned score reads a view of the features returns
        that view, computed once with the cells)."""
        return Z, self._cells(Z)

    def _row_predictor(self):
        """``(h, Z, cells) -> calibrated values`` of one block (Alg. 2).

        The tables at the binned score; a subclass that averages several
        fitted binnings overrides this.
        """
        predict = self._binning_predictor()

        def rows(h, Z, cells):
            return predict(self._binned_score(h, Z, cells), cells)

        return rows

    def _calibrated(self, X):
        """Alg. 2: the cell's UMD (root for -1 / unseen cells) at each row."""

        predict = self._row_predictor()

        def write(h, Z, out):
            out[:] = predict(h, *self._row_inputs(Z))

        return self._blockwise(X, (), np.float64, write)

    @fill_doc
    def predict_proba(self, X):
        """Calibrated probability of each class, computed block by block.

        %(group_X)s
        proba : ndarray of shape (n_samples, 2)
            Columns in the order of ``classes_``: the calibrated probability
            of the positive class (``pos_label``) and its complement.
        """
        check_is_fitted(self)
        pos = positive_index(self)
        predict = self._row_predictor()

        def write(h, Z, out):
            out[:, pos] = predict(h, *self._row_inputs(Z))
            np.subtract(1.0, out[:, pos], out=out[:, 1 - pos])

        return self._blockwise(X, (2,), np.float64, write)

    @fill_doc
    def predict(self, X):
        """Predict the positive class where its calibrated probability exceeds 0.5.

        %(group_X)s
        y_pred : ndarray of shape (n_samples,)
            Elements of ``classes_``.
        """
        check_is_fitted(self)
        predict = self._row_predictor()

        def write(h, Z, out):
            out[:] = binary_predict(self, predict(h, *self._row_inputs(Z)))

        return self._blockwise(X, (), self.classes_.dtype, write)
