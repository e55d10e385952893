# SPDX-License-Identifier: MIT
"""Counting a score's steps in sorted step functions, pure NumPy.

The search under every UMD lookup (Alg. 4, line 12: the bin of ``x`` is the
number of edges ``<= x``), for one table (:mod:`._binning`) and for many
tables stored back to back (:mod:`._cell_binning`).

Interface
---------
``table_grid(steps, start, values) -> TableGrid``
    Table ``t``'s sorted steps are ``steps[start[t]:start[t + 1]]``; a
    uniform grid per table, prepared in ``O(K)`` for ``K`` steps.
``grid_positions(grid, x, table=None) -> positions``
    ``grid.values[positions]`` is every row's output; exactly the count of
    ``np.searchsorted(steps_t, x, side="right")``, at a fraction of its cost
    (a grid cell, a three-probe branch-free search), flat in the table size.
``_bisect``, ``_segmented_search``
    The plain (reference) searches of many tables at once.
"""

from typing import NamedTuple

import numpy as np


def _bisect(a, lo, hi, x, side, perm=None):
    """Vectorised ``lo + searchsorted(a[lo:hi], x, side)``, row by row.

    ``a`` (read through ``a[perm]`` when ``perm`` is given, without
    building it) is sorted within every ``[lo[i], hi[i])``; exact
    comparisons, so this is the reference the offset search below falls
    back to.
    """
    lo = np.array(lo, dtype=np.int64)
    hi = np.array(hi, dtype=np.int64)
    act = np.flatnonzero(lo < hi)
    while act.size:
        mid = (lo[act] + hi[act]) // 2
        am = a[mid] if perm is None else a[perm[mid]]
        go = am <= x[act] if side == "right" else am < x[act]
        lo[act[go]] = mid[go] + 1
        hi[act[~go]] = mid[~go]
        act = act[lo[act] < hi[act]]
    return lo


def _segmented_search(steps, start, x, table, side="right"):
    """``searchsorted(steps[start[t]:start[t + 1]], x, side)`` for every row.

    One ``np.searchsorted`` over all tables at once: table ``t``'s steps are
    shifted to ``steps + S t`` (``S`` larger than twice every magnitude
    involved), which keeps every table in its own key range. Rounding the
    shifted values is monotone, so the only possible errors are steps that
    round onto the shifted ``x`` itself (within ~``S T`` ulp of it); those
    rows are found by checking the neighbouring step and redone exactly by
    bisection. The result is exact.
    """
    n = x.shape[0]
    lo_t = start[table]
    if steps.shape[0] == 0 or n == 0:
        return np.zeros(n, dtype=np.int64)
    M = float(np.max(np.abs(steps)))
    S = 2.0 * M + 4.0
    T = start.shape[0] - 1
    keys = steps + S * np.repeat(np.arange(T, dtype=np.float64), np.diff(start))
    # values beyond every step keep their side of all steps after clipping
    xk = np.clip(x, -M - 1.0, M + 1.0)
    xk += S * table
    idx = np.searchsorted(keys, xk, side=side)
    del xk
    if side == "right":
        # possible false positives only: a counted step above x
        bad = idx > lo_t
        bad[bad] = steps[idx[bad] - 1] > x[bad]
    else:
        # possible false negatives only: an uncounted step below x
        hi_t = start[table + 1]
        bad = idx < hi_t
        bad[bad] = steps[idx[bad]] < x[bad]
    if bad.any():
        rows = np.flatnonzero(bad)
        t = table[rows]
        idx[rows] = _bisect(steps, start[t], start[t + 1], x[rows], side)
    idx -= lo_t
    return idx


class TableGrid(NamedTuple):
    """Many step functions prepared for counting by uniform grids, exactly.

    Made by :func:`table_grid`; :func:`grid_positions` counts. Table ``t``'s
    distinct steps ``u_0 < u_1 < ...`` (``n_steps[t]`` of them) are stored
    at ``steps[table_start[t]:]``, followed by ``window`` NaN (never
    counted); ``values[table_start[t] + k]`` is the table's output for a
    score with ``k`` of its distinct steps at or below it. Every table has a
    grid of its own, ``2**p`` equal cells over ``[u_0, u_last]``:
    ``cell(v) = clamp((v - origin[t]) * scale[t], 0, top[t])``, a chain of
    float operations each monotone in ``v``, so every step in a lower cell
    than ``cell(x)`` is below ``x`` and every step in a higher one above it
    (also across the float roundings). ``first[cell_start[t] + c]`` is the
    position of the first step in cell ``c`` or above; the cell's own steps
    that are ``<= x`` are counted by a branch-free binary search over the
    next ``window`` positions (``window = 2**k - 1``, the grid refined until
    no cell holds more). Cells that still hold more (a float cluster the
    grid cannot split) are ``crowded``; their rows take a longer branch-free
    search over ``crowd_window`` positions, which never reads past the
    table's first NaN pad.

    Memory is linear in the steps (about 24 bytes per distinct step), not in
    tables x steps, and a row touches three cache lines of its own table:
    the cost of a count stays flat as the tables grow.
    """

    origin: np.ndarray
    scale: np.ndarray
    top: np.ndarray
    cell_start: np.ndarray
    first: np.ndarray
    steps: np.ndarray
    values: np.ndarray
    table_start: np.ndarray
    n_steps: np.ndarray
    crowded: np.ndarray | None
    window: int
    crowd_window: int = 0


#: Steps a grid cell may hold before the grid is refined (``2**k - 1``: a
#: ``k``-step binary search covers them).
_GRID_WINDOW = 7
#: A table's grid is refined to at most this many times its first size
#: (which is about one cell per distinct step) and this many cells.
_GRID_REFINE = 16
_GRID_MAX_CELLS = 1 << 24


def _grid_cell(v, origin, scale, top):
    """Grid cell of every value (a new intp array; monotone in ``v``).

    ``origin``, ``scale``, ``top`` are scalars or arrays like ``v``.
    """
    g = np.subtract(v, origin)
    with np.errstate(over="ignore", invalid="ignore"):
        g *= scale  # overflow to +-inf and 0 * inf = NaN are clamped below
    np.fmax(g, 0.0, out=g)  # fmax / fmin also send NaN to a valid cell
    np.fmin(g, top, out=g)
    return g.astype(np.intp)


def table_grid(steps, start, values):
    """Prepare :class:`TableGrid` for step functions stored back to back.

    Parameters
    ----------
    steps : ndarray of shape (K,), float64
        Table ``t``'s sorted steps are ``steps[start[t]:start[t + 1]]``
        (repeated steps allowed: each counts).
    start : ndarray of shape (T + 1,), int
    values : ndarray of shape (K + T,), float64
        Table ``t``'s output for a score with ``k`` of its steps at or below
        it is ``values[start[t] + t + k]``.

    Returns
    -------
    TableGrid
        Cost ``O(K)`` per refinement round, no loop over the tables.
    """
    steps = np.asarray(steps, dtype=np.float64)
    start = np.asarray(start, dtype=np.intp)
    T = start.shape[0] - 1
    W = _GRID_WINDOW
    tab = np.repeat(np.arange(T, dtype=np.intp), np.diff(start))
    # the last of every run of equal steps of a table stands for the run:
    # a score at or above it has the whole run below it
    last = np.ones(steps.shape[0], dtype=bool)
    last[:-1] = (steps[1:] != steps[:-1]) | (tab[1:] != tab[:-1])
    keep = np.flatnonzero(last)
    us, ut = steps[keep], tab[keep]
    U = np.bincount(ut, minlength=T)
    us_start = np.concatenate(([0], np.cumsum(U)))
    # padded layout: table t at ps[t] .. ps[t] + U[t] + W - 1
    ps = us_start[:-1] + W * np.arange(T)
    pos_u = np.arange(us.shape[0]) + W * ut  # padded position of every step
    P = int(us_start[-1]) + W * T
    padded = np.full(P, np.nan)
    padded[pos_u] = us
    out = np.full(P, np.nan)
    out[ps] = values[start[:-1] + np.arange(T)]  # no step at or below
    out[pos_u + 1] = values[keep + ut + 1]  # keep[i] - start[t] + 1 steps

    has = U > 0
    origin = np.zeros(T)
    origin[has] = us[us_start[:-1][has]]
    span = np.zeros(T)
    span[has] = us[us_start[1:][has] - 1] - origin[has]
    G = np.ones(T, dtype=np.intp)
    while np.any(G < U):
        G[G < U] *= 2  # about one cell per distinct step
    cap = np.minimum(G * _GRID_REFINE, _GRID_MAX_CELLS)
    while True:
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            scale = G / span
        scale[~((span > 0) & np.isfinite(scale))] = 0.0
        top = G - 1.0
        cell_start = np.concatenate(([0], np.cumsum(G)))
        key = _grid_cell(us, origin[ut], scale[ut], top[ut]) + cell_start[ut]
        per_cell = np.bincount(key, minlength=int(cell_start[-1]))
        crowded_t = np.zeros(T, dtype=bool)
        crowded_t[ut[per_cell[key] > W]] = True
        refine = crowded_t & (scale > 0) & (G < cap)
        if not refine.any():
            break
        G[refine] *= 2
    C = int(cell_start[-1])
    cell_t = np.repeat(np.arange(T, dtype=np.intp), G)
    first = np.searchsorted(key, np.arange(C), side="left") + W * cell_t
    crowded = per_cell > W
    # 2**k - 1 >= the most steps any crowded cell holds
    crowd_window = (1 << int(per_cell.max()).bit_length()) - 1 if crowded.any() else 0
    return TableGrid(
        origin=origin,
        scale=scale,
        top=top,
        cell_start=cell_start[:-1].astype(np.intp),
        first=first.astype(np.intp),
        steps=padded,
        values=out,
        table_start=ps.astype(np.intp),
        n_steps=U.astype(np.intp),
        crowded=crowded if crowded.any() else None,
        window=W,
        crowd_window=crowd_window,
    )


#: Rows per pass of ``grid_positions`` (its temporaries stay in L2 cache).
_GRID_ROWS = 1 << 14


def grid_positions(grid, x, table=None):
    """Padded position of ``x[i]`` in table ``table[i]`` of a :class:`TableGrid`.

    ``grid.table_start[t]`` plus the number of the table's distinct steps
    ``<= x[i]`` (NaN counts as above every step, as ``np.searchsorted``
    sorts it), so ``grid.values[grid_positions(grid, x, table)]`` is every
    row's output. ``table=None``: table 0 for every row (one table; no
    per-row parameters are gathered). Exact: the same count as
    ``np.searchsorted(steps_t, x, side="right")``.
    """
    n = x.shape[0]
    pos = np.empty(n, dtype=np.intp)
    for a in range(0, n, _GRID_ROWS):
        sl = slice(a, a + _GRID_ROWS)
        pos[sl] = _grid_positions(grid, x[sl], None if table is None else table[sl])
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, checked below
        any_nan = np.isnan(np.add.reduce(x))
    if any_nan:
        rows = np.flatnonzero(np.isnan(x))
        t = 0 if table is None else table[rows]
        pos[rows] = grid.table_start[t] + grid.n_steps[t]
    return pos


def _grid_positions(grid, x, j):
    """``grid_positions`` of one pass of rows (NaN not handled)."""
    if j is None:
        o, s, top, c0 = grid.origin[0], grid.scale[0], grid.top[0], grid.cell_start[0]
    else:
        o, s, top = grid.origin.take(j), grid.scale.take(j), grid.top.take(j)
        c0 = grid.cell_start.take(j)
    g = _grid_cell(x, o, s, top)
    g += c0
    pos = grid.first.take(g)
    # branch-free binary search of the cell's steps <= x among the next
    # `window` positions (later cells' steps and the NaN padding are not)
    steps = grid.steps
    probe = np.empty(x.shape[0], dtype=np.intp)
    b = np.empty(x.shape[0])
    le = np.empty(x.shape[0], dtype=bool)
    half = (grid.window + 1) // 2
    while half:
        np.add(pos, half - 1, out=probe)
        steps.take(probe, out=b)
        np.less_equal(b, x, out=le)
        # (a multiply into a buffer is twice as fast as add(where=le))
        np.multiply(le, half, out=probe)
        pos += probe
        half //= 2
    if grid.crowded is not None:
        rows = np.flatnonzero(grid.crowded.take(g))
        if rows.size:
            t = np.zeros(rows.size, dtype=np.intp) if j is None else j[rows]
            # the same search over a longer window; a probe past the
            # table's steps reads its first NaN pad (never <= x)
            pad = grid.table_start[t] + grid.n_steps[t]
            xr = x[rows]
            p = grid.first.take(g[rows])
            half = (grid.crowd_window + 1) // 2
            while half:
                q = np.minimum(p + (half - 1), pad)
                p += (steps.take(q) <= xr) * half
                half //= 2
            pos[rows] = p
    return pos


__all__ = ["TableGrid", "grid_positions", "table_grid"]
