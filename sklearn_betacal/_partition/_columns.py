# SPDX-License-Identifier: MIT
"""Partitions given by columns: a group column, a clusterer, a cross of several."""

import warnings
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state
from sklearn.utils.validation import (
    assert_all_finite,
    check_is_fitted,
)

from .._cells import (
    cell_positions,
    fit_supervised,
    is_supervised,
    partition_view,
    supervised_step,
)
from .._compat import (
    HasMethods,
    StrOptions,
    _BaseComposition,
    _fit_context,
    _num_samples,
    validate_data,
)
from .._docstrings import fill_doc
from .._random import seed_inner
from .._state import (
    FEATURES,
    Array,
    Custom,
    Int,
    Schema,
    check_column,
    column_rule,
)
from .._validation import check_weights, damaged, is_dataframe
from ._base import (
    _PartitionerMixin,
    _select_columns,
    cell_keys_rule,
    validate_numeric,
)


@fill_doc
class GroupColumnPartitioner(_PartitionerMixin, BaseEstimator):
    """Partition read from a precomputed group column.

    For users who already have groups (a topic, a dataset, a category) or for
    the top-label case where beta is the predicted class. Every distinct
    value of the column seen in ``fit`` becomes one cell; values are compared
    exactly.

    Read more in the :ref:`User Guide <partitioners>`.

    Parameters
    ----------
    group_column : int or str, default=0
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
    %(partition_features_in_)s

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
        "group_column": [Integral, str],
        "handle_unknown": [StrOptions({"outside", "error"})],
    }
    _cell_keys = "groups_"
    _state_schema = Schema(
        **FEATURES,
        groups_=Array("key", (None,)),
        n_cells_=Int(low=0),
        rules=(cell_keys_rule("groups_"), column_rule("group_column")),
    )

    def __init__(self, group_column=0, *, handle_unknown="outside"):
        self.group_column = group_column
        self.handle_unknown = handle_unknown

    def _group_index(self, X):
        """Position of the group column in the validated array ``X``."""
        if isinstance(self.group_column, str):
            names = getattr(self, "feature_names_in_", None)
            if names is None or self.group_column not in names:
                raise ValueError(
                    f"group_column={self.group_column!r} is not a column of X; pass a "
                    "DataFrame with that column or an integer position."
                )
            idx = int(np.flatnonzero(names == self.group_column)[0])
        else:
            if not -X.shape[1] <= self.group_column < X.shape[1]:
                n = X.shape[1]
                raise ValueError(
                    f"group_column={self.group_column} is out of range for the "
                    f"{n} column(s) this partitioner was given (positions 0..{n - 1} "
                    f"or -{n}..-1). A calibrator passes its partitioner X without "
                    "its confidence column, so positions count the other columns: "
                    "with X = [confidence, group] use group_column=0 (or pass a "
                    "DataFrame and name the column)."
                )
            idx = self.group_column
        return idx

    def _validate(self, X, *, reset):
        """``validate_data`` with the group column's missing values named
        first (scikit-learn said "Input contains NaN" for a pandas one, and a
        polars None read as a value type of its own); NaN in another column
        keeps scikit-learn's error."""
        X = validate_data(self, X, dtype=None, reset=reset, ensure_all_finite=False)
        g = X[:, self._group_index(X)]
        if g.dtype.kind in "OfMm":  # NaN, None, pd.NA, NaT
            import pandas as pd

            missing = int(np.count_nonzero(pd.isna(g)))
            if missing:
                raise ValueError(
                    f"the group column has {missing} missing value(s) (NaN or "
                    "None); every row needs a group: drop those rows, or fill "
                    "them with a name of their own (e.g. 'unknown')."
                )
        assert_all_finite(X, input_name="X", estimator_name=type(self).__name__)
        return X

    def _group_column(self, X, *, reset):
        return self._group_of(self._validate(X, reset=reset))

    def _group_of(self, X):
        """The group column of the validated ``X``, its value types checked."""
        g = X[:, self._group_index(X)]
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
            Holds the group column at position/name ``group_column``.
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

    def _partition_view(self, X):
        """What a scaler of the partition features reads here
        (:func:`~sklearn_betacal._cells.partition_view`): the columns of
        ``X`` with the group column replaced by the group's cell id (``-1``
        unseen), so that groups of any type (names, say) become numbers in
        their sorted order; the other columns as they are."""
        check_is_fitted(self)
        X = self._validate(X, reset=False)
        g = self._group_of(X)
        try:
            ids = cell_positions(g, self.groups_)
        except TypeError:  # apply says what is wrong (it runs for the cells)
            ids = np.full(g.shape[0], -1, dtype=np.int64)
        # numbers as float64; any other column as it is (the scaler says
        # which columns are not numbers)
        out = X.astype(np.float64 if X.dtype.kind in "fiub" else object)
        out[:, self._group_index(X)] = ids
        return out

    @fill_doc
    def apply(self, X):
        """Cell id of every row, as a 1-D array.

        %(partition_apply)s
        cells : ndarray of shape (n_samples,), dtype int64
            Index of the row's group in ``groups_``; ``-1`` for an unseen
            group when ``handle_unknown="outside"``.
        """
        check_is_fitted(self)
        g = self._group_column(X, reset=False)
        try:
            ids = cell_positions(g, self.groups_)
        except TypeError as exc:
            raise ValueError(
                f"group values of type {type(g[0]).__name__} cannot be compared "
                f"with the groups seen in fit ({self.groups_.dtype})."
            ) from exc
        n_unseen = int(np.count_nonzero(ids < 0))
        if n_unseen:
            unseen = np.unique(g[ids < 0])
            if self.handle_unknown == "error":
                raise ValueError(
                    f"{n_unseen} row(s) have groups not seen in fit, e.g. "
                    f"{unseen[:5].tolist()}; set handle_unknown='outside' to send "
                    "them to the root calibrator (cell -1)."
                )
            # never silently: these rows get the root's calibration, not a
            # group's (one warning per call, with the counts)
            warnings.warn(
                f"GroupColumnPartitioner: {n_unseen} of {ids.shape[0]} row(s) "
                f"have {unseen.shape[0]} group(s) not seen in fit, e.g. "
                f"{unseen[:5].tolist()}; they get cell -1 and are calibrated by "
                "the root (whole-data) calibrator. Refit with rows of those "
                "groups, or set handle_unknown='error' to refuse them.",
                UserWarning,
                stacklevel=2,
            )
        return ids

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags


def _check_clusterer(owner, clusterer, state):
    """``clusterer_``: fitted from the ``clusterer`` parameter (of its class;
    a ``KMeans`` by default), able to ``predict``."""
    want = KMeans if state["clusterer"] is None else type(state["clusterer"])
    if type(clusterer) is not want or not callable(getattr(clusterer, "predict", None)):
        raise damaged(owner, f"clusterer_ is a {type(clusterer).__name__}, not "
                      f"the {want.__name__} the clusterer parameter fits")  # fmt: skip
    width = getattr(clusterer, "n_features_in_", None)
    if isinstance(width, int) and width != state["n_features_in_"]:
        raise damaged(owner, f"clusterer_ reads {width} features, not n_features_in_")
    return clusterer


def _check_components(owner, fitted, state):
    """``partitioners_``: one fitted ``(name, partitioner, columns)`` per
    entry of ``partitioners``, with its name, class and columns."""
    spec = state["partitioners"]
    if not isinstance(fitted, list | tuple) or len(fitted) != len(spec) or not spec:
        raise damaged(owner, "partitioners_ is not one entry per partitioner")
    for given, entry in zip(spec, fitted, strict=True):
        if (
            not isinstance(entry, list | tuple)
            or len(entry) != 3
            or not isinstance(given, list | tuple)
            or len(given) != 3
            or entry[0] != given[0]
            or type(entry[1]) is not type(given[1])
            or repr(entry[2]) != repr(given[2])
            or not callable(getattr(entry[1], "transform", None))
        ):
            raise damaged(owner, f"partitioners_ entry {entry[0]!r} is not the "
                          "fitted partitioner its parameter names")  # fmt: skip
        cols = np.ravel(np.asarray(entry[2], dtype=object)) if not isinstance(
            entry[2], slice) else [0]  # fmt: skip
        if len(cols) == 0:
            raise damaged(owner, f"partitioners_ entry {entry[0]!r} reads no column")
        for col in cols:
            check_column(owner, f"partitioner {entry[0]!r} column", col, state)
        width = getattr(getattr(entry[1], "estimator", entry[1]), "n_features_in_", 0)
        if not isinstance(entry[2], slice) and width not in (0, len(cols)):
            raise damaged(owner, f"partitioner {entry[0]!r} reads {width} features, "
                          f"not its {len(cols)} columns")  # fmt: skip
    return list(fitted)


def _check_codes(owner, state):
    """Every cell code names a cell of its component, where it states them."""
    codes = state["cell_codes_"]
    if codes.size and codes.min() < 0:
        raise damaged(owner, "cell_codes_ holds a negative cell id")
    for k, (_, part, _) in enumerate(state["partitioners_"]):
        n = getattr(getattr(part, "estimator", part), "n_cells_", None)
        if isinstance(n, int) and codes.size and codes[:, k].max() >= n:
            raise damaged(owner, f"cell_codes_ column {k} names a cell beyond {n}")


@fill_doc
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
        one as is. ``None`` means ``KMeans(n_clusters=8)`` (one cluster
        per row when ``X`` has fewer than 8 rows). Clusterers without
        ``predict`` (DBSCAN, AgglomerativeClustering) cannot label new rows
        and are rejected.
    random_state : int, RandomState instance or None, default=None
        Seed of the default KMeans; with a given ``clusterer``, the seed of
        its clone when the clusterer's own ``random_state`` (or that of an
        estimator inside it) is ``None``. A clusterer's own seed is kept.

    Attributes
    ----------
    clusterer_ : estimator
        The fitted clone.
    cluster_labels_ : ndarray of shape (`n_cells_`,)
        Sorted distinct labels that ``clusterer_.predict`` gave the fitted
        rows; cell id ``i`` is cluster ``cluster_labels_[i]``.
    n_cells_ : int
        Number of cells.
    %(partition_features_in_)s

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
    _cell_keys = "cluster_labels_"
    _state_schema = Schema(
        **FEATURES,
        clusterer_=Custom(
            lambda owner, name, value, state: _check_clusterer(owner, value, state)
        ),  # fmt: skip
        cluster_labels_=Array("key", (None,)),
        n_cells_=Int(low=0),
        rules=(cell_keys_rule("cluster_labels_"),),
    )

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
        X = validate_numeric(self, X, dtype=[np.float64, np.float32])
        if self.clusterer is None:
            rng = check_random_state(self.random_state)
            # 8 clusters, or one per row when there are fewer rows
            est = KMeans(n_clusters=min(8, X.shape[0]), random_state=rng)
        else:
            est = seed_inner(clone(self.clusterer), self.random_state, name="clusterer")
        try:
            # y is passed positionally: FrozenEstimator.fit requires it.
            self.clusterer_ = est.fit(X, None)
        except ValueError as exc:
            raise ValueError(
                f"ClusterPartitioner: the clusterer {type(est).__name__} could "
                f"not be fitted on X with {X.shape[0]} row(s): {exc}"
            ) from exc
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

    @fill_doc
    def apply(self, X):
        """Cell id of every row, as a 1-D array.

        %(partition_apply)s
        cells : ndarray of shape (n_samples,), dtype int64
            Cell id (index of the predicted label in ``cluster_labels_``).
        """
        check_is_fitted(self)
        X = validate_numeric(self, X, dtype=[np.float64, np.float32], reset=False)
        return cell_positions(self._predict(X), self.cluster_labels_)


class CrossPartitioner(_PartitionerMixin, _BaseComposition):
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

    The components' own parameters are reachable as ``<name>__<param>``
    (``get_params``, ``set_params``, a grid search's
    ``partitioner__<name>__<param>``), and ``set_params(<name>=other)``
    replaces a component on the same columns, as in scikit-learn's
    ``ColumnTransformer``.

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
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names
        (a pandas or polars DataFrame, passed to the components as is).

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
    _cell_keys = "cell_codes_"
    _state_schema = Schema(
        **FEATURES,
        partitioners_=Custom(
            lambda owner, name, value, state: _check_components(owner, value, state)
        ),  # fmt: skip
        n_cells_=Int(low=0),
        cell_codes_=Array("i", ("n_cells_", lambda s: len(s["partitioners_"]))),
        rules=(cell_keys_rule("cell_codes_"), lambda o, s: _check_codes(o, s)),
    )

    def __init__(self, partitioners):
        self.partitioners = partitioners

    @property
    def _partitioners(self):
        """``(name, partitioner)`` pairs, for ``_BaseComposition``."""
        try:
            return [(name, part) for name, part, _ in self.partitioners]
        except (TypeError, ValueError):  # malformed: fit says so
            return []

    @_partitioners.setter
    def _partitioners(self, value):
        self.partitioners = [
            (name, part, columns)
            for (name, part), (_, _, columns) in zip(
                value, self.partitioners, strict=True
            )
        ]

    def get_params(self, deep=True):
        """Parameters of this partitioner, and with ``deep`` of its components.

        Parameters
        ----------
        deep : bool, default=True
            Also return every component (by its name) and its parameters
            (``<name>__<param>``).

        Returns
        -------
        params : dict
        """
        return self._get_params("_partitioners", deep=deep)

    def set_params(self, **params):
        """Set parameters, of the components too (``<name>__<param>``).

        ``<name>=partitioner`` replaces that component; its columns stay.

        Returns
        -------
        self : CrossPartitioner
        """
        if "partitioners" in params:
            # the new list first, then its components' parameters (as
            # Pipeline does with steps=)
            self.partitioners = params.pop("partitioners")
        self._set_params("_partitioners", **params)
        return self

    def _validate(self, X, *, reset):
        """``n_features_in_``, ``feature_names_in_`` (and the name-mismatch
        warning) as scikit-learn sets them; a DataFrame (pandas, polars) is
        passed on as is, so that components can select columns by name; any
        other input becomes a 2-D array (of any dtype: the components check
        their own columns). Sparse and 1-D X get a clear error."""
        if sp.issparse(X):
            raise TypeError(
                "CrossPartitioner does not accept sparse X; pass a dense array "
                "or a DataFrame (X.toarray())."
            )
        if is_dataframe(X):
            validate_data(self, X, reset=reset, skip_check_array=True)
            return X
        if getattr(X, "ndim", 2) != 2:  # lists: validate_data says it
            raise ValueError(
                f"X must be 2-D (rows x columns) for CrossPartitioner; got shape "
                f"{X.shape}. Reshape your data: a single column is X.reshape(-1, 1)."
            )
        return validate_data(self, X, reset=reset, dtype=None, ensure_all_finite=False)

    def _check_spec(self):
        for entry in self.partitioners:
            if not (isinstance(entry, tuple | list) and len(entry) == 3):
                raise ValueError(
                    "partitioners must be a list of (name, partitioner, columns) "
                    f"tuples; got the entry {entry!r}."
                )
            name, part, _ = entry
            if not isinstance(name, str):
                raise ValueError(
                    f"partitioner names must be strings; got {name!r} in {entry!r}."
                )
            if not hasattr(part, "transform"):
                raise ValueError(
                    f"partitioner {name!r} has no transform method: "
                    f"{type(part).__name__}."
                )

    def _component_ids(self, X, fitted):
        ids = []
        for name, part, columns in fitted:
            sel = _select_columns(X, columns, who=f"partitioner {name!r}")
            cells = np.asarray(part.transform(sel))
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
    def fit(
        self,
        X,
        y=None,
        *,
        confidence=None,
        sample_weight=None,
        points_per_bin=None,
        groups=None,
    ):
        """Fit every component on its columns and record the combinations.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None
            Passed, with the keywords below, to the supervised components
            (e.g. a :class:`CalibrationTreePartitioner`, alone or as the last
            step of a Pipeline); the others are fitted on their columns
            alone.
        confidence, sample_weight, points_per_bin, groups : default=None
            The confidences, weights, points per bin and question groups a
            calibrator passes; each goes to the supervised components whose
            ``fit`` takes it.
            The unsupervised components are fitted unweighted, as they are
            when used alone.

        Returns
        -------
        self : CrossPartitioner
        """
        if not self.partitioners:
            raise ValueError("partitioners must name at least one partitioner.")
        self._check_spec()
        # unique names without "__", none a parameter (scikit-learn's words)
        self._validate_names([entry[0] for entry in self.partitioners])
        X = self._validate(X, reset=True)
        if sample_weight is not None:  # the library's checks and messages
            sample_weight = check_weights(sample_weight, _num_samples(X))
        fitted = []
        for name, part, columns in self.partitioners:
            est = clone(part)
            sel = _select_columns(X, columns, who=f"partitioner {name!r}")
            if y is not None and is_supervised(est):
                fit_supervised(
                    est,
                    sel,
                    y,
                    confidence=confidence,
                    sample_weight=sample_weight,
                    points_per_bin=points_per_bin,
                    groups=groups,
                )
            else:  # y positionally: FrozenEstimator.fit requires it
                est.fit(sel, None)
            fitted.append((name, est, columns))
        self.partitioners_ = fitted
        ids = self._component_ids(X, fitted)
        inside = ids[np.all(ids >= 0, axis=1)]
        self.cell_codes_ = np.unique(inside, axis=0)
        self.n_cells_ = int(self.cell_codes_.shape[0])
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # supervised when a component is: calibrators then pass y and h
        try:
            parts = [entry[1] for entry in self.partitioners]
            # only components that can partition (fit refuses the others);
            # older scikit-learn warns on the tags of a non-estimator
            supervised = any(is_supervised(p) for p in parts if hasattr(p, "transform"))
        except (TypeError, IndexError, KeyError, AttributeError):
            supervised = False  # malformed (not an estimator): fit says so
        tags.target_tags.required = supervised
        return tags

    @property
    def honest_split(self):
        """The ``honest_split`` of the first supervised component that has one.

        A calibrator then grows every component on the same ``grow`` rows
        and bins the others (see :class:`CalibrationTreePartitioner`). A
        group seen only among the binned rows is outside (``-1``), calibrated
        by the root. Absent (``AttributeError``) when no component has one.
        """
        for _, part, _ in self.partitioners:
            step, _ = supervised_step(part)
            if is_supervised(part) and hasattr(step, "honest_split"):
                return step.honest_split
        raise AttributeError(
            "CrossPartitioner has no honest_split: none of its components is "
            "a supervised partitioner with one."
        )

    def _partition_view(self, X):
        """What a scaler of the partition features reads of the cross
        (:func:`~sklearn_betacal._cells.partition_view`): every component's
        view of its columns, side by side, in the order of ``partitioners_``
        (a text pipeline's embedding, a group's cell id, a kd-tree's
        columns)."""
        check_is_fitted(self)
        X = self._validate(X, reset=False)
        blocks = []
        for name, part, columns in self.partitioners_:
            sel = _select_columns(X, columns, who=f"partitioner {name!r}")
            block = np.asarray(partition_view(part, sel))
            blocks.append(block.reshape(block.shape[0], -1))
        return np.column_stack(blocks)

    def cell_ancestors(self):
        """Ancestor regions of every crossed cell, nearest first (for fallback).

        The components form a hierarchy in the order they are listed, the
        first the coarsest: a crossed cell ``(a, g)`` is coarsened one step
        at a time in its **last** component first -- up that component's own
        hierarchy when it has one (a ``cell_ancestors()`` method, e.g. a
        kd-tree), else straight to "all of it" -- then in the one before.
        With ``[("model", GroupColumnPartitioner(), ...), ("text",
        KDTreePartitioner(), ...)]`` a small (model, text leaf) cell falls
        back to the leaf's parent region *within the same model*, then to the
        whole of that model's rows, and only then to the root.

        Returns
        -------
        ancestors : list of ndarray of int64, one per cell id
            Region ids, nearest first; the last is the root (every
            component at "all"), shared by every cell. Region ids are
            numbered in order of first appearance; they are not cell ids.
        """
        check_is_fitted(self)
        n_comp = len(self.partitioners_)
        steps = []  # per component: per component cell id, its coarsenings
        for _, part, _ in self.partitioners_:
            get = getattr(part, "cell_ancestors", None)
            chains = get() if callable(get) else None
            steps.append(chains)
        ids, out = {}, []
        for codes in self.cell_codes_.tolist():
            state = [("cell", c) for c in codes]
            chain = []
            for k in range(n_comp - 1, -1, -1):
                chains = steps[k]
                up = ()
                if chains is not None and codes[k] < len(chains):
                    # the component's root (last) is "all of it" below
                    up = [("node", int(v)) for v in chains[codes[k]][:-1]]
                for level in [*up, ("all",)]:
                    state[k] = level
                    chain.append(ids.setdefault(tuple(state), len(ids)))
            out.append(np.asarray(chain, dtype=np.int64))
        return out

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
        X = self._validate(X, reset=False)
        ids = self._component_ids(X, self.partitioners_)
        out = np.full(ids.shape[0], -1, dtype=np.int64)
        if self.n_cells_ == 0:
            return out
        # lexicographic rank of each row's combination among the fitted ones
        codes = self.cell_codes_
        base = codes.max(axis=0) + 1  # codes are >= 0 (fit keeps those)
        if float(np.prod(base.astype(np.float64))) < 2.0**62:
            # one int64 key per combination (mixed radix, the first component
            # most significant, so the keys of cell_codes_ stay sorted): a
            # lookup instead of a search over structured records, which
            # compares them field by field (~1 us per row)
            stride = np.cumprod(np.r_[base[1:], 1][::-1])[::-1]
            inside = np.all((ids >= 0) & (ids < base), axis=1)
            keys = np.where(inside, ids @ stride, -1)
            out = cell_positions(keys, codes @ stride)
        else:
            codes = np.ascontiguousarray(codes)
            view = codes.view([("", codes.dtype)] * codes.shape[1]).ravel()
            rows = np.ascontiguousarray(ids)
            row_view = rows.view([("", rows.dtype)] * rows.shape[1]).ravel()
            pos = np.searchsorted(view, row_view)
            pos_c = np.minimum(pos, len(view) - 1)
            hit = view[pos_c] == row_view
            out[hit] = pos_c[hit]
        self._warn_unseen(ids, out)
        return out

    def _warn_unseen(self, ids, out):
        """Warn about rows inside every component whose combination is new.

        A row outside a component (its own ``-1``, e.g. beyond a kd-tree's
        bounds, or an unseen group, which that component reports) is not
        counted again here.
        """
        unseen = (out < 0) & np.all(ids >= 0, axis=1)
        n_unseen = int(np.count_nonzero(unseen))
        if not n_unseen:
            return
        n_combos = int(np.unique(ids[unseen], axis=0).shape[0])
        names = [name for name, _, _ in self.partitioners_]
        warnings.warn(
            f"CrossPartitioner: {n_unseen} of {ids.shape[0]} row(s) have "
            f"{n_combos} combination(s) of {names} cells not seen in fit (each "
            "cell was seen, not together); they get cell -1 and are calibrated "
            "by the root (whole-data) calibrator. Refit with rows of those "
            "combinations to give them cells of their own.",
            UserWarning,
            stacklevel=3,
        )
