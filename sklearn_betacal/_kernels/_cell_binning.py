# SPDX-License-Identifier: MIT
"""Uniform-mass double-dipping histogram binning (UMD), many tables at once.

The one UMD engine, pure NumPy: Algorithm 4 of the beta-calibration paper
(001, App. A.2), which is Alg. 1 of Gupta & Ramdas (2021), plus their
randomized tie-breaking (their Alg. 2), fitted for every segment of rows
(one table per partition cell, plus the root) without a loop over the
tables. A single table (``UMDBinner``, ``ScalingBinningCalibrator``, the
root of ``BetaBinningCalibrator``) is the one-segment case. The tests
compare every table with an independent single-table implementation
(``tests/_umd_oracle.py``), bit for bit.

Interface
---------
``tie_break(h, delta, rng) -> h_nudged``
    ``(h + U(0, delta)) / (1 + delta)``, one uniform draw per row (Gupta &
    Ramdas' public ``nudge``); values in ``[0, 1]`` stay in ``[0, 1]``.
``umd_fit_segments(h, t, sample_weight, segment, n_bins, *, delta=0.0,
order_of_scores=None, rows=None, labels=False, raw=None) -> CellTables``
    Table ``s`` is UMD of the rows with ``segment == s``: one sort by
    (segment, score) shared by all tables (``score_order`` and
    ``segment_order`` let the caller share it with the root's fit).
``stack_tables(tables) -> CellTables``
    ``CellTables`` back to back (root first, then cells).
``segment_lookup(tables) -> TableGrid``
    The per-table uniform grids that prediction counts with (prepared once
    per call; memory linear in the breakpoints).
``umd_predict_segments(tables, x, table=None, lookup=None) -> values``
    Table ``table[i]`` at raw score ``x[i]`` for every row (``None``: table
    0 for every row): with ``lookup`` a grid count and a gather, cost flat
    in the size of the tables; without it an offset search into the stacked
    step functions (the reference the tests compare with, byte for byte).
``label_floor(values, bin_weight) -> values``
    Bin means of labels kept within ``[f, 1 - f]``, ``f = 1 / (2 (m + 1))``
    for a table of nominal bin weight ``m = N / B``.
The grid itself (``table_grid``, ``grid_positions``) is in
:mod:`sklearn_betacal._kernels._grid`.

Conventions
-----------
A table's ``edges`` are the ``B - 1`` interior thresholds ``h_(A_1) ..
h_(A_{B-1})`` of Alg. 4, so ``np.searchsorted(edges, x, side="right")`` is
the bin index ``0 .. B-1`` (Alg. 4, line 12: ``h_(A_{b-1}) <= x <
h_(A_b)``). The outer bounds ``h_(0) = 0`` and ``h_(n+1) = 1`` of line 11
are replaced by ``-inf``/``+inf``: the same map on ``[0, 1]``, and the
natural extension to logit scores and to test values outside the fitted
range.

``values[b]`` is the (weighted) mean of ``t`` over the points *strictly*
between the edge points (line 9, ``mean(t_(l+1) .. t_(u-1))``): the edge
points themselves are left out of both neighbouring bins ("double dipping"
avoided), and ``counts[b]`` is the weight of those points.

Sample weights are frequency weights, measured in cumulative weight: a row
of weight ``k`` is ``k`` copies of the row at the same (already nudged)
score. Rows of weight zero are left out. Then ``N = sum(w)`` replaces ``n``
in Alg. 4, ``A_k = ceil(k (N + 1) / B)`` is a position on the
cumulative-weight axis, the copy occupying ``(A_k - 1, A_k]`` is the edge
point, and bin ``b`` averages the weight that lies in ``(A_{b-1}, A_b -
1]`` (the last bin: ``(A_{B-1}, N]``). For integer weights this is exactly
Alg. 4 run on the repeated rows.

Ties in ``h`` that survive (``delta = 0``, or repeated rows) are handled as
exchangeable: a block of rows with the same score that straddles an edge
position contributes its mean target to every position it covers. For
copies of one row that is exactly Alg. 4; for tied rows with different
targets it is the average of Alg. 4 over the orderings of the tie, so the
result never depends on the input order.

Test-time ties: with ``delta > 0`` Gupta & Ramdas also nudge each test
point, which makes the output random. Prediction returns its expectation
instead: the output at a raw score ``x`` is the average of the piecewise
constant calibrator over the nudge interval ``[x, x + delta] / (1 +
delta)``. This is deterministic and order-independent, equals the plain
lookup for every ``x`` whose nudge interval holds no edge, and, for a score
``v`` that was tied in the fit data, weighs each bin by (up to the
granularity of the random nudges) the share of ``v``'s nudged fit copies
that landed in it. It is read from each table's raw-score step function
(``lookup_edges``/``lookup_values``: NaN on the tiny windows where the
nudge interval holds an edge, computed exactly at prediction time, except
at a tied raw score of a one-table fit given ``raw``, whose expected output
is stored). The fit kernels work block by block (``_CHUNK`` rows) so that
their row-wise temporaries stay small.

References
----------
Gupta, C. and Ramdas, A. (2021). Distribution-free calibration guarantees for
histogram binning without sample splitting. ICML.
"""

from typing import NamedTuple

import numpy as np

from ._grid import _bisect, _segmented_search, grid_positions, table_grid

#: Rows per chunk of the fit kernels' row-wise temporaries.
_CHUNK = 1 << 16
#: From this many rows (and four per edge) on, a one-table fit counts the
#: bins with a uniform grid instead of ``np.searchsorted``.
_GRID_MIN_ROWS = 1 << 12


def tie_break(h, delta, rng):
    """Randomized tie-breaking of Gupta & Ramdas: ``(h + U(0, delta)) / (1 + delta)``.

    One ``rng.uniform(0, delta)`` draw per row, in row order, so the same
    ``rng`` state gives the same nudges. Probabilities stay in ``[0, 1]``.
    ``delta == 0`` returns ``h`` itself (no copy, no draw).
    """
    if delta == 0:
        return h
    # in place on the draws: one N-sized array, the same numbers as
    # (h + u) / (1 + delta)
    out = rng.uniform(0.0, delta, size=h.shape[0])
    out += h
    out /= 1.0 + delta
    return out


def label_floor(values, bin_weight):
    """Bin means of 0/1 labels kept within ``[f, 1 - f]``, ``f = 1 / (2 (m + 1))``.

    ``m`` is the table's nominal bin weight ``N / B`` (its total weight over
    its number of bins; a scalar, or one per bin). A bin whose labels all
    agree then predicts about the Krichevsky-Trofimov estimate ``(0 + 1/2) /
    (n + 1)`` of its ``n ~ m`` labels (or one minus it) instead of a
    probability of exactly 0 or 1, whose log loss is infinite on the first
    disagreeing row. A UMD bin holds at most ``ceil((N + 1) / B) < 2 (m +
    1)`` points, so every other bin mean of unit-weight labels (at least one
    over the bin's count) is above ``f`` and returned unchanged, bit for bit.
    ``m`` is the nominal weight and not the bin's own so that a row of
    weight 2 and two copies of it, which give the same means, give the same
    floor too. Empty bins keep their value.

    The Thm 3.1 / Thm A.1 bound is kept: with ``|E[Y | bin] - mean| <=
    eps`` and ``E[Y | bin]`` in ``[0, 1]``, a mean below ``f`` moved up to
    ``f`` is within ``max(f, mean + eps - f) <= eps`` of ``E[Y | bin]`` (and
    so at the top) whenever ``f <= eps``: ``eps = sqrt(log(2B / alpha) / (2
    c)) >= 1 / (2 c) >= f`` for the smallest bin count ``c <= m + 1`` (for
    ``alpha < 1``, ``log(2B / alpha) > 1 / (2 c)`` once ``c >= 1``).
    """
    f = 0.5 / (np.asarray(bin_weight, dtype=np.float64) + 1.0)
    return np.minimum(np.maximum(values, f), 1.0 - f)


class CellTables(NamedTuple):
    """Many fitted UMD calibrators stored back to back.

    Table ``j`` (``0 <= j < n_tables``) has

    - ``edges[edge_start[j]:edge_start[j + 1]]`` as its edges (the ``B_j -
      1`` interior thresholds, nudged scale),
    - ``values[edge_start[j] + j:edge_start[j + 1] + j + 1]`` as its bin
      values (and ``counts``, the weight behind each, alike: a table with
      ``m`` edges has ``m + 1`` bins),
    - for ``delta > 0``, ``lookup_edges[lookup_start[j]:lookup_start[j +
      1]]`` and ``lookup_values[lookup_start[j] + j:lookup_start[j + 1] + j
      + 1]`` as its raw-score step function (see the module docstring).

    ``table(j)`` returns table ``j`` as a one-table ``CellTables``;
    ``len(edge_start) - 1`` is the number of tables. Estimators store
    ``_asdict()`` (plain arrays, loadable by skops).
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
        """Table ``j`` as a one-table ``CellTables`` (views, no copy)."""
        e0, e1 = int(self.edge_start[j]), int(self.edge_start[j + 1])
        out = CellTables(
            edges=self.edges[e0:e1],
            edge_start=np.array([0, e1 - e0], dtype=np.int64),
            values=self.values[e0 + j : e1 + j + 1],
            counts=self.counts[e0 + j : e1 + j + 1],
            delta=self.delta,
        )
        if self.lookup_start is not None:
            l0, l1 = int(self.lookup_start[j]), int(self.lookup_start[j + 1])
            out = out._replace(
                lookup_edges=self.lookup_edges[l0:l1],
                lookup_start=np.array([0, l1 - l0], dtype=np.int64),
                lookup_values=self.lookup_values[l0 + j : l1 + j + 1],
            )
        return out


def stack_tables(tables):
    """Stack ``CellTables`` (one ``delta``) into one ``CellTables``.

    Tables keep their order (a ``CellTables`` contributes its tables in
    order); no loop over the tables of a ``CellTables``.
    """
    parts = list(tables)
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


def umd_predict_segments(tables, x, table=None, lookup=None):
    """Evaluate table ``table[i]`` of a ``CellTables`` at raw score ``x[i]``.

    Alg. 4, line 12 (``values[searchsorted(edges, x, "right")]``) for
    ``delta == 0``; for ``delta > 0`` the expectation of that lookup over
    the test-time nudge (see the module docstring). One pass over all rows:
    one search into the stacked step functions and one gather; only rows
    whose nudge interval straddles an edge (NaN in the lookup) take the
    exact slower path. ``table=None``: table 0 for every row (a one-table
    ``CellTables``). ``lookup``, from :func:`segment_lookup` on the same
    ``tables``, replaces the search by per-table grid counts and a gather
    (same numbers, several times faster, and flat in the size of the
    tables); without it the tables are searched with offset keys (the
    reference).
    """
    if table is None:
        j = None
    else:
        j = np.asarray(table, dtype=np.intp)
    if lookup is not None:
        b = grid_positions(lookup, x, j)
        out = lookup.values.take(b)
    else:
        steps, start, vals = _step_arrays(tables)
        if j is None:
            j = np.zeros(x.shape[0], dtype=np.intp)
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
        jr = np.zeros(rows.shape[0], dtype=np.intp) if j is None else j[rows]
        out[rows] = _straddle_average_segments(tables, x[rows], jr)
    return out


def umd_predict_table(table, x):
    """A one-table ``CellTables`` (or its ``_asdict()``, as estimators store
    it) at raw scores ``x``: :func:`umd_predict_segments` by grid."""
    tables = CellTables(**table) if isinstance(table, dict) else table
    return umd_predict_segments(tables, x, None, segment_lookup(tables))


def _segment_windows(tables):
    """:func:`_windows` of every table (its own ``tol``), stacked."""
    return _windows(tables.edges, tables.delta, tables.edge_start)


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
    raw=None,
):
    """Fit one UMD table (Alg. 4) per segment of rows, all at once.

    Table ``s`` is UMD of the rows ``np.flatnonzero(segment == s)``,
    computed without a loop over segments: one sort of the rows by
    (segment, score), then every segment's edge positions, bin sums and tie
    redistribution at once. Bit for bit the single-table oracle
    (``tests/_umd_oracle.py``) of each segment's rows in row order.

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
        Tie-breaking ``delta`` the scores were nudged with (:func:`tie_break`;
        0: none); stored for prediction.
    order_of_scores : ndarray of shape (n,), int, or None
        ``score_order(h, sample_weight)``, when the caller already has it
        (e.g. to fit the root and the cells from one sort).
    rows : SegmentOrder or None
        ``segment_order(order_of_scores, segment, S, sample_weight)``, when
        the caller made it (and dropped the score order to save memory).
    labels : bool
        ``t`` are 0/1 labels: every table's bin means go through
        :func:`label_floor`.
    raw : ndarray of shape (n,), float64, or None
        One segment only (``S = 1``): the scores before nudging. Lets the
        table store the expected output at every tied raw score, so that
        predicting tied confidences costs one lookup instead of the exact
        slow path (same numbers, faster).

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
    as the oracle's do; with weights, their cumulative sums (8 bytes).
    """
    if raw is not None and (len(n_bins) != 1 or delta <= 0):
        raw = None  # ties are stored for one table nudged with delta > 0
    tables, ties = _fit_segments(
        h, t, sample_weight, segment, n_bins, order_of_scores, rows, labels,
        raw=raw, delta=float(delta),
    )  # fmt: skip
    # (the fit's temporaries are gone by now)
    tables = tables._replace(delta=float(delta))
    if delta > 0:
        tables = _with_lookup_segments(tables, None if ties is None else ties.result())
    return tables


def _fit_segments(
    h, t, sample_weight, segment, n_bins, order_of_scores, rows, labels=False,
    *, raw=None, delta=0.0,
):  # fmt: skip
    """``(tables, ties)``: ``umd_fit_segments`` without the raw-score lookup
    (delta 0), and the :class:`_WindowTies` of ``raw`` (or ``None``)."""
    B = np.asarray(n_bins, dtype=np.int64)
    S = B.shape[0]
    n = h.shape[0]
    w = sample_weight
    # One unweighted table of all rows: its order statistics need the sorted
    # scores only (no argsort), and the rows are binned in row order by a
    # lookup into the edges; otherwise rows sorted by (segment, score).
    by_value = (
        rows is None and order_of_scores is None and segment is None and w is None
    )
    if by_value:
        if S != 1:
            raise ValueError("umd_fit_segments: segment=None is one segment.")
        hs = np.sort(h)
        order, start = None, np.array([0, n], dtype=np.int64)
    else:
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
    if by_value:
        edges = hs[gedge]
        del hs
    else:
        edges = h[order[gedge]]
    # one table: every slot is its bin
    ties = _WindowTies(edges, delta) if raw is not None and E else None

    # Value slot of every sorted row (its table's bin by value, in the
    # values layout): the edge rows of its segment at or before the end of
    # its run of equal scores, plus the segment number -- both counted as
    # events at sorted positions (edge rows repeat when a segment has fewer
    # than B_s - 1 rows; every segment start after the first is one event).
    # By value: every row's bin, in row order.
    V = None if by_value else _value_slots(h, order, start, gedge, nb)

    # slot -> the edge just below it (the last edge <= its scores); -1 for a
    # segment's first slot and for the slot nb of the rows left out
    edge_below = np.arange(nb + 1, dtype=np.intp)
    edge_below[:nb] -= np.repeat(np.arange(S), B) + 1
    edge_below[vo] = -1
    edge_below[nb] = -1

    wt = t if w is None else t * w
    # Labels (and integer weights) sum exactly in any order: bin sums over
    # the sorted rows, blockwise. Otherwise by bincount in row order, as
    # the single-table oracle adds them (bit for bit).
    # (every partial sum an integer below 2**53: |t| * total weight)
    total = float(nv) if w is None else _integer_max(w) * nv
    exact_any_order = total * _integer_max(t) < 2.0**53 if total < np.inf else False
    if exact_any_order and not by_value:
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
            if ties is not None:
                ties.add(h[r], g, raw[r])
        if w is None:
            mass = n_slot.astype(np.float64)
        at = np.concatenate(found)
        del found
        Gr = V[at].astype(np.intp)
        erow = order[at]
        del at, r, g, ge, ok
    else:
        if by_value:
            G = _bins_of(edges, h)
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
            if ties is not None:
                # (one table: only rows of weight zero are left out, slot nb)
                hc, gc, rc = h[a : a + _CHUNK], G[a : a + _CHUNK], raw[a : a + _CHUNK]
                if not by_value:
                    inside = gc < nb
                    hc, gc, rc = hc[inside], gc[inside], rc[inside]
                ties.add(hc, gc, rc)
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
        # segment's empty bins get its overall mean, as the oracle does.
        tab = np.repeat(np.arange(S), B)
        for s in np.unique(tab[empty]).tolist():
            rs = np.arange(n) if by_value else np.sort(order[start[s] : start[s + 1]])
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
        # every table's nominal bin weight N_s / B_s (the oracle's N / B)
        full = ~empty
        values[full] = label_floor(values[full], np.repeat(N / B, B)[full])
    tables = CellTables(
        edges=edges, edge_start=es, values=values, counts=mass, delta=0.0
    )
    return tables, ties


def _bins_of(edges, x):
    """``np.searchsorted(edges, x, side="right")`` of finite ``x`` (same
    numbers): many rows are counted with a grid
    (:func:`~sklearn_betacal._kernels._grid.table_grid`), about a third of
    the cost, for an ``O(len(edges))`` set-up."""
    K = edges.shape[0]
    if K == 0 or x.shape[0] < max(_GRID_MIN_ROWS, 4 * K):
        return np.searchsorted(edges, x, side="right")
    grid = table_grid(edges, np.array([0, K]), np.arange(K + 1, dtype=np.float64))
    # the grid's output is the count itself: read it as integers
    where = np.flatnonzero(~np.isnan(grid.values))
    count = np.zeros(grid.values.shape[0], dtype=np.intp)
    count[where] = grid.values[where].astype(np.intp)
    return count.take(grid_positions(grid, x))


def _windows(edges, delta, es=None):
    """Raw-score windows of the edges where the nudge interval may hold one.

    ``x``'s nudge interval ``[x, x + delta] / (1 + delta)`` lies above edge
    ``e`` iff ``x > e (1 + delta)`` and below it iff ``x < e (1 + delta) -
    delta``. The margin ``tol`` (per table of ``es``; ``None``: one table)
    only widens the windows, which sends borderline scores to the exact
    computation and cannot change a result.
    """
    top = edges * (1.0 + delta)
    if es is None:
        tol = _window_tol(top, delta)
    else:
        m = np.diff(es)
        has = np.flatnonzero(m)
        mx = np.zeros(m.shape[0])
        if has.size:
            mx[has] = np.maximum.reduceat(np.abs(top), es[has])
        tol = 8.0 * np.finfo(np.float64).eps * (np.repeat(mx, m) + delta)
    return top - delta - tol, top + tol


def _window_tol(top, delta):
    """The margin of one table's :func:`_windows` (``top = edges * (1 + delta)``)."""
    return 8.0 * np.finfo(np.float64).eps * (np.max(np.abs(top)) + delta)


def _near_margin(edges, delta):
    """How far from an edge (nudged scale) a row whose raw score is in a window lies.

    A raw score ``x`` in edge ``e``'s window of :func:`_windows` (``e (1 +
    delta) - delta - tol <= x <= e (1 + delta) + tol``), nudged to ``h = (x +
    u) / (1 + delta)`` with ``0 <= u <= delta``, has ``|h - e| <= (delta +
    tol) / (1 + delta)`` up to a few roundings of numbers below ``max|e| +
    delta``, each far below ``tol``; the factor 2 covers them. A row further
    than this from both edges of its own bin is further from every edge
    (the edges are sorted), so its raw score lies in no window.
    """
    return 2.0 * (delta + _window_tol(edges * (1.0 + delta), delta))


def _clusters(w_lo, w_hi, es):
    """First and last edge of every lookup cluster (overlapping windows of
    one table merged: the edges of one tied value), tables in order."""
    E = w_lo.shape[0]
    m = np.diff(es)
    first = np.zeros(E, dtype=bool)
    first[es[:-1][m > 0]] = True
    first[1:] |= w_lo[1:] > w_hi[:-1]
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], E)[: starts.shape[0]] - 1
    return starts, ends


class _WindowTies:
    """The tied raw score of each lookup cluster of one table, from the rows.

    A cluster window ``[c_lo, c_hi]`` has a tie ``v`` when at least two of
    the fit's raw scores lie in it and all of them equal ``v`` (a zero is
    returned as ``+0.0``). The fit hands over its rows block by block
    (nudged score, bin, raw score), in any order: only a row whose nudged
    score is within :func:`_near_margin` of an edge of its bin can have its
    raw score in a window, and then only in the cluster of that bin's lower
    or upper edge (between the edge of the window and the bin's edge lie
    only edges closer than ``delta``, whose windows overlap: one cluster).
    Each of the two is checked, and counts and disagreements are summed per
    cluster: no sort of the raw scores (0.25-0.7 s at 1e7).
    """

    def __init__(self, edges, delta):
        w_lo, w_hi = _windows(edges, delta)
        starts, ends = _clusters(w_lo, w_hi, np.array([0, edges.shape[0]]))
        K = starts.shape[0]
        of_edge = np.cumsum(np.isin(np.arange(edges.shape[0]), starts)) - 1
        # cluster K is "none": its window holds nothing
        self._below = np.concatenate(([K], of_edge))
        self._above = np.concatenate((of_edge, [K]))
        self._lo = np.append(w_lo[starts], np.inf)
        self._hi = np.append(w_hi[ends], -np.inf)
        self._edge_below = np.concatenate(([-np.inf], edges))
        self._edge_above = np.concatenate((edges, [np.inf]))
        self._margin = _near_margin(edges, delta)
        self._count = np.zeros(K + 1, dtype=np.int64)
        self._differ = np.zeros(K + 1)
        self._member = np.zeros(K + 1)
        self._has = np.zeros(K + 1, dtype=bool)

    def add(self, h, bins, raw):
        """Count a block of rows: nudged scores, their bins, raw scores."""
        near = (h - self._edge_below[bins] <= self._margin) | (
            self._edge_above[bins] - h <= self._margin
        )
        x, b = raw[near], bins[near]
        below, above = self._below[b], self._above[b]
        lo, hi = self._lo, self._hi
        win = np.where(
            (x >= lo[below]) & (x <= hi[below]),
            below,
            np.where((x >= lo[above]) & (x <= hi[above]), above, lo.shape[0] - 1),
        )
        K1 = lo.shape[0]
        self._count += np.bincount(win, minlength=K1)
        # a member of the block where a cluster is first seen (any of them)
        # stands for it: if they all agree it is the tie, if not some member
        # differs from it
        new = ~self._has[win]
        if new.any():
            self._member[win[new]] = x[new]
            self._has[win[new]] = True
        self._differ += np.bincount(win, weights=x != self._member[win], minlength=K1)

    def result(self):
        """Every cluster's tied raw score, NaN where there is none."""
        K = self._count.shape[0] - 1
        v = np.full(K, np.nan)
        ok = (self._count[:K] >= 2) & (self._differ[:K] == 0)
        v[ok] = self._member[:K][ok] + 0.0
        return v


def _with_lookup_segments(tables, tied=None):
    """Every table's raw-score step function (see the module docstring).

    Pieces per lookup cluster: ``[c_lo, v)`` NaN, ``[v, v+)`` the expected
    output at the cluster's tied raw score ``v`` (``tied``, one per cluster
    of all tables, NaN where none; ``None``: no ties stored), ``[v+, c_hi]``
    NaN, then the bin above the cluster until the next one; read with
    ``side="right"`` searches.
    """
    es, values = tables.edge_start, tables.values
    T = es.shape[0] - 1
    seg_e = np.repeat(np.arange(T), np.diff(es))
    w_lo, w_hi = _segment_windows(tables)
    starts, ends = _clusters(w_lo, w_hi, es)
    cj = seg_e[starts]
    v = np.full(starts.shape[0], np.nan) if tied is None else tied
    has_v = ~np.isnan(v)
    k = 2 + 2 * has_v
    offs = np.cumsum(k) - k
    ls = np.concatenate(([0], np.cumsum(np.bincount(cj, weights=k, minlength=T))))
    ls = ls.astype(np.int64)
    le = np.empty(int(k.sum()))
    lv = np.empty(le.shape[0] + T)
    lv[ls[:-1] + np.arange(T)] = values[es[:-1] + np.arange(T)]
    le[offs], lv[offs + cj + 1] = w_lo[starts], np.nan
    hv = np.flatnonzero(has_v)
    le[offs[hv] + 1] = v[hv]
    lv[offs[hv] + cj[hv] + 2] = _nudge_average_segments(tables, v[hv], cj[hv])
    le[offs[hv] + 2] = np.nextafter(v[hv], np.inf)
    lv[offs[hv] + cj[hv] + 3] = np.nan
    le[offs + k - 1] = np.nextafter(w_hi[ends], np.inf)
    lv[offs + k + cj] = values[ends + cj + 1]
    return tables._replace(lookup_edges=le, lookup_start=ls, lookup_values=lv)


__all__ = [
    "CellTables",
    "label_floor",
    "score_order",
    "segment_lookup",
    "segment_order",
    "stack_tables",
    "tie_break",
    "umd_fit_segments",
    "umd_predict_segments",
    "umd_predict_table",
]
