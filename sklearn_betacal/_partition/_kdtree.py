# SPDX-License-Identifier: MIT
"""The paper's bounded kd-tree partition (Sec. 2.3, App. C).

The numerical work (median splits, the breadth-first walk) lives in
``_kernels/_kdtree.py``; this module validates and stores the fitted tree.
"""

import weakref
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, StrOptions, _fit_context
from .._docstrings import fill_doc
from .._kernels import _kdtree
from .._state import FEATURES, Array, Custom, Int, Schema
from .._validation import fitted_float_array
from ._base import (
    _PartitionerMixin,
    check_node_arrays,
    damaged,
    validate_numeric,
)

#: ``tree_`` key -> key of the kernel's tree (``_kernels._kdtree``): the
#: fitted attribute uses scikit-learn's ``Tree`` names, as the learned tree.
#: estimator -> (the fitted arrays the tables were built from, the tables)
_ROUTING_TABLES = weakref.WeakKeyDictionary()

#: estimator -> (the fitted arrays, the per-depth leaf tables built from them)
_LEAF_TABLES = weakref.WeakKeyDictionary()


def _kept_beside(store, est, key, build):
    """``build()``, kept in ``store`` beside ``est`` (not in its ``__dict__``:
    reading must not change the fitted state, nor the model file) while the
    fitted arrays in ``key`` are the same objects; rebuilt after a refit."""
    cached = store.get(est)
    if cached is not None and all(a is b for a, b in zip(cached[0], key, strict=True)):
        return cached[1]
    value = build()
    store[est] = (key, value)
    return value


_TREE_KEYS = {
    "feature": "axis",
    "threshold": "threshold",
    "children_left": "left",
    "children_right": "right",
    "cell": "cell",
    "depth": "depth",
}

#: Rows used to estimate the principal directions for ``split_axis="pca"``.
#: The top ``max_depth`` directions of a 768-d embedding are estimated to a
#: few degrees from 20,000 rows; more rows only cost time (``O(n d^2)``).
PCA_MAX_SAMPLES = 20_000


def _pca(state):
    return state["split_axis"] == "pca"


def _check_tree(owner, name, tree, state):
    """The node arrays: ``2 n_cells_ - 1`` nodes (a binary tree of
    ``n_cells_`` leaves; checked before they are read), one tree over the
    split coordinates (:func:`~._base.check_node_arrays`) of the stated
    depth and cells."""
    n_nodes = 2 * state["n_cells_"] - 1
    feature = tree.get("feature") if isinstance(tree, dict) else None
    if not isinstance(feature, np.ndarray) or feature.shape != (n_nodes,):
        raise damaged(owner, f"tree_ is not the {n_nodes} nodes of n_cells_ leaves")
    n_split = state["n_features_in_"]
    if _pca(state):
        n_split = state["components_"].shape[0]
    tree, n_levels = check_node_arrays(owner, tree, n_split)
    if state["depth_"] != n_levels:
        raise damaged(owner, f"depth_ is not the tree's depth {n_levels}")
    return tree


def _check_bounds(owner, state):
    """The bound tables list each cell's distinct path coordinates (those of
    the tree), with finite bounds ``lower <= upper`` there and NaN beyond
    (a NaN or reversed bound sent the cell's rows outside)."""
    tree = state["tree_"]
    path = _kdtree.leaf_path_axes(
        tree["feature"], tree["children_left"], tree["children_right"],
        tree["cell"], tree["depth"],
    )  # fmt: skip
    want, _ = _kdtree.distinct_path_axes(path)
    if not np.array_equal(state["bound_axes_"], want):
        raise damaged(
            owner, "bound_axes_ are not the distinct coordinates of the paths"
        )
    used = want >= 0
    lower, upper = state["bound_lower_"], state["bound_upper_"]
    if lower.shape != want.shape or upper.shape != want.shape:
        raise damaged(owner, f"the bound tables have shape {lower.shape}, "
                      f"{upper.shape}, not the bound_axes_' {want.shape}")  # fmt: skip
    if not (np.all(np.isfinite(lower[used])) and np.all(np.isfinite(upper[used]))):
        raise damaged(owner, "a leaf bound is NaN or infinite")
    if not (np.all(np.isnan(lower[~used])) and np.all(np.isnan(upper[~used]))):
        raise damaged(owner, "a bound is set where bound_axes_ is -1")
    if np.any(lower[used] > upper[used]):
        raise damaged(owner, "a leaf's lower bound exceeds its upper bound")


@fill_doc
class KDTreePartitioner(_PartitionerMixin, BaseEstimator):
    """Bounded kd-tree partition of feature rows (the paper's beta).

    Splits the fitted rows recursively at the median of one coordinate per
    node, down to ``max_depth`` levels, and returns for every row the id of
    the leaf (cell) it falls in. Each leaf is *bounded* by the smallest and
    largest value of its fitted rows in every coordinate used on the way
    down; a new row outside those bounds gets cell id ``-1`` (App. C), which
    group-conditional calibrators send to their root calibrator (Alg. 2).
    Labels are not needed: the paper fits the tree on a separate unlabeled
    split.

    Read more in the :ref:`User Guide <partitioners>`.

    Parameters
    ----------
    max_depth : int, default=4
        Number of split levels; at most ``2**max_depth`` cells. ``0`` gives a
        single cell, i.e. plain (average-case) calibration.
    split_axis : {"cycle", "max_spread", "pca"}, default="cycle"
        How a node picks the coordinate it splits on.

        - ``"cycle"`` (the paper): coordinate ``depth mod n_features``, the
          same for all nodes of a level. With a 768-d embedding and depth
          <= 10 this only ever looks at the first few coordinates.
        - ``"max_spread"``: per node, the coordinate with the largest range
          ``max - min`` among the node's rows (as
          :class:`sklearn.neighbors.KDTree`). Adapts to the data but costs a
          pass over all ``n_features`` columns per level.
        - ``"pca"``: rotate once onto the principal directions of the fitted
          rows (``mean_``, ``components_``; estimated on at most
          ``PCA_MAX_SAMPLES`` rows) and cycle through them, level ``j``
          splitting on principal component ``j``. The first splits then
          follow the directions of largest variance wherever they lie in the
          embedding, at the cost of "cycle" plus one projection.
    min_samples_leaf : int, default=1
        A node is not split if one of its children would get fewer rows.
    bounded : bool, default=True
        If False, skip the bounds check: every row gets the leaf it is routed
        to and ``-1`` never occurs (a standard kd-tree).
    random_state : int, RandomState instance or None, default=None
        Draws the subsample for ``split_axis="pca"`` when there are more than
        ``PCA_MAX_SAMPLES`` rows; unused otherwise.

    Attributes
    ----------
    n_cells_ : int
        Number of leaves (cells).
    depth_ : int
        Depth actually reached (``<= max_depth``; smaller when nodes stop
        splitting because of ties or ``min_samples_leaf``).
    leaf_axes_ : ndarray of shape (`n_cells_`, `depth_`), int
        ``leaf_axes_[c, j]``: the coordinate split at depth ``j`` on the path
        to cell ``c`` (a column of ``X``, or a principal component for
        ``"pca"``); ``-1`` beyond the leaf's depth. Built from ``tree_`` on
        first access (and kept while the fit is).
    `leaf_lower_`, leaf_upper_ : ndarray of shape (`n_cells_`, `depth_`), float64
        Bounds of cell ``c`` in coordinate ``leaf_axes_[c, j]``: min and max
        of its fitted rows; NaN where ``leaf_axes_`` is ``-1``. Built from
        ``bound_lower_`` / ``bound_upper_`` on first access.
    bound_axes_ : ndarray of shape (`n_cells_`, n_slots), int
        The distinct coordinates on the path to each cell, in order of first
        use from the root, ``-1`` padded: a coordinate split at several
        depths (``"cycle"`` deeper than ``n_features_in_``) is listed once.
        ``n_slots <= min(depth_, n_features_in_)``.
    `bound_lower_`, bound_upper_ : ndarray of shape (`n_cells_`, n_slots), float64
        The bounds of cell ``c`` in coordinate ``bound_axes_[c, u]`` (NaN
        where it is ``-1``): the fitted state the partitioner routes with,
        each bound stored once.
    leaf_n_samples_ : ndarray of shape (`n_cells_`,), int
        Fitted rows per cell (all >= ``min_samples_leaf``).
    tree_ : dict of ndarrays
        Node arrays in breadth-first order, root first, named as in
        scikit-learn's ``Tree``: ``"feature"`` (split coordinate, -1 at a
        leaf), ``"threshold"`` (go left iff value <= threshold),
        ``"children_left"``, ``"children_right"`` (child node index, -1 at a
        leaf); plus ``"cell"`` (cell id of a leaf, -1 for internal nodes) and
        ``"depth"``.
    mean_ : ndarray of shape (`n_features_in_`,)
        Only for ``"pca"``: the centre of the rotation.
    components_ : ndarray of shape (n_components, `n_features_in_`)
        Only for ``"pca"``: principal directions, ``min(max(max_depth, 1),
        n_features_in_)`` of them, by decreasing variance.
    %(partition_features_in_)s

    See Also
    --------
    GroupColumnPartitioner : Partition given by a precomputed column.
    ClusterPartitioner : Partition given by a clusterer, e.g. KMeans.
    BetaBinningCalibrator : One binning calibrator per cell (Alg. 1, 2).

    Notes
    -----
    **Split value and ties.** A node with ``m`` rows splits at the *lower
    median* ``z`` of its coordinate (the ``ceil(m/2)``-th smallest value):
    left ``<= z``, right ``> z``, as in App. C. With distinct values this is
    the balanced split. The stored threshold (``tree_["threshold"]``) is the
    midpoint between ``z`` and the next larger fitted value -- for an even
    number of distinct values exactly ``np.median`` -- so no fitted row lies
    on a threshold. When values tie at the median the paper's rule can
    leave the right child empty (e.g. a column of equal values); the node
    then instead splits just below ``z`` (left ``< z``) if that keeps both
    children non-empty and is at least as balanced, and otherwise stays a
    leaf. Either way no leaf is ever empty and a node whose values are all
    equal on its coordinate is a leaf.

    **Bounds** are the exact min and max of each leaf's fitted rows,
    inclusive. For ``"pca"`` they are widened by ``1e-9`` times the
    component's largest absolute fitted value, so that the rounding noise of
    re-computing a projection never pushes a fitted row out of its cell.

    **Cell ids** are ``0 .. n_cells_ - 1`` in left-to-right order of the
    leaves (in-order traversal), and ``-1`` for a row outside its leaf's
    bounds. With ``max_depth=0`` no coordinate is used, so the single cell has
    no bounds and every row gets id 0.

    **Cost.** The tree is built level by level, all nodes of a level in the
    same vectorised passes (no Python loop over rows or nodes): per level
    one copy and one gather of the split coordinate, one selection of all
    the nodes' medians at once and a few passes to reorder the rows, so
    ``"cycle"`` costs a small multiple of one median selection over all
    rows per level, and ``max_depth=64`` with ``min_samples_leaf=1`` (one
    row per leaf) costs ``log2(n_samples)`` such levels. Fit memory beyond
    ``X`` is ~25 bytes per row (float64; ~17 for float32) plus the fitted
    arrays, whose leaf bounds hold two values per cell and distinct path
    coordinate (``2 * n_cells_ * n_slots``; the per-depth tables
    ``leaf_lower_``, ``leaf_upper_`` and ``leaf_axes_`` are only built when
    read);
    ``"max_spread"`` reads every coordinate at every level (see
    ``benchmarks/results/kdtree.md``). float32 input is kept as float32
    (half the memory of float64); the input check for NaN/inf reads all
    ``n * d`` values once.

    References
    ----------
    .. [1] J. L. Bentley, "Multidimensional binary search trees used for
       associative searching", Commun. ACM 18(9), 1975.
    .. [2] "beta-calibration of Language Model Confidence Scores for
       Generative QA", Sec. 2.3 and App. C.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import KDTreePartitioner
    >>> Z = np.array([[1, 5], [2, 1], [3, 7], [4, 3],
    ...               [5, 8], [6, 2], [7, 6], [8, 4]], dtype=float)
    >>> part = KDTreePartitioner(max_depth=2).fit(Z)
    >>> part.n_cells_
    4
    >>> part.apply(Z)
    array([1, 0, 1, 0, 3, 2, 3, 2])
    >>> part.apply([[3, 2], [1.5, 2], [6.5, 7]])  # (1.5, 2) is out of bounds
    array([ 0, -1,  3])
    >>> part.leaf_lower_[0], part.leaf_upper_[0]
    (array([2., 1.]), array([4., 3.]))
    """

    _parameter_constraints = {
        "max_depth": [Interval(Integral, 0, None, closed="left")],
        "split_axis": [StrOptions({"cycle", "max_spread", "pca"})],
        "min_samples_leaf": [Interval(Integral, 1, None, closed="left")],
        "bounded": ["boolean"],
        "random_state": ["random_state"],
    }

    _state_schema = Schema(
        **FEATURES,
        # at most 2**max_depth leaves, checked before any array is read
        n_cells_=Int(low=1, high=lambda s: 2 ** min(s["max_depth"], 62)),
        depth_=Int(low=0, high="max_depth"),
        mean_=Array("f", ("n_features_in_",), when=_pca),
        components_=Array(
            "f",
            (
                lambda s: min(max(s["max_depth"], 1), s["n_features_in_"]),
                "n_features_in_",
            ),
            when=_pca,
        ),  # fmt: skip
        tree_=Custom(_check_tree),
        bound_axes_=Array("i", ("n_cells_", None)),
        bound_lower_=Array("f", ("n_cells_", None), finite=False),
        bound_upper_=Array("f", ("n_cells_", None), finite=False),
        leaf_n_samples_=Array("i", ("n_cells_",), low=1),
        rules=(_check_bounds,),
    )

    def __init__(
        self,
        max_depth=4,
        *,
        split_axis="cycle",
        min_samples_leaf=1,
        bounded=True,
        random_state=None,
    ):
        self.max_depth = max_depth
        self.split_axis = split_axis
        self.min_samples_leaf = min_samples_leaf
        self.bounded = bounded
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Build the tree on the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Partition features (e.g. embeddings of question + answer).
            float32 input stays float32.
        y : None
            Ignored; accepted so the partitioner works inside a
            :class:`~sklearn.pipeline.Pipeline` before a classifier.

        Returns
        -------
        self : KDTreePartitioner
            Fitted partitioner.
        """
        X = validate_numeric(self, X, dtype=[np.float64, np.float32])
        if self.split_axis == "pca":
            rng = check_random_state(self.random_state)
            n, d = X.shape
            sub = X
            if n > PCA_MAX_SAMPLES:
                sub = X[np.sort(rng.choice(n, PCA_MAX_SAMPLES, replace=False))]
            n_comp = min(max(self.max_depth, 1), d)
            self.mean_, self.components_ = _kdtree.principal_axes(sub, n_comp)
            F = _kdtree.project(X, self.mean_, self.components_)
            rule = "cycle"
        else:
            F, rule = X, self.split_axis
        tree = _kdtree.build_kdtree(
            F, self.max_depth, self.min_samples_leaf, axis_rule=rule
        )
        self.tree_ = {new: tree[old] for new, old in _TREE_KEYS.items()}
        self.bound_axes_ = tree["bound_axes"]
        self.bound_lower_ = tree["bound_lower"]
        self.bound_upper_ = tree["bound_upper"]
        if self.split_axis == "pca" and self.bound_axes_.size:
            scale = np.abs(F).max(axis=0) if F.shape[0] else np.zeros(F.shape[1])
            slack = 1e-9 * scale[np.maximum(self.bound_axes_, 0)]
            self.bound_lower_ = self.bound_lower_ - slack
            self.bound_upper_ = self.bound_upper_ + slack
        self.leaf_n_samples_ = tree["leaf_n_samples"]
        self.n_cells_ = int(self.bound_axes_.shape[0])
        self.depth_ = int(tree["depth"].max())
        return self

    def _leaf_tables(self):
        """The per-depth tables ``leaf_axes_``, and the slot of every entry
        in ``bound_axes_``, built once per fit (beside the estimator, as
        the routing tables)."""
        check_is_fitted(self)
        t = self.tree_

        def build():
            path = _kdtree.leaf_path_axes(
                t["feature"], t["children_left"], t["children_right"], t["cell"],
                t["depth"],
            )  # fmt: skip
            return {"leaf_axes_": path, "slot": _kdtree.distinct_path_axes(path)[1]}

        key = (t, self.bound_axes_, self.bound_lower_, self.bound_upper_)
        return _kept_beside(_LEAF_TABLES, self, key, build)

    def _expanded(self, name, compact):
        tables = self._leaf_tables()
        if name not in tables:
            tables[name] = _kdtree.expand_bounds(tables["slot"], compact)
        return tables[name]

    @property
    def leaf_axes_(self):
        """The coordinate split at every depth of every cell's path
        (``n_cells_``, ``depth_``), -1 beyond the leaf's depth."""
        return self._leaf_tables()["leaf_axes_"]

    @property
    def leaf_lower_(self):
        """Lower bound of every cell in ``leaf_axes_[c, j]`` (NaN beyond)."""
        return self._expanded("leaf_lower_", self.bound_lower_)

    @property
    def leaf_upper_(self):
        """Upper bound of every cell in ``leaf_axes_[c, j]`` (NaN beyond)."""
        return self._expanded("leaf_upper_", self.bound_upper_)

    @fill_doc
    def apply(self, X):
        """Cell id of every row, as a 1-D array.

        %(partition_apply)s
        cells : ndarray of shape (n_samples,), dtype int64
            Cell id in ``0 .. n_cells_ - 1``, or ``-1`` for a row outside the
            bounds of the leaf it is routed to.
        """
        check_is_fitted(self)
        F = fitted_float_array(self, X, (np.float64, np.float32))
        if F is None:
            F = validate_numeric(self, X, dtype=[np.float64, np.float32], reset=False)
        if self.split_axis == "pca":
            F = _kdtree.project(F, self.mean_, self.components_)
        ids = _kdtree.route_kdtree(F, self._routing_tables())
        return ids.astype(np.int64, copy=False)

    def _routing_tables(self):
        """:func:`prepare_kdtree` of the fitted tree, built once per fit.

        Kept beside the estimator (not in its ``__dict__``: transform must
        not change the fitted state, nor the model file), and rebuilt when
        ``fit`` replaced the tree or ``bounded`` changed.
        """
        t = self.tree_
        key = (t, self.bound_axes_, self.bound_lower_, self.bound_upper_, self.bounded)
        return _kept_beside(
            _ROUTING_TABLES,
            self,
            key,
            lambda: _kdtree.prepare_kdtree(
                t["feature"],
                t["threshold"],
                t["children_left"],
                t["children_right"],
                t["cell"],
                self.depth_,
                self.bound_axes_,
                self.bound_lower_ if self.bounded else None,
                self.bound_upper_ if self.bounded else None,
            ),
        )

    def cell_ancestors(self):
        """Ancestor nodes of every cell, nearest first.

        :class:`~sklearn_betacal.BetaBinningCalibrator` uses them to
        calibrate a cell that is too small for its own binning with its
        nearest ancestor region that is large enough (the rows of all leaves
        below that node).

        Returns
        -------
        ancestors : list of ndarray of int64, one per cell id
            Node ids (indices of the ``tree_`` arrays) of the leaf's parent,
            its parent, ... up to the root (node 0, last). Empty for the
            single cell of ``max_depth=0``.
        """
        check_is_fitted(self)
        t = self.tree_
        leaves = np.flatnonzero(t["cell"] >= 0)
        leaves = leaves[np.argsort(t["cell"][leaves])]
        # All leaves walk up one level at a time (a deep tree with tiny
        # leaves has ~n_samples of them: no loop over leaves but the split).
        left = np.asarray(t["children_left"], dtype=np.int64)
        right = np.asarray(t["children_right"], dtype=np.int64)
        parent = np.full(left.shape[0] + 1, -1, dtype=np.int64)  # parent[-1] = -1
        inner = np.flatnonzero(left >= 0)
        parent[left[inner]] = inner
        parent[right[inner]] = inner
        n_up = np.asarray(t["depth"], dtype=np.int64)[leaves]
        chains = np.full((leaves.shape[0], int(n_up.max())), -1, dtype=np.int64)
        cur = leaves.astype(np.int64)
        for j in range(chains.shape[1]):
            cur = parent[cur]
            chains[:, j] = cur
        return [chains[c, :k] for c, k in enumerate(n_up.tolist())]
