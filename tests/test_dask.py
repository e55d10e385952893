# SPDX-License-Identifier: MIT
"""Prediction on dask collections (``sklearn_betacal.dask``) and GridSearchCV
under joblib's dask backend. Needs the ``dask`` extra."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_array_equal
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

from sklearn_betacal import (
    BetaBinningCalibrator,
    CalibratedClassifier,
    ClusterPartitioner,
    CrossPartitioner,
    GroupColumnPartitioner,
    HierarchicalLogisticScaler,
    KDTreePartitioner,
    PlattScaler,
    ScalingBetaBinningCalibrator,
    ScalingBinningCalibrator,
    TemperatureScaler,
    TextEmbedder,
    UMDBinner,
)

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
bdask = pytest.importorskip("sklearn_betacal.dask")

N = 3000
RNG = np.random.default_rng(0)
H = RNG.uniform(size=N)
F = RNG.standard_normal((N, 3))
G = RNG.integers(0, 4, size=N)
Y = (RNG.uniform(size=N) < H ** np.where(F[:, 0] > 0, 2.0, 0.5)).astype(int)
XBB = np.column_stack([H, F])


def _one_d():
    """Calibrators of one confidence column, fitted."""
    return [
        UMDBinner(n_bins=10, random_state=0).fit(H, Y),
        PlattScaler().fit(H, Y),
        ScalingBinningCalibrator(n_bins=10, random_state=0).fit(H, Y),
        TemperatureScaler().fit(H, Y),
    ]


def _two_d():
    """Estimators of confidence + features (2-D), fitted, with their X."""
    Xg = np.column_stack([H, G])
    return [
        (
            BetaBinningCalibrator(
                KDTreePartitioner(max_depth=2), points_per_bin=30, random_state=0
            ),
            XBB,
        ),
        (
            ScalingBetaBinningCalibrator(
                KDTreePartitioner(max_depth=1),
                points_per_bin=30,
                scaler="pooled",
                random_state=0,
            ),
            XBB,
        ),
        (HierarchicalLogisticScaler(GroupColumnPartitioner(), random_state=0), Xg),
    ]


def _same(a, b):
    assert a.shape == b.shape
    assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def test_core_import_does_not_import_dask(fresh_imports):
    code = "import sklearn_betacal, sklearn_betacal.dask"
    assert fresh_imports(code, ["dask"]) == []


@pytest.mark.parametrize("est", _one_d(), ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("shape", ["1d", "2d"])
def test_one_column_calibrators_on_dask_arrays(est, shape):
    x = H if shape == "1d" else H[:, None]
    X = da.from_array(x, chunks=(700,) + x.shape[1:])
    proba = bdask.predict_proba(est, X)
    pred = bdask.predict(est, X)
    assert isinstance(proba, da.Array) and proba.chunks[0] == X.chunks[0]
    _same(proba.compute(), est.predict_proba(x))
    _same(pred.compute(), est.predict(x))


@pytest.mark.parametrize("est", _one_d(), ids=lambda e: type(e).__name__)
def test_one_column_calibrators_on_dask_series_and_frames(est):
    frame = pd.DataFrame({"conf": H}, index=np.arange(N) * 3)
    ddf = dd.from_pandas(frame, npartitions=4)
    want = est.predict_proba(H)
    on_frame = clone(est).fit(frame, Y)  # a frame's column names are checked
    for model, X, X_mem in ((est, ddf["conf"], H), (on_frame, ddf, frame)):
        proba = bdask.predict_proba(model, X)
        assert isinstance(proba, dd.DataFrame)
        got = proba.compute()
        assert list(got.columns) == list(model.classes_)
        assert_array_equal(got.index, frame.index)  # rows keep their index
        _same(got.to_numpy(), want)
        pred = bdask.predict(model, X).compute()
        _same(pred.to_numpy(), model.predict(X_mem))


@pytest.mark.parametrize("case", range(3), ids=["BB", "S-BB", "HLS"])
def test_grouped_calibrators_on_dask_arrays_and_frames(case):
    est, X = _two_d()[case]
    est.fit(X, Y)
    dX = da.from_array(X, chunks=(500, 2))  # column chunks are merged
    _same(bdask.predict_proba(est, dX).compute(), est.predict_proba(X))
    _same(bdask.predict(est, dX).compute(), est.predict(X))
    cols = [f"c{i}" for i in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=cols)
    est.set_params(confidence_column="c0").fit(frame, Y)
    ddf = dd.from_pandas(frame, npartitions=5)
    _same(bdask.predict_proba(est, ddf).compute().to_numpy(), est.predict_proba(frame))
    _same(bdask.predict(est, ddf).compute().to_numpy(), est.predict(frame))


def test_calibrated_classifier_multiclass_on_dask():
    X, y = make_classification(
        n_samples=3000, n_classes=3, n_informative=4, random_state=0
    )
    clf = LogisticRegression(max_iter=500).fit(X[:1000], y[:1000])
    cal = CalibratedClassifier(FrozenEstimator(clf)).fit(X[1000:2000], y[1000:2000])
    dX = da.from_array(X[2000:], chunks=(300, 20))
    got = bdask.predict_proba(cal, dX)
    assert got.shape == (1000, 3)
    _same(got.compute(), cal.predict_proba(X[2000:]))
    _same(bdask.predict(cal, dX).compute(), cal.predict(X[2000:]))


@pytest.mark.parametrize(
    "part",
    [
        KDTreePartitioner(max_depth=3),
        GroupColumnPartitioner(group_column=2),
        ClusterPartitioner(random_state=0),
        CrossPartitioner(
            [
                ("tree", KDTreePartitioner(max_depth=1), [0, 1]),
                ("group", GroupColumnPartitioner(), [2]),
            ]
        ),
    ],
    ids=lambda p: type(p).__name__,
)
def test_partitioners_transform_on_dask(part):
    Z = np.column_stack([F[:, :2], G])
    part.fit(Z)
    dZ = da.from_array(Z, chunks=(800, 3))
    got = bdask.transform(part, dZ)
    assert got.shape == (N, 1)
    _same(got.compute(), part.transform(Z))
    ddf = dd.from_pandas(pd.DataFrame(Z, columns=["a", "b", "g"]), npartitions=3)
    part.fit(pd.DataFrame(Z, columns=["a", "b", "g"]))
    got = bdask.transform(part, ddf).compute()
    assert list(got.columns) == ["cell"]
    _same(got.to_numpy(), part.transform(pd.DataFrame(Z, columns=["a", "b", "g"])))


def test_text_embedder_transform_on_dask_frame():
    words = np.array(["paris", "rome", "france", "italy", "capital", "city", "river"])
    text = pd.DataFrame(
        {
            "question": [" ".join(RNG.choice(words, 4)) for _ in range(400)],
            "answer": [" ".join(RNG.choice(words, 2)) for _ in range(400)],
        }
    )
    emb = TextEmbedder(
        text_columns=["question", "answer"], n_components=3, random_state=0
    )
    emb.fit(text)
    got = bdask.transform(emb, dd.from_pandas(text, npartitions=3)).compute()
    assert list(got.columns) == list(emb.get_feature_names_out())
    _same(got.to_numpy(), emb.transform(text))


def test_in_memory_input_is_passed_through_and_errors_are_clear():
    umd = _one_d()[0]
    _same(bdask.predict_proba(umd, H), umd.predict_proba(H))
    with pytest.raises(TypeError, match="has no transform method"):
        bdask.transform(umd, da.from_array(H))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        bdask.predict(umd, da.zeros((4, 2, 2)))
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        bdask.predict_proba(UMDBinner(), da.from_array(H))


def test_grid_search_under_the_dask_joblib_backend():
    distributed = pytest.importorskip("distributed")
    from joblib import parallel_backend

    X = np.column_stack([H, G])
    search = GridSearchCV(
        BetaBinningCalibrator(GroupColumnPartitioner(), random_state=0),
        {"points_per_bin": [20, 40, 80]},
        scoring="neg_brier_score",
        cv=3,
    )
    serial = search.fit(X, Y)
    want = (serial.best_params_, serial.cv_results_["mean_test_score"].copy())
    with (
        distributed.LocalCluster(
            processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
        parallel_backend("dask"),
    ):
        par = GridSearchCV(
            search.estimator, search.param_grid, scoring=search.scoring, cv=3, n_jobs=-1
        ).fit(X, Y)
    assert par.best_params_ == want[0]
    assert_array_equal(par.cv_results_["mean_test_score"], want[1])
