# SPDX-License-Identifier: MIT
"""CalibrationTreePartitioner: a partition learned where miscalibration differs.

An unsupervised kd-tree of a question embedding cuts at medians that have no
reason to separate questions on which the model is miscalibrated differently;
its cells are then as miscalibrated as the whole and beta-binning gains
nothing over plain binning. This partitioner grows a regression tree on the
partition features whose splits separate rows that a per-cell recalibration
would treat differently.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, StrOptions, _fit_context
from .._groups import check_groups, group_split
from .._kernels._kdtree import prepare_node_walk, principal_axes, route_kdtree
from .._kernels._scaling import (
    data_logit_eps,
    fit_platt,
    platt_targets,
    sigmoid_scaled,
    to_logit,
    unit_exponent,
)
from .._state import FEATURES, Array, Custom, Int, Schema
from .._validation import (
    MAX_COUNT_TOTAL,
    check_binary_labels,
    check_confidence,
    check_weights,
)
from ._base import (
    _PartitionerMixin,
    check_node_arrays,
    damaged,
    node_ancestors,
    tree_depths,
    validate_numeric,
)

#: Default minimum leaf size when no ``points_per_bin`` reaches the
#: partitioner: twice a typical ``b = 50``.
DEFAULT_MIN_LEAF = 100


def recalibration_scores(h, y, w):
    """Per-row score of a global Platt recalibration, whitened (MOB criterion).

    Fits ``p = sigma(a s + b)`` with ``s`` the data-aware clipped logit of
    ``h`` on all rows, then returns ``G_i = (y_i - p_i) [1, s_i] L`` where
    ``L L^T`` is the inverse of the Fisher information ``sum_i w_i p_i (1 -
    p_i) x_i x_i^T / W`` of ``x = [1, s]``. For a set ``C`` of rows, ``W_C
    ||mean_C G||^2`` is then the score (Lagrange multiplier) statistic for
    giving ``C`` its own intercept and slope: the first-order likelihood gain
    of recalibrating ``C`` separately (Zeileis, Hothorn and Hornik, "Model-based
    recursive partitioning", JCGS 2008). A squared-error regression tree on
    ``G`` maximises the sum of these statistics over its leaves.
    """
    # Platt's smoothed targets keep the fit finite; the weights scaled as a
    # PlattScaler scales them (its logit clip counts the total weight as rows)
    wp = check_weights(w, h.shape[0], max_total=MAX_COUNT_TOTAL)
    s = to_logit(h, data_logit_eps(h, wp))
    platt = fit_platt(s, platt_targets(y, wp), wp)
    p = sigmoid_scaled(platt.coef * s + platt.intercept, 1.0)
    x = np.column_stack([np.ones_like(s), s])
    u = np.ldexp(w, -unit_exponent(w))  # exact rescale: subnormal weights
    info = (x * (u * p * (1 - p))[:, None]).T @ x / np.sum(u)
    trace = np.trace(info)
    # a constant s makes it singular; p(1 - p) underflowing to 0 everywhere
    # (every label alike) leaves nothing to whiten: the identity then
    info += (1e-12 * trace if np.isfinite(trace) and trace > 0 else 1.0) * np.eye(2)
    chol = np.linalg.cholesky(np.linalg.inv(info))
    return ((y - p)[:, None] * x) @ chol


def column_spread(Z, w):
    """Weighted standard deviation of each column of ``Z``, overflow-safe.

    1.0 where a column is constant (or its spread is not finite): dividing by
    the spread then leaves it as it is.
    """
    e = unit_exponent(Z)
    U = np.ldexp(Z, -e)
    total = float(np.sum(w))
    mean = (w @ U) / total
    spread = np.ldexp(np.sqrt((w @ (U - mean) ** 2) / total), e)
    spread[~(np.isfinite(spread) & (spread > 0))] = 1.0
    return spread


#: Candidate inverse penalties of the direction fit (on standardised
#: features), chosen by cross-validation.
DIRECTION_CS = np.logspace(-3, 2, 6)
#: Folds of that cross-validation (and of the cross-fitted projections); a
#: class with fewer rows gives no direction.
DIRECTION_FOLDS = 5


def _cross_validated_coefs(F, y, w, random_state, *, logistic, groups=None):
    """Full-data and out-of-fold coefficients of a ridge fit of ``y`` on ``F``.

    The penalty is the ``DIRECTION_CS`` value with the least weighted
    held-out loss over ``DIRECTION_FOLDS`` folds (log loss of an L2
    :class:`~sklearn.linear_model.LogisticRegression` on stratified folds,
    or squared error of :class:`~sklearn.linear_model.Ridge`), shuffled with
    ``random_state``; with question ``groups``, grouped folds (scikit-learn's
    ``StratifiedGroupKFold`` / ``GroupKFold``): no question in two folds.
    Returns ``(coef, folds, fold_coefs)``: the coefficients
    refitted on all rows, and per fold its held-out rows with the
    coefficients fitted without them at that penalty (already fitted by the
    cross-validation: no extra fit). A plain loop over scikit-learn's stable
    estimators.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.model_selection import (
        GroupKFold,
        KFold,
        StratifiedGroupKFold,
        StratifiedKFold,
    )

    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    if groups is None:
        kind = StratifiedKFold if logistic else KFold
    else:
        kind = StratifiedGroupKFold if logistic else GroupKFold
    splitter = kind(DIRECTION_FOLDS, shuffle=True, random_state=seed)
    folds = list(splitter.split(F, y, groups))

    def model(C):
        if logistic:
            return LogisticRegression(C=C, max_iter=1000)
        return Ridge(alpha=1.0 / C)

    def loss(m, rows):
        if logistic:
            p = np.clip(m.predict_proba(F[rows])[:, 1], 1e-15, 1 - 1e-15)
            each = -np.where(y[rows] == 1, np.log(p), np.log1p(-p))
        else:
            each = (y[rows] - m.predict(F[rows])) ** 2
        return float(w[rows] @ each)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # fold by fold, each fold's rows taken once for all the penalties
        fitted = [[] for _ in DIRECTION_CS]  # per penalty, its fold models
        for fit, _ in folds:
            Ff, yf, wf = F[fit], y[fit], w[fit]
            for models, C in zip(fitted, DIRECTION_CS, strict=True):
                models.append(model(C).fit(Ff, yf, sample_weight=wf))
        losses = [
            sum(loss(m, held) for m, (_, held) in zip(models, folds, strict=True))
            for models in fitted
        ]
        best = int(np.argmin(losses))
        full = model(DIRECTION_CS[best]).fit(F, y, sample_weight=w)
    coef = np.ravel(full.coef_)
    return (
        coef,
        [held for _, held in folds],
        [np.ravel(m.coef_) for m in fitted[best]],
    )


def _unit_directions(coef, scale, n_dir, d):
    """``(n_dir, d)`` unit rows in the coordinates of ``X`` (zero if none)."""
    dirs = coef.reshape(n_dir, d) / scale
    norms = np.linalg.norm(dirs, axis=1)
    ok = np.isfinite(norms) & (norms > 0)
    dirs[ok] /= norms[ok, None]
    dirs[~ok] = 0.0
    return dirs


def recalibration_directions(X, y, w, h, random_state, groups=None):
    """Unit directions of ``X`` along which the recalibration changes.

    With confidences ``h``: a ridge logistic regression of ``y`` on ``[s, X,
    s X]`` (``s``: the data-aware clipped logit of ``h``; every column
    standardised with the weights), the penalty chosen by
    ``DIRECTION_FOLDS``-fold cross-validated log loss. Its ``X``
    coefficients ``u`` and ``s X`` coefficients ``v`` are the directions in
    which the recalibration's intercept and slope change, to first order (a
    linear varying-coefficient Platt model): a group of rows whose model is
    overconfident lies at one end of ``X u``. Without ``h`` (any numeric
    ``y``): one direction, the ridge regression of ``y`` on ``X``.

    Returns ``(directions, projections)``. ``directions``: ``(2, d)`` (or
    ``(1, d)``) unit rows in the coordinates of ``X``, each signed so that
    its largest-magnitude entry is positive; a zero row where nothing could
    be fitted (one class, fewer than ``DIRECTION_FOLDS`` rows of a class, a
    constant ``X``). ``projections``: ``(n, n_dir)``, every row of ``X``
    (centred by its weighted mean) projected on the directions fitted
    *without* its fold (cross-fitting), so that no row's position along a
    direction depends on its own label and the tree's significance stop
    keeps the null distribution of a fixed split; a zero-weight row uses the
    full-data directions. ``groups``: the rows' question ids (codes), kept
    whole within the folds; fewer than ``DIRECTION_FOLDS`` questions give no
    direction, as too few rows do.
    """
    n, d = X.shape
    n_dir = 1 if h is None else 2
    total = float(np.sum(w))
    e = unit_exponent(X)  # computed on X * 2**-e: no overflow, exact ratios
    X = np.ldexp(X, -e)
    Xc = X - (w @ X) / total
    none = np.zeros((n_dir, d)), np.zeros((n, n_dir))
    keep = np.flatnonzero(w > 0)
    Xk, yk, wk = Xc[keep], y[keep], w[keep]
    gk = None if groups is None else groups[keep]
    if gk is not None and np.unique(gk).shape[0] < DIRECTION_FOLDS:
        return none
    scale = column_spread(Xk, wk)
    Xs = Xk / scale
    if h is None:
        if keep.shape[0] < DIRECTION_FOLDS or np.ptp(yk) == 0:
            return none
        F, target, logistic = Xs, yk, False
    else:
        target = yk.astype(np.int64)
        if np.bincount(target, minlength=2).min() < DIRECTION_FOLDS:
            return none
        if (
            gk is not None
            and min(np.unique(gk[target == c]).shape[0] for c in (0, 1))
            < DIRECTION_FOLDS
        ):
            return none  # a class in too few questions for the grouped folds
        s = to_logit(h[keep], data_logit_eps(h[keep], wk))
        s = s - np.average(s, weights=wk)
        spread = np.sqrt(np.average(s**2, weights=wk))
        s = s / spread if spread > 0 else s
        F, logistic = np.column_stack([s, Xs, s[:, None] * Xs]), True
    skip = 1 if logistic else 0  # the coefficient of s itself
    coef, helds, fold_coefs = _cross_validated_coefs(
        F, target, wk, random_state, logistic=logistic, groups=gk
    )
    dirs = _unit_directions(coef[skip:], scale, n_dir, d)
    top = np.argmax(np.abs(dirs), axis=1)
    sign = np.sign(dirs[np.arange(n_dir), top])
    sign[sign == 0] = 1.0
    dirs *= sign[:, None]
    proj = np.zeros((n, n_dir))
    drop = np.flatnonzero(w <= 0)  # the others get their fold's directions
    proj[drop] = Xc[drop] @ dirs.T
    for held, fc in zip(helds, fold_coefs, strict=True):
        u = _unit_directions(fc[skip:], scale, n_dir, d)
        u *= np.where(np.sum(u * dirs, axis=1) < 0, -1.0, 1.0)[:, None]
        proj[keep[held]] = Xk[held] @ u.T
    return np.ascontiguousarray(dirs), np.ldexp(proj, e)  # in units of X


def _max_cells(state):
    """What fit can produce: ``2**max_depth`` leaves (a single leaf at depth
    0)."""
    return 2 ** min(max(state["max_depth"], 1), 62)


def _n_split(state):
    """Number of features the tree splits on (the projections, or X's)."""
    comps = state.get("components_")
    return state["n_features_in_"] if comps is None else comps.shape[0]


def _check_learned_tree(owner, name, tree, state):
    """``2 n_cells_ - 1`` node arrays (checked before they are read), one
    tree over the split features whose cells are its leaves in node order."""
    n_nodes = 2 * state["n_cells_"] - 1
    feature = tree.get("feature") if isinstance(tree, dict) else None
    if not isinstance(feature, np.ndarray) or feature.shape != (n_nodes,):
        raise damaged(owner, f"tree_ is not the {n_nodes} nodes of n_cells_ leaves")
    tree, _ = check_node_arrays(owner, tree, _n_split(state))
    leaves = np.flatnonzero(tree["cell"] >= 0)
    if not np.array_equal(tree["cell"][leaves], np.arange(leaves.shape[0])):
        raise damaged(owner, "the cells are not the leaves in node order")
    return tree


def _check_relations(owner, state):
    """The projection, the scales and the cells agree with each other."""
    comps, mean = state["components_"], state["mean_"]
    n_dir, n_cells = state["n_directions_"], state["n_cells_"]
    n_comp = 0 if comps is None else comps.shape[0]
    if n_dir > n_comp:
        raise damaged(owner, "n_directions_ exceeds the rows of components_")
    if (comps is None) != (mean is None):
        raise damaged(owner, "mean_ and components_ are not set together")
    n_scale = _n_split(state)
    scale = state["scale_"]
    if scale is None or scale.shape != (n_scale,):
        raise damaged(owner, f"scale_ is not {n_scale} spreads")
    # a spread is a normal float64, and not below 2**-60 of the features'
    # magnitude: float64 rows that close together are equal
    floor = np.finfo(np.float64).tiny
    if mean is not None and mean.size:
        floor = max(floor, float(np.max(np.abs(mean))) * 2.0**-60)
    if np.any(scale < floor):
        raise damaged(owner, f"scale_ holds a spread below {floor:.3g}")
    leaves = np.flatnonzero(state["tree_"]["cell"] >= 0)
    if not np.array_equal(state["leaf_nodes_"], leaves):
        raise damaged(owner, "leaf_nodes_ are not the tree's leaves")
    if state["leaf_n_samples_"].shape != (n_cells,):
        raise damaged(owner, "leaf_n_samples_ is not one weight per cell")
    state["leaf_nodes_"] = state["leaf_nodes_"].astype(np.int64)


class CalibrationTreePartitioner(_PartitionerMixin, BaseEstimator):
    """Partition learned where the confidence is miscalibrated differently.

    A regression tree on the partition features whose splits separate rows
    that need different recalibrations. With the confidences (``fit(...,
    confidence=h)``, which every group-conditional calibrator passes) the
    tree is grown on the per-row scores of one global Platt recalibration
    (``criterion="recalibration"``): a split is worth as much as giving each
    side its own intercept and slope would gain in likelihood, to first order
    (the score statistic of model-based recursive partitioning). Without
    confidences it splits where accuracy differs. By default the splits are
    thresholds along two directions of ``X`` learned from the labels, those
    in which the recalibration's intercept and slope change
    (``directions="recalibration"``), rather than along single features.

    Leaves hold at least ``min_samples_leaf`` rows -- by default twice the
    calibrator's points per bin ``b``, so that, after the honest split, every
    leaf has the ``b`` points Thm 3.1 needs for its own binning and no leaf
    falls back.

    Honesty. Thm 3.1 holds for a partition fixed before the labels it bins are
    seen. A calibrator given this partitioner *unfitted* therefore splits its
    calibration rows with :meth:`honest_split`: the tree is grown on a
    ``honest_fraction`` of them and the calibrator bins only the others (with
    the calibrator's ``fit(X, y, groups=question_id)``, whole questions on
    each side, and whole questions in the tree's folds; see :ref:`groups`).
    Fitted on a separate split and passed as ``FrozenEstimator(partitioner)``,
    it is used as is, like the paper's kd-tree on its own 20%.

    Read more in the :ref:`User Guide <partitioners>`.

    Parameters
    ----------
    max_depth : int, default=3
        Maximum depth of the tree; at most ``2**max_depth`` cells.
    min_samples_leaf : int or "auto", default="auto"
        Minimum rows per leaf. ``"auto"``: ``2 * points_per_bin`` when a
        calibrator passes its ``points_per_bin`` to ``fit``, else 100.
    criterion : {"recalibration", "residual"}, default="recalibration"
        ``"recalibration"``: the whitened Platt scores above (differences in
        offset *and* slope of the miscalibration). ``"residual"``: the
        squared error of ``y - h`` (differences in average over- or
        under-confidence only). Without ``confidence`` both split on ``y``.
    honest_fraction : float in (0, 1), default=0.5
        Share of a calibrator's rows used to grow the tree (see Honesty).
    split_alpha : float in (0, 1) or None, default=0.05
        A node is split only where the gain is significant: larger than the
        ``1 - split_alpha / m`` quantile of its null distribution
        (``sigma^2 chi^2_k``, ``k`` target columns, ``m = n_features *
        n_rows`` candidate splits, Bonferroni), as model-based recursive
        partitioning stops. ``None`` splits down to ``max_depth`` and the
        leaf minimum whatever the gain (the better choice when ``max_depth``
        is tuned on held-out rows, which already guards against noise
        splits).
    n_components : int or None, default=None
        An int ``k``: the tree also splits on the top ``k`` principal
        components of ``X`` (weighted, centred, fitted on the rows the tree
        is grown on, without labels). In an embedding the directions along
        which groups of questions differ are rarely single coordinates; the
        leading principal directions may carry them. Capped at the number of
        features. With ``n_components=None`` and ``directions=None`` the
        candidate splits are thresholds of the features of ``X`` themselves,
        the right choice for tabular features with a meaning of their own.
    directions : {"recalibration"} or None, default="recalibration"
        ``"recalibration"``: the tree splits on the projections of ``X``
        onto two *learned* directions, those along which the
        recalibration's intercept and slope change: the ``X`` and ``s X``
        coefficients of a ridge logistic regression of ``y`` on ``[s, X,
        s X]`` (``s`` the clipped logit of the confidence, columns
        standardised, the penalty chosen by 5-fold cross-validated log
        loss), fitted on the rows the tree is grown on. Rows on which the
        model is overconfident then lie at one end of a single direction, a
        question of topic or style that no single coordinate or principal
        direction need carry. The tree is grown on cross-fitted positions
        (each row projected on the directions fitted without its fold), so
        no row is placed by its own label and the significance stop keeps
        its meaning; ``transform`` projects on the directions fitted on all
        rows. With ``n_components=None`` the tree splits on these two
        projections only, else on them and the ``k`` principal components.
        Without confidences: one direction, the ridge regression of ``y`` on
        ``X``. Costs about 30 regularised fits (seconds for 10^5 rows of 32
        features). ``None``: no learned directions (see ``n_components``).
    random_state : int, RandomState instance or None, default=None
        Seeds the honest split, the folds of the direction fit and the
        tree's tie-breaking among features. Inside a calibrator, ``None``
        is replaced by a seed derived from the calibrator's
        ``random_state``, which also draws the honest split.

    Attributes
    ----------
    tree_ : dict of ndarrays
        The fitted tree's node arrays
        (grown by scikit-learn's
        :class:`~sklearn.tree.DecisionTreeRegressor`, kept as plain arrays),
        depth first, root first, named as in scikit-learn's ``Tree`` and
        :class:`KDTreePartitioner`'s ``tree_``: ``"feature"`` (split
        feature, -1 at a leaf), ``"threshold"`` (go left iff value <=
        threshold; NaN at a leaf), ``"children_left"``,
        ``"children_right"`` (child node index, -1 at a leaf), ``"cell"``
        (cell id of a leaf, -1 for internal nodes) and ``"depth"``. The
        thresholds are on the split features divided by ``scale_`` (and
        rounded to float32, as the tree sees them): multiply by
        ``scale_[feature]`` for the units of the features.
    leaf_nodes_ : ndarray of shape (`n_cells_`,)
        Node id (index of the ``tree_`` arrays) of the leaf of each cell.
    n_cells_ : int
        Number of leaves.
    leaf_n_samples_ : ndarray of shape (`n_cells_`,), float64
        Fitted rows (total sample weight) per cell, each ``>=
        min_samples_leaf_`` unless the tree is a single cell.
    min_samples_leaf_ : int
        The resolved minimum leaf size, in rows (total weight).
    components_ : ndarray of shape (n_projections, `n_features_in_`) or None
        With ``directions`` or ``n_components``: the directions the tree
        splits on, the learned ones first (`n_directions_` rows), then the
        principal ones (unit rows, sign fixed so the largest entry is
        positive; a learned direction that could not be fitted -- one
        class, fewer than 5 rows of a class -- is a zero row, never split
        on); ``None`` without.
    n_directions_ : int
        Number of learned directions at the top of ``components_`` (0
        without ``directions``).
    mean_ : ndarray of shape (`n_features_in_`,) or None
        With ``directions`` or ``n_components``: the weighted mean of ``X``
        removed before the projection.
    scale_ : ndarray of shape (n_split_features,)
        Weighted standard deviation of each feature the tree splits on (the
        projections, or the features of ``X``), by which it is divided: the
        partition does not depend on the scale of ``X`` (the tree works in
        float32, where features near 1e150 overflow and spreads below 1e-7
        count as constant).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)

    See Also
    --------
    KDTreePartitioner : the paper's unsupervised partition.
    BetaBinningCalibrator : one binning per cell; falls back to the nearest
        ancestor (:meth:`cell_ancestors`) for small cells.

    Notes
    -----
    Why the Platt score and not the residual ``y - h``: a group that is
    overconfident at high confidence and underconfident at low confidence has
    a mean residual near zero, so a residual tree cannot see it, while its
    score in the slope direction is large. The scores are whitened by the
    global Fisher information so that the intercept and slope directions are
    on one scale (the statistic is invariant to rescaling ``s``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import CalibrationTreePartitioner
    >>> # the tree: overconfident where Z[:, 0] > 0.5, calibrated elsewhere
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.uniform(size=(4000, 2))
    >>> h = rng.uniform(0.3, 1.0, size=4000)
    >>> acc = np.where(Z[:, 0] > 0.5, h - 0.25, h)
    >>> y = (rng.uniform(size=4000) < acc).astype(int)
    >>> part = CalibrationTreePartitioner(max_depth=1, random_state=0)
    >>> part = part.fit(Z, y, confidence=h)
    >>> part.n_cells_
    2
    >>> # the learned intercept direction is (about) the first feature ...
    >>> np.round(part.components_[0], 1)
    array([1. , 0.1])
    >>> # ... and the two cells are (almost) the two halves
    >>> cells = part.apply(Z)
    >>> [round(float(np.mean(Z[cells == c, 0] > 0.5)), 2) for c in range(2)]
    [0.01, 0.97]
    >>> # on the features themselves: a threshold of the first one
    >>> raw = CalibrationTreePartitioner(max_depth=1, directions=None, random_state=0)
    >>> raw = raw.fit(Z, y, confidence=h)
    >>> nodes = raw.tree_  # thresholds on the features / scale_
    >>> int(nodes["feature"][0])
    0
    >>> round(float(nodes["threshold"][0] * raw.scale_[0]), 2)
    0.5
    >>> # calibrated labels: no split is significant, one cell
    >>> y0 = (rng.uniform(size=4000) < h).astype(int)
    >>> CalibrationTreePartitioner(random_state=0).fit(Z, y0, confidence=h).n_cells_
    1
    """

    _parameter_constraints = {
        "max_depth": [Interval(Integral, 0, None, closed="left")],
        "min_samples_leaf": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "criterion": [StrOptions({"recalibration", "residual"})],
        "honest_fraction": [Interval(Real, 0, 1, closed="neither")],
        "split_alpha": [Interval(Real, 0, 1, closed="neither"), None],
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "directions": [StrOptions({"recalibration"}), None],
        "random_state": ["random_state"],
    }

    _state_schema = Schema(
        **FEATURES,
        min_samples_leaf_=Int(low=1),
        # at most what fit makes, checked before any array is read
        n_cells_=Int(low=1, high=_max_cells),
        n_directions_=Int(low=0),
        components_=Array("f", (None, "n_features_in_"), none=True,
                          max_len=lambda s: s["n_features_in_"] + 2),
        mean_=Array("f", ("n_features_in_",), none=True),
        scale_=Array("f", (None,), none=True),
        tree_=Custom(_check_learned_tree),
        leaf_nodes_=Array("i", (None,)),
        leaf_n_samples_=Array("if", (None,), low=0),
        rules=(_check_relations,),
    )  # fmt: skip

    def __init__(
        self,
        max_depth=3,
        *,
        min_samples_leaf="auto",
        criterion="recalibration",
        honest_fraction=0.5,
        split_alpha=0.05,
        n_components=None,
        directions="recalibration",
        random_state=None,
    ):
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.criterion = criterion
        self.honest_fraction = honest_fraction
        self.split_alpha = split_alpha
        self.n_components = n_components
        self.directions = directions
        self.random_state = random_state

    def honest_split(self, n_rows, random_state=None, groups=None):
        """Split ``n_rows`` calibration rows into rows that grow the tree and
        rows that the calibrator bins (see Honesty).

        Parameters
        ----------
        n_rows : int
        random_state : int, RandomState instance or None, default=None
            The calibrator's; ``None`` uses this partitioner's.
        groups : array-like of shape (n_rows,), default=None
            The rows' question ids: every question goes whole to one side
            (the questions drawn in one random order, cut where ``grow``
            reaches about ``honest_fraction`` of the rows).

        Returns
        -------
        grow, estimate : ndarray of int64
            Sorted disjoint row positions; ``grow`` holds
            ``round(honest_fraction * n_rows)`` of them (without ``groups``;
            with them, the nearest count a cut between questions gives).
        """
        rng = check_random_state(
            self.random_state if random_state is None else random_state
        )
        if groups is not None:
            codes = check_groups(groups, n_rows, who=type(self).__name__)
            return group_split(
                codes,
                self.honest_fraction,
                rng,
                who=type(self).__name__,
                what="the honest split (grow the tree on some questions, bin "
                "the others)",
                fix="Give rows of more questions, or pass a partitioner fitted "
                "on other rows as FrozenEstimator(partitioner).",
            )
        perm = rng.permutation(n_rows)
        cut = int(round(self.honest_fraction * n_rows))
        return np.sort(perm[:cut]), np.sort(perm[cut:])

    @_fit_context(prefer_skip_nested_validation=True)
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
        """Grow the tree on the partition features ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Partition features (e.g. an embedding of question + answer).
        y : array-like of shape (n_samples,)
            1 if the answer was correct, else 0.
        confidence : array-like of shape (n_samples,), default=None
            The confidence ``h`` of each row, in ``[0, 1]``; calibrators pass
            it. Without it the tree splits where the mean of ``y`` (the
            accuracy) differs, and any numeric ``y`` is accepted.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative frequency weights.
        points_per_bin : int, default=None
            The calibrator's ``b``; ``min_samples_leaf="auto"`` becomes
            ``2 * b``.
        groups : array-like of shape (n_samples,), default=None
            The rows' question ids (several answers per question): the
            folds of the learned directions keep every question in one fold
            (scikit-learn's ``StratifiedGroupKFold``). Calibrators pass
            theirs (``fit(X, y, groups=g)``).

        Returns
        -------
        self : CalibrationTreePartitioner
        """
        if y is None:
            raise ValueError(
                "CalibrationTreePartitioner requires y to be passed, but the "
                "target y is None: fit(X, y, confidence=h) needs the "
                "correctness labels y."
            )
        X, y = validate_numeric(self, X, y, dtype=np.float64, y_numeric=True)
        if confidence is not None:
            y = check_binary_labels(y, name="y")
        y = np.asarray(y, dtype=np.float64)
        w = check_weights(sample_weight, X.shape[0])
        groups = check_groups(groups, X.shape[0], who=type(self).__name__)
        if self.min_samples_leaf == "auto":
            leaf = 2 * int(points_per_bin) if points_per_bin else DEFAULT_MIN_LEAF
        else:
            leaf = int(self.min_samples_leaf)
        self.min_samples_leaf_ = leaf
        if confidence is None:
            target = (y - np.average(y, weights=w)).reshape(-1, 1)
        else:
            h = check_confidence(confidence, name="confidence")
            if h.shape[0] != X.shape[0]:
                raise ValueError(
                    f"confidence has {h.shape[0]} rows but X has {X.shape[0]}; "
                    "pass one confidence per row."
                )
            if self.criterion == "residual":
                target = (y - h).reshape(-1, 1)
            else:
                target = self._recalibration_scores(h, y, w)
        total = float(np.sum(w))
        self.components_, self.mean_, self.n_directions_ = None, None, 0
        parts, cross_fitted = [], None
        if self.directions is not None:
            dirs, cross_fitted = recalibration_directions(
                X, y, w, None if confidence is None else h, self.random_state, groups
            )
            parts.append(dirs)
            self.n_directions_ = dirs.shape[0]
        if self.n_components is not None:
            parts.append(principal_axes(X, self.n_components, w)[1])
        if parts:
            e = unit_exponent(X)
            self.mean_ = np.ldexp((w @ np.ldexp(X, -e)) / total, e)
            self.components_ = np.ascontiguousarray(np.vstack(parts))
        # every feature the tree sees is divided by its spread: scikit-learn's
        # tree works in float32 and treats features spanning less than 1e-7
        # as constant, so unscaled features near 1e150 overflowed and near
        # 1e-30 could not be split
        self.scale_ = None
        X = self._project(X)
        self.scale_ = column_spread(X[w > 0], w[w > 0])
        X = X / self.scale_
        if cross_fitted is not None:  # grown on the cross-fitted positions
            X[:, : self.n_directions_] = (
                cross_fitted / self.scale_[: self.n_directions_]
            )
        # the minimum is on the weight (a frequency weight is a repeated row)
        tree = DecisionTreeRegressor(
            max_depth=max(self.max_depth, 1),
            min_weight_fraction_leaf=min(leaf / total, 0.5),
            min_impurity_decrease=self._min_decrease(target, w, X.shape[1]),
            random_state=self.random_state,
        )
        if self.max_depth == 0 or total < 2 * leaf:
            # a single cell: the root is the only leaf
            tree.set_params(max_depth=1, min_weight_fraction_leaf=0.5)
            target = np.zeros_like(target)  # nothing to split on
        keep = w > 0  # a zero weight drops the row, thresholds included
        tree.fit(X[keep], target[keep], sample_weight=w[keep])
        # kept as plain node arrays, not scikit-learn's Tree: a model file
        # can then be checked before use (_check_fitted_state)
        self.tree_ = _node_arrays(tree.tree_)
        self.leaf_nodes_ = np.flatnonzero(self.tree_["cell"] >= 0).astype(np.int64)
        self.n_cells_ = int(self.leaf_nodes_.shape[0])
        self.leaf_n_samples_ = np.bincount(
            self._walk(X), weights=w, minlength=self.n_cells_
        )
        return self

    def _recalibration_scores(self, h, y, w):
        """:func:`recalibration_scores` of the rows the tree is grown on (a
        method: a caller growing many trees on the same rows, as ``betacal
        fit --tune``'s candidates do, computes them once)."""
        return recalibration_scores(h, y, w)


    def _project(self, X):
        """The features the tree splits on: ``X`` itself or its coordinates
        on ``components_``, each divided by ``scale_``."""
        if self.components_ is not None:
            X = (X - self.mean_) @ self.components_.T
        return X if self.scale_ is None else X / self.scale_

    def _min_decrease(self, target, w, n_features):
        """sklearn's ``min_impurity_decrease`` for a significant split.

        A split's gain ``sum_c ||S_c||^2 / W_c - ||S||^2 / W`` (``S``: sums
        of the ``k`` target columns) is, for one fixed split of rows with no
        difference, about ``sigma^2 chi^2_k`` (``sigma^2 = 1`` for the
        whitened scores). A split must beat the ``1 - split_alpha / m``
        quantile, ``m = n_features * n_rows`` candidate splits (Bonferroni,
        as model-based recursive partitioning corrects its tests). sklearn
        measures the decrease as ``gain / (k W)``.

        A learned direction was fitted to the same labels; the tree is
        therefore grown on cross-fitted positions along it (no row placed by
        a direction fitted on its own label), for which the fixed-split null
        holds again: a calibrated sample stays one cell (tested), where the
        in-sample positions split it in 32 dimensions every time.
        """
        if self.split_alpha is None:
            return 0.0
        from scipy.stats import chi2

        k = target.shape[1]
        total = float(np.sum(w))
        sigma2 = _score_variance(target, w)
        m = max(n_features * int(np.count_nonzero(w)), 1)
        gain = chi2.isf(self.split_alpha / m, df=k) * sigma2
        return float(gain / (k * total))

    def apply(self, X):
        """Cell id of every row (leaves numbered ``0 .. n_cells_ - 1`` in node order).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        cells : ndarray of shape (n_samples,), int64
            Every row reaches a leaf: no ``-1``.
        """
        check_is_fitted(self)
        X = validate_numeric(self, X, dtype=np.float64, reset=False)
        return self._walk(self._project(X))

    def _walk(self, Z):
        """Cell of every row of the split features ``Z`` (``_project``'s).

        As scikit-learn's tree, which grew it: ``Z`` in float32, left iff
        ``value <= threshold`` compared in float64.
        """
        with np.errstate(over="ignore", invalid="ignore"):
            Z = Z.astype(np.float32)
        if not np.all(np.isfinite(Z)):
            raise ValueError(
                "CalibrationTreePartitioner: some rows are too large for the "
                "tree (their projections or scaled features overflow float32, "
                "beyond 3.4e38); rescale the partition features."
            )
        # the kd-tree's walk of the plain node arrays (no leaf bounds)
        cells = route_kdtree(Z, prepare_node_walk(self.tree_))
        return cells.astype(np.int64, copy=False)

    def cell_ancestors(self):
        """Ancestor nodes of every cell, nearest first (for fallback).

        Returns
        -------
        ancestors : list of ndarray of int64, one per cell id
            Node ids of the leaf's parent, its parent, ... up to the root
            (``0``, last). Node ids index the tree's node arrays
            (``tree_``); cell ids and node ids are different numbers.
        """
        check_is_fitted(self)
        t = self.tree_
        return node_ancestors(t["children_left"], t["children_right"], self.leaf_nodes_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


def _score_variance(target, w):
    """Weighted variance of the target columns, averaged over them
    (``sigma^2`` of the null distributions; about 1 for whitened scores)."""
    mean = np.average(target, axis=0, weights=w)
    return float(np.average((target - mean) ** 2, weights=w, axis=0).mean())


def _node_arrays(nodes):
    """``tree_`` (keys ``_base.NODE_KEYS``) from a fitted scikit-learn
    ``Tree``: leaves numbered as cells in node order, the depths walked."""
    left = np.asarray(nodes.children_left, dtype=np.intp)
    right = np.asarray(nodes.children_right, dtype=np.intp)
    leaf = left == -1
    depth = tree_depths("CalibrationTreePartitioner", left, right)
    cell = np.full(left.shape[0], -1, dtype=np.intp)
    cell[leaf] = np.arange(int(np.count_nonzero(leaf)))
    return {
        "feature": np.where(leaf, -1, np.asarray(nodes.feature, dtype=np.intp)),
        "threshold": np.where(leaf, np.nan, np.asarray(nodes.threshold, np.float64)),
        "children_left": left,
        "children_right": right,
        "cell": cell,
        "depth": depth,
    }
