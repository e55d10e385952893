# SPDX-License-Identifier: MIT
"""Which binning serves each beta-binning cell: its own, an ancestor's or the root.

Thm 3.1 of the paper bounds the calibration error of every bin that holds at
least ``b`` points, so a cell with ``n_s >= b`` points gets its own UMD
binning (with ``floor(n_s / b)`` bins). A smaller cell cannot, and Alg. 2
sends its rows to the root binning. When the partition is a tree, a closer
region with enough points exists: the cell's nearest ancestor node with
``>= b`` points, whose binning is fitted on the rows of all leaves below it.
That keeps the rows with the neighbours the partition grouped them with,
instead of pooling them with everything.

Pure NumPy; no scikit-learn. Node ids and cell ids are different numbers:
``ancestors[c]`` lists *node* ids of the partitioner's tree.
"""

import numpy as np

#: ``serving`` value of a cell served by the root binning.
ROOT = -1


def fallback_plan(cell_weight, b, ancestors=None):
    """Choose the serving calibrator of every cell.

    Parameters
    ----------
    cell_weight : ndarray of shape (n_cells,), float64
        Total weight (row count) of each cell id ``0 .. n_cells - 1`` among
        the calibration rows (0 for a cell that got no row; missing trailing
        cells of ``ancestors`` count 0).
    b : int
        Points per bin: a region needs ``>= b`` points for its own binning.
    ancestors : list of int ndarrays or None
        Per cell id, the node ids of its ancestors, nearest first (the root
        last); ``None`` when the partition has no hierarchy.

    Returns
    -------
    own : ndarray of bool, shape (n_cells,)
        True where the cell has ``>= b`` points and gets its own binning.
    serving : ndarray of int64, shape (n_cells,)
        For the other cells: the node id of the nearest ancestor with ``>=
        b`` points, or ``ROOT`` (-1) when none has (or no hierarchy is
        known). For cells with their own binning: ``ROOT`` (unused).
    node_members : dict of int to ndarray of int64
        For every node in ``serving``: the cell ids of the leaves below it,
        whose rows its binning is fitted on.
    """
    cell_weight = np.asarray(cell_weight, dtype=np.float64)
    if ancestors is not None and len(ancestors) > cell_weight.shape[0]:
        # cells of the partition that no calibration row reached: weight 0
        cell_weight = np.r_[
            cell_weight, np.zeros(len(ancestors) - cell_weight.shape[0])
        ]
    n_cells = cell_weight.shape[0]
    own = cell_weight >= b
    serving = np.full(n_cells, ROOT, dtype=np.int64)
    if ancestors is None or own.all():
        return own, serving, {}
    # members[node] = cells below node; weight[node] = their total weight
    members = {}
    for cell, chain in enumerate(ancestors):
        for node in np.asarray(chain, dtype=np.int64).tolist():
            members.setdefault(node, []).append(cell)
    node_weight = {node: cell_weight[cells].sum() for node, cells in members.items()}
    roots = {int(chain[-1]) for chain in ancestors if len(chain)}
    used = {}
    for cell in np.flatnonzero(~own):
        for node in np.asarray(ancestors[cell], dtype=np.int64).tolist():
            if node in roots:
                break  # the tree's root region is the root binning itself
            if node_weight[node] >= b:
                serving[cell] = node
                used[node] = np.asarray(members[node], dtype=np.int64)
                break
    return own, serving, used
