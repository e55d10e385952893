# SPDX-License-Identifier: MIT
"""Partitioners: the map beta from partition features to an integer cell id.

beta-calibration (Def. 2.3 of the paper) conditions on a partition of the
question-answer space. A *partitioner* is any scikit-learn transformer whose
``transform`` returns one integer cell id per row, ``-1`` meaning "outside
every cell" (the group-conditional calibrators then use their root, whole-data
calibrator, Alg. 2). This module provides four:

- :class:`KDTreePartitioner`, the paper's kd-tree with bounded leaves
  (Sec. 2.3, App. C), plus split rules that suit high-dimensional embeddings;
- :class:`GroupColumnPartitioner`, a partition read from a precomputed column
  (topics, datasets, the predicted class in the top-label case);
- :class:`ClusterPartitioner`, any clusterer with ``predict`` (e.g. KMeans);
- :class:`CrossPartitioner`, the cross of several partitions (e.g. the model
  that answered x a kd-tree cell of the question embedding).

The numerical work of the kd-tree lives in ``_kernels/_kdtree.py``.
"""

import warnings
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context, clone
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import (
    _check_feature_names_in,
    check_is_fitted,
    validate_data,
)

from ._kernels import _kdtree

#: Rows used to estimate the principal directions for ``split_axis="pca"``.
#: The top ``max_depth`` directions of a 768-d embedding are estimated to a
#: few degrees from 20,000 rows; more rows only cost time (``O(n d^2)``).
PCA_MAX_SAMPLES = 20_000

_CELL_NAME = np.asarray(["cell"], dtype=object)


class _PartitionerMixin(TransformerMixin):
    """Shared output side: ``transform`` -> ``(n, 1)`` int64, name ``"cell"``."""

    def transform(self, X):
        """Cell id of every row as a column.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Partition features, same columns as in ``fit``.

        Returns
        -------
        cells : ndarray of shape (n_samples, 1), dtype int64
            Cell id in ``0 .. n_cells_ - 1``, or ``-1`` for a row outside
            every cell.
        """
        return self.apply(X).reshape(-1, 1)

    def get_feature_names_out(self, input_features=None):
        """Name of the single output column, ``["cell"]``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Checked against the names seen in ``fit``; not otherwise used.

        Returns
        -------
        feature_names_out : ndarray of str objects, shape (1,)
        """
        check_is_fitted(self)
        _check_feature_names_in(self, input_features)
        return _CELL_NAME.copy()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # The output is a cell id, never the input dtype.
        tags.transformer_tags.preserves_dtype = []
        return tags


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
        ``"pca"``); ``-1`` beyond the leaf's depth.
    `leaf_lower_`, leaf_upper_ : ndarray of shape (`n_cells_`, `depth_`), float64
        Bounds of cell ``c`` in coordinate ``leaf_axes_[c, j]``: min and max
        of its fitted rows; NaN where ``leaf_axes_`` is ``-1``.
    leaf_n_samples_ : ndarray of shape (`n_cells_`,), int
        Fitted rows per cell (all >= ``min_samples_leaf``).
    tree_ : dict of ndarrays
        Node arrays in breadth-first order, root first: ``"axis"`` (-1 at a
        leaf), ``"threshold"`` (go left iff value <= threshold), ``"left"``,
        ``"right"`` (child node index, -1 at a leaf), ``"cell"`` (cell id of
        a leaf, -1 for internal nodes), ``"depth"``.
    mean_ : ndarray of shape (`n_features_in_`,)
        Only for ``"pca"``: the centre of the rotation.
    components_ : ndarray of shape (n_components, `n_features_in_`)
        Only for ``"pca"``: principal directions, ``min(max(max_depth, 1),
        n_features_in_)`` of them, by decreasing variance.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

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

    **Cost.** The tree is built level by level: per level one copy and one
    gather of the split coordinate, one ``np.partition`` per node and a few
    vectorised passes over the rows (no Python loop over rows), so
    ``"cycle"`` costs a small multiple of one median selection over all
    rows per level; ``"max_spread"`` reads every coordinate at every level
    (see ``benchmarks/results/kdtree.md``). float32 input is kept as float32
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
        X = validate_data(self, X, dtype=[np.float64, np.float32])
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
        self.tree_ = {
            k: tree[k] for k in ("axis", "threshold", "left", "right", "cell", "depth")
        }
        self.leaf_axes_ = tree["leaf_axes"]
        self.leaf_lower_ = tree["leaf_lower"]
        self.leaf_upper_ = tree["leaf_upper"]
        if self.split_axis == "pca" and self.leaf_axes_.size:
            scale = np.abs(F).max(axis=0) if F.shape[0] else np.zeros(F.shape[1])
            slack = 1e-9 * scale[np.maximum(self.leaf_axes_, 0)]
            self.leaf_lower_ = self.leaf_lower_ - slack
            self.leaf_upper_ = self.leaf_upper_ + slack
        self.leaf_n_samples_ = tree["leaf_n_samples"]
        self.n_cells_ = int(self.leaf_axes_.shape[0])
        self.depth_ = int(self.leaf_axes_.shape[1])
        return self

    def apply(self, X):
        """Cell id of every row, as a 1-D array.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Partition features, same columns as in ``fit``.

        Returns
        -------
        cells : ndarray of shape (n_samples,), dtype int64
            Cell id in ``0 .. n_cells_ - 1``, or ``-1`` for a row outside the
            bounds of the leaf it is routed to.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        F = X
        if self.split_axis == "pca":
            F = _kdtree.project(X, self.mean_, self.components_)
        t = self.tree_
        ids = _kdtree.apply_kdtree(
            F,
            t["axis"],
            t["threshold"],
            t["left"],
            t["right"],
            t["cell"],
            self.leaf_axes_,
            self.leaf_lower_ if self.bounded else None,
            self.leaf_upper_ if self.bounded else None,
        )
        return ids.astype(np.int64, copy=False)


def _map_to_cells(values, cells):
    """Index of every value in the sorted array ``cells``; -1 if absent."""
    idx = np.searchsorted(cells, values)
    idx = np.minimum(idx, cells.shape[0] - 1)
    found = cells[idx] == values
    return np.where(found, idx, -1).astype(np.int64)


class GroupColumnPartitioner(_PartitionerMixin, BaseEstimator):
    """Partition read from a precomputed group column.

    For users who already have groups (a topic, a dataset, a category) or for
    the top-label case where beta is the predicted class. Every distinct
    value of the column seen in ``fit`` becomes one cell; values are compared
    exactly.

    Read more in the :ref:`User Guide <partitioners>`.

    Parameters
    ----------
    column : int or str, default=0
        Position of the group column in ``X``, or its name when ``X`` is a
        DataFrame. Other columns are ignored.
    handle_unknown : {"outside", "error"}, default="outside"
        What ``transform`` does with a group not seen in ``fit``:
        ``"outside"`` gives it cell id ``-1`` (calibrated by the root
        calibrator, as a point outside the kd-tree's bounds); ``"error"``
        raises a ``ValueError`` naming the unseen groups.

    Attributes
    ----------
    groups_ : ndarray of shape (`n_cells_`,)
        The sorted distinct groups seen in ``fit``; cell id ``i`` is group
        ``groups_[i]``.
    n_cells_ : int
        Number of groups.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    KDTreePartitioner : The paper's kd-tree partition of embeddings.
    ClusterPartitioner : Partition given by a clusterer, e.g. KMeans.

    Notes
    -----
    Cell ids are renumbered ``0 .. n_cells_ - 1`` in sorted group order, so
    a user group labelled ``-1`` cannot be mistaken for "outside". Groups
    may be integers, booleans or strings. Float columns work too but every
    distinct value is a group, so a continuous column (a warning is raised
    for non-integer floats) should be binned first, e.g. with
    :class:`~sklearn.preprocessing.KBinsDiscretizer`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import GroupColumnPartitioner
    >>> topics = np.array([["sport"], ["art"], ["sport"], ["law"]], dtype=object)
    >>> part = GroupColumnPartitioner().fit(topics)
    >>> part.groups_.tolist(), part.n_cells_
    (['art', 'law', 'sport'], 3)
    >>> part.apply(np.array([["law"], ["food"]], dtype=object))
    array([ 1, -1])
    """

    _parameter_constraints = {
        "column": [Integral, str],
        "handle_unknown": [StrOptions({"outside", "error"})],
    }

    def __init__(self, column=0, *, handle_unknown="outside"):
        self.column = column
        self.handle_unknown = handle_unknown

    def _group_column(self, X, *, reset):
        X = validate_data(self, X, dtype=None, reset=reset)
        if isinstance(self.column, str):
            names = getattr(self, "feature_names_in_", None)
            if names is None or self.column not in names:
                raise ValueError(
                    f"column={self.column!r} is not a column of X; pass a "
                    "DataFrame with that column or an integer position."
                )
            idx = int(np.flatnonzero(names == self.column)[0])
        else:
            if not -X.shape[1] <= self.column < X.shape[1]:
                raise ValueError(
                    f"column={self.column} is out of range for X with "
                    f"{X.shape[1]} column(s)."
                )
            idx = self.column
        g = X[:, idx]
        if g.dtype.kind == "O":
            kinds = {type(v) for v in g}
            if len(kinds) > 1 and not all(issubclass(k, Integral) for k in kinds):
                raise ValueError(
                    "the group column mixes value types "
                    f"{sorted(k.__name__ for k in kinds)}; use one type (all "
                    "integers or all strings)."
                )
        return g

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Record the distinct groups of the group column.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Holds the group column at position/name ``column``.
        y : None
            Ignored; accepted for Pipeline compatibility.

        Returns
        -------
        self : GroupColumnPartitioner
            Fitted partitioner.
        """
        g = self._group_column(X, reset=True)
        self.groups_ = np.unique(g)
        self.n_cells_ = int(self.groups_.shape[0])
        if g.dtype.kind == "f" and np.any(g != np.round(g)):
            warnings.warn(
                f"The group column holds non-integer floats; each of its "
                f"{self.n_cells_} distinct values is treated as one group. Bin a "
                "continuous column first (e.g. KBinsDiscretizer) or use "
                "KDTreePartitioner.",
                UserWarning,
                stacklevel=2,
            )
        return self

    def apply(self, X):
        """Cell id of every row, as a 1-D array.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Same columns as in ``fit``.

        Returns
        -------
        cells : ndarray of shape (n_samples,), dtype int64
            Index of the row's group in ``groups_``; ``-1`` for an unseen
            group when ``handle_unknown="outside"``.
        """
        check_is_fitted(self)
        g = self._group_column(X, reset=False)
        try:
            ids = _map_to_cells(g, self.groups_)
        except TypeError as exc:
            raise ValueError(
                f"group values of type {type(g[0]).__name__} cannot be compared "
                f"with the groups seen in fit ({self.groups_.dtype})."
            ) from exc
        if self.handle_unknown == "error" and np.any(ids < 0):
            unseen = np.unique(g[ids < 0])
            raise ValueError(
                f"{int(np.sum(ids < 0))} row(s) have groups not seen in fit, e.g. "
                f"{unseen[:5].tolist()}; set handle_unknown='outside' to send "
                "them to the root calibrator (cell -1)."
            )
        return ids

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags


class ClusterPartitioner(_PartitionerMixin, BaseEstimator):
    """Partition given by a scikit-learn clusterer with ``predict``.

    A thin wrapper: ``fit`` fits a clone of ``clusterer`` on ``X`` and
    ``transform`` returns its ``predict`` as cell ids.

    Read more in the :ref:`User Guide <partitioners>`.

    Parameters
    ----------
    clusterer : estimator with ``fit`` and ``predict``, default=None
        E.g. :class:`~sklearn.cluster.KMeans`,
        :class:`~sklearn.cluster.MiniBatchKMeans`,
        :class:`~sklearn.mixture.GaussianMixture`. It is cloned before
        fitting; pass ``FrozenEstimator(fitted)`` to use an already-fitted
        one as is. ``None`` means ``KMeans(n_clusters=8)``. Clusterers
        without ``predict`` (DBSCAN, AgglomerativeClustering) cannot label
        new rows and are rejected.
    random_state : int, RandomState instance or None, default=None
        Seed of the default KMeans; unused when ``clusterer`` is given
        (set the clusterer's own ``random_state``).

    Attributes
    ----------
    clusterer_ : estimator
        The fitted clone.
    cluster_labels_ : ndarray of shape (`n_cells_`,)
        Sorted distinct labels that ``clusterer_.predict`` gave the fitted
        rows; cell id ``i`` is cluster ``cluster_labels_[i]``.
    n_cells_ : int
        Number of cells.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    KDTreePartitioner : The paper's kd-tree partition.
    GroupColumnPartitioner : Partition given by a precomputed column.

    Notes
    -----
    A label that no fitted row received (possible for some clusterers, never
    for KMeans) maps to ``-1``, like a point outside the kd-tree's bounds.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.cluster import KMeans
    >>> from sklearn_betacal import ClusterPartitioner
    >>> Z = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0]])
    >>> part = ClusterPartitioner(KMeans(n_clusters=2, random_state=0)).fit(Z)
    >>> part.n_cells_
    2
    >>> bool(part.apply(Z)[0] == part.apply(Z)[1] != part.apply(Z)[2])
    True
    """

    _parameter_constraints = {
        "clusterer": [HasMethods(["fit", "predict"]), None],
        "random_state": ["random_state"],
    }

    def __init__(self, clusterer=None, *, random_state=None):
        self.clusterer = clusterer
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        """Fit a clone of the clusterer on ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Partition features.
        y : None
            Ignored; accepted for Pipeline compatibility.

        Returns
        -------
        self : ClusterPartitioner
            Fitted partitioner.
        """
        X = validate_data(self, X, dtype=[np.float64, np.float32])
        if self.clusterer is None:
            rng = check_random_state(self.random_state)
            est = KMeans(n_clusters=8, random_state=rng)
        else:
            est = clone(self.clusterer)
        # y is passed positionally: FrozenEstimator.fit requires it.
        self.clusterer_ = est.fit(X, None)
        self.cluster_labels_ = np.unique(self._predict(X))
        self.n_cells_ = int(self.cluster_labels_.shape[0])
        return self

    def _predict(self, X):
        labels = np.asarray(self.clusterer_.predict(X))
        if labels.ndim != 1 or labels.dtype.kind not in "iub":
            raise ValueError(
                f"{type(self.clusterer_).__name__}.predict must return one "
                f"integer label per row; got dtype {labels.dtype}, shape "
                f"{labels.shape}."
            )
        return labels

    def apply(self, X):
        """Cell id of every row, as a 1-D array.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Partition features, same columns as in ``fit``.

        Returns
        -------
        cells : ndarray of shape (n_samples,), dtype int64
            Cell id (index of the predicted label in ``cluster_labels_``).
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        return _map_to_cells(self._predict(X), self.cluster_labels_)


__all__ = ["ClusterPartitioner", "GroupColumnPartitioner", "KDTreePartitioner"]


def _select_columns(X, columns):
    """Columns of ``X`` by int positions, a slice, or DataFrame names."""
    if hasattr(X, "iloc"):
        if isinstance(columns, slice) or (
            np.ndim(columns) > 0
            and all(isinstance(c, Integral) for c in np.ravel(columns))
        ):
            return X.iloc[:, columns]
        return X[columns]
    return np.asarray(X)[:, columns]


class CrossPartitioner(_PartitionerMixin, BaseEstimator):
    """Cross several partitions, each on its own columns: one cell per combination.

    beta may combine several groupings, e.g. "which model answered" and "which
    kd-tree cell of the question embedding": a row's cell is the combination
    of its component cells. Each component partitioner is fitted on its own
    columns of ``X``; the crossed cells are the combinations observed at fit
    time, numbered ``0 .. n_cells_ - 1`` in lexicographic order of the
    component ids. A row that any component puts outside (``-1``), or whose
    combination was never seen in ``fit``, gets ``-1`` (the calibrators then
    use their root calibrator, Alg. 2).

    Read more in the :ref:`User Guide <partitioners>`.

    Parameters
    ----------
    partitioners : list of (str, partitioner, columns) tuples
        Name, any transformer whose ``transform`` returns one integer cell id
        per row (cloned before fitting; pass ``FrozenEstimator(p)`` to keep a
        fitted one as is), and the columns of ``X`` it reads: int positions,
        a slice, or DataFrame column names.

    Attributes
    ----------
    partitioners_ : list of (str, partitioner, columns)
        The fitted components.
    cell_codes_ : ndarray of shape (`n_cells_`, n_components)
        Component cell ids of each crossed cell.
    n_cells_ : int
        Number of crossed cells.
    n_features_in_ : int
        Number of features seen during fit.

    See Also
    --------
    KDTreePartitioner, GroupColumnPartitioner, ClusterPartitioner

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import (
    ...     CrossPartitioner, GroupColumnPartitioner, KDTreePartitioner)
    >>> rng = np.random.default_rng(0)
    >>> Z = np.column_stack([rng.normal(size=40), np.repeat([0, 1], 20)])
    >>> cross = CrossPartitioner([
    ...     ("text", KDTreePartitioner(max_depth=1), [0]),
    ...     ("model", GroupColumnPartitioner(), [1]),
    ... ]).fit(Z)
    >>> cross.n_cells_
    4
    >>> cross.cell_codes_.tolist()
    [[0, 0], [0, 1], [1, 0], [1, 1]]
    """

    _parameter_constraints = {"partitioners": [list]}

    def __init__(self, partitioners):
        self.partitioners = partitioners

    def _component_ids(self, X, fitted):
        ids = []
        for name, part, columns in fitted:
            cells = np.asarray(part.transform(_select_columns(X, columns)))
            if cells.ndim == 2 and cells.shape[1] == 1:
                cells = cells[:, 0]
            if cells.ndim != 1 or cells.dtype.kind not in "iu":
                raise ValueError(
                    f"partitioner {name!r} must return one integer cell id per "
                    f"row; got dtype {cells.dtype}, shape {cells.shape}."
                )
            ids.append(cells.astype(np.int64))
        return np.column_stack(ids)

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        """Fit every component on its columns and record the combinations.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored; accepted for Pipeline compatibility.

        Returns
        -------
        self : CrossPartitioner
        """
        if not self.partitioners:
            raise ValueError("partitioners must name at least one partitioner.")
        if not hasattr(X, "shape"):
            X = np.asarray(X)
        self.n_features_in_ = X.shape[1]
        fitted = []
        for name, part, columns in self.partitioners:
            if not hasattr(part, "transform"):
                raise ValueError(
                    f"partitioner {name!r} has no transform method: "
                    f"{type(part).__name__}."
                )
            est = clone(part)
            # y positionally: FrozenEstimator.fit requires it.
            est.fit(_select_columns(X, columns), None)
            fitted.append((name, est, columns))
        self.partitioners_ = fitted
        ids = self._component_ids(X, fitted)
        inside = ids[np.all(ids >= 0, axis=1)]
        self.cell_codes_ = np.unique(inside, axis=0)
        self.n_cells_ = int(self.cell_codes_.shape[0])
        return self

    def apply(self, X):
        """Crossed cell id of every row (``-1``: outside or unseen combination).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        cells : ndarray of shape (n_samples,), dtype int64
        """
        check_is_fitted(self)
        if not hasattr(X, "shape"):
            X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has shape {X.shape}; CrossPartitioner was fitted on "
                f"{self.n_features_in_} columns."
            )
        ids = self._component_ids(X, self.partitioners_)
        out = np.full(ids.shape[0], -1, dtype=np.int64)
        if self.n_cells_ == 0:
            return out
        # lexicographic rank of each row's combination among the fitted ones
        codes = np.ascontiguousarray(self.cell_codes_)
        view = codes.view([("", codes.dtype)] * codes.shape[1]).ravel()
        rows = np.ascontiguousarray(ids)
        row_view = rows.view([("", rows.dtype)] * rows.shape[1]).ravel()
        pos = np.searchsorted(view, row_view)
        pos_c = np.minimum(pos, len(view) - 1)
        hit = view[pos_c] == row_view
        out[hit] = pos_c[hit]
        return out
