# SPDX-License-Identifier: MIT
"""CalibrationTreePartitioner(strategy="merge"), the default (issue 21)."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_betacal import (
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    GroupColumnPartitioner,
    UMDBinner,
)
from sklearn_betacal._partition._merge import (
    check_hierarchy,
    distinct_rows_upto,
    merge_cells,
    nearest_center,
)


def _blobs(seed, *, n_groups=8, size=1500, dim=8, null=False):
    """Gaussian blobs in ``dim`` dimensions, each with its own intercept and
    slope of miscalibration on the logit (``null``: calibrated everywhere);
    returns ``(h, Z, group, p_true, y)``."""
    rng = np.random.default_rng(seed)
    C = rng.normal(size=(n_groups, dim))
    C *= 4.0 / np.linalg.norm(C, axis=1, keepdims=True)
    a = np.zeros(n_groups) if null else rng.normal(0, 0.8, n_groups)
    s = np.ones(n_groups) if null else np.exp(rng.normal(0, 0.4, n_groups))
    g = np.repeat(np.arange(n_groups), size)
    Z = C[g] + rng.normal(size=(g.size, dim))
    logit = rng.normal(0.8, 1.2, g.size)
    h = 1 / (1 + np.exp(-logit))
    p = 1 / (1 + np.exp(-(a[g] + s[g] * logit)))
    y = (rng.uniform(size=g.size) < p).astype(int)
    return h, Z, g, p, y


def _true_ce(f, p, g):
    """CE against the true probabilities, per (group, predicted value)."""
    key = np.round(f, 12)
    _, inv = np.unique(np.column_stack([g, key]), axis=0, return_inverse=True)
    inv = inv.ravel()
    n = np.bincount(inv)
    gap = np.bincount(inv, p) / n - np.bincount(inv, f) / n
    return float(np.sum(n * np.abs(gap)) / f.size)


def test_merge_recovers_most_of_the_known_groups_gain():
    """8 planted groups, 40 b calibration rows each: the default gets >= 0.6 of
    what the true groups give over plain UMD; the depth-3 tree (the default
    before) got 0.27."""
    h, Z, g, p, y = _blobs(0)
    idx = np.random.default_rng(1).permutation(h.size)
    fit, test = idx[: 2 * h.size // 3], idx[2 * h.size // 3 :]
    X, b = np.column_stack([h, Z]), 25

    def ce(est, cols):
        est.fit(cols[fit], y[fit])
        return _true_ce(est.predict_proba(cols[test])[:, 1], p[test], g[test])

    umd = ce(UMDBinner(points_per_bin=b, random_state=0), h)
    oracle = ce(
        BetaBinningCalibrator(
            GroupColumnPartitioner(0), points_per_bin=b, random_state=0
        ),
        np.column_stack([h, g]),
    )

    def share(**kw):
        part = CalibrationTreePartitioner(**kw)
        bb = BetaBinningCalibrator(part, points_per_bin=b, random_state=0)
        return (umd - ce(bb, X)) / (umd - oracle)

    assert share() >= 0.6
    assert share(strategy="tree") < 0.4


def test_merge_keeps_a_calibrated_sample_one_cell():
    """No planted miscalibration: the fine cells do not differ, one cell (the
    same data with the test off do split)."""
    h, Z, _, _, y = _blobs(3, null=True)
    for seed in range(3):
        part = CalibrationTreePartitioner(random_state=seed)
        part.fit(Z, y, confidence=h, points_per_bin=25)
        assert part.n_cells_ == 1
        assert part.split_pvalue_ > 0.05
        assert part.centers_.shape[0] >= 8
    free = CalibrationTreePartitioner(split_alpha=None, random_state=0)
    assert free.fit(Z, y, confidence=h, points_per_bin=25).n_cells_ > 1


def test_merge_cells_by_hand():
    """Cells 0, 1 have score mean (0.1, 0), cells 2, 3 (-0.1, 0), the light
    cell 4 (0, 0.2). Merging 4 into 0 loses 100 * 5 / 105 * 0.05 = 0.238 (a
    tie with 2: the lowest cell wins); {0, 1, 4} with {2, 3} loses
    205 * 200 / 405 * ((20 / 205 + 0.1)**2 + (1 / 205)**2) = 3.96."""
    S = np.array([[10.0, 0.0], [10.0, 0.0], [-10.0, 0.0], [-10.0, 0.0], [0.0, 1.0]])
    W = np.array([100.0, 100.0, 100.0, 100.0, 5.0])
    fine, parent = merge_cells(S, W, min_weight=50, threshold=3.9)
    assert_array_equal(fine, [0, 0, 1, 1, 0])
    assert_array_equal(parent, [2, 2, -1])
    fine, parent = merge_cells(S, W, min_weight=50, threshold=4.0)
    assert_array_equal(fine, [0, 0, 0, 0, 0])
    assert_array_equal(parent, [-1])
    # not light: 0 and 1 merge first (cost 0), then 4 would lose
    # 200 * 5 / 205 * 0.05 = 0.244 joining them
    fine, parent = merge_cells(S, W, min_weight=1, threshold=0.24)
    assert_array_equal(fine, [0, 0, 1, 1, 2])
    assert check_hierarchy(parent, 3) and parent.shape == (5,)
    fine, _ = merge_cells(S, W, min_weight=1, threshold=0.25)
    assert_array_equal(fine, [0, 0, 1, 1, 0])


def test_merge_stop_is_the_unadjusted_chi2_quantile():
    """After the stop every pair of cells would lose more than the ``1 -
    split_alpha`` quantile of ``sigma^2 chi^2_2`` (recomputed here from the
    cells' scores); some pair loses less than the ``1 - split_alpha / K``
    quantile the stop used before, which would have merged it away."""
    from scipy.stats import chi2

    from sklearn_betacal._partition._tree import (
        _score_variance,
        recalibration_scores,
    )

    h, Z, _, _, y = _blobs(2, n_groups=12, size=800)
    w = np.ones(h.size)
    part = CalibrationTreePartitioner(random_state=0)
    part.fit(Z, y, confidence=h, points_per_bin=25)
    G = recalibration_scores(h, y, w)
    cells = part.apply(Z)
    S = np.zeros((part.n_cells_, 2))
    np.add.at(S, cells, G)
    W = np.bincount(cells, minlength=part.n_cells_).astype(float)
    m = S / W[:, None]
    a, b = np.triu_indices(part.n_cells_, 1)
    cost = W[a] * W[b] / (W[a] + W[b]) * np.sum((m[a] - m[b]) ** 2, axis=1)
    sigma2 = _score_variance(G, w)
    assert part.n_cells_ > 2
    assert cost.min() > sigma2 * chi2.isf(0.05, 2)
    n_fine = part.centers_.shape[0]
    assert cost.min() < sigma2 * chi2.isf(0.05 / n_fine, 2)


def test_merge_state_is_plain_validated_arrays():
    h, Z, _, _, y = _blobs(0, n_groups=4)
    part = CalibrationTreePartitioner(random_state=0).fit(Z, y, confidence=h)
    assert part.tree_ is None and part.n_cells_ > 1
    state = part.__getstate__()
    ok = type(part).__new__(type(part))
    ok.__setstate__(dict(state))
    assert_array_equal(ok.apply(Z), part.apply(Z))
    n = part.n_cells_
    for key, value, match in [
        ("fine_cell_", np.full_like(part.fine_cell_, n), "fine_cell_"),
        ("fine_cell_", part.fine_cell_[:-1], "shape"),
        ("centers_", part.centers_[:, :-1], "shape"),
        ("centers_", np.full_like(part.centers_, np.nan), "NaN"),
        ("cell_parent_", np.full_like(part.cell_parent_, -1), "hierarchy"),
        ("cell_parent_", np.zeros(2 * n - 1, dtype=np.int64), "hierarchy"),
        ("scale_", -part.scale_, "scale_"),
        ("n_cells_", n + 1, "fine_cell_"),
        ("split_pvalue_", "0.1", "p-value"),
        ("leaf_nodes_", part.leaf_nodes_[::-1].copy(), "leaf_nodes_"),
    ]:
        with pytest.raises(ValueError, match=f"damaged fitted state.*{match}"):
            type(part).__new__(type(part)).__setstate__(dict(state, **{key: value}))


def test_merge_cell_ancestors_let_a_small_cell_fall_back_to_its_merge():
    h, Z, _, _, y = _blobs(0, n_groups=4)
    part = CalibrationTreePartitioner(random_state=0).fit(Z, y, confidence=h)
    chains = part.cell_ancestors()
    assert len(chains) == part.n_cells_
    root = 2 * part.n_cells_ - 2
    assert all(c[-1] == root for c in chains)


def test_merge_points_per_bin_sets_the_leaf_and_the_fine_cells():
    """points_per_bin="auto" reaches the merge resolved (leaf 2 b); the fine
    cells hold about 4 leaves."""
    h, Z, _, _, y = _blobs(0)
    X = np.column_stack([h, Z])
    bb = BetaBinningCalibrator(
        CalibrationTreePartitioner(), points_per_bin="auto", epsilon=0.2, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bb.fit(X, y)
    part = bb.partitioner_
    assert part.min_samples_leaf_ == 2 * bb.points_per_bin_
    grown = h.size // 2
    assert part.centers_.shape[0] == max(
        grown // (8 * bb.points_per_bin_), min(grown // part.min_samples_leaf_, 8)
    )
    assert np.all(part.leaf_n_samples_ >= part.min_samples_leaf_)


def test_merge_zero_weight_is_drop_and_same_seed_same_cells():
    h, Z, _, _, y = _blobs(0, n_groups=4)
    w = np.ones(h.size)
    w[::7] = 0
    keep = w > 0
    a = CalibrationTreePartitioner(random_state=0)
    a.fit(Z, y, confidence=h, sample_weight=w)
    b = CalibrationTreePartitioner(random_state=0)
    b.fit(Z[keep], y[keep], confidence=h[keep])
    assert_array_equal(a.apply(Z), b.apply(Z))
    assert_allclose(a.centers_, b.centers_, rtol=1e-12, atol=1e-12)
    c = CalibrationTreePartitioner(random_state=0)
    c.fit(Z, y, confidence=h, sample_weight=w)
    assert a.centers_.tobytes() == c.centers_.tobytes()


def test_merge_kmeans_on_a_subsample_keeps_drop_and_determinism(monkeypatch):
    """With few rows per centre the k-means sees a draw of the rows: still the
    same cells as dropping the zero-weight rows, the same bytes for the same
    seed, and every row in the cell of its nearest centre."""
    import sklearn_betacal._partition._tree as _tree

    h, Z, _, _, y = _blobs(0, n_groups=4)
    w = np.ones(h.size)
    w[::7] = 0
    keep = w > 0

    monkeypatch.setattr(_tree, "KMEANS_MIN_ROWS", 0)

    def fit(rows_per_cell, weight=w, rows=slice(None), seed=0):
        monkeypatch.setattr(_tree, "KMEANS_ROWS_PER_CELL", rows_per_cell)
        part = CalibrationTreePartitioner(random_state=seed)
        wr = None if weight is None else weight[rows]
        return part.fit(Z[rows], y[rows], confidence=h[rows], sample_weight=wr)

    a, b, c = fit(8), fit(8, None, keep), fit(8)
    assert_array_equal(a.apply(Z), b.apply(Z))
    assert_allclose(a.centers_, b.centers_, rtol=1e-12, atol=1e-12)
    assert a.centers_.tobytes() == c.centers_.tobytes()
    n_fine = a.centers_.shape[0]
    # the draw is used: 8 rows per centre are fewer than the grown rows
    assert 8 * n_fine < keep.sum() // 2
    assert a.centers_.tobytes() != fit(None).centers_.tobytes()
    assert a.centers_.tobytes() != fit(8, seed=1).centers_.tobytes()
    Zs = a._merge_coordinates(Z)
    d2 = ((Zs[:, None, :] - a.centers_[None]) ** 2).sum(axis=2)
    assert_array_equal(a.apply(Z), a.fine_cell_[np.argmin(d2, axis=1)])


def test_distinct_rows_upto_is_the_capped_count_of_unique_rows():
    rng = np.random.default_rng(0)
    # few values per column, many distinct rows: no column reaches the cap
    X = rng.integers(0, 3, size=(400, 4)).astype(float)
    X[::5] = -0.0  # equal by value to 0.0, as np.unique counts them
    X[1::5] = 0.0
    n_rows = np.unique(X, axis=0).shape[0]
    for cap in (0, 1, 3, n_rows - 1, n_rows, n_rows + 1, 500):
        assert distinct_rows_upto(X, cap) == min(cap, n_rows)
    assert distinct_rows_upto(X[:0], 5) == 0
    assert distinct_rows_upto(np.ones((50, 3)), 8) == 1
    # one column with many values answers at once
    assert distinct_rows_upto(rng.normal(size=(300, 2)), 256) == 256


#: The cells of a small planted fit with the k-means on 64 rows per centre
#: (the floor ``KMEANS_MIN_ROWS`` set to 0), recorded with that commit
#: (session 7: the cells changed on purpose,
#: ``benchmarks/results/learned_cost.md``): later speed-ups must not move a
#: row. ``(fine_cell_, cell_parent_, rows per cell, sum of cell *
#: row position)``.
PINNED_CELLS = {
    "features": (
        [0, 1, 2, 3, 0, 4, 3, 0, 2, 0, 1, 4, 1, 3, 2],
        [5, 7, 5, 6, 6, 7, 8, 8, -1],
        [803, 496, 702, 501, 498],
        5929605,
    ),
    "recalibration": (
        [0, 1, 0, 2, 3, 4, 0, 1, 4, 0, 3, 2, 3, 2, 4],
        [5, 7, 6, 6, 5, 7, 8, 8, -1],
        [724, 485, 500, 511, 780],
        9004904,
    ),
}
#: The same fit with the k-means on all rows (``KMEANS_ROWS_PER_CELL =
#: None``), recorded with the code before any speed-up (commit 4278c4e):
#: the checksum. The default gives it too: the fit grows fewer rows than
#: ``KMEANS_MIN_ROWS``, so its k-means sees every row, as before.
PINNED_ALL_ROWS = {"features": 6341322, "recalibration": 4931470}


@pytest.mark.parametrize("mode", ["draw", "default", "all_rows"])
@pytest.mark.parametrize("directions", ["features", "recalibration"])
def test_merge_cells_of_a_small_planted_fit_are_pinned(directions, mode, monkeypatch):
    import sklearn_betacal._partition._tree as _tree

    if mode == "draw":
        monkeypatch.setattr(_tree, "KMEANS_MIN_ROWS", 0)
    elif mode == "all_rows":
        monkeypatch.setattr(_tree, "KMEANS_ROWS_PER_CELL", None)
    all_rows = mode != "draw"
    h, Z, _, _, y = _blobs(11, n_groups=6, size=500, dim=6)
    part = CalibrationTreePartitioner(
        directions=None if directions == "features" else directions, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        part.fit(Z, y, confidence=h, points_per_bin=25)
    cells = part.apply(Z)
    if all_rows:
        assert int(cells @ np.arange(cells.size)) == PINNED_ALL_ROWS[directions]
        return
    fine, parent, counts, checksum = PINNED_CELLS[directions]
    assert part.fine_cell_.tolist() == fine
    assert part.cell_parent_.tolist() == parent
    assert np.bincount(cells).tolist() == counts
    assert int(cells @ np.arange(cells.size)) == checksum


def test_merge_depth_zero_is_one_cell():
    h, Z, _, _, y = _blobs(0, n_groups=4)
    part = CalibrationTreePartitioner(max_depth=0).fit(Z, y, confidence=h)
    assert part.n_cells_ == 1
    assert_array_equal(part.apply(Z), 0)


@pytest.mark.parametrize("nu", [0.05, "auto"])
def test_sbb_auto_points_per_bin_reaches_the_partitioner_resolved(nu):
    """S-BB resolves points_per_bin="auto" before the learned partition is
    fitted (it passed nothing, so the leaves were 100 rows whatever b)."""
    from sklearn_betacal import ScalingBetaBinningCalibrator

    h, Z, _, _, y = _blobs(0)
    sbb = ScalingBetaBinningCalibrator(
        CalibrationTreePartitioner(),
        points_per_bin="auto",
        # the pooled scaler's per-cell nu is ~0.32 on these blobs: "auto"
        # needs an epsilon above it
        epsilon=0.2 if nu != "auto" else 0.45,
        nu=nu,
        scaler="pooled",
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sbb.fit(np.column_stack([h, Z]), y)
    leaf = sbb.partitioner_.min_samples_leaf_
    assert leaf != 100
    if nu == "auto":
        assert leaf <= 2 * sbb.points_per_bin_
    else:
        assert leaf == 2 * sbb.points_per_bin_


@pytest.mark.parametrize("seed", range(4))
def test_nearest_center_is_the_argmin_of_the_distance_table(seed, monkeypatch):
    """The in-place blocks give the index of ``argmin(||c||^2 - 2 x.c)`` as
    that table computed whole (the same numbers: ties, the lowest index, and
    every block boundary alike)."""
    from sklearn_betacal._partition import _merge

    rng = np.random.default_rng(seed)
    n, k, d = 1000 + 37 * seed, 1 + 20 * seed, 1 + 5 * seed
    X = np.round(rng.normal(size=(n, d)), 1)  # rounded: exact ties happen
    C = np.round(X[rng.integers(0, n, k)] + rng.normal(0, 0.05, (k, d)), 1)
    C[-1] = C[0]  # a duplicate centre: the lower index wins
    table = np.einsum("ij,ij->i", C, C) - 2.0 * (X @ C.T)
    expected = np.argmin(table, axis=1)
    assert_array_equal(nearest_center(X, C), expected)
    monkeypatch.setattr(_merge, "NEAREST_BLOCK_ROWS", 97)  # many blocks, a short one
    assert_array_equal(nearest_center(X, C), expected)
    assert nearest_center(X[:0], C).shape == (0,)


def test_score_test_with_equal_cell_information_is_the_pooled_test():
    """With every cell's information ``W_c I`` (the pooled test's
    assumption), the score statistic and its degrees of freedom are the
    pooled test's: ``sum_c ||S_c||^2 / W_c - ||S||^2 / W`` on ``k (K - 1)``."""
    from sklearn_betacal._partition._merge import (
        heterogeneity_statistic,
        score_heterogeneity_statistic,
    )

    rng = np.random.default_rng(0)
    S = rng.normal(size=(6, 2))
    W = rng.uniform(50, 500, 6)
    V = W[:, None, None] * np.eye(2)
    stat, df = score_heterogeneity_statistic(S, V)
    pooled, n_used = heterogeneity_statistic(S, W)
    assert_allclose(stat, pooled, rtol=1e-12)
    assert df == 2 * (n_used - 1) == 10
    # a cell whose information has rank one (constant confidence: [1, s]
    # collinear) counts one degree of freedom, and only its score along it
    V[0] = np.outer([1.0, 2.0], [1.0, 2.0]) * 10
    S[0] = 3 * np.array([1.0, 2.0])
    stat1, df1 = score_heterogeneity_statistic(S, V)
    assert df1 == 9
    assert np.isfinite(stat1)
    # an empty cell (no information) counts for nothing
    V[1] = 0
    assert score_heterogeneity_statistic(S, V)[1] == 7


def test_score_test_is_sized_where_cells_bunch_their_confidences():
    """On calibrated samples whose fixed cells hold confidences bunched at
    different levels, the score test (each cell's own information) rejects
    at its level; the pooled-variance test it replaced rejected more often
    (7.6 % at 5 % here)."""
    from scipy.stats import chi2

    from sklearn_betacal._partition._merge import score_heterogeneity_statistic
    from sklearn_betacal._partition._tree import recalibration_scores

    rng = np.random.default_rng(0)
    K, n_per, reps = 8, 300, 1000
    centers = np.linspace(0.2, 0.99, K)
    cell = np.repeat(np.arange(K), n_per)
    w = np.ones(K * n_per)
    pvalues = []
    for _ in range(reps):
        h = np.clip(rng.normal(np.repeat(centers, n_per), 0.005), 0.01, 0.995)
        y = (rng.random(h.size) < h).astype(float)
        G, Q = recalibration_scores(h, y, w, return_info=True)
        S = np.stack([np.bincount(cell, G[:, j]) for j in range(2)], axis=1)
        V = np.stack(
            [np.bincount(cell, Q[:, a] * Q[:, b]) for a in range(2) for b in range(2)],
            axis=1,
        ).reshape(K, 2, 2)
        stat, df = score_heterogeneity_statistic(S, V)
        assert df == 2 * (K - 1)
        pvalues.append(chi2.sf(stat, df))
    rate = np.mean(np.array(pvalues) < 0.05)
    # 1,000 draws: 0.05 +- 3.3 standard errors
    assert 0.027 < rate < 0.073


def test_score_information_sums_to_the_whole():
    """``Q`` whitens the Fisher information: ``sum_i w_i Q_i Q_i^T / W`` is the
    identity (up to the tiny ridge that keeps a constant confidence finite)."""
    from sklearn_betacal._partition._tree import recalibration_scores

    h, _, _, _, y = _blobs(1)
    w = np.random.default_rng(1).integers(1, 4, h.size).astype(float)
    G, Q = recalibration_scores(h, y, w, return_info=True)
    assert_array_equal(G, recalibration_scores(h, y, w))
    assert_allclose((Q * w[:, None]).T @ Q / w.sum(), np.eye(2), atol=1e-9)


def test_merge_with_equal_cell_information_is_the_pooled_merge():
    """``merge_cells(..., V=W_c I)``: the score-statistic merge costs are Ward's
    (the pooled merge), so the cells and the hierarchy are the same; with
    each cell's own information they may differ."""
    rng = np.random.default_rng(3)
    K = 12
    W = rng.uniform(100, 400, K)
    S = rng.normal(size=(K, 2)) * np.sqrt(W)[:, None] * 0.3
    S[:4] += 0.5 * W[:4, None]
    kw = {"min_weight": 150.0, "threshold": 5.99}
    pooled = merge_cells(S, W, **kw)
    scored = merge_cells(S, W, V=W[:, None, None] * np.eye(2), **kw)
    assert_array_equal(pooled[0], scored[0])
    assert_array_equal(pooled[1], scored[1])
    assert pooled[0].max() > 0  # the test merges something and keeps > 1 cell
