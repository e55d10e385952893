# SPDX-License-Identifier: MIT
"""The single-table UMD binning: a plain test oracle, not shipped.

Until session 17 this was the kernel of ``UMDBinner`` and
``ScalingBinningCalibrator``; every estimator now fits and predicts on the
segment engine :mod:`sklearn_betacal._kernels._cell_binning` (one table is
its one-segment case). The tests compare that engine with this independent,
table-at-a-time implementation of Algorithm 4 of the beta-calibration paper
(001, App. A.2), which is Alg. 1 of Gupta & Ramdas (2021), plus their
randomized tie-breaking (their Alg. 2), bit for bit.

Interface
---------
``tie_break(h, delta, rng) -> h_nudged``
    ``(h + U(0, delta)) / (1 + delta)``, one uniform draw per row (Gupta &
    Ramdas' public ``nudge``); values in ``[0, 1]`` stay in ``[0, 1]``.
``umd_fit(h, t, sample_weight, n_bins, *, delta=0.0, raw=None, labels=False)``
    Returns a ``UMDTable``.
    ``h``: float64 scores, already nudged by the caller when ties are to be
    broken (pass the same ``delta`` so that prediction can undo it in
    expectation); ``t``: float64 targets in ``[0, 1]`` (labels, or fitted
    values as Alg. 3 passes them); ``sample_weight``: float64 or ``None``;
    ``raw``: optionally the un-nudged scores, which makes predicting tied
    confidences a plain lookup (same results, faster); ``labels``: the
    targets are 0/1 labels, so a bin's mean is floored away from 0 and 1
    (:func:`label_floor`).
``label_floor(values, bin_weight) -> values``
    Bin means of labels kept within ``[f, 1 - f]``, ``f = 1 / (2 (m + 1))``
    for a table of nominal bin weight ``m = N / B``: about the
    Krichevsky-Trofimov estimate of a bin whose labels all agree, instead of
    a probability of exactly 0 or 1.
``umd_predict(table, x) -> values``
    Calibrated values at the *raw* (un-nudged) scores ``x``.

Conventions
-----------
``edges`` are the ``B - 1`` interior thresholds ``h_(A_1) .. h_(A_{B-1})`` of
Alg. 4, so ``np.searchsorted(edges, x, side="right")`` is the bin index
``0 .. B-1`` (Alg. 4, line 12: ``h_(A_{b-1}) <= x < h_(A_b)``). The outer
bounds ``h_(0) = 0`` and ``h_(n+1) = 1`` of line 11 are replaced by
``-inf``/``+inf``: the same map on ``[0, 1]``, and the natural extension to
logit scores and to test values outside the fitted range.

``values[b]`` is the (weighted) mean of ``t`` over the points *strictly*
between the edge points (line 9, ``mean(t_(l+1) .. t_(u-1))``): the edge
points themselves are left out of both neighbouring bins ("double dipping"
avoided), and ``counts[b]`` is the weight of those points.

Sample weights are frequency weights, measured in cumulative weight: a row
of weight ``k`` is ``k`` copies of the row at the same (already nudged)
score. Rows of weight zero are dropped before the order statistics are
computed. Then ``N = sum(w)`` replaces ``n`` in Alg. 4, ``A_k =
ceil(k (N + 1) / B)`` is a position on the cumulative-weight axis, the copy
occupying ``(A_k - 1, A_k]`` is the edge point, and bin ``b`` averages the
weight that lies in ``(A_{b-1}, A_b - 1]`` (the last bin: ``(A_{B-1}, N]``).
For integer weights this is exactly Alg. 4 run on the repeated rows.

Ties in ``h`` that survive (``delta = 0``, or repeated rows) are handled as
exchangeable: a block of rows with the same score that straddles an edge
position contributes its mean target to every position it covers. For
copies of one row that is exactly Alg. 4; for tied rows with different
targets it is the average of Alg. 4 over the orderings of the tie, so the
result never depends on the input order.

Test-time ties: with ``delta > 0`` Gupta & Ramdas also nudge each test point,
which makes the output random. ``umd_predict`` returns its expectation
instead: the output at a raw score ``x`` is the average of the piecewise
constant calibrator over the nudge interval ``[x, x + delta] / (1 + delta)``.
This is deterministic and order-independent, equals the plain lookup for
every ``x`` whose nudge interval holds no edge, and, for a score ``v`` that
was tied in the fit data, weighs each bin by (up to the granularity of the
random nudges) the share of ``v``'s nudged fit copies that landed in it.

Cost: ``np.sort`` for the order statistics (no argsort unless the weights
are not all one), one ``np.searchsorted`` of the scores into the ``B - 1``
edges and two ``np.bincount`` for the bin sums (plus, with ``raw``, one
``np.sort`` of the raw scores to find the tied values). Prediction with
``delta > 0`` is one ``np.searchsorted`` into the table's raw-score step
function (``lookup_edges``, at most ``2B`` breakpoints plus two per tied
value), a gather and a NaN test; only scores within about ``delta`` of an
edge that are not a tied fit value take the exact (slower) path.

References
----------
Gupta, C. and Ramdas, A. (2021). Distribution-free calibration guarantees for
histogram binning without sample splitting. ICML.
"""

from typing import NamedTuple

import numpy as np

from sklearn_betacal._kernels._grid import grid_positions, table_grid

#: Rows per chunk of the fit kernels' row-wise temporaries.
_CHUNK = 1 << 16
#: From this many rows (and four per step) on, a lookup counts the steps
#: with a uniform grid instead of ``np.searchsorted``: the same counts at
#: about a third of the cost, for an ``O(steps)`` set-up.
_GRID_MIN_ROWS = 1 << 12


class UMDTable(NamedTuple):
    """A fitted UMD calibrator (Alg. 4 of the paper).

    Attributes
    ----------
    edges : ndarray of shape (B - 1,)
        Interior thresholds ``h_(A_1) .. h_(A_{B-1})`` (nudged scale).
    values : ndarray of shape (B,)
        Bin means ``Pi_b`` of the targets over the points strictly between
        the edge points.
    counts : ndarray of shape (B,)
        Weight (number of points, for unit weights) behind each mean.
    delta : float
        Tie-breaking noise the fit scores were nudged with (0: none).
    lookup_edges, lookup_values : ndarray or None
        For ``delta > 0``: the calibrator as a step function of the *raw*
        score, ``lookup_values[searchsorted(lookup_edges, x, "right")]``,
        with NaN on the tiny windows where the nudge interval of ``x`` holds
        an edge (computed exactly at prediction time), except at the tied
        raw scores seen in the fit, whose expected output is stored. Built
        by ``umd_fit``; ``None`` makes ``umd_predict`` build it (no ties).
    """

    edges: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    delta: float
    lookup_edges: np.ndarray | None = None
    lookup_values: np.ndarray | None = None


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


def edge_positions(total_weight, n_bins):
    """``A_1 .. A_{B-1}`` of Alg. 4, line 5: ``ceil(k (N + 1) / B)``.

    Exact integer arithmetic when ``N`` is integral (a float ``ceil`` of
    ``k (N + 1) / B`` can round ``3.0000000000000004`` up to 4).
    """
    k = np.arange(1, n_bins, dtype=np.int64)
    if float(total_weight).is_integer() and total_weight < 2.0**53:
        # k (N + 1) = k (q B + r): ceil(k (N + 1) / B) = k q + ceil(k r / B),
        # which stays in int64 (k q <= N + 1 and k r < B**2) where k (N + 1)
        # itself overflowed for totals beyond ~1e18 / B
        q, r = divmod(int(total_weight) + 1, n_bins)
        return (k * q + (k * r + n_bins - 1) // n_bins).astype(np.float64)
    # beyond 2**53 float64 holds no unit positions: the float formula is as
    # exact as the cumulative weights it is compared with
    return np.ceil(k * ((total_weight + 1.0) / n_bins))


def _step_lookup(steps, values, x):
    """``values[np.searchsorted(steps, x, side="right")]`` (same bytes).

    ``steps`` sorted float64 (repeats allowed), ``values`` of length
    ``len(steps) + 1``. Many rows are counted with a grid
    (:func:`~sklearn_betacal._kernels._grid.table_grid`), a few searched.
    """
    K = steps.shape[0]
    if K == 0 or x.shape[0] < max(_GRID_MIN_ROWS, 4 * K):
        return values[np.searchsorted(steps, x, side="right")]
    grid = table_grid(steps, np.array([0, K]), np.arange(K + 1, dtype=np.float64))
    # the grid's output is the count itself; read ``values`` through it
    where = np.flatnonzero(~np.isnan(grid.values))
    through = np.zeros(grid.values.shape[0], dtype=values.dtype)
    through[where] = values[grid.values[where].astype(np.intp)]
    return through.take(grid_positions(grid, x))


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


def umd_fit(h, t, sample_weight, n_bins, *, delta=0.0, raw=None, labels=False):
    """Fit Alg. 4 (UMD) on scores ``h`` and targets ``t``.

    Parameters
    ----------
    h, t : ndarray of shape (n,), float64
        Scores (nudged by the caller if ties are to be broken) and targets.
    sample_weight : ndarray of shape (n,), float64, or None
        Non-negative frequency weights; zero-weight rows are dropped.
    n_bins : int
        ``B >= 1``. Every bin has interior weight ``>= floor(N / B) - 1``,
        which is ``>= 1`` when ``N >= 2B`` (the assumption of Thm A.1); a bin
        left empty (only possible when ``N < 2B``) gets the overall mean.
    delta : float
        The tie-breaking ``delta`` used on ``h``; stored for prediction.
    raw : ndarray of shape (n,), float64, or None
        The scores before nudging. Optional: lets the table store the
        expected output at every tied raw score, so that predicting tied
        confidences costs one lookup instead of the exact slow path.
    labels : bool
        ``t`` are 0/1 labels: the bin means go through :func:`label_floor`
        (no bin predicts exactly 0 or 1). ``False`` for fitted values.

    Returns
    -------
    UMDTable
    """
    if sample_weight is not None:
        keep = sample_weight > 0
        if not keep.all():
            h, t, sample_weight = h[keep], t[keep], sample_weight[keep]
            raw = None if raw is None else raw[keep]
        if np.all(sample_weight == 1.0):
            sample_weight = None
    n = h.shape[0]
    B = int(n_bins)

    # Alg. 4, lines 1-5: order statistics and edge positions A_k.
    if sample_weight is None:
        hs = np.sort(h)
        N = float(n)
        pos = edge_positions(N, B)
        edge_rows = np.minimum(pos.astype(np.int64) - 1, n - 1)
        cum_w = None
    else:
        order = np.argsort(h, kind="stable")
        hs = h[order]
        cum_w = np.cumsum(sample_weight[order])
        N = float(cum_w[-1])
        pos = edge_positions(N, B)
        # The copy at position A_k occupies (A_k - 1, A_k]: its row is the
        # first one whose cumulative weight reaches A_k.
        edge_rows = np.minimum(np.searchsorted(cum_w, pos, side="left"), n - 1)
    edges = hs[edge_rows]

    # Lines 6-10 by value: a row with edges[k-1] < h < edges[k] lies strictly
    # inside bin k; rows equal to an edge value are handled below.
    wt = t if sample_weight is None else t * sample_weight
    bin_of = _step_lookup(edges, np.arange(B, dtype=np.intp), h)
    sums = np.bincount(bin_of, weights=wt, minlength=B)
    if sample_weight is None:
        mass = np.bincount(bin_of, minlength=B).astype(np.float64)
    else:
        mass = np.bincount(bin_of, weights=sample_weight, minlength=B)

    ties = None
    if B > 1:
        on_edge = np.empty(n, dtype=bool)
        if delta > 0 and raw is not None:
            ties = _WindowTies(edges, delta)
        for a in range(0, n, _CHUNK):
            bo = bin_of[a : a + _CHUNK]
            hc = h[a : a + _CHUNK]
            on_edge[a : a + _CHUNK] = (bo > 0) & (hc == edges[np.maximum(bo - 1, 0)])
            if ties is not None:
                ties.add(hc, bo, raw[a : a + _CHUNK])
        if on_edge.any():
            sums, mass = _redistribute_edge_blocks(
                h,
                wt,
                sample_weight,
                bin_of,
                on_edge,
                edges,
                hs,
                cum_w,
                pos,
                N,
                sums,
                mass,
            )

    empty = mass <= 0
    if empty.any():
        total_w = N if sample_weight is None else np.sum(sample_weight)
        values = np.where(
            empty, np.sum(wt) / total_w, sums / np.where(empty, 1.0, mass)
        )
    else:
        values = sums / mass
    if labels:
        full = ~empty
        values[full] = label_floor(values[full], N / B)
    table = UMDTable(edges=edges, values=values, counts=mass, delta=float(delta))
    if delta > 0 and B > 1:
        table = _with_lookup(table, None if ties is None else ties.result())
    return table


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


def _redistribute_edge_blocks(
    h, wt, w, bin_of, on_edge, edges, hs, cum_w, pos, N, sums, mass
):
    """Move the rows equal to an edge value to the positions they occupy.

    A block of rows sharing the score ``v = edges[k]`` covers the positions
    ``(lo, lo + W]`` on the cumulative-weight axis (``lo`` = weight strictly
    below ``v``). The edge copies ``(A_k - 1, A_k]`` inside it are left out
    (Alg. 4, line 9) and the rest goes to the bins whose interiors
    ``(A_{b-1}, A_b - 1]`` it overlaps, each position carrying the block's
    mean target. For a single distinct edge point the block is exactly the
    edge copy and contributes nothing.
    """
    B = sums.shape[0]
    # side="right" above put each edge-valued row in the bin after the last
    # edge that equals its value; group them by that edge.
    k = bin_of[on_edge] - 1
    blk_s = np.bincount(k, weights=wt[on_edge], minlength=B - 1)
    if w is None:
        blk_w = np.bincount(k, minlength=B - 1).astype(np.float64)
    else:
        blk_w = np.bincount(k, weights=w[on_edge], minlength=B - 1)
    sums = sums - np.bincount(k + 1, weights=wt[on_edge], minlength=B)
    mass = mass - np.concatenate(([0.0], blk_w))
    # Exact zero where a bin held nothing but edge-valued rows (the
    # subtraction above can leave -0.0 or a rounding residue).
    sums[mass <= 0] = 0.0
    mass[mass <= 0] = 0.0

    ks = np.flatnonzero(blk_w)
    v = edges[ks]
    below = np.searchsorted(hs, v, side="left")
    if cum_w is None:
        lo = below.astype(np.float64)
    else:
        lo = np.where(below > 0, cum_w[np.maximum(below - 1, 0)], 0.0)
    hi = lo + blk_w[ks]
    m = blk_s[ks] / blk_w[ks]

    # Interiors of the bins: (L_b, U_b].
    L = np.concatenate(([0.0], pos))
    U = np.concatenate((pos - 1.0, [N]))
    b0 = np.searchsorted(U, lo, side="right")
    b1 = np.searchsorted(L, hi, side="left") - 1
    n_pairs = np.maximum(b1 - b0 + 1, 0)
    r = np.repeat(np.arange(ks.shape[0]), n_pairs)
    b = np.repeat(b0, n_pairs) + (
        np.arange(r.shape[0]) - np.repeat(np.cumsum(n_pairs) - n_pairs, n_pairs)
    )
    overlap = np.minimum(hi[r], U[b]) - np.maximum(lo[r], L[b])
    overlap = np.maximum(overlap, 0.0)
    sums = sums + np.bincount(b, weights=overlap * m[r], minlength=B)
    mass = mass + np.bincount(b, weights=overlap, minlength=B)
    return sums, mass


def _windows(edges, delta):
    """Raw-score windows where the nudge interval may hold an edge.

    ``x``'s nudge interval ``[x, x + delta] / (1 + delta)`` lies above edge
    ``e`` iff ``x > e (1 + delta)`` and below it iff ``x < e (1 + delta) -
    delta``. The margin ``tol`` only widens the windows, which sends
    borderline scores to the exact computation and cannot change a result.
    """
    top = edges * (1.0 + delta)
    tol = _window_tol(top, delta)
    return top - delta - tol, top + tol


def _window_tol(top, delta):
    """The margin of :func:`_windows` (``top = edges * (1 + delta)``)."""
    return 8.0 * np.finfo(np.float64).eps * (np.max(np.abs(top)) + delta)


def _clusters(edges, delta):
    """The lookup windows of :func:`_windows`, overlapping ones merged.

    Returns ``starts, ends`` (each cluster's first and last edge) and the
    cluster windows ``c_lo, c_hi`` (sorted, disjoint).
    """
    w_lo, w_hi = _windows(edges, delta)
    # Overlapping windows (edges of one tied value) form one cluster.
    starts = np.flatnonzero(np.concatenate(([True], w_lo[1:] > w_hi[:-1])))
    ends = np.append(starts[1:], edges.shape[0]) - 1
    return starts, ends, w_lo[starts], w_hi[ends]


class _WindowTies:
    """The tied raw score of each lookup cluster, from the rows in blocks.

    A cluster window ``[c_lo, c_hi]`` has a tie ``v`` when at least two of
    the fit's raw scores lie in it and all of them equal ``v`` (a zero is
    returned as ``+0.0``). :func:`umd_fit` hands over its rows block by
    block (nudged score, bin, raw score), where they are in cache: only a
    row whose nudged score is within :func:`_near_margin` of an edge of its
    bin can have its raw score in a window, and then only in the cluster of
    that bin's lower or upper edge (between the edge of the window and the
    bin's edge lie only edges closer than ``delta``, whose windows overlap:
    one cluster). Each of the two is checked, and counts and disagreements
    are summed per cluster: no sort of the raw scores (0.25-0.7 s at 1e7).
    """

    def __init__(self, edges, delta):
        self.starts, self.ends, self.c_lo, self.c_hi = _clusters(edges, delta)
        K = self.starts.shape[0]
        of_edge = np.cumsum(np.isin(np.arange(edges.shape[0]), self.starts)) - 1
        # cluster K is "none": its window holds nothing
        self._below = np.concatenate(([K], of_edge))
        self._above = np.concatenate((of_edge, [K]))
        self._lo = np.append(self.c_lo, np.inf)
        self._hi = np.append(self.c_hi, -np.inf)
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
        """``(starts, ends, c_lo, c_hi, v)``, ``v`` NaN where there is no tie."""
        K = self.starts.shape[0]
        v = np.full(K, np.nan)
        ok = (self._count[:K] >= 2) & (self._differ[:K] == 0)
        v[ok] = self._member[:K][ok] + 0.0
        return self.starts, self.ends, self.c_lo, self.c_hi, v


def _with_lookup(table, ties=None):
    """Add the raw-score step function (see ``UMDTable``) to ``table``.

    ``ties``: :meth:`_WindowTies.result` of the fit's rows, or ``None`` when
    there are no tied raw scores to store.
    """
    edges, values, delta = table.edges, table.values, table.delta
    if ties is None:
        starts, ends, c_lo, c_hi = _clusters(edges, delta)
        # A cluster's tied raw score v (when the fit saw it at least twice).
        v = np.full(starts.shape[0], np.nan)
    else:
        starts, ends, c_lo, c_hi, v = ties
    has_v = ~np.isnan(v)
    # Pieces per cluster: [c_lo, v) NaN, [v, v+) E(v), [v+, c_hi] NaN, then
    # the bin above the cluster until the next one; side="right" lookups.
    k = 2 + 2 * has_v
    offs = np.cumsum(k) - k
    bp = np.empty(k.sum())
    lv = np.empty(k.sum())
    bp[offs], lv[offs] = c_lo, np.nan
    hv = np.flatnonzero(has_v)
    bp[offs[hv] + 1] = v[hv]
    lv[offs[hv] + 1] = _nudge_average(edges, values, v[hv], delta)
    bp[offs[hv] + 2], lv[offs[hv] + 2] = np.nextafter(v[hv], np.inf), np.nan
    bp[offs + k - 1] = np.nextafter(c_hi, np.inf)
    lv[offs + k - 1] = values[ends + 1]
    return table._replace(
        lookup_edges=bp, lookup_values=np.concatenate(([values[0]], lv))
    )


def umd_predict(table, x):
    """Evaluate a fitted UMD calibrator at raw scores ``x`` (float64).

    ``delta == 0``: Alg. 4, line 12, ``values[searchsorted(edges, x, "right")]``.
    ``delta > 0``: the expectation of that lookup over the test-time nudge
    ``(x + U(0, delta)) / (1 + delta)`` (see the module docstring), read from
    the table's raw-score step function; scores in a window around an edge
    that the table has no stored value for are computed exactly. ``table`` is
    a :class:`UMDTable` or its ``_asdict()`` (how estimators store it, so that
    their fitted state is plain arrays, loadable by skops).
    """
    if isinstance(table, dict):
        table = UMDTable(**table)
    edges, values, delta = table.edges, table.values, table.delta
    if edges.shape[0] == 0:
        return np.full(x.shape, values[0])
    if delta == 0:
        return _step_lookup(edges, values, x)
    if table.lookup_edges is None:
        table = _with_lookup(table, None)
    out = _step_lookup(table.lookup_edges, table.lookup_values, x)
    slow = np.isnan(out)
    if slow.any():
        rows = np.flatnonzero(slow)
        xs = x[rows]
        w_lo, w_hi = _windows(edges, delta)
        # The first edge whose window reaches xs: xs straddles it.
        key = np.minimum(np.searchsorted(w_hi, xs, side="left"), edges.shape[0] - 1)
        out[rows] = _straddle_average(edges, values, xs, key, delta)
    return out


def _straddle_average(edges, values, xs, key, delta):
    """``_nudge_average`` for the straddling rows, without sorting them.

    Rows that straddle the same first edge ``key`` nearly always share one
    score (a tied confidence), so the average is computed once per key for a
    representative score and reused for every row equal to it; the rare row
    that differs from its key's representative is computed on its own.
    """
    rep = np.empty(edges.shape[0])
    # Which row of a key ends up as its representative is unspecified for
    # repeated indices; it does not matter, every row is checked against it.
    rep[key] = xs
    keys = np.flatnonzero(np.bincount(key, minlength=edges.shape[0]))
    avg = np.empty(edges.shape[0])
    avg[keys] = _nudge_average(edges, values, rep[keys], delta)
    same = xs == rep[key]
    out = avg[key]
    if not same.all():
        out[~same] = _nudge_average(edges, values, xs[~same], delta)
    return out


def _nudge_average(edges, values, x, delta):
    """Mean of the step function over ``[x, x + delta] / (1 + delta)``."""
    s = 1.0 + delta
    lo = x / s
    hi = (x + delta) / s
    k0 = np.searchsorted(edges, lo, side="right")
    k1 = np.searchsorted(edges, hi, side="right")
    n_seg = k1 - k0 + 1
    r = np.repeat(np.arange(x.shape[0]), n_seg)
    off = np.arange(r.shape[0]) - np.repeat(np.cumsum(n_seg) - n_seg, n_seg)
    b = k0[r] + off
    left = np.where(off == 0, lo[r], edges[np.maximum(b - 1, 0)])
    right = np.where(b == k1[r], hi[r], edges[np.minimum(b, edges.shape[0] - 1)])
    seg = np.maximum(right - left, 0.0)
    num = np.bincount(r, weights=seg * values[b], minlength=x.shape[0])
    den = np.bincount(r, weights=seg, minlength=x.shape[0])
    plain = values[np.searchsorted(edges, x, side="right")]
    # den == 0 only when the nudge interval is below float resolution.
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), plain)


def as_cell_tables(t):
    """An oracle ``UMDTable`` as the engine's one-table ``CellTables``."""
    from sklearn_betacal._kernels._cell_binning import CellTables

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


__all__ = [
    "UMDTable",
    "as_cell_tables",
    "edge_positions",
    "label_floor",
    "tie_break",
    "umd_fit",
    "umd_predict",
]
