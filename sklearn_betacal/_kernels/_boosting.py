# SPDX-License-Identifier: MIT
"""Prediction of a boosted tree ensemble stored as plain node arrays.

The feature-aware scaler of scaling-beta-binning (``scaler="features"``,
Alg. 3 with a scaler that sees the partition features) is a sum of
regression trees on the logit scale: ``raw(x) = baseline + sum_t v_t(x)``,
where ``v_t(x)`` is the value of the leaf of tree ``t`` that ``x`` reaches.
Each tree is kept in the node-array layout of the package's trees
(``feature``, ``threshold``, ``children_left``, ``children_right``, ``cell``,
``depth``; left iff ``x[feature] <= threshold``) with one value per leaf
(``value[cell]``), so that it is walked by the kd-tree's walk and a model
file holds nothing but arrays.

Pure NumPy (no scikit-learn, no validation): float64 rows and checked node
arrays go in, float64 raw scores come out.
"""

import numpy as np

from . import compiled_twin
from ._kdtree import prepare_node_walk, route_kdtree

#: Whether :func:`forest_raw` walks the trees with the compiled twin in
#: :mod:`._boosting_numba` (the optional extra ``fast``): ``None`` = when
#: numba is installed and the prediction has at least ``NUMBA_MIN_WALKS``
#: row-tree walks; ``False`` = never (the NumPy path, the reference);
#: ``True`` = whenever numba is installed. Both give the same scores, bit for
#: bit.
USE_NUMBA = None
#: Fewer row-tree walks than this: the NumPy path (a compiled call's first
#: use compiles, about a second once per process without numba's disk cache).
NUMBA_MIN_WALKS = 2**18


class PreparedForest(list):
    """The walks of a forest (a list of ``(walk, values)``, one per tree),
    and, on first use by the compiled path, its trees packed flat."""

    def __init__(self, walks, trees):
        super().__init__(walks)
        self.trees = trees
        self.packed = None


def prepare_forest(trees):
    """The walks of ``trees`` (a list of node-array dicts), prepared once."""
    out = []
    for t in trees:
        n_levels = int(t["depth"].max())
        if n_levels == 0:  # a single leaf: no walk
            out.append((None, np.asarray(t["value"], dtype=np.float64)))
            continue
        out.append((prepare_node_walk(t), np.asarray(t["value"], dtype=np.float64)))
    return PreparedForest(out, list(trees))


def _compiled(n_walks):
    """The module :mod:`._boosting_numba`, or ``None`` for the NumPy path."""
    return compiled_twin(USE_NUMBA, n_walks, NUMBA_MIN_WALKS, "._boosting_numba")


def forest_raw(F, baseline, prepared):
    """``baseline + sum_t value_t[leaf_t(F)]``: the ensemble's raw scores.

    The trees are added in order to ``baseline`` (the order of scikit-learn's
    gradient boosting, so the sums agree bit for bit). A single-leaf tree
    adds its one value to every row.
    """
    compiled = None
    if isinstance(prepared, PreparedForest) and prepared:
        compiled = _compiled(F.shape[0] * len(prepared))
    if compiled is not None:
        if prepared.packed is None:
            prepared.packed = compiled.pack_forest(prepared.trees)
        return compiled.forest_raw(F, baseline, prepared.packed)
    raw = np.full(F.shape[0], float(baseline), dtype=np.float64)
    for walk, value in prepared:
        if walk is None:
            raw += value[0]
        else:
            raw += value[route_kdtree(F, walk)]
    return raw
