# SPDX-License-Identifier: MIT
"""Tests for UMDBinner and the UMD kernel (Alg. 4, Gupta & Ramdas 2021).

The kernel tests run the single-table oracle (``tests/_umd_oracle.py``);
UMDBinner fits on the segment engine, compared with the oracle byte for
byte (``test_umd_engine_is_the_single_table_oracle``).
"""

import math

import _umd_oracle as _binning
import numpy as np
import pytest
from _umd_oracle import (
    UMDTable,
    _nudge_average,
    edge_positions,
    umd_fit,
    umd_predict,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_betacal import UMDBinner
from sklearn_betacal._kernels import _cell_binning
from sklearn_betacal._kernels._cell_binning import tie_break, umd_predict_table

# --------------------------------------------------------------- reference


def _alg4_reference(h, t, B, *, floor=False):
    """Alg. 4 transcribed line by line, 1-based like the paper (distinct h).

    Returns the edge values h_(A_1) .. h_(A_{B-1}), Pi_1 .. Pi_B, the
    number of points behind each Pi_b, and g_UMD as a Python function with
    the paper's outer bounds h_(0) = 0 and h_(n+1) = 1 (line 11-12).
    ``floor``: a bin whose labels all agree gets f = (1/2) / (n / B + 1) or
    1 - f (label_floor: about the Krichevsky-Trofimov estimate of a bin of
    the nominal n / B labels).
    """
    n = len(h)
    order = sorted(range(n), key=lambda i: h[i])  # line 1
    hs = [None] + [h[i] for i in order]  # hs[1] .. hs[n]
    ts = [None] + [t[i] for i in order]  # line 2
    delta = (n + 1) / B  # line 3
    A = [0] + [math.ceil(k * delta) for k in range(1, B)] + [n + 1]  # line 5
    Pi, cnt = [], []
    for b in range(1, B + 1):  # lines 6-10
        lo, up = A[b - 1], A[b]
        inside = [ts[j] for j in range(lo + 1, up)]  # t_(l+1) .. t_(u-1)
        c, k = len(inside), sum(inside)
        if floor and k in (0, c):  # every label agrees
            f = 0.5 / (n / B + 1)
            Pi.append(f if k == 0 else 1 - f)
        else:
            Pi.append(k / c)
        cnt.append(c)
    hs[0], hs_end = 0.0, 1.0  # line 11
    hs.append(hs_end)

    def g(x):  # line 12
        return sum(Pi[b - 1] for b in range(1, B + 1) if hs[A[b - 1]] <= x < hs[A[b]])

    edges = [hs[A[b]] for b in range(1, B)]
    return np.array(edges), np.array(Pi), np.array(cnt, dtype=float), g


@pytest.mark.parametrize("floor", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_umd_matches_alg4_reference(seed, floor):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 300))
    B = int(rng.integers(1, n // 2 + 1))
    h = rng.uniform(size=n)  # distinct almost surely
    assert np.unique(h).size == n
    y = (rng.uniform(size=n) < h).astype(float)
    edges, Pi, cnt, g = _alg4_reference(list(h), list(y), B, floor=floor)

    model = UMDBinner(n_bins=B, delta=0.0, label_floor=floor).fit(h, y)
    assert model.n_bins_ == B
    assert_array_equal(model.bin_edges_, edges)
    assert_allclose(model.bin_values_, Pi, rtol=1e-12, atol=1e-15)
    assert_array_equal(model.bin_counts_, cnt)
    # Test-time lookup, on fit points, edges and fresh points in [0, 1).
    x = np.concatenate([h, edges, rng.uniform(size=200), [0.0]])
    expected = np.array([g(v) for v in x])
    assert_allclose(model.predict_proba(x)[:, 1], expected, rtol=1e-12, atol=0)

    # With the default tie-breaking the order is unchanged (the scores are
    # far apart compared with delta), so the bins are the same.
    nudged = UMDBinner(n_bins=B, random_state=seed, label_floor=floor).fit(h, y)
    assert_allclose(nudged.bin_values_, Pi, rtol=1e-12, atol=1e-15)
    assert_allclose(nudged.bin_edges_, edges, rtol=0, atol=2e-10)


def test_umd_label_floor_by_hand():
    # n = 23, B = 3: A = 8, 16; bins hold rows 1-7, 9-15, 17-23 (7 labels
    # each); the first all 0, the second 3 of 7, the last all 1. The floor
    # f = 1 / (2 (23 / 3 + 1)) = 3 / 52.
    h = np.arange(1, 24) / 24.0
    y = np.r_[np.zeros(8), [0, 1, 0, 1, 0, 1, 0], np.ones(8)]
    plain = UMDBinner(n_bins=3, delta=0.0, label_floor=False).fit(h, y)
    assert_array_equal(plain.bin_counts_, [7, 7, 7])
    assert_array_equal(plain.bin_values_, [0.0, 3 / 7, 1.0])
    kt = UMDBinner(n_bins=3, delta=0.0).fit(h, y)
    assert_allclose(kt.bin_values_, [3 / 52, 3 / 7, 49 / 52], rtol=1e-15)
    assert kt.bin_values_[1] == 3 / 7
    assert_array_equal(kt.bin_edges_, plain.bin_edges_)
    p = kt.predict_proba(h)[:, 1]
    assert_allclose([p.min(), p.max()], [3 / 52, 49 / 52], rtol=1e-15)
    # weights: a mean in (0, f) is raised to f = 1 / (2 (W / B + 1)) too
    w = np.r_[1e-3, np.ones(9)]
    yw = np.r_[1.0, np.zeros(9)]
    table = umd_fit(np.arange(10.0), yw, w, 1, labels=True)
    raw = umd_fit(np.arange(10.0), yw, w, 1)
    assert 0 < raw.values[0] < 0.5 / 10.001
    assert_array_equal(table.values, [0.5 / 10.001])


def test_umd_edge_positions_exact_integers():
    # ceil(k (n + 1) / B) by hand: n = 9, B = 4 -> 2.5, 5, 7.5 -> 3, 5, 8.
    assert_array_equal(edge_positions(9, 4), [3, 5, 8])
    # k (n + 1) / B = 3 exactly although 0.1-style float rounding would not.
    assert_array_equal(edge_positions(29, 10), np.arange(3, 30, 3))
    assert edge_positions(100, 1).size == 0


def test_umd_counts_leave_out_edge_points():
    h = np.arange(1, 21) / 21.0
    model = UMDBinner(n_bins=4, delta=0.0).fit(h, h > 0.5)
    # n = 20, B = 4: A = 0, 6, 11, 16, 21 -> 5, 4, 4, 4 interior points.
    assert_array_equal(model.bin_counts_, [5, 4, 4, 4])
    assert model.bin_counts_.sum() == 20 - 3


# ------------------------------------------------------------- guarantee


@pytest.mark.slow
def test_umd_guarantee_eq6_holds_with_probability_one_minus_alpha():
    # h ~ U(0, 1) and P(Y = 1 | h) = h^2, so E[Y | a <= h < b] =
    # (b^3 - a^3) / (3 (b - a)); outer bins reach the support bounds 0, 1.
    rng = np.random.default_rng(12345)
    N, B, alpha, n_rep = 500, 10, 0.1, 400
    eps = math.sqrt(math.log(2 * B / alpha) / (2 * (N // B - 1)))  # eq. (6)
    ok, z, floored = 0, [], 0
    for _ in range(n_rep):
        h = rng.uniform(size=N)
        y = (rng.uniform(size=N) < h**2).astype(float)
        model = UMDBinner(n_bins=B, delta=0.0, label_floor=False).fit(h, y)
        a = np.concatenate([[0.0], model.bin_edges_])
        b = np.concatenate([model.bin_edges_, [1.0]])
        truth = (b**3 - a**3) / (3 * (b - a))
        err = model.bin_values_ - truth
        ok += bool(np.all(np.abs(err) <= eps))
        # label_floor keeps the bound: whenever the plain means are within
        # eps, so are the floored ones (the lowest bin, truth ~ 0.003, is
        # often all 0)
        kt = UMDBinner(n_bins=B, delta=0.0).fit(h, y)
        assert_array_equal(kt.bin_edges_, model.bin_edges_)
        moved = kt.bin_values_ != model.bin_values_
        floored += bool(moved.any())
        if np.all(np.abs(err) <= eps):
            assert np.all(np.abs(kt.bin_values_ - truth) <= eps)
        # Given the edges, the interior labels are i.i.d. Bernoulli(truth)
        # (Lemma 2 of Gupta & Ramdas): standardised errors have mean 0 and
        # variance 1, a much sharper check than the eps bound.
        sd = np.sqrt(truth * (1 - truth) / model.bin_counts_)
        z.append(err / sd)
    assert ok / n_rep >= 1 - alpha
    assert floored > n_rep // 2
    z = np.concatenate(z)
    assert abs(z.mean()) < 0.05
    assert 0.9 < z.var() < 1.1


# ------------------------------------------------------------------- ties


def test_umd_real_verbalized_confidences(influences_verb):
    h = influences_verb.verbal_confidence.to_numpy()
    y = influences_verb.correct_judge.to_numpy()
    assert np.unique(h).size < 200  # heavily tied
    a = UMDBinner(n_bins=20, random_state=0).fit(h, y)
    b = UMDBinner(n_bins=20, random_state=0).fit(h, y)
    assert a.n_bins_ == 20 and a.bin_values_.shape == (20,)
    p = a.predict_proba(h)
    assert np.all((p >= 0) & (p <= 1))
    assert_array_equal(a.bin_edges_, b.bin_edges_)
    assert a.predict_proba(h).tobytes() == b.predict_proba(h).tobytes()
    # Deterministic and order-independent at test time.
    perm = np.random.default_rng(1).permutation(h.size)
    assert_array_equal(a.predict_proba(h[perm]), p[perm])

    # A tied value gets the bin values weighted by where its nudged copies
    # fell (the documented expectation over the test-time nudge).
    nudged = tie_break(h, 1e-10, np.random.RandomState(0))
    bins = np.searchsorted(a.bin_edges_, nudged, side="right")
    for v in (0.8, 0.9, 0.95):
        share = a.bin_values_[bins[h == v]].mean()
        assert_allclose(a.predict_proba([v])[0, 1], share, atol=0.01)
    # The calibrated map is far less overconfident than the raw one.
    assert abs(np.mean(p[:, 1]) - y.mean()) < 0.01 < abs(h.mean() - y.mean())


def test_umd_test_time_ties_equal_expected_randomized_output():
    rng = np.random.default_rng(0)
    h = np.repeat([0.2, 0.5, 0.9], [30, 50, 40])
    y = (rng.uniform(size=h.size) < h).astype(float)
    delta = 1e-10
    rs = np.random.RandomState(0)
    table = umd_fit(tie_break(h, delta, rs), y, None, 12, delta=delta)
    x = np.array([0.2, 0.5, 0.9, 0.3])
    plain = table._replace(delta=0.0)
    # Gupta & Ramdas: nudge the test point as well; average many draws.
    draws = [umd_predict(plain, tie_break(x, delta, rs)) for _ in range(4000)]
    assert_allclose(umd_predict(table, x), np.mean(draws, axis=0), atol=0.02)
    assert np.unique(np.searchsorted(table.edges, table.edges[:4])).size == 4


@pytest.mark.parametrize("tied", [True, False])
def test_umd_predict_lookup_equals_exact_nudge_average(tied):
    # The fitted raw-score lookup (with stored outputs at tied scores) must
    # give exactly what the exact computation gives, including for scores a
    # hair away from a tied value (they fall back to the exact path).
    rng = np.random.default_rng(11)
    n = 3000
    h = rng.choice(np.linspace(0.05, 1, 20), size=n) if tied else rng.uniform(size=n)
    y = (rng.uniform(size=n) < h).astype(float)
    delta = 1e-10
    hn = tie_break(h, delta, np.random.RandomState(2))
    with_raw = umd_fit(hn, y, None, 40, delta=delta, raw=h)
    bare = with_raw._replace(lookup_edges=None, lookup_values=None)
    x = np.concatenate(
        [h, h + 3e-11, h - 3e-11, np.nextafter(h, 2), rng.uniform(size=500)]
    )
    a = umd_predict(with_raw, x)
    b = umd_predict(bare, x)
    assert_array_equal(a, b)
    ref = _nudge_average(with_raw.edges, with_raw.values, x, delta)
    assert_allclose(a, ref, rtol=0, atol=1e-15)
    if tied:
        # every tied raw value is answered from the stored table
        assert np.isnan(with_raw.lookup_values).sum() >= 1
        hit = with_raw.lookup_values[
            np.searchsorted(with_raw.lookup_edges, h, side="right")
        ]
        assert not np.isnan(hit).any()


def _sorted_window_ties(edges, delta, raw):
    """Reference: each lookup cluster's tie by a sorted search of every raw score."""
    starts, ends, c_lo, c_hi = _binning._clusters(edges, delta)
    s = np.sort(raw)
    i = np.searchsorted(s, c_lo, side="left")
    j = np.searchsorted(s, c_hi, side="right")
    v = np.full(c_lo.size, np.nan)
    ok = j - i >= 2
    ok[ok] = s[i[ok]] == s[j[ok] - 1]
    v[ok] = s[i[ok]]
    return starts, ends, c_lo, c_hi, v


@pytest.mark.parametrize("delta", [1e-10, 1e-3, 0.05])
@pytest.mark.parametrize("data", ["tied", "continuous", "weighted"])
def test_umd_lookup_ties_equal_sorted_search_of_every_row(delta, data):
    # umd_fit finds each lookup cluster's tie from the near-edge rows, block
    # by block; the lookup must be the bytes of the one from a sorted search
    # of every raw score.
    rng = np.random.default_rng(5)
    n, B = 4000, 37
    if data == "tied":
        h = rng.choice(np.linspace(0.05, 1, 23), size=n)
    else:
        h = rng.uniform(size=n)
    w = None if data != "weighted" else rng.choice([0.0, 1.0, 2.5], size=n)
    y = (rng.uniform(size=n) < h).astype(float)
    hn = tie_break(h, delta, np.random.RandomState(3))
    table = umd_fit(hn, y, w, B, delta=delta, raw=h)
    keep = slice(None) if w is None else w > 0
    ref = _binning._with_lookup(
        table._replace(lookup_edges=None, lookup_values=None),
        _sorted_window_ties(table.edges, delta, h[keep]),
    )
    for f in ("lookup_edges", "lookup_values"):
        assert getattr(table, f).tobytes() == getattr(ref, f).tobytes(), f
    if data == "tied" and delta < 1e-6:
        # every tied raw score is answered from the table (the near-edge rows
        # held the ties at the edges: the branch that stores E(v) ran; with a
        # wide delta, windows hold several tied values and store none)
        hit = table.lookup_values[np.searchsorted(table.lookup_edges, h, side="right")]
        assert not np.isnan(hit).any()


@pytest.mark.parametrize("chunk", [1, 7, 10_000])
@pytest.mark.parametrize("delta", [1e-10, 1e-4])
def test_umd_window_ties_by_blocks_equal_sorted_search(chunk, delta):
    # raw scores on the ends of every window, a hair outside, at tied values
    # (some windows with one value, some with two) and spread at random,
    # nudged as tie_break does, counted in blocks of any size
    rng = np.random.default_rng(chunk)
    edges = np.sort(rng.uniform(size=40))
    edges[10:14] = edges[10]  # an edge value repeated: one wide cluster
    lo, hi = _cell_binning._windows(edges, delta)
    lo_, hi_ = lo[::2], hi[::2]  # every other window: several values
    pool = np.concatenate(
        [lo_, hi_, np.nextafter(lo_, -1), np.nextafter(hi_, 2), (lo_ + hi_) / 2]
    )
    raw = np.concatenate([rng.choice(pool, size=3000), rng.uniform(size=3000)])
    # the others: one value once (no tie), three times (a tie), twice with
    # one score at the window's upper or lower end (no tie)
    mid = (lo[1::2] + hi[1::2]) / 2
    kind = np.arange(mid.size) % 4
    raw = np.concatenate(
        [
            raw,
            np.repeat(
                mid, [1, 3, 2, 2] * (mid.size // 4) + [1, 3, 2, 2][: mid.size % 4]
            ),
            hi[1::2][kind == 2],
            lo[1::2][kind == 3],
        ]
    )
    raw = rng.permutation(np.clip(raw, 0, 1))
    h = tie_break(raw, delta, np.random.default_rng(1))
    bins = np.searchsorted(edges, h, side="right")
    # the engine's collector (the one estimators use) and the oracle's
    for ties in (
        _cell_binning._WindowTies(edges, delta),
        _binning._WindowTies(edges, delta),
    ):
        for a in range(0, raw.size, chunk):
            ties.add(h[a : a + chunk], bins[a : a + chunk], raw[a : a + chunk])
        got, want = ties.result(), _sorted_window_ties(edges, delta, raw)
        if not isinstance(got, tuple):
            got, want = (got,), want[-1:]
        for g, w in zip(got, want, strict=True):
            assert g.tobytes() == w.tobytes()
    assert np.isfinite(want[-1]).any() and np.isnan(want[-1]).any()


@pytest.mark.parametrize("delta", [1e-12, 1e-10, 1e-3, 0.05, 1.0])
def test_umd_near_edge_margin_holds_every_window_score(delta):
    # A raw score anywhere in an edge's lookup window, nudged by either
    # extreme of U(0, delta) as tie_break computes it, lies within the
    # margin of that edge: umd_fit then keeps it among the near-edge rows.
    rng = np.random.default_rng(8)
    edges = np.sort(np.concatenate([rng.uniform(size=200), [0.0, 1.0, 0.5]]))
    lo, hi = _cell_binning._windows(edges, delta)
    margin = _cell_binning._near_margin(edges, delta)
    for x in (lo, hi, (lo + hi) / 2, rng.uniform(lo, hi)):
        for u in (0.0, delta):
            h = np.full(x.shape, u)
            h += x
            h /= 1.0 + delta
            assert np.all(np.abs(h - edges) <= margin)


def test_umd_ties_without_nudging_average_over_orderings():
    # delta = 0: a tie straddling an edge contributes its mean label to every
    # position, i.e. the average of Alg. 4 over the orders of the tie.
    h = np.array([0.1, 0.5, 0.5, 0.5, 0.5, 0.9])
    y = np.array([0.0, 1.0, 0.0, 1.0, 1.0, 1.0])
    # n = 6, B = 2: A = (0, 4, 7); bin 1 = positions 1..3, bin 2 = 5..6.
    table = umd_fit(h, y, None, 2)
    assert_array_equal(table.edges, [0.5])
    assert_allclose(table.values, [(0 + 0.75 + 0.75) / 3, (0.75 + 1) / 2])
    assert_allclose(table.counts, [3, 2])


# --------------------------------------------------------------- weights


def _weights(draw, n):
    return np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_umd_integer_weight_equals_repeat(data):
    n = data.draw(st.integers(2, 40))
    seed = data.draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 8, size=n) / 8.0  # ties on purpose
    y = (rng.uniform(size=n) < 0.5).astype(float)
    w = _weights(data.draw, n)
    if w.sum() < 2:
        w[0] = 2
    B = data.draw(st.integers(1, max(1, int(w.sum()) // 2)))
    # delta = 0: exact equality with the repeated rows.
    a = UMDBinner(n_bins=B, delta=0.0).fit(h, y, sample_weight=w)
    b = UMDBinner(n_bins=B, delta=0.0).fit(np.repeat(h, w), np.repeat(y, w))
    assert_array_equal(a.bin_edges_, b.bin_edges_)
    assert_allclose(a.bin_values_, b.bin_values_, rtol=1e-12, atol=1e-14)
    x = np.linspace(0, 1, 17)
    assert_allclose(a.predict_proba(x), b.predict_proba(x), rtol=1e-12, atol=1e-14)
    # delta > 0: a weight-k row is k copies at the same nudged score.
    hn = tie_break(h, 1e-10, np.random.RandomState(seed))
    ta = umd_fit(hn, y, w.astype(float), B, delta=1e-10)
    tb = umd_fit(np.repeat(hn, w), np.repeat(y, w), None, B, delta=1e-10)
    assert_array_equal(ta.edges, tb.edges)
    assert_allclose(ta.values, tb.values, rtol=1e-12, atol=1e-14)


@pytest.mark.filterwarnings("ignore:UMDBinner. 2 bins need:UserWarning")
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_umd_zero_weight_equals_drop(data):
    n = data.draw(st.integers(3, 40))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    h = rng.integers(0, 6, size=n) / 5.0
    y = (rng.uniform(size=n) < 0.5).astype(float)
    w = rng.uniform(0.5, 3.0, size=n)
    drop = rng.uniform(size=n) < 0.3
    drop[0] = False
    w[drop] = 0.0
    a = UMDBinner(n_bins=2, random_state=7).fit(h, y, sample_weight=w)
    b = UMDBinner(n_bins=2, random_state=7).fit(
        h[~drop], y[~drop], sample_weight=w[~drop]
    )
    x = np.linspace(0, 1, 11)
    # Byte-identical: the nudges are drawn for the kept rows only.
    assert a.predict_proba(x).tobytes() == b.predict_proba(x).tobytes()


@settings(max_examples=60, deadline=None)
@given(
    h=st.lists(st.floats(0, 1), min_size=2, max_size=60),
    x=st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=20),
    B=st.integers(1, 12),
    seed=st.integers(0, 100),
)
def test_umd_predict_proba_rows_sum_to_one(h, x, B, seed):
    h = np.array(h)
    y = np.random.default_rng(seed).uniform(size=h.size) < 0.5
    model = UMDBinner(n_bins=min(B, h.size // 2), input="logit", random_state=seed)
    proba = model.fit(h, y).predict_proba(np.array(x))
    assert proba.shape == (len(x), 2)
    assert np.all((proba >= 0) & (proba <= 1))
    assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert_array_equal(model.predict(np.array(x)), (proba[:, 1] > 0.5).astype(int))


# -------------------------------------------------------------- parameters


def test_umd_deterministic_for_fixed_random_state():
    rng = np.random.default_rng(3)
    h = rng.integers(0, 10, size=500) / 10.0
    y = rng.uniform(size=500) < h
    fits = [UMDBinner(n_bins=8, random_state=42).fit(h, y) for _ in range(2)]
    assert fits[0].bin_edges_.tobytes() == fits[1].bin_edges_.tobytes()
    assert fits[0].bin_values_.tobytes() == fits[1].bin_values_.tobytes()
    other = UMDBinner(n_bins=8, random_state=43).fit(h, y)
    assert other.bin_edges_.tobytes() != fits[0].bin_edges_.tobytes()


def test_umd_points_per_bin_sets_floor_n_over_b():
    h = np.linspace(0.01, 0.99, 230)
    model = UMDBinner(points_per_bin=50).fit(h, h > 0.5)
    assert model.n_bins_ == 4  # floor(230 / 50)
    w = np.full(230, 2.0)
    assert UMDBinner(points_per_bin=50).fit(h, h > 0.5, w).n_bins_ == 9


def test_umd_n_bins_and_points_per_bin_are_exclusive():
    with pytest.raises(ValueError, match="mutually exclusive"):
        UMDBinner(n_bins=5, points_per_bin=10).fit([0.1, 0.9] * 10, [0, 1] * 10)


def test_umd_too_many_bins_warns_and_reduces():
    h = np.linspace(0, 1, 9)
    with pytest.warns(UserWarning, match="N >= 2B"):
        model = UMDBinner(n_bins=10).fit(h, h > 0.5)
    assert model.n_bins_ == 4
    assert np.all(model.bin_counts_ >= 1)
    with pytest.warns(UserWarning, match="single bin"):
        assert UMDBinner(points_per_bin=50).fit(h, h > 0.5).n_bins_ == 1


@pytest.mark.parametrize(
    "params, X, y, match",
    [
        ({"n_bins": 0}, [0.5, 0.6], [0, 1], "n_bins"),
        ({"delta": -1.0}, [0.5, 0.6], [0, 1], "delta"),
        ({"input": "score"}, [0.5, 0.6], [0, 1], "input"),
        ({}, [0.5, 1.5], [0, 1], "outside \\[0, 1\\]"),
        ({}, [0.5, np.nan], [0, 1], "NaN"),
        ({}, [0.5, 0.6, 0.7], [0, 1, 2], "Only binary classification"),
        ({}, [0.5, 0.6], ["spam", "spam"], "single class 'spam'"),
        ({}, [[0.5, 1.0], [0.6, 2.0]], [0, 1], "one confidence per row"),
    ],
)
def test_umd_rejects_bad_input(params, X, y, match):
    with pytest.raises(ValueError, match=match):
        UMDBinner(**params).fit(X, y)


def test_umd_rejects_all_zero_weights_and_missing_y():
    with pytest.raises(ValueError, match="non-zero"):
        UMDBinner().fit([0.2, 0.4], [0, 1], sample_weight=[0, 0])
    with pytest.raises(ValueError, match="y to be passed"):
        UMDBinner().fit([0.2, 0.4], None)


def test_umd_logit_input_bins_the_same_order():
    rng = np.random.default_rng(5)
    p = rng.uniform(0.01, 0.99, size=300)
    y = rng.uniform(size=300) < p
    z = np.log(p) - np.log1p(-p)
    a = UMDBinner(n_bins=6, delta=0.0).fit(p, y)
    b = UMDBinner(n_bins=6, delta=0.0, input="logit").fit(z, y)
    assert_allclose(a.bin_values_, b.bin_values_, rtol=1e-12)
    assert_array_equal(a.predict(p), b.predict(z))


def test_umd_single_bin_and_tiny_data():
    model = UMDBinner(n_bins=1, label_floor=False).fit([0.3], [1])
    assert_allclose(model.predict_proba([0.0, 1.0])[:, 1], [1.0, 1.0])
    # one agreeing label, B = 1: the Krichevsky-Trofimov (1 + 1/2) / 2
    model = UMDBinner(n_bins=1).fit([0.3], [1])
    assert_allclose(model.predict_proba([0.0, 1.0])[:, 1], [0.75, 0.75])
    assert model.bin_edges_.shape == (0,)
    table = UMDTable(np.array([]), np.array([0.25]), np.array([4.0]), 0.0)
    assert_allclose(umd_predict(table, np.array([-5.0, 5.0])), [0.25, 0.25])


def test_umd_dataframe_feature_names():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame({"conf": np.linspace(0, 1, 40)})
    model = UMDBinner(n_bins=2).fit(X, X.conf > 0.5)
    assert list(model.feature_names_in_) == ["conf"]
    assert model.predict_proba(X).shape == (40, 2)


@pytest.mark.parametrize("delta", [0.0, 1e-10])
@pytest.mark.parametrize("n_bins", [1, 7, 200, 3000])
def test_umd_engine_is_the_single_table_oracle(monkeypatch, delta, n_bins):
    """UMDBinner (the segment engine, one table, grid lookups) is byte for
    byte the single-table oracle searched with np.searchsorted only."""
    rng = np.random.default_rng(n_bins)
    n = 30_000
    h = np.concatenate(
        [np.round(rng.uniform(size=n // 2), 2), rng.uniform(size=n // 2)]
    )
    y = (rng.uniform(size=n) < h).astype(np.float64)
    x = np.concatenate([rng.uniform(-0.5, 1.5, size=n), h, [np.nan, np.inf, -np.inf]])
    model = UMDBinner(n_bins=n_bins, delta=delta, random_state=0).fit(h, y)
    # the engine's predict (x holds NaN and inf, which the estimator refuses)
    got = umd_predict_table(model._table, x)
    inside = slice(n, -3)  # the estimator's own input check: scores in [0, 1]
    assert_array_equal(model.predict_proba(x[inside])[:, 1], got[inside])

    monkeypatch.setattr(_binning, "_GRID_MIN_ROWS", 10**12)  # searchsorted only
    hn = tie_break(h, delta, np.random.RandomState(0))
    ref = umd_fit(hn, y, None, n_bins, delta=delta, raw=h, labels=True)
    want = umd_predict(ref, x)
    table = model._table
    if n_bins == 1 and delta > 0:
        # no edge: the engine's lookup is the one value, the oracle has none
        assert table["lookup_edges"].size == 0
        assert table["lookup_values"].tobytes() == ref.values.tobytes()
        ref = ref._replace(lookup_edges=table["lookup_edges"])
        ref = ref._replace(lookup_values=table["lookup_values"])
    for f in ("edges", "values", "counts", "lookup_edges", "lookup_values"):
        a, b = table[f], getattr(ref, f)
        assert (a is None and b is None) or a.tobytes() == b.tobytes(), f
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("weights", ["integer", "real"])
@pytest.mark.parametrize("delta", [1e-10, 1e-3])
def test_umd_engine_weighted_ties_are_the_oracle(weights, delta):
    """Weighted fits take the engine's sorted path (integer weights: sums in
    sorted order; real weights: in row order); their tables, raw-score
    lookups with the tied values' stored outputs included, are the
    oracle's bytes."""
    rng = np.random.default_rng(17)
    n = 6000
    h = rng.choice(np.linspace(0.05, 1, 23), size=n)
    y = (rng.uniform(size=n) < h).astype(float)
    if weights == "integer":
        w = rng.integers(1, 4, size=n).astype(float)
    else:
        w = rng.uniform(0.2, 3.0, size=n)
    model = UMDBinner(n_bins=37, delta=delta, random_state=3).fit(h, y, w)
    hn = tie_break(h, delta, np.random.RandomState(3))
    ref = umd_fit(hn, y, w, 37, delta=delta, raw=h, labels=True)
    for f in ("edges", "values", "counts", "lookup_edges", "lookup_values"):
        assert model._table[f].tobytes() == getattr(ref, f).tobytes(), f
    # the tied values are answered from the stored lookup
    hit = ref.lookup_values[np.searchsorted(ref.lookup_edges, h, side="right")]
    if delta < 1e-6:
        assert not np.isnan(hit).any()
    x = np.concatenate([h, rng.uniform(size=500)])
    assert model.predict_proba(x)[:, 1].tobytes() == umd_predict(ref, x).tobytes()
