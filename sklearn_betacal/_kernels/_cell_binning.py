# SPDX-License-Identifier: MIT
"""Many UMD tables at once (the fused cell-wise kernel), pure NumPy.

Kernel of ``BetaBinningCalibrator`` and ``ScalingBetaBinningCalibrator``
(Alg. 1 and 2 of the beta-calibration paper): one UMD histogram binning
(Alg. 4, :mod:`sklearn_betacal._kernels._binning`) per partition cell plus
the root, fitted and evaluated without a loop over the cells. Every table is
bit for bit the single-table ``umd_fit`` / ``umd_predict`` of its rows.

Interface
---------
``umd_fit_segments(h, t, sample_weight, segment, n_bins, *, delta=0.0,
order_of_scores=None, rows=None) -> CellTables``
    Table ``s`` is ``umd_fit`` of the rows with ``segment == s``: one sort
    by (segment, score) shared by all tables (``score_order`` and
    ``segment_order`` let the caller share it with the root's fit).
``stack_tables(tables) -> CellTables``
    ``UMDTable`` and ``CellTables`` back to back (root first, then cells).
``segment_lookup(tables) -> TableGrid``
    The per-table uniform grids that prediction counts with (prepared once
    per call; memory linear in the breakpoints).
``umd_predict_segments(tables, x, table, lookup=None) -> values``
    Table ``table[i]`` at raw score ``x[i]`` for every row: with ``lookup``
    a grid count and a gather, cost flat in the size of the tables; without
    it an offset search into the stacked step functions (the reference the
    tests compare with, byte for byte).
The grid itself (``table_grid``, ``grid_positions``) is in
:mod:`sklearn_betacal._kernels._grid`.

Conventions are those of :mod:`sklearn_betacal._kernels._binning` (edges,
bin values, frequency weights, the expectation over the test-time nudge);
the fit kernels work block by block (``_CHUNK`` rows) so that their row-wise
temporaries stay small.
"""

from typing import NamedTuple

import numpy as np

from ._binning import _CHUNK, UMDTable, _with_lookup, label_floor
from ._grid import _bisect, _segmented_search, grid_positions, table_grid


class CellTables(NamedTuple):
    """Many fitted UMD calibrators stored back to back (the fused kernel).

    Table ``j`` (``0 <= j < n_tables``) is the ``UMDTable`` with

    - ``edges[edge_start[j]:edge_start[j + 1]]`` as its edges,
    - ``values[edge_start[j] + j:edge_start[j + 1] + j + 1]`` as its values
      (and ``counts`` alike: a table with ``m`` edges has ``m + 1`` bins),
    - for ``delta > 0``, ``lookup_edges[lookup_start[j]:lookup_start[j + 1]]``
      and ``lookup_values[lookup_start[j] + j:lookup_start[j + 1] + j + 1]``
      as its raw-score step function (see ``UMDTable``).

    ``table(j)`` returns table ``j`` as a ``UMDTable``; ``len(edge_start) - 1``
    is the number of tables.
    """

    edges: np.ndarray
    edge_start: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    delta: float
    lookup_edges: np.ndarray | None = None
    lookup_start: np.ndarray | None = None
    lookup_values: np.ndarray | None = None

    @property
    def n_tables(self):
        return self.edge_start.shape[0] - 1

    def table(self, j):
        """Table ``j`` as a ``UMDTable`` (views, no copy)."""
        e0, e1 = int(self.edge_start[j]), int(self.edge_start[j + 1])
        lookup = (None, None)
        if self.lookup_start is not None and e1 > e0:
            l0, l1 = int(self.lookup_start[j]), int(self.lookup_start[j + 1])
            lookup = (self.lookup_edges[l0:l1], self.lookup_values[l0 + j : l1 + j + 1])
        return UMDTable(
            edges=self.edges[e0:e1],
            values=self.values[e0 + j : e1 + j + 1],
            counts=self.counts[e0 + j : e1 + j + 1],
            delta=self.delta,
            lookup_edges=lookup[0],
            lookup_values=lookup[1],
        )


def _as_cell_tables(t):
    """A ``UMDTable`` as a one-table ``CellTables`` (a ``CellTables`` as is)."""
    if isinstance(t, CellTables):
        return t
    m = t.edges.shape[0]
    out = CellTables(
        edges=t.edges,
        edge_start=np.array([0, m], dtype=np.int64),
        values=t.values,
        counts=t.counts,
        delta=float(t.delta),
    )
    if t.delta > 0:
        if m and t.lookup_edges is None:
            t = _with_lookup(t, None)
        le = t.lookup_edges if m else np.empty(0)
        lv = t.lookup_values if m else t.values[:1]
        out = out._replace(
            lookup_edges=le,
            lookup_start=np.array([0, le.shape[0]], dtype=np.int64),
            lookup_values=lv,
        )
    return out


def stack_tables(tables):
    """Stack ``UMDTable`` and ``CellTables`` (one ``delta``) into one ``CellTables``.

    Tables keep their order (a ``CellTables`` contributes its tables in
    order); no loop over the tables of a ``CellTables``. For ``delta > 0``
    every table gets its raw-score step function (built as ``umd_predict``
    builds it when missing).
    """
    parts = [_as_cell_tables(t) for t in tables]
    delta = parts[0].delta
    if any(p.delta != delta for p in parts):
        raise ValueError("stack_tables: all tables must share one delta.")

    def starts(name):
        arrs = [getattr(p, name) for p in parts]
        tot = np.cumsum([0] + [a[-1] for a in arrs[:-1]])
        return np.concatenate(
            [arrs[0][:1]] + [a[1:] + o for a, o in zip(arrs, tot, strict=True)]
        )

    out = CellTables(
        edges=np.concatenate([p.edges for p in parts]),
        edge_start=starts("edge_start"),
        values=np.concatenate([p.values for p in parts]),
        counts=np.concatenate([p.counts for p in parts]),
        delta=delta,
    )
    if delta > 0:
        out = out._replace(
            lookup_edges=np.concatenate([p.lookup_edges for p in parts]),
            lookup_start=starts("lookup_start"),
            lookup_values=np.concatenate([p.lookup_values for p in parts]),
        )
    return out


def segment_lookup(tables):
    """Prepare ``tables`` (a ``CellTables``) for ``umd_predict_segments``.

    A ``TableGrid`` (:mod:`._grid`) of the step functions prediction reads (cost
    ``O(K)`` for ``K`` breakpoints in all tables, memory about 24 bytes
    per breakpoint): prepare once per prediction call, not per block.
    """
    return table_grid(*_step_arrays(tables))


def _step_arrays(tables):
    """``(steps, start, values)`` that prediction reads: the raw-score step
    function for ``delta > 0``, else the edges themselves."""
    if tables.delta == 0 or tables.lookup_edges is None:
        return tables.edges, tables.edge_start, tables.values
    return tables.lookup_edges, tables.lookup_start, tables.lookup_values


def umd_predict_segments(tables, x, table, lookup=None):
    """Evaluate table ``table[i]`` of a ``CellTables`` at raw score ``x[i]``.

    The same numbers as ``umd_predict(tables.table(table[i]), x[i:i+1])``
    for every row, in one pass over all rows: one search into the stacked
    step functions and one gather; only rows whose nudge interval straddles
    an edge (``delta > 0``, NaN in the lookup) take the exact slower path.
    ``lookup``, from :func:`segment_lookup` on the same ``tables``, replaces
    the search by per-table grid counts and a gather (same numbers, several
    times faster, and flat in the size of the tables); without it the
    tables are searched with offset keys (the reference).
    """
    j = np.asarray(table, dtype=np.intp)
    if lookup is not None:
        b = grid_positions(lookup, x, j)
        out = lookup.values.take(b)
    else:
        steps, start, vals = _step_arrays(tables)
        b = _segmented_search(steps, start, x, j)
        b += start[j]
        b += j
        out = vals[b]
    del b
    if tables.delta == 0 or tables.lookup_edges is None:
        return out
    # NaN marks the windows around the edges (exact path below); one sum
    # finds whether there is any (the table values are finite)
    if np.isnan(np.add.reduce(out)):
        rows = np.flatnonzero(np.isnan(out))
        out[rows] = _straddle_average_segments(tables, x[rows], j[rows])
    return out


def _segment_windows(tables):
    """``_windows`` of every table (its own ``tol``), stacked."""
    edges, delta, es = tables.edges, tables.delta, tables.edge_start
    top = edges * (1.0 + delta)
    m = np.diff(es)
    has = np.flatnonzero(m)
    mx = np.zeros(m.shape[0])
    if has.size:
        mx[has] = np.maximum.reduceat(np.abs(top), es[has])
    tol = 8.0 * np.finfo(np.float64).eps * (np.repeat(mx, m) + delta)
    return top - delta - tol, top + tol


def _straddle_average_segments(tables, xs, j):
    """``_straddle_average`` for rows of many tables (same numbers)."""
    es = tables.edge_start
    w_lo, w_hi = _segment_windows(tables)
    m = es[j + 1] - es[j]
    key = np.minimum(_bisect(w_hi, es[j], es[j + 1], xs, "left") - es[j], m - 1)
    gkey = es[j] + key
    E = tables.edges.shape[0]
    rep = np.empty(E)
    rep[gkey] = xs
    keys = np.flatnonzero(np.bincount(gkey, minlength=E))
    kt = np.repeat(np.arange(es.shape[0] - 1), np.diff(es))[keys]
    avg = np.empty(E)
    avg[keys] = _nudge_average_segments(tables, rep[keys], kt)
    same = xs == rep[gkey]
    out = avg[gkey]
    if not same.all():
        out[~same] = _nudge_average_segments(tables, xs[~same], j[~same])
    return out


def _nudge_average_segments(tables, x, j):
    """``_nudge_average`` of table ``j[i]`` at ``x[i]`` (same numbers)."""
    edges, values, delta, es = (
        tables.edges,
        tables.values,
        tables.delta,
        tables.edge_start,
    )
    s = 1.0 + delta
    lo = x / s
    hi = (x + delta) / s
    e0, e1 = es[j], es[j + 1]
    k0 = _bisect(edges, e0, e1, lo, "right") - e0
    k1 = _bisect(edges, e0, e1, hi, "right") - e0
    n_seg = k1 - k0 + 1
    r = np.repeat(np.arange(x.shape[0]), n_seg)
    off = np.arange(r.shape[0]) - np.repeat(np.cumsum(n_seg) - n_seg, n_seg)
    b = k0[r] + off
    er, mr = e0[r], (e1 - e0)[r]
    left = np.where(off == 0, lo[r], edges[er + np.maximum(b - 1, 0)])
    right = np.where(b == k1[r], hi[r], edges[er + np.minimum(b, mr - 1)])
    seg = np.maximum(right - left, 0.0)
    vals = values[er + j[r] + b]
    num = np.bincount(r, weights=seg * vals, minlength=x.shape[0])
    den = np.bincount(r, weights=seg, minlength=x.shape[0])
    plain = values[_bisect(edges, e0, e1, x, "right") + j]
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), plain)


def _stable_argsort_small(k, kmax):
    """Stable argsort of non-negative integers ``k <= kmax < 2**32``.

    NumPy's stable sort of 16-bit integers is a radix sort, so one or two
    passes over 16-bit digits beat a comparison sort of int64 keys.
    """
    if kmax < 2**16:
        return np.argsort(k.astype(np.uint16, copy=False), kind="stable")
    p = np.argsort((k & 0xFFFF).astype(np.uint16), kind="stable")
    return p[np.argsort((k[p] >> 16).astype(np.uint16), kind="stable")]


def _segmented_cumsum(v, start, counts):
    """``np.cumsum`` restarted at every segment ``[start[s], start[s] + counts[s])``.

    Exact: each segment is accumulated from zero, left to right, as
    ``np.cumsum`` of the segment alone would (segments of similar length
    are padded into one 2-D array, one ``np.cumsum(axis=1)`` per length
    class of powers of two).
    """
    out = np.empty_like(v)
    nz = counts > 0
    cls = np.zeros(counts.shape[0], dtype=np.int64)
    cls[nz] = np.ceil(np.log2(counts[nz])).astype(np.int64)
    for c in np.unique(cls[nz]):
        segs = np.flatnonzero(nz & (cls == c))
        width = 1 << int(c)
        col = np.arange(width)
        valid = col[None, :] < counts[segs][:, None]
        idx = (start[segs][:, None] + col[None, :])[valid]
        pad = np.zeros((segs.shape[0], width))
        pad[valid] = v[idx]
        out[idx] = np.cumsum(pad, axis=1)[valid]
    return out


def _index_dtype(n):
    """int32 for indices and counts below ``n`` when they fit, else intp."""
    return np.int32 if n < 2**31 - 1 else np.intp


def score_order(h, sample_weight=None):
    """The argsort of the scores that ``umd_fit_segments`` needs (its sort).

    Stable when there are weights (their cumulative sums follow the order
    of tied scores). int32 below 2**31 rows (half the memory of NumPy's
    int64). Compute it once to share it between calls.
    """
    o = np.argsort(h, kind="stable" if sample_weight is not None else None)
    if _index_dtype(h.shape[0]) is np.intp:
        return o
    return _narrow_in_place(o)


def _narrow_in_place(o):
    """int64 indices below 2**31 as int32, in the first half of their memory.

    Copied block by block from the front (each int32 block lands on int64
    entries already read), then the buffer is shrunk to half: no second
    N-sized array exists at any time (``astype`` would need 12 bytes per
    row at once).
    """
    n = o.shape[0]
    if n == 0 or not (o.flags.owndata and o.flags.c_contiguous):
        return o.astype(np.int32)
    narrow = o.view(np.int32)[:n]
    for a in range(0, n, _CHUNK):
        # overlaps its source only in the first block, which NumPy buffers
        narrow[a : a + _CHUNK] = o[a : a + _CHUNK]
    del narrow
    o.resize((n + 1) // 2, refcheck=False)
    return o.view(np.int32)[:n]


class SegmentOrder(NamedTuple):
    """Rows sorted by (segment, score), the result of :func:`segment_order`.

    ``order[start[s]:start[s + 1]]`` are the rows of segment ``s`` in the
    order of ``order_of_scores`` (so tied scores keep it); rows outside
    every segment, and rows of weight zero, are left out.
    """

    order: np.ndarray
    start: np.ndarray


def segment_order(order_of_scores, segment, n_segments, sample_weight=None):
    """Stable counting sort of the score order by segment, block by block.

    Parameters
    ----------
    order_of_scores : ndarray of shape (n,), int
        ``score_order(h, sample_weight)``.
    segment : ndarray of shape (n,), int, callable, or None
        Segment ``0 .. S - 1`` of every row (negative: none), or a function
        returning the segments of an array of row indices (so that no
        N-sized segment array is needed); ``None``: every row is in segment
        0 (``S = 1``), and the score order is returned as is.
    n_segments : int
        ``S``.
    sample_weight : ndarray of shape (n,), or None
        Rows of weight ``<= 0`` are left out.

    Returns
    -------
    SegmentOrder
        ``order`` in int32 below 2**31 rows. The work memory is one block's
        (no N-sized key or permutation), so a caller can drop
        ``order_of_scores`` afterwards and keep only the result.
    """
    o = order_of_scores
    n = o.shape[0]
    S = int(n_segments)
    if segment is None and (sample_weight is None or np.all(sample_weight > 0)):
        return SegmentOrder(order=o, start=np.array([0, n], dtype=np.int64))

    def keys(rows):
        """Segment of the rows; ``S`` for the rows left out."""
        if segment is None:
            k = np.zeros(rows.shape[0], dtype=np.intp)
        else:
            k = segment(rows) if callable(segment) else segment[rows]
            k = np.array(k, dtype=np.intp)
        out = k < 0
        if sample_weight is not None:
            out |= ~(sample_weight[rows] > 0)
        k[out] = S
        return k

    counts = np.zeros(S + 1, dtype=np.int64)
    for a in range(0, n, _CHUNK):
        counts += np.bincount(keys(o[a : a + _CHUNK]), minlength=S + 1)
    start = np.concatenate(([0], np.cumsum(counts)))
    order = np.empty(int(start[S]), dtype=_index_dtype(n))
    cursor = start[:-1].copy()
    for a in range(0, n, _CHUNK):
        oc = o[a : a + _CHUNK]
        k = keys(oc)
        cnt = np.bincount(k, minlength=S + 1)
        p = _stable_argsort_small(k, S)
        ks = k[p]
        # rank of each row among the block's rows of its segment, stably
        dest = cursor[ks] + (np.arange(ks.shape[0]) - (np.cumsum(cnt) - cnt)[ks])
        keep = ks < S
        order[dest[keep]] = oc[p[keep]]
        cursor += cnt
    return SegmentOrder(order=order, start=start[: S + 1])


def _integer_max(v):
    """``max |v|`` if every ``v`` is an integer, else ``inf`` (blockwise)."""
    top = 0.0
    for a in range(0, v.shape[0], _CHUNK):
        c = v[a : a + _CHUNK]
        if not np.array_equal(c, np.floor(c)):
            return np.inf
        if c.shape[0]:
            top = max(top, float(np.max(np.abs(c))))
    return top


def _value_slots(h, order, start, gedge, nb):
    """Value slot of every sorted row (int32 below 2**31 slots).

    The slot is the row's table bin by value in the values layout: the edge
    rows of its segment at or before the end of its run of equal scores,
    plus the segment number -- both counted as events at sorted positions
    (edge rows repeat when a segment has fewer than ``B_s - 1`` rows; every
    segment start after the first is one event). Blockwise, in place.
    """
    nv = order.shape[0]
    S = start.shape[0] - 1
    it = _index_dtype(nb + 1)
    V = np.zeros(nv + 1, dtype=it)
    np.add.at(V, gedge + 1, 1)
    np.add.at(V, start[1:S] + 1, 1)
    carry = 0
    for a in range(0, nv + 1, _CHUNK):  # cumsum in place, block by block
        Vc = V[a : a + _CHUNK]
        Vc[0] += carry
        np.cumsum(Vc, out=Vc)
        carry = Vc[-1]
    V = V[1:]
    # A run of tied scores takes the slot of its last row: V is
    # non-decreasing, so that is the smallest slot at a run end at or after
    # the row. Blockwise from the end, carrying the minimum.
    big = np.iinfo(it).max
    seg_last = start[1:] - 1
    carry = big
    for b_hi in range(nv, 0, -_CHUNK):
        a = max(b_hi - _CHUNK, 0)
        hc = h[order[a : min(b_hi + 1, nv)]]
        tied = np.zeros(b_hi - a, dtype=bool)  # position p tied with p + 1
        np.equal(hc[1:], hc[:-1], out=tied[: hc.shape[0] - 1])
        tied[seg_last[(seg_last >= a) & (seg_last < b_hi)] - a] = False
        Vc = V[a:b_hi]
        if tied.any():
            Vc[tied] = big
            rev = np.minimum.accumulate(Vc[::-1])
            np.minimum(rev, carry, out=rev)
            Vc[:] = rev[::-1]
        carry = Vc[0]
    return V


def _segment_edges(start, counts, B, N, cw):
    """``(es, seg_e, pos, gedge)``: every segment's edge positions ``A_k``
    (``edge_positions``) and the sorted positions of its edge rows."""
    S = B.shape[0]
    m = B - 1
    es = np.concatenate(([0], np.cumsum(m)))
    E = int(es[-1])
    seg_e = np.repeat(np.arange(S), m)
    k = np.arange(E, dtype=np.int64) - es[seg_e] + 1
    Ne, Be = N[seg_e], B[seg_e]
    integral = Ne == np.floor(Ne)
    pos = np.empty(E)
    n1 = Ne[integral].astype(np.int64) + 1
    pos[integral] = (k[integral] * n1 + Be[integral] - 1) // Be[integral]
    fl = ~integral
    pos[fl] = np.ceil(k[fl] * (Ne[fl] + 1.0) / Be[fl])
    if cw is None:
        edge_rows = np.minimum(pos.astype(np.int64) - 1, counts[seg_e] - 1)
    else:
        lo_e = start[seg_e]
        edge_rows = np.minimum(
            _bisect(cw, lo_e, start[seg_e + 1], pos, "left") - lo_e, counts[seg_e] - 1
        )
    return es, seg_e, pos, start[seg_e] + edge_rows


def umd_fit_segments(
    h,
    t,
    sample_weight,
    segment,
    n_bins,
    *,
    delta=0.0,
    order_of_scores=None,
    rows=None,
    labels=False,
):
    """Fit one UMD table (Alg. 4) per segment of rows, all at once.

    Table ``s`` is exactly ``umd_fit(h[rows], t[rows], w[rows], n_bins[s],
    delta=delta, labels=labels)`` with ``rows = np.flatnonzero(segment == s)`` (in row
    order), bit for bit, but computed without a loop over segments: one
    sort of the rows by (segment, score), then every segment's edge
    positions, bin sums and tie redistribution at once.

    Parameters
    ----------
    h, t : ndarray of shape (n,), float64
        Scores (already nudged) and targets.
    sample_weight : ndarray of shape (n,), float64, or None
        Frequency weights; rows of weight zero are ignored.
    segment : ndarray of shape (n,), int, callable, or None
        Segment of every row, ``0 .. S - 1``; ``-1`` (or any negative)
        leaves the row out of every table. ``None``: one segment of all
        rows (``S = 1``; no second sort). A callable, as for
        :func:`segment_order`. Ignored when ``rows`` is given.
    n_bins : array-like of int, shape (S,)
        ``B_s >= 1`` for every segment; every segment needs at least one
        row (of positive weight).
    delta : float
        Tie-breaking ``delta`` of the scores (as for ``umd_fit``).
    order_of_scores : ndarray of shape (n,), int, or None
        ``score_order(h, sample_weight)``, when the caller already has it
        (e.g. to fit the root and the cells from one sort).
    rows : SegmentOrder or None
        ``segment_order(order_of_scores, segment, S, sample_weight)``, when
        the caller made it (and dropped the score order to save memory).
    labels : bool
        ``t`` are 0/1 labels: every table's bin means go through
        :func:`~sklearn_betacal._kernels._binning.label_floor`.

    Returns
    -------
    CellTables
        ``S`` tables, table ``s`` for segment ``s``.

    Notes
    -----
    Memory beyond the inputs: the sorted rows and one int32 bin index per
    sorted row (8 bytes per row), plus, unless the targets and weights are
    integers (labels; their sums are exact in any order), one int64 bin
    index per row in row order, so that the bin sums add up in row order
    as ``umd_fit``'s do; with weights, their cumulative sums (8 bytes).
    """
    tables = _fit_segments(
        h, t, sample_weight, segment, n_bins, order_of_scores, rows, labels
    )
    # (the fit's temporaries are gone by now)
    tables = tables._replace(delta=float(delta))
    if delta > 0:
        tables = _with_lookup_segments(tables)
    return tables


def _fit_segments(
    h, t, sample_weight, segment, n_bins, order_of_scores, rows, labels=False
):
    """``umd_fit_segments`` without the raw-score lookup (delta 0)."""
    B = np.asarray(n_bins, dtype=np.int64)
    S = B.shape[0]
    n = h.shape[0]
    w = sample_weight
    if rows is None:
        if segment is None and S != 1:
            raise ValueError("umd_fit_segments: segment=None is one segment.")
        o = score_order(h, w) if order_of_scores is None else order_of_scores
        rows = segment_order(o, segment, S, w)
        del o
    order, start = rows
    start = np.asarray(start, dtype=np.int64)
    counts = np.diff(start)
    if counts.shape[0] != S:
        raise ValueError("umd_fit_segments: one n_bins per segment.")
    if np.any(counts == 0):
        raise ValueError("umd_fit_segments: every segment needs at least one row.")
    nv = int(start[-1])

    if w is None:
        N = counts.astype(np.float64)
        cw = None
    else:
        cw = _segmented_cumsum(w[order], start, counts)
        N = cw[start[1:] - 1]

    # Alg. 4, lines 1-5 for every segment: edge positions and edge rows
    es, seg_e, pos, gedge = _segment_edges(start, counts, B, N, cw)
    E = int(es[-1])
    vo = es[:-1] + np.arange(S)  # first value of every table
    nb = E + S
    edges = h[order[gedge]]

    # Value slot of every sorted row (its table's bin by value, in the
    # values layout): the edge rows of its segment at or before the end of
    # its run of equal scores, plus the segment number -- both counted as
    # events at sorted positions (edge rows repeat when a segment has fewer
    # than B_s - 1 rows; every segment start after the first is one event).
    V = _value_slots(h, order, start, gedge, nb)

    # slot -> the edge just below it (the last edge <= its scores); -1 for a
    # segment's first slot and for the slot nb of the rows left out
    edge_below = np.arange(nb + 1, dtype=np.intp)
    edge_below[:nb] -= np.repeat(np.arange(S), B) + 1
    edge_below[vo] = -1
    edge_below[nb] = -1

    wt = t if w is None else t * w
    # Labels (and integer weights) sum exactly in any order: bin sums over
    # the sorted rows, blockwise. Otherwise by bincount in row order, as
    # umd_fit adds them (bit for bit).
    # (every partial sum an integer below 2**53: |t| * total weight)
    total = float(nv) if w is None else _integer_max(w) * nv
    exact_any_order = total * _integer_max(t) < 2.0**53 if total < np.inf else False
    if exact_any_order:
        sums = np.zeros(nb)
        n_slot = np.zeros(nb, dtype=np.int64)
        mass = None if w is None else np.zeros(nb)
        found = []
        for a in range(0, nv, _CHUNK):
            r = order[a : a + _CHUNK]
            g = V[a : a + _CHUNK].astype(np.intp)
            sums += np.bincount(g, weights=wt[r], minlength=nb)
            n_slot += np.bincount(g, minlength=nb)
            if w is not None:
                mass += np.bincount(g, weights=w[r], minlength=nb)
            ge = edge_below[g]
            ok = ge >= 0
            ok[ok] = h[r[ok]] == edges[ge[ok]]
            found.append(np.flatnonzero(ok) + a)
        if w is None:
            mass = n_slot.astype(np.float64)
        at = np.concatenate(found)
        del found
        Gr = V[at].astype(np.intp)
        erow = order[at]
        del at, r, g, ge, ok
    else:
        G = np.full(n, nb, dtype=np.intp)
        G[order] = V
        sums = np.bincount(G, weights=wt, minlength=nb + 1)[:nb]
        n_slot = np.bincount(G, minlength=nb + 1)[:nb]  # rows per slot
        if w is None:
            mass = n_slot.astype(np.float64)
        else:
            mass = np.bincount(G, weights=w, minlength=nb + 1)[:nb]
        # rows equal to an edge value, found in row order, block by block,
        # so that the bincounts below add in row order
        found = []
        for a in range(0, n, _CHUNK):
            ge = edge_below[G[a : a + _CHUNK]]
            ok = ge >= 0
            ok[ok] = h[a : a + _CHUNK][ok] == edges[ge[ok]]
            found.append(np.flatnonzero(ok) + a)
        erow = np.concatenate(found)
        del found
        Gr = G[erow]
        del G, ge, ok
    del V

    if E:
        # Rows equal to an edge value (the edge rows themselves at least):
        # _redistribute_edge_blocks for all segments at once.
        kk = edge_below[Gr]
        wtr = wt[erow]
        blk_s = np.bincount(kk, weights=wtr, minlength=E)
        if w is None:
            blk_w = np.bincount(kk, minlength=E).astype(np.float64)
        else:
            blk_w = np.bincount(kk, weights=w[erow], minlength=E)
        sums -= np.bincount(Gr, weights=wtr, minlength=nb)
        del Gr, wtr, erow, kk
        mass[np.arange(E) + seg_e + 1] -= blk_w
        sums[mass <= 0] = 0.0
        mass[mass <= 0] = 0.0

        ks = np.flatnonzero(blk_w)
        sk = seg_e[ks]
        # rows of the segment below edges[ks]: those of its slots vo[s] ..
        # ks + s (by value, before the move above)
        first_of = np.concatenate(([0], np.cumsum(n_slot)))
        below = first_of[ks + sk + 1] - first_of[vo[sk]]
        del first_of, n_slot
        if cw is None:
            lo = below.astype(np.float64)
        else:
            at = start[sk] + below - 1
            lo = np.where(below > 0, cw[np.maximum(at, 0)], 0.0)
        hi = lo + blk_w[ks]
        mk = blk_s[ks] / blk_w[ks]
        # interiors (L_b, U_b] of every table's bins, in the values layout
        L = np.zeros(nb)
        L[np.arange(E) + seg_e + 1] = pos
        U = np.empty(nb)
        U[np.arange(E) + seg_e] = pos - 1.0
        U[vo + B - 1] = N
        v0 = vo[sk]
        # searchsorted in every table's own bounds at once (exact)
        vstart = np.append(vo, nb)
        b0 = _segmented_search(U, vstart, lo, sk, side="right")
        b1 = _segmented_search(L, vstart, hi, sk, side="left") - 1
        n_pairs = np.maximum(b1 - b0 + 1, 0)
        r = np.repeat(np.arange(ks.shape[0]), n_pairs)
        gb = np.repeat(v0 + b0, n_pairs) + (
            np.arange(r.shape[0]) - np.repeat(np.cumsum(n_pairs) - n_pairs, n_pairs)
        )
        del b0, b1, n_pairs, v0, below
        overlap = np.minimum(hi[r], U[gb]) - np.maximum(lo[r], L[gb])
        del L, U
        overlap = np.maximum(overlap, 0.0)
        sums += np.bincount(gb, weights=overlap * mk[r], minlength=nb)
        mass += np.bincount(gb, weights=overlap, minlength=nb)

    empty = mass <= 0
    if empty.any():
        values = np.empty(nb)
        full = np.ones(nb, dtype=bool)
        # Only possible when a segment has fewer than 2 B_s points: such a
        # segment's empty bins get its overall mean, as umd_fit does.
        tab = np.repeat(np.arange(S), B)
        for s in np.unique(tab[empty]).tolist():
            rs = np.sort(order[start[s] : start[s + 1]])
            total = float(rs.shape[0]) if w is None else np.sum(w[rs])
            sl = slice(vo[s], vo[s] + B[s])
            values[sl] = np.where(
                empty[sl],
                np.sum(wt[rs]) / total,
                sums[sl] / np.where(empty[sl], 1.0, mass[sl]),
            )
            full[sl] = False
        values[full] = sums[full] / mass[full]
    else:
        values = sums / mass
    if labels:
        # every table's nominal bin weight N_s / B_s (umd_fit's N / B)
        full = ~empty
        values[full] = label_floor(values[full], np.repeat(N / B, B)[full])
    return CellTables(edges=edges, edge_start=es, values=values, counts=mass, delta=0.0)


def _with_lookup_segments(tables):
    """``_with_lookup(table, None)`` for every table with an edge, stacked."""
    es, values = tables.edge_start, tables.values
    T = es.shape[0] - 1
    m = np.diff(es)
    E = int(es[-1])
    seg_e = np.repeat(np.arange(T), m)
    w_lo, w_hi = _segment_windows(tables)
    first = np.zeros(E, dtype=bool)
    first[es[:-1][m > 0]] = True
    first[1:] |= w_lo[1:] > w_hi[:-1]
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], E)[: starts.shape[0]] - 1
    cj = seg_e[starts]
    n_cl = np.bincount(cj, minlength=T)
    ls = np.concatenate(([0], np.cumsum(2 * n_cl)))
    le = np.empty(2 * starts.shape[0])
    le[0::2] = w_lo[starts]
    le[1::2] = np.nextafter(w_hi[ends], np.inf)
    lv = np.empty(le.shape[0] + T)
    lv[ls[:-1] + np.arange(T)] = values[es[:-1] + np.arange(T)]
    i = np.arange(starts.shape[0])
    lv[2 * i + cj + 1] = np.nan
    lv[2 * i + cj + 2] = values[ends + cj + 1]
    return tables._replace(lookup_edges=le, lookup_start=ls, lookup_values=lv)


__all__ = [
    "CellTables",
    "score_order",
    "segment_lookup",
    "segment_order",
    "stack_tables",
    "umd_fit_segments",
    "umd_predict_segments",
]
