# SPDX-License-Identifier: MIT
"""Model files (sklearn_betacal.io): skops round trips, trusted types, headers."""

import json
import pickle
import subprocess
import sys
import zipfile

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
        ("hls", sb.HierarchicalLogisticScaler(sb.GroupColumnPartitioner()), X_grp),
        ("hs-bb", sb.ScalingBetaBinningCalibrator(kd, random_state=0), X_emb),
        (
            "s-bb",
            sb.ScalingBetaBinningCalibrator(kd, scaler="pooled", random_state=0),
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
    # beyond them only the scikit-learn types skops does not trust by itself
    assert set(types) - set(ours) == set(model_io.SKLEARN_TYPES)
    assert "sklearn.tree._tree.Tree" in model_io.SKLEARN_TYPES


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
    model_io.dump(Odd(), odd)
    name = f"{Odd.__module__}.Odd"
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


def test_import_sklearn_betacal_imports_no_optional_extra():
    code = (
        "import sys, sklearn_betacal, sklearn_betacal.io\n"
        "sklearn_betacal.BetaBinningCalibrator\n"
        "sklearn_betacal.HierarchicalLogisticScaler\n"
        "sklearn_betacal.ScalingBetaBinningCalibrator\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('skops', 'statsmodels', 'polars', 'matplotlib', 'torch', 'dask')]\n"
        "print(bad)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_missing_skops_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "skops.io", None)
    monkeypatch.setitem(sys.modules, "skops", None)
    with pytest.raises(ImportError, match=r"pip install sklearn-betacal\[skops\]"):
        model_io.dump(MODELS[1][1], "unused.skops")
