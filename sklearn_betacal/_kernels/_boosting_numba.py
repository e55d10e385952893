# SPDX-License-Identifier: MIT
"""Compiled twin of the boosted forest's prediction (optional extra ``fast``).

Imported only by :func:`sklearn_betacal._kernels._boosting.forest_raw`, when
numba is installed and a prediction is large enough: importing
``sklearn_betacal`` never imports numba. :func:`forest_raw` walks every row
through every tree in one compiled loop (the NumPy path walks one tree at a
time over all rows, a handful of vectorised passes per level and tree) and
adds the leaf values to the baseline in tree order, row by row: the same
float additions in the same order as the NumPy path's ``raw += value[leaf]``
per tree, and the same comparison (left iff ``x <= threshold``, float64),
so the result is the NumPy path's bit for bit (the tests compare both).
"""

import os
import tempfile

import numba
import numpy as np


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

#: Rows per block: every tree walks a block of rows before the next tree
#: (the block's rows and the tree's nodes stay in cache together).
_BLOCK = 256


@_jit
def _forest_raw(F, baseline, feature, threshold, left, right, cell, values, roots):
    n = F.shape[0]
    n_trees = roots.shape[0] - 1
    raw = np.full(n, baseline, dtype=np.float64)
    for lo in range(0, n, _BLOCK):
        hi = min(lo + _BLOCK, n)
        # tree by tree within the block: each row's sum in tree order
        for t in range(n_trees):
            root = roots[t]
            for i in range(lo, hi):
                node = root
                while left[node] >= 0:
                    if F[i, feature[node]] > threshold[node]:
                        node = right[node]
                    else:
                        node = left[node]
                raw[i] += values[cell[node]]
    return raw


def pack_forest(trees):
    """All trees' node arrays (at least one tree) in flat arrays, child and
    leaf indices made global: ``(feature, threshold, left, right, cell,
    values, roots)``, ``roots[t]`` the root of tree ``t`` (``roots[-1]`` the
    node count)."""
    sizes = [t["children_left"].shape[0] for t in trees]
    roots = np.zeros(len(trees) + 1, dtype=np.int64)
    roots[1:] = np.cumsum(sizes)
    leaves = np.zeros(len(trees) + 1, dtype=np.int64)
    leaves[1:] = np.cumsum([t["value"].shape[0] for t in trees])
    parts = {k: [] for k in ("feature", "threshold", "left", "right", "cell")}
    for k, t in enumerate(trees):
        off = roots[k]
        left = np.asarray(t["children_left"], dtype=np.int64)
        right = np.asarray(t["children_right"], dtype=np.int64)
        parts["left"].append(np.where(left >= 0, left + off, -1))
        parts["right"].append(np.where(right >= 0, right + off, -1))
        parts["feature"].append(np.maximum(np.asarray(t["feature"], np.int64), 0))
        parts["threshold"].append(np.asarray(t["threshold"], dtype=np.float64))
        cell = np.asarray(t["cell"], dtype=np.int64)
        parts["cell"].append(np.where(cell >= 0, cell + leaves[k], -1))
    cat = {k: np.concatenate(v) for k, v in parts.items()}
    values = np.concatenate([np.asarray(t["value"], dtype=np.float64) for t in trees])
    return (
        cat["feature"],
        cat["threshold"],
        cat["left"],
        cat["right"],
        cat["cell"],
        values,
        roots,
    )


def forest_raw(F, baseline, packed):
    """``baseline + sum_t value_t[leaf_t(F)]`` for float64 rows ``F``."""
    F = np.ascontiguousarray(F, dtype=np.float64)
    return _forest_raw(F, float(baseline), *packed)
