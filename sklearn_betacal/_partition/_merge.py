# SPDX-License-Identifier: MIT
"""Fine cells merged by their recalibration: CalibrationTreePartitioner's
``strategy="merge"``.

Groups of questions on which a model is miscalibrated differently are rarely
half-spaces of a few directions: a tree of depth 3 holds at most 8 of them.
Fine cells (k-means of the partition features, unsupervised, sized by the
calibrator's ``b``) split every group; merging the cells whose recalibrations
do not differ then gives back cells about as large as the groups.

Both steps read the same per-row statistic as the tree: the whitened score
``G`` of one global Platt recalibration (``_tree.recalibration_scores``). For
a set ``C`` of rows with score sum ``S_C`` and weight ``W_C``, ``||S_C||^2 /
W_C`` is the score statistic of giving ``C`` its own intercept and slope, so

- the fine cells as a whole are tested at once by Rao's score test of
  cell-own intercepts and slopes, ``T = sum_c S_c^T I_c^+ S_c - S^T I^+ S``
  with ``I_c`` the cell's Fisher information (``score_heterogeneity_statistic``),
  about ``chi^2_{2 (K - 1)}`` for a fixed partition of a calibrated sample
  (the cells depend on the features only, so the fixed-partition null
  holds); below its ``1 - alpha`` quantile the partition is one cell. (An
  earlier form took ``I_c = W_c I``, every cell's scores varying as
  the whole's: ``sum_c ||S_c||^2 / W_c - ||S||^2 / W`` on ``sigma^2``, which
  rejected calibrated samples too often in the tail when cells bunch their
  confidences; ``heterogeneity_statistic`` keeps it for side-by-side runs.)
- merging two cells ``a, b`` loses ``W_a W_b / (W_a + W_b) ||S_a / W_a - S_b
  / W_b||^2`` of the statistic (Ward's criterion on the score means), about
  ``sigma^2 chi^2_2`` when their recalibrations are the same. The cheapest
  pair is merged until every merge would lose more than its ``1 - alpha``
  quantile (a cell below the leaf minimum is always merged, with its
  cheapest partner). The stop is not corrected for the ``K`` cells: the
  test above already keeps a calibrated sample one cell, and a stop at
  ``alpha / K`` merged real groups away (``benchmarks/results/merge_stop.md``).

The merges that follow the stop, up to one cell, give the cells a hierarchy:
a cell with too few calibration rows falls back to the nearest merge above
it rather than to the root. Pure NumPy (the k-means is scikit-learn's, called
by the estimator).
"""

import numpy as np

#: Most fine cells: the merge is ``O(K^3)`` in NumPy (``K^2`` costs per merge)
#: and the k-means ``O(n K d)``; beyond a few hundred cells, each one is too
#: small to tell its recalibration anyway.
MAX_FINE_CELLS = 256


def heterogeneity_statistic(S, W):
    """``sum_c ||S_c||^2 / W_c - ||S||^2 / W`` over the cells with ``W_c > 0``,
    and their number."""
    keep = W > 0
    S, W = S[keep], W[keep]
    if S.shape[0] == 0:
        return 0.0, 0
    total = S.sum(axis=0)
    stat = float(np.sum(np.sum(S**2, axis=1) / W) - total @ total / W.sum())
    return max(stat, 0.0), int(S.shape[0])


def _score_quad(S, V):
    """``S^T V^+ S`` and ``rank V`` of every ``(S, V)`` of a stack: the
    pseudo-inverse on the eigenvectors above a relative tolerance (0 where
    ``V`` is 0)."""
    vals, vecs = np.linalg.eigh(V)
    tol = vals.max(axis=-1, keepdims=True) * V.shape[-1] * 1e-10
    ok = vals > np.maximum(tol, 0)
    proj = np.einsum("...ij,...i->...j", vecs, S)
    inv = np.where(ok, 1.0 / np.where(ok, vals, 1.0), 0.0)
    return np.sum(proj**2 * inv, axis=-1), ok.sum(axis=-1)


def score_heterogeneity_statistic(S, V):
    """Rao's score test of the fine cells, each with its own information.

    ``S`` (K, k): per cell the sum of the rows' (whitened) scores; ``V`` (K,
    k, k): per cell the variance of that sum under the one global
    recalibration (its Fisher information, ``sum_i w_i Q_i Q_i^T``). Returns
    ``(T, df)`` with ``T = sum_c S_c^T V_c^+ S_c - S^T V^+ S`` (``V = sum_c
    V_c``, ``+`` the pseudo-inverse) and ``df = sum_c rank V_c - rank V``:
    the score (Lagrange multiplier) statistic for giving every cell its own
    intercept and slope, about ``chi^2_df`` on a calibrated sample whatever
    the cells' confidences. :func:`heterogeneity_statistic` assumes ``V_c =
    sigma^2 W_c I``; a cell whose confidences are bunched has nearly collinear
    ``[1, s]`` and fewer effective degrees of freedom, and that test rejected
    calibrated samples too often (on 600 planted null samples 3.5 % at 2.5 %,
    1.8 % at 1 %; this one 2.3 %, 1.0 %). A cell of rank one (a constant
    confidence) counts one degree of freedom; an empty one none.
    """
    keep = np.trace(V, axis1=1, axis2=2) > 0
    S, V = S[keep], V[keep]
    if S.shape[0] < 2:
        return 0.0, 0
    per_cell, ranks = _score_quad(S, V)
    whole, rank = _score_quad(S.sum(axis=0), V.sum(axis=0))
    stat = float(np.sum(per_cell) - whole)
    return max(stat, 0.0), int(np.sum(ranks) - rank)


def _merge_cost(S, W, i, others, V=None):
    """Ward cost of merging cluster ``i`` with each of ``others`` (with ``V``:
    the score statistic lost, ``q_i + q_o - q_{i+o}``, ``q = S^T V^+ S``)."""
    if V is not None:
        qi, _ = _score_quad(S[i], V[i])
        qo, _ = _score_quad(S[others], V[others])
        qm, _ = _score_quad(S[i] + S[others], V[i] + V[others])
        return np.maximum(qi + qo - qm, 0.0)
    Wi, Wo = W[i], W[others]
    with np.errstate(divide="ignore", invalid="ignore"):
        mi = S[i] / Wi if Wi > 0 else np.zeros_like(S[i])
        mo = np.where(Wo[:, None] > 0, S[others] / np.where(Wo > 0, Wo, 1)[:, None], 0)
        f = np.where(Wi + Wo > 0, Wi * Wo / np.where(Wi + Wo > 0, Wi + Wo, 1), 0)
    return f * np.sum((mo - mi) ** 2, axis=1)


def merge_cells(S, W, *, min_weight, threshold, V=None):
    """Agglomerate fine cells by their score means (see the module docstring).

    Parameters
    ----------
    S : ndarray of shape (K, k)
        Per fine cell, the sum of the rows' whitened scores.
    W : ndarray of shape (K,)
        Per fine cell, its total weight (0 for an empty cell).
    min_weight : float
        A cluster lighter than this is merged whatever the cost.
    threshold : float
        Merging stops when the cheapest merge costs more.

    Returns
    -------
    fine_cell : ndarray of shape (K,), int64
        The cell ``0 .. C - 1`` of every fine cell; cells are numbered by
        their lowest fine cell.
    parent : ndarray of shape (2 C - 1,), int64
        The hierarchy above the cells: nodes ``0 .. C - 1`` are the cells,
        node ``C + j`` the ``j``-th merge after the stop (the root last);
        ``parent[root] = -1``.
    """
    K = S.shape[0]
    k = S.shape[1]
    # cluster ids: fine cells 0 .. K-1, then one new id per merge
    S = np.vstack([np.asarray(S, dtype=np.float64), np.zeros((K, k))])
    W = np.concatenate([np.asarray(W, dtype=np.float64), np.zeros(K)])
    if V is not None:
        V = np.concatenate([np.asarray(V, dtype=np.float64), np.zeros((K, k, k))])
    lowest = np.concatenate([np.arange(K), np.zeros(K, dtype=np.int64)])
    children = {}
    active = list(range(K))
    cost = np.full((2 * K, 2 * K), np.inf)
    for i in range(K - 1):
        cost[i, i + 1 : K] = _merge_cost(S, W, i, np.arange(i + 1, K), V)
        cost[i + 1 : K, i] = cost[i, i + 1 : K]
    cells = None
    nxt = K
    while len(active) > 1:
        act = np.asarray(active)
        sub = cost[np.ix_(act, act)]
        light = W[act] < min_weight
        if cells is None and light.any():
            # the lightest cluster first (the lowest fine cell on ties), with
            # its cheapest partner
            order = np.lexsort((lowest[act], W[act]))
            i = int(order[0])
            row = sub[i].copy()
            row[i] = np.inf
            j = int(np.argmin(row))
        else:
            i, j = divmod(int(np.argmin(sub)), act.shape[0])
            if cells is None and sub[i, j] > threshold:
                cells, stop = list(active), nxt  # the stop: these are the cells
                continue
        a, b = int(act[i]), int(act[j])
        S[nxt], W[nxt] = S[a] + S[b], W[a] + W[b]
        if V is not None:
            V[nxt] = V[a] + V[b]
        lowest[nxt] = min(lowest[a], lowest[b])
        children[nxt] = (a, b)
        active = [c for c in active if c not in (a, b)]
        if active:
            rest = np.asarray(active)
            cost[nxt, rest] = _merge_cost(S, W, nxt, rest, V)
            cost[rest, nxt] = cost[nxt, rest]
        active.append(nxt)
        nxt += 1
    if cells is None:
        cells, stop = list(active), nxt  # merged down to one cell
    # cells numbered by their lowest fine cell: the same data give the same ids
    cells.sort(key=lambda c: lowest[c])
    node = {c: n for n, c in enumerate(cells)}
    fine_cell = np.empty(K, dtype=np.int64)
    for c, n in node.items():
        stack = [c]
        while stack:
            u = stack.pop()
            if u < K:
                fine_cell[u] = n
            else:
                stack.extend(children[u])
    C = len(cells)
    parent = np.full(2 * C - 1, -1, dtype=np.int64)
    for new in range(stop, nxt):  # the merges after the stop
        a, b = children[new]
        node[new] = len(node)
        parent[node[a]] = parent[node[b]] = node[new]
    return fine_cell, parent


def distinct_rows_upto(X, cap):
    """``min(cap, number of distinct rows of X)``, without sorting the rows
    when a column alone has ``cap`` distinct values (the usual case).

    Rows equal by value have equal columns, so a column's distinct values
    are at most the distinct rows: the answer is exactly that of
    ``np.unique(X, axis=0)``, which sorts whole rows (a tenth of a merge
    fit of 20,000 rows in 33 dimensions).
    """
    if X.shape[0] == 0 or cap <= 0:
        return int(min(cap, X.shape[0]))
    for j in range(X.shape[1]):
        if np.unique(X[:, j]).shape[0] >= cap:
            return int(cap)
    return int(min(cap, np.unique(X, axis=0).shape[0]))


#: Rows per block of :func:`nearest_center` (bounds its ``rows x K`` table).
NEAREST_BLOCK_ROWS = 8192


def nearest_center(X, centers):
    """Index of the nearest row of ``centers`` (Euclidean) for every row of
    ``X``; the lowest index on ties."""
    sq = np.einsum("ij,ij->i", centers, centers)
    out = np.empty(X.shape[0], dtype=np.int64)
    # one table of distances, reused by every block and computed in place:
    # fresh temporaries of a block's size cost more (page faults) than the
    # product itself
    table = np.empty((min(NEAREST_BLOCK_ROWS, X.shape[0]), centers.shape[0]))
    for lo in range(0, X.shape[0], NEAREST_BLOCK_ROWS):
        block = X[lo : lo + NEAREST_BLOCK_ROWS]
        dist = table[: block.shape[0]]
        # ||x - c||^2 - ||x||^2 = ||c||^2 - 2 x.c: the same order over the
        # centres (the same numbers as sq - 2.0 * (block @ centers.T))
        np.matmul(block, centers.T, out=dist)
        dist *= -2.0
        dist += sq
        np.argmin(dist, axis=1, out=out[lo : lo + block.shape[0]])
    return out


def cell_chains(parent, n_cells):
    """Per cell, the nodes above it (nearest first, the root last)."""
    out = []
    for c in range(n_cells):
        chain, node = [], int(parent[c])
        while node >= 0:
            chain.append(node)
            node = int(parent[node])
        out.append(np.asarray(chain, dtype=np.int64))
    return out


def check_hierarchy(parent, n_cells):
    """Whether ``parent`` is the merge hierarchy of ``n_cells`` cells: ``2 C -
    1`` nodes, each node's parent after it, every merge node has exactly two
    children, the last node is the only root. A walk on it then ends."""
    n = parent.shape[0]
    if n != 2 * n_cells - 1 or parent[-1] != -1:
        return False
    up = parent[:-1]
    idx = np.arange(n - 1)
    if np.any((up <= idx) | (up >= n) | (up < n_cells)):
        return False
    return bool(np.all(np.bincount(up, minlength=n)[n_cells:] == 2))
