# SPDX-License-Identifier: MIT
"""The compiled kd-tree build (optional extra ``fast``, numba) against the
NumPy build, its reference: the same tree bit for bit (cells, thresholds,
row order, bounds), and numba stays out of ``import sklearn_betacal`` and of
small fits."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_betacal._kernels import _kdtree as kern

ROOT = Path(__file__).resolve().parents[1]


def _build(F, depth, msl, rule, use):
    old = kern.USE_NUMBA
    kern.USE_NUMBA = use
    try:
        return kern.build_kdtree(F, depth, msl, rule)
    finally:
        kern.USE_NUMBA = old


def _assert_same_tree(a, b):
    assert a.keys() == b.keys()
    for key in a:
        x, y = np.asarray(a[key]), np.asarray(b[key])
        assert (x.dtype, x.shape) == (y.dtype, y.shape), key
        assert x.tobytes() == y.tobytes(), key


def _data(rng, n, d, kind, dtype):
    X = rng.standard_normal((n, d))
    if kind == "ties":  # many ties, signed zeros among them
        X = np.round(X * 2) / 2
    elif kind == "heavy":  # three values per coordinate
        X = rng.integers(0, 3, (n, d)).astype(float)
    elif kind == "sorted":  # sorted and reversed columns (pivot worst cases)
        X = np.sort(X, axis=0)
        X[:, 1::2] = X[::-1, 1::2]
    return X.astype(dtype)


#: every dtype, split rule, depth and kind of ties of the build
TREES = {
    "seed": st.integers(0, 2**32 - 1),
    "n": st.integers(2, 400),
    "d": st.integers(1, 5),
    "max_depth": st.sampled_from([0, 1, 3, 6, 64]),
    "min_samples_leaf": st.integers(1, 5),
    "kind": st.sampled_from(["continuous", "ties", "heavy", "sorted"]),
    "rule": st.sampled_from(["cycle", "max_spread"]),
    "dtype": st.sampled_from([np.float64, np.float32]),
    # leaf bounds in row order (tables up to this size) or leaf by leaf
    "row_bounds": st.sampled_from([0, 2**16]),
}


@given(**TREES)
@settings(deadline=None, max_examples=60)
def test_numba_build_is_the_numpy_build_bit_for_bit(
    seed, n, d, max_depth, min_samples_leaf, kind, rule, dtype, row_bounds
):
    pytest.importorskip("numba")
    X = _data(np.random.default_rng(seed), n, d, kind, dtype)
    ref = _build(X, max_depth, min_samples_leaf, rule, False)
    old = kern._NB_ROW_BOUNDS
    kern._NB_ROW_BOUNDS = row_bounds
    try:
        fast = _build(X, max_depth, min_samples_leaf, rule, True)
    finally:
        kern._NB_ROW_BOUNDS = old
    _assert_same_tree(ref, fast)


@pytest.mark.parametrize("kind", ["continuous", "ties", "heavy", "sorted"])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("row_bounds", [0, 2**16])
def test_numba_build_deep_tree_in_small_chunks(kind, layout, row_bounds, monkeypatch):
    # small chunks and compiled-selection threshold: every level runs
    # through the padded, multi-class and compiled small-segment paths
    pytest.importorskip("numba")
    monkeypatch.setattr(kern, "_SEL_BLOCK", 37)
    monkeypatch.setattr(kern, "_NB_SMALL", 5)
    # leaf bounds in row order, or in the walk over the leaves (many blocks)
    monkeypatch.setattr(kern, "_NB_ROW_BOUNDS", row_bounds)
    X = _data(np.random.default_rng(1), 3000, 6, kind, np.float64)
    if layout == "F":
        X = np.asfortranarray(X)
    elif layout == "strided":
        X = X[:, ::2]
    for depth, msl in ((64, 1), (10, 3)):
        for rule in ("cycle", "max_spread"):
            _assert_same_tree(
                _build(X, depth, msl, rule, False), _build(X, depth, msl, rule, True)
            )


def test_numba_quickselect_survives_its_worst_cases():
    # more failed pivots than the budget: the heap-sort fallback
    nb = pytest.importorskip("sklearn_betacal._kernels._kdtree_numba")
    rng = np.random.default_rng(0)
    for a in (
        np.arange(5000.0),
        np.arange(5000.0)[::-1].copy(),
        np.repeat([1.0, 2.0], 2500),
        rng.integers(0, 2, 5000).astype(float),
        np.tile(np.arange(50.0), 100),
    ):
        for k in (0, 1, 2499, 4998, 4999):
            work = a.copy()
            assert nb._select(work, 0, a.shape[0] - 1, k) == np.sort(a)[k]
            assert (work[:k] <= work[k]).all() and (work[k + 1 :] >= work[k]).all()
        work = rng.permutation(a)
        nb._heapsort(work, 0, a.shape[0] - 1)
        assert work.tobytes() == np.sort(a).tobytes()


def test_numba_only_for_large_fits_and_never_without_numba(monkeypatch):
    monkeypatch.setattr(kern, "USE_NUMBA", None)
    assert kern.numba_level_kernels(kern.NUMBA_MIN_ROWS - 1) is None
    monkeypatch.setattr(kern, "USE_NUMBA", False)
    assert kern.numba_level_kernels(10 * kern.NUMBA_MIN_ROWS) is None
    # numba missing: the NumPy path (an import of None raises ImportError)
    monkeypatch.setattr(kern, "USE_NUMBA", True)
    monkeypatch.setitem(sys.modules, "numba", None)
    monkeypatch.delitem(sys.modules, "sklearn_betacal._kernels._kdtree_numba", False)
    monkeypatch.delattr(
        sys.modules["sklearn_betacal._kernels"], "_kdtree_numba", raising=False
    )
    assert kern.numba_level_kernels(10 * kern.NUMBA_MIN_ROWS) is None
    X = np.random.default_rng(0).normal(size=(500, 3))
    _assert_same_tree(_build(X, 5, 1, "cycle", True), _build(X, 5, 1, "cycle", False))


def test_import_and_small_fits_do_not_load_numba():
    code = (
        "import sys, numpy as np\n"
        "import sklearn_betacal\n"
        "from sklearn_betacal import KDTreePartitioner\n"
        "KDTreePartitioner(3).fit(np.random.default_rng(0).normal(size=(1000, 2)))\n"
        "print('numba' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False"]


def test_numba_cache_falls_back_when_nothing_is_writable(tmp_path):
    # a read-only install and no writable cache folder: numba would refuse
    # ``cache=True`` ("no locator available"); the kernels compile in memory
    pytest.importorskip("numba")
    if os.geteuid() == 0:
        pytest.skip("root writes to read-only folders")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    code = (
        "import numpy as np\n"
        "from sklearn_betacal._kernels import _kdtree_numba as nb\n"
        "print(nb._CACHE)\n"
        "a = np.array([3.0, 1.0, 2.0])\n"
        "print(nb._select(a, 0, 2, 1))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "NUMBA_CACHE_DIR": str(ro),
        "HOME": str(ro),
    }
    run = subprocess.run(
        [sys.executable, "-B", "-c", code], env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[1] == "2.0"


def test_numba_jit_compiles_in_memory_when_the_cache_is_refused(monkeypatch):
    # what numba does when neither __pycache__ nor the user cache folder can
    # be written: ``njit(cache=True)`` raises RuntimeError at decoration
    nb = pytest.importorskip("sklearn_betacal._kernels._kdtree_numba")
    real = nb.numba.njit

    def refusing(*args, cache=False, **kwargs):
        if cache:
            raise RuntimeError("cannot cache function: no locator available")
        return real(*args, **kwargs)

    monkeypatch.setattr(nb.numba, "njit", refusing)
    monkeypatch.setattr(nb, "_CACHE", True)
    assert nb._jit(lambda x: x + 1)(1) == 2


@pytest.mark.parametrize("kind", ["continuous", "ties", "heavy"])
def test_numba_kernels_run_as_python_give_the_same_tree(kind, monkeypatch):
    # the kernels' Python source (``py_func``, what numba compiles) run by
    # the interpreter: the same tree as NumPy's, and the source is covered
    nb = pytest.importorskip("sklearn_betacal._kernels._kdtree_numba")
    for name in (
        "_select",
        "_heapsort",
        "_sift",
        "_midpoint",
        "gather",
        "pad_rows",
        "small_kth",
        "split_reorder",
        "node_rules",
        "split_rows",
        "place_rows",
        "last_rows",
        "rows_by_node",
        "take",
        "leaf_bounds_rows",
        "leaf_tables",
        "_flush_leaves",
    ):
        monkeypatch.setattr(nb, name, getattr(nb, name).py_func)
    monkeypatch.setattr(
        kern, "numba_level_kernels", lambda n: nb if kern.USE_NUMBA else None
    )
    monkeypatch.setattr(kern, "_NB_SMALL", 8)
    monkeypatch.setattr(nb, "_LEAF_BLOCK", 7)
    X = _data(np.random.default_rng(2), 300, 3, kind, np.float64)
    cases = (
        (64, 1, "cycle", 2**16, 2**30),
        (64, 1, "cycle", 0, 2**30),
        (64, 1, "cycle", 2**16, 4),
        (4, 2, "max_spread", 2**16, 2**30),
    )
    for depth, msl, rule, row_bounds, row_nodes in cases:
        monkeypatch.setattr(kern, "_NB_ROW_BOUNDS", row_bounds)
        monkeypatch.setattr(kern, "_NB_ROW_NODES", row_nodes)
        monkeypatch.setattr(kern, "USE_NUMBA", False)
        ref = kern.build_kdtree(X, depth, msl, rule)
        monkeypatch.setattr(kern, "USE_NUMBA", True)
        _assert_same_tree(ref, kern.build_kdtree(X, depth, msl, rule))
    a = np.arange(100.0)[::-1].copy()
    nb._heapsort(a, 0, 99)
    assert a.tobytes() == np.arange(100.0).tobytes()


@pytest.mark.parametrize("kind", ["continuous", "ties", "heavy", "early leaf"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("row_bounds", [0, 2**16])
@pytest.mark.parametrize("row_nodes", [2**30, 1, 2, 8])
def test_numba_cycle_build_in_row_order_is_the_numpy_build(
    kind, dtype, row_bounds, row_nodes, monkeypatch
):
    # the cycle rule's compiled build (one pass over the rows per level,
    # ``split_rows``, the last one ``last_rows`` with the leaf bounds when
    # the tables are small; from the first level of more than ``row_nodes``
    # nodes on the per-node passes) on 20,000 rows, at several depths and
    # leaf sizes, ties included; counted so that it is the path tested
    nb = pytest.importorskip("sklearn_betacal._kernels._kdtree_numba")
    monkeypatch.setattr(kern, "_NB_ROW_BOUNDS", row_bounds)
    monkeypatch.setattr(kern, "_NB_ROW_NODES", row_nodes)
    calls = []
    for name in ("split_rows", "last_rows", "take"):
        real = getattr(nb, name)

        def counted(*args, real=real, name=name):
            calls.append((name, args[1] if name != "take" else None))
            return real(*args)

        monkeypatch.setattr(nb, name, counted)
    X = _data(np.random.default_rng(3), 20000, 3, kind, dtype)
    if kind == "early leaf":
        # the root's left child is constant in coordinate 1: a leaf at
        # depth 1, retired before a hand-over at 2 nodes
        X[X[:, 0] <= np.median(X[:, 0]), 1] = 0
    for depth, msl in ((1, 1), (2, 1), (3, 7), (7, 2), (12, 1), (64, 1), (64, 40)):
        calls.clear()
        ref = _build(X, depth, msl, "cycle", False)
        fast = _build(X, depth, msl, "cycle", True)
        _assert_same_tree(ref, fast)
        # one pass per level that split, each on that level's coordinate,
        # row passes while a level has at most ``row_nodes`` nodes
        levels = int(ref["depth"][ref["axis"] >= 0].max()) + 1
        width = np.bincount(ref["depth"])
        rows = int(np.argmax(np.r_[width, row_nodes + 1] > row_nodes))
        passes = [p for name, p in calls if name != "take"]
        assert passes == [lev % 3 for lev in range(min(levels, rows))]
        # (plus one where every candidate stays a leaf: ties)
        takes = sum(name == "take" for name, _ in calls)
        assert max(0, levels - rows) <= takes <= max(0, levels - rows + 1)
        if row_bounds == 0 or rows < levels:
            assert "last_rows" not in dict(calls)
