# SPDX-License-Identifier: MIT
"""What every partitioner shares: the protocol, the output side, the checks.

**The partitioner protocol** (the one place it is written; the docs page
:ref:`contributing` points here). A partitioner is a scikit-learn
transformer that maps the partition features of a row to a cell id; the
group calibrators (``_base._GroupCalibratorMixin``) fit and call it.

Required:

- ``fit(X, y=None, **keywords) -> self``. ``X`` is what the calibrator
  calls ``Z``: the partition features of the kept rows (rows of zero weight
  dropped; for a supervised partitioner only the ``grow`` rows of its
  honest split), a 2-D array, or a DataFrame with its column names and
  dtypes when the user passed one (a group column of strings is read by
  name). Unsupervised: called as ``fit(Z, None)``.
- ``apply(X) -> ndarray (n,) int64``: one cell id per row, ``>= 0``, or
  ``-1`` for a row outside every cell (served by the root calibrator).
  Inherit :class:`_PartitionerMixin` (listed first among the bases) for
  ``transform`` (``apply`` as an ``(n, 1)`` column named ``"cell"``),
  ``get_feature_names_out`` and the transformer tags; the calibrator
  checks the ids (:func:`~sklearn_betacal._validation.check_cell_ids`).
- The scikit-learn estimator API: ``BaseEstimator``, parameters stored
  unchanged in ``__init__``, fitted state in attributes ending in ``_`` as
  plain arrays, ``parametrize_with_checks`` passing (``tests/_instances.py``).

Supervision: a partitioner that learns from labels says so in its tags
(``__sklearn_tags__().target_tags.required = True``; for a Pipeline, its
last step's). It is then fitted as ``fit(Z, y, confidence=h,
sample_weight=w, points_per_bin=b)``, each keyword passed only if its
``fit`` has a parameter of that name (:func:`~sklearn_betacal._cells.fit_supervised`;
``y`` as 0.0/1.0, ``b`` an int the calibrator lends).

Optional pieces, found by name (read by the calibrators in ``_base.py``,
``_group_binning.py`` and ``_cells.py``, and by ``CrossPartitioner`` of its
components):

- ``honest_split(n_rows, random_state=None) -> (grow, bin)`` (supervised
  only): sorted disjoint row positions; the partitioner is fitted on
  ``grow`` and the calibrator on ``bin``, so the cells are fixed before
  the rows they bin are looked at (Thm 3.1 conditions on the partition).
- ``cell_ancestors() -> list of int64 arrays``, one per cell id: the node
  ids of the cell's ancestors, nearest first, root last. A binning
  calibrator then serves a cell too small for its own table by its nearest
  ancestor region that is large enough.
- ``_partition_view(X) -> 2-D array``: the numbers the partitioner cuts,
  for a scaler that should read what the cells read
  (:func:`~sklearn_betacal._cells.partition_view`; default: ``X`` itself).
- ``_cell_keys = "name_"``: the fitted attribute holding sorted unique cell
  keys (group values, cluster labels), checked on load by
  :func:`check_cell_keys`.

A ``FrozenEstimator`` of a fitted partitioner is used as it is, never
refitted. How a calibrator fits a partitioner and looks cells up is the
ground-floor module :mod:`sklearn_betacal._cells`, which both sides import.
"""

from numbers import Integral

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._compat import _check_feature_names_in, validate_data
from .._docstrings import fill_doc
from .._state import StateChecked
from .._validation import check_array_state, check_count, damaged

_CELL_NAME = np.asarray(["cell"], dtype=object)


class _PartitionerMixin(StateChecked, TransformerMixin):
    """Shared output side: ``transform`` -> ``(n, 1)`` int64, name ``"cell"``."""

    @fill_doc
    def transform(self, X):
        """Cell id of every row as a column.

        %(partition_apply)s
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

    #: The fitted attribute holding the sorted unique cell keys, found by
    #: binary search (``None``: the partitioner has no such keys).
    _cell_keys = None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # The output is a cell id, never the input dtype.
        tags.transformer_tags.preserves_dtype = []
        return tags


def validate_numeric(est, X, *args, **kwargs):
    """``validate_data`` of a partitioner that cuts numeric features.

    A column of text failed deep inside pandas or numpy ("could not convert
    string to float: 'y'"), naming neither the column nor a way out; here
    it is named, with the fix.
    """
    try:
        return validate_data(est, X, *args, **kwargs)
    except ValueError as exc:
        if "could not convert" not in str(exc):
            raise
        who = type(est).__name__
        text = []
        for name in getattr(X, "columns", []):
            try:
                np.asarray(X[name], dtype=np.float64)
            except (TypeError, ValueError):
                text.append(str(name))
        where = f"X column(s) {text[:5]}" if text else "X"
        raise ValueError(
            f"{who} cuts numeric features, but {where} hold(s) text ({exc}). "
            "Encode such a column as numbers (e.g. one-hot), cut by it with "
            "GroupColumnPartitioner (CrossPartitioner combines it with a "
            "numeric partition), or embed text with TextEmbedder."
        ) from None


def node_ancestors(left, right, leaves):
    """Per leaf node, its ancestor node ids from parent to root.

    ``left``/``right`` are child arrays (-1 at a leaf) of a binary tree whose
    root is node 0, as in :class:`KDTreePartitioner`'s ``tree_`` and
    scikit-learn's ``Tree``.
    """
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    parent = np.full(left.shape[0], -1, dtype=np.int64)
    inner = np.flatnonzero(left >= 0)
    parent[left[inner]] = inner
    parent[right[inner]] = inner
    out = []
    for leaf in np.asarray(leaves, dtype=np.int64).tolist():
        chain = []
        node = parent[leaf]
        while node >= 0:
            chain.append(int(node))
            node = parent[node]
        out.append(np.asarray(chain, dtype=np.int64))
    return out


#: Keys of a fitted tree's node arrays (``tree_``), as in scikit-learn's
#: ``Tree``: split feature (-1 at a leaf), threshold (left iff value <=
#: threshold; NaN at a leaf), child indices (-1 at a leaf), the cell id of a
#: leaf (-1 at an internal node) and the node's depth (root 0).
NODE_KEYS = ("feature", "threshold", "children_left", "children_right", "cell", "depth")


def tree_depths(owner, left, right):
    """Depth of every node of the binary tree ``left``/``right`` (root 0).

    Checks that the child arrays describe one tree: a leaf has both children
    -1, every child index lies in ``1 .. n_nodes - 1``, every node but the
    root has exactly one parent and every node is reached from the root (so
    there is no cycle). A walk on arrays that fail any of these would read
    outside them or never end.
    """
    n = left.shape[0]
    leaf = left == -1
    if not np.array_equal(leaf, right == -1):
        raise damaged(owner, "a tree node has one child")
    children = np.concatenate([left[~leaf], right[~leaf]])
    if children.size and (children.min() < 1 or children.max() >= n):
        raise damaged(
            owner, f"a child index is the root or lies outside the {n} tree nodes"
        )
    parents = np.bincount(children, minlength=n)
    if np.any(parents[1:] != 1):
        raise damaged(owner, "a tree node has several parents or none")
    depth = np.full(n, -1, dtype=np.intp)
    frontier, level = np.zeros(1, dtype=np.intp), 0
    while frontier.size:  # every node is visited once: at most n levels
        depth[frontier] = level
        inner = frontier[~leaf[frontier]]
        frontier = np.concatenate([left[inner], right[inner]])
        level += 1
    if np.any(depth < 0):
        raise damaged(owner, "the tree nodes have a cycle not reached from the root")
    return depth


def check_node_arrays(owner, tree, n_split_features):
    """The checked node arrays of a fitted tree (``tree_``, keys ``NODE_KEYS``).

    Every array is 1-d with one entry per node and the right dtype, the
    children form one tree (:func:`tree_depths`) whose ``depth`` is the
    stored one, an internal node splits on a feature in ``0 ..
    n_split_features - 1`` at a finite threshold, and the leaves' cell ids
    are ``0 .. n_leaves - 1``. Returns ``(arrays, n_levels)``: the arrays as
    ``intp``/``float64`` and the depth of the deepest leaf.
    """
    if not isinstance(tree, dict) or set(tree) != set(NODE_KEYS):
        raise damaged(owner, f"tree_ is not a dict of the node arrays {NODE_KEYS}")
    n = tree["feature"].shape[0] if isinstance(tree["feature"], np.ndarray) else 0
    if n < 1:
        raise damaged(owner, "tree_ has no nodes")
    out = {
        key: check_array_state(
            owner,
            f"tree_[{key!r}]",
            tree[key],
            "f" if key == "threshold" else "i",
            (n,),
            finite=False,
        )
        for key in NODE_KEYS
    }
    left, right = out["children_left"], out["children_right"]
    leaf = left == -1
    depth = tree_depths(owner, left, right)
    if not np.all(np.isfinite(out["threshold"][~leaf])):
        raise damaged(owner, "a split threshold is NaN or infinite")
    if not np.array_equal(depth, out["depth"]):
        raise damaged(owner, "tree_['depth'] is not the depth of the nodes")
    feature = out["feature"]
    if np.any(feature[leaf] != -1) or np.any(
        (feature[~leaf] < 0) | (feature[~leaf] >= n_split_features)
    ):
        raise damaged(
            owner, f"a split feature lies outside 0 .. {n_split_features - 1}"
        )
    cell = out["cell"]
    if np.any(cell[~leaf] != -1) or not np.array_equal(
        np.sort(cell[leaf]), np.arange(int(np.count_nonzero(leaf)))
    ):
        raise damaged(owner, "the leaves' cell ids are not 0 .. n_cells - 1")
    return out, int(depth[leaf].max())


def cell_keys_rule(name):
    """A schema rule: ``state[name]`` are the sorted unique cell keys."""

    def rule(owner, state):
        check_cell_keys(owner, state, name)

    return rule


def check_cell_keys(owner, state, name):
    """Check the sorted unique keys ``state[name]`` (one row per cell) of a
    fitted state being rebuilt: cells are found by binary search, so keys
    out of order would give wrong cells. ``n_cells_`` is their number."""
    keys = state.get(name)
    if keys is None and "n_cells_" not in state:
        return  # not fitted
    if not isinstance(keys, np.ndarray) or keys.ndim not in (1, 2):
        raise damaged(owner, f"{name} is not a 1-d or 2-d array")
    if keys.ndim == 2 and keys.dtype.kind != "i":
        raise damaged(owner, f"{name} is not an array of signed integers")
    try:
        # axis= only for rows of ids: numpy < 2 refuses it for object arrays
        unique = np.unique(keys, axis=0) if keys.ndim == 2 else np.unique(keys)
    except TypeError:
        raise damaged(owner, f"{name} holds values that cannot be ordered") from None
    nan = keys.dtype.kind in "fc"
    if unique.shape != keys.shape or not np.array_equal(unique, keys, equal_nan=nan):
        raise damaged(owner, f"{name} is not sorted and unique")
    if check_count(owner, "n_cells_", state.get("n_cells_")) != keys.shape[0]:
        raise damaged(owner, f"n_cells_ is not the number of {name}")


def _select_columns(X, columns, *, who="partitioner"):
    """Columns of ``X`` by int positions, a slice, or DataFrame names.

    A DataFrame (pandas, polars) stays one, through scikit-learn's
    ``_safe_indexing``. Bad selections (names on an array without column
    names, a position out of range, an unknown name) are a ``ValueError``
    that names ``who``.
    """
    from .._compat import _safe_indexing
    from .._validation import is_dataframe

    frame = is_dataframe(X)
    by_name = not isinstance(columns, slice) and not all(
        isinstance(c, Integral) for c in np.ravel(np.asarray(columns, dtype=object))
    )
    if by_name and not frame:
        raise ValueError(
            f"{who} selects columns by name ({columns!r}), but X has no column "
            "names; pass a DataFrame with those columns, or select by position."
        )
    n_cols = X.shape[1]
    if not by_name and not isinstance(columns, slice):
        bad = [int(c) for c in np.ravel(columns) if not -n_cols <= int(c) < n_cols]
        if bad:
            raise ValueError(
                f"{who} selects column(s) {bad}, out of range: X has "
                f"{n_cols} feature(s)."
            )
    if by_name:
        names = list(X.columns)
        wanted = np.ravel(np.asarray(columns, dtype=object))
        missing = [c for c in wanted if c not in names]
        if missing:
            raise ValueError(
                f"{who} selects column(s) {missing} that X does not have; its "
                f"columns are {names[:10]}."
            )
    if frame:
        return _safe_indexing(X, columns, axis=1)
    return np.asarray(X)[:, columns]
