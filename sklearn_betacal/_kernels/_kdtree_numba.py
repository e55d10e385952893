# SPDX-License-Identifier: MIT
"""Compiled twin of the kd-tree build's level pass (optional extra ``fast``).

Imported only by :func:`sklearn_betacal._kernels._kdtree.numba_level_kernels`,
when numba is installed and a fit is large enough: importing
``sklearn_betacal`` never imports numba, and the functions compile on
their first call (2-23 s measured, once per dtype and layout; cached on
disk where the cache directory is writable, see :func:`_jit`).

:func:`split_reorder` does for every node of a level what the NumPy path of
:func:`~sklearn_betacal._kernels._kdtree.build_kdtree` does in about ten
vectorised passes over all rows (the tie rule ``_tie_split``, the ``<=``
comparison, the segmented counts and the scatter of ``_stable_partition``):
it applies the split rule of App. C at the node's lower median ``z^k_m`` and
moves the node's left rows in front of its right rows, order kept, in one
pass over the node's rows. :func:`take` / :func:`gather` read the split
coordinate, :func:`small_kth` and :func:`pad_rows` serve ``_segment_kth``
(long segments keep NumPy's partition, SIMD where NumPy has it: a scalar
quickselect was 3-4x slower on 1e6 values); :func:`leaf_tables` builds the
leaf table (cell ids, paths and the bounds of large tables) in one walk
over the tree, and :func:`leaf_bounds_rows` the bounds in one pass over
``F`` in row order when the leaf tables fit in cache;
:func:`split_reorder_next` is :func:`split_reorder` that also
gathers the next level's column (the root level, cycle rule). Order
statistics are values of the node and the threshold is the same IEEE
expression (``lo + (hi - lo) / 2``, no fast-math), so the tree is the NumPy
path's bit for bit: same cells, thresholds, row order and bounds (the tests
compare both).
"""

import os
import tempfile

import numba
import numpy as np

# Segments up to this many values are sorted by insertion instead of split.
_SMALL = 16

# Leaves per block of the leaf-bound pass.
_LEAF_BLOCK = 256

# The walk over the leaves touches the row this many places ahead in
# ``order`` (a software prefetch; 1e6 x 4 float64, depth 64: 0.34 s for
# the walk instead of 0.70 s, 4-64 ahead alike).
_AHEAD = 16


def _cache_writable():
    """Whether numba's on-disk cache can be written (``cache=True``).

    numba writes next to this file (``__pycache__``) and, when that folder is
    read-only (a system site-packages), in the user's cache folder
    (``NUMBA_CACHE_DIR`` or ``~/.cache``); with neither writable, decorating
    with ``cache=True`` raises ``RuntimeError`` ("no locator available").
    """
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
    candidates = [here, os.environ.get("NUMBA_CACHE_DIR") or None]
    candidates.append(os.path.join(os.path.expanduser("~"), ".cache"))
    for path in candidates:
        if not path:
            continue
        try:
            os.makedirs(path, exist_ok=True)
            tempfile.TemporaryFile(dir=path).close()
            return True
        except OSError:
            continue
    return False


def _jit(fn):
    """``numba.njit`` with the disk cache where it can be written, without
    fast-math (the results must be the NumPy path's, bit for bit)."""
    if _CACHE:
        try:
            return numba.njit(cache=True, nogil=True)(fn)
        except RuntimeError:  # no cache locator after all: compile in memory
            pass
    return numba.njit(nogil=True)(fn)


_CACHE = _cache_writable()


@_jit
def _heapsort(a, lo, hi):
    """Sort ``a[lo:hi + 1]`` in place (heap sort: ``O(m log m)`` always)."""
    m = hi - lo + 1
    for root in range(m // 2 - 1, -1, -1):
        _sift(a, lo, root, m)
    for end in range(m - 1, 0, -1):
        t = a[lo]
        a[lo] = a[lo + end]
        a[lo + end] = t
        _sift(a, lo, 0, end)


@_jit
def _sift(a, lo, root, m):
    v = a[lo + root]
    while True:
        child = 2 * root + 1
        if child >= m:
            break
        if child + 1 < m and a[lo + child + 1] > a[lo + child]:
            child += 1
        if a[lo + child] <= v:
            break
        a[lo + root] = a[lo + child]
        root = child
    a[lo + root] = v


@_jit
def _select(a, lo, hi, k):
    """Reorder ``a[lo:hi + 1]`` so that ``a[k]`` is its ``k - lo``-th smallest
    value, everything before ``<=`` and after ``>=`` it; return ``a[k]``.

    Quickselect with a median-of-three pivot and Hoare's partition (tied
    values split evenly), insertion sort for short ranges, and a heap sort
    of the remaining range if the pivots keep failing (worst case
    ``O(m log m)``).
    """
    budget = 64
    while hi - lo >= _SMALL:
        budget -= 1
        if budget == 0:
            _heapsort(a, lo, hi)
            return a[k]
        mid = (lo + hi) // 2
        x, y, z = a[lo], a[mid], a[hi]
        if x > y:
            x, y = y, x
        if y > z:
            y = z
            if x > y:
                y = x
        pivot = y
        i, j = lo, hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                t = a[i]
                a[i] = a[j]
                a[j] = t
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return a[k]
    for i in range(lo + 1, hi + 1):
        v = a[i]
        j = i - 1
        while j >= lo and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v
    return a[k]


@_jit
def _midpoint(lo, hi):
    """``_kdtree._midpoint`` for two float64 scalars."""
    mid = lo + (hi - lo) / 2
    return mid if mid < hi else lo


@_jit
def gather(F, seg_axis, act, sizes, col):
    """``col[r] = F[act[r], seg_axis[node of r]]``: the split coordinate of
    every open row, nodes with different coordinates (``max_spread``)."""
    s = 0
    for i in range(sizes.shape[0]):
        p = seg_axis[i]
        for r in range(s, s + sizes[i]):
            col[r] = F[act[r], p]
        s += sizes[i]


@_jit
def take(a, act, col):
    """``col[r] = a[act[r]]`` (one column copied out of ``F`` first: a
    sequential copy then gathers from it beat gathers from wide rows)."""
    for r in range(act.shape[0]):
        col[r] = a[act[r]]


@_jit
def pad_rows(col, starts, sizes, lp, rows):
    """Segment ``i`` of ``col`` into row ``i`` of ``rows`` at column
    ``lp[i]``, ``-inf`` before it and ``+inf`` after (``_segment_kth``)."""
    W = rows.shape[1]
    for i in range(sizes.shape[0]):
        a = lp[i]
        b = a + sizes[i]
        s = starts[i] - a
        for j in range(a):
            rows[i, j] = -np.inf
        for j in range(a, b):
            rows[i, j] = col[s + j]
        for j in range(b, W):
            rows[i, j] = np.inf


@_jit
def small_kth(col, starts, sizes, k, scratch, kth, nxt):
    """``kth[i]``, ``nxt[i]``: the ``k[i]``-th and next smallest value of
    segment ``i`` of ``col`` (selected in a copy in ``scratch``)."""
    for i in range(sizes.shape[0]):
        s = starts[i]
        e = s + sizes[i]
        for r in range(s, e):
            scratch[r] = col[r]
        kk = s + k[i]
        kth[i] = _select(scratch, s, e - 1, kk)
        v = scratch[kk + 1]
        for r in range(kk + 2, e):
            if scratch[r] < v:
                v = scratch[r]
        nxt[i] = v


@_jit
def _node_rule(col, s, e, med, nx, min_samples_leaf):
    """The split of the node whose split coordinate is ``col[s:e]``, given
    its lower median ``med`` and the next order statistic ``nx`` (App. C;
    the tie rule ``_tie_split`` of the NumPy path): ``(split, threshold,
    n_left, cut)``, the left rows being those ``<= cut``."""
    m = e - s
    cut = med
    if nx != med:
        # no tie at the median: the paper's split, k + 1 rows <= z
        t = _midpoint(med, nx)
        nl = (m - 1) // 2 + 1
        ok = True
    else:
        # ties (``_tie_split``): A = left <= z, B = left < z
        n_le = 0
        n_lt = 0
        pred = -np.inf
        above = np.inf
        for r in range(s, e):
            v = col[r]
            if v < med:
                n_lt += 1
                if v > pred:
                    pred = v
            elif v > med:
                if v < above:
                    above = v
            if v <= med:
                n_le += 1
        ok_a = n_le < m and min(n_le, m - n_le) >= min_samples_leaf
        ok_b = n_lt > 0 and min(n_lt, m - n_lt) >= min_samples_leaf
        take_b = ok_b and (not ok_a or abs(2 * n_lt - m) < abs(2 * n_le - m))
        ok = ok_a or ok_b
        if take_b:
            t = _midpoint(pred, med)
            nl = n_lt
            cut = pred
        else:
            t = _midpoint(med, above)
            nl = n_le
    return ok, t, nl, cut


@_jit
def split_reorder(
    col, act, sizes, median, succ, min_samples_leaf, out, thr, n_left, split
):
    """Split every node of a level given its lower median ``median`` and the
    next order statistic ``succ`` (App. C; the rule and the tie rule
    ``_tie_split`` of the NumPy path), in one pass over each node's rows.

    Node ``i`` holds the rows ``act[s_i : s_i + sizes[i]]`` with split
    coordinate ``col[s_i : ...]``. Writes into ``out`` each split node's
    left rows then its right rows, in their order in ``act``, and the rows
    of a node that stays a leaf unchanged, and per node into ``thr``
    (threshold, NaN for a leaf), ``n_left`` and ``split`` (allocated by the
    caller, so that NumPy's allocator, which ``tracemalloc`` sees, holds
    all memory of the build).
    """
    n_seg = sizes.shape[0]
    thr[:] = np.nan
    n_left[:] = 0
    split[:] = False
    s = 0
    for i in range(n_seg):
        m = sizes[i]
        e = s + m
        ok, t, nl, cut = _node_rule(col, s, e, median[i], succ[i], min_samples_leaf)
        if ok:
            thr[i] = t
            n_left[i] = nl
            split[i] = True
            # branch-free: a row goes left or right at random
            lo, hi = s, s + nl
            for r in range(s, e):
                g = np.intp(col[r] <= cut)
                out[hi + g * (lo - hi)] = act[r]
                lo += g
                hi += 1 - g
        else:
            for r in range(s, e):
                out[r] = act[r]
        s = e


@_jit
def split_reorder_next(
    F,
    p,
    pn,
    nxt,
    col,
    act,
    sizes,
    median,
    succ,
    min_samples_leaf,
    out,
    thr,
    n_left,
    split,
):
    """:func:`split_reorder` for the cycle rule that also gathers the next
    level's split coordinate ``pn`` while it moves the rows.

    A row's side is read from ``F[row, p]`` (the value ``col`` holds), and
    ``F[row, pn]`` -- on the same cache line for narrow rows and for
    neighbouring coordinates of wide ones -- is written at the row's new
    place into ``col`` (over the node's own range, which the move no longer
    reads) and into ``nxt``: the next level's column and the copy that its
    selection reorders, without a pass of their own.
    """
    n_seg = sizes.shape[0]
    thr[:] = np.nan
    n_left[:] = 0
    split[:] = False
    s = 0
    for i in range(n_seg):
        m = sizes[i]
        e = s + m
        ok, t, nl, cut = _node_rule(col, s, e, median[i], succ[i], min_samples_leaf)
        if ok:
            thr[i] = t
            n_left[i] = nl
            split[i] = True
            lo, hi = s, s + nl
            for r in range(s, e):
                row = act[r]
                g = np.intp(F[row, p] <= cut)
                v = F[row, pn]
                dst = hi + g * (lo - hi)
                out[dst] = row
                col[dst] = v
                nxt[dst] = v
                lo += g
                hi += 1 - g
        else:
            for r in range(s, e):
                row = act[r]
                v = F[row, pn]
                out[r] = row
                col[r] = v
                nxt[r] = v
        s = e


@_jit
def leaf_bounds_rows(F, order, starts, n_samples, axes_c, lower_c, upper_c, cell):
    """:func:`leaf_tables`' bounds in row order, for leaf tables that fit in cache.

    ``axes_c``, ``lower_c``, ``upper_c``: cell-major ``(n_cells, K)``
    tables of every leaf's distinct path coordinates (-1 padded) and their
    bounds (``lower_c`` filled with +inf, ``upper_c`` with -inf by the
    caller, NaN written beyond each leaf's coordinates); ``cell``: an int32 work
    buffer of ``n`` values (the leaf of every row, by row id). Reading ``F``
    once front to back replaces one sparse sweep over all of ``F`` per leaf
    (a leaf's rows, in row order, are spread over the whole array).
    """
    n_cells, L = axes_c.shape
    depth = np.zeros(n_cells, dtype=np.intp)
    for c in range(n_cells):
        for j in range(L):
            if axes_c[c, j] >= 0:
                depth[c] = j + 1
        s = starts[c]
        for r in range(s, s + n_samples[c]):
            cell[order[r]] = c
    for row in range(F.shape[0]):
        c = cell[row]
        for j in range(depth[c]):
            v = np.float64(F[row, axes_c[c, j]])
            if v < lower_c[c, j]:
                lower_c[c, j] = v
            if v > upper_c[c, j]:
                upper_c[c, j] = v
    for c in range(n_cells):
        for j in range(depth[c], L):
            lower_c[c, j] = np.nan
            upper_c[c, j] = np.nan


@_jit
def _flush_leaves(c0, nc, count, ax_b, lo_b, hi_b, axes_t, lower_t, upper_t, bounds):
    """Block rows ``ax_b[b, u]`` (cells ``c0 .. c0 + nc - 1``) into the
    slot-major tables, a run of ``nc`` columns per slot (-1 / NaN beyond
    a cell's ``count[b]`` distinct coordinates)."""
    for u in range(axes_t.shape[0]):
        for b in range(nc):
            if u < count[b]:
                axes_t[u, c0 + b] = ax_b[b, u]
            else:
                axes_t[u, c0 + b] = -1
        if bounds:
            for b in range(nc):
                if u < count[b]:
                    lower_t[u, c0 + b] = lo_b[b, u]
                    upper_t[u, c0 + b] = hi_b[b, u]
                else:
                    lower_t[u, c0 + b] = np.nan
                    upper_t[u, c0 + b] = np.nan


@_jit
def leaf_tables(
    F,
    order,
    axis,
    left,
    right,
    n_levels,
    cell,
    starts,
    n_samples,
    axes_t,
    lower_t,
    upper_t,
    bounds,
):
    """The leaves of the built tree in one walk: cell ids, rows, the
    distinct coordinates of every path and, with ``bounds``, the leaf
    bounds in them (``_assemble``'s passes, deep trees).

    ``axis``, ``left``, ``right``: the node table (breadth first, -1 at
    leaves; ``n_levels`` its depth); ``cell`` holds each leaf's number of
    rows on entry (-1 at internal nodes) and its cell id on return. The
    walk visits the leaves left to right (in order: left subtree first),
    which is the order of their rows in ``order`` and so the cells'
    numbering of the NumPy path (its stable sort by start) without a sort;
    the path from the root is the walk's stack. Fills ``starts``,
    ``n_samples`` (per cell) and the slot-major tables ``axes_t`` (slot
    ``u`` of cell ``c``: the ``u``-th distinct coordinate on its path in
    order of first use, -1 beyond) and, with ``bounds``,
    ``lower_t``/``upper_t`` (NaN beyond, ``+ 0.0`` applied: a signed zero
    bound is +0.0 as in the NumPy path); their first dimension is at least
    the number of slots used. A coordinate used at several depths
    ("cycle" deeper than ``M``) has one slot and is read once per row.
    Each leaf reads only its own rows (one row for the tiny leaves of deep
    trees); the tables are written ``_LEAF_BLOCK`` cells at a time, a run
    per slot (a column per cell would put all slots of the 8 MB-strided
    tables on the same cache sets). Returns the number of slots used and a
    sum of prefetched values, of no use but to keep the prefetching reads.
    """
    L = n_levels
    W = max(axes_t.shape[0], 1)
    stack = np.zeros(L + 1, dtype=np.intp)
    side = np.zeros(L + 1, dtype=np.intp)
    slot = np.full(F.shape[1], -1, dtype=np.intp)
    uax = np.zeros(W, dtype=np.intp)
    ulo = np.zeros(W, dtype=F.dtype)
    uhi = np.zeros(W, dtype=F.dtype)
    ax_b = np.zeros((_LEAF_BLOCK, W), dtype=np.intp)
    lo_b = np.zeros((_LEAF_BLOCK, W))
    hi_b = np.zeros((_LEAF_BLOCK, W))
    count = np.zeros(_LEAF_BLOCK, dtype=np.intp)
    n = order.shape[0]
    ahead = 0.0
    n_slots = 0
    c = 0
    c0 = 0
    s = 0
    top = 0
    while top >= 0:
        node = stack[top]
        if axis[node] >= 0:
            # inner node: its left subtree, then its right one, then up
            if side[top] < 2:
                nxt = left[node] if side[top] == 0 else right[node]
                side[top] += 1
                top += 1
                stack[top] = nxt
                side[top] = 0
            else:
                top -= 1
            continue
        m = cell[node]
        cell[node] = c
        starts[c] = s
        n_samples[c] = m
        b = c - c0
        nu = 0
        for j in range(top):
            a = axis[stack[j]]
            if slot[a] < 0:
                slot[a] = nu
                uax[nu] = a
                ax_b[b, nu] = a
                nu += 1
        count[b] = nu
        n_slots = max(n_slots, nu)
        if bounds and m > 0:
            if s + _AHEAD < n:
                # touch a row ``_AHEAD`` ahead: its cache miss overlaps this
                # leaf's work (the value only feeds the returned sum)
                ahead += F[order[s + _AHEAD], 0]
            row = order[s]
            for u in range(nu):
                v = F[row, uax[u]]
                ulo[u] = v
                uhi[u] = v
            for r in range(s + 1, s + m):
                row = order[r]
                for u in range(nu):
                    v = F[row, uax[u]]
                    if v < ulo[u]:
                        ulo[u] = v
                    if v > uhi[u]:
                        uhi[u] = v
            for u in range(nu):
                lo_b[b, u] = np.float64(ulo[u]) + 0.0
                hi_b[b, u] = np.float64(uhi[u]) + 0.0
        for u in range(nu):
            slot[uax[u]] = -1
        c += 1
        s += m
        top -= 1
        if c - c0 == _LEAF_BLOCK:
            _flush_leaves(c0, _LEAF_BLOCK, count, ax_b, lo_b, hi_b, axes_t, lower_t,
                          upper_t, bounds)  # fmt: skip
            c0 = c
    _flush_leaves(c0, c - c0, count, ax_b, lo_b, hi_b, axes_t, lower_t, upper_t, bounds)
    return n_slots, ahead
