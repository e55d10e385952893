# SPDX-License-Identifier: MIT
"""CalibrationTreePartitioner and beta-binning's fallback (issue 10)."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.frozen import FrozenEstimator

from sklearn_betacal import (
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    GroupColumnPartitioner,
    HierarchicalLogisticScaler,
    KDTreePartitioner,
    ScalingBetaBinningCalibrator,
    UMDBinner,
)
from sklearn_betacal._kernels._fallback import fallback_plan


def _planted(seed, n=6000, kind="offset"):
    """Z uniform in [0, 1]^3; rows with Z[:, 0] > 0.5 are miscalibrated.

    ``offset``: accuracy h - 0.25 there (overconfident), h elsewhere.
    ``slope``: accuracy 0.5 + 0.25 (h - 0.5) / 0.5 there -- over-confident
    above 0.5 and under-confident below, with no average residual -- and h
    elsewhere.
    """
    rng = np.random.default_rng(seed)
    Z = rng.uniform(size=(n, 3))
    h = rng.uniform(size=n)
    group = Z[:, 0] > 0.5
    if kind == "offset":
        acc = np.where(group, h - 0.25, h)
    else:
        acc = np.where(group, 0.5 + 0.5 * (h - 0.5), h)
    y = (rng.uniform(size=n) < np.clip(acc, 0, 1)).astype(int)
    return Z, h, y, group


def _calibrated(seed, d, n=3000):
    """Z uniform in [0, 1]^d and a calibrated confidence: no cell to find."""
    rng = np.random.default_rng(seed)
    Z = rng.uniform(size=(n, d))
    h = rng.uniform(size=n)
    y = (rng.uniform(size=n) < h).astype(int)
    return Z, h, y


@pytest.mark.parametrize("kind", ["offset", "slope"])
@pytest.mark.parametrize("directions", [None, "recalibration"])
def test_calibration_tree_recovers_planted_groups(kind, directions):
    Z, h, y, group = _planted(0, kind=kind)
    part = CalibrationTreePartitioner(
        max_depth=1, directions=directions, random_state=0
    )
    part.fit(Z, y, confidence=h)
    nodes = part.tree_
    assert part.n_cells_ == 2
    if directions is None:  # a threshold of the first feature
        assert nodes["feature"][0] == 0
        # thresholds are on the features divided by scale_
        assert abs(nodes["threshold"][0] * part.scale_[0] - 0.5) < 0.05
    else:  # the learned direction of the offset (intercept) or of the slope
        assert nodes["feature"][0] == (0 if kind == "offset" else 1)
        assert part.components_[nodes["feature"][0]][0] > 0.95
    cells = part.apply(Z)
    # each cell is (almost) one planted group
    purity = max(np.mean(group[cells == 0]), 1 - np.mean(group[cells == 0]))
    assert purity > 0.95


def test_calibration_tree_does_not_split_noise():
    """With the significance stop a calibrated sample stays one cell, in most
    repetitions; without it the tree splits down to max_depth."""
    single = 0
    for seed in range(10):
        Z, h, y = _calibrated(100 + seed, 5)
        part = CalibrationTreePartitioner(max_depth=3, min_samples_leaf=50)
        single += part.fit(Z, y, confidence=h).n_cells_ == 1
        if seed == 0:
            free = CalibrationTreePartitioner(
                max_depth=3, min_samples_leaf=50, split_alpha=None
            ).fit(Z, y, confidence=h)
            assert free.n_cells_ > 2
    assert single >= 9


def test_calibration_tree_residual_criterion_misses_a_slope_difference():
    """Why the default criterion is the Platt score: a group that is over-
    and under-confident in equal measure has no mean residual to split on."""
    Z, h, y, group = _planted(1, kind="slope")
    found = []
    for criterion in ("recalibration", "residual"):
        part = CalibrationTreePartitioner(
            max_depth=1,
            criterion=criterion,
            directions=None,
            random_state=0,
        ).fit(Z, y, confidence=h)
        nodes = part.tree_
        cut = nodes["threshold"][0] * part.scale_[0]
        found.append(nodes["feature"][0] == 0 and abs(cut - 0.5) < 0.05)
    assert found == [True, False]


@pytest.mark.parametrize("depth", [1, 2, 4, 6])
@pytest.mark.parametrize("b", [10, 40, 150])
def test_calibration_tree_never_makes_a_leaf_below_its_minimum(depth, b):
    Z, h, y, _ = _planted(depth * 100 + b, n=3000)
    part = CalibrationTreePartitioner(max_depth=depth, random_state=0)
    part.fit(Z, y, confidence=h, points_per_bin=b)
    assert part.min_samples_leaf_ == 2 * b
    assert part.leaf_n_samples_.min() >= 2 * b
    assert part.leaf_n_samples_.sum() == 3000
    fixed = CalibrationTreePartitioner(max_depth=depth, min_samples_leaf=77)
    assert fixed.fit(Z, y, confidence=h).leaf_n_samples_.min() >= 77
    # fewer rows than two leaves of 2b: a single cell, never an undersized leaf
    m = 4 * b - 1
    tiny = CalibrationTreePartitioner(max_depth=depth).fit(
        Z[:m], y[:m], confidence=h[:m], points_per_bin=b
    )
    assert tiny.n_cells_ == 1


def test_calibration_tree_no_leaf_falls_back_under_defaults():
    Z, h, y, group = _planted(2, n=8000)
    X = np.column_stack([h, Z])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # in particular no fallback warning
        bb = BetaBinningCalibrator(
            CalibrationTreePartitioner(random_state=0), random_state=0
        ).fit(X, y)
    assert bb.n_cells_fallback_ == 0
    assert bb.n_cells_fitted_ == bb.partitioner_.n_cells_ > 1
    # and it found the planted split at the root
    assert bb.partitioner_.tree_["feature"][0] == 0


def test_calibration_tree_in_bb_is_honest():
    """The tree is grown on one half of the rows, the other half is binned."""
    Z, h, y, _ = _planted(3, n=4000)
    X = np.column_stack([h, Z])
    part = CalibrationTreePartitioner(max_depth=2, random_state=0)
    bb = BetaBinningCalibrator(part, points_per_bin=40, random_state=5).fit(X, y)
    grow, rows = part.honest_split(4000, random_state=5)
    assert grow.size == rows.size == 2000
    assert np.intersect1d(grow, rows).size == 0
    # the same tree, grown by hand on the grow rows (b reaches its leaf minimum)
    ref = CalibrationTreePartitioner(max_depth=2, random_state=0).fit(
        Z[grow], y[grow], confidence=h[grow], points_per_bin=40
    )
    assert bb.partitioner_.min_samples_leaf_ == 80
    assert_array_equal(bb.partitioner_.apply(Z), ref.apply(Z))
    # the binning saw only the other rows: the root is UMD on them
    umd_rows = UMDBinner(points_per_bin=40, random_state=5).fit(h[rows], y[rows])
    assert_allclose(bb.root_["bin_values"], umd_rows.bin_values_, rtol=0, atol=0)
    assert_allclose(bb.root_["bin_edges"], umd_rows.bin_edges_, rtol=0, atol=0)
    # frozen (fitted on a separate split): used as is, all rows binned
    frozen = BetaBinningCalibrator(FrozenEstimator(ref), points_per_bin=40).fit(X, y)
    assert frozen.root_["bin_values"].size == 4000 // 40


def test_calibration_tree_in_hls_and_sbb_gets_labels_and_confidences():
    Z, h, y, _ = _planted(4, n=4000)
    X = np.column_stack([h, Z])
    part = CalibrationTreePartitioner(max_depth=1, random_state=0)
    hls = HierarchicalLogisticScaler(partitioner=part).fit(X, y)
    assert hls.partitioner_.tree_["feature"][0] == 0
    sbb = ScalingBetaBinningCalibrator(part, points_per_bin=40, random_state=0)
    sbb.fit(X, y)
    grow, _ = part.honest_split(4000, random_state=0)
    ref = CalibrationTreePartitioner(max_depth=1, random_state=0).fit(
        Z[grow], y[grow], confidence=h[grow], points_per_bin=40
    )
    assert_array_equal(sbb.partitioner_.apply(Z), ref.apply(Z))  # honest rows


def test_calibration_tree_without_confidence_splits_on_accuracy():
    rng = np.random.default_rng(5)
    Z = rng.uniform(size=(2000, 2))
    y = (rng.uniform(size=2000) < np.where(Z[:, 1] > 0.3, 0.8, 0.2)).astype(int)
    part = CalibrationTreePartitioner(max_depth=1, directions=None).fit(Z, y)
    assert part.tree_["feature"][0] == 1
    assert abs(part.tree_["threshold"][0] * part.scale_[1] - 0.3) < 0.05
    # by default along the ridge direction of y on Z: the second feature
    learned = CalibrationTreePartitioner(max_depth=1, random_state=0).fit(Z, y)
    assert learned.n_directions_ == 1 and learned.components_[0, 1] > 0.95
    share = (Z[learned.apply(Z) == 0, 1] > 0.3).mean()
    assert max(share, 1 - share) > 0.95


def test_calibration_tree_errors():
    Z, h, y, _ = _planted(6, n=200)
    with pytest.raises(ValueError, match="requires y to be passed"):
        CalibrationTreePartitioner().fit(Z)
    with pytest.raises(ValueError, match="one confidence per row"):
        CalibrationTreePartitioner().fit(Z, y, confidence=h[:10])
    with pytest.raises(ValueError):
        CalibrationTreePartitioner().fit(Z, y, confidence=h + 1)


def test_calibration_tree_cell_ancestors_and_honest_split():
    Z, h, y, _ = _planted(7, n=4000)
    part = CalibrationTreePartitioner(max_depth=2, min_samples_leaf=200).fit(
        Z, y, confidence=h
    )
    nodes = part.tree_
    for cell, chain in enumerate(part.cell_ancestors()):
        leaf = part.leaf_nodes_[cell]
        assert chain[-1] == 0
        # each listed node is the parent of the one before it
        for child, parent in zip([leaf, *chain[:-1]], chain, strict=True):
            pair = (nodes["children_left"][parent], nodes["children_right"][parent])
            assert child in pair
    grow, rest = part.honest_split(10, random_state=0)
    assert grow.size == 5 and np.union1d(grow, rest).tolist() == list(range(10))


# -------------------------------------------------------------- fallback


def test_fallback_plan_by_hand():
    # a depth-3 binary tree: root 0; 1, 2; 3, 4, 5, 6; leaves 7 .. 14
    # cells 0 .. 7 are the leaves; ancestors nearest first
    ancestors = [
        [3, 1, 0],
        [3, 1, 0],
        [4, 1, 0],
        [4, 1, 0],
        [5, 2, 0],
        [5, 2, 0],
        [6, 2, 0],
        [6, 2, 0],
    ]
    weight = np.array([100, 100, 100, 100, 40, 40, 10, 10])
    own, serving, members = fallback_plan(weight, 50, [np.array(a) for a in ancestors])
    assert own.tolist() == [True] * 4 + [False] * 4
    # 4, 5: parent 5 holds 80 >= 50; 6, 7: parent 6 holds 20, grandparent 2 holds
    # 100 -> the nearest ancestor with enough points
    assert serving[4:].tolist() == [5, 5, 2, 2]
    assert members[5].tolist() == [4, 5] and members[2].tolist() == [4, 5, 6, 7]
    # only the tree's root above: the root binning (-1)
    weight = np.array([100, 100, 100, 100, 10, 10, 10, 10])
    _, serving, members = fallback_plan(weight, 50, [np.array(a) for a in ancestors])
    assert serving[4:].tolist() == [-1] * 4 and members == {}
    # no hierarchy: the root
    _, serving, _ = fallback_plan(np.array([100, 10]), 50, None)
    assert serving.tolist() == [-1, -1]


def test_beta_binning_ancestor_fallback_picks_the_nearest_ancestor():
    # a frozen depth-3 kd-tree on [0, 1]: leaves are the eighths; calibration
    # rows: 100 per eighth below 0.5, then 40, 40, 10, 10
    part = KDTreePartitioner(max_depth=3).fit(np.linspace(0, 1, 801).reshape(-1, 1))
    rng = np.random.default_rng(8)
    sizes = [100, 100, 100, 100, 40, 40, 10, 10]
    z = np.concatenate(
        [
            rng.uniform(k / 8 + 0.001, (k + 1) / 8 - 0.001, s)
            for k, s in enumerate(sizes)
        ]
    )
    h = rng.uniform(size=z.size)
    y = (rng.uniform(size=z.size) < h).astype(int)
    X = np.column_stack([h, z])
    with pytest.warns(UserWarning) as record:
        bb = BetaBinningCalibrator(
            FrozenEstimator(part), points_per_bin=50, delta=0.0
        ).fit(X, y)
    (msg,) = [str(r.message) for r in record if "fewer than b=50" in str(r.message)]
    assert "100 calibration rows in 4 of 8 cells" in msg
    assert "100 rows in 4 cells use their nearest ancestor" in msg
    assert "0 rows in 0 cells the root binning" in msg
    cells = part.apply(z.reshape(-1, 1))
    assert_array_equal(bb.fallback_cells_, [4, 5, 6, 7])
    chains = part.cell_ancestors()
    # cells 4, 5 -> their parent (80 rows); 6, 7 -> grandparent (100 rows)
    assert_array_equal(bb.fallback_to_, [chains[4][0]] * 2 + [chains[6][1]] * 2)
    assert chains[4][0] != chains[6][0] and chains[6][1] == chains[4][1]
    # the ancestor's binning is UMD on the rows of the leaves below it
    grid = np.linspace(0.01, 0.99, 25)
    for cell, below in ((4, [4, 5]), (7, [4, 5, 6, 7])):
        rows = np.isin(cells, below)
        n = rows.sum()
        umd = UMDBinner(n_bins=n // 50, delta=0.0).fit(h[rows], y[rows])
        Xq = np.column_stack([grid, np.full(25, (cell + 0.5) / 8)])
        assert_allclose(bb.predict_proba(Xq)[:, 1], umd.predict_proba(grid)[:, 1])


def test_beta_binning_epsilon_per_cell_by_hand():
    rng = np.random.default_rng(9)
    g = np.repeat([0, 1, 2], [400, 400, 30])
    h = rng.uniform(size=g.size)
    y = (rng.uniform(size=g.size) < h).astype(int)
    X = np.column_stack([h, g])
    with pytest.warns(UserWarning, match="30 calibration rows in 1 of 3 cells"):
        bb = BetaBinningCalibrator(
            GroupColumnPartitioner(), points_per_bin=100, alpha=0.1
        ).fit(X, y)
    # tables: cells 0, 1 (4 bins of 100 points, 99 averaged labels each
    # as the edge point is not counted), root (8 bins of 103 or 104 points)
    n_bins = 4 + 4 + 8
    m_root = int(bb.root_["bin_counts"].min()) + 1
    assert m_root == 103
    expected = [
        np.sqrt(np.log(2 * n_bins / 0.1) / (2 * 99)),
        np.sqrt(np.log(2 * n_bins / 0.1) / (2 * 99)),
        np.sqrt(np.log(2 * n_bins / 0.1) / (2 * (m_root - 1))),
    ]
    assert [bb.cell_tables_[s]["bin_counts"].min() for s in (0, 1)] == [99, 99]
    assert_array_equal(bb.cells_, [0, 1, 2])
    assert_allclose(bb.epsilon_, expected, rtol=1e-12)
    assert_allclose(bb.epsilon_root_, expected[2], rtol=1e-12)


def test_beta_binning_auto_never_silently_becomes_umd():
    rng = np.random.default_rng(10)
    g = np.repeat(np.arange(14), 100)
    h = rng.uniform(size=g.size)
    y = (rng.uniform(size=g.size) < h).astype(int)
    X = np.column_stack([h, g])
    auto = BetaBinningCalibrator(
        GroupColumnPartitioner(), points_per_bin="auto", epsilon=0.1
    )
    with pytest.raises(ValueError, match="largest of the 14 cells has 100") as err:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            auto.fit(X, y)
    assert "Raise epsilon" in str(err.value) and "plain UMD" in str(err.value)
    # an epsilon that b <= 100 reaches keeps every cell
    ok = auto.set_params(epsilon=0.25).fit(X, y)
    assert ok.points_per_bin_ <= 100 and ok.n_cells_fallback_ == 0


def test_beta_binning_auto_guarantee_coverage_with_cells():
    """Thm 3.1 with b from "auto": in >= 1 - alpha of repeated calibrations
    every bin of every cell is within epsilon of its true accuracy."""
    alpha, eps = 0.1, 0.15
    rng = np.random.default_rng(11)
    held = 0
    repeats = 40
    for _ in range(repeats):
        g = rng.integers(0, 4, size=6000)
        h = rng.uniform(size=g.size)
        acc = np.clip(h ** (0.5 + g / 2), 0, 1)  # a different curve per cell
        y = (rng.uniform(size=g.size) < acc).astype(int)
        X = np.column_stack([h, g])
        bb = BetaBinningCalibrator(
            GroupColumnPartitioner(),
            points_per_bin="auto",
            epsilon=eps,
            alpha=alpha,
            random_state=int(rng.integers(1 << 31)),
        ).fit(X, y)
        worst = 0.0
        for s, table in bb.cell_tables_.items():
            edges = np.r_[0.0, table["bin_edges"], 1.0]
            for k, value in enumerate(table["bin_values"]):
                lo, hi = edges[k], edges[k + 1]
                grid = np.linspace(lo, hi, 201)
                true = np.mean(np.clip(grid ** (0.5 + s / 2), 0, 1))
                worst = max(worst, abs(true - value))
        held += worst <= bb.epsilon_.max()
    assert held / repeats >= 1 - alpha


@pytest.mark.parametrize("n_components", [None, 2])
def test_calibration_tree_zero_weight_is_drop(n_components):
    Z, h, y, _ = _planted(12, n=3000)
    w = np.ones(3000)
    w[::3] = 0
    kw = {
        "max_depth": 3,
        "min_samples_leaf": 100,
        "n_components": n_components,
        "directions": None,
    }
    part = CalibrationTreePartitioner(**kw)
    a = part.fit(Z, y, confidence=h, sample_weight=w).apply(Z)
    keep = w > 0
    other = CalibrationTreePartitioner(**kw).fit(Z[keep], y[keep], confidence=h[keep])
    assert_array_equal(a, other.apply(Z))
    if n_components is not None:
        assert_allclose(part.components_, other.components_, atol=1e-12)


def _oblique(seed, n=4000, d=6):
    """The miscalibrated group lies beyond the median of the oblique, widest
    direction u = (1, 1, 1, 0, 0, 0) / sqrt(3) of the features."""
    rng = np.random.default_rng(seed)
    u = np.r_[np.ones(3), np.zeros(d - 3)] / np.sqrt(3)
    Z = rng.normal(size=(n, d)) + 3.0 * rng.normal(size=(n, 1)) * u
    h = rng.uniform(size=n)
    group = Z @ u > 0
    acc = np.where(group, h - 0.25, h)
    y = (rng.uniform(size=n) < np.clip(acc, 0, 1)).astype(int)
    return Z, h, y, group, u


def test_calibration_tree_principal_directions_find_an_oblique_group():
    Z, h, y, group, u = _oblique(0)
    kw = {"max_depth": 1, "min_samples_leaf": 200, "random_state": 0}
    kw["directions"] = None
    pca = CalibrationTreePartitioner(n_components=2, **kw).fit(Z, y, confidence=h)
    raw = CalibrationTreePartitioner(**kw).fit(Z, y, confidence=h)

    def purity(part):
        share = group[part.apply(Z) == 0].mean()
        return max(share, 1 - share)

    # the top principal direction is u (up to sign); the split is on it
    assert abs(pca.components_[0] @ u) > 0.99
    assert_allclose(pca.components_ @ pca.components_.T, np.eye(2), atol=1e-12)
    assert pca.tree_["feature"][0] == 0
    assert purity(pca) > 0.95
    # a single raw coordinate carries u only in part
    assert purity(raw) < 0.85


def test_principal_axes_match_numpy_svd():
    from sklearn_betacal._kernels._kdtree import principal_axes

    def principal_directions(X, w, k):  # the learned tree's call
        return principal_axes(X, k, w)

    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 4)) @ rng.normal(size=(4, 4))
    mean, comps = principal_directions(X, np.ones(500), 3)
    _, _, vt = np.linalg.svd(X - X.mean(axis=0), full_matrices=False)
    assert_allclose(mean, X.mean(axis=0), rtol=1e-12)
    # same directions up to sign
    assert_allclose(np.abs(np.sum(comps * vt[:3], axis=1)), 1.0, atol=1e-10)
    # integer weights are repeated rows
    w = rng.integers(0, 3, size=500).astype(float)
    m_w, c_w = principal_directions(X, w, 3)
    rep = np.repeat(X, w.astype(int), axis=0)
    m_r, c_r = principal_directions(rep, np.ones(len(rep)), 3)
    assert_allclose(m_w, m_r, rtol=1e-12)
    assert_allclose(c_w, c_r, atol=1e-10)


def test_beta_binning_fallback_when_the_last_cells_get_no_rows():
    # a frozen depth-3 kd-tree on [0, 1] (cells are the eighths); calibration
    # rows only below 0.65: cells 6 and 7 get none, cell 5 a few, which fall
    # back to the region of cells 4 and 5
    part = KDTreePartitioner(max_depth=3).fit(np.linspace(0, 1, 801).reshape(-1, 1))
    rng = np.random.default_rng(13)
    z = np.r_[rng.uniform(0, 0.625, 1000), rng.uniform(0.63, 0.65, 10)]
    h = rng.uniform(size=z.size)
    y = (rng.uniform(size=z.size) < h).astype(int)
    with pytest.warns(UserWarning, match="10 calibration rows in 1 of 6 cells"):
        bb = BetaBinningCalibrator(FrozenEstimator(part), points_per_bin=50).fit(
            np.column_stack([h, z]), y
        )
    assert_array_equal(bb.cells_, np.arange(6))
    assert_array_equal(bb.fallback_cells_, [5])
    assert_array_equal(bb.fallback_to_, [part.cell_ancestors()[5][0]])


def _narrow(seed, n=6000, d=6):
    """Miscalibrated beyond the median of a low-variance oblique direction.

    The features have standard deviations 3, 3, 3, 3, 1, 1; the group is
    ``Z @ u > 0`` with ``u`` mixing the last two, narrowest coordinates, so
    neither a single coordinate nor the top principal directions carry it.
    """
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d)) * np.r_[3.0, 3.0, 3.0, 3.0, 1.0, 1.0]
    u = np.r_[0.0, 0.0, 0.0, 0.0, 1.0, 1.0] / np.sqrt(2)
    h = rng.uniform(0.3, 1.0, size=n)
    group = Z @ u > 0
    acc = np.where(group, h - 0.25, h)
    y = (rng.uniform(size=n) < np.clip(acc, 0, 1)).astype(int)
    return Z, h, y, group, u


def _purity(part, Z, group):
    share = group[part.apply(Z) == 0].mean()
    return max(share, 1 - share)


def test_calibration_tree_learned_directions_find_what_pca_misses():
    Z, h, y, group, u = _narrow(0)
    kw = {"max_depth": 1, "min_samples_leaf": 200, "random_state": 0}
    learned = CalibrationTreePartitioner(**kw)  # directions="recalibration"
    learned.fit(Z, y, confidence=h)
    kw["directions"] = None
    pca = CalibrationTreePartitioner(n_components=2, **kw).fit(Z, y, confidence=h)
    raw = CalibrationTreePartitioner(**kw).fit(Z, y, confidence=h)
    # the intercept direction is u (the group is an offset); unit rows
    assert learned.n_directions_ == 2 and learned.components_.shape == (2, 6)
    assert learned.components_[0] @ u > 0.9
    assert_allclose(np.linalg.norm(learned.components_, axis=1), 1.0)
    assert learned.tree_["feature"][0] == 0
    assert _purity(learned, Z, group) > 0.9
    assert _purity(pca, Z, group) < 0.7
    assert _purity(raw, Z, group) < 0.85
    # with principal directions too: the learned ones come first
    kw["directions"] = "recalibration"
    both = CalibrationTreePartitioner(n_components=3, **kw).fit(Z, y, confidence=h)
    assert both.components_.shape == (5, 6) and both.n_directions_ == 2
    assert_allclose(both.components_[:2], learned.components_)
    assert _purity(both, Z, group) > 0.9


def test_calibration_tree_slope_direction_finds_a_slope_group():
    # over-confident above 0.5, under-confident below, no mean residual: the
    # group shows in the slope (s X) direction, not in the intercept one
    rng = np.random.default_rng(1)
    n = 8000
    Z = rng.normal(size=(n, 4))
    u = np.r_[1.0, -1.0, 0.0, 0.0] / np.sqrt(2)
    group = Z @ u > 0
    h = rng.uniform(size=n)
    acc = np.where(group, 0.5 + 0.5 * (h - 0.5), h)
    y = (rng.uniform(size=n) < acc).astype(int)
    part = CalibrationTreePartitioner(
        max_depth=1,
        min_samples_leaf=200,
        directions="recalibration",
        random_state=0,
    ).fit(Z, y, confidence=h)
    assert abs(part.components_[1] @ u) > 0.9
    assert part.tree_["feature"][0] == 1
    assert _purity(part, Z, group) > 0.9


def test_calibration_tree_directions_without_what_they_need():
    Z, h, y, _, _ = _narrow(2, n=400)
    kw = {"max_depth": 2, "directions": "recalibration", "random_state": 0}
    # one class, or fewer rows of a class than folds: no direction, one cell
    for labels in (np.ones(400, dtype=int), np.r_[np.ones(396), np.zeros(4)]):
        part = CalibrationTreePartitioner(**kw).fit(Z, labels, confidence=h)
        assert_array_equal(part.components_, 0.0)
        assert part.n_cells_ == 1
    # without confidences: one direction, from the regression of y on X
    part = CalibrationTreePartitioner(**kw).fit(Z, 3.5 * y)
    assert part.n_directions_ == 1 and part.components_.shape == (1, 6)


def test_calibration_tree_directions_are_reproducible_and_zero_weight_is_drop():
    Z, h, y, _, _ = _narrow(3, n=3000)
    w = np.ones(3000)
    w[::3] = 0
    keep = w > 0
    kw = {"max_depth": 2, "directions": "recalibration", "random_state": 7}
    a = CalibrationTreePartitioner(**kw).fit(Z, y, confidence=h, sample_weight=w)
    b = CalibrationTreePartitioner(**kw).fit(Z[keep], y[keep], confidence=h[keep])
    # equal up to the summation order of the weighted sums (zeros included)
    assert_allclose(a.components_, b.components_, atol=1e-12)
    assert_array_equal(a.apply(Z), b.apply(Z))
    again = CalibrationTreePartitioner(**kw).fit(Z, y, confidence=h, sample_weight=w)
    assert_array_equal(again.components_, a.components_)


def test_calibration_tree_learned_directions_do_not_split_noise():
    # the directions are fitted to the same labels; with the chi^2_k stop of
    # a fixed split a calibrated sample was split in 32 dimensions every time
    cells = []
    for seed in range(6):
        Z, h, y = _calibrated(100 + seed, 32)
        part = CalibrationTreePartitioner(
            max_depth=3,
            min_samples_leaf=50,
            directions="recalibration",
        )
        cells.append(part.fit(Z, y, confidence=h).n_cells_)
    assert cells.count(1) >= 5


@pytest.mark.parametrize("key", ["directions", "scale_"])
def test_calibration_tree_state_of_an_earlier_layout_is_refused(key):
    # the package was never released: a state without ``directions`` or
    # ``scale_`` is refused, not migrated
    Z, h, y, _ = _planted(14, n=3000)
    part = CalibrationTreePartitioner(
        max_depth=2, directions=None, random_state=0
    ).fit(Z, y, confidence=h)
    state = part.__getstate__()
    del state[key]
    with pytest.raises(ValueError, match=f"damaged fitted state.*{key}"):
        CalibrationTreePartitioner.__new__(CalibrationTreePartitioner).__setstate__(
            state
        )


@pytest.mark.parametrize("directions", [None, "recalibration"])
@pytest.mark.parametrize("n_components", [None, 2])
def test_calibration_tree_is_scale_free(directions, n_components):
    # features near 1e150 overflowed scikit-learn's float32 tree (a ValueError
    # about float32 the user never passed), the principal directions at 1e300
    # raised numpy's LinAlgError, and learned positions near 1e-30 could not
    # be split (the tree treats spreads below 1e-7 as constant)
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(2000, 3))
    h = rng.uniform(size=2000)
    acc = np.where(Z[:, 0] + Z[:, 1] > 0, h - 0.2, h)
    y = (rng.uniform(size=2000) < np.clip(acc, 0, 1)).astype(int)
    kw = {"max_depth": 2, "min_samples_leaf": 100, "random_state": 0}
    kw.update(directions=directions, n_components=n_components)
    ref = CalibrationTreePartitioner(**kw).fit(Z, y, confidence=h)
    assert ref.n_cells_ > 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way either
        for scale in (2.0**-1000, 1e-30, 1e30, 1e150, 1e300):
            part = CalibrationTreePartitioner(**kw).fit(Z * scale, y, confidence=h)
            assert_array_equal(part.apply(Z * scale), ref.apply(Z))


def test_learned_tree_inside_a_pipeline_is_fitted_as_the_bare_tree():
    # a Pipeline whose last step is supervised gets y, the confidences, the
    # weights and b (by step name) and its honest split: an identity step in
    # front changes nothing
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    Z, h, y, _ = _planted(15, n=4000)
    X = np.column_stack([h, Z])
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=4000)
    tree = CalibrationTreePartitioner(max_depth=2, random_state=0)
    kw = {"points_per_bin": 40, "random_state": 3}
    bare = BetaBinningCalibrator(tree, **kw).fit(X, y, sample_weight=w)
    piped = BetaBinningCalibrator(make_pipeline(FunctionTransformer(), tree), **kw)
    piped.fit(X, y, sample_weight=w)
    inner = piped.partitioner_[-1]
    assert inner.min_samples_leaf_ == 80  # b reached the last step
    assert inner.leaf_n_samples_.sum() == bare.partitioner_.leaf_n_samples_.sum()
    assert_array_equal(piped.apply(X), bare.apply(X))
    assert_array_equal(piped.predict_proba(X), bare.predict_proba(X))


def test_learned_tree_crossed_with_a_group_column():
    # CrossPartitioner passes y, h, w and b to its supervised components and
    # lends their honest split to the calibrator: the tree is the one grown
    # on the grow rows alone, crossed with the groups
    from sklearn_betacal import CrossPartitioner

    Z, h, y, _ = _planted(16, n=6000)
    group = np.arange(6000) % 3
    X = np.column_stack([h, group, Z])
    tree = CalibrationTreePartitioner(max_depth=1, random_state=0)
    cross = CrossPartitioner(
        [("group", GroupColumnPartitioner(), [0]), ("text", tree, [1, 2, 3])]
    )
    w = np.random.default_rng(1).uniform(0.2, 3.0, size=6000)
    bb = BetaBinningCalibrator(cross, points_per_bin=40, random_state=5)
    bb.fit(X, y, sample_weight=w)
    fitted = bb.partitioner_.partitioners_[1][1]
    grow, _ = tree.honest_split(6000, random_state=5)
    ref = CalibrationTreePartitioner(max_depth=1, random_state=0).fit(
        Z[grow],
        y[grow].astype(float),
        confidence=h[grow],
        sample_weight=w[grow],
        points_per_bin=40,
    )
    assert_allclose(fitted.leaf_n_samples_, ref.leaf_n_samples_)  # weighted
    assert fitted.min_samples_leaf_ == 80
    assert_array_equal(fitted.apply(Z), ref.apply(Z))
    assert bb.partitioner_.n_cells_ == 3 * ref.n_cells_ == 6
    # without a supervised component nothing changes: unsupervised, no split
    plain = CrossPartitioner([("group", GroupColumnPartitioner(), [0])])
    assert not hasattr(plain, "honest_split")


def _auto_data(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, 3))
    h = rng.uniform(0.05, 0.95, size=n)
    p = np.where(Z[:, 0] > 0, h**2, np.sqrt(h))
    y = rng.uniform(size=n) < p
    return np.column_stack([h, Z]), y


def test_auto_points_per_bin_reaches_learned_tree_before_it_is_fitted():
    """points_per_bin='auto' is resolved before the partitioner sees the rows:
    the learned tree's minimum leaf is 2 * b_resolved (it was 100 before)."""
    from sklearn_betacal import BetaBinningCalibrator, CalibrationTreePartitioner

    X, y = _auto_data()
    bb = BetaBinningCalibrator(
        CalibrationTreePartitioner(),
        points_per_bin="auto",
        epsilon=0.1,
        random_state=0,
    ).fit(X, y)
    assert bb.points_per_bin_ != 50
    assert bb.partitioner_.min_samples_leaf_ == 2 * bb.points_per_bin_


def test_int_points_per_bin_learned_tree_unchanged():
    """An int points_per_bin still reaches the tree as before (leaf 2 * b)."""
    from sklearn_betacal import BetaBinningCalibrator, CalibrationTreePartitioner

    X, y = _auto_data()
    bb = BetaBinningCalibrator(
        CalibrationTreePartitioner(), points_per_bin=150, random_state=0
    ).fit(X, y)
    assert bb.partitioner_.min_samples_leaf_ == 300
    assert bb.points_per_bin_ == 150


def test_auto_points_per_bin_reaches_learned_tree_when_nu_is_given():
    # the fit plan: with a given nu and unit weights b is known before the
    # partitioner is fitted (D2 has n_bin - round(fraction * n_bin) rows), so
    # the learned tree's leaves hold 2 b (they held the default 100)
    from sklearn_betacal import (
        CalibrationTreePartitioner,
        ScalingBetaBinningCalibrator,
    )
    from sklearn_betacal._partition._tree import DEFAULT_MIN_LEAF

    X, y = _auto_data()
    sbb = ScalingBetaBinningCalibrator(
        CalibrationTreePartitioner(),
        scaler="pooled",
        points_per_bin="auto",
        epsilon=0.1,
        nu=0.01,
        random_state=0,
    ).fit(X, y)
    assert 2 * sbb.points_per_bin_ != DEFAULT_MIN_LEAF
    assert sbb.partitioner_.min_samples_leaf_ == 2 * sbb.points_per_bin_
    # nu="auto" is measured against the scaler, fitted on the cells: the
    # partition is lent the b of nu = 0, the smallest the estimate can give
    # (the pooled scaler's per-cell nu is ~0.25 here, so epsilon must exceed it)
    sbb.set_params(nu="auto", epsilon=0.4).fit(X, y)
    leaf = sbb.partitioner_.min_samples_leaf_
    assert leaf != DEFAULT_MIN_LEAF
    assert leaf <= 2 * sbb.points_per_bin_
    # an int b is lent as it is
    sbb.set_params(points_per_bin=120).fit(X, y)
    assert sbb.partitioner_.min_samples_leaf_ == 240


def test_fit_plan_lends_what_each_calibrator_declares():
    # the base reads no calibrator parameter by name: a supervised
    # partitioner gets the keywords of the calibrator's _partitioner_lends
    from sklearn.base import BaseEstimator

    from sklearn_betacal import (
        BetaBinningCalibrator,
        HierarchicalLogisticScaler,
        ScalingBetaBinningCalibrator,
    )
    from sklearn_betacal._partition._base import _PartitionerMixin

    class Recorder(_PartitionerMixin, BaseEstimator):
        def fit(self, X, y, confidence=None, sample_weight=None, points_per_bin=None):
            self.lent_ = {"points_per_bin": points_per_bin}
            self.n_cells_ = 1
            return self

        def apply(self, X):
            return np.zeros(np.asarray(X).shape[0], dtype=np.int64)

        def __sklearn_tags__(self):
            tags = super().__sklearn_tags__()
            tags.target_tags.required = True
            return tags

    X, y = _auto_data(n=400)
    for est, lent in [
        (BetaBinningCalibrator(Recorder(), points_per_bin=30), 30),
        (BetaBinningCalibrator(Recorder(), points_per_bin="auto", epsilon=0.2), None),
        (ScalingBetaBinningCalibrator(Recorder(), scaler="pooled"), 50),
        (HierarchicalLogisticScaler(Recorder()), None),
    ]:
        est.fit(X, y)
        got = est.partitioner_.lent_["points_per_bin"]
        if lent is None and hasattr(est, "points_per_bin_"):
            lent = est.points_per_bin_  # "auto": resolved before the fit
        assert got == lent, type(est).__name__


def test_calibrator_with_too_few_rows_for_the_honest_split_says_so():
    """One row (or one of non-zero weight): the honest split leaves a part
    empty, and the partitioner's validation reported '0 sample(s)' of rows
    the user never passed."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(size=50), rng.normal(size=50)])
    y = np.arange(50) % 2
    w = np.zeros(50)
    w[0] = 1.0
    est = BetaBinningCalibrator(CalibrationTreePartitioner(random_state=0))
    for args, kwargs in (((X, y), {"sample_weight": w}), ((X[:1], y[:1]), {})):
        with pytest.raises(ValueError, match=r"honest split.*1 row.*FrozenEstimator"):
            est.fit(*args, **kwargs)

