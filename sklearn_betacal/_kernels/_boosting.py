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

from ._kdtree import prepare_node_walk, route_kdtree


def prepare_forest(trees):
    """The walks of ``trees`` (a list of node-array dicts), prepared once."""
    out = []
    for t in trees:
        n_levels = int(t["depth"].max())
        if n_levels == 0:  # a single leaf: no walk
            out.append((None, np.asarray(t["value"], dtype=np.float64)))
            continue
        out.append((prepare_node_walk(t), np.asarray(t["value"], dtype=np.float64)))
    return out


def forest_raw(F, baseline, prepared):
    """``baseline + sum_t value_t[leaf_t(F)]``: the ensemble's raw scores.

    The trees are added in order to ``baseline`` (the order of scikit-learn's
    gradient boosting, so the sums agree bit for bit). A single-leaf tree
    adds its one value to every row.
    """
    raw = np.full(F.shape[0], float(baseline), dtype=np.float64)
    for walk, value in prepared:
        if walk is None:
            raw += value[0]
        else:
            raw += value[route_kdtree(F, walk)]
    return raw
