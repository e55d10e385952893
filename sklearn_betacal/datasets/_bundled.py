# SPDX-License-Identifier: MIT
"""The bundled TriviaQA confidence set and helpers shared by the loaders.

The data file ``data/triviaqa_confidence.csv.gz`` ships inside the package
(built by ``scripts/build_triviaqa_bundle.py``), so
:func:`load_triviaqa_confidence` works offline. Its sha256 is pinned below and
checked on every load (hashing 0.6 MB takes about a millisecond), so a
truncated or modified file is reported instead of silently loaded.
"""

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

DATA_DIR = Path(__file__).resolve().parent / "data"

TRIVIAQA_FILE = "triviaqa_confidence.csv.gz"
TRIVIAQA_SHA256 = "53b4bdefc3fc0d37566df4abe330ef619cda4fded0abcf87424f339c3046257e"
TRIVIAQA_N_ROWS = 11666

#: Columns of ``data`` (in this order). The confidence comes first so that
#: ``data[["verbal_confidence", "question_id"]]`` is ready for a
#: group-conditional calibrator with the default ``confidence_column=0``.
TRIVIAQA_FEATURES = [
    "verbal_confidence",
    "extracted_seq_prob",
    "question_id",
    "model",
    "question",
    "gold_answer",
    "answer",
]
TRIVIAQA_TARGET = "correct_judge"
_TEXT_COLUMNS = ["model", "question", "gold_answer", "answer"]
_DTYPES = {
    "question_id": np.int64,
    "verbal_confidence": np.float64,
    "extracted_seq_prob": np.float64,
    "correct_judge": np.int64,
    **dict.fromkeys(_TEXT_COLUMNS, str),
}
TARGET_NAMES = np.array(["incorrect", "correct"])


def sha256_file(path, chunk_size=1 << 20):
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk_size), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path, expected, *, what, fix):
    """Raise ``OSError`` naming ``path`` unless its sha256 is ``expected``."""
    path = Path(path)
    if not path.is_file():
        raise OSError(f"{what} not found at {path}. {fix}")
    found = sha256_file(path)
    if found != expected:
        raise OSError(
            f"{what} at {path} is corrupt or modified: sha256 {found[:16]}... "
            f"does not match the pinned {expected[:16]}... . {fix}"
        )


def read_description(name):
    """Text of ``data/<name>.rst`` (the ``DESCR`` of a loader)."""
    return (DATA_DIR / f"{name}.rst").read_text(encoding="utf-8")


def make_bunch(frame, *, feature_names, target, as_frame, return_X_y, descr):
    """Split ``frame`` into scikit-learn's ``Bunch``/``(X, y)`` loader shape."""
    data = frame[feature_names]
    y = frame[target]
    if not as_frame:
        # Mixed numeric/text columns: an object array keeps every value intact;
        # select numeric columns and cast (e.g. ``X[:, :2].astype(float)``).
        data = data.to_numpy(dtype=object)
        y = y.to_numpy()
        frame = None
    if return_X_y:
        return data, y
    return Bunch(
        data=data,
        target=y,
        frame=frame,
        feature_names=list(feature_names),
        target_names=TARGET_NAMES.copy(),
        DESCR=descr,
    )


def load_triviaqa_confidence(*, as_frame=True, return_X_y=False):
    """Load the bundled TriviaQA verbalized-confidence set (offline).

    TriviaQA test questions answered by the 12 instruction models of the
    Influences-on-LLM-Calibration study (Xia et al., 2025), prompted to state
    their answer and a probability (prompt style ``verb``). Each row is one
    (question, model) pair: the model's answer, its verbalized confidence, the
    token-probability confidence of the answer span, and whether an LLM judge
    (Prometheus-8x7B, binarised at 0.5) marked the answer correct.

    =================  ===========================================
    rows               11,666 (1,000 questions x 12 models, minus
                       334 with verbalized confidence -1 or > 1)
    features           7 (2 confidences, question id, model, texts)
    target             ``correct_judge`` in {0, 1}; 49.4 % correct
    file               ``data/triviaqa_confidence.csv.gz``, sha256
                       checked on load
    =================  ===========================================

    Parameters
    ----------
    as_frame : bool, default=True
        If True, ``data`` is a :class:`pandas.DataFrame`, ``target`` a
        :class:`pandas.Series` and ``frame`` holds both. If False, ``data`` is
        an object ndarray (the columns mix numbers and text), ``target`` an
        int64 ndarray and ``frame`` is None.
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with attributes:

        data : DataFrame of shape (11666, 7) or ndarray
            Columns ``verbal_confidence`` (float in [0, 1]),
            ``extracted_seq_prob`` (float in [0, 1]; NaN in 13 rows where the
            answer span had no tokens), ``question_id`` (int 0-999, the
            question's row in the upstream test file; the same id for every
            model, so it is a ready-made group), ``model`` (study model id),
            ``question``, ``gold_answer`` and ``answer`` (the model's
            extracted answer; NaN when empty).
        target : Series or ndarray of shape (11666,)
            ``correct_judge``: 1 if the judge accepted the answer, else 0.
        frame : DataFrame of shape (11666, 8) or None
            ``data`` and ``target`` side by side.
        feature_names : list of str
            Names of the ``data`` columns.
        target_names : ndarray of str
            ``["incorrect", "correct"]``.
        DESCR : str
            Full description, sources and licences.

    (data, target) : tuple if ``return_X_y`` is True

    Raises
    ------
    OSError
        If the bundled file is missing or its sha256 does not match (a
        damaged installation: reinstall sklearn-betacal).

    See Also
    --------
    fetch_influences : The complete study (four QA sets, all prompt styles,
        train and test), downloaded and cached.

    Notes
    -----
    Built by ``scripts/build_triviaqa_bundle.py`` from the study's public
    files (``model_responses_all/verb/triviaqa_<model>_verb_test.csv`` at
    commit ``bf66dbe4``); rows whose verbalized confidence was a parse failure
    (``-1``) or above 1 are dropped. Study data: MIT licence (Copyright (c)
    2025 Yuxi Xia); TriviaQA question and answer text: Apache License 2.0.
    Both licence texts ship next to the file.

    References
    ----------
    .. [1] Y. Xia et al., "Influences on LLM Calibration: A Study of Response
       Agreement, Loss Functions, and Prompt Styles", 2025.
       https://github.com/Yuuxii/Influences-on-LLM-Calibration
    .. [2] M. Joshi et al., "TriviaQA: A Large Scale Distantly Supervised
       Challenge Dataset for Reading Comprehension", ACL 2017.

    Examples
    --------
    >>> from sklearn_betacal.datasets import load_triviaqa_confidence
    >>> bunch = load_triviaqa_confidence()
    >>> bunch.frame.shape
    (11666, 8)
    >>> round(float(bunch.target.mean()), 3)
    0.494
    >>> X, y = load_triviaqa_confidence(return_X_y=True)
    >>> int(X.groupby("model").size().loc["llama31-8"])
    895
    """
    path = DATA_DIR / TRIVIAQA_FILE
    verify_sha256(
        path,
        TRIVIAQA_SHA256,
        what="bundled TriviaQA data file",
        fix="The installation is damaged: reinstall sklearn-betacal.",
    )
    frame = pd.read_csv(
        path,
        dtype=_DTYPES,
        keep_default_na=False,
        na_values={c: [""] for c in _DTYPES},
    )
    if len(frame) != TRIVIAQA_N_ROWS:  # sha256 matched, so this is a build bug
        raise OSError(f"{path} has {len(frame)} rows, expected {TRIVIAQA_N_ROWS}.")
    frame = frame[[*TRIVIAQA_FEATURES, TRIVIAQA_TARGET]]
    return make_bunch(
        frame,
        feature_names=TRIVIAQA_FEATURES,
        target=TRIVIAQA_TARGET,
        as_frame=as_frame,
        return_X_y=return_X_y,
        descr=read_description("triviaqa_confidence"),
    )
