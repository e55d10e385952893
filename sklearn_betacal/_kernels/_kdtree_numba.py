# SPDX-License-Identifier: MIT
"""Compiled twin of the kd-tree build's level pass (optional extra ``fast``).

Imported only by :func:`sklearn_betacal._kernels._kdtree.numba_level_kernels`,
when numba is installed and a fit is large enough: importing
``sklearn_betacal`` never imports numba, and the functions compile on
their first call (2-23 s measured, once per dtype and layout; cached on
disk where the cache directory is writable, see :func:`_jit`).

:func:`split_rows` is a level of the cycle rule's compiled build
(``_kdtree._cycle_levels``): one pass over the rows in row order that
sends every row of a split node to a child (``<= cut`` left, the cut of
:func:`node_rules`, which applies the split rule of App. C and the tie rule
``_tie_split`` at every node's lower median) and appends its next
coordinate to the child's bucket, which keeps its rows in row order as the
NumPy path's stable reorder does; :func:`place_rows` groups the rows by
leaf at the end; :func:`rows_by_node` hands the rows over to the per-node
passes below once a level has many nodes. For "max_spread" (a coordinate
per node), and for the cycle rule's levels of many nodes,
:func:`split_reorder` does for every node of a level what the NumPy path of
:func:`~sklearn_betacal._kernels._kdtree.build_kdtree` does in about ten
vectorised passes over all rows (the tie rule ``_tie_split``, the ``<=``
comparison, the segmented counts and the scatter of ``_stable_partition``):
it applies the split rule of App. C at the node's lower median ``z^k_m`` and
moves the node's left rows in front of its right rows, order kept, in one
pass over the node's rows, and :func:`gather` (:func:`take` for the cycle
rule) reads the split coordinate. :func:`small_kth` and :func:`pad_rows`
serve ``_segment_kth``
(long segments keep NumPy's partition, SIMD where NumPy has it: a scalar
quickselect was 3-4x slower on 1e6 values); :func:`leaf_tables` builds the
leaf table (cell ids, paths and the bounds of large tables) in one walk
over the tree, and :func:`leaf_bounds_rows` the bounds in one pass over
``F`` in row order when the leaf tables fit in cache. Order
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
def leaf_bounds_rows(
    F, order, starts, n_samples, axes_c, lower_c, upper_c, cell, known
):
    """:func:`leaf_tables`' bounds in row order, for leaf tables that fit in cache.

    ``axes_c``, ``lower_c``, ``upper_c``: cell-major ``(n_cells, K)``
    tables of every leaf's distinct path coordinates (-1 padded) and their
    bounds (``lower_c`` filled with +inf, ``upper_c`` with -inf by the
    caller, NaN written beyond each leaf's coordinates); ``cell``: an int32 work
    buffer of ``n`` values (the leaf of every row, by row id), which with
    ``known`` already holds the cells (:func:`place_rows`). Reading ``F``
    once front to back replaces one sparse sweep over all of ``F`` per leaf
    (a leaf's rows, in row order, are spread over the whole array).
    """
    n_cells, L = axes_c.shape
    depth = np.zeros(n_cells, dtype=np.intp)
    for c in range(n_cells):
        for j in range(L):
            if axes_c[c, j] >= 0:
                depth[c] = j + 1
        if not known:
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


@_jit
def node_rules(col, starts, sizes, median, succ, min_samples_leaf, thr, n_left, cut):
    """:func:`_node_rule` of every node ``i`` (values ``col[starts[i] :
    starts[i] + sizes[i]]``, in any order): ``thr[i]`` (NaN if the node
    stays a leaf), ``n_left[i]`` (0 for a leaf) and ``cut[i]`` (left rows
    are those ``<= cut[i]``). Returns nothing; the caller reads ``n_left >
    0`` as "split" (a split leaves at least one row on either side)."""
    for i in range(sizes.shape[0]):
        s = starts[i]
        ok, t, nl, c = _node_rule(
            col, s, s + sizes[i], median[i], succ[i], min_samples_leaf
        )
        if ok:
            thr[i] = t
            n_left[i] = nl
        else:
            thr[i] = np.nan
            n_left[i] = 0
        cut[i] = c


@_jit
def split_rows(F, p, pn, slot, code, cut, lo, hi, col, root):
    """One pass over the rows in row order that splits every node of a
    level and lays out the next level's split coordinate (the cycle rule).

    ``slot[row]``: the index of the row's open node in the level (all 0
    with ``root``, which does not read it), or a negative leaf code for
    rows that left the tree at an earlier level. ``code[i]``: the index in
    the next level of node ``i``'s left child (its right child is the next
    one), or the negative code of node ``i`` if it is a leaf from now on.
    A row goes left iff ``F[row, p] <= cut[i]``; its value ``F[row, pn]``
    (``pn >= 0``, else not written) is appended to its child's bucket of
    ``col``: ``lo[i]`` / ``hi[i]``, the next free place of the left / right
    child's bucket. The rows of a bucket stay in row order, as the NumPy
    path's stable reorder keeps them, so no permutation of the rows is kept
    and nothing is gathered: a row is read once, in order, and its
    neighbouring coordinate is on the same cache line for narrow rows.

    Both counters are read and written whichever side the row takes (their
    address depends on the node only, not on the comparison): with one
    counter per child, whose address depends on the comparison, rows of
    the same node in a row alias it unpredictably (1e6 x 4 float64, root
    level: 14 ms instead of 5 ms).
    """
    for row in range(F.shape[0]):
        i = 0 if root else slot[row]
        if i < 0:
            continue
        c = code[i]
        if c < 0:
            slot[row] = c
            continue
        g = np.intp(F[row, p] <= cut[i])
        slot[row] = c + 1 - g
        a = lo[i]
        b = hi[i]
        if pn >= 0:
            col[b + g * (a - b)] = F[row, pn]
        lo[i] = a + g
        hi[i] = b + 1 - g


@_jit
def rows_by_node(slot, node_pos, leaf_pos, act, order):
    """Hand a level of :func:`split_rows` over to the per-node passes: the
    rows of open node ``i`` (``slot[row] == i``) into ``act`` from
    ``node_pos[i]`` on, those of leaf ``j`` (``slot[row] == -1 - j``) into
    ``order`` from ``leaf_pos[j]`` on, in row order (the layout of the
    NumPy path's ``act`` and ``order``)."""
    for row in range(slot.shape[0]):
        s = slot[row]
        if s >= 0:
            q = node_pos[s]
            act[q] = row
            node_pos[s] = q + 1
        else:
            j = -1 - s
            q = leaf_pos[j]
            order[q] = row
            leaf_pos[j] = q + 1


@_jit
def place_rows(slot, last_code, pos, cell_of_leaf, order):
    """The rows grouped by leaf, in row order inside a leaf (the NumPy
    path's ``order``), from the slots of :func:`split_rows`: a row whose
    slot is ``>= 0`` is in node ``slot[row]`` of the last level, whose
    leaf code is ``last_code[slot[row]]``; leaf code ``-1 - j`` is leaf
    ``j``, whose rows start at ``pos[j]``. ``slot`` is overwritten with
    each row's cell id ``cell_of_leaf[j]``."""
    for row in range(slot.shape[0]):
        s = slot[row]
        j = -1 - (last_code[s] if s >= 0 else s)
        q = pos[j]
        order[q] = row
        pos[j] = q + 1
        slot[row] = cell_of_leaf[j]


@_jit
def last_rows(
    F, p, slot, code, cut, n_leaves, olo, ohi, opos, leaf_cell, leaf_nc, order,
    lower_c, upper_c, root,
):  # fmt: skip
    """The last level's :func:`split_rows` (no node below splits), which
    also does :func:`place_rows` and :func:`leaf_bounds_rows` in the same
    pass over ``F``: every row reaches its leaf ``j`` (``n_leaves + child``
    for a child of this level, ``-1 - code`` for a leaf), is written into
    ``order`` at its leaf's next place (``olo[i]`` / ``ohi[i]`` for the two
    children of node ``i``, read and written whichever side, as in
    :func:`split_rows`; ``opos[j]`` for the rows of a leaf) and widens the
    bounds ``lower_c`` / ``upper_c`` (cell-major, ``F``'s dtype, filled with
    +inf / -inf) of its cell ``leaf_cell[j]`` in coordinates ``0 .. leaf_nc[j] - 1``
    (the cycle rule's distinct path coordinates, in order of first use).
    """
    for row in range(F.shape[0]):
        i = 0 if root else slot[row]
        c = code[i] if i >= 0 else i
        if c >= 0:
            g = np.intp(F[row, p] <= cut[i])
            j = n_leaves + c + 1 - g
            a = olo[i]
            b = ohi[i]
            order[b + g * (a - b)] = row
            olo[i] = a + g
            ohi[i] = b + 1 - g
        else:
            j = -1 - c
            q = opos[j]
            order[q] = row
            opos[j] = q + 1
        cc = leaf_cell[j]
        for u in range(leaf_nc[j]):
            v = F[row, u]
            if v < lower_c[cc, u]:
                lower_c[cc, u] = v
            if v > upper_c[cc, u]:
                upper_c[cc, u] = v
