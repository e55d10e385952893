# SPDX-License-Identifier: MIT
"""pandas and polars DataFrames everywhere a DataFrame is accepted.

Each estimator gives the same result on a pandas DataFrame, a polars one
(optional extra) and, where it has no string columns, a plain array; column
names come out as ``feature_names_in_`` and a renamed column is refused as
scikit-learn refuses it; every partitioner follows ``set_output``.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.pipeline import make_pipeline

import sklearn_betacal as sb


def _frame(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    topic = rng.choice(["art", "law", "sport"], n)
    h = rng.uniform(size=n)
    bias = pd.Series(topic).map({"art": 2.0, "law": 1.0, "sport": 0.5}).to_numpy()
    y = (rng.uniform(size=n) < h**bias).astype(int)
    words = np.array(["capital", "river", "film", "actor", "war", "king", "song"])
    text = [" ".join(rng.choice(words, 4)) for _ in range(n)]
    return (
        pd.DataFrame(
            {
                "conf": h,
                "topic": topic,
                "e0": rng.normal(size=n),
                "e1": rng.normal(size=n),
                "q": text,
            }
        ),
        y,
    )


def _kinds():
    kinds = ["pandas"]
    try:
        import polars  # noqa: F401

        kinds.append("polars")
    except ImportError:
        pass
    return kinds


def _as(kind, frame):
    if kind == "pandas":
        return frame
    import polars as pl

    return pl.from_pandas(frame)


CALIBRATORS = {
    "bb-group": (
        lambda: sb.BetaBinningCalibrator(
            sb.GroupColumnPartitioner("topic"),
            confidence_column="conf",
            points_per_bin=50,
            random_state=0,
        ),
        ["conf", "topic"],
    ),
    "bb-cross": (
        lambda: sb.BetaBinningCalibrator(
            sb.CrossPartitioner(
                [
                    ("topic", sb.GroupColumnPartitioner("topic"), ["topic"]),
                    ("emb", sb.KDTreePartitioner(max_depth=1), ["e0", "e1"]),
                ]
            ),
            confidence_column="conf",
            random_state=0,
        ),
        ["topic", "conf", "e0", "e1"],
    ),
    "bb-text": (
        lambda: sb.BetaBinningCalibrator(
            make_pipeline(
                sb.TextEmbedder("q", n_components=2, random_state=0),
                sb.KDTreePartitioner(max_depth=1),
            ),
            confidence_column="conf",
            random_state=0,
        ),
        ["conf", "q"],
    ),
    "hls-group": (
        lambda: sb.HierarchicalLogisticScaler(
            sb.GroupColumnPartitioner("topic"), confidence_column="conf"
        ),
        ["conf", "topic"],
    ),
    "hs-bb": (
        lambda: sb.ScalingBetaBinningCalibrator(
            sb.GroupColumnPartitioner("topic"), confidence_column="conf", random_state=0
        ),
        ["conf", "topic"],
    ),
    "s-bb-hls-scaler": (
        lambda: sb.ScalingBetaBinningCalibrator(
            sb.GroupColumnPartitioner("topic"),
            confidence_column="conf",
            scaler=sb.HierarchicalLogisticScaler(
                sb.GroupColumnPartitioner("topic"), confidence_column="conf"
            ),
            random_state=0,
        ),
        ["conf", "topic"],
    ),
}


@pytest.mark.parametrize("kind", _kinds())
@pytest.mark.parametrize("name", sorted(CALIBRATORS))
def test_group_calibrators_take_dataframes_with_string_columns(kind, name):
    make, columns = CALIBRATORS[name]
    frame, y = _frame()
    w = np.ones(len(y))
    w[:5] = 0  # zero weights select rows of the DataFrame
    ref = make().fit(frame[columns], y, sample_weight=w)
    X = _as(kind, frame[columns])
    est = make().fit(X, y, sample_weight=w)
    assert_array_equal(est.feature_names_in_, columns)
    assert_allclose(est.predict_proba(X), ref.predict_proba(frame[columns]), rtol=0)
    # zero weight == dropping the row, through DataFrame row selection
    dropped = make().fit(_as(kind, frame[columns].iloc[5:]), y[5:])
    assert_allclose(dropped.predict_proba(X), est.predict_proba(X), rtol=1e-12)


@pytest.mark.parametrize("kind", _kinds())
def test_renamed_column_is_refused_as_sklearn_does(kind):
    frame, y = _frame()
    est = sb.BetaBinningCalibrator(
        sb.GroupColumnPartitioner("topic"), confidence_column="conf"
    ).fit(_as(kind, frame[["conf", "topic"]]), y)
    renamed = frame[["conf", "topic"]].rename(columns={"topic": "subject"})
    with pytest.raises(ValueError, match="feature names should match"):
        est.predict_proba(_as(kind, renamed))


def test_numeric_array_and_dataframe_agree():
    frame, y = _frame()
    cols = ["conf", "e0", "e1"]
    for make in (
        lambda: sb.BetaBinningCalibrator(
            sb.KDTreePartitioner(max_depth=2), random_state=0
        ),
        lambda: sb.HierarchicalLogisticScaler(sb.KDTreePartitioner(max_depth=2)),
    ):
        a = make().fit(frame[cols].to_numpy(), y)
        b = make().fit(frame[cols], y)
        assert_allclose(
            a.predict_proba(frame[cols].to_numpy()), b.predict_proba(frame[cols])
        )
        assert not hasattr(a, "feature_names_in_")


PARTITIONERS = {
    "kdtree": (lambda: sb.KDTreePartitioner(max_depth=2), ["e0", "e1"]),
    "group": (lambda: sb.GroupColumnPartitioner("topic"), ["topic", "e0"]),
    "cluster": (lambda: sb.ClusterPartitioner(random_state=0), ["e0", "e1"]),
    "cross": (
        lambda: sb.CrossPartitioner(
            [
                ("t", sb.GroupColumnPartitioner("topic"), ["topic"]),
                ("k", sb.KDTreePartitioner(max_depth=1), ["e0"]),
            ]
        ),
        ["topic", "e0"],
    ),
    "text": (lambda: sb.TextEmbedder("q", n_components=3, random_state=0), ["q"]),
}


@pytest.mark.parametrize("kind", _kinds())
@pytest.mark.parametrize("name", sorted(PARTITIONERS))
def test_transformers_take_dataframes_and_follow_set_output(kind, name):
    make, columns = PARTITIONERS[name]
    frame, _ = _frame()
    X = _as(kind, frame[columns])
    ref = make().fit(frame[columns]).transform(frame[columns])
    est = make().fit(X)
    assert_allclose(np.asarray(est.transform(X), dtype=float), np.asarray(ref, float))
    assert list(est.feature_names_in_) == columns
    out = make().set_output(transform=kind).fit(X).transform(X)
    assert type(out).__module__.split(".")[0] == kind
    assert list(out.columns) == list(est.get_feature_names_out())
    assert_allclose(np.asarray(out, dtype=float), np.asarray(ref, dtype=float))


@pytest.mark.parametrize(
    "make",
    [
        lambda: sb.BetaBinningCalibrator(sb.KDTreePartitioner(max_depth=1)),
        lambda: sb.HierarchicalLogisticScaler(sb.KDTreePartitioner(max_depth=1)),
        lambda: sb.CrossPartitioner([("k", sb.KDTreePartitioner(max_depth=1), [0])]),
    ],
)
def test_array_after_dataframe_gets_sklearns_name_warning(make):
    frame, y = _frame()
    X = frame[["conf", "e0", "e1"]]
    est = make()
    est.fit(X, y)
    predict = getattr(est, "predict_proba", None) or est.transform
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        predict(X.to_numpy())


@pytest.mark.parametrize(
    "rows", [slice(2, 5), slice(0, 10), slice(8, 20), slice(None, None, 3), slice(5, 5)]
)
def test_take_rows_slices_a_dataframe_like_iloc(rows):
    # a predict block of a DataFrame is a slice; take_rows builds the block's
    # positions only (it used to build an arange of all rows per block)
    from sklearn_betacal._validation import take_rows

    Z = pd.DataFrame({"a": np.arange(10) * 1.5, "g": list("abcdefghij")})
    assert take_rows(Z, rows).equals(Z.iloc[rows])
    assert np.array_equal(take_rows(Z.to_numpy(), rows), Z.to_numpy()[rows])


def test_polars_names_where_scikit_learn_cannot_read_them(monkeypatch):
    """scikit-learn < 1.8 reads a polars frame's column names through the
    interchange protocol, which polars 2 dropped (issue 39, item 8: at the
    scikit-learn floor, confidence_column="conf" on a polars frame was
    refused). Simulated here on any version: the names are set and checked
    by scikit-learn's own rules all the same."""
    pl = pytest.importorskip("polars")
    import sklearn.utils.validation as skv

    from sklearn_betacal import BetaBinningCalibrator, _compat

    real = skv._get_feature_names

    def blind(X):  # what scikit-learn 1.7 sees of a polars 2 frame
        return None if type(X).__module__.startswith("polars") else real(X)

    monkeypatch.setattr(skv, "_get_feature_names", blind)
    monkeypatch.setattr(_compat, "_get_feature_names", blind, raising=False)
    rng = np.random.default_rng(0)
    n = 200
    X = pl.DataFrame(
        {"flag": (np.arange(n) % 3 == 0), "conf": rng.uniform(size=n)}
    )
    y = rng.integers(0, 2, n)
    bb = BetaBinningCalibrator(confidence_column="conf", points_per_bin=20)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "valid feature names"
        bb.fit(X, y)
        p = bb.predict_proba(X)
    assert list(bb.feature_names_in_) == ["flag", "conf"]
    assert_allclose(p, bb.predict_proba(X.to_pandas()))
    with pytest.raises(ValueError, match="feature names should match"):
        bb.predict_proba(X.rename({"flag": "other"}))
    # a partitioner that selects its column by name (scikit-learn < 1.8
    # refused string keys on such a frame in _safe_indexing)
    by_name = BetaBinningCalibrator(
        sb.GroupColumnPartitioner("flag"), confidence_column="conf", points_per_bin=20
    ).fit(X, y)
    assert by_name.partitioner_.groups_.tolist() == [False, True]
    assert_array_equal(by_name.apply(X), X["flag"].to_numpy().astype(int))
