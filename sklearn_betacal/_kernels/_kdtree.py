# SPDX-License-Identifier: MIT
"""kd-tree with bounded leaves: the partition beta of the paper (Sec. 2.3, App. C).

Pure NumPy kernels, no validation: ``F`` is a finite, 2-D float32/float64
array of partition features, one row per question-answer pair.

The tree is built level by level (breadth first). All rows are kept in one
permutation ``order`` in which the rows of every node are contiguous; a level
costs one copy and one gather of the split coordinate, one ``np.partition``
per node (the node's median, App. C) and a few vectorised O(n) passes to
split and to move each node's left rows in front of its right rows (ties
cost a few more). There is no Python loop over rows, only over the nodes of
a level.

Split rule (App. C): a node ``H^k`` is split on its coordinate ``p`` at its
median ``z``: left ``Z[p] <= z``, right ``Z[p] > z``. We take the *lower*
median (the ``ceil(m/2)``-th smallest of the node's ``m`` values), which
gives the paper's balanced split when the values are distinct, and store as
threshold the midpoint between ``z`` and the next larger value (``np.median``
for an even count). Ties at the median (see ``_tie_split``) can make
the paper's right child empty; we then put the threshold just below ``z``
(left ``< z``) whenever that keeps both children non-empty and is at least
as balanced, and otherwise make the node a leaf.

Bounded leaves (App. C): for every leaf and every coordinate used on the path
from the root to it, the smallest and largest value of the leaf's own rows
bound the cell; a point routed to that leaf but outside a bound belongs to no
leaf (cell id ``-1``, handled by the root calibrator, Alg. 2 line 5).
"""

import numpy as np

# Rows per block when a computation needs full feature rows (max-spread axis
# choice, projections): bounds the temporary memory to ``_BLOCK * d`` floats.
_BLOCK = 16384


def _midpoint(lo, hi):
    """``(lo + hi) / 2`` that is ``>= lo`` and ``< hi`` whenever ``lo < hi``."""
    with np.errstate(invalid="ignore", over="ignore"):
        mid = lo + (hi - lo) / 2
    return np.where(mid < hi, mid, lo)


def _tie_split(col, starts, sizes, median, n_le, min_samples_leaf):
    """Threshold and left size of nodes with ties at the median (App. C).

    Candidates: A = the paper's left ``<= z`` (``z`` the lower median), B =
    left ``< z``. A node takes the valid candidate closer to an even split
    (A on a draw); a candidate is valid when both children keep at least
    ``min_samples_leaf`` rows. Returns ``(threshold, n_left, split)``.
    """
    med_rows = np.repeat(median, sizes)
    below = col < med_rows
    n_lt = np.add.reduceat(below, starts, dtype=np.intp)
    pred = np.maximum.reduceat(np.where(below, col, -np.inf), starts)
    succ = np.minimum.reduceat(np.where(col > med_rows, col, np.inf), starts)
    m = sizes
    ok_a = (n_le < m) & (np.minimum(n_le, m - n_le) >= min_samples_leaf)
    ok_b = (n_lt > 0) & (np.minimum(n_lt, m - n_lt) >= min_samples_leaf)
    take_b = ok_b & (~ok_a | (np.abs(2 * n_lt - m) < np.abs(2 * n_le - m)))
    # Threshold halfway between the largest left and the smallest right value.
    thr = np.where(take_b, _midpoint(pred, median), _midpoint(median, succ))
    split = ok_a | ok_b
    return thr, np.where(take_b, n_lt, n_le), split


def _stable_partition(order, go_left, sizes, n_left):
    """Move each node's left rows in front of its right rows, order kept.

    Keeping the row order inside every node keeps the next level's gathers
    monotone (cache and prefetch friendly). Two sequential compressions and
    one concatenation of per-node slices: three passes, no scatter.
    """
    # np.compress is ~3x faster than boolean-mask indexing here.
    lefts = np.compress(go_left, order)
    rights = np.compress(~go_left, order)
    cl = np.r_[0, np.cumsum(n_left)].tolist()
    cr = np.r_[0, np.cumsum(sizes - n_left)].tolist()
    pieces = []
    for i in range(sizes.shape[0]):
        pieces.append(lefts[cl[i] : cl[i + 1]])
        pieces.append(rights[cr[i] : cr[i + 1]])
    return np.concatenate(pieces)


def _max_spread_axes(F, order, starts, sizes, cand):
    """Per candidate segment, the coordinate with the largest range.

    Reads the full rows of every candidate node in blocks of at most
    ``_BLOCK`` rows (``max(axis=0)`` per block: ``ufunc.reduceat`` along
    axis 0 was ~30x slower). Non-candidates get axis 0, spread 0.
    """
    n_seg = sizes.shape[0]
    axes = np.zeros(n_seg, dtype=np.intp)
    spread = np.zeros(n_seg)
    for i in np.flatnonzero(cand):
        hi = lo = None
        for b0 in range(starts[i], starts[i] + sizes[i], _BLOCK):
            block = F[order[b0 : min(b0 + _BLOCK, starts[i] + sizes[i])]]
            bhi, blo = block.max(axis=0), block.min(axis=0)
            hi = bhi if hi is None else np.maximum(hi, bhi)
            lo = blo if lo is None else np.minimum(lo, blo)
        rng = hi.astype(np.float64) - lo
        # argmax takes the lowest index on ties: deterministic.
        axes[i] = np.argmax(rng)
        spread[i] = rng[axes[i]]
    return axes, spread


def build_kdtree(F, max_depth, min_samples_leaf, axis_rule):
    """Build the bounded kd-tree of App. C on the rows of ``F``.

    Parameters
    ----------
    F : ndarray of shape (n, M), float32 or float64, finite
    max_depth : int >= 0
    min_samples_leaf : int >= 1
    axis_rule : {"cycle", "max_spread"}
        ``"cycle"``: the coordinate is a function of depth only, ``depth mod M``
        (App. C, whose index formula is garbled in the text; we read it as
        "change the coordinate at every level and wrap after M").
        ``"max_spread"``: per node, the coordinate of largest range.

    Returns
    -------
    tree : dict of ndarrays
        Node arrays (breadth-first order, root = 0): ``axis`` (-1 at leaves),
        ``threshold`` (NaN at leaves), ``left``/``right`` (-1 at leaves),
        ``cell`` (leaf id, -1 at internal nodes), ``depth``. Leaf arrays,
        indexed by cell id (leaves numbered left to right): ``leaf_axes``
        (n_cells, L) the coordinates used on the path, root first, -1
        padded; ``leaf_lower``, ``leaf_upper`` the bounds (NaN padded);
        ``leaf_n_samples``; and ``order`` (n,) the row indices grouped by cell
        (cell ``c`` holds the next ``leaf_n_samples[c]`` of them).
    """
    n, M = F.shape
    # int32 row indices halve the memory traffic of every reordering pass.
    order = np.arange(n, dtype=np.int32 if n < 2**31 else np.intp)
    # Node table (breadth first), grown level by level.
    axis, threshold, left, right, depth, path = [-1], [np.nan], [-1], [-1], [0], [()]
    # The current leaves tile ``order``: segment i is order[starts[i]:+sizes[i]].
    starts = np.zeros(1, dtype=np.intp)
    sizes = np.full(1, n, dtype=np.intp)
    seg_node = np.zeros(1, dtype=np.intp)
    is_open = np.ones(1, dtype=bool)  # created at the last level, may split
    level_values = []  # per level: the split coordinate of every row, by row id

    for lev in range(max_depth):
        cand = is_open & (sizes >= max(2, 2 * min_samples_leaf))
        if not cand.any():
            break
        if axis_rule == "cycle":
            seg_axis = np.full(starts.shape[0], lev % M, dtype=np.intp)
            # A strided copy of the column then a gather from that compact
            # copy is ~2x faster than gathering F[order, p] directly.
            values = np.ascontiguousarray(F[:, lev % M])
            col = np.take(values, order)
        else:
            seg_axis, spread = _max_spread_axes(F, order, starts, sizes, cand)
            cand &= spread > 0
            col = F[order, np.repeat(seg_axis, sizes)]
            values = np.empty(n, dtype=F.dtype)
            values[order] = col
        # ``values``: the level's split coordinate of every row, by row id,
        # kept for the leaf bounds.
        level_values.append(values)
        k = (sizes - 1) // 2
        # The median of every candidate node (App. C, z^k_m) and the next
        # order statistic: one selection per node.
        median = np.full(starts.shape[0], np.inf)
        succ = np.full(starts.shape[0], np.inf)
        for i in np.flatnonzero(cand):
            s, ki = starts[i], k[i]
            # A single kth keeps NumPy's fast (SIMD) selection path; a pair
            # (k, k+1) is ~5x slower.
            part = np.partition(col[s : s + sizes[i]], ki)
            median[i], succ[i] = part[ki], part[ki + 1 :].min()
        # Without ties at the median (next value > z) exactly k+1 rows are
        # <= z: the paper's split, which is also the most balanced one.
        thr = _midpoint(median, succ)
        n_left = np.where(cand, k + 1, sizes)
        split = cand.copy()
        tie = cand & (succ == median)
        if tie.any():
            n_le = np.add.reduceat(
                col <= np.repeat(median, sizes), starts, dtype=np.intp
            )
            t_thr, t_nl, t_split = _tie_split(
                col, starts, sizes, median, n_le, min_samples_leaf
            )
            thr = np.where(tie, t_thr, thr)
            split &= ~tie | t_split
            n_left = np.where(tie & t_split, t_nl, n_left)
            n_left = np.where(split, n_left, sizes)
        go_left = col <= np.repeat(np.where(split, thr, np.inf), sizes)
        order = _stable_partition(order, go_left, sizes, n_left)

        # New segments: split nodes become two open children.
        n_new = np.where(split, 2, 1)
        new_starts = np.empty(n_new.sum(), dtype=np.intp)
        new_sizes = np.empty_like(new_starts)
        new_node = np.empty_like(new_starts)
        first = np.cumsum(n_new) - n_new
        new_starts[first] = starts
        new_sizes[first] = np.where(split, n_left, sizes)
        new_node[first] = seg_node
        second = first[split] + 1
        new_starts[second] = starts[split] + n_left[split]
        new_sizes[second] = sizes[split] - n_left[split]
        new_open = np.zeros(new_starts.shape[0], dtype=bool)
        new_open[first[split]] = True
        new_open[second] = True
        for i, j in zip(np.flatnonzero(split), first[split], strict=True):
            kn = int(seg_node[i])
            p = (*path[kn], int(seg_axis[i]))
            axis[kn], threshold[kn] = int(seg_axis[i]), float(thr[i])
            left[kn], right[kn] = len(axis), len(axis) + 1
            new_node[j], new_node[j + 1] = len(axis), len(axis) + 1
            for _ in range(2):
                axis.append(-1)
                threshold.append(np.nan)
                left.append(-1)
                right.append(-1)
                depth.append(lev + 1)
                path.append(p)
        starts, sizes, seg_node, is_open = new_starts, new_sizes, new_node, new_open

    # The final segments are the leaves, already in left-to-right order: a
    # left child's rows always precede its sibling's in ``order``.
    n_cells = starts.shape[0]
    cell = np.full(len(axis), -1, dtype=np.intp)
    cell[seg_node] = np.arange(n_cells)
    L = max(len(path[kn]) for kn in seg_node)
    leaf_axes = np.full((n_cells, L), -1, dtype=np.intp)
    for c, kn in enumerate(seg_node):
        leaf_axes[c, : len(path[kn])] = path[kn]

    # Bounds (App. C): min/max order statistics of each leaf's own rows in
    # every coordinate used on its path.
    leaf_lower = np.full((n_cells, L), np.nan)
    leaf_upper = np.full((n_cells, L), np.nan)
    for j, values in enumerate(level_values[:L]):
        vals = np.take(values, order)
        used = leaf_axes[:, j] >= 0
        leaf_lower[used, j] = np.minimum.reduceat(vals, starts)[used]
        leaf_upper[used, j] = np.maximum.reduceat(vals, starts)[used]

    return {
        "axis": np.array(axis, dtype=np.intp),
        "threshold": np.array(threshold, dtype=np.float64),
        "left": np.array(left, dtype=np.intp),
        "right": np.array(right, dtype=np.intp),
        "cell": cell,
        "depth": np.array(depth, dtype=np.intp),
        "leaf_axes": leaf_axes,
        "leaf_lower": leaf_lower,
        "leaf_upper": leaf_upper,
        "leaf_n_samples": sizes.copy(),
        "order": order,
    }


def apply_kdtree(F, axis, threshold, left, right, cell, leaf_axes, lower, upper):
    """Cell id of every row of ``F``; -1 outside its leaf's bounds (App. C).

    A row is routed down level by level (left iff ``F[p] <= threshold``, the
    same rule as in the build) and then checked against the bounds of the leaf
    it reached; ``lower``/``upper`` may be ``None`` to skip the check.

    Every level is a handful of flat gathers over all rows (leaves route to
    themselves, so no row is ever compacted out); ``leaf_axes.shape[1]``,
    the longest root-to-leaf path, is the number of levels.
    """
    n, d = F.shape
    n_nodes = axis.shape[0]
    leaf = axis < 0
    ax = np.where(leaf, 0, axis)
    thr = np.where(leaf, np.inf, threshold)
    node_ids = np.arange(n_nodes, dtype=np.intp)
    lft = np.where(leaf, node_ids, left)
    rgt = np.where(leaf, node_ids, right)
    Fc = np.ascontiguousarray(F)
    flat = Fc.reshape(-1)
    base = np.arange(n, dtype=np.intp)
    base *= d
    node = np.zeros(n, dtype=np.intp)
    for _ in range(max(leaf_axes.shape[1], 1)):
        v = flat[base + ax[node]]
        node = np.where(v <= thr[node], lft[node], rgt[node])
    out = cell[node]
    if lower is None or leaf_axes.shape[1] == 0:
        return out
    inside = np.ones(n, dtype=bool)
    for j in range(leaf_axes.shape[1]):
        axj = leaf_axes[:, j][out]
        used = axj >= 0
        vals = flat[base + np.maximum(axj, 0)]
        inside &= ~used | ((vals >= lower[:, j][out]) & (vals <= upper[:, j][out]))
    out[~inside] = -1
    return out


def principal_axes(X, n_components):
    """Mean and top principal directions of the rows of ``X`` (float64).

    Eigen-decomposition of the covariance matrix; components sorted by
    decreasing variance, each with its largest-magnitude entry made positive
    so the result does not depend on the solver's sign convention.

    The directions do not depend on the scale of ``X``, so it is first
    brought to ``max |X| < 1`` by an exact power of two: at feature scales of
    ~1e155 the squares in the covariance overflowed (``LinAlgError``).
    """
    X = np.asarray(X, dtype=np.float64)
    top = float(np.max(np.abs(X))) if X.size else 0.0
    shift = int(np.frexp(top)[1]) if top > 0 else 0
    Xs = np.ldexp(X, -shift)
    mean_s = Xs.mean(axis=0)
    mean = np.ldexp(mean_s, shift)
    Xc = Xs - mean_s
    cov = Xc.T @ Xc
    _, vecs = np.linalg.eigh(cov)
    comps = vecs[:, ::-1][:, :n_components].T.copy()
    sign = np.sign(comps[np.arange(comps.shape[0]), np.argmax(np.abs(comps), axis=1)])
    sign[sign == 0] = 1.0
    return mean, comps * sign[:, None]


def project(X, mean, components):
    """``(X - mean) @ components.T`` in float64, block by block.

    Computed as ``X @ components.T - mean @ components.T`` on blocks of 2048
    rows (cache-sized; ~3x faster than centring each block first).
    """
    ct = np.ascontiguousarray(components.T)
    shift = mean @ ct
    out = np.empty((X.shape[0], ct.shape[1]), dtype=np.float64)
    for b0 in range(0, X.shape[0], 2048):
        block = np.asarray(X[b0 : b0 + 2048], dtype=np.float64)
        np.matmul(block, ct, out=out[b0 : b0 + 2048])
        out[b0 : b0 + 2048] -= shift
    return out
