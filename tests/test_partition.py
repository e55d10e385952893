# SPDX-License-Identifier: MIT
"""Tests for the partitioners: KDTreePartitioner, GroupColumnPartitioner,
ClusterPartitioner (beta of Sec. 2.3 / App. C of the paper)."""

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.cluster import DBSCAN, KMeans
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.mixture import GaussianMixture
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import sklearn_betacal._partition._kdtree as partition_module
from sklearn_betacal import (
    BetaBinningCalibrator,
    ClusterPartitioner,
    CrossPartitioner,
    GroupColumnPartitioner,
    KDTreePartitioner,
)
from sklearn_betacal._validation import check_cell_ids

# --------------------------------------------------------------------------
# Hand-built example (App. C), computed by hand:
#   root: coordinate x, values 1..8, lower median z = 4, next value 5
#         -> threshold 4.5, left = {P0, P1, P2, P3}, right = {P4..P7}
#   left node: coordinate y, values {5, 1, 7, 3}, z = 3, next 5 -> thr 4
#         -> left-left = {P1 (2,1), P3 (4,3)}, left-right = {P0 (1,5), P2 (3,7)}
#   right node: coordinate y, values {8, 2, 6, 4}, z = 4, next 6 -> thr 5
#         -> right-left = {P5 (6,2), P7 (8,4)}, right-right = {P4 (5,8), P6 (7,6)}
# Cells left to right: 0 = {P1, P3}, 1 = {P0, P2}, 2 = {P5, P7}, 3 = {P4, P6};
# bounds = min/max of each cell's rows in x and y.
HAND_Z = np.array(
    [[1, 5], [2, 1], [3, 7], [4, 3], [5, 8], [6, 2], [7, 6], [8, 4]], dtype=float
)
HAND_CELLS = np.array([1, 0, 1, 0, 3, 2, 3, 2])
HAND_LOWER = np.array([[2, 1], [1, 5], [6, 2], [5, 6]], dtype=float)
HAND_UPPER = np.array([[4, 3], [3, 7], [8, 4], [7, 8]], dtype=float)
HAND_TEST = np.array(
    [
        [3, 2],  # -> cell 0, inside
        [1.5, 2],  # routed to cell 0, x < 2: outside
        [4.5, 5],  # x <= 4.5, y > 4 -> cell 1, but x > 3: outside
        [6.5, 7],  # -> cell 3, inside
        [7, 3],  # -> cell 2, inside
        [2, 6],  # -> cell 1, inside
        [3, 4],  # -> cell 0 (y <= 4), y > 3: outside
        [4, 3],  # a fitted row on the bounds: inside (inclusive)
        [100, 100],  # far away: outside
    ]
)
HAND_TEST_CELLS = np.array([0, -1, -1, 3, 2, 1, -1, 0, -1])


def test_kdtree_hand_example_leaf_for_leaf():
    part = KDTreePartitioner(max_depth=2).fit(HAND_Z)
    assert part.n_cells_ == 4
    assert part.depth_ == 2
    assert_array_equal(part.apply(HAND_Z), HAND_CELLS)
    assert_array_equal(part.leaf_axes_, [[0, 1]] * 4)
    assert_array_equal(part.leaf_lower_, HAND_LOWER)
    assert_array_equal(part.leaf_upper_, HAND_UPPER)
    assert_array_equal(part.leaf_n_samples_, [2, 2, 2, 2])
    internal = part.tree_["feature"] >= 0
    assert_array_equal(part.tree_["threshold"][internal], [4.5, 4.0, 5.0])
    assert_array_equal(part.apply(HAND_TEST), HAND_TEST_CELLS)
    out = part.transform(HAND_TEST)
    assert out.shape == (len(HAND_TEST), 1) and out.dtype == np.int64
    assert_array_equal(out[:, 0], HAND_TEST_CELLS)


def test_kdtree_unbounded_never_outside():
    part = KDTreePartitioner(max_depth=2, bounded=False).fit(HAND_Z)
    assert_array_equal(part.apply(HAND_TEST), [0, 0, 1, 3, 2, 1, 0, 0, 3])


def test_kdtree_max_depth_zero_single_cell_without_bounds():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    part = KDTreePartitioner(max_depth=0).fit(X)
    assert part.n_cells_ == 1 and part.depth_ == 0
    assert part.leaf_axes_.shape == (1, 0)
    assert part.leaf_lower_.shape == (1, 0)
    far = np.vstack([X, 1e6 * np.ones((1, 3))])
    assert_array_equal(part.apply(far), np.zeros(len(far)))


def test_kdtree_cycle_wraps_after_last_coordinate():
    rng = np.random.default_rng(1)
    part = KDTreePartitioner(max_depth=3).fit(rng.normal(size=(64, 2)))
    assert part.n_cells_ == 8
    assert_array_equal(part.leaf_axes_, [[0, 1, 0]] * 8)


# --------------------------------------------------------------------------
# An independent, recursive reference implementation of the documented rule
# (App. C + the tie rule of the Notes), compared with the level-wise kernel.


def _reference_leaves(X, max_depth, min_samples_leaf):
    """Leaves left to right as (rows, thresholds path, axes, lower, upper)."""
    M = X.shape[1]
    leaves, nodes = [], []

    def build(rows, depth, route):
        m = len(rows)
        if depth < max_depth and m >= max(2, 2 * min_samples_leaf):
            a = depth % M
            v = np.sort(X[rows, a])
            z = v[(m - 1) // 2]
            n_le, n_lt = int(np.sum(v <= z)), int(np.sum(v < z))
            ok_a = n_le < m and min(n_le, m - n_le) >= min_samples_leaf
            ok_b = n_lt > 0 and min(n_lt, m - n_lt) >= min_samples_leaf
            if ok_a and (not ok_b or abs(2 * n_le - m) <= abs(2 * n_lt - m)):
                thr = z + (v[n_le] - z) / 2
            elif ok_b:
                thr = v[n_lt - 1] + (z - v[n_lt - 1]) / 2
            else:
                thr = None
            if thr is not None:
                go = X[rows, a] <= thr
                build(rows[go], depth + 1, [*route, (a, thr, True)])
                build(rows[~go], depth + 1, [*route, (a, thr, False)])
                return
        axes = [a for a, _, _ in route]
        leaves.append(
            (
                rows,
                route,
                axes,
                X[rows][:, axes].min(axis=0),
                X[rows][:, axes].max(axis=0),
            )
        )

    build(np.arange(X.shape[0]), 0, [])
    return leaves, nodes


def _reference_apply(leaves, X):
    out = np.full(X.shape[0], -1)
    for i, x in enumerate(X):
        for c, (_, route, axes, lo, hi) in enumerate(leaves):
            if all((x[a] <= t) == is_left for a, t, is_left in route):
                inside = np.all((x[axes] >= lo) & (x[axes] <= hi))
                out[i] = c if inside else -1
                break
    return out


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 60),
    n_features=st.integers(1, 4),
    max_depth=st.integers(0, 5),
    min_samples_leaf=st.integers(1, 4),
    n_levels=st.sampled_from([2, 3, 10, None]),
)
def test_kdtree_matches_recursive_reference(
    seed, n, n_features, max_depth, min_samples_leaf, n_levels
):
    rng = np.random.default_rng(seed)
    if n_levels is None:  # continuous: no ties
        X = rng.normal(size=(n, n_features))
        X_new = rng.normal(size=(40, n_features)) * 1.2
    else:  # few distinct values: heavy ties at the median
        X = rng.integers(0, n_levels, size=(n, n_features)).astype(float)
        X_new = rng.integers(-1, n_levels + 1, size=(40, n_features)).astype(float)
    part = KDTreePartitioner(max_depth, min_samples_leaf=min_samples_leaf).fit(X)
    leaves, _ = _reference_leaves(X, max_depth, min_samples_leaf)
    assert part.n_cells_ == len(leaves)
    expected = np.empty(n, dtype=int)
    for c, (rows, _, axes, lo, hi) in enumerate(leaves):
        expected[rows] = c
        used = part.leaf_axes_[c] >= 0
        assert_array_equal(part.leaf_axes_[c][used], axes)
        assert_array_equal(part.leaf_lower_[c][used], lo)
        assert_array_equal(part.leaf_upper_[c][used], hi)
    assert_array_equal(part.apply(X), expected)
    assert_array_equal(part.apply(X_new), _reference_apply(leaves, X_new))
    # no empty leaf, every row in exactly one leaf, min_samples_leaf honoured
    assert part.leaf_n_samples_.sum() == n
    assert np.all(part.leaf_n_samples_ >= min(min_samples_leaf, n))
    assert_array_equal(np.bincount(expected), part.leaf_n_samples_)


# --------------------------------------------------------------------------
# The level-wise build (all nodes of a level in vectorised passes) against a
# plain recursive reference, for every split_axis, with ties and deep trees.


def _reference_tree(F, max_depth, min_samples_leaf, rule):
    """Leaves left to right as (rows, route, axes, lower, upper), recursively.

    ``rule``: "cycle" (coordinate depth mod M) or "max_spread" (coordinate of
    largest float64 range, lowest index on ties; a node whose rows are all
    equal is a leaf). Split value: lower median, tie rule of the Notes.
    """
    M = F.shape[1]
    leaves = []

    def build(rows, depth, route):
        m = len(rows)
        if depth < max_depth and m >= max(2, 2 * min_samples_leaf):
            if rule == "cycle":
                a = depth % M
            else:
                spread = F[rows].max(axis=0).astype(np.float64) - F[rows].min(axis=0)
                a = int(np.argmax(spread))
            if rule == "cycle" or spread[a] > 0:
                v = np.sort(F[rows, a]).astype(np.float64)
                z = v[(m - 1) // 2]
                n_le, n_lt = int(np.sum(v <= z)), int(np.sum(v < z))
                ok_a = n_le < m and min(n_le, m - n_le) >= min_samples_leaf
                ok_b = n_lt > 0 and min(n_lt, m - n_lt) >= min_samples_leaf
                thr = None
                if ok_a and (not ok_b or abs(2 * n_le - m) <= abs(2 * n_lt - m)):
                    thr = z + (v[n_le] - z) / 2
                elif ok_b:
                    thr = v[n_lt - 1] + (z - v[n_lt - 1]) / 2
                if thr is not None:
                    go = F[rows, a] <= thr
                    build(rows[go], depth + 1, [*route, (a, thr, True)])
                    build(rows[~go], depth + 1, [*route, (a, thr, False)])
                    return
        axes = [a for a, _, _ in route]
        sub = F[rows][:, axes]
        leaves.append((rows, route, axes, sub.min(axis=0), sub.max(axis=0)))

    build(np.arange(F.shape[0]), 0, [])
    return leaves


def _check_against_reference(part, X, X_new, F, F_new, max_depth, msl, rule, slack):
    leaves = _reference_tree(F, max_depth, msl, rule)
    assert part.n_cells_ == len(leaves)
    assert part.depth_ == max((len(r) for _, r, _, _, _ in leaves), default=0)
    expected = np.empty(X.shape[0], dtype=int)
    thresholds = set()
    for c, (rows, route, axes, lo, hi) in enumerate(leaves):
        expected[rows] = c
        thresholds.update(t for _, t, _ in route)
        used = part.leaf_axes_[c] >= 0
        assert_array_equal(part.leaf_axes_[c][used], axes)
        s = slack[axes] if len(axes) else 0.0
        assert_array_equal(part.leaf_lower_[c][used], lo - s)
        assert_array_equal(part.leaf_upper_[c][used], hi + s)
        assert np.all(np.isnan(part.leaf_lower_[c][~used]))
    internal = part.tree_["feature"] >= 0
    assert set(part.tree_["threshold"][internal].tolist()) == thresholds
    assert_array_equal(part.apply(X), expected)
    assert_array_equal(np.bincount(expected), part.leaf_n_samples_)
    bounded = [(r, rt, a, lo - slack[a], hi + slack[a]) for r, rt, a, lo, hi in leaves]
    assert_array_equal(part.apply(X_new), _reference_apply(bounded, F_new))
    # cell_ancestors: parents up to the root, consistent with the node table
    anc = part.cell_ancestors()
    leaf_nodes = np.argsort(np.where(part.tree_["cell"] >= 0, part.tree_["cell"], -1))
    leaf_nodes = leaf_nodes[-part.n_cells_ :]
    for c, chain in enumerate(anc):
        assert len(chain) == len(leaves[c][1])
        child = leaf_nodes[c]
        for node in chain:
            assert child in (
                part.tree_["children_left"][node],
                part.tree_["children_right"][node],
            )
            child = node


def _tied_data(rng, n, d, kind):
    if kind == "continuous":
        return rng.normal(size=(n, d)), rng.normal(size=(40, d)) * 1.2
    levels = {"ties": 3, "heavy": 2}[kind]
    X = rng.integers(0, levels, size=(n, d)).astype(float)
    X[:, 0] += 0.01 * rng.integers(0, 2, size=n)  # near-ties on one coordinate
    return X, rng.integers(-1, levels + 1, size=(40, d)).astype(float)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 120),
    n_features=st.integers(1, 4),
    max_depth=st.sampled_from([0, 1, 3, 6, 64]),
    min_samples_leaf=st.integers(1, 4),
    kind=st.sampled_from(["continuous", "ties", "heavy"]),
    split_axis=st.sampled_from(["cycle", "max_spread", "pca"]),
)
def test_kdtree_levelwise_build_matches_recursive_reference_every_axis_rule(
    seed, n, n_features, max_depth, min_samples_leaf, kind, split_axis
):
    rng = np.random.default_rng(seed)
    X, X_new = _tied_data(rng, n, n_features, kind)
    part = KDTreePartitioner(
        max_depth, split_axis=split_axis, min_samples_leaf=min_samples_leaf
    ).fit(X)
    if split_axis == "pca":
        # the reference splits the same projection, cycling over components
        F = partition_module._kdtree.project(X, part.mean_, part.components_)
        F_new = partition_module._kdtree.project(X_new, part.mean_, part.components_)
        slack = 1e-9 * np.abs(F).max(axis=0)
        rule = "cycle"
    else:
        F, F_new, slack, rule = X, X_new, np.zeros(n_features), split_axis
    _check_against_reference(
        part, X, X_new, F, F_new, max_depth, min_samples_leaf, rule, slack
    )


@pytest.mark.parametrize("split_axis", ["cycle", "max_spread", "pca"])
@pytest.mark.parametrize("kind", ["continuous", "ties", "heavy"])
@pytest.mark.parametrize("n_features", [3, 20])
def test_kdtree_deep_tiny_leaves_match_reference_in_small_chunks(
    split_axis, kind, n_features, monkeypatch
):
    # max_depth=64 with min_samples_leaf=1 grows until the nodes hold one
    # row (or only tied rows); tiny chunk sizes make every level run through
    # the chunked, padded and multi-class code paths of the kernel; 20
    # float64 features (rows wider than a cache line) take the one-pass
    # bounds of wide rows.
    kern = partition_module._kdtree
    monkeypatch.setattr(kern, "_SEL_BLOCK", 37)
    monkeypatch.setattr(kern, "_CHUNK", 29)
    monkeypatch.setattr(kern, "_BLOCK", 7)
    rng = np.random.default_rng(["continuous", "ties", "heavy"].index(kind))
    X, X_new = _tied_data(rng, 700, n_features, kind)
    X_new = np.vstack([X_new, X[:50]])
    part = KDTreePartitioner(64, split_axis=split_axis).fit(X)
    if split_axis == "pca":
        F = kern.project(X, part.mean_, part.components_)
        F_new = kern.project(X_new, part.mean_, part.components_)
        slack, rule = 1e-9 * np.abs(F).max(axis=0), "cycle"
    else:
        F, F_new, slack, rule = X, X_new, np.zeros(n_features), split_axis
    _check_against_reference(part, X, X_new, F, F_new, 64, 1, rule, slack)
    if kind == "continuous":
        assert part.n_cells_ == 700  # one row per leaf


def _fitted_array_bytes(est):
    total = 0
    for name, value in vars(est).items():
        if not name.endswith("_"):
            continue
        values = value.values() if isinstance(value, dict) else [value]
        total += sum(a.nbytes for a in values if isinstance(a, np.ndarray))
    return total


@pytest.mark.parametrize("n_features", [4, 20])
def test_kdtree_deep_tiny_leaves_build_memory_beyond_the_model(n_features):
    # issue 14 item 18: max_depth=64 with one-row leaves needed ~520-560 B/row
    # of temporaries beyond the fitted arrays (per-depth bound columns and
    # per-node work); the level-wise build needs ~200-270 B/row. tracemalloc
    # counts NumPy's allocations, so this is a deterministic bound, not a
    # timing.
    import tracemalloc

    n = 20_000
    X = np.random.default_rng(0).normal(size=(n, n_features))
    tracemalloc.start()
    try:
        part = KDTreePartitioner(64, min_samples_leaf=1).fit(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert part.n_cells_ == n
    extra_per_row = (peak - _fitted_array_bytes(part)) / n
    assert extra_per_row <= 6 * n_features + 300, extra_per_row


# --------------------------------------------------------------------------
# Ties, min_samples_leaf, split rules


@pytest.mark.parametrize("split_axis", ["cycle", "max_spread", "pca"])
def test_kdtree_all_equal_columns_give_one_leaf(split_axis):
    X = np.ones((100, 3))
    part = KDTreePartitioner(10, split_axis=split_axis).fit(X)
    assert part.n_cells_ == 1
    assert_array_equal(part.apply(X), np.zeros(100))


def test_kdtree_constant_split_column_stops_cycle_but_not_max_spread():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.zeros(200), rng.normal(size=200)])
    assert KDTreePartitioner(3).fit(X).n_cells_ == 1  # root coordinate is constant
    part = KDTreePartitioner(3, split_axis="max_spread").fit(X)
    assert part.n_cells_ == 8
    assert np.all(part.leaf_axes_ == 1)


@pytest.mark.parametrize("split_axis", ["cycle", "max_spread", "pca"])
def test_kdtree_heavy_duplicates_no_empty_leaves(split_axis):
    rng = np.random.default_rng(3)
    X = rng.choice([0.0, 0.0, 0.0, 1.0, 2.0], size=(2000, 4))
    part = KDTreePartitioner(8, split_axis=split_axis).fit(X)
    ids = part.apply(X)
    assert ids.min() >= 0
    assert_array_equal(np.bincount(ids, minlength=part.n_cells_), part.leaf_n_samples_)
    assert np.all(part.leaf_n_samples_ > 0)


def test_kdtree_ties_choose_the_more_balanced_split():
    # 7 rows: values 0 0 0 0 0 1 2; lower median 0 ties 5 rows. The paper's
    # "<= 0" gives 5/2 (valid, |2*5-7| = 3), "< 0" is empty: take 5/2.
    X = np.array([0, 0, 0, 0, 0, 1, 2], dtype=float)[:, None]
    part = KDTreePartitioner(1).fit(X)
    assert_array_equal(part.leaf_n_samples_, [5, 2])
    # values 0 1 1 1 1 1 1: median 1, "<= 1" leaves the right child empty;
    # "< 1" gives 1/6.
    X = np.array([0, 1, 1, 1, 1, 1, 1], dtype=float)[:, None]
    part = KDTreePartitioner(1).fit(X)
    assert_array_equal(part.leaf_n_samples_, [1, 6])
    assert_allclose(part.tree_["threshold"][0], 0.5)
    # with min_samples_leaf=2 neither split is allowed
    assert KDTreePartitioner(1, min_samples_leaf=2).fit(X).n_cells_ == 1


@pytest.mark.parametrize("min_samples_leaf", [1, 7, 30])
def test_kdtree_min_samples_leaf_is_respected(min_samples_leaf):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(250, 5))
    part = KDTreePartitioner(10, min_samples_leaf=min_samples_leaf).fit(X)
    assert part.leaf_n_samples_.min() >= min_samples_leaf
    # no leaf could have been split further without breaking the rule
    assert part.leaf_n_samples_.max() < 2 * min_samples_leaf or part.depth_ == 10


def test_kdtree_max_spread_splits_the_widest_coordinate():
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(500, 4)) * np.array([1.0, 1.0, 50.0, 1.0])
    part = KDTreePartitioner(1, split_axis="max_spread").fit(X)
    assert part.tree_["feature"][0] == 2


def test_kdtree_pca_splits_along_the_principal_direction():
    rng = np.random.default_rng(6)
    t = rng.normal(size=1000)
    X = np.column_stack([t, t]) + 0.05 * rng.normal(size=(1000, 2))
    part = KDTreePartitioner(1, split_axis="pca").fit(X)
    assert_allclose(np.abs(part.components_[0]), [2**-0.5, 2**-0.5], atol=0.01)
    # the root split separates t < median from t > median
    ids = part.apply(X)
    assert abs(np.corrcoef(ids, t)[0, 1]) > 0.8


@pytest.mark.parametrize("split_axis", ["cycle", "max_spread", "pca"])
def test_kdtree_fitted_rows_are_in_their_cell(split_axis):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(3000, 16)).astype(np.float32)
    part = KDTreePartitioner(6, split_axis=split_axis).fit(X)
    ids = part.apply(X)
    assert ids.min() >= 0
    assert_array_equal(np.bincount(ids, minlength=part.n_cells_), part.leaf_n_samples_)
    # balanced median splits: 3000 / 64 rows per leaf, +- 1 per level
    assert part.n_cells_ == 64
    assert part.leaf_n_samples_.max() - part.leaf_n_samples_.min() <= 6
    # a subset and a shuffled copy give the same ids row by row
    perm = rng.permutation(len(X))[:500]
    assert_array_equal(part.apply(X[perm]), ids[perm])


def test_kdtree_float32_and_float64_give_the_same_tree():
    rng = np.random.default_rng(8)
    X32 = rng.normal(size=(500, 6)).astype(np.float32)
    p32 = KDTreePartitioner(5).fit(X32)
    p64 = KDTreePartitioner(5).fit(X32.astype(np.float64))
    assert_array_equal(p32.tree_["threshold"], p64.tree_["threshold"])
    assert_array_equal(p32.leaf_lower_, p64.leaf_lower_)
    X_new = rng.normal(size=(300, 6))
    assert_array_equal(p32.apply(X_new), p64.apply(X_new))


def test_kdtree_new_points_outside_bounds_are_rare_and_far_points_outside():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(20000, 8))
    part = KDTreePartitioner(4).fit(X)
    ids = part.apply(rng.normal(size=(20000, 8)))
    # four bounded coordinates per leaf, ~1250 rows per leaf: few outliers
    assert 0 < np.mean(ids == -1) < 0.01
    assert np.all(part.apply(np.full((3, 8), 50.0)) == -1)


# --------------------------------------------------------------------------
# Determinism, pickling, sklearn integration


@pytest.mark.parametrize("split_axis", ["cycle", "max_spread", "pca"])
def test_kdtree_same_random_state_is_byte_identical(split_axis, monkeypatch):
    # force the subsampling path of "pca"
    monkeypatch.setattr(partition_module, "PCA_MAX_SAMPLES", 200)
    rng = np.random.default_rng(10)
    X = rng.normal(size=(1000, 12))
    a = KDTreePartitioner(5, split_axis=split_axis, random_state=3).fit(X)
    b = KDTreePartitioner(5, split_axis=split_axis, random_state=3).fit(X)
    assert pickle.dumps(a.tree_) == pickle.dumps(b.tree_)
    assert a.leaf_lower_.tobytes() == b.leaf_lower_.tobytes()
    assert a.apply(X).tobytes() == b.apply(X).tobytes()
    if split_axis == "pca":
        assert a.components_.tobytes() == b.components_.tobytes()
        c = KDTreePartitioner(5, split_axis=split_axis, random_state=4).fit(X)
        assert c.components_.tobytes() != a.components_.tobytes()


def test_kdtree_pickle_roundtrip():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(400, 5))
    part = KDTreePartitioner(4, split_axis="pca").fit(X)
    back = pickle.loads(pickle.dumps(part))
    X_new = rng.normal(size=(100, 5))
    assert_array_equal(back.apply(X_new), part.apply(X_new))


def test_kdtree_tree_keys_are_sklearn_tree_names_and_old_keys_are_refused():
    rng = np.random.default_rng(13)
    X = rng.normal(size=(300, 3))
    part = KDTreePartitioner(3).fit(X)
    assert list(part.tree_) == [
        "feature",
        "threshold",
        "children_left",
        "children_right",
        "cell",
        "depth",
    ]
    # the kernel's names of an earlier development layout: not migrated
    old = {"axis": "feature", "left": "children_left", "right": "children_right"}
    state = part.__getstate__()
    state["tree_"] = {
        next((k for k, v in old.items() if v == key), key): value
        for key, value in part.tree_.items()
    }
    with pytest.raises(ValueError, match="damaged fitted state.*tree_"):
        KDTreePartitioner.__new__(KDTreePartitioner).__setstate__(state)


def test_kdtree_clone_and_set_params():
    part = KDTreePartitioner(3, split_axis="max_spread", min_samples_leaf=5)
    twin = clone(part)
    assert twin.get_params() == part.get_params()
    twin.set_params(max_depth=6, split_axis="pca")
    assert (twin.max_depth, twin.split_axis, part.max_depth) == (6, "pca", 3)
    X = np.random.default_rng(12).normal(size=(200, 3))
    # 200 rows: depth-5 nodes hold ~6 < 2 * min_samples_leaf rows, so 32 cells
    assert twin.fit(X).n_cells_ == 32


def test_kdtree_gridsearch_over_tree_params_in_a_pipeline():
    rng = np.random.default_rng(13)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    pipe = make_pipeline(
        KDTreePartitioner(),
        OneHotEncoder(handle_unknown="ignore"),
        LogisticRegression(),
    )
    grid = {
        "kdtreepartitioner__max_depth": [0, 3],
        "kdtreepartitioner__split_axis": ["cycle", "max_spread", "pca"],
        "kdtreepartitioner__min_samples_leaf": [1, 20],
    }
    search = GridSearchCV(pipe, grid, cv=2).fit(X, y)
    assert len(search.cv_results_["params"]) == 12
    # depth 0 is one cell: the classifier sees a constant, chance accuracy
    assert search.best_params_["kdtreepartitioner__max_depth"] > 0


def test_kdtree_frozen_is_not_refit():
    rng = np.random.default_rng(14)
    part = KDTreePartitioner(3).fit(rng.normal(size=(100, 2)))
    frozen = FrozenEstimator(part)
    # FrozenEstimator.fit requires y positionally (sklearn API): pass None
    frozen.fit(rng.normal(size=(100, 2)) + 10, None)
    X = rng.normal(size=(50, 2))
    assert_array_equal(frozen.transform(X), part.transform(X))


def test_kdtree_output_feature_names_and_pandas_output():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(15)
    df = pd.DataFrame(rng.normal(size=(60, 2)), columns=["e0", "e1"])
    part = KDTreePartitioner(2).set_output(transform="pandas").fit(df)
    assert_array_equal(part.get_feature_names_out(), ["cell"])
    out = part.transform(df)
    assert list(out.columns) == ["cell"]
    assert_array_equal(check_cell_ids(out, len(df)), part.apply(df))


@pytest.mark.parametrize(
    "X, msg",
    [
        (np.array([[0.0, np.nan], [1.0, 2.0]]), "NaN"),
        (np.array([[0.0, np.inf], [1.0, 2.0]]), "infinity"),
    ],
)
def test_kdtree_rejects_non_finite_input(X, msg):
    with pytest.raises(ValueError, match=msg):
        KDTreePartitioner().fit(X)


@pytest.mark.parametrize(
    "params",
    [
        {"max_depth": -1},
        {"max_depth": 2.5},
        {"split_axis": "random"},
        {"min_samples_leaf": 0},
    ],
)
def test_kdtree_param_validation(params):
    with pytest.raises(ValueError, match="parameter of KDTreePartitioner"):
        KDTreePartitioner(**params).fit(np.zeros((4, 2)))


def test_kdtree_transform_checks_feature_count():
    part = KDTreePartitioner(2).fit(np.random.default_rng(0).normal(size=(20, 3)))
    with pytest.raises(ValueError, match="3 features"):
        part.transform(np.zeros((2, 4)))


# --------------------------------------------------------------------------
# GroupColumnPartitioner


def test_group_column_maps_groups_to_sorted_cell_ids():
    X = np.array([[0.9, 3], [0.2, 7], [0.5, 3], [0.4, -1]])
    part = GroupColumnPartitioner(group_column=1).fit(X)
    assert_array_equal(part.groups_, [-1, 3, 7])
    assert part.n_cells_ == 3
    # a user group labelled -1 is renumbered: never confused with "outside"
    assert_array_equal(part.apply(X), [1, 2, 1, 0])
    with pytest.warns(UserWarning, match=r"1 of 2 row\(s\) have 1 group"):
        assert_array_equal(part.apply(np.array([[0.1, 5], [0.1, 7]])), [-1, 2])


def test_group_column_missing_groups_are_named():
    # a missing group: pandas None / NaN said "Input contains NaN", a polars
    # None "mixes value types"; NaN in another column keeps sklearn's error
    pd = pytest.importorskip("pandas")
    frames = [
        pd.DataFrame({"g": ["a", "b", None, "a"] * 5}),
        pd.DataFrame({"g": [1.0, 2.0, np.nan, 1.0] * 5}),
        pd.DataFrame(
            {"g": pd.to_datetime(["2024-01-01", "2024-02-01", None, "2024-01-01"] * 5)}
        ),
    ]
    try:
        import polars as pl

        frames.append(pl.DataFrame({"g": ["a", "b", None, "a"] * 5}))
    except ImportError:
        pass
    for frame in frames:
        with pytest.raises(ValueError, match="group column has 5 missing value"):
            GroupColumnPartitioner(group_column="g").fit(frame)
    fitted = GroupColumnPartitioner(group_column="g").fit(
        pd.DataFrame({"g": ["a", "b"]})
    )
    with pytest.raises(ValueError, match="group column has 1 missing value"):
        fitted.transform(pd.DataFrame({"g": ["a", None]}))
    # inside a calibrator, a nullable string column's pd.NA (scikit-learn's
    # NaN check raised "boolean value of NA is ambiguous")
    g = pd.array(["a", "b"] * 20, dtype="string")
    g[3] = pd.NA
    X = pd.DataFrame({"conf": np.linspace(0.05, 0.95, 40), "g": g})
    with pytest.raises(ValueError, match="missing values.*column 'g': 1"):
        BetaBinningCalibrator(GroupColumnPartitioner(), random_state=0).fit(
            X, np.arange(40) % 2
        )
    other = pd.DataFrame({"x": [np.nan, 1.0] * 3, "g": [1, 2] * 3})
    with pytest.raises(ValueError, match="Input X contains NaN"):
        GroupColumnPartitioner(group_column="g").fit(other)


def test_group_column_unknown_error_names_the_groups():
    part = GroupColumnPartitioner(handle_unknown="error").fit([[1], [2]])
    with pytest.raises(ValueError, match=r"1 row\(s\) have groups not seen.*\[9\]"):
        part.transform([[2], [9]])


def test_group_column_unseen_groups_are_counted_and_warned():
    # issue 20, item 7: unseen groups went to the root (cell -1) silently
    part = GroupColumnPartitioner().fit([[1], [2]])
    with pytest.warns(UserWarning, match=r"3 of 4 row\(s\) have 2 group\(s\) not "):
        assert part.apply([[2], [9], [9], [5]]).tolist() == [1, -1, -1, -1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        part.transform([[1], [2]])  # every group seen: no warning
    assert not caught


def test_group_calibrator_warns_once_for_unseen_groups():
    rng = np.random.default_rng(0)
    h = rng.uniform(size=400)
    X = np.column_stack([h, np.repeat([0, 1], 200)])
    y = (rng.uniform(size=400) < h).astype(int)
    bb = BetaBinningCalibrator(GroupColumnPartitioner(), points_per_bin=20).fit(X, y)
    new = np.column_stack([h[:5], [0, 7, 7, 8, 1]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = bb.predict_proba(new)
    msgs = [str(w.message) for w in caught if "not seen in fit" in str(w.message)]
    assert len(msgs) == 1 and "3 of 5 row(s) have 2 group(s)" in msgs[0]
    with pytest.warns(UserWarning, match="5 of 5 row"):
        root = bb.predict_proba(np.column_stack([h[:5], np.full(5, 9)]))
    assert_array_equal(p[1:4], root[1:4])


def test_group_column_dataframe_column_name_and_strings():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"topic": ["law", "art", "law", "sport"], "x": [1, 2, 3, 4]})
    part = GroupColumnPartitioner(group_column="topic").fit(df)
    assert part.groups_.tolist() == ["art", "law", "sport"]
    assert_array_equal(part.apply(df), [1, 0, 1, 2])
    with pytest.raises(ValueError, match="column='nope' is not a column"):
        GroupColumnPartitioner(group_column="nope").fit(df)


def test_group_column_top_label_case():
    # beta = predicted class of a K-class classifier (top-label calibration)
    rng = np.random.default_rng(16)
    proba = rng.dirichlet(np.ones(4), size=200)
    pred = proba.argmax(axis=1)
    part = GroupColumnPartitioner().fit(pred[:, None])
    assert_array_equal(part.apply(pred[:, None]), pred)


def test_group_column_warns_on_continuous_values():
    with pytest.warns(UserWarning, match="non-integer floats"):
        GroupColumnPartitioner().fit([[0.1], [0.25], [0.3]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GroupColumnPartitioner().fit([[1.0], [2.0]])


def test_group_column_out_of_range_column():
    with pytest.raises(ValueError, match="out of range"):
        GroupColumnPartitioner(group_column=3).fit(np.zeros((3, 2)))


def test_group_column_out_of_range_inside_calibrator_says_what_to_change():
    # X = [confidence, group]: the partitioner sees the group column alone, so
    # group_column=1 (the position in the user's X) is one too many; the
    # error must say positions count the partition features, not X
    X = np.c_[np.linspace(0.1, 0.9, 20), np.arange(20) % 2]
    y = np.arange(20) % 3 == 0
    cal = BetaBinningCalibrator(partitioner=GroupColumnPartitioner(1))
    with pytest.raises(ValueError, match="group_column=1") as info:
        cal.fit(X, y)
    msg = str(info.value)
    assert "without its confidence column" in msg
    assert "group_column=0" in msg


# --------------------------------------------------------------------------
# ClusterPartitioner


def test_cluster_partitioner_default_kmeans_is_deterministic():
    rng = np.random.default_rng(17)
    X = rng.normal(size=(300, 4))
    a = ClusterPartitioner(random_state=0).fit(X)
    b = ClusterPartitioner(random_state=0).fit(X)
    assert a.n_cells_ == 8
    assert_array_equal(a.apply(X), b.apply(X))
    assert_array_equal(a.apply(X), a.clusterer_.predict(X))


def test_cluster_partitioner_wraps_any_clusterer_with_predict():
    rng = np.random.default_rng(18)
    X = np.vstack([rng.normal(size=(100, 2)), rng.normal(size=(100, 2)) + 8])
    part = ClusterPartitioner(GaussianMixture(2, random_state=0)).fit(X)
    ids = part.apply(X)
    assert part.n_cells_ == 2
    assert len(set(ids[:100])) == 1 and len(set(ids[100:])) == 1
    assert ids[0] != ids[-1]


def test_cluster_partitioner_rejects_clusterer_without_predict():
    with pytest.raises(ValueError, match="implementing 'fit' and 'predict'"):
        ClusterPartitioner(DBSCAN()).fit(np.zeros((5, 2)))


def test_cluster_partitioner_frozen_clusterer_is_not_refit():
    rng = np.random.default_rng(19)
    km = KMeans(3, random_state=0).fit(rng.normal(size=(90, 2)))
    centers = km.cluster_centers_.copy()
    part = ClusterPartitioner(FrozenEstimator(km)).fit(rng.normal(size=(90, 2)))
    assert_array_equal(km.cluster_centers_, centers)
    X = rng.normal(size=(30, 2))
    assert_array_equal(part.apply(X), km.predict(X))
    # a cluster that no fitting row reached has no cell: it maps to -1
    part = ClusterPartitioner(FrozenEstimator(km)).fit(X[km.predict(X) != 0])
    assert part.n_cells_ == 2
    assert np.all(part.apply(X)[km.predict(X) == 0] == -1)


# --------------------------------------------------------------------------
# Real data: embeddings of the verbalised-confidence QA rows


@pytest.mark.slow
def test_kdtree_on_real_qa_embeddings(influences_verb):
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    rows = influences_verb.sample(6000, random_state=0)
    text = (
        rows.question.fillna("") + " " + rows.extracted_answer.fillna("")
    ).to_numpy()
    emb = TruncatedSVD(32, random_state=0).fit_transform(
        TfidfVectorizer(min_df=2).fit_transform(text)
    )
    fit_rows, new_rows = emb[:3000], emb[3000:]
    for split_axis in ["cycle", "max_spread", "pca"]:
        part = KDTreePartitioner(5, split_axis=split_axis, random_state=0)
        part.fit(fit_rows)
        assert part.n_cells_ == 32
        assert np.all(part.apply(fit_rows) >= 0)
        ids = part.apply(new_rows)
        # A new row leaves its cell when it passes the min or max of the
        # cell's m fitted rows in one of the 5 path coordinates; for
        # exchangeable rows that happens with probability <= 2 * 5 / (m + 1).
        assert 0 < np.mean(ids == -1) < 2 * 5 / (3000 / 32 + 1)
        assert len(np.unique(ids[ids >= 0])) == 32


# --------------------------------------------------------------------------
# Integration: every partitioner works as ``partitioner=`` of a calibrator


@pytest.mark.parametrize(
    "partitioner",
    [
        KDTreePartitioner(2, split_axis="pca", random_state=0),
        GroupColumnPartitioner(group_column=0),
        ClusterPartitioner(KMeans(3, n_init=1, random_state=0)),
    ],
    ids=["kdtree", "group", "cluster"],
)
def test_partitioners_plug_into_beta_binning(partitioner):
    from sklearn_betacal import BetaBinningCalibrator

    rng = np.random.default_rng(20)
    n = 1200
    Z = np.column_stack([rng.integers(0, 3, n), rng.normal(size=n)]).astype(float)
    h = rng.uniform(size=n)
    # the groups differ in miscalibration: group g is correct w.p. h ** (g + 1)
    y = (rng.uniform(size=n) < h ** (Z[:, 0] + 1)).astype(int)
    X = np.column_stack([h, Z])
    cal = BetaBinningCalibrator(partitioner, points_per_bin=50, random_state=0)
    proba = cal.fit(X, y).predict_proba(X)
    assert proba.shape == (n, 2)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert cal.partitioner_.n_cells_ >= 3


# --------------------------------------------------------------------------
# CrossPartitioner
# --------------------------------------------------------------------------


def test_cross_partitioner_cells_are_observed_combinations():

    rng = np.random.default_rng(0)
    Z = np.column_stack([rng.normal(size=200), rng.integers(0, 3, size=200)])
    cross = CrossPartitioner(
        [
            ("text", KDTreePartitioner(max_depth=2), [0]),
            ("model", GroupColumnPartitioner(), [1]),
        ]
    ).fit(Z)
    kd = KDTreePartitioner(max_depth=2).fit(Z[:, [0]]).apply(Z[:, [0]])
    grp = GroupColumnPartitioner().fit(Z[:, [1]]).apply(Z[:, [1]])
    cells = cross.apply(Z)
    # same crossed cell <=> same pair of component cells
    pairs = kd * 10 + grp
    for c in np.unique(cells):
        assert len(np.unique(pairs[cells == c])) == 1
    assert len(np.unique(cells)) == len(np.unique(pairs)) == cross.n_cells_ == 12
    assert cross.cell_codes_.shape == (12, 2)


def test_cross_partitioner_outside_or_unseen_is_minus_one():

    Z = np.array([[0.0, 0], [1.0, 0], [2.0, 1], [3.0, 1]])
    cross = CrossPartitioner(
        [
            ("text", KDTreePartitioner(max_depth=1), [0]),
            ("model", GroupColumnPartitioner(), [1]),
        ]
    ).fit(Z)
    assert cross.n_cells_ == 2  # (left, model 0) and (right, model 1)
    new = np.array([[0.5, 1], [9.0, 1], [2.5, 1], [0.2, 7]])
    # unseen combination, outside the kd bounds, inside, unseen group: the
    # unseen combination and the unseen group are counted, each once
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cross.apply(new).tolist() == [-1, -1, 1, -1]
    msgs = sorted(str(w.message) for w in caught)
    assert len(msgs) == 2
    assert msgs[0].startswith("CrossPartitioner: 1 of 4 row(s) have 1 combination")
    assert msgs[1].startswith("GroupColumnPartitioner: 1 of 4 row(s) have 1 group")
    with pytest.warns(UserWarning, match="not seen in fit"):
        assert cross.transform(new).shape == (4, 1)


def _huge_ids(Z):
    # integer cell ids far apart: two such components cannot share one int64 key
    return (np.asarray(Z)[:, 0].astype(np.int64) + 1) * 2**40


@pytest.mark.parametrize("huge", [False, True])
def test_cross_partitioner_apply_ranks_combinations(huge):
    # apply() is the rank of each row's combination among cell_codes_ (-1 when
    # unseen), whether it goes through one int64 key per combination or, when
    # the components' id ranges are too wide for that, through the records
    from sklearn.preprocessing import FunctionTransformer

    rng = np.random.default_rng(5)
    Z = np.column_stack([rng.integers(0, 4, 300), rng.integers(0, 3, 300)])
    comp = (lambda: FunctionTransformer(_huge_ids)) if huge else GroupColumnPartitioner
    cross = CrossPartitioner([("a", comp(), [0]), ("b", comp(), [1])]).fit(Z[:150])
    new = np.vstack([Z, [[9, 0], [0, 9], [-5, 1]]])
    ids = cross._component_ids(new, cross.partitioners_)
    expected = [
        next(
            (i for i, code in enumerate(cross.cell_codes_.tolist()) if code == row),
            -1,
        )
        for row in ids.tolist()
    ]
    assert cross.apply(new).tolist() == expected
    assert expected[-3:] == [-1, -1, -1]


def test_cross_partitioner_cell_ancestors_coarsen_the_last_component_first():
    # model (first, coarsest) x depth-2 kd-tree on the text (last)
    Z = np.column_stack([np.tile(np.linspace(0, 1, 8), 2), np.repeat([0, 1], 8)])
    cross = CrossPartitioner(
        [
            ("model", GroupColumnPartitioner(), [1]),
            (
                "text",
                FrozenEstimator(KDTreePartitioner(max_depth=2).fit(Z[:, [0]])),
                [0],
            ),
        ]
    ).fit(Z)
    assert cross.n_cells_ == 8
    chains = cross.cell_ancestors()
    assert len(chains) == 8 and all(len(c) == 3 for c in chains)
    codes = cross.cell_codes_.tolist()  # [model, leaf], lexicographic
    cell = {tuple(c): i for i, c in enumerate(codes)}
    # kd leaves 0, 1 are siblings (left half), 2, 3 the right half
    a, b, c = chains[cell[0, 0]], chains[cell[0, 1]], chains[cell[0, 2]]
    assert a[0] == b[0] != c[0]  # the parent region, within model 0
    assert a[1] == c[1]  # all of model 0
    other = chains[cell[1, 0]]
    assert other[0] != a[0] and other[1] != a[1]  # model 1's regions differ
    assert len({ch[-1] for ch in chains}) == 1  # one shared root
    # a crossing of flat partitions: (g, t) -> (g, all) -> root
    flat = CrossPartitioner(
        [
            ("g", GroupColumnPartitioner(), [1]),
            ("t", GroupColumnPartitioner(), [0]),
        ]
    ).fit(np.column_stack([np.tile(np.arange(4), 4), np.repeat([0, 1], 8)]))
    chains = flat.cell_ancestors()
    assert all(len(ch) == 2 for ch in chains)
    per_group = {}
    for code, ch in zip(flat.cell_codes_.tolist(), chains, strict=True):
        per_group.setdefault(code[0], set()).add(int(ch[0]))
    assert [len(v) for v in per_group.values()] == [1, 1]


def test_cross_partitioner_small_cell_falls_back_within_its_group():
    from sklearn_betacal import BetaBinningCalibrator, UMDBinner

    # group 1's right-hand text leaf has 10 rows: it falls back to the
    # group-1 region of its kd-parent (both right leaves), not to the root
    part = KDTreePartitioner(max_depth=1).fit(np.linspace(0, 1, 101).reshape(-1, 1))
    rng = np.random.default_rng(3)
    g = np.repeat([0, 0, 1, 1], [150, 150, 150, 10])
    z = np.r_[
        rng.uniform(0, 0.49, 150),
        rng.uniform(0.51, 1, 150),
        rng.uniform(0, 0.49, 150),
        rng.uniform(0.51, 1, 10),
    ]
    h = rng.uniform(size=g.size)
    y = (rng.uniform(size=g.size) < np.where(g == 1, h**2, h)).astype(int)
    X = np.column_stack([h, z, g])
    cross = CrossPartitioner(
        [("model", GroupColumnPartitioner(), [1]), ("text", FrozenEstimator(part), [0])]
    )
    with pytest.warns(UserWarning, match="10 rows in 1 cells use their nearest"):
        bb = BetaBinningCalibrator(cross, points_per_bin=50, delta=0.0).fit(X, y)
    (small,) = bb.fallback_cells_
    assert bb.partitioner_.cell_codes_[small].tolist() == [1, 1]
    assert bb.fallback_to_[0] == bb.partitioner_.cell_ancestors()[small][0]
    # its binning is UMD on all of group 1's rows (the region below the node)
    rows = g == 1
    umd = UMDBinner(n_bins=int(rows.sum()) // 50, delta=0.0).fit(h[rows], y[rows])
    grid = np.linspace(0.01, 0.99, 25)
    Xq = np.column_stack([grid, np.full(25, 0.9), np.ones(25)])
    assert_allclose(bb.predict_proba(Xq)[:, 1], umd.predict_proba(grid)[:, 1])


def test_cross_partitioner_works_inside_beta_binning():
    from sklearn_betacal import BetaBinningCalibrator

    rng = np.random.default_rng(1)
    n = 2000
    h = rng.uniform(size=n)
    model = rng.integers(0, 2, size=n)
    emb = rng.normal(size=n)
    y = (rng.uniform(size=n) < np.where(model == 1, h, h**3)).astype(int)
    X = np.column_stack([h, emb, model])
    cross = CrossPartitioner(
        [
            ("text", KDTreePartitioner(max_depth=1), [0]),
            ("model", GroupColumnPartitioner(), [1]),
        ]
    )
    bb = BetaBinningCalibrator(partitioner=cross, points_per_bin=50, random_state=0)
    bb.fit(X, y)
    assert bb.partitioner_.n_cells_ == 4
    assert set(np.unique(bb.apply(X))) == {0, 1, 2, 3}
    p = bb.predict_proba(X)[:, 1]
    # the model-0 cells learn the h**3 curve: lower calibrated confidence
    assert p[model == 0].mean() < p[model == 1].mean() - 0.15


def test_cross_partitioner_rejects_bad_components():

    Z = np.zeros((4, 2))
    with pytest.raises(ValueError, match="at least one"):
        CrossPartitioner([]).fit(Z)
    with pytest.raises(ValueError, match="no transform"):
        CrossPartitioner([("x", object(), [0])]).fit(Z)


def test_cross_partitioner_bad_names_get_sklearn_words():
    Z = np.column_stack([np.arange(8.0), np.repeat([0, 1], 4)])
    for parts, match in [
        (
            [("a", KDTreePartitioner(), [0]), ("a", GroupColumnPartitioner(), [1])],
            "not unique",
        ),
        ([("a__b", KDTreePartitioner(), [0])], "must not contain __"),
        ([("partitioners", KDTreePartitioner(), [0])], "conflict"),
        ([(0, KDTreePartitioner(), [0])], "names must be strings"),
    ]:
        with pytest.raises(ValueError, match=match):
            CrossPartitioner(parts).fit(Z)


def test_cross_partitioner_components_params_reachable():
    # as ColumnTransformer: <name>__<param> in get_params / set_params, a
    # component replaced by name on the same columns, a grid search over a
    # component's parameter through a calibrator
    cross = CrossPartitioner(
        [
            ("kd", KDTreePartitioner(max_depth=1), [0]),
            ("g", GroupColumnPartitioner(), [1]),
        ]
    )
    params = cross.get_params()
    assert params["kd__max_depth"] == 1 and params["g"] is cross.partitioners[1][1]
    assert set(cross.get_params(deep=False)) == {"partitioners"}
    cross.set_params(kd__max_depth=3)
    assert cross.partitioners[0][1].max_depth == 3
    assert clone(cross).get_params()["kd__max_depth"] == 3
    cross.set_params(g=KDTreePartitioner(max_depth=2))
    assert cross.partitioners[1][0] == "g" and cross.partitioners[1][2] == [1]
    assert cross.get_params()["g__max_depth"] == 2
    with pytest.raises(ValueError, match="Invalid parameter"):
        cross.set_params(nope__max_depth=1)
    # a new list and its components' parameters in one call: the list first
    # (as Pipeline's steps=); the discarded component is not touched
    old, new = KDTreePartitioner(max_depth=1), KDTreePartitioner(max_depth=2)
    cross = CrossPartitioner([("kd", old, [0])])
    cross.set_params(partitioners=[("kd2", new, [0])], kd2__max_depth=7)
    assert new.max_depth == 7 and old.max_depth == 1
    # a component that is no estimator: fit's own message, also through a
    # calibrator (which reads the cross's tags first)
    bad = CrossPartitioner([("a", None, [0])])
    with pytest.raises(ValueError, match="no transform method"):
        BetaBinningCalibrator(bad).fit(
            np.column_stack([np.linspace(0.1, 0.9, 50), np.arange(50.0)]),
            np.arange(50) % 2,
        )

    rng = np.random.default_rng(0)
    n = 3000
    h = rng.uniform(size=n)
    z = rng.normal(size=n)
    g = rng.integers(0, 2, size=n)
    # miscalibrated on one side of z only: a depth-1 cut on z helps
    y = (rng.uniform(size=n) < np.where(z > 0, h, h**3)).astype(int)
    X = np.column_stack([h, z, g])
    bb = BetaBinningCalibrator(
        partitioner=CrossPartitioner(
            [
                ("kd", KDTreePartitioner(max_depth=1), [0]),
                ("g", GroupColumnPartitioner(), [1]),
            ]
        ),
        points_per_bin=50,
        random_state=0,
    )
    search = GridSearchCV(
        bb, {"partitioner__kd__max_depth": [0, 1]}, cv=3, scoring="neg_log_loss"
    ).fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and scores[0] != scores[1]
    assert search.best_params_ == {"partitioner__kd__max_depth": 1}
    fitted = search.best_estimator_.partitioner_.partitioners_[0][1]
    assert fitted.max_depth == 1


def test_kdtree_apply_bounds_per_axis_and_per_slot_agree():
    """Deep trees: the per-slot bounds check (many leaves) and the per-axis
    one (tables no larger than the rows) give the reference's cells."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3000, 3))
    part = KDTreePartitioner(max_depth=11).fit(X)
    assert part.n_cells_ > 1024  # 3 axes x leaves > 1024: per slot for 40 rows
    leaves, _ = _reference_leaves(X, 11, 1)
    X_new = np.vstack([rng.normal(size=(30, 3)) * 1.3, X[:10]])
    want = _reference_apply(leaves, X_new)
    assert_array_equal(part.apply(X_new), want)
    # the same rows repeated past 3 x leaves: per feature axis
    many = np.tile(X_new, (200, 1))
    assert_array_equal(part.apply(many), np.tile(want, 200))
