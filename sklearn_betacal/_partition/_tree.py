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
from .._state import FEATURES, Array, Custom, Float, Int, Schema
from .._validation import (
    MAX_COUNT_TOTAL,
    check_binary_labels,
    check_confidence,
    check_weights,
)
from . import _merge
from ._base import (
    _PartitionerMixin,
    check_node_arrays,
    damaged,
    node_ancestors,
    tree_depths,
    validate_numeric,
)

#: Level of the merge stop when the heterogeneity test is off
#: (``split_alpha=None``).
MERGE_ALPHA = 0.05
#: Fine cells of ``strategy="merge"`` hold about this many leaf minima
#: (``4 * min_samples_leaf_``, i.e. ``8 b`` rows of the honest half): smaller
#: ones estimate their recalibration too noisily to be merged right (on the
#: planted-group benchmark 1, 2, 4, 8 leaves recovered 0.76, 0.78, 0.84,
#: 0.86 of the oracle's gain with 200, 100, 50, 25 fine cells), larger ones
#: leave too few cells for a few thousand rows.
FINE_LEAVES = 4
#: ... but at least this many fine cells where the leaf minimum allows.
MIN_FINE_CELLS = 8
#: The k-means of the fine cells is fitted on at most this many rows per
#: centre (a uniform draw of the weighted rows, their weights kept), then
#: every row goes to its nearest centre: its cost stops growing with the
#: rows. On all rows, 128 and 64 rows per centre the planted groups kept
#: 0.85, 0.84, 0.83 of the oracle's gain and calibrated null samples split
#: 2, 1, 3 of 60 times; the real sets moved within their seed-to-seed spread
#: (``benchmarks/results/learned_cost.md``). ``None``: all rows.
KMEANS_ROWS_PER_CELL = 64
#: ... but never on fewer rows than this: below it the k-means is cheap and
#: sees every row (small fits, the paper's experiment, ``--tune``'s folds:
#: the cells of every fit of at most this many grown rows are as before).
KMEANS_MIN_ROWS = 4096
#: ``directions="recalibration"`` with ``strategy="merge"``: the learned
#: directions' positions together spread this share of the features' total.
DIRECTION_SHARE = 1.0
#: The merge stop's level: a merge is refused when it would lose more than
#: the ``1 - alpha`` quantile of ``sigma^2 chi^2_2``, ``alpha = split_alpha``.
#: The heterogeneity test before it already holds the size (a calibrated
#: sample stays one cell), so the stop is set for power: Bonferroni over the
#: ``K`` fine cells (``alpha = split_alpha / K``, the rule before; ``True``
#: here restores it, for side-by-side benchmarks) merged real groups away.
MERGE_STOP_PER_CELL = False
#: The heterogeneity test of the fine cells is Rao's score test with each
#: cell's own information (``_merge.score_heterogeneity_statistic``): on
#: calibrated planted samples the pooled-variance test it replaced (``False``
#: here, for side-by-side benchmarks) rejected too often in the tail
#: (``benchmarks/results/split_test.md``).
SCORE_SPLIT_TEST = True
#: The merges' costs with each cell's own information too (the score
#: statistic lost, ``_merge.merge_cells(..., V=...)``), a switch for
#: side-by-side benchmarks, off: it gained on planted groups (0.81 -> 0.84 of
#: the oracle's gain) and TriviaQA (verbal 0.38 -> 0.83) but lost on
#: influences token and log loss on three sets
#: (``benchmarks/results/score_merge.md``).
SCORE_MERGE = False

#: Default minimum leaf size when no ``points_per_bin`` reaches the
#: partitioner: twice a typical ``b = 50``.
DEFAULT_MIN_LEAF = 100


def recalibration_scores(h, y, w, *, return_info=False):
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

    With ``return_info=True`` also returns ``Q_i = sqrt(p_i (1 - p_i)) [1,
    s_i] L``: ``sum_{i in C} w_i Q_i Q_i^T`` is the Fisher information of
    ``C``'s own intercept and slope in the whitened coordinates (the
    variance of ``C``'s score sum under the global recalibration; the
    identity times ``W`` over all rows).
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
    G = ((y - p)[:, None] * x) @ chol
    if not return_info:
        return G
    return G, (np.sqrt(p * (1 - p))[:, None] * x) @ chol


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


def _merging(state):
    return state["strategy"] == "merge"


def _growing(state):
    return state["strategy"] == "tree"


def _max_cells(state):
    """What fit can produce: at most ``MAX_FINE_CELLS`` merged cells, or
    ``2**max_depth`` leaves (a single leaf at depth 0)."""
    if _merging(state):
        return _merge.MAX_FINE_CELLS
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
    """The projection, the scales and the cells agree with each other and
    with ``strategy``."""
    d, comps, mean = state["n_features_in_"], state["components_"], state["mean_"]
    n_dir, n_cells = state["n_directions_"], state["n_cells_"]
    n_comp = 0 if comps is None else comps.shape[0]
    if _merging(state):
        if n_dir != n_comp:
            raise damaged(owner, "n_directions_ is not the rows of components_")
        if mean is None:
            raise damaged(owner, "mean_ is missing")
        n_scale = d + n_dir
    else:
        if n_dir > n_comp:
            raise damaged(owner, "n_directions_ exceeds the rows of components_")
        if (comps is None) != (mean is None):
            raise damaged(owner, "mean_ and components_ are not set together")
        n_scale = _n_split(state)
    scale = state["scale_"]
    if scale is None or scale.shape != (n_scale,):
        raise damaged(owner, f"scale_ is not {n_scale} spreads")
    # a spread is a normal float64, and not below 2**-60 of the features'
    # magnitude: float64 rows that close together are equal (1e-308 moved
    # every row to the first fine cell)
    floor = np.finfo(np.float64).tiny
    if mean is not None and mean.size:
        floor = max(floor, float(np.max(np.abs(mean))) * 2.0**-60)
    if np.any(scale < floor):
        raise damaged(owner, f"scale_ holds a spread below {floor:.3g}")
    if _merging(state):
        centers, fine = state["centers_"], state["fine_cell_"]
        if centers.shape[1] != n_scale or fine.shape != (centers.shape[0],):
            raise damaged(
                owner,
                f"centers_ and fine_cell_ have shapes {centers.shape}, "
                f"{fine.shape}: not one row of {n_scale} per fine cell",
            )
        if not np.array_equal(np.unique(fine), np.arange(n_cells)):
            raise damaged(
                owner, f"fine_cell_ does not use the cells 0 .. {n_cells - 1}"
            )
        if state["cell_parent_"].shape != (2 * n_cells - 1,) or not (
            _merge.check_hierarchy(state["cell_parent_"], n_cells)
        ):
            raise damaged(owner, "cell_parent_ is not a merge hierarchy of the cells")
        leaves = np.arange(n_cells)
    else:
        leaves = np.flatnonzero(state["tree_"]["cell"] >= 0)
    if not np.array_equal(state["leaf_nodes_"], leaves):
        raise damaged(owner, "leaf_nodes_ are not the tree's leaves")
    if state["leaf_n_samples_"].shape != (n_cells,):
        raise damaged(owner, "leaf_n_samples_ is not one weight per cell")
    state["leaf_nodes_"] = state["leaf_nodes_"].astype(np.int64)
    for key in ("fine_cell_", "cell_parent_"):
        if state.get(key) is not None:
            state[key] = state[key].astype(np.int64)


class CalibrationTreePartitioner(_PartitionerMixin, BaseEstimator):
    """Partition learned where the confidence is miscalibrated differently.

    Two strategies read one per-row statistic, the score of a global Platt
    recalibration (below). The default, ``strategy="merge"``, cuts the
    partition features into fine cells (k-means, about ``8 b`` rows each,
    labels unseen) and merges the cells whose recalibrations do not differ
    significantly (Ward's criterion on the mean scores), after testing that
    the fine cells differ at all (a ``chi^2`` test at ``split_alpha``; a
    calibrated sample stays one cell). It finds many groups of any shape --
    topics of questions in an embedding -- where a tree of depth 3 holds at
    most 8 half-spaces. ``strategy="tree"`` grows a regression tree instead,
    whose splits separate rows that need different recalibrations. With the
    confidences (``fit(...,
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
        ``strategy="tree"``: maximum depth of the tree; at most
        ``2**max_depth`` cells. ``strategy="merge"``: only ``0`` (one cell)
        counts; the number of cells is found by the merge.
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
    directions : {"auto", "recalibration"} or None, default="auto"
        ``"auto"``: ``"recalibration"`` for ``strategy="tree"``, ``None``
        for ``strategy="merge"`` (on 16 planted groups in 32 dimensions the
        two learned directions as extra k-means coordinates recovered 0.67
        of the known groups' gain instead of 0.84, at three times the cost).
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
    strategy : {"merge", "tree"}, default="merge"
        ``"merge"``: fine cells merged by their recalibration. The fine cells
        are the k-means clusters (scikit-learn's
        :class:`~sklearn.cluster.KMeans`, weighted, one initialisation,
        fitted on a uniform draw of at most 64 rows per cluster but at
        least 4,096 rows, every row then sent to its nearest centre) of
        the features, centred and divided by one common spread, about
        ``4 * min_samples_leaf`` rows each (at least 8 cells where
        ``min_samples_leaf`` allows, at most 256). With ``K`` of them, the
        score sums ``S_c`` and Fisher informations ``I_c`` give Rao's score
        statistic of cell-own recalibrations ``sum_c S_c^T I_c^{-1} S_c -
        S^T I^{-1} S``, about ``chi^2_{k (K - 1)}`` for a calibrated sample
        (the cells do not depend on the labels; with ``criterion="residual"``
        ``I_c = sum h (1 - h)``, without confidences the pooled variance of
        ``y``); unless it exceeds the ``1 - split_alpha`` quantile the
        partition is one cell (``split_pvalue_``). Otherwise the cheapest
        pair of cells is merged -- merging ``a`` and ``b`` loses ``W_a W_b /
        (W_a + W_b) ||S_a / W_a - S_b / W_b||^2`` -- until every merge
        would lose more than the ``1 - split_alpha`` quantile of
        ``sigma^2 chi^2_k`` (not corrected for the ``K`` cells: the test
        before it holds the size, the stop is set for power); a cell below
        ``min_samples_leaf`` is always
        merged with its cheapest partner. The merges after the stop form the
        hierarchy of :meth:`cell_ancestors`. ``"tree"``: the regression tree
        described by ``max_depth``, ``n_components`` and ``directions``.
    random_state : int, RandomState instance or None, default=None
        Seeds the honest split, the k-means of the fine cells, the folds of
        the direction fit and the
        tree's tie-breaking among features. Inside a calibrator, ``None``
        is replaced by a seed derived from the calibrator's
        ``random_state``, which also draws the honest split.

    Attributes
    ----------
    tree_ : dict of ndarrays or None
        ``None`` for ``strategy="merge"``. The fitted tree's node arrays
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
        Node id (index of the ``tree_`` arrays) of the leaf of each cell;
        ``0 .. n_cells_ - 1`` for ``strategy="merge"`` (the first nodes of
        ``cell_parent_``).
    centers_ : ndarray of shape (n_fine_cells, n_coordinates) or None
        ``strategy="merge"``: the fine cells' k-means centres, in the
        coordinates ``(X - mean_) / scale_`` (then the learned directions'
        positions, with ``directions="recalibration"``); a row belongs to
        the fine cell of its nearest centre. ``None`` for a tree.
    fine_cell_ : ndarray of shape (n_fine_cells,), int64, or None
        ``strategy="merge"``: the cell of every fine cell.
    cell_parent_ : ndarray of shape (2 * `n_cells_` - 1,), int64, or None
        ``strategy="merge"``: the merges above the cells, as parent node ids
        (nodes ``0 .. n_cells_ - 1`` are the cells, the root is last and has
        ``-1``); a cell too small for its own binning falls back to its
        nearest merge.
    split_pvalue_ : float or None
        ``strategy="merge"``: the p-value of the test that the fine cells
        differ (1.0 where there were fewer than two); ``None`` for a tree.
    n_cells_ : int
        Number of leaves.
    leaf_n_samples_ : ndarray of shape (`n_cells_`,), float64
        Fitted rows (total sample weight) per cell, each ``>=
        min_samples_leaf_`` unless the tree is a single cell.
    min_samples_leaf_ : int
        The resolved minimum leaf size, in rows (total weight).
    components_ : ndarray of shape (n_projections, `n_features_in_`) or None
        With ``directions`` or ``n_components`` (of a tree; of the merge only
        the learned directions): the directions the tree
        splits on, the learned ones first (`n_directions_` rows), then the
        principal ones (unit rows, sign fixed so the largest entry is
        positive; a learned direction that could not be fitted -- one
        class, fewer than 5 rows of a class -- is a zero row, never split
        on); ``None`` without.
    n_directions_ : int
        Number of learned directions at the top of ``components_`` (0
        without ``directions``).
    mean_ : ndarray of shape (`n_features_in_`,) or None
        With ``directions`` or ``n_components``, and always for
        ``strategy="merge"``: the weighted mean of ``X`` removed before the
        projection.
    scale_ : ndarray of shape (n_split_features,)
        Weighted standard deviation of each feature the tree splits on (the
        projections, or the features of ``X``), by which it is divided: the
        partition does not depend on the scale of ``X`` (the tree works in
        float32, where features near 1e150 overflow and spreads below 1e-7
        count as constant). ``strategy="merge"``: the common spread of the
        features (repeated ``n_features_in_`` times), then the scale of each
        learned direction's positions.
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
    >>> rng = np.random.default_rng(0)
    >>> # four clusters; the model is overconfident in two opposite corners
    >>> centres = np.array([[0, 0], [0, 6], [6, 0], [6, 6]])
    >>> group = rng.integers(0, 4, size=4000)
    >>> Z = centres[group] + rng.normal(size=(4000, 2))
    >>> h = rng.uniform(0.3, 1.0, size=4000)
    >>> over = np.isin(group, [0, 3])
    >>> y = (rng.uniform(size=4000) < np.where(over, h - 0.25, h)).astype(int)
    >>> part = CalibrationTreePartitioner(random_state=0).fit(Z, y, confidence=h)
    >>> part.n_cells_, part.centers_.shape  # 10 fine cells merged into 3
    (3, (10, 2))
    >>> cells = part.apply(Z)  # no half-space holds the two corners
    >>> # every cell pure; the stop is set for power, so the calibrated
    >>> # corners may keep two cells (the overconfident ones are one)
    >>> [round(float(np.mean(over[cells == c])), 2) for c in range(3)]
    [0.0, 1.0, 0.0]
    >>> # calibrated labels: the fine cells do not differ, one cell
    >>> y0 = (rng.uniform(size=4000) < h).astype(int)
    >>> CalibrationTreePartitioner(random_state=0).fit(Z, y0, confidence=h).n_cells_
    1
    >>> # the tree: overconfident where Z[:, 0] > 0.5, calibrated elsewhere
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.uniform(size=(4000, 2))
    >>> h = rng.uniform(0.3, 1.0, size=4000)
    >>> acc = np.where(Z[:, 0] > 0.5, h - 0.25, h)
    >>> y = (rng.uniform(size=4000) < acc).astype(int)
    >>> part = CalibrationTreePartitioner(max_depth=1, strategy="tree", random_state=0)
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
    >>> raw = CalibrationTreePartitioner(
    ...     max_depth=1, directions=None, strategy="tree", random_state=0
    ... )
    >>> raw = raw.fit(Z, y, confidence=h)
    >>> nodes = raw.tree_  # thresholds on the features / scale_
    >>> int(nodes["feature"][0])
    0
    >>> round(float(nodes["threshold"][0] * raw.scale_[0]), 2)
    0.5
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
        "directions": [StrOptions({"recalibration", "auto"}), None],
        "strategy": [StrOptions({"merge", "tree"})],
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
        tree_=Custom(_check_learned_tree, when=_growing, kept=True),
        centers_=Array("f", (None, None), when=_merging, kept=True,
                       max_len=_merge.MAX_FINE_CELLS),
        fine_cell_=Array("i", (None,), when=_merging, kept=True,
                         max_len=_merge.MAX_FINE_CELLS),
        cell_parent_=Array("i", (None,), when=_merging, kept=True),
        split_pvalue_=Float(0, 1, what="a p-value", when=_merging, kept=True),
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
        directions="auto",
        strategy="merge",
        random_state=None,
    ):
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.criterion = criterion
        self.honest_fraction = honest_fraction
        self.split_alpha = split_alpha
        self.n_components = n_components
        self.directions = directions
        self.strategy = strategy
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
        # info: per row, Q with sum_C w Q Q^T the variance of a set C's
        # target sum on a sample that one recalibration fits (the merge's
        # heterogeneity test reads it; None: the target's pooled variance)
        info = None
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
                info = np.sqrt(h * (1 - h)).reshape(-1, 1)
            else:
                target, info = self._recalibration_scores(h, y, w)
        total = float(np.sum(w))
        if self.strategy == "merge":
            return self._fit_merge(
                X,
                target,
                w,
                leaf,
                total,
                y,
                None if confidence is None else h,
                info,
                groups=groups,
            )
        self.centers_ = self.fine_cell_ = self.cell_parent_ = None
        self.split_pvalue_ = None
        self.components_, self.mean_, self.n_directions_ = None, None, 0
        parts, cross_fitted = [], None
        if self.directions is not None:  # "auto" is "recalibration" here
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
        """:func:`recalibration_scores` of the rows the tree is grown on, with
        their information rows (a method: a caller growing many trees on the
        same rows, as ``betacal fit --tune``'s candidates do, computes them
        once)."""
        return recalibration_scores(h, y, w, return_info=True)

    def _fit_merge(self, X, target, w, leaf, total, y, h, info=None, groups=None):
        """``strategy="merge"``: fine k-means cells merged by their
        recalibration (``_merge``); sets the fitted state."""
        from scipy.stats import chi2
        from sklearn.cluster import KMeans

        n, d = X.shape
        keep = w > 0
        e = unit_exponent(X)  # computed on X * 2**-e: no overflow
        U = np.ldexp(X, -e)
        mean = (w @ U) / total
        U -= mean  # centred in place: one array of the rows' size, not three
        spread = float(np.sqrt(np.mean((w @ U**2) / total)))
        if not (np.isfinite(spread) and spread > 0):
            spread = 1.0
        self.tree_, self.components_, self.n_directions_ = None, None, 0
        self.mean_ = np.ldexp(mean, e)
        self.scale_ = np.full(d, np.ldexp(spread, e))
        Xs = U
        Xs /= spread
        if self.directions == "recalibration":
            # the learned recalibration directions as extra coordinates, on
            # one scale with the features: together as much spread as all d
            # features (cross-fitted positions, as the tree is grown on)
            dirs, cross = recalibration_directions(
                X, y, w, h, self.random_state, groups
            )
            dspread = column_spread(cross[keep], w[keep]) / np.sqrt(
                DIRECTION_SHARE * d / dirs.shape[0]
            )
            self.components_, self.n_directions_ = dirs, int(dirs.shape[0])
            self.scale_ = np.concatenate([self.scale_, dspread])
            Xs = np.column_stack([Xs, cross / dspread])
        d = Xs.shape[1]
        # about FINE_LEAVES leaf minima per fine cell, but at least
        # MIN_FINE_CELLS where the leaf minimum allows (a few hundred rows)
        n_fine = max(
            int(total // (FINE_LEAVES * leaf)), min(int(total // leaf), MIN_FINE_CELLS)
        )
        n_fine = _merge.distinct_rows_upto(
            Xs if keep.all() else Xs[keep], min(n_fine, _merge.MAX_FINE_CELLS)
        )
        self.split_pvalue_ = 1.0
        if self.max_depth == 0 or n_fine < 2:
            self.centers_ = np.zeros((1, d))
            fine = np.zeros(n, dtype=np.int64)
            self.fine_cell_ = np.zeros(1, dtype=np.int64)
            self.cell_parent_ = np.full(1, -1, dtype=np.int64)
        else:
            seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
            # the k-means on a draw of the weighted rows (KMEANS_ROWS_PER_CELL;
            # zero weight is drop, but a row of weight 2 and two copies of it
            # are drawn differently once the draw applies)
            rows = np.flatnonzero(keep)
            if KMEANS_ROWS_PER_CELL is not None:
                m = max(KMEANS_MIN_ROWS, KMEANS_ROWS_PER_CELL * n_fine)
                if rows.shape[0] > m:
                    rng = np.random.RandomState(seed)
                    draw = rng.choice(rows.shape[0], m, replace=False)
                    rows = rows[np.sort(draw)]
            km = KMeans(n_fine, n_init=1, random_state=seed)
            km.fit(Xs[rows], sample_weight=w[rows])
            self.centers_ = np.ascontiguousarray(km.cluster_centers_, dtype=np.float64)
            fine = _merge.nearest_center(Xs, self.centers_)
            k = target.shape[1]
            S = _cell_sums(fine, target * w[:, None], n_fine)
            W = np.bincount(fine, weights=w, minlength=n_fine)
            sigma2 = _score_variance(target, w)
            V = None
            if SCORE_SPLIT_TEST and info is not None:
                # per fine cell the variance of its score sum, sum_i w_i Q_i Q_i^T
                qq = (info * w[:, None])[:, :, None] * info[:, None, :]
                V = _cell_sums(fine, qq.reshape(n, k * k), n_fine).reshape(n_fine, k, k)
                stat, df = _merge.score_heterogeneity_statistic(S, V)
                self.split_pvalue_ = float(chi2.sf(stat, df)) if df > 0 else 1.0
            else:  # the test before session 13 (side-by-side benchmarks)
                stat, n_used = _merge.heterogeneity_statistic(S, W)
                df = k * max(n_used - 1, 1)
                self.split_pvalue_ = (
                    float(chi2.sf(stat / sigma2, df)) if sigma2 > 0 else 1.0
                )
            if self.split_alpha is not None and self.split_pvalue_ > self.split_alpha:
                self.fine_cell_ = np.zeros(n_fine, dtype=np.int64)
                self.cell_parent_ = np.full(1, -1, dtype=np.int64)
            else:
                alpha = MERGE_ALPHA if self.split_alpha is None else self.split_alpha
                if MERGE_STOP_PER_CELL:  # the stop before session 7
                    alpha = alpha / n_fine
                if SCORE_MERGE and V is not None:
                    self.fine_cell_, self.cell_parent_ = _merge.merge_cells(
                        S, W, min_weight=leaf, threshold=chi2.isf(alpha, k), V=V
                    )
                else:
                    threshold = sigma2 * chi2.isf(alpha, k)
                    self.fine_cell_, self.cell_parent_ = _merge.merge_cells(
                        S, W, min_weight=leaf, threshold=threshold
                    )
        self.n_cells_ = int(self.fine_cell_.max()) + 1
        self.leaf_nodes_ = np.arange(self.n_cells_, dtype=np.int64)
        cells = self.fine_cell_[fine]
        self.leaf_n_samples_ = np.bincount(cells, weights=w, minlength=self.n_cells_)
        return self

    def _merge_coordinates(self, X):
        """``strategy="merge"``: the coordinates of the fine cells' centres
        (the scaled features, then the scaled learned-direction positions)."""
        d = self.n_features_in_
        Xc = X - self.mean_
        if self.components_ is None:
            Xc /= self.scale_[:d]  # in place: the same numbers, one array
            return Xc
        Xs = Xc / self.scale_[:d]
        return np.column_stack([Xs, (Xc @ self.components_.T) / self.scale_[d:]])

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
        if self.tree_ is None:  # strategy="merge": the nearest fine cell's cell
            Xs = self._merge_coordinates(X)
            if not np.all(np.isfinite(Xs)):
                raise ValueError(
                    "CalibrationTreePartitioner: some rows are too large for "
                    "the fine cells (their scaled features overflow); rescale "
                    "the partition features."
                )
            return self.fine_cell_[_merge.nearest_center(Xs, self.centers_)]
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
        if t is None:  # strategy="merge": the merges above the cells
            return _merge.cell_chains(self.cell_parent_, self.n_cells_)
        return node_ancestors(t["children_left"], t["children_right"], self.leaf_nodes_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


def _cell_sums(cell, values, n_cells):
    """Per cell the sum of each column of ``values`` (rows in row order, as
    ``np.add.at`` sums them: the same bits)."""
    return np.column_stack(
        [np.bincount(cell, weights=col, minlength=n_cells) for col in values.T]
    )


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
