# SPDX-License-Identifier: MIT
"""kd-tree with bounded leaves: the partition beta of the paper (Sec. 2.3, App. C).

Pure NumPy kernels, no validation: ``F`` is a finite, 2-D float32/float64
array of partition features, one row per question-answer pair.

The tree is built level by level (breadth first), all nodes of a level in
the same vectorised passes: there is no Python loop over rows or over nodes,
so a tree of depth 64 costs ~64 rounds of passes, not 2**64 iterations. The
rows of the open nodes are kept in one permutation (``act``) in which every
node's rows are contiguous. A level costs one copy and one gather of the
split coordinate, one selection of every node's median at once
(``_segment_kth``: the nodes become the rows of a padded 2-D array and one
``partition(axis=1)`` selects in all of them; App. C) and a few O(n) passes
to split and to move each node's left rows in front of its right rows
(ties cost a few more). Nodes that stop splitting become leaves and their
rows drop out of ``act``. The passes reuse a fixed set of work buffers of
n values (fit needs ~25 bytes per row beyond ``F`` for float64, ~17 for
float32), and Python only loops over levels and over fixed-size chunks.
This NumPy build is the only one: a compiled (numba) twin of it was
retired in session 17 (docs/scaling.rst, "The kd-tree build": its measured
gain against the cost of keeping two builds equal bit for bit).

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
leaf (cell id ``-1``, handled by the root calibrator, Alg. 2 line 5). Each
leaf's bounds are stored once per distinct coordinate of its path (slots in
order of first use: ``n_cells x min(depth, M)`` values, not one per depth,
which for "cycle" deeper than ``M`` repeats the same coordinates); the
per-depth tables are built from them on demand (:func:`leaf_path_axes`,
:func:`expand_bounds`).
"""

import numpy as np

from ._scaling import unit_exponent

# Rows per block when a computation needs full feature rows (max-spread axis
# choice, projections): bounds the temporary memory to ``_BLOCK * d`` floats.
_BLOCK = 16384

# Values per chunk when the segments of a level are copied into padded rows
# for the median selection (bounds that temporary to ~2 MiB of float64).
_SEL_BLOCK = 2**18

# Indices per chunk of a gather/scatter/compression over all rows: bounds
# NumPy's intp conversion of int32 indices to 512 KiB.
_CHUNK = 2**16


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
    ``min_samples_leaf`` rows. Returns ``(threshold, n_left, split,
    take_b, pred)``, ``pred`` the largest value below the median.
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
    return thr, np.where(take_b, n_lt, n_le), split, take_b, pred


def _take(a, idx, out):
    """``out[:] = a[idx]``, in chunks of ``_CHUNK`` indices.

    ``np.take`` converts int32 indices to intp (a temporary of 8 bytes per
    index) and buffers ``out`` in its default ``mode="raise"``; chunking and
    ``mode="wrap"`` (indices are valid) bound both to ``_CHUNK`` values.
    """
    for c0 in range(0, idx.shape[0], _CHUNK):
        np.take(a, idx[c0 : c0 + _CHUNK], out=out[c0 : c0 + _CHUNK], mode="wrap")
    return out


def _compress(mask, a, out):
    """``a[mask]`` into the front of ``out``, in chunks (bounded temporaries:
    ``np.compress`` builds the int64 positions of the selected values)."""
    o = 0
    for c0 in range(0, a.shape[0], _CHUNK):
        m = mask[c0 : c0 + _CHUNK]
        k = int(np.count_nonzero(m))
        np.compress(m, a[c0 : c0 + _CHUNK], out=out[o : o + k])
        o += k
    return out[:o]


def _scatter(out, idx, values):
    """``out[idx] = values``; int32 ``idx`` are converted to intp chunk by
    chunk (NumPy's own conversion path is ~3x slower)."""
    if idx.dtype == np.intp:
        out[idx] = values
        return
    for c0 in range(0, idx.shape[0], _CHUNK):
        out[idx[c0 : c0 + _CHUNK].astype(np.intp)] = values[c0 : c0 + _CHUNK]


def _excl_cumsum(a):
    out = np.cumsum(a)
    out -= a
    return out


def _size_classes(sizes):
    """Groups of segment indices whose sizes lie within a factor of two."""
    cls = np.frexp(sizes.astype(np.float64))[1]
    if cls.shape[0] and cls.min() == cls.max():
        return [np.arange(cls.shape[0])]
    by = np.argsort(cls, kind="stable")
    cuts = np.flatnonzero(np.diff(cls[by])) + 1
    return np.split(by, cuts)


def _sort_columns(cols):
    """Sort the list of equal-length arrays ``cols`` elementwise (W <= 4)."""
    net = {
        2: [(0, 1)],
        3: [(0, 1), (1, 2), (0, 1)],
        4: [(0, 1), (2, 3), (0, 2), (1, 3), (1, 2)],
    }[len(cols)]
    for i, j in net:
        lo = np.minimum(cols[i], cols[j])
        cols[j] = np.maximum(cols[i], cols[j])
        cols[i] = lo
    return cols


def _segment_kth(col, starts, sizes, k, scratch):
    """The ``k``-th and ``k+1``-th smallest of every segment of ``col``.

    Segment ``i`` is ``col[starts[i]:starts[i] + sizes[i]]`` (sizes >= 2,
    ``k < sizes - 1``). Segments of similar size (within a factor of two) are
    copied into the rows of one 2-D array, each row padded on the left with
    ``-inf`` so that its wanted order statistic lands in the same column
    ``K`` and on the right with ``+inf``; one ``ndarray.partition(K, axis=1)``
    then selects in all rows at once (NumPy's introselect per row, in C;
    SIMD where NumPy has it). Rows of at most four values go through a
    sorting network instead (per-row selection costs ~50 ns of overhead).
    Copies are done in chunks of about ``_SEL_BLOCK`` values; a chunk that
    is one segment, or equal segments back to back, is selected in place in
    ``scratch`` (a reused buffer of ``col``'s dtype and length, at the
    chunk's own offset). Returns two float64 arrays.
    """
    kth = np.empty(sizes.shape[0])
    nxt = np.empty(sizes.shape[0])
    for idx in _size_classes(sizes):
        W0 = int(sizes[idx].max()) + 2
        per = max(1, _SEL_BLOCK // W0)
        for c0 in range(0, idx.shape[0], per):
            sel = idx[c0 : c0 + per]
            m, kk, s = sizes[sel], k[sel], starts[sel]
            K = int(kk.max())
            lp = K - kk
            W = int((lp + m).max())
            if sel.shape[0] == 1 or (
                (lp == 0).all() and (m == W).all() and (np.diff(s) == W).all()
            ):
                size = W * sel.shape[0]
                s0 = int(s[0])
                rows = scratch[s0 : s0 + size].reshape(-1, W)
                np.copyto(rows.reshape(-1), col[s0 : s0 + size])
            else:
                rows = np.full((sel.shape[0], W), np.inf, dtype=col.dtype)
                rows[np.arange(W) < lp[:, None]] = -np.inf
                itype = np.int32 if rows.size < 2**31 else np.intp
                total = int(m.sum())
                within = np.arange(total, dtype=itype)
                within -= np.repeat(_excl_cumsum(m).astype(itype), m)
                dst = np.repeat((np.arange(sel.shape[0]) * W + lp).astype(itype), m)
                dst += within
                within += np.repeat(s.astype(itype), m)
                rows.reshape(-1)[dst] = col[within]
            if W <= 4:
                srt = _sort_columns([rows[:, j] for j in range(W)])
                kth[sel], nxt[sel] = srt[K], srt[K + 1]
            else:
                rows.partition(K, axis=1)
                kth[sel] = rows[:, K]
                nxt[sel] = rows[:, K + 1 :].min(axis=1)
    return kth, nxt


def _max_spread_axes(F, act, starts, sizes):
    """Per segment, the coordinate with the largest range, and that range.

    Segment ``i`` holds the rows ``act[starts[i]:starts[i] + sizes[i]]``.
    Segments of similar size are read together as a ``(count, W, d)`` block
    of full rows, each padded to ``W`` by repeating its own first row (which
    changes neither max nor min); segments longer than ``_BLOCK`` rows are
    read alone, ``_BLOCK`` rows at a time. Either way a block holds at most
    about ``_BLOCK * d`` values. The range is taken in float64 and
    ``argmax`` takes the lowest index on ties: deterministic.
    """
    n_seg = sizes.shape[0]
    axes = np.zeros(n_seg, dtype=np.intp)
    spread = np.zeros(n_seg)
    for idx in _size_classes(sizes):
        W = int(sizes[idx].max())
        if W > _BLOCK:
            for i in idx.tolist():
                s, e = int(starts[i]), int(starts[i] + sizes[i])
                hi = lo = None
                for b0 in range(s, e, _BLOCK):
                    block = F[act[b0 : min(b0 + _BLOCK, e)]]
                    bhi, blo = block.max(axis=0), block.min(axis=0)
                    hi = bhi if hi is None else np.maximum(hi, bhi)
                    lo = blo if lo is None else np.minimum(lo, blo)
                rng = hi.astype(np.float64) - lo
                axes[i] = np.argmax(rng)
                spread[i] = rng[axes[i]]
            continue
        per = max(1, _BLOCK // W)
        steps = np.arange(W)
        for c0 in range(0, idx.shape[0], per):
            sel = idx[c0 : c0 + per]
            pos = starts[sel][:, None] + np.minimum(steps, sizes[sel][:, None] - 1)
            block = F[act[pos]]
            rng = block.max(axis=1).astype(np.float64) - block.min(axis=1)
            a = np.argmax(rng, axis=1)
            axes[sel] = a
            spread[sel] = rng[np.arange(sel.shape[0]), a]
    return axes, spread


def _segment_ids(out, lengths):
    """Fill ``out`` with ``i`` for every element of segment ``i``."""
    out.fill(0)
    out[_excl_cumsum(lengths[:-1]) + lengths[:-1]] = 1
    np.cumsum(out, dtype=out.dtype, out=out)
    return out


def _segment_cumsum(out, flags, lengths, base, counts):
    """``out[i] = base[s] + (number of flags set in segment s up to i)``.

    ``counts[s]`` is the number of flags set in segment ``s``. One copy and
    one in-place cumulative sum, with a correction at each segment start.
    """
    np.copyto(out, flags)
    first = _excl_cumsum(lengths)
    corr = np.empty(lengths.shape[0], dtype=np.intp)
    corr[0] = base[0]
    corr[1:] = base[1:] - base[:-1] - counts[:-1]
    out[first] += corr.astype(out.dtype)
    np.cumsum(out, dtype=out.dtype, out=out)
    return out


def _stable_partition(act, go_left, starts, sizes, n_left, out, dst, tmp):
    """Move each segment's left rows in front of its right rows, order kept.

    Keeping the row order inside every node keeps the next level's gathers
    monotone (cache and prefetch friendly). Every row's destination is its
    segment's start plus its rank among the segment's left rows (right
    rows: after the segment's left rows), both running counts from one
    segmented cumulative sum each; then one scatter. No loop over segments
    and no allocation (``out``, ``dst``, ``tmp`` are reused buffers).
    """
    n_right = sizes - n_left
    _segment_cumsum(dst, go_left, sizes, starts - 1, n_left)
    np.logical_not(go_left, out=go_left)
    _segment_cumsum(tmp, go_left, sizes, starts + n_left - 1, n_right)
    np.logical_not(go_left, out=go_left)
    # dst = where(go_left, dst, tmp) in three arithmetic passes (a masked
    # np.copyto is ~5x slower than all three).
    np.subtract(dst, tmp, out=dst)
    np.multiply(dst, go_left, out=dst)
    np.add(dst, tmp, out=dst)
    _scatter(out, dst, act)
    return out


def _open_level(cnt, lv_axis, lv_thr, lv_split):
    """A level's node tables of ``cnt`` nodes (no split axis, NaN
    threshold, not split), appended to the per-level lists; returned."""
    axis_l = np.full(cnt, -1, dtype=np.intp)
    thr_l = np.full(cnt, np.nan)
    split_l = np.zeros(cnt, dtype=bool)
    lv_axis.append(axis_l)
    lv_thr.append(thr_l)
    lv_split.append(split_l)
    return axis_l, thr_l, split_l


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
        indexed by cell id (leaves numbered left to right): ``bound_axes``
        (n_cells, K) the distinct coordinates used on the path, in order of
        first use from the root, -1 padded (``K <= min(L, M)``, ``L`` the
        depth reached: a coordinate used at several depths is stored once);
        ``bound_lower``, ``bound_upper`` the bounds in them (NaN padded; the
        per-depth tables are :func:`leaf_path_axes` and
        :func:`expand_bounds`); ``leaf_n_samples``; and ``order`` (n,) the
        row indices grouped by cell (cell ``c`` holds the next
        ``leaf_n_samples[c]`` of them).
    """
    n, M = F.shape
    # int32 row indices halve the memory traffic of every reordering pass.
    itype = np.int32 if n < 2**31 - 1 else np.intp
    min_split = max(2, 2 * min_samples_leaf)
    # Work buffers of n values, allocated once and reused at every level:
    # fresh pages cost more than the passes that fill them (a first touch of
    # 80 MB took ~0.1-0.2 s here, a pass over it ~0.02 s). ``A``: the
    # level's column by row id, then scratch (padded selection rows, the
    # per-row split value); ``B``: the split coordinate of the open rows in
    # node order. Their int views hold row indices while reordering.
    A = np.empty(n, dtype=F.dtype)
    B = np.empty(n, dtype=F.dtype)
    # Destinations of the reordering: intp (NumPy's native index type)
    # when it fits in the buffers, else the row index type.
    dtype_idx = np.intp if F.dtype.itemsize >= 8 else itype
    if F.dtype.itemsize >= np.dtype(dtype_idx).itemsize:
        A_idx, B_idx = A.view(dtype_idx), B.view(dtype_idx)
    else:
        A_idx = np.empty(n, dtype=dtype_idx)
        B_idx = np.empty(n, dtype=dtype_idx)
    go = np.empty(n, dtype=bool)
    # The open nodes of the current level, left to right: their rows are
    # ``act`` (node i holds the next sizes[i] of them) and will occupy
    # ``order[gstart[i]:gstart[i] + sizes[i]]`` once the node is a leaf.
    spare = np.empty(n, dtype=itype)
    act = np.arange(n, dtype=itype)
    sizes = np.array([n], dtype=np.intp)
    gstart = np.zeros(1, dtype=np.intp)
    local = np.zeros(1, dtype=np.intp)  # index of each open node in its level
    order = None
    # Per level: nodes' parent (index in the level above), split axis and
    # threshold (-1 / NaN if a leaf), whether split; leaves per level.
    lv_parent, lv_axis, lv_thr, lv_split = [np.zeros(1, dtype=np.intp)], [], [], []
    leaf_parts = []  # (level, local index, gstart, size)

    def retire(keep, lev):
        """Turn the open nodes with ``keep`` False into leaves at ``lev``;
        the open rows drop out of ``act`` (kept in node order)."""
        nonlocal act, spare, sizes, gstart, local, order
        gone = ~keep
        leaf_parts.append((lev, local[gone], gstart[gone], sizes[gone]))
        if order is None and not keep.any():
            # Nothing retired before and everything now: ``act`` already
            # is the final layout (gstart == position in act).
            order = act
        else:
            if order is None:
                order = np.empty(n, dtype=itype)
            rows = np.repeat(gone, sizes)
            src = np.flatnonzero(rows)
            dst = np.repeat(gstart[gone] - _excl_cumsum(sizes)[gone], sizes[gone])
            order[dst + src] = act[src]
            del src, dst
            np.logical_not(rows, out=rows)
            act, spare = _compress(rows, act, spare), act
        sizes, gstart, local = sizes[keep], gstart[keep], local[keep]

    for lev in range(max_depth + 1):
        axis_l, thr_l, split_l = _open_level(
            lv_parent[lev].shape[0], lv_axis, lv_thr, lv_split
        )
        cand = sizes >= min_split
        if lev == max_depth:
            cand[:] = False
        if cand.any() and axis_rule == "max_spread":
            seg_axis = np.zeros(sizes.shape[0], dtype=np.intp)
            spread = np.zeros(sizes.shape[0])
            ci = np.flatnonzero(cand)
            seg_axis[ci], spread[ci] = _max_spread_axes(
                F, act, _excl_cumsum(sizes)[ci], sizes[ci]
            )
            cand &= spread > 0
        else:
            seg_axis = np.full(sizes.shape[0], lev % M, dtype=np.intp)
        if not cand.all():
            retire(cand, lev)
            seg_axis = seg_axis[cand]
        if sizes.shape[0] == 0:
            break
        n_act = act.shape[0]
        starts = _excl_cumsum(sizes)
        if axis_rule == "cycle":
            # A strided copy of the column then a gather from that compact
            # copy is 2x (1e6 x 384) to 15x (1e6 x 4) faster than NumPy's
            # fancy indexing ``F[act, p]``.
            np.copyto(A, F[:, lev % M])
            col = _take(A, act, B[:n_act])
        else:
            col = B[:n_act]
            col[...] = F[act, np.repeat(seg_axis, sizes)]
        k = (sizes - 1) // 2
        # The median of every node (App. C, z^k_m) and the next order
        # statistic, all nodes of the level at once.
        median, succ = _segment_kth(col, starts, sizes, k, A)
        # Without ties at the median (next value > z) exactly k+1 rows are
        # <= z: the paper's split, which is also the most balanced one.
        thr = _midpoint(median, succ)
        n_left = k + 1
        split = np.ones(sizes.shape[0], dtype=bool)
        # Left rows are those <= ``cut``, a value of the node itself (z, or
        # the largest value below z for a tie split "< z"), so the
        # comparison can be made in F's dtype.
        cut = median.astype(F.dtype)
        tie = succ == median
        if tie.any():
            ti = np.flatnonzero(tie)
            rows = np.repeat(tie, sizes)
            sub = np.compress(rows, col)
            sub_sizes = sizes[ti]
            sub_starts = _excl_cumsum(sub_sizes)
            n_le = np.add.reduceat(
                sub <= np.repeat(median[ti], sub_sizes), sub_starts, dtype=np.intp
            )
            t_thr, t_nl, t_split, t_b, t_pred = _tie_split(
                sub, sub_starts, sub_sizes, median[ti], n_le, min_samples_leaf
            )
            del rows, sub
            thr[ti] = t_thr
            split[ti] = t_split
            n_left[ti] = t_nl
            cut[ti] = np.where(t_b, t_pred, cut[ti])
        li = local[split]
        axis_l[li] = seg_axis[split]
        thr_l[li] = thr[split]
        split_l[li] = True
        if not split.all():
            col = np.compress(np.repeat(split, sizes), col)
            retire(split, lev)
            cut, n_left = cut[split], n_left[split]
            starts = _excl_cumsum(sizes)
            n_act = act.shape[0]
        if sizes.shape[0] == 0:
            break
        go_left = go[:n_act]
        if sizes.shape[0] == 1:
            np.less_equal(col, cut[0], out=go_left)
        else:
            # The per-row split value cut[node of the row], without a
            # temporary: node ids by a cumulative sum into ``spare``.
            seg = _segment_ids(spare[:n_act], sizes)
            cut_rows = _take(cut, seg, A[:n_act])
            np.less_equal(col, cut_rows, out=go_left)
        del col
        act, spare = (
            _stable_partition(
                act,
                go_left,
                starts,
                sizes,
                n_left,
                spare[:n_act],
                A_idx[:n_act],
                B_idx[:n_act],
            ),
            act,
        )
        if sizes.shape[0] == 0:
            break
        # Children, left then right, in the order of their parents.
        n_right = sizes - n_left
        sizes = np.column_stack([n_left, n_right]).reshape(-1)
        gstart = np.column_stack([gstart, gstart + n_left]).reshape(-1)
        lv_parent.append(np.repeat(local, 2))
        local = np.arange(sizes.shape[0], dtype=np.intp)
    return _assemble(
        F, order, leaf_parts, lv_parent, lv_axis, lv_thr, lv_split, axis_rule, A, B
    )


def _cycle_bounds(F, order, starts, n_samples, lower, upper, A, B):
    """Min and max of every leaf's rows in coordinates ``0 .. n_axes - 1``,
    written to ``lower[p]`` and ``upper[p]`` (float64 rows of length
    n_cells; ``n_axes = lower.shape[0]``).

    Narrow rows (one cache line): per coordinate a strided copy, a gather
    in leaf order and two ``reduceat``. Wide rows (embeddings): each strided
    copy reads a cache line per row, so instead one pass over
    ``F[:, :n_axes]`` in row order, block by block, updates the leaves'
    min/max with ``ufunc.at`` (the coordinates of a path share the rows'
    first cache lines: one pass instead of ``n_axes``). ``A``, ``B``: work
    buffers of ``F``'s dtype and length.
    """
    n = F.shape[0]
    n_axes = lower.shape[0]
    if n_axes == 0 or F.strides[0] <= 64 or F.strides[1] != F.itemsize:
        for p in range(n_axes):
            np.copyto(A, F[:, p])
            vals = _take(A, order, B)
            lower[p] = np.minimum.reduceat(vals, starts)
            upper[p] = np.maximum.reduceat(vals, starts)
        return
    # Cell of every row, by row id (int32 views of the work buffers).
    pos_cell = _segment_ids(A.view(np.int32)[:n], n_samples)
    row_cell = B.view(np.int32)[:n]
    _scatter(row_cell, order, pos_cell)
    lower.fill(np.inf)
    upper.fill(-np.inf)
    step = max(1, _SEL_BLOCK // n_axes)
    for b0 in range(0, n, step):
        block = F[b0 : b0 + step, :n_axes].T.astype(np.float64, order="C")
        cells = row_cell[b0 : b0 + step].astype(np.intp)
        for p in range(n_axes):
            np.minimum.at(lower[p], cells, block[p])
            np.maximum.at(upper[p], cells, block[p])


def _assemble(
    F,
    order,
    leaf_parts,
    lv_parent,
    lv_axis,
    lv_thr,
    lv_split,
    axis_rule,
    A,
    B,
):
    """Node table, leaf paths and leaf bounds from the level-wise build."""
    counts = [a.shape[0] for a in lv_axis]
    base = np.r_[0, np.cumsum(counts)].astype(np.intp)  # first node id per level
    n_nodes = int(base[-1])
    left = np.full(n_nodes, -1, dtype=np.intp)
    right = np.full(n_nodes, -1, dtype=np.intp)
    for lev in range(len(counts) - 1):
        # Children are numbered breadth first: level lev+1 lists them left
        # and right, in the order of their parents.
        si = np.flatnonzero(lv_split[lev])
        child = base[lev + 1] + 2 * np.arange(si.shape[0], dtype=np.intp)
        left[base[lev] + si] = child
        right[base[lev] + si] = child + 1
    axis = np.concatenate(lv_axis)
    cell, starts, n_samples, axes_t, lower_t, upper_t = _leaf_tables(
        F, order, leaf_parts, lv_parent, lv_axis, base, n_nodes, axis_rule, A, B
    )
    return {
        "axis": axis,
        "threshold": np.concatenate(lv_thr),
        "left": left,
        "right": right,
        "cell": cell,
        "depth": np.repeat(np.arange(len(counts), dtype=np.intp), counts),
        "bound_axes": axes_t.T,
        "bound_lower": lower_t.T,
        "bound_upper": upper_t.T,
        "leaf_n_samples": n_samples,
        "order": order,
    }


def _leaf_tables(
    F, order, leaf_parts, lv_parent, lv_axis, base, n_nodes, axis_rule, A, B
):
    """The leaf arrays of :func:`_assemble` in NumPy passes (the reference):
    ``(cell, starts, n_samples, axes_t, lower_t, upper_t)``, the tables
    slot-major ``(K, n_cells)``: slot ``u`` of cell ``c`` holds the
    ``u``-th distinct coordinate on its path in order of first use (-1
    beyond) and its bounds (NaN beyond)."""
    M = F.shape[1]
    loc, gs, sz = (np.concatenate([p[i] for p in leaf_parts]) for i in (1, 2, 3))
    lvl = np.repeat(
        np.array([p[0] for p in leaf_parts], dtype=np.intp),
        [p[1].shape[0] for p in leaf_parts],
    )
    # The leaves' rows tile ``order`` left to right: sorting by start
    # numbers the cells in-order.
    by = np.argsort(gs, kind="stable")
    lvl, loc, starts, n_samples = lvl[by], loc[by], gs[by], sz[by]
    n_cells = by.shape[0]
    cell = np.full(n_nodes, -1, dtype=np.intp)
    cell[base[lvl] + loc] = np.arange(n_cells)
    L = int(lvl.max())
    if axis_rule == "cycle":
        # depth j splits on j mod M: slot u is coordinate u, used by the
        # leaves deeper than u
        K = min(L, M)
        axes_t = np.tile(np.arange(K, dtype=np.intp)[:, None], (1, n_cells))
    else:
        # Path coordinates, from the deepest level up, all leaves at once,
        # built as (L, n_cells) rows (writing a column of a C-ordered
        # (n_cells, L) array touches a new cache line per value).
        path_t = np.full((L, n_cells), -1, dtype=np.intp)
        cur = loc.copy()
        for j in range(L - 1, -1, -1):
            deeper = np.flatnonzero(lvl > j)
            up = lv_parent[j + 1][cur[deeper]]
            path_t[j, deeper] = lv_axis[j][up]
            cur[deeper] = up
        axes_t = distinct_path_axes(path_t.T)[0].T.copy()
        K = axes_t.shape[0]
    # Bounds (App. C): min/max order statistics of each leaf's own rows in
    # every coordinate used on its path, each coordinate once.
    lower_t = np.empty((K, n_cells))
    upper_t = np.empty((K, n_cells))
    if axis_rule == "cycle":
        _cycle_bounds(F, order, starts, n_samples, lower_t, upper_t, A, B)
        for u in range(K):
            # NaN beyond a leaf's own depth (few leaves but at the last levels)
            short = np.flatnonzero(lvl <= u)
            axes_t[u, short] = -1
    else:
        for u in range(K):
            # per slot the leaves' own coordinates, gathered in leaf order
            ax = np.maximum(axes_t[u], 0).astype(order.dtype)
            vals = F[order, np.repeat(ax, n_samples)]
            lower_t[u] = np.minimum.reduceat(vals, starts)
            upper_t[u] = np.maximum.reduceat(vals, starts)
            del vals
    unused = axes_t < 0
    lower_t[unused] = np.nan
    upper_t[unused] = np.nan
    # A bound of 0 is +0.0: which of the tied values -0.0 and +0.0 a min or
    # max returns depends on the reduction's order (they compare equal, so
    # routing is the same), and the two paths must give the same bytes.
    lower_t += 0.0
    upper_t += 0.0
    return cell, starts, n_samples, axes_t, lower_t, upper_t


def leaf_path_axes(axis, left, right, cell, depth):
    """The split coordinate at every depth of every cell's path.

    From the node arrays alone (``axis`` -1 at leaves, ``cell`` the leaf
    ids 0 .. n_cells - 1, ``depth`` per node). Returns an ``(n_cells, L)``
    intp array, ``L`` the deepest leaf's depth: entry ``[c, j]`` is the
    coordinate split by the depth-``j`` ancestor of cell ``c``, -1 beyond
    the leaf's depth (``KDTreePartitioner.leaf_axes_``). All leaves walk up
    one level at a time: ``L`` vectorised steps.
    """
    parent = np.full(axis.shape[0], -1, dtype=np.intp)
    inner = np.flatnonzero(axis >= 0)
    parent[left[inner]] = inner
    parent[right[inner]] = inner
    leaves = np.flatnonzero(cell >= 0)
    leaves = leaves[np.argsort(cell[leaves])]
    lvl = depth[leaves]
    L = int(lvl.max()) if leaves.shape[0] else 0
    path_t = np.full((L, leaves.shape[0]), -1, dtype=np.intp)
    cur = leaves.astype(np.intp)
    for j in range(L - 1, -1, -1):
        deeper = np.flatnonzero(lvl > j)
        cur[deeper] = parent[cur[deeper]]
        path_t[j, deeper] = axis[cur[deeper]]
    return path_t.T


def distinct_path_axes(path):
    """Every leaf's distinct path coordinates, each once.

    ``path``: ``(n_cells, L)`` as :func:`leaf_path_axes` (-1 padded).
    Returns ``(axes, slot)``: ``axes`` of shape ``(n_cells, K)``, row ``c``
    the distinct coordinates of ``path[c]`` in order of first use (-1
    padded; ``K`` the most any leaf has), and ``slot`` shaped like ``path``,
    the column of ``axes`` that holds ``path[c, j]`` (-1 where it is -1).
    """
    n, L = path.shape
    if L == 0:
        return np.zeros((n, 0), dtype=np.intp), np.zeros((n, 0), dtype=np.intp)
    # sorted per row, stably: a coordinate's first use heads its run
    by = np.argsort(path, axis=1, kind="stable")
    srt = np.take_along_axis(path, by, axis=1)
    head = np.ones((n, L), dtype=bool)
    head[:, 1:] = srt[:, 1:] != srt[:, :-1]
    head &= srt >= 0
    first = np.zeros((n, L), dtype=bool)
    np.put_along_axis(first, by, head, axis=1)
    rank = np.cumsum(first, axis=1, dtype=np.intp) - 1
    K = int(rank[:, -1].max()) + 1 if n else 0
    axes = np.full((n, K), -1, dtype=np.intp)
    r, j = np.nonzero(first)
    axes[r, rank[r, j]] = path[r, j]
    # the slot of a later use is that of its run's head
    head_pos = np.maximum.accumulate(np.where(head, np.arange(L), 0), axis=1)
    slot_srt = np.take_along_axis(np.take_along_axis(rank, by, axis=1), head_pos, 1)
    slot = np.empty((n, L), dtype=np.intp)
    np.put_along_axis(slot, by, slot_srt, axis=1)
    slot[path < 0] = -1
    return axes, slot


def collapse_bounds(slot, lower, upper, n_slots):
    """Per-depth bound tables ``(n_cells, L)`` to per-slot ones ``(n_cells,
    n_slots)`` (``slot`` from :func:`distinct_path_axes`): the tightest
    bound of each coordinate over its uses, which is every use's bound in
    a fitted tree; NaN in unused slots."""
    n = slot.shape[0]
    lo = np.full((n, n_slots), -np.inf)
    hi = np.full((n, n_slots), np.inf)
    r, j = np.nonzero(slot >= 0)
    u = slot[r, j]
    np.maximum.at(lo, (r, u), lower[r, j])
    np.minimum.at(hi, (r, u), upper[r, j])
    unused = np.ones((n, n_slots), dtype=bool)
    unused[r, u] = False
    lo[unused] = np.nan
    hi[unused] = np.nan
    return lo, hi


def expand_bounds(slot, table):
    """Per path entry the bound of its coordinate: ``table[c, slot[c, j]]``,
    NaN where ``slot`` is -1 (``(n_cells, L)`` from the slot table)."""
    if table.shape[1] == 0:
        return np.full(slot.shape, np.nan)
    out = np.take_along_axis(table, np.maximum(slot, 0), axis=1)
    out[slot < 0] = np.nan
    return out


def _level_axes(axis, left, right, n_levels):
    """The split axis of every level, or -1 where a level mixes axes.

    Walks the tree level by level from the root (O(number of nodes)).
    """
    out = np.full(n_levels, -1, dtype=np.intp)
    frontier = np.zeros(1, dtype=np.intp)
    for lev in range(n_levels):
        inner = frontier[axis[frontier] >= 0]
        if inner.size == 0:
            break
        ax = axis[inner]
        if np.all(ax == ax[0]):
            out[lev] = ax[0]
        frontier = np.concatenate((left[inner], right[inner]))
    return out


def apply_kdtree(
    F, axis, threshold, left, right, cell, n_levels, bound_axes, lower, upper
):
    """Cell id of every row of ``F``; -1 outside its leaf's bounds (App. C).

    A row is routed down level by level (left iff ``F[p] <= threshold``, the
    same rule as in the build) and then checked against the bounds of the leaf
    it reached: ``bound_axes[c]``, the distinct coordinates on the path of
    cell ``c`` (-1 padded), and their bounds ``lower[c]``, ``upper[c]`` (the
    build's ``bound_*`` tables); ``lower``/``upper`` may be ``None`` to skip
    the check. ``F`` is finite (the partitioner validates it).

    Every level is a handful of element-wise passes over all rows (leaves
    route to themselves, so no row is ever compacted out); ``n_levels``,
    the longest root-to-leaf path, is the number of levels. A level whose
    split nodes all use one axis (the cycle rule) reads that column as it
    is, without a gather; with right children numbered ``left + 1`` (the
    build's level order) the step is ``left + (v > threshold)``. The bounds
    are checked per feature axis (a lower and an upper bound per leaf,
    infinite where the leaf does not bound the axis) when that table is no
    larger than the rows, else per slot of the bound tables.
    """
    prep = prepare_kdtree(
        axis, threshold, left, right, cell, n_levels, bound_axes, lower, upper
    )
    return route_kdtree(F, prep)


def prepare_node_walk(tree):
    """:func:`prepare_kdtree` for a tree of plain node arrays without leaf
    bounds (a dict with ``feature``, ``threshold``, ``children_left``,
    ``children_right``, ``cell`` and ``depth``: the learned tree's and the
    stored boosted trees' layout)."""
    return prepare_kdtree(
        tree["feature"],
        tree["threshold"],
        tree["children_left"],
        tree["children_right"],
        tree["cell"],
        int(tree["depth"].max()),
        None,
        None,
        None,
    )


def prepare_kdtree(
    axis, threshold, left, right, cell, n_levels, bound_axes, lower, upper
):
    """The tables :func:`route_kdtree` reads, built from the tree alone.

    Nothing here depends on the rows, so a caller that routes many small
    batches through one tree builds them once (one row costs a few
    microseconds of routing but ~0.2 ms of this set-up). Arguments as in
    :func:`apply_kdtree`.
    """
    n_nodes = axis.shape[0]
    leaf = axis < 0
    node_ids = np.arange(n_nodes, dtype=np.intp)
    inner = ~leaf
    adjacent = bool(np.all(right[inner] == left[inner] + 1))
    depth = n_levels
    n_levels = max(n_levels, 1)
    prep = {
        "thr": np.where(leaf, np.inf, threshold),
        "lft": np.where(leaf, node_ids, left),
        "rgt": None if adjacent else np.where(leaf, node_ids, right),
        "adjacent": adjacent,
        "n_levels": n_levels,
        "level_axis": _level_axes(axis, left, right, n_levels).tolist(),
        "node_axis": np.where(leaf, 0, axis),
        "cell": cell,
        "depth": depth,
        "bound_axes": bound_axes,
        "lower": lower,
        "upper": upper,
        "bounds": None,
    }
    if lower is not None and depth > 0:
        n_leaves = bound_axes.shape[0]
        used = bound_axes >= 0
        axes = np.unique(bound_axes[used])
        # per feature axis: the leaf's bounds on it (+-inf if it has none;
        # a leaf's slots hold distinct coordinates)
        r, j = np.nonzero(used)
        which = np.searchsorted(axes, bound_axes[r, j])
        lo = np.full((axes.shape[0], n_leaves), -np.inf)
        hi = np.full((axes.shape[0], n_leaves), np.inf)
        lo[which, r] = lower[r, j]
        hi[which, r] = upper[r, j]
        prep["bounds"] = (axes.tolist(), lo, hi)
    # the same tables as Python lists, for a walk of a few rows (below)
    prep["walk"] = (
        prep["thr"].tolist(),
        prep["lft"].tolist(),
        None if adjacent else prep["rgt"].tolist(),
        prep["node_axis"].tolist(),
        cell.tolist(),
        None
        if prep["bounds"] is None
        else [
            (a, lo_a.tolist(), hi_a.tolist())
            for a, lo_a, hi_a in zip(*prep["bounds"], strict=True)
        ],
    )
    return prep


#: Up to this many rows, :func:`route_kdtree` walks each row in Python: a
#: NumPy pass per level costs microseconds of call overhead whatever the rows.
WALK_ROWS = 4


def _walk(F, prep):
    """:func:`route_kdtree` for a few rows: the same comparisons, per row."""
    thr, lft, rgt, node_axis, cell, bounds = prep["walk"]
    adjacent, n_levels = prep["adjacent"], prep["n_levels"]
    out = np.empty(F.shape[0], dtype=prep["cell"].dtype)
    for i, row in enumerate(F.tolist()):
        node = 0
        for _ in range(n_levels):
            # leaves: threshold +inf, never greater, and route to themselves
            gt = row[node_axis[node]] > thr[node]
            node = (lft[node] + gt) if adjacent else (rgt[node] if gt else lft[node])
        c = cell[node]
        if bounds is not None and c >= 0:
            for a, lo, hi in bounds:
                if not lo[c] <= row[a] <= hi[c]:
                    c = -1
                    break
        out[i] = c
    return out


def route_kdtree(F, prep):
    """Cell id of every row of ``F`` with the tables of :func:`prepare_kdtree`.

    See :func:`apply_kdtree`; the result is the same array.
    """
    n, d = F.shape
    if n <= WALK_ROWS and prep["depth"] > 0:
        return _walk(F, prep)
    thr, lft, rgt = prep["thr"], prep["lft"], prep["rgt"]
    adjacent, level_axis = prep["adjacent"], prep["level_axis"]
    bound_axes, lower, upper = prep["bound_axes"], prep["lower"], prep["upper"]
    flat = base = None
    t = np.empty(n, dtype=thr.dtype)
    gt = np.empty(n, dtype=bool)
    cols = {}

    def column(a):
        # a column read by the level and both bound checks: copied once out
        # of a wide row-major block (three contiguous reads beat three strided)
        if F.strides[0] == F.itemsize:
            return F[:, a]
        if a not in cols:
            cols[a] = np.ascontiguousarray(F[:, a])
        return cols[a]

    # the root level without gathers: every row is at node 0
    if level_axis[0] >= 0 and thr[0] < np.inf:
        # thr[:1], not thr[0]: numpy < 2 compares a float32 column with a
        # float64 *scalar* in float32 (value-based casting), which moves rows
        # next to a threshold; a 1-element array promotes as NEP 50 does
        np.greater(column(level_axis[0]), thr[:1], out=gt)
        if adjacent:
            node = gt.astype(np.intp)
            node += lft[0]
        else:
            node = np.where(gt, rgt[0], lft[0])
        first = 1
    else:
        node = np.zeros(n, dtype=np.intp)
        first = 0
    for lev in range(first, prep["n_levels"]):
        if level_axis[lev] >= 0:
            v = column(level_axis[lev])
        else:
            if flat is None:
                flat = np.ascontiguousarray(F).reshape(-1)
                base = np.arange(n, dtype=np.intp) * d
            v = flat[base + prep["node_axis"][node]]
        np.take(thr, node, out=t)
        np.greater(v, t, out=gt)  # leaves: threshold +inf, never greater
        if adjacent:
            node = np.take(lft, node)
            node += gt
        else:
            node = np.where(gt, rgt[node], lft[node])
    out = prep["cell"][node]
    if lower is None or prep["depth"] == 0:
        return out
    n_leaves, n_slots = bound_axes.shape
    small = min(d, n_slots) * (n_leaves + 1) <= max(n, 1024)  # tables <= rows
    inside = np.ones(n, dtype=bool)
    if small:
        axes, lo, hi = prep["bounds"]
        b = np.empty(n, dtype=lo.dtype)
        ok = np.empty(n, dtype=bool)
        for i, a in enumerate(axes):
            col = column(a)
            np.take(lo[i], out, out=b)
            np.greater_equal(col, b, out=ok)
            inside &= ok
            np.take(hi[i], out, out=b)
            np.less_equal(col, b, out=ok)
            inside &= ok
    else:
        if flat is None:
            flat = np.ascontiguousarray(F).reshape(-1)
            base = np.arange(n, dtype=np.intp) * d
        for j in range(n_slots):
            axj = bound_axes[:, j][out]
            usedj = axj >= 0
            vals = flat[base + np.maximum(axj, 0)]
            inside &= ~usedj | ((vals >= lower[:, j][out]) & (vals <= upper[:, j][out]))
    out[~inside] = -1
    return out


def principal_axes(X, n_components, sample_weight=None):
    """Mean and top principal directions of the rows of ``X`` (float64).

    Eigen-decomposition of the (weighted) covariance matrix; components
    sorted by decreasing variance, each with its largest-magnitude entry made
    positive so the result does not depend on the solver's sign convention.
    ``sample_weight`` (default: all ones) weighs the rows: a zero weight
    drops a row, an integer weight repeats it. Returns ``(mean, components)``
    with ``components`` of shape ``(min(n_components, d), d)``. The one
    weighted PCA of the package: the kd-tree's principal axes and the
    learned tree's principal components (``n_components``).

    The directions do not depend on the scale of ``X``, so it is first
    brought to ``max |X| < 1`` by an exact power of two: at feature scales of
    ~1e155 the squares in the covariance overflowed (``LinAlgError``).
    """
    X = np.asarray(X, dtype=np.float64)
    shift = unit_exponent(X)
    Xs = np.ldexp(X, -shift)
    if sample_weight is None:
        mean_s = Xs.mean(axis=0)
        Xc = Xs - mean_s
        Xw = Xc
    else:
        w = np.asarray(sample_weight, dtype=np.float64)
        mean_s = (w @ Xs) / float(np.sum(w))
        Xc = Xs - mean_s
        Xw = Xc * w[:, None]
    mean = np.ldexp(mean_s, shift)
    cov = Xw.T @ Xc
    _, vecs = np.linalg.eigh(cov)
    comps = vecs[:, ::-1][:, : min(n_components, X.shape[1])].T.copy()
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
