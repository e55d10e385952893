# SPDX-License-Identifier: MIT
"""What every partitioner shares: the output side and the cell-id helpers.

A partitioner's ``apply`` returns one int64 cell id per row (``-1``: outside
every cell); :class:`_PartitionerMixin` turns that into ``transform`` (an
``(n, 1)`` column named ``"cell"``) and the tags.
"""

from inspect import signature
from numbers import Integral

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._compat import _check_feature_names_in

_CELL_NAME = np.asarray(["cell"], dtype=object)


def _fit_takes(estimator, name):
    """Whether ``estimator.fit`` has a parameter called ``name``."""
    try:
        return name in signature(estimator.fit).parameters
    except (TypeError, ValueError):
        return False


def supervised_step(part):
    """``(step, prefix)``: the estimator whose tags say whether ``part`` is
    supervised, and the prefix that routes ``fit`` keywords to it -- the last
    step of a :class:`~sklearn.pipeline.Pipeline` (``"name__"``), else
    ``part`` itself (``""``)."""
    from sklearn.pipeline import Pipeline

    if isinstance(part, Pipeline) and part.steps:
        name, step = part.steps[-1]
        return step, f"{name}__"
    return part, ""


def is_supervised(part):
    """Whether ``part`` (or a Pipeline's last step) requires ``y`` in ``fit``."""
    from sklearn.utils import get_tags

    step, _ = supervised_step(part)
    return not isinstance(step, str) and get_tags(step).target_tags.required


def fit_supervised(
    part, Z, y, *, confidence=None, sample_weight=None, points_per_bin=None
):
    """``part.fit(Z, y, ...)`` with each keyword its ``fit`` (or a Pipeline's
    last step's) takes: the confidences, the weights, and ``points_per_bin``
    (only an int; a learned tree sizes its leaves by it)."""
    step, prefix = supervised_step(part)
    kwargs = {}
    if confidence is not None and _fit_takes(step, "confidence"):
        kwargs[prefix + "confidence"] = confidence
    if sample_weight is not None and _fit_takes(step, "sample_weight"):
        kwargs[prefix + "sample_weight"] = sample_weight
    if isinstance(points_per_bin, Integral) and _fit_takes(step, "points_per_bin"):
        kwargs[prefix + "points_per_bin"] = int(points_per_bin)
    return part.fit(Z, y, **kwargs)


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


def _map_to_cells(values, cells):
    """Index of every value in the sorted array ``cells``; -1 if absent.

    Non-negative integer cells that are not much sparser than the rows go
    through a lookup array (one gather, no binary search per row).
    """
    if cells.shape[0] == 0:
        return np.full(values.shape[0], -1, dtype=np.int64)
    if (
        values.dtype.kind in "iu"
        and cells.dtype.kind in "iu"
        and cells[0] >= 0
        and cells[-1] < 4 * values.shape[0] + 1024
    ):
        hi = int(cells[-1])
        lut = np.full(hi + 2, -1, dtype=np.int64)  # lut[-1]: out of range
        lut[cells] = np.arange(cells.shape[0])
        if values.shape[0] and values.min() >= 0 and values.max() <= hi:
            return lut[values]
        return lut[np.where((values >= 0) & (values <= hi), values, -1)]
    idx = np.searchsorted(cells, values)
    idx = np.minimum(idx, cells.shape[0] - 1)
    found = cells[idx] == values
    return np.where(found, idx, -1).astype(np.int64)


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
