# SPDX-License-Identifier: MIT
"""Scaling-beta-binning (Alg. 3): HS-BB and S-BB, and the misspecification nu.

:class:`ScalingBetaBinningCalibrator` splits the calibration rows into D1 and
D2, fits a scaler on D1 (the hierarchical logistic model of Eq. 5 for HS-BB,
one pooled logistic regression for S-BB, or any probabilistic estimator),
replaces the labels of D2 by the scaler's fitted values (proxy ground truth,
Def. 3.2) and runs beta-binning (Alg. 1) on D2 with those proxies. The
partitioner, binning and prediction (Alg. 2) are those of
:class:`~sklearn_betacal.BetaBinningCalibrator`, from their shared base in
``_group_binning``; the scalers are built by ``_defaults``.

:func:`estimate_misspecification` estimates the ``nu`` of Def. 3.2 on a
hold-out set with true labels, for use with :mod:`sklearn_betacal.bounds`.
"""

import warnings
import weakref
from numbers import Integral, Real

import numpy as np
from scipy.special import expit
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._base import PREDICT_BLOCK_ROWS
from ._cells import partition_view, pipeline_head
from ._compat import (
    HasMethods,
    Interval,
    StrOptions,
    _safe_indexing,
    validate_params,
)
from ._defaults import hierarchical_scaler, platt_scaler
from ._docstrings import fill_doc
from ._group_binning import _GroupBinningBase, fallback_message
from ._kernels._boosting import forest_raw, prepare_forest
from ._kernels._calibration import quantile_bin_index, quantile_edges
from ._kernels._scaling import data_logit_eps, to_logit
from ._partition._base import (
    NODE_KEYS,
    check_array_state,
    check_count,
    check_node_arrays,
    damaged,
)
from ._random import seed_inner
from ._validation import (
    check_binary_labels,
    check_cell_ids,
    check_confidence,
    check_weights,
    take_rows,
)

#: estimator -> (its boosted scaler's state, the prepared walks of its trees)
_FORESTS = weakref.WeakKeyDictionary()


def _positive_proba(estimator, X):
    """Column of ``predict_proba`` for class 1 (``classes_`` may be any order)."""
    proba = estimator.predict_proba(X)
    classes = getattr(estimator, "classes_", np.array([0, 1]))
    hits = np.flatnonzero(np.asarray(classes) == 1)
    if proba.ndim != 2 or hits.size != 1:
        raise ValueError(
            f"The scaler {type(estimator).__name__} must be a probabilistic "
            "binary classifier with classes_ containing 1 and predict_proba of "
            f"shape (n, 2); got classes_={classes!r} and output shape "
            f"{proba.shape}."
        )
    return np.asarray(proba[:, hits[0]], dtype=np.float64)


#: The boosted recalibration of ``scaler="features"``: scikit-learn's
#: histogram gradient boosting on ``[logit(q), features]``, ``q`` the
#: hierarchical scaler's probability (Eq. 5), increasing in ``logit(q)``
#: (``monotonic_cst=+1``: scikit-learn has no offset, so the base score
#: enters as a feature that can only raise the probability), with early
#: stopping on a stratified tenth of D1. scikit-learn's 31-leaf trees with
#: leaves of at least 50 rows and L2 1.0 (not its 20 and 0): over 10 seeds
#: (benchmarks/results/feature_scaler_boosting_between.md) better on
#: influences and CIFAR in Brier (-0.0005 to -0.0020), log loss and AUROC
#: (+0.0014 to +0.0039) and in debiased beta-CE with one split (-13 % to
#: -23 %), equal within noise on the planted groups, where fewer leaves
#: (7 or 4, feature_scaler_boosting_seeds.md) lose calibration.
BOOSTING = {
    "learning_rate": 0.1,
    "max_iter": 300,
    "min_samples_leaf": 50,
    "l2_regularization": 1.0,
    "early_stopping": True,
    "validation_fraction": 0.1,
    "n_iter_no_change": 10,
}
#: Fewer rows of a class in D1 than this: no early-stopping split (it would
#: hold a handful of rows), a few rounds instead.
BOOSTING_MIN_CLASS = 20
BOOSTING_FEW_ROUNDS = 10
#: What the boosting reads, recorded in its state (``scaler_["view"]``):
#: the features the fitted partitioner cuts (:func:`partition_view`: a
#: Pipeline's embedding, a group's cell id), or -- model files written
#: before that -- the partition columns as they are.
VIEW_PARTITION = "partition"
VIEW_INPUT = "input"
VIEWS = (VIEW_PARTITION, VIEW_INPUT)


def _feature_matrix(q, Z, eps, who):
    """``[logit(q), Z]`` as float64: what the boosted scaler reads."""
    try:
        Zf = np.asarray(Z, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"{who}(scaler='features') fits its scaler on the features the "
            "partitioner cuts, which must be numeric; got columns that are not. "
            "Embed text inside the partitioner (make_pipeline(TextEmbedder(...), "
            "partitioner): the scaler then reads the embedding), encode other "
            "columns as numbers (e.g. one-hot), or use scaler='hierarchical'."
        ) from None
    Zf = Zf.reshape(q.shape[0], -1)
    if not np.all(np.isfinite(Zf)):
        raise ValueError(
            f"{who}(scaler='features'): the partition features hold "
            f"{int(np.count_nonzero(~np.isfinite(Zf).all(axis=1)))} rows with NaN "
            "or infinite values; the boosted scaler needs finite features. "
            "Impute or drop those rows."
        )
    return np.column_stack([to_logit(q, eps), Zf])


def _tree_arrays(nodes):
    """One boosted tree (scikit-learn's predictor nodes) as node arrays.

    Same layout as the package's trees (``NODE_KEYS``, left iff ``x <=
    threshold``), plus ``value``: the leaf values (learning rate included)
    by cell id, the leaves numbered in node order.
    """
    leaf = nodes["is_leaf"].astype(bool)
    n = leaf.shape[0]
    # the node fields are unsigned: cast before writing -1 at the leaves
    left = np.where(leaf, -1, nodes["left"].astype(np.intp))
    right = np.where(leaf, -1, nodes["right"].astype(np.intp))
    cell = np.full(n, -1, dtype=np.intp)
    cell[leaf] = np.arange(int(leaf.sum()))
    depth = np.zeros(n, dtype=np.intp)
    for i in range(n):  # parents come before their children
        if not leaf[i]:
            depth[left[i]] = depth[right[i]] = depth[i] + 1
    return {
        "feature": np.where(leaf, -1, nodes["feature_idx"].astype(np.intp)),
        "threshold": np.where(leaf, np.nan, nodes["num_threshold"]).astype(np.float64),
        "children_left": left,
        "children_right": right,
        "cell": cell,
        "depth": depth,
        "value": nodes["value"][leaf].astype(np.float64),
    }


def fit_boosted_scaler(q, Z, y, sample_weight, random_state, who):
    """The boosting of ``scaler="features"`` on the base probabilities ``q``.

    Fitted on D1 (``q``: the hierarchical scaler's fitted values there).
    Returns its fitted state, a dict of plain arrays and numbers:
    ``logit_eps`` (the data-aware clip of ``logit(q)``), ``baseline`` (the
    initial raw score), ``trees`` (a list of node-array dicts, see
    :func:`_tree_arrays`), ``n_features`` (the partition features),
    ``view`` and ``passthrough`` (True where no tree split on ``logit(q)``:
    then the proxies are ``q`` itself, see below).
    """
    from sklearn.ensemble import HistGradientBoostingClassifier

    w = np.ones(q.shape[0]) if sample_weight is None else sample_weight
    eps = data_logit_eps(q, w)
    F = _feature_matrix(q, Z, eps, who)
    state = {
        "logit_eps": np.asarray(eps, dtype=np.float64),
        "n_features": F.shape[1] - 1,
        "view": VIEW_PARTITION,
        "passthrough": False,
    }
    counts = np.bincount(y.astype(np.int64), weights=None, minlength=2)
    if counts.min() == 0:
        # one class in D1: the constant of Laplace's rule, no trees
        p = (float(w @ y) + 1.0) / (float(w.sum()) + 2.0)
        state.update(baseline=float(np.log(p) - np.log1p(-p)), trees=[])
        return state
    params = dict(BOOSTING)
    if counts.min() < BOOSTING_MIN_CLASS:
        params.update(early_stopping=False, max_iter=BOOSTING_FEW_ROUNDS)
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    model = HistGradientBoostingClassifier(
        monotonic_cst=[1] + [0] * (F.shape[1] - 1), random_state=seed, **params
    )
    model.fit(F, y.astype(np.int64), sample_weight=sample_weight)
    trees = [_tree_arrays(tree.nodes) for (tree,) in model._predictors]
    if not any(np.any(t["feature"] == 0) for t in trees):
        # No tree splits on logit(q): the boosting's output ignores the
        # confidence (a constant where it found no split at all, which its
        # leaf minimum forces on a D1 of ~100 rows). A calibrator must not
        # drop its input silently: the hierarchical scaler's probabilities q
        # take the boosting's place, with a warning.
        warnings.warn(
            f"{who}(scaler='features'): the boosting found no split on the "
            f"confidence in its {q.shape[0]} scaler rows (D1), so its output "
            "would ignore the confidence; the hierarchical scaler's "
            "probabilities take its place (binned per cell as the boosting's "
            "would be). More rows (a few hundred per class) let the boosting learn.",
            UserWarning,
            stacklevel=3,
        )
        state.update(baseline=0.0, trees=[], passthrough=True)
        return state
    state.update(baseline=float(np.ravel(model._baseline_prediction)[0]), trees=trees)
    return state


def boosted_proba(state, q, Z, who, prepared=None):
    """The boosting's probability of the positive class at rows ``q, Z``."""
    F = _feature_matrix(q, Z, tuple(state["logit_eps"]), who)
    if F.shape[1] - 1 != state["n_features"]:
        raise ValueError(
            f"{who}: X has {F.shape[1] - 1} partition features, but the "
            f"scaler was fitted on {state['n_features']}."
        )
    if state.get("passthrough", False):  # the boosting ignored q (fit above)
        return np.asarray(q, dtype=np.float64)
    if prepared is None:
        prepared = prepare_forest(state["trees"])
    return expit(forest_raw(F, state["baseline"], prepared))


def check_boosted_state(state):
    """Check a loaded boosted scaler's state before any array of it is used.

    Every tree must hold together (:func:`check_node_arrays`: one tree, no
    cycle, split features in range, finite thresholds) and have one finite
    value per leaf; the clip and the baseline must be finite numbers; the
    hierarchical scaler is an estimator with ``predict_proba`` (its own
    state is checked when it loads). Returns the checked state.
    """
    owner = "ScalingBetaBinningCalibrator"
    keys = {"hierarchical", "logit_eps", "n_features", "baseline", "trees"}
    if isinstance(state, dict) and set(state) == keys:
        # written before the scaler read the partition's view: it read the
        # partition columns themselves, and still does
        state = {**state, "view": VIEW_INPUT}
    if isinstance(state, dict) and set(state) == {*keys, "view"}:
        # written before a boosting that ignores q passed q through
        state = {**state, "passthrough": False}
    if not isinstance(state, dict) or set(state) != {*keys, "view", "passthrough"}:
        raise damaged(owner, "scaler_ is not the feature-aware scaler's dict")
    if not isinstance(state["passthrough"], bool):
        raise damaged(owner, "scaler_['passthrough'] is not a bool")
    if not isinstance(state["view"], str) or state["view"] not in VIEWS:
        raise damaged(owner, f"scaler_['view'] is not one of {sorted(VIEWS)}")
    if not callable(getattr(state["hierarchical"], "predict_proba", None)):
        raise damaged(owner, "scaler_['hierarchical'] is not a fitted scaler")
    d = check_count(owner, "scaler_['n_features']", state["n_features"], 1)
    eps = check_array_state(
        owner, "scaler_['logit_eps']", state["logit_eps"], "f", (2,)
    )
    if np.any((eps <= 0) | (eps >= 0.5)):
        raise damaged(owner, "scaler_['logit_eps'] lies outside (0, 0.5)")
    baseline = state["baseline"]
    if not isinstance(baseline, float) or not np.isfinite(baseline):
        raise damaged(owner, "scaler_['baseline'] is not a finite float")
    trees = state["trees"]
    if not isinstance(trees, list):
        raise damaged(owner, "scaler_['trees'] is not a list")
    if state["passthrough"] and trees:
        raise damaged(owner, "scaler_ passes q through but holds trees")
    checked = []
    for k, t in enumerate(trees):
        if not isinstance(t, dict) or set(t) != {*NODE_KEYS, "value"}:
            raise damaged(owner, f"scaler_['trees'][{k}] is not a tree's node arrays")
        arrays, _ = check_node_arrays(owner, {key: t[key] for key in NODE_KEYS}, d + 1)
        n_leaves = int(np.count_nonzero(arrays["children_left"] == -1))
        arrays["value"] = check_array_state(
            owner, f"scaler_['trees'][{k}]['value']", t["value"], "f", (n_leaves,)
        )
        checked.append(arrays)
    return {**state, "logit_eps": eps, "n_features": d, "trees": checked}


#: What the template ``fit`` sets before ``_fit``: the members of ``cv=k``
#: share it (the partitioner is fitted once, on all rows)
_TEMPLATE_STATE = ("classes_", "n_features_in_", "feature_names_in_", "partitioner_")

#: Rows (total weight) per bin of the per-cell estimate of ``nu``; a
#: lighter cell is not measured.
NU_CELL_BIN_WEIGHT = 100


def _cell_misspecification(y, t, s, w, cells):
    """The largest ``nu`` (Def. 3.2) of the proxies ``t`` within one cell.

    Per cell ``>= 0`` of total weight at least ``NU_CELL_BIN_WEIGHT``:
    :func:`estimate_misspecification` with up to 10 equal-mass bins of the
    binned score ``s`` (``h``, or the proxies themselves for
    ``scaler="features"``) of at least that weight each.
    """
    w = np.ones(y.shape[0]) if w is None else w
    inside = cells >= 0
    ids, inv = np.unique(cells[inside], return_inverse=True)
    weight = np.bincount(inv, weights=w[inside], minlength=ids.shape[0])
    rows = np.flatnonzero(inside)
    nu = 0.0
    for k in np.flatnonzero(weight >= NU_CELL_BIN_WEIGHT):
        r = rows[inv == k]
        n_bins = int(min(10, weight[k] // NU_CELL_BIN_WEIGHT))
        nu = max(
            nu,
            estimate_misspecification(
                y[r], t[r], s[r], n_bins=n_bins, sample_weight=w[r]
            ),
        )
    return nu


@fill_doc
class ScalingBetaBinningCalibrator(_GroupBinningBase):
    """Scaling-beta-binning (Alg. 3): a scaler's fitted values, then beta-binning.

    The calibration rows are split at random into D1 (a ``scaler_fraction`` share)
    and D2. A scaler is fitted on D1; its fitted probabilities on D2 replace
    the labels of D2 as proxy ground truth (Def. 3.2); beta-binning (Alg. 1)
    is then run on D2 with those proxies, one UMD binning per partition cell
    plus a root binning. Prediction is beta-binning's (Alg. 2): a row gets its
    cell's binning, or the root one. With ``scaler="hierarchical"`` (the
    default) this is HS-BB of the paper, with ``scaler="pooled"`` S-BB.
    With ``scaler="features"`` the scaler also sees the partition features
    and the binning bins *its output* instead of the confidence, which keeps
    the resolution the features carry.

    Read more in the :ref:`User Guide <scaling_beta_binning>`.

    Parameters
    ----------
    partitioner : transformer or None, default=None
        As in :class:`BetaBinningCalibrator`: maps the partition features to
        a cell id per row (``-1`` outside every cell); cloned and fitted on
        the partition features of *all* calibration rows (D1 and D2) unless
        it is a ``FrozenEstimator``. ``None`` means ``KDTreePartitioner()``.
        The hierarchical scaler uses the same cells for its random effects.
    points_per_bin : int >= 2 or "auto", default=50
        Minimum number of points per bin ``b`` of the binning on D2.
        ``"auto"``: the smallest ``b`` whose Thm 3.1 bound with
        misspecification ``nu`` reaches ``epsilon``, with ``N`` = total
        weight of D2.
    epsilon : float in (0, 1), default=None
        Target bound of Thm 3.1, for ``points_per_bin="auto"``.
    alpha : float in (0, 1), default=0.1
        Failure probability of Thm 3.1, for ``points_per_bin="auto"``.
    confidence_column : int or str, default=0
        Position (or DataFrame column name) of the confidence in ``X``.
    delta : float >= 0, default=1e-10
        UMD's randomized tie-breaking (see :class:`BetaBinningCalibrator`).
    random_state : int, RandomState instance or None, default=None
        Draws the D1/D2 split (one permutation of the rows) and then the
        tie-breaking nudges of the D2 rows, in that order. As in
        :class:`BetaBinningCalibrator` it also seeds every ``random_state``
        left at ``None`` in the partitioner and the scaler.
    scaler : {"hierarchical", "pooled", "features"} or estimator, \
default="hierarchical"
        ``"hierarchical"``: :class:`HierarchicalLogisticScaler` on the
        ``covariate`` with the partition's cells (Eq. 5; HS-BB).
        ``"pooled"``: one logistic regression ``expit(a x + b)`` on the
        ``covariate`` ``x``, i.e. :class:`PlattScaler` (Eq. 5 with a single
        cell; S-BB). ``"features"``: the hierarchical scaler, then a boosted
        recalibration (scikit-learn's histogram gradient boosting, increasing
        in the logit of the hierarchical scaler's probability) on that logit
        and the features the partition cuts (a Pipeline partitioner's
        last-step input, e.g. a ``TextEmbedder``'s embedding; a group
        column's cell id; see the User Guide), which must be numeric; the
        binning on D2
        then bins this scaler's output ``g(x)`` (proxies ``g(x)``), and
        prediction looks up a row's ``g(x)``. An estimator: cloned, fitted on
        the D1 rows of ``X`` and ``y`` (and ``sample_weight`` when given), and
        its ``predict_proba`` on the D2 rows of ``X`` gives the proxies.
    scaler_fraction : float in (0, 1), default=0.5
        Fraction of the calibration rows in D1 (the paper splits equally).
    nu : float in [0, 1) or "auto", default="auto"
        Misspecification of the proxies (Def. 3.2) used by
        ``points_per_bin="auto"``. ``"auto"``: estimated with
        :func:`estimate_misspecification` (10 equal-mass bins of ``h``) on D2,
        whose true labels are held out from the scaler, before they are
        replaced by the proxies (for ``scaler="features"`` the bins are of
        the binned score ``g(x)``). For every scaler the estimate is the
        largest of the pooled one and the one within each cell of weight >=
        100 (up to 10 bins of weight >= 100 each), so that ``epsilon_``
        bounds every cell: a scaler can be off in each cell while its pooled
        gap is small. Assuming 0 lets Thm 3.1 promise a bound that the
        proxies' bias breaks.
    covariate : {"confidence", "logit"}, default="confidence"
        What the ``"hierarchical"`` and ``"pooled"`` scalers regress on: the
        raw confidence as in Eq. 5, or its logit clipped at a data-aware
        level (see :class:`PlattScaler`), which can follow an accuracy curve
        that is flat and then steep. Ignored for an estimator ``scaler``.
    cv : int >= 2 or None, default=None
        ``None``: one split into D1 and D2 (``scaler_fraction``), Alg. 3 as
        written. An int ``k``: cross-fitting. The rows are drawn into ``k``
        folds (one permutation from ``random_state``); for each fold Alg. 3
        runs with D1 = the other ``k - 1`` folds and D2 = the fold (a
        calibrator in ``estimators_``), so every row is binned once, by a
        scaler that did not see it, and each scaler sees ``(k - 1) / k`` of
        the rows; the prediction is the mean of the ``k`` binned
        predictions. ``scaler_fraction`` is then not used. The guarantee
        changes: see Notes.
    %(pos_label)s

    Attributes
    ----------
    %(classes_)s
    scaler_ : estimator or dict
        The scaler fitted on D1. For ``"hierarchical"`` and ``"pooled"`` it
        takes ``X = [h, cell id]`` and ``h`` respectively. For
        ``"features"`` a dict: ``"hierarchical"`` (the fitted Eq. 5 scaler),
        ``"baseline"``, ``"trees"`` (each boosted tree as node arrays in the
        layout of the package's trees, with ``"value"`` per leaf),
        ``"logit_eps"``, ``"n_features"`` and ``"view"`` (what the
        boosting reads: ``"partition"``, the features the partition cuts,
        or ``"input"``, the partition columns as they are, in model files
        written before that); see :meth:`proxy_proba`.
    nu_ : float
        The misspecification used: ``nu``, or its estimate for ``"auto"``.
    scaling_indices_, binning_indices_ : ndarray of int64
        Row positions (in the rows with positive weight) of D1 and D2.
        Not set with ``cv`` (each of ``estimators_`` has its own).
    estimators_ : list of ScalingBetaBinningCalibrator
        Only with ``cv=k``: the ``k`` fitted calibrators, fold ``j``'s
        binned on fold ``j`` (``cv=None``, the partitioner fitted on all
        rows shared); each has the attributes above, its own ``epsilon_``
        among them. ``nu_`` and ``points_per_bin_`` are then the largest of
        theirs, and the binning attributes (``root_``, ``cell_tables_``,
        ``epsilon_``, ...) exist only on the members.
    partitioner_, points_per_bin_, root_, cell_tables_, fallback_cells_, \
n_cells_fitted_, n_cells_fallback_, n_features_in_, feature_names_in_
        As in :class:`BetaBinningCalibrator` (the binning ones refer to D2).

    See Also
    --------
    BetaBinningCalibrator : beta-binning on the true labels (BB).
    HierarchicalLogisticScaler : the scaler of HS-BB (Eq. 5).
    ScalingBinningCalibrator : the unpartitioned scaling-binning (S-B).
    estimate_misspecification : ``nu`` of the proxies on a hold-out set.

    Notes
    -----
    **Which rows fit what.** The partitioner is fitted on the partition
    features of all calibration rows (it needs no labels; pass a
    ``FrozenEstimator`` to fit it elsewhere, as the paper does on an
    unlabeled split). The scaler sees only D1, the binning only D2.

    **Resolution.** Binning loses refinement within a cell (rows in a bin
    share one value). Binning ``h`` keeps only what the cell and ``h`` tell;
    ``scaler="features"`` bins a score that has already used the features, so
    the binning costs little AUROC or Brier resolution; ``cv=2`` gives every
    row to a binning and averages two, which lowered the Brier score by
    0.003-0.006 and raised the AUROC by 0.012-0.016 on the real sets
    (measured in the :ref:`User Guide <scaling_beta_binning>`). Its fit is
    a boosting run on D1 (the features must be numeric and finite).

    **Guarantee.** Thm 3.1 applies to the binning on D2 with ``N = |D2|``
    and the misspecification ``nu`` of the scaler's fitted values, which is
    unknown; :func:`estimate_misspecification` estimates it on a labelled
    hold-out set, and ``points_per_bin="auto"`` with ``nu`` then picks ``b``
    (Sec. 3.3, "Applying Theorem 3.1").

    **Guarantee with** ``cv=k``. Each member ``estimators_[j]`` is Alg. 3
    with its scaler fitted apart from the rows it bins, so Thm 3.1 holds
    for it cell by cell exactly as above, with ``N`` = the weight of fold
    ``j`` (about ``1 / k`` of the rows, so its bins hold ``b`` rows as
    before but there are fewer of them) and its own ``nu_``: its
    ``epsilon_`` bounds each of its cells with probability at least ``1 -
    alpha``, and all ``k`` members' bounds hold together with probability
    at least ``1 - k alpha`` (a union bound). The averaged prediction that
    ``predict_proba`` returns is **not** covered: it is not a binned
    function of one score (it takes sums of the members' bin values), and
    an average of calibrated predictors need not be calibrated (the
    constant ``0.5`` and the true probability in ``{0, 1}`` are both
    calibrated; their average, ``0.25`` or ``0.75``, is off by ``0.25``
    everywhere). Use ``cv`` for resolution (Brier, log loss, AUROC: each
    scaler sees more rows and the average is finer than one binning), and
    ``cv=None`` or one member where the per-cell bound is what you need.

    **Sample weights** are frequency weights: zero-weight rows are removed
    first (exactly like dropping them), and the remaining weights go to the
    scaler and to the binning. Because the split draws rows, not weight
    units, an integer weight is not the same as a repeated row (a repeated
    row may land in both D1 and D2).

    References
    ----------
    .. [1] "beta-calibration of Language Model Confidence Scores for
       Generative QA", Sec. 3.2 (Eq. 5, Alg. 3), Def. 3.2, Thm 3.1.
    .. [2] A. Kumar, P. Liang and T. Ma. Verified uncertainty calibration.
       NeurIPS 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import GroupColumnPartitioner
    >>> from sklearn_betacal import ScalingBetaBinningCalibrator
    >>> rng = np.random.default_rng(0)
    >>> group = rng.integers(0, 4, size=8000)
    >>> h = rng.uniform(size=8000)
    >>> y = rng.uniform(size=8000) < h ** (0.5 + group / 2)
    >>> X = np.column_stack([h, group])
    >>> hsbb = ScalingBetaBinningCalibrator(
    ...     GroupColumnPartitioner(), points_per_bin=200, random_state=0
    ... ).fit(X, y)
    >>> hsbb.n_cells_fitted_
    4
    >>> hsbb.predict_proba([[0.5, 0], [0.5, 3]])[:, 1].round(2)
    array([0.71, 0.27])
    """

    _parameter_constraints: dict = {
        "pos_label": "no_validation",  # checked against y in fit
        **_GroupBinningBase._parameter_constraints,
        "scaler": [
            StrOptions({"hierarchical", "pooled", "features"}),
            HasMethods(["fit", "predict_proba"]),
        ],
        "scaler_fraction": [Interval(Real, 0, 1, closed="neither")],
        "nu": [Interval(Real, 0, 1, closed="left"), StrOptions({"auto"})],
        "covariate": [StrOptions({"confidence", "logit"})],
        "cv": [Interval(Integral, 2, None, closed="left"), None],
    }

    def __init__(
        self,
        partitioner=None,
        *,
        points_per_bin=50,
        epsilon=None,
        alpha=0.1,
        confidence_column=0,
        delta=1e-10,
        random_state=None,
        scaler="hierarchical",
        scaler_fraction=0.5,
        nu="auto",
        covariate="confidence",
        cv=None,
        pos_label=None,
    ):
        super().__init__(
            partitioner=partitioner,
            points_per_bin=points_per_bin,
            epsilon=epsilon,
            alpha=alpha,
            confidence_column=confidence_column,
            delta=delta,
            random_state=random_state,
            pos_label=pos_label,
        )
        self.scaler = scaler
        self.scaler_fraction = scaler_fraction
        self.nu = nu
        self.covariate = covariate
        self.cv = cv

    def _planned_points_per_bin(self, n_rows, sample_weight):
        """``"auto"`` resolved before the partitioner is fitted, on the weight
        D2 will have (the rows to be binned less ``round(scaler_fraction *
        n)``): a learned partition's leaves then hold ``2 * b``. With a given
        ``nu`` and unit weights this is exactly the ``b`` that ``_fit``
        resolves after the scaler; with ``nu="auto"`` (measured against the
        scaler, which is fitted on the cells) it is the ``b`` of ``nu = 0``,
        the smallest ``b`` the estimate can give."""
        if self.points_per_bin != "auto":
            return int(self.points_per_bin)
        total = float(n_rows) if sample_weight is None else float(sample_weight.sum())
        if self.cv is None:
            d2 = total - round(self.scaler_fraction * total)
        else:  # the lightest fold's share, as its rows are drawn
            d2 = float(total // int(self.cv))
        if d2 < 2:
            return None  # _fit reports the split that is too small
        nu = 0.0 if self.nu == "auto" else float(self.nu)
        return self._resolve_points_per_bin(float(d2), nu=nu)

    def _fit_scaler(self, X, h, Z, y, sw, cells, d1, d2):
        """Alg. 3, lines 1-3: fit the scaler on D1, return proxies on D2."""
        w1 = None if sw is None else sw[d1]
        features = self.scaler == "features"
        if features or self.scaler == "hierarchical":
            # Eq. 5 on the cells (``"features"`` then boosts from its logit)
            scaler = hierarchical_scaler(self.covariate)
            X1 = np.column_stack([h[d1], cells[d1]])
            X2 = np.column_stack([h[d2], cells[d2]])
        elif self.scaler == "pooled":
            # Eq. (5) with one cell: expit(B0 + B1 x), x = h or its logit
            scaler = platt_scaler(
                "logit" if self.covariate == "confidence" else "probability"
            )
            X1, X2 = h[d1], h[d2]
        else:
            scaler = clone(self.scaler)
            X1, X2 = _safe_indexing(X, d1), _safe_indexing(X, d2)
        seed_inner(scaler, self.random_state, name="scaler")
        y1 = y[d1]
        if w1 is None:
            scaler.fit(X1, y1)
        else:
            scaler.fit(X1, y1, sample_weight=w1)
        t2 = _positive_proba(scaler, X2)
        if not np.all(np.isfinite(t2)) or np.any((t2 < 0) | (t2 > 1)):
            raise ValueError(
                f"The scaler {type(scaler).__name__} returned probabilities "
                "outside [0, 1] or non-finite; proxies must be probabilities."
            )
        if not features:
            self.scaler_ = scaler
            return t2
        # the boosting on [logit q, features], q: Eq. 5's fitted values
        who = type(self).__name__
        q1 = _positive_proba(scaler, X1)
        state = fit_boosted_scaler(q1, take_rows(Z, d1), y1, w1, self._scaler_seed, who)
        self.scaler_ = {"hierarchical": scaler, **state}
        return boosted_proba(self.scaler_, t2, take_rows(Z, d2), who)

    def _fit(self, X, h, y, sample_weight, cells):
        """Alg. 3 on the rows the template ``fit`` kept: split, fit the
        scaler on D1, beta-bin D2 on the scaler's proxies; with ``cv``, once
        per fold (:meth:`_fit_folds`)."""
        n = h.shape[0]
        if self.cv is not None:
            return self._fit_folds(X, h, y, sample_weight, cells)
        n1 = int(round(self.scaler_fraction * n))
        if n1 < 1 or n - n1 < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least one row in D1 and two in "
                f"D2; with {n} calibration rows and scaler_fraction="
                f"{self.scaler_fraction} there "
                f"are {n1} and {n - n1}. Pass more rows or change scaler_fraction."
            )
        vars(self).pop("estimators_", None)  # of an earlier fit with cv
        rng = check_random_state(self.random_state)
        perm = rng.permutation(n)
        d1, d2 = np.sort(perm[:n1]), np.sort(perm[n1:])
        return self._fit_split(X, h, y, sample_weight, cells, d1, d2, rng)

    def _fit_folds(self, X, h, y, sample_weight, cells):
        """``cv=k``: one Alg. 3 per fold, its scaler on the other ``k - 1``
        folds and its binning on the fold (``estimators_``); every row is
        binned exactly once, by a scaler that did not see it."""
        n, k = h.shape[0], int(self.cv)
        if n < 2 * k:
            raise ValueError(
                f"{type(self).__name__}(cv={k}) needs at least two rows per "
                f"fold; got {n} calibration rows. Pass more rows or a smaller cv."
            )
        rng = check_random_state(self.random_state)
        folds = np.array_split(rng.permutation(n), k)
        # the template fit's state: every fold shares the partitioner
        shared = {key: v for key, v in vars(self).items() if key in _TEMPLATE_STATE}
        members, small = [], []
        # the features the boosting reads, read once for the k folds
        view = self._fit_view(X) if self.scaler == "features" else None
        for j in range(k):
            member = clone(self).set_params(cv=None)
            member.__dict__.update(shared)
            # the folds' small-cell warnings: one for all k, below
            member._fallback_counts = small
            d1 = np.sort(np.concatenate(folds[:j] + folds[j + 1 :]))
            d2 = np.sort(folds[j])
            members.append(
                member._fit_split(X, h, y, sample_weight, cells, d1, d2, rng, view)
            )
            del member._fallback_counts
        if small:
            warnings.warn(
                fallback_message(f"{type(self).__name__}(cv={k})", small, k),
                UserWarning,
                stacklevel=3,
            )
        params = self.get_params(deep=False)
        for key in set(vars(members[0])) - set(params) - set(_TEMPLATE_STATE):
            vars(self).pop(key, None)  # a one-split state of an earlier fit
        self.estimators_ = members
        self.nu_ = max(m.nu_ for m in members)
        self.points_per_bin_ = max(m.points_per_bin_ for m in members)
        return self

    def _fit_view(self, X):
        """``scaler="features"``: what the boosting reads of the kept rows of
        ``X`` (:func:`partition_view` of the fitted partitioner)."""
        X_arr = self._validate_X(X, reset=False)
        Z = self._split_block(X, X_arr, 0, X_arr.shape[0])[1]
        return partition_view(self.partitioner_, Z)

    def _fit_split(self, X, h, y, sample_weight, cells, d1, d2, rng, view=None):
        """Alg. 3 on the split ``d1`` (scaler) / ``d2`` (binning); ``rng``
        has drawn the split and draws the rest (boosting seed, nudges);
        ``view``: the boosting's features (``scaler="features"``), computed
        here when not given."""
        sw = sample_weight
        self.scaling_indices_, self.binning_indices_ = d1, d2

        features = self.scaler == "features"
        if features:
            # drawn after the split, before the tie-breaking nudges
            self._scaler_seed = rng.randint(np.iinfo(np.int32).max)
        if features and view is None:
            view = self._fit_view(X)
        t2 = self._fit_scaler(X, h, view, y, sw, cells, d1, d2)
        # the binned score: the confidence (Alg. 3), or the feature-aware
        # scaler's own output, whose resolution the binning then keeps
        s2 = t2 if features else h[d2]

        w2 = None if sw is None else sw[d2]
        total2 = float(d2.shape[0]) if w2 is None else float(w2.sum())
        if self.nu == "auto":
            # D2's labels are held out from the scaler: measure the proxies
            # against them (Def. 3.2), before they are replaced by proxies.
            # Any scaler can be miscalibrated differently in each cell (the
            # pooled estimate averages a cell's gap away): the bound of a
            # cell needs its own, so nu_ is the largest of the two
            self.nu_ = max(
                estimate_misspecification(y[d2], t2, s2, n_bins=10, sample_weight=w2),
                _cell_misspecification(y[d2], t2, s2, w2, cells[d2]),
            )
        else:
            self.nu_ = float(self.nu)
        self.points_per_bin_ = self._resolve_points_per_bin(total2, nu=self.nu_)
        self._fit_binning(s2, t2, w2, cells[d2], rng)
        return self

    def _row_inputs(self, Z):
        """``(V, cells)`` of one block: for ``scaler="features"`` ``V`` is
        what the fitted boosting reads of the partition features ``Z``
        (``scaler_["view"]``, shared by the members of ``cv``). For a
        Pipeline partitioner the view is its last step's input, so the
        cells are that step's transform of it: the embedding is computed
        once for both (as ``Pipeline.transform`` computes it)."""
        if self.scaler != "features":
            return super()._row_inputs(Z)
        member = self if self.cv is None else self.estimators_[0]
        if member.scaler_["view"] == VIEW_INPUT:
            return Z, self._cells(Z)
        split = pipeline_head(self.partitioner_)
        n = Z.shape[0]
        if split is None or n > PREDICT_BLOCK_ROWS:
            return partition_view(self.partitioner_, Z), self._cells(Z)
        head, last = split
        V = head.transform(Z)
        who = f"partitioner ({type(self.partitioner_).__name__})"
        return V, check_cell_ids(last.transform(V), n, who=who)

    def _binned_score(self, h, V, cells):
        """What the binning reads (Alg. 2): ``h``, or the feature-aware
        scaler's probability for ``scaler="features"`` (``V``: the block's
        row inputs, :meth:`_row_inputs`)."""
        if self.scaler != "features":
            return h
        base = self.scaler_["hierarchical"]
        q = _positive_proba(base, np.column_stack([h, cells]))
        return boosted_proba(self.scaler_, q, V, type(self).__name__, self._forest())

    def _row_predictor(self):
        """Alg. 2; with ``cv``, the mean of the folds' binned predictions
        (the row inputs, :meth:`_row_inputs`, read once for all folds)."""
        if self.cv is None:
            return super()._row_predictor()
        parts = [(m, m._binning_predictor()) for m in self.estimators_]

        def rows(h, V, cells):
            out = None
            for member, predict in parts:
                p = predict(member._binned_score(h, V, cells), cells)
                out = p if out is None else out + p
            return out / len(parts)

        return rows

    def _forest(self):
        """The boosted trees' walks, prepared once per fitted state."""
        cached = _FORESTS.get(self)
        if cached is not None and cached[0] is self.scaler_:
            return cached[1]
        prepared = prepare_forest(self.scaler_["trees"])
        _FORESTS[self] = (self.scaler_, prepared)
        return prepared

    def __setstate__(self, state):
        if state.get("scaler") == "features" and "scaler_" in state:
            state["scaler_"] = check_boosted_state(state["scaler_"])
        super().__setstate__(state)

    def proxy_proba(self, X):
        """The scaler's probabilities (the proxies of Alg. 3) for new rows.

        Useful with :func:`estimate_misspecification` on a hold-out set.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1 + n_partition_features)
            Same columns as in ``fit``.

        Returns
        -------
        proxy : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        # with cv, X is read and its cells found once for all members (they
        # share the partitioner); the proxy is the mean of theirs
        members = [self] if self.cv is None else self.estimators_
        if self.scaler not in ("hierarchical", "pooled", "features"):
            proxies = [_positive_proba(m.scaler_, X) for m in members]
        else:
            h, Z = self._split_X(X, reset=False)
            if self.scaler == "pooled":
                cells = None
            else:
                Z, cells = self._row_inputs(Z)
            proxies = [m._proxy(h, Z, cells) for m in members]
        return proxies[0] if self.cv is None else np.mean(proxies, axis=0)

    def _proxy(self, h, Z, cells):
        """The fitted scaler's proxies at validated ``h``, ``Z`` (for
        ``scaler="features"`` the boosting's view of the features,
        :meth:`_row_inputs`) and their ``cells`` (unused by
        ``scaler="pooled"``)."""
        if self.scaler == "features":  # Z: the row inputs already
            return self._binned_score(h, Z, cells)
        if self.scaler == "pooled":
            return _positive_proba(self.scaler_, h)
        return _positive_proba(self.scaler_, np.column_stack([h, cells]))


@validate_params(
    {
        "y_true": ["array-like"],
        "y_proxy": ["array-like"],
        "h": ["array-like"],
        "n_bins": [Interval(Integral, 1, None, closed="left")],
        "strategy": [StrOptions({"quantile", "uniform"})],
        "sample_weight": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def estimate_misspecification(
    y_true, y_proxy, h, *, n_bins=10, strategy="quantile", sample_weight=None
):
    """Estimate the misspecification ``nu`` of proxy labels (Def. 3.2).

    ``nu`` bounds ``|E[Y | h] - E[Y~ | h]|`` over confidences ``h``: how far
    the proxy ground truth (an LM judge's labels, or the fitted values of the
    scaler in scaling-beta-binning) is from the true accuracy at equal
    confidence. This function bins a labelled hold-out set by ``h`` and
    returns ``max_bins |mean(y_true) - mean(y_proxy)|`` (weighted means per
    bin).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True 0/1 labels of the hold-out rows.
    y_proxy : array-like of shape (n_samples,)
        Proxy labels in ``[0, 1]`` for the same rows (e.g.
        ``ScalingBetaBinningCalibrator.proxy_proba(X_holdout)``).
    h : array-like of shape (n_samples,)
        Confidence of each row, in ``[0, 1]``.
    n_bins : int, default=10
        Number of confidence bins.
    strategy : {"quantile", "uniform"}, default="quantile"
        ``"quantile"``: equal-mass bins, by the rule of the metrics'
        ``strategy="quantile"`` (edges at the weighted inverted-CDF
        quantiles of ``h``, a confidence equal to an edge in the bin below
        it; tied confidences stay in one bin, so there may be fewer);
        ``"uniform"``: equal-width bins on ``[0, 1]`` (empty bins skipped).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.

    Returns
    -------
    nu : float
        The largest per-bin gap, in ``[0, 1]``.

    See Also
    --------
    sklearn_betacal.bounds.points_per_bin_for_epsilon : picks ``b`` for a
        target ``epsilon`` given ``nu``.
    ScalingBetaBinningCalibrator : ``points_per_bin="auto"`` with ``nu``.

    Notes
    -----
    This is itself an estimate from finite data: each bin's gap carries
    sampling noise of order ``sqrt(p (1 - p) / n_bin)`` and the maximum over
    bins is biased upward, so use enough hold-out rows per bin (a few hundred)
    or few bins. Def. 3.2 conditions on ``h`` only (not on the cell), which is
    what is measured here; binning coarsens the conditioning on ``h``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import estimate_misspecification
    >>> rng = np.random.default_rng(0)
    >>> h = rng.uniform(size=20000)
    >>> y = (rng.uniform(size=20000) < h).astype(int)
    >>> # true nu is 0.05; sampling noise biases the max over bins upward
    >>> round(estimate_misspecification(y, np.clip(h + 0.05, 0, 1), h), 2)
    0.07
    """
    y_true = check_binary_labels(y_true, name="y_true")
    n = y_true.shape[0]
    y_proxy = check_confidence(y_proxy, name="y_proxy")
    h = check_confidence(h, name="h")
    if y_proxy.shape[0] != n or h.shape[0] != n:
        raise ValueError(
            "y_true, y_proxy and h must have the same length; got "
            f"{n}, {y_proxy.shape[0]} and {h.shape[0]}."
        )
    if n == 0:
        raise ValueError(
            "estimate_misspecification needs at least one labelled hold-out row; "
            "got 0 rows. Pass the hold-out set's labels, proxies and confidences."
        )
    w = check_weights(sample_weight, n)
    keep = w > 0  # check_weights rejects all-zero weights
    y_true, y_proxy, h, w = y_true[keep], y_proxy[keep], h[keep], w[keep]
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)[1:-1]
        bins = np.searchsorted(edges, h, side="right")
    else:
        # the metrics' quantile rule (weighted inverted-CDF edges, bins open
        # on the left), so ties fall in the same bins as in
        # expected_calibration_error(strategy="quantile")
        bins = quantile_bin_index(h, quantile_edges(h, w, n_bins))
    wsum = np.bincount(bins, weights=w)
    used = wsum > 0
    mean_y = np.bincount(bins, weights=w * y_true)[used] / wsum[used]
    mean_p = np.bincount(bins, weights=w * y_proxy)[used] / wsum[used]
    return float(np.max(np.abs(mean_y - mean_p)))


__all__ = ["ScalingBetaBinningCalibrator", "estimate_misspecification"]
