# SPDX-License-Identifier: MIT
"""Model files (sklearn_betacal.io): skops round trips, trusted types, headers."""

import io
import json
import os
import pickle
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.cluster import KMeans
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import sklearn_betacal as sb
from sklearn_betacal import io as model_io

sio = pytest.importorskip("skops.io")

DATA = os.path.join(os.path.dirname(__file__), "data")


class Odd:
    """A type that no trusted list names."""

    def __init__(self):
        self.value = 1


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    h = rng.uniform(size=n)
    group = rng.integers(0, 4, size=n)
    emb = rng.normal(size=(n, 3))
    y = (rng.uniform(size=n) < h ** np.where(group == 0, 2.0, 0.7)).astype(int)
    return h, group, emb, y


def _fitted_models():
    """(name, fitted estimator, X to predict) for every kind of fitted state."""
    h, group, emb, y = _data()
    X_emb = np.column_stack([h, emb])
    X_grp = np.column_stack([h, group])
    kd = sb.KDTreePartitioner(max_depth=2)
    models = [
        ("temperature", sb.TemperatureScaler(), h),
        ("platt", sb.PlattScaler(), h),
        ("umd", sb.UMDBinner(points_per_bin=100, random_state=0), h),
        ("s-b", sb.ScalingBinningCalibrator(random_state=0), h),
        ("bb-kd", sb.BetaBinningCalibrator(kd, random_state=0), X_emb),
        (
            "bb-frozen",
            sb.BetaBinningCalibrator(
                FrozenEstimator(sb.KDTreePartitioner(max_depth=2).fit(emb)),
                random_state=0,
            ),
            X_emb,
        ),
        (
            "bb-cluster",
            sb.BetaBinningCalibrator(
                sb.ClusterPartitioner(KMeans(3, n_init=1, random_state=0)),
                random_state=0,
            ),
            X_emb,
        ),
        (
            "bb-cross",
            sb.BetaBinningCalibrator(
                sb.CrossPartitioner(
                    [
                        ("emb", sb.KDTreePartitioner(max_depth=1), [0, 1, 2]),
                        ("group", sb.GroupColumnPartitioner(), [3]),
                    ]
                ),
                random_state=0,
            ),
            np.column_stack([h, emb, group]),
        ),
        (
            "bb-learned-tree",
            sb.BetaBinningCalibrator(
                sb.CalibrationTreePartitioner(max_depth=2, random_state=0),
                points_per_bin=20,
                random_state=0,
            ),
            X_emb,
        ),
        (
            "bb-learned",
            sb.BetaBinningCalibrator(
                sb.CalibrationTreePartitioner(random_state=0),
                points_per_bin=20,
                random_state=0,
            ),
            X_emb,
        ),
        ("hls", sb.HierarchicalLogisticScaler(sb.GroupColumnPartitioner()), X_grp),
        ("hs-bb", sb.ScalingBetaBinningCalibrator(kd, random_state=0), X_emb),
        (
            "s-bb",
            sb.ScalingBetaBinningCalibrator(kd, scaler="pooled", random_state=0),
            X_emb,
        ),
        (
            "s-bb-features",
            sb.ScalingBetaBinningCalibrator(kd, scaler="features", random_state=0),
            X_emb,
        ),
        (
            "calibrated-classifier",
            sb.CalibratedClassifier(
                LogisticRegression(), sb.BetaBinningCalibrator(kd, random_state=0)
            ),
            emb,
        ),
    ]
    out = []
    for name, est, X in models:
        est.fit(X, y)
        out.append((name, est, X))
    return out


MODELS = _fitted_models()


@pytest.mark.parametrize("name,est,X", MODELS, ids=[m[0] for m in MODELS])
def test_model_file_round_trip_predicts_identically(tmp_path, name, est, X):
    path = model_io.dump(est, tmp_path / "m.skops", metadata={"name": name})
    loaded = model_io.load(path)
    assert type(loaded) is type(est)
    assert_array_equal(loaded.predict_proba(X), est.predict_proba(X))
    assert model_io.read_header(path)["metadata"] == {"name": name}


@pytest.mark.parametrize("name,est,X", MODELS, ids=[m[0] for m in MODELS])
def test_model_file_loads_with_skops_and_the_trusted_list(tmp_path, name, est, X):
    """Only public estimator classes are needed: no private type, no pickle."""
    path = model_io.dump(est, tmp_path / "m.skops")
    untrusted = sio.get_untrusted_types(file=path)
    public = set(model_io.trusted_types())
    assert set(untrusted) <= public, set(untrusted) - public
    assert not any("._kernels" in t or "._" in t.rsplit(".", 1)[1] for t in untrusted)
    loaded = sio.load(path, trusted=model_io.trusted_types())
    assert_array_equal(loaded.predict_proba(X), est.predict_proba(X))


def test_trusted_types_are_the_public_estimators():
    types = model_io.trusted_types()
    names = {t.rsplit(".", 1)[1] for t in types}
    assert {"BetaBinningCalibrator", "KDTreePartitioner", "TextEmbedder"} <= names
    # only public classes: a private helper class must never be needed
    ours = [t for t in types if t.startswith("sklearn_betacal.")]
    assert all(not t.rsplit(".", 1)[1].startswith("_") for t in ours)
    # nothing beyond them: the learned tree is plain arrays, no sklearn Tree
    assert set(types) == set(ours)
    assert "sklearn.tree._tree.Tree" not in types


def test_text_embedder_pipeline_round_trips(tmp_path):
    """TF-IDF + SVD state (sklearn types) loads with the same trusted list."""
    import pandas as pd

    rng = np.random.default_rng(1)
    words = np.array(["capital", "river", "film", "actor", "war", "king", "song"])
    text = [" ".join(rng.choice(words, 4)) for _ in range(600)]
    h = rng.uniform(size=600)
    y = (rng.uniform(size=600) < h).astype(int)
    X = pd.DataFrame({"confidence": h, "question": text})
    part = make_pipeline(
        sb.TextEmbedder("question", n_components=3, random_state=0),
        sb.KDTreePartitioner(max_depth=1),
    )
    bb = sb.BetaBinningCalibrator(
        part, confidence_column="confidence", points_per_bin=20, random_state=0
    ).fit(X, y)
    path = model_io.dump(bb, tmp_path / "text.skops")
    loaded = sio.load(path, trusted=model_io.trusted_types())
    assert_array_equal(loaded.predict_proba(X), bb.predict_proba(X))


def test_model_file_from_another_version_is_refused(tmp_path, monkeypatch):
    est = MODELS[1][1]
    path = model_io.dump(est, tmp_path / "m.skops")
    monkeypatch.setattr(model_io, "__version__", "9.3.0")
    with pytest.raises(
        ValueError, match=r"written by sklearn_betacal 0\..*this is 9\.3"
    ):
        model_io.load(path)


def test_model_file_of_newer_format_is_refused(tmp_path, monkeypatch):
    est = MODELS[1][1]
    monkeypatch.setattr(model_io, "FORMAT_VERSION", model_io.FORMAT_VERSION + 1)
    path = model_io.dump(est, tmp_path / "m.skops")
    monkeypatch.undo()
    with pytest.raises(ValueError, match="newer than this sklearn_betacal"):
        model_io.load(path)


def test_pickle_file_is_never_unpickled(tmp_path):
    marker = tmp_path / "pwned"

    class Boom:
        def __reduce__(self):
            return (marker.touch, ())

    path = tmp_path / "model.skops"
    path.write_bytes(pickle.dumps(Boom()))
    with pytest.raises(ValueError, match="not a sklearn_betacal model file.*never"):
        model_io.load(path)
    assert not marker.exists()


def test_skops_file_without_header_or_with_untrusted_types_is_refused(tmp_path):
    plain = tmp_path / "plain.skops"
    sio.dump(MODELS[1][1], plain)
    with pytest.raises(ValueError, match="no betacal.json header"):
        model_io.load(plain)

    # a valid header on a file that asks for a type nobody trusted
    odd = tmp_path / "odd.skops"
    name = f"{Odd.__module__}.Odd"
    with pytest.warns(UserWarning, match=f"not trust by default: {name}"):
        model_io.dump(Odd(), odd)
    with pytest.raises(ValueError, match=f"not trusted: {name}"):
        model_io.load(odd)
    assert isinstance(model_io.load(odd, trusted=[name]), Odd)


def test_damaged_and_missing_model_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        model_io.load(tmp_path / "nope.skops")
    with pytest.raises(FileNotFoundError, match="is a directory"):
        model_io.load(tmp_path)
    bad = tmp_path / "bad.skops"
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr("betacal.json", "{not json")
    with pytest.raises(ValueError, match="damaged betacal.json"):
        model_io.load(bad)
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr("betacal.json", json.dumps({"format": "other"}))
    with pytest.raises(ValueError, match="unknown header"):
        model_io.load(bad)


def test_dump_is_atomic_and_checks_metadata(tmp_path):
    path = tmp_path / "m.skops"
    path.write_bytes(b"old")
    with pytest.raises(TypeError, match="JSON-serialisable"):
        model_io.dump(MODELS[1][1], path, metadata={"bad": object()})
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.skops"]


def test_import_sklearn_betacal_imports_no_optional_extra(fresh_imports):
    code = (
        "import sklearn_betacal, sklearn_betacal.io\n"
        "sklearn_betacal.BetaBinningCalibrator\n"
        "sklearn_betacal.HierarchicalLogisticScaler\n"
        "sklearn_betacal.ScalingBetaBinningCalibrator\n"
    )
    extras = ["skops", "statsmodels", "polars", "matplotlib", "torch", "dask"]
    assert fresh_imports(code, extras) == []


def test_missing_skops_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "skops.io", None)
    monkeypatch.setitem(sys.modules, "skops", None)
    with pytest.raises(ImportError, match=r"pip install sklearn-betacal\[skops\]"):
        model_io.dump(MODELS[1][1], "unused.skops")


# --- hostile files: each is made from a real dumped model ---------------------

_BY_NAME = {name: (est, X) for name, est, X in MODELS}
KD, X_KD = _BY_NAME["bb-kd"]
X_LEARNED = _BY_NAME["bb-learned-tree"][1]
#: a learned tree that splits (7 nodes), as the hostile files need
LEARNED = sb.BetaBinningCalibrator(
    sb.CalibrationTreePartitioner(max_depth=2, split_alpha=None, random_state=0),
    points_per_bin=20,
    random_state=0,
).fit(X_LEARNED, _data()[3])


def _schema(path):
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read("schema.json"))


def _rewrite(src, dst, change=lambda name, data: data, extra=()):
    """Copy the archive ``src`` to ``dst``, each member through ``change``
    (``None`` drops it), then the ``(info, data)`` pairs of ``extra``."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info.filename))
            if data is not None:
                zout.writestr(info, data)
        for info, data in extra:
            zout.writestr(info, data)
    return dst


def _find(node, cls, fitted=False):
    """The first schema node of class ``cls`` (depth first); ``fitted``: the
    first one with a ``tree_``."""
    if isinstance(node, dict):
        state = node.get("content", {})
        has_tree = isinstance(state, dict) and "tree_" in state.get("content", {})
        if node.get("__class__") == cls and (has_tree or not fitted):
            return node
        children = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return None
    for child in children:
        found = _find(child, cls, fitted)
        if found is not None:
            return found
    return None


def _node_member(path, owner):
    """``(member, field)``: where the child arrays of ``owner``'s tree are,
    in either layout (plain arrays, or the old scikit-learn ``Tree``)."""
    part = _find(_schema(path), owner, fitted=True)
    tree = part["content"]["content"]["tree_"]
    if tree["__class__"] == "dict":
        return tree["content"], None
    nodes = _find(tree, "Tree")["content"]["content"]["nodes"]["file"]
    return nodes, "structured"


def _set_child(src, dst, owner, node, value, side="left"):
    members, kind = _node_member(src, owner)
    target = members if kind else members[f"children_{side}"]["file"]

    def change(name, data):
        if name != target:
            return data
        array = np.load(io.BytesIO(data))
        if kind:
            array[f"{side}_child"][node] = value
        else:
            array[node] = value
        out = io.BytesIO()
        np.save(out, array)
        return out.getvalue()

    return _rewrite(src, dst, change)


def _run(code, *args):
    """Run ``code`` in a fresh interpreter (importing this sklearn_betacal):
    a crash is a failed test there, not a dead test run."""
    env = {**os.environ, "PYTHONPATH": str(Path(sb.__file__).parents[1])}
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


_LOAD_AND_PREDICT = """
import sys, numpy as np
from sklearn_betacal import io
try:
    model = io.load(sys.argv[1])
except ValueError as exc:
    print("refused:", exc)
    raise SystemExit(0)
model.predict_proba(np.load(sys.argv[2]))
print("predicted")
"""


def test_learned_tree_with_a_child_far_out_of_range_is_refused(tmp_path):
    """A root child of 2**40 read memory far outside the tree (segfault)."""
    good = model_io.dump(LEARNED, tmp_path / "good.skops")
    bad = _set_child(
        good, tmp_path / "bad.skops", "CalibrationTreePartitioner", 0, 2**40
    )
    np.save(tmp_path / "X.npy", X_LEARNED)
    out = _run(_LOAD_AND_PREDICT, bad, tmp_path / "X.npy")
    assert out.returncode == 0, (out.returncode, out.stderr[-500:])
    assert out.stdout.startswith("refused:"), out.stdout
    assert "child index is the root or lies outside" in out.stdout
    with pytest.raises(ValueError, match="child index is the root or lies outside"):
        model_io.load(bad)
    # skops itself with the trusted list: the partitioner refuses it too
    with pytest.raises(ValueError, match="child index is the root or lies outside"):
        sio.load(bad, trusted=model_io.trusted_types())


@pytest.mark.parametrize(
    "node, value, side, match",
    [
        (1, 1, "left", "several parents or none"),  # a node its own child
        (1, 0, "left", "is the root"),  # back to the root
        (0, -3, "right", "is the root or lies outside"),  # NumPy would wrap -3
    ],
)
def test_tree_with_a_cycle_or_a_bad_child_is_refused(
    tmp_path, node, value, side, match
):
    """A child back at the root looped forever in scikit-learn's C walk.

    Only the load is tried (the old code's walk would never return)."""
    good = model_io.dump(LEARNED, tmp_path / "good.skops")
    owner = "CalibrationTreePartitioner"
    bad = _set_child(good, tmp_path / "bad.skops", owner, node, value, side)
    with pytest.raises(ValueError, match=match):
        model_io.load(bad)


def test_tree_depths_finds_a_cycle_the_root_does_not_reach():
    from sklearn_betacal._partition._base import tree_depths

    # every node but the root has one parent, yet 1 and 2 are each other's
    left = np.array([-1, 2, 1, -1, -1])
    right = np.array([-1, 3, 4, -1, -1])
    with pytest.raises(ValueError, match="cycle not reached from the root"):
        tree_depths("T", left, right)
    left, right = np.array([1, -1, -1]), np.array([2, -1, -1])
    assert_array_equal(tree_depths("T", left, right), [0, 1, 1])


@pytest.mark.parametrize("value", [2**40, -3, 0])
def test_kdtree_with_a_bad_child_is_refused(tmp_path, value):
    good = model_io.dump(KD, tmp_path / "good.skops")
    bad = _set_child(
        good, tmp_path / "bad.skops", "KDTreePartitioner", 0, value, "right"
    )
    with pytest.raises(ValueError, match="damaged fitted state"):
        model_io.load(bad)


def test_kdtree_bound_tables_and_cells_are_checked():
    """Cell ids that are not 0..n-1, bound tables that do not fit the tree,
    NaN, infinite or reversed bounds (they sent the cell's rows to the root:
    answers up to 0.53 away) are refused; the per-depth layout of an earlier
    development version is refused as stray keys (no migration)."""
    part = KD.partitioner_
    new = part.__getstate__()
    lower, upper = part.bound_lower_, part.bound_upper_

    def poked(a, value):
        a = a.copy()
        a[0, 0] = value
        return a

    cases = [
        ("bound_axes_", np.full_like(part.bound_axes_, 7), "distinct coordinates"),
        ("bound_axes_", part.bound_axes_[:, :1].copy(), "distinct coordinates"),
        ("bound_lower_", lower[:1], "shape"),
        ("bound_upper_", upper[:, :1], "shape"),
        ("bound_lower_", poked(lower, np.nan), "NaN or infinite"),
        ("bound_upper_", poked(upper, -np.inf), "NaN or infinite"),
        ("bound_lower_", poked(lower, upper[0, 0] + 1), "exceeds its upper"),
        ("depth_", part.depth_ + 1, "depth_"),
        ("n_cells_", 10**9, "n_cells_"),
        ("leaf_axes_", part.leaf_axes_, "stray key"),
    ]
    for key, value, match in cases:
        broken = dict(new, **{key: value})
        with pytest.raises(ValueError, match=match):
            type(part).__new__(type(part)).__setstate__(broken)
    tree = dict(new["tree_"], cell=new["tree_"]["cell"][::-1].copy())
    with pytest.raises(ValueError, match="cell ids"):
        type(part).__new__(type(part)).__setstate__(dict(new, tree_=tree))


def _sklearn_grown():
    """A fitted learned tree whose node arrays are those of a scikit-learn
    ``DecisionTreeRegressor`` grown on its split features, and that tree."""
    from sklearn.tree import DecisionTreeRegressor

    from sklearn_betacal._partition._tree import _node_arrays

    h, _, emb, y = _data()
    part = sb.CalibrationTreePartitioner(max_depth=3, split_alpha=None, random_state=0)
    part.fit(emb, y, confidence=h, points_per_bin=20)
    Z = part._project(emb)
    dtr = DecisionTreeRegressor(max_depth=3, min_samples_leaf=40, random_state=0)
    dtr.fit(Z, y)
    leaves = np.flatnonzero(dtr.tree_.children_left == -1).astype(np.int64)
    part.__dict__.update(
        tree_=_node_arrays(dtr.tree_),
        leaf_nodes_=leaves,
        n_cells_=int(leaves.shape[0]),
        leaf_n_samples_=np.ones(leaves.shape[0]),
    )
    return part, dtr, emb


def _edge_rows(dtr, part, emb):
    """Rows of ``emb`` and rows whose split features sit exactly on, and one
    float32 step beside, every threshold (where float32 rounding matters)."""
    nodes = dtr.tree_
    inner = np.flatnonzero(nodes.children_left >= 0)
    rows = [part._project(emb)]
    for node in inner:
        base = part._project(emb[:50])
        for step in (-1, 0, 1):
            Z = base.copy()
            t = np.float32(nodes.threshold[node])
            Z[:, nodes.feature[node]] = np.nextafter(t, np.float32(step * np.inf))
            if step == 0:
                Z[:, nodes.feature[node]] = nodes.threshold[node]
            rows.append(Z)
    return rows


def test_learned_tree_walk_is_bit_identical_to_scikit_learn(tmp_path):
    """The NumPy walk of the node arrays routes every row as scikit-learn's
    tree did, also on and next to the thresholds (float32 rounding)."""
    from sklearn_betacal._cells import cell_positions

    grown, dtr, emb = _sklearn_grown()
    part = pickle.loads(pickle.dumps(grown))  # checked as it is rebuilt
    assert_array_equal(part.leaf_nodes_, grown.leaf_nodes_)
    rows = _edge_rows(dtr, part, emb)
    for Z in rows:
        Z = np.asarray(Z, dtype=np.float64)
        want = cell_positions(dtr.apply(Z).astype(np.int64), grown.leaf_nodes_)
        assert_array_equal(part._walk(Z), want)
        # up to 4 rows take the kernel's per-row Python walk
        assert_array_equal(part._walk(Z[:3]), want[:3])
    assert_array_equal(
        part.apply(emb), cell_positions(dtr.apply(part._project(emb)), part.leaf_nodes_)
    )
    ancestors = [c.tolist() for c in part.cell_ancestors()]
    parent = {}
    for node in np.flatnonzero(dtr.tree_.children_left >= 0):
        parent[dtr.tree_.children_left[node]] = node
        parent[dtr.tree_.children_right[node]] = node
    for leaf, chain in zip(part.leaf_nodes_, ancestors, strict=True):
        walked, node = [], leaf
        while node in parent:
            node = parent[node]
            walked.append(node)
        assert chain == walked


def test_skops_file_with_a_sklearn_tree_is_refused(tmp_path):
    """scikit-learn's Tree is not trusted (skops would build it from the
    file's arguments unchecked): a file holding one is refused in one line,
    and a learned tree holding a fitted DecisionTreeRegressor is refused by
    its schema even where the Tree is trusted."""
    part, dtr, emb = _sklearn_grown()
    part.__dict__["tree_"] = dtr
    path = model_io.dump(part, tmp_path / "sk.skops")
    # refused by this package whatever skops trusts by default (skops 0.12
    # still trusted scikit-learn's Tree; later releases do not)
    assert "sklearn.tree._tree.Tree" not in model_io.trusted_types()
    with pytest.raises(ValueError, match="holds a scikit-learn Tree object"):
        model_io.load(path)
    with pytest.raises(ValueError, match="tree_ is not the"):
        model_io.load(path, trusted=["sklearn.tree._tree.Tree"])


# --- resource limits and malformed files --------------------------------------

PLATT = _BY_NAME["platt"][0]
_BOMB = 300 * 2**20  # decompressed; beyond the default max_size of 256 MiB


def _bomb(src, dst, name, head, size=_BOMB):
    """``src`` with member ``name`` replaced by ``head`` padded with ``size``
    bytes of blanks (JSON) or zeros (an .npy of that many zeros), deflated."""
    pad = b" " if name.endswith(".json") else b"\0"
    step = 2**20

    def chunks():
        yield head
        for _ in range(size // step):
            yield pad * step

    with (
        zipfile.ZipFile(src) as zin,
        zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout,
    ):
        for info in zin.infolist():
            if info.filename != name:
                zout.writestr(info, zin.read(info.filename))
        with zout.open(name, "w", force_zip64=True) as member:
            for chunk in chunks():
                member.write(chunk)
    return dst


def _npy_head(n_values):
    """The .npy header of ``n_values`` float64 values."""
    from numpy.lib import format as npy

    out = io.BytesIO()
    npy.write_array_header_1_0(
        out, {"descr": "<f8", "fortran_order": False, "shape": (n_values,)}
    )
    return out.getvalue()


def _first_array(path):
    with zipfile.ZipFile(path) as archive:
        return next(n for n in archive.namelist() if n.endswith(".npy"))


_PEAK = """
import resource, sys
from sklearn_betacal import io
import skops.io
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    io.load(sys.argv[1])
    print("loaded")
except ValueError as exc:
    print("refused:", exc)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) // 1024)
"""


@pytest.mark.parametrize("member", ["betacal.json", "schema.json", "array"])
def test_zip_bomb_is_refused_before_it_is_decompressed(tmp_path, member):
    """A ~0.3 MiB file that decompresses to 300 MiB: refused from the central
    directory, without the memory (the old code read it all)."""
    good = model_io.dump(PLATT, tmp_path / "good.skops")
    with zipfile.ZipFile(good) as archive:
        names = archive.namelist()
        head = {n: archive.read(n) for n in names if n.endswith(".json")}
    name = _first_array(good) if member == "array" else member
    start = _npy_head(_BOMB // 8) if member == "array" else head[member]
    bomb = _bomb(good, tmp_path / "bomb.skops", name, start)
    assert bomb.stat().st_size < 2**20
    out = _run(_PEAK, bomb)
    assert out.returncode == 0, out.stderr[-500:]
    verdict, grown = out.stdout.strip().splitlines()
    assert verdict.startswith("refused:") and "zip bomb" in verdict, verdict
    assert int(grown) < 32, f"load grew by {grown} MiB"
    if member == "betacal.json":  # the header alone is read by read_header
        with pytest.raises(ValueError, match="zip bomb|header of"):
            model_io.read_header(bomb)


def test_large_file_that_is_not_a_zip_is_not_read(tmp_path):
    big = tmp_path / "big.skops"
    with open(big, "wb") as fh:
        fh.truncate(768 * 2**20)  # sparse: costs no disk
    out = _run(_PEAK, big)
    verdict, grown = out.stdout.strip().splitlines()
    assert verdict.startswith("refused:") and "not a skops zip" in verdict
    assert int(grown) < 32, f"load grew by {grown} MiB"


def test_max_size_limits_and_raises(tmp_path):
    path = model_io.dump(KD, tmp_path / "kd.skops")
    with pytest.raises(ValueError, match=r"more than max_size=1000 .*max_size=<bytes>"):
        model_io.load(path, max_size=1000)
    for size in (None, 2 * model_io.MAX_SIZE):
        assert_array_equal(
            model_io.load(path, max_size=size).predict_proba(X_KD),
            KD.predict_proba(X_KD),
        )
    with pytest.raises(ValueError, match="max_size must be"):
        model_io.load(path, max_size=0)
    # the same limit holds for a bomb under max_size=None: the ratio
    bomb = _bomb(path, tmp_path / "bomb.skops", "schema.json", b"{}", 8 * 2**20)
    with pytest.raises(ValueError, match="zip bomb"):
        model_io.load(bomb, max_size=None)


def test_npy_member_that_claims_a_huge_shape_is_refused(tmp_path):
    good = model_io.dump(PLATT, tmp_path / "good.skops")
    name = _first_array(good)

    def change(member, data):
        return _npy_head(2**40) + b"\0" * 64 if member == name else data

    bad = _rewrite(good, tmp_path / "bad.skops", change)
    with pytest.raises(ValueError, match="declares an array of shape"):
        model_io.load(bad)


def _header_of(path):
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read("betacal.json"))


def _with_member(src, dst, name, data):
    """``src`` with member ``name`` replaced (``None``: removed)."""
    return _rewrite(src, dst, lambda member, old: data if member == name else old)


def _corrupt_member(src, dst):
    """``src`` with the last bytes of an array member flipped on disk."""
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as archive:
        info = archive.getinfo(_first_array(src))
    name_len, extra_len = struct.unpack(
        "<HH", data[info.header_offset + 26 : info.header_offset + 30]
    )
    end = info.header_offset + 30 + name_len + extra_len + info.compress_size
    data[end - 8 : end] = bytes(b ^ 0xFF for b in data[end - 8 : end])
    dst.write_bytes(bytes(data))
    return dst


def _schema_with(path, change):
    schema = _schema(path)
    change(schema)
    return json.dumps(schema).encode()


def _header_with(path, **fields):
    return json.dumps({**_header_of(path), **fields}).encode()


_DEEP = 60_000
MALFORMED = {
    "corrupt member": lambda src, dst: _corrupt_member(src, dst),
    "no schema": lambda src, dst: _with_member(src, dst, "schema.json", None),
    "schema not an object": lambda src, dst: _with_member(
        src, dst, "schema.json", b"[1, 2]"
    ),
    "bad schema values": lambda src, dst: _with_member(
        src, dst, "schema.json", _schema_with(src, lambda s: s.update(content=5))
    ),
    "unknown loader": lambda src, dst: _with_member(
        src,
        dst,
        "schema.json",
        _schema_with(src, lambda s: s.update({"__loader__": "NopeNode"})),
    ),
    "deep schema": lambda src, dst: _with_member(
        src, dst, "schema.json", b"[" * _DEEP + b"]" * _DEEP
    ),
    "deep metadata": lambda src, dst: _with_member(
        src,
        dst,
        "betacal.json",
        _header_with(src)[:-1] + b', "deep": ' + b"[" * _DEEP + b"]" * _DEEP + b"}",
    ),
    "versions not a dict": lambda src, dst: _with_member(
        src, dst, "betacal.json", _header_with(src, versions="0.1")
    ),
    "metadata not a dict": lambda src, dst: _with_member(
        src, dst, "betacal.json", _header_with(src, metadata=[1])
    ),
    "format version a string": lambda src, dst: _with_member(
        src, dst, "betacal.json", _header_with(src, format_version="1")
    ),
    "truncated": lambda src, dst: dst.write_bytes(src.read_bytes()[:-300]) and dst,
}


@pytest.fixture(scope="module")
def cli_model(tmp_path_factory):
    """A model written by ``betacal fit`` and a table to apply it to."""
    from sklearn_betacal.cli import main

    folder = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(0)
    h = rng.uniform(0.05, 0.95, size=400)
    table = folder / "in.csv"
    table.write_text(
        "conf,y\n"
        + "".join(
            f"{c},{int(u < c)}\n" for c, u in zip(h, rng.uniform(size=400), strict=True)
        )
    )
    model = folder / "platt.skops"
    argv = ["fit", str(table), "--confidence", "conf", "--label", "y"]
    assert main([*argv, "--method", "platt", "--output", str(model)]) == 0
    return model, table


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_model_file_is_one_line_error(tmp_path, kind, cli_model, capsys):
    """Each damage is one ValueError line in Python and in ``betacal apply``."""
    from sklearn_betacal.cli import main

    model, table = cli_model
    bad = MALFORMED[kind](model, tmp_path / "bad.skops")
    with pytest.raises(ValueError) as info:
        model_io.load(bad)
    assert "\n" not in str(info.value) and str(bad) in str(info.value)
    status = main(["apply", str(bad), str(table), str(tmp_path / "out.csv")])
    err = capsys.readouterr().err.strip()
    assert status == 2 and err.startswith("betacal: error:") and "\n" not in err, err
    assert not (tmp_path / "out.csv").exists()


def test_header_estimator_must_match_the_payload(tmp_path):
    """A LogisticRegression under a PlattScaler header was applied as one."""
    logistic = LogisticRegression().fit(X_KD[:, :2], (X_KD[:, 1] > 0).astype(int))
    src = model_io.dump(logistic, tmp_path / "lr.skops")
    bad = _with_member(
        src, tmp_path / "bad.skops", "betacal.json",
        _header_with(src, estimator="PlattScaler"),
    )  # fmt: skip
    with pytest.raises(ValueError, match="holds a 'LogisticRegression' where its"):
        model_io.load(bad)
    assert isinstance(model_io.load(src), LogisticRegression)


def test_model_file_error_is_a_value_error_and_dump_bounds_the_header(tmp_path):
    assert issubclass(model_io.ModelFileError, ValueError)
    with pytest.raises(ValueError, match="more than the 1048576 a model file"):
        model_io.dump(PLATT, tmp_path / "m.skops", metadata={"x": "a" * 2**20})
    assert not (tmp_path / "m.skops").exists()


@pytest.mark.parametrize(
    "name, attr", [("bb-cluster", "cluster_labels_"), ("bb-cross", "cell_codes_")]
)
def test_cell_keys_out_of_order_are_refused(tmp_path, name, attr):
    """Cells are found by binary search in sorted keys: reversed keys mapped
    rows to the wrong cells silently."""
    est = _BY_NAME[name][0]
    part = est.partitioner_
    state = dict(part.__getstate__())
    state[attr] = state[attr][::-1].copy()
    with pytest.raises(ValueError, match=f"{attr} is not sorted and unique"):
        type(part).__new__(type(part)).__setstate__(state)
    group = sb.GroupColumnPartitioner().fit(np.array([[3], [1], [2]]))
    state = dict(group.__getstate__(), groups_=np.array([3, 1, 2]))
    with pytest.raises(ValueError, match="groups_ is not sorted"):
        type(group).__new__(type(group)).__setstate__(state)
    same = pickle.loads(pickle.dumps(part))  # a good state loads as it was
    assert_array_equal(getattr(same, attr), getattr(part, attr))


def _rebuilt(est, **changes):
    """``est`` rebuilt (as pickle and skops rebuild it) from its state with
    ``changes``; a value that is a function gets the current value."""
    state = dict(est.__getstate__())
    for key, value in changes.items():
        state[key] = value(state[key]) if callable(value) else value
    return type(est).__new__(type(est)).__setstate__(state)


def _table_with(table, **changes):
    out = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in table.items()}
    for key, value in changes.items():
        out[key] = value(out[key]) if callable(value) else value
    return out


def _poke(index, value):
    def change(a):
        a = a.copy()
        a[index] = value
        return a

    return change


@pytest.mark.parametrize("name", ["umd", "s-b"])
@pytest.mark.parametrize(
    "change, match",
    [
        ({"values": _poke(0, np.nan)}, "values"),
        ({"values": _poke(0, 7.0)}, r"values lie outside \[0, 1\]"),
        ({"values": lambda v: v[:2]}, r"values'\] has shape"),
        ({"edges": lambda e: e[::-1]}, "edges are not sorted"),
        ({"counts": _poke(0, -1.0)}, "counts"),
        ({"delta": float("nan")}, "delta"),
    ],
)
def test_confidence_binner_table_is_checked_when_rebuilt(name, change, match):
    """A UMD table whose bin values are NaN or outside [0, 1], or whose edges
    are out of order, predicted NaN, 7.0 or the wrong bin silently."""
    est = _BY_NAME[name][0]
    with pytest.raises(ValueError, match=f"damaged fitted state.*{match}"):
        _rebuilt(est, _table=_table_with(est._table, **change))


@pytest.mark.parametrize("name", ["bb-kd", "hs-bb", "s-bb"])
@pytest.mark.parametrize(
    "key, change, match",
    [
        ("_route_table", _poke(0, -5), "_route_table"),
        ("_route_table", _poke(0, 10**6), "_route_table"),
        ("_route_cells", lambda c: c[::-1], "_route_cells is not sorted"),
        ("_route_cells", lambda c: c[:1], "_route_table has shape"),
        ("_tables", lambda t: _table_with(t, values=_poke(0, 7.0)), r"\[0, 1\]"),
        ("_tables", lambda t: _table_with(t, edge_start=_poke(1, -7)), "edge_start"),
        ("_tables", lambda t: _table_with(t, edges=lambda e: e[:1]), "edge"),
        ("_tables", lambda t: _table_with(t, values=lambda v: v[:1]), "values"),
    ],
)
def test_cell_binning_tables_and_routing_are_checked_when_rebuilt(
    name, key, change, match
):
    """A negative table number silently served another cell's binning (numpy
    counts from the end); the others predicted 7.0 or raised IndexError."""
    est = _BY_NAME[name][0]
    with pytest.raises(ValueError, match=f"damaged fitted state.*{match}"):
        _rebuilt(est, **{key: change})


@pytest.mark.parametrize(
    "name, key, value, match",
    [
        ("temperature", "temperature_", 0.0, "temperature_"),
        ("temperature", "temperature_", -1.0, "temperature_"),
        ("temperature", "temperature_", float("nan"), "temperature_"),
        ("temperature", "logit_eps_", np.array([-1.0, 2.0]), "logit_eps_"),
        ("platt", "coef_", np.array([[np.nan]]), "coef_"),
        ("platt", "coef_", np.ones((3, 3)), "coef_"),
        ("platt", "intercept_", np.array([np.inf]), "intercept_"),
        ("platt", "logit_eps_", np.array([0.0, 0.1]), "logit_eps_"),
        ("hls", "fixed_effects_", np.array([np.nan, 1.0]), "fixed_effects_"),
        ("hls", "random_effects_", np.full((4, 2), np.nan), "random_effects_"),
        ("hls", "random_effects_", np.zeros((1, 2)), "random_effects_ has shape"),
        ("hls", "cells_", np.array([3, 2, 1, 0]), "cells_ is not sorted"),
        ("hls", "logit_eps_", np.array([-1.0, 3.0]), "logit_eps_"),
    ],
)
def test_scaler_parameters_are_checked_when_rebuilt(name, key, value, match):
    """A temperature of 0 raised ZeroDivisionError at predict time, -1 turned
    every prediction into 0.5, NaN coefficients predicted NaN; the mixed
    model's cells out of order raised IndexError, and fewer random effects
    than cells served the wrong cells' effects silently."""
    est = _BY_NAME[name][0]
    with pytest.raises(ValueError, match=f"damaged fitted state.*{match}"):
        _rebuilt(est, **{key: value})


def test_tampered_calibrator_state_is_a_model_file_error(tmp_path):
    """Through a real file: the check runs when skops rebuilds the object."""
    est = _BY_NAME["bb-kd"][0]
    broken = pickle.loads(pickle.dumps(est))
    broken._route_table = broken._route_table.copy()
    broken._route_table[0] = -5
    path = model_io.dump(broken, tmp_path / "bad.skops")
    with pytest.raises(model_io.ModelFileError, match="_route_table"):
        model_io.load(path)
    for name in ("umd", "s-b", "bb-kd", "hs-bb", "s-bb", "temperature", "platt", "hls"):
        est, X = _BY_NAME[name]
        same = model_io.load(model_io.dump(est, tmp_path / f"{name}.skops"))
        assert_array_equal(same.predict_proba(X), est.predict_proba(X))


# --- containers: every read error one line, no hang, bounded memory -----------


def _deflated_header(src, dst, corrupt):
    """``src`` with its (deflated) header member's compressed bytes altered
    by ``corrupt`` on disk: zlib fails on it, the zip's records stay whole."""
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as archive:
        info = archive.getinfo("betacal.json")
    assert info.compress_type == zipfile.ZIP_DEFLATED
    name_len, extra_len = struct.unpack(
        "<HH", data[info.header_offset + 26 : info.header_offset + 30]
    )
    start = info.header_offset + 30 + name_len + extra_len
    corrupt(data, start, info.compress_size)
    dst.write_bytes(bytes(data))
    return dst


def _garble(data, start, size):
    data[start : start + size] = b"\xff" * size  # an invalid deflate block


def test_corrupt_compressed_header_is_one_line(tmp_path, cli_model, capsys):
    """A corrupt deflate stream gave a zlib.error traceback from io.load,
    read_header and betacal apply."""
    from sklearn_betacal.cli import main

    model, table = cli_model
    bad = _deflated_header(model, tmp_path / "bad.skops", _garble)
    for read in (model_io.load, model_io.read_header):
        with pytest.raises(model_io.ModelFileError, match="damaged model file") as e:
            read(bad)
        assert "\n" not in str(e.value)
    status = main(["apply", str(bad), str(table), str(tmp_path / "out.csv")])
    err = capsys.readouterr().err.strip()
    assert status == 2 and err.startswith("betacal: error:") and "\n" not in err


def test_many_small_compressed_members_are_a_bomb(tmp_path):
    """Members below the per-member ratio check's 1 MiB, each compressed
    ~1000 times, decompressed to far more than the file (the memory bound
    is a few times the file's size)."""
    good = model_io.dump(PLATT, tmp_path / "good.skops")
    extra = []
    for k in range(64):
        info = zipfile.ZipInfo(f"pad{k}.bin")
        info.compress_type = zipfile.ZIP_DEFLATED
        extra.append((info, b"\0" * (2**20 - 1)))
    bomb = _rewrite(good, tmp_path / "bomb.skops", extra=extra)
    assert bomb.stat().st_size < 2**20
    with pytest.raises(model_io.ModelFileError, match="zip bomb"):
        model_io.load(bomb)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero-link"])
def test_a_pipe_or_a_device_is_refused_without_reading(tmp_path, kind):
    """A FIFO hung io.load; a symlink to /dev/zero read until the memory
    limit. Both are refused from the file's type, in a fresh interpreter."""
    path = tmp_path / "model.skops"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    out = _run(_PEAK, path)
    assert out.returncode == 0, out.stderr[-500:]
    verdict, grown = out.stdout.strip().splitlines()
    assert verdict.startswith("refused:") and "not a regular file" in verdict
    assert int(grown) < 32


_PEAK_OF = """
import sys, tracemalloc
from sklearn_betacal import io
import skops.io
tracemalloc.start()
try:
    io.load(sys.argv[1])
    print("loaded")
except ValueError as exc:
    print("refused:", exc)
print(tracemalloc.get_traced_memory()[1])
"""


@pytest.mark.parametrize("name", ["bb-kd", "s-bb-features", "bb-learned"])
def test_load_peak_memory_is_bounded_by_the_file(tmp_path, name):
    """Peak memory of io.load (Python allocations, tracemalloc) is at most
    64 MiB + 4 times the file's size."""
    path = model_io.dump(_BY_NAME[name][0], tmp_path / "m.skops")
    out = _run(_PEAK_OF, path)
    verdict, peak = out.stdout.strip().splitlines()
    assert verdict == "loaded", (verdict, out.stderr[-500:])
    assert int(peak) <= 64 * 2**20 + 4 * path.stat().st_size
