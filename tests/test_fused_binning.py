# SPDX-License-Identifier: MIT
"""The fused cell-wise UMD kernel against the per-table reference.

``umd_fit_segments`` / ``umd_predict_segments`` must give, bit for bit, what
one ``umd_fit`` / ``umd_predict`` per segment gives (the per-cell loop that
``BetaBinningCalibrator`` ran before the fused kernel, kept here as the
reference), over random segment layouts, tied scores, weights, ``delta``
and seeds; and the estimator must reproduce that loop exactly.
"""

import numpy as np
import pytest
from _umd_oracle import (
    as_cell_tables,
    tie_break,
    umd_fit,
    umd_predict,
)
from numpy.testing import assert_array_equal
from sklearn.base import BaseEstimator, TransformerMixin

from sklearn_betacal import (
    BetaBinningCalibrator,
    GroupColumnPartitioner,
    ScalingBetaBinningCalibrator,
)
from sklearn_betacal._base import resolve_n_bins
from sklearn_betacal._kernels._cell_binning import (
    _segmented_cumsum,
    segment_lookup,
    stack_tables,
    umd_fit_segments,
    umd_predict_segments,
)
from sklearn_betacal._kernels._grid import grid_positions, table_grid


class _IdColumn(TransformerMixin, BaseEstimator):
    """Partitioner that returns its single column as the cell ids, as is."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return np.asarray(X)[:, 0].astype(np.int64)

    def __sklearn_is_fitted__(self):
        return True


FIELDS = ("edges", "values", "counts", "lookup_edges", "lookup_values")


def _same(a, b):
    """Byte-identical arrays (or both None)."""
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def _layout(seed):
    """A random segment layout with ties, weights and delta (kernel input)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 500))
    S = int(rng.integers(1, 15))
    seg = rng.integers(-1, S, size=n)
    h = rng.uniform(size=n)
    if seed % 2:  # ties, like verbalized confidences
        h = np.round(h * int(rng.integers(2, 21))) / 20
    delta = (0.0, 1e-10, 1e-3)[seed % 3]
    if delta > 0 and seed % 4 < 2:
        h = tie_break(h, delta, rng)
    if seed % 5 < 3:
        t = (rng.uniform(size=n) < h).astype(np.float64)
    else:
        t = rng.uniform(size=n)  # proxies (Alg. 3)
    w = (
        None,
        rng.integers(0, 4, size=n).astype(np.float64),  # integer, with zeros
        rng.uniform(0, 3, size=n) * (rng.uniform(size=n) < 0.9),  # real
        np.ones(n),
    )[seed % 4]
    # renumber so that every segment has a row of positive weight
    ok = seg >= 0 if w is None else (seg >= 0) & (w > 0)
    present = np.unique(seg[ok])
    remap = np.full(S + 1, -1)
    remap[present] = np.arange(present.shape[0])
    seg = np.where(ok, remap[seg], -1)
    S = present.shape[0]
    n_s = np.bincount(seg[seg >= 0], minlength=S)
    B = np.maximum(1, n_s // rng.integers(2, 6, size=S))
    if seed % 7 == 0:
        B = rng.integers(1, 9, size=S)  # may have N_s < 2 B_s: empty bins
    return h, t, w, seg, B, delta, rng


def _reference_tables(h, t, w, seg, B, delta):
    tables = []
    for s in range(B.shape[0]):
        rows = np.flatnonzero(seg == s)
        ws = None if w is None else w[rows]
        table = umd_fit(h[rows], t[rows], ws, int(B[s]), delta=delta)
        # as the engine stores a table (with its lookup when delta > 0)
        tables.append(as_cell_tables(table))
    return tables


@pytest.mark.parametrize("seed", range(120))
def test_fused_fit_and_predict_equal_per_segment_reference(seed):
    h, t, w, seg, B, delta, rng = _layout(seed)
    if B.shape[0] == 0:
        pytest.skip("layout without any segment")
    fused = umd_fit_segments(h, t, w, seg, B, delta=delta)
    ref = _reference_tables(h, t, w, seg, B, delta)
    assert fused.n_tables == len(ref)
    for s, table in enumerate(ref):
        got = fused.table(s)
        for f in FIELDS:
            assert _same(getattr(got, f), getattr(table, f)), (s, f)
    # prediction: fresh scores, fit scores, tied values, edges and their
    # float neighbours, values outside [0, 1]
    x = np.concatenate(
        [
            rng.uniform(size=100),
            h[:60],
            np.unique(np.round(h, 2)),
            fused.edges,
            np.nextafter(fused.edges, 2.0),
            np.nextafter(fused.edges, -1.0),
            [-0.5, 0.0, 1.0, 1.5],
        ]
    )
    j = rng.integers(0, len(ref), size=x.shape[0])
    got = umd_predict_segments(fused, x, j)
    want = np.empty_like(got)
    for s in range(len(ref)):
        rows = np.flatnonzero(j == s)
        want[rows] = umd_predict(ref[s], x[rows])
    assert got.tobytes() == want.tobytes()
    # the prepared lookup (grid count + one gather) gives the same bytes
    lookup = segment_lookup(fused)
    assert lookup is not None
    assert umd_predict_segments(fused, x, j, lookup).tobytes() == want.tobytes()


@pytest.mark.parametrize("seed", range(0, 120, 7))
def test_fused_fit_blockwise_equals_reference(monkeypatch, seed):
    """Blocks of 7 rows: the blockwise sort, tie runs and sums cross blocks."""
    import _umd_oracle as _binning

    from sklearn_betacal._kernels import _cell_binning

    # both kernels in blocks of 7 rows: the fused one and its reference
    monkeypatch.setattr(_binning, "_CHUNK", 7)
    monkeypatch.setattr(_cell_binning, "_CHUNK", 7)
    h, t, w, seg, B, delta, _ = _layout(seed)
    if B.shape[0] == 0:
        pytest.skip("layout without any segment")
    fused = umd_fit_segments(h, t, w, seg, B, delta=delta)
    for s, table in enumerate(_reference_tables(h, t, w, seg, B, delta)):
        for f in FIELDS:
            assert _same(getattr(fused.table(s), f), getattr(table, f)), (s, f)
    # a segment given as a function of the row indices: the same tables
    again = umd_fit_segments(h, t, w, lambda rows: seg[rows], B, delta=delta)
    for f in ("edges", "values", "counts"):
        assert _same(getattr(again, f), getattr(fused, f))


@pytest.mark.parametrize("seed", range(40))
def test_fused_fit_one_segment_without_segment_array(seed):
    """``segment=None`` (the root: all rows, no second sort) is ``umd_fit``."""
    h, t, w, _, _, delta, rng = _layout(seed)
    B = int(rng.integers(1, 12))
    got = umd_fit_segments(h, t, w, None, [B], delta=delta).table(0)
    want = _reference_tables(
        h, t, w, np.zeros(h.shape[0], dtype=int), np.array([B]), delta
    )
    for f in FIELDS:
        assert _same(getattr(got, f), getattr(want[0], f)), f


@pytest.mark.parametrize("delta", [0.0, 1e-10])
def test_fused_kernel_many_segments_exact_at_edges(delta):
    """20,000 tables: the offset search must stay exact next to every edge."""
    rng = np.random.default_rng(3)
    S, n = 20_000, 200_000
    seg = np.concatenate([np.arange(S), rng.integers(0, S, size=n - S)])
    h = tie_break(np.round(rng.uniform(size=n) * 40) / 40, delta, rng)
    t = rng.uniform(size=n)
    B = np.maximum(1, np.bincount(seg, minlength=S) // 3)
    fused = umd_fit_segments(h, t, None, seg, B, delta=delta)
    x = np.concatenate(
        [fused.edges, np.nextafter(fused.edges, 2.0), np.nextafter(fused.edges, -1.0)]
    )
    j = np.repeat(np.repeat(np.arange(S), B - 1), 3)  # each edge in its table
    got = umd_predict_segments(fused, x, j)
    # the per-table grids serve any number of tables (memory linear in steps)
    lookup = segment_lookup(fused)
    assert umd_predict_segments(fused, x, j, lookup).tobytes() == got.tobytes()
    want = np.empty_like(got)
    for s in np.unique(j[:: max(1, j.shape[0] // 500)]):  # 500 tables checked
        rows = np.flatnonzero(j == s)
        want[rows] = umd_predict(fused.table(s), x[rows])
        assert got[rows].tobytes() == want[rows].tobytes()


def test_stack_tables_keeps_every_table():
    rng = np.random.default_rng(0)
    for delta in (0.0, 1e-3):
        h, t = rng.uniform(size=300), rng.uniform(size=300)
        seg = rng.integers(0, 5, size=300)
        cells = umd_fit_segments(h, t, None, seg, [3, 1, 4, 2, 5], delta=delta)
        root = umd_fit(h, t, None, 7, delta=delta)
        one = umd_fit(h[:3], t[:3], None, 1, delta=delta)
        stacked = stack_tables([as_cell_tables(root), cells, as_cell_tables(one)])
        parts = [root] + [cells.table(i) for i in range(5)] + [one]
        assert stacked.n_tables == 7
        x = rng.uniform(size=500)
        j = rng.integers(0, 7, size=500)
        want = np.array(
            [umd_predict(parts[k], x[i : i + 1])[0] for i, k in enumerate(j)]
        )
        assert umd_predict_segments(stacked, x, j).tobytes() == want.tobytes()
        got = umd_predict_segments(stacked, x, j, segment_lookup(stacked))
        assert got.tobytes() == want.tobytes()
    with pytest.raises(ValueError, match="one delta"):
        stack_tables(
            [
                as_cell_tables(umd_fit(h, t, None, 3)),
                as_cell_tables(umd_fit(h, t, None, 3, delta=1e-3)),
            ]
        )


@pytest.mark.parametrize("kind", range(6))
def test_table_grid_count_is_searchsorted(kind):
    """The per-table grids count exactly, whatever the spacing of the steps."""
    rng = np.random.default_rng(kind)
    for K in (0, 1, 2, 7, 300, 5000):
        s = (
            rng.uniform(size=K),
            np.round(rng.uniform(size=K) * 10) / 10,  # few distinct: crowded
            1.0 - rng.exponential(1e-9, size=K),  # a cluster below 1
            rng.standard_normal(K) * 10.0 ** rng.integers(-300, 300),
            np.full(K, 0.5),
            np.concatenate([rng.uniform(size=K), [5e-324, -5e-324, 0.0, 1.0]]),
        )[kind]
        s = np.unique(s)
        x = np.concatenate(
            [
                rng.uniform(-0.5, 1.5, size=500),
                s,
                np.nextafter(s, np.inf),
                np.nextafter(s, -np.inf),
                [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e308, -1e308],
            ]
        )
        # one table, and the same steps as table 1 of three (ties repeated)
        k = s.shape[0]
        one = table_grid(s, np.array([0, k]), np.arange(k + 1.0))
        got = grid_positions(one, x) - one.table_start[0]
        assert_array_equal(got, np.searchsorted(s, x, side="right"))
        rep = np.repeat(s, 2)
        st = np.array([0, 3, 3 + rep.shape[0], 5 + rep.shape[0]])
        steps = np.concatenate([[0.1, 0.2, 0.3], rep, [-1.0, 2.0]])
        three = table_grid(steps, st, np.arange(steps.shape[0] + 3.0))
        pos = grid_positions(three, x, np.ones(x.shape[0], dtype=np.intp))
        assert_array_equal(
            three.values[pos] - (3 + 1), np.searchsorted(rep, x, side="right")
        )


def test_fused_fit_rejects_empty_segment():
    h = np.linspace(0, 1, 10)
    with pytest.raises(ValueError, match="at least one row"):
        umd_fit_segments(h, h, None, np.zeros(10, dtype=int), [2, 2])


def test_segmented_cumsum_is_cumsum_per_segment():
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 40, size=50)
    start = np.concatenate(([0], np.cumsum(counts)))
    v = rng.uniform(size=int(counts.sum()))
    got = _segmented_cumsum(v, start, counts)
    for s in range(50):
        sl = slice(start[s], start[s + 1])
        assert got[sl].tobytes() == np.cumsum(v[sl]).tobytes()


# -------------------------------------------- estimator vs the per-cell loop


def _reference_bb(est, h, t, w, cells, rng):
    """The per-cell loop BetaBinningCalibrator ran before the fused kernel."""
    b = est.points_per_bin_
    delta = float(est.delta)
    h = tie_break(h, delta, rng)
    total = float(h.shape[0]) if w is None else w.sum()
    labels = bool(getattr(est, "label_floor", False))  # S-BB bins proxies
    root = umd_fit(
        h, t, w, resolve_n_bins(None, b, total, who="ref"), delta=delta, labels=labels
    )
    tables = {}
    for s in np.unique(cells[cells >= 0]).tolist():
        rows = np.flatnonzero(cells == s)
        ws = None if w is None else w[rows]
        n_s = float(rows.shape[0]) if ws is None else float(ws.sum())
        if n_s >= 2 * b:
            tables[s] = umd_fit(
                h[rows], t[rows], ws, int(n_s // b), delta=delta, labels=labels
            )
    return root, tables


def _predict_reference(root, tables, h, cells):
    out = umd_predict(root, h)
    for s, table in tables.items():
        rows = np.flatnonzero(cells == s)
        out[rows] = umd_predict(table, h[rows])
    return out


@pytest.mark.parametrize("seed", range(12))
def test_beta_binning_equals_per_cell_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(300, 3000))
    n_groups = int(rng.integers(1, 40))
    g = rng.integers(-1, n_groups, size=n)
    sparse = seed % 3 == 0
    if sparse:  # cell ids used as given: large, sparse ids and -1
        g = np.where(g >= 0, g * 7919 + 10**9, -1)
    h = rng.uniform(size=n)
    if seed % 2:
        h = np.round(h * 20) / 20
    y = (rng.uniform(size=n) < h).astype(np.float64)
    w = None if seed % 4 < 2 else rng.integers(1, 4, size=n).astype(np.float64)
    delta = (1e-10, 0.0, 1e-3)[seed % 3]
    b = int(rng.integers(2, 30))
    X = np.column_stack([h, g])
    part = _IdColumn() if sparse else GroupColumnPartitioner()
    bb = BetaBinningCalibrator(
        part,
        points_per_bin=b,
        delta=delta,
        random_state=seed,
        label_floor=seed % 4 != 3,  # the plain means too (seeds 3, 7, 11)
    ).fit(X, y, sample_weight=w)
    cells = bb.apply(X)
    root, tables = _reference_bb(bb, h, y, w, cells, np.random.RandomState(seed))
    for f in FIELDS[:3]:
        assert _same(bb.root_["bin_" + f], getattr(root, f))
        assert _same(getattr(bb.tables_.table(0), f), getattr(root, f))
    assert sorted(bb.cell_tables_) == sorted(tables)
    for s, table in tables.items():
        for f in FIELDS[:3]:
            assert _same(bb.cell_tables_[s]["bin_" + f], getattr(table, f))
    X_new = np.column_stack(
        [
            np.concatenate([rng.uniform(size=500), h[:300]]),
            rng.integers(-1, n_groups + 2, size=800),
        ]
    )
    if sparse:
        X_new[:, 1] = np.where(X_new[:, 1] >= 0, X_new[:, 1] * 7919 + 10**9, -1)
    cells_new = bb.apply(X_new)
    want = _predict_reference(root, tables, X_new[:, 0], cells_new)
    assert bb.predict_proba(X_new)[:, 1].tobytes() == want.tobytes()


def test_scaling_beta_binning_equals_per_cell_loop():
    """S-BB bins fitted proxies (non-integer targets) through the same kernel."""
    rng = np.random.default_rng(7)
    n = 6000
    g = rng.integers(0, 12, size=n)
    h = rng.uniform(size=n)
    y = (rng.uniform(size=n) < h ** (0.5 + g / 8)).astype(int)
    X = np.column_stack([h, g])
    sbb = ScalingBetaBinningCalibrator(
        GroupColumnPartitioner(), points_per_bin=40, random_state=3
    ).fit(X, y)
    d2 = sbb.binning_indices_
    rs = np.random.RandomState(3)
    rs.permutation(n)  # the split's draw comes first
    t2 = sbb.scaler_.predict_proba(np.column_stack([h[d2], g[d2]]))[:, 1]
    root, tables = _reference_bb(sbb, h[d2], t2, None, sbb.apply(X[d2]), rs)
    assert_array_equal(sbb.root_["bin_values"], root.values)
    for s, table in tables.items():
        assert _same(sbb.cell_tables_[s]["bin_values"], table.values)
    want = _predict_reference(root, tables, h, sbb.apply(X))
    assert sbb.predict_proba(X)[:, 1].tobytes() == want.tobytes()


def test_cell_tables_view_is_a_read_only_mapping():
    X = np.column_stack([np.linspace(0, 1, 400), np.repeat([3, 8], 200)])
    y = (np.arange(400) % 3 == 0).astype(int)
    bb = BetaBinningCalibrator(GroupColumnPartitioner(), points_per_bin=20).fit(X, y)
    view = bb.cell_tables_
    assert len(view) == 2 and list(view) == [0, 1] and 1 in view and 5 not in view
    with pytest.raises(KeyError):
        view[5]
    with pytest.raises(KeyError):
        view["a"]
    assert dict(view.items()).keys() == {0, 1}
    assert "2 cell tables" in repr(view)


@pytest.mark.parametrize("frame", [False, True])
def test_prediction_in_blocks_equals_one_block(monkeypatch, frame):
    import pandas as pd

    from sklearn_betacal import KDTreePartitioner, _base

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(size=1000), rng.standard_normal((1000, 3))])
    y = (rng.uniform(size=1000) < X[:, 0]).astype(int)
    if frame:
        X = pd.DataFrame(X, columns=["conf", "a", "b", "c"])
    bb = BetaBinningCalibrator(
        KDTreePartitioner(max_depth=2), points_per_bin=20, random_state=0
    ).fit(X, y)
    whole = (bb.predict_proba(X), bb.predict(X), bb.apply(X))
    monkeypatch.setattr(_base, "PREDICT_BLOCK_ROWS", 7)
    blocked = (bb.predict_proba(X), bb.predict(X), bb.apply(X))
    for a, b in zip(whole, blocked, strict=True):
        assert a.tobytes() == b.tobytes()


def test_fused_fit_more_segments_than_16_bit_keys():
    """70,000 segments: the two-digit radix sort by segment is exact too."""
    rng = np.random.default_rng(11)
    S = 70_000
    seg = np.concatenate([np.arange(S), rng.integers(-1, S, size=140_000)])
    h = rng.uniform(size=seg.shape[0])
    t = (rng.uniform(size=seg.shape[0]) < h).astype(np.float64)
    B = np.maximum(1, np.bincount(seg[seg >= 0], minlength=S) // 2)
    fused = umd_fit_segments(h, t, None, seg, B, delta=0.0)
    for s in rng.choice(S, size=300, replace=False):
        rows = np.flatnonzero(seg == s)
        want = umd_fit(h[rows], t[rows], None, int(B[s]))
        got = fused.table(int(s))
        for f in FIELDS[:3]:
            assert _same(getattr(got, f), getattr(want, f))


@pytest.mark.parametrize("chunk", [7, 1 << 16])
def test_score_order_is_argsort_in_int32(monkeypatch, chunk):
    """The int32 score order (narrowed in place, block by block) is argsort."""
    from sklearn_betacal._kernels import _cell_binning

    monkeypatch.setattr(_cell_binning, "_CHUNK", chunk)
    rng = np.random.default_rng(2)
    for n in (0, 1, 2, 13, 14, 15, 100, 70_001):
        h = np.round(rng.uniform(size=n), 3)  # ties: stable with weights
        got = _cell_binning.score_order(h)
        assert got.dtype == np.int32
        assert_array_equal(h[got], np.sort(h))
        got = _cell_binning.score_order(h, np.ones(n))
        assert_array_equal(got, np.argsort(h, kind="stable"))


@pytest.mark.parametrize("weighted", [False, True])
def test_ancestor_regions_fitted_in_layers_equal_umd_on_their_rows(weighted):
    """Deep kd-tree, every leaf too small: nested ancestor regions (fitted
    one layer of disjoint regions at a time) are UMD on their leaves' rows."""
    import warnings

    from sklearn.frozen import FrozenEstimator

    from sklearn_betacal import KDTreePartitioner

    rng = np.random.default_rng(4)
    n = 3000
    F = rng.normal(size=(n, 2))
    part = KDTreePartitioner(max_depth=7).fit(F)
    # uneven cell sizes: keep a random share of every leaf's rows, so the
    # regions chosen lie at several depths (nested ones among them)
    keep = (
        rng.uniform(size=n) < rng.uniform(0.2, 1.0, size=part.n_cells_)[part.apply(F)]
    )
    F, h = F[keep], rng.uniform(size=int(keep.sum()))
    y = (rng.uniform(size=h.shape[0]) < h).astype(int)
    w = rng.integers(1, 3, size=h.shape[0]).astype(float) if weighted else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        bb = BetaBinningCalibrator(
            FrozenEstimator(part), points_per_bin=40, delta=0.0
        ).fit(np.column_stack([h, F]), y, sample_weight=w)
    served = np.unique(bb.fallback_to_[bb.fallback_to_ >= 0])
    assert served.size >= 3
    chains = [[int(u) for u in c] for c in part.cell_ancestors()]
    nested = {
        (u, v)
        for c in chains
        for i, v in enumerate(c)
        for u in c[i + 1 :]
        if u in served and v in served
    }
    assert nested  # a served region inside another one: two layers
    cells = part.apply(F)
    n_own = bb.n_cells_fitted_
    for k, v in enumerate(served.tolist()):
        below = [c for c, chain in enumerate(chains) if v in chain]  # leaves
        rows = np.isin(cells, below)
        ws = None if w is None else w[rows]
        n_node = rows.sum() if w is None else ws.sum()
        B = min(max(int(n_node // 40), 1), int(rows.sum()))
        want = umd_fit(h[rows], y[rows].astype(float), ws, B)
        got = bb.tables_.table(n_own + 1 + k)
        for f in FIELDS[:3]:
            assert _same(getattr(got, f), getattr(want, f)), (v, f)
