# SPDX-License-Identifier: MIT
"""Loader for the complete Influences-on-LLM-Calibration study data.

Source: the public files ``model_responses_all/<style>/<dataset>_<model>_
<style>_<split>.csv`` of github.com/Yuuxii/Influences-on-LLM-Calibration at
commit ``bf66dbe4`` (the last commit touching that folder). Of its 384 files,
the 247 listed in ``data/influences_manifest.csv`` are supported: those of the
snapshot that the project's reference copy was assembled from (the other 137,
mostly chain-of-thought/few-shot *train* files of 4 MiB or more, have no pinned
checksum and are not fetched).

Integrity. We have no pinned hash of the upstream *bytes* (the raw CSVs were
never obtained in full), so every file is checked by a **content digest**: the
sha256 of a canonical serialisation of the parsed rows (text columns exact,
float columns at float32 precision so that the last-bit behaviour of a CSV
float parser cannot matter), pinned per file in the manifest. The manifest
itself and the assembled reference Parquet are pinned by their file sha256.

Cache. Each downloaded file is parsed, verified, stripped of the per-token
lists and judge rationale, and written atomically (temp file + ``os.replace``)
as ``<data_home>/influences/<commit12>/<style>/<file>.gz``. A cached file is
re-verified by its content digest on every load.
"""

import gzip
import hashlib
import logging
import os
import tempfile
import urllib.error
import urllib.request
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from .._io import atomic_write
from ._bundled import DATA_DIR, make_bunch, read_description, verify_sha256

logger = logging.getLogger(__name__)

REPOSITORY = "Yuuxii/Influences-on-LLM-Calibration"
COMMIT = "bf66dbe4bb1ad520281c12b7aba597e059661e0a"
DEFAULT_BASE_URL = (
    f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}/model_responses_all/"
)
MANIFEST_FILE = "influences_manifest.csv"
MANIFEST_SHA256 = "6957913fd0abcb09dc79ef6b264da2731d0e8b16fcdf765c31cba85b6dcb0017"
#: sha256 of ``influences_llm_calibration_all.parquet`` (273,744 rows), the
#: assembled copy of the whole study, verified when a local copy is used.
SHARED_PARQUET_SHA256 = (
    "56cd43edc17dff6bee27bd6aa25ab54ffb5ed2b67120212c784c0d331ce7793e"
)
DATA_HOME_ENV = "SKLEARN_BETACAL_DATA"

DATASETS = ("nq", "sciq", "triviaqa", "wikiqa")
MODELS = (
    "Qwen_Qwen2-72B-Instruct",
    "gemma2",
    "gemma9",
    "google_gemma-2-27b-it",
    "llama31-8",
    "llama7",
    "llama8",
    "meta-llama_Meta-Llama-3-70B-Instruct",
    "meta-llama_Meta-Llama-3.1-70B-Instruct",
    "mistralai_Mixtral-8x7B-Instruct-v0.1",
    "phi4",
    "phi7",
)
PROMPT_STYLES = ("0_shot", "cot", "few_shot", "verb")
SPLITS = ("test", "train")

KEY_COLUMNS = ["dataset", "model", "prompt_style", "split"]
TEXT_COLUMNS = ["question", "target", "response", "extracted_answer"]
#: Per-row columns, in the order of the assembled reference copy.
ROW_COLUMNS = [
    "question",
    "target",
    "response",
    "seq_prob",
    "extracted_answer",
    "extracted_seq_prob",
    "correct_judge",
    "infosel_logit",
    "ts_seq_confidence",
    "ts_infosel_confidence",
    "verbal_confidence",
]
#: the numbers among them: confidences, logits and the judge's label
FLOAT_COLUMNS = [c for c in ROW_COLUMNS if c not in TEXT_COLUMNS]
COLUMNS = [*KEY_COLUMNS, "row_in_file", *ROW_COLUMNS]
TARGET = "correct_judge"
FEATURES = [c for c in COLUMNS if c != TARGET]
#: upstream CSV column -> our column (the others, per-token lists and the
#: judge's free-text rationale ``prom46_score``, are dropped).
_UPSTREAM_RENAME = {
    **{c: c for c in ROW_COLUMNS if c not in ("correct_judge", "verbal_confidence")},
    "extracted_prom46_score": "correct_judge",
    "extracted_prob": "verbal_confidence",
}
_CSV_DTYPES = {
    **dict.fromkeys(TEXT_COLUMNS, str),
    **dict.fromkeys(FLOAT_COLUMNS, float),
}


def source_file_name(dataset, model, prompt_style, split):
    """Upstream file name ``<dataset>_<model>_<style>_<split>.csv``."""
    return f"{dataset}_{model}_{prompt_style}_{split}.csv"


def content_digest(frame):
    """sha256 of the rows of one upstream file, independent of file format.

    Hashes, column by column in :data:`ROW_COLUMNS` order, the text values
    exactly (UTF-8, a NUL byte marks a missing value) and the float values
    cast to little-endian float32 with one canonical NaN. Two parses of the
    same CSV that differ only in the last bits of a float (parsers are not all
    correctly rounded) therefore get the same digest; any changed, added,
    dropped or reordered row does not.
    """
    digest = hashlib.sha256(f"rows={len(frame)}".encode())
    for column in ROW_COLUMNS:
        digest.update(f"\x1e{column}\x1e".encode())
        values = frame[column]
        if column in TEXT_COLUMNS:
            parts = [v if isinstance(v, str) else "\x00" for v in values.tolist()]
            digest.update("\x1f".join(parts).encode("utf-8"))
        else:
            arr = values.to_numpy(dtype=np.float64, na_value=np.nan).astype("<f4")
            arr[np.isnan(arr)] = np.float32("nan")
            digest.update(arr.tobytes())
    return digest.hexdigest()


def get_data_home(data_home=None):
    """Folder that caches downloaded data, created if missing.

    ``data_home`` if given, else the environment variable
    ``SKLEARN_BETACAL_DATA``, else ``~/sklearn_betacal_data``.

    Parameters
    ----------
    data_home : str or path-like, default=None

    Returns
    -------
    data_home : pathlib.Path
    """
    if data_home is None:
        data_home = os.environ.get(DATA_HOME_ENV, "~/sklearn_betacal_data")
    path = Path(data_home).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(
            f"data_home={str(data_home)!r} is a file, not a folder; pass a folder "
            f"for the cache (or unset {DATA_HOME_ENV})."
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(
            f"data_home={str(data_home)!r} cannot be created as the cache folder: "
            f"{exc.strerror or exc}; pass a writable folder."
        ) from None
    return path


def load_manifest():
    """The pinned list of the 247 supported upstream files (a DataFrame)."""
    path = DATA_DIR / MANIFEST_FILE
    verify_sha256(
        path,
        MANIFEST_SHA256,
        what="Influences manifest",
        fix="The installation is damaged: reinstall sklearn-betacal.",
    )
    return pd.read_csv(path, dtype={"n_rows": np.int64}, keep_default_na=False)


def _selection(value, valid, name):
    if value is None:
        return list(valid)
    values = [value] if isinstance(value, str) else list(value)
    unknown = [v for v in values if v not in valid]
    if unknown or not values:
        raise ValueError(
            f"{name}={value!r} is not valid: choose from {list(valid)} (a string, "
            "a list of them, or None for all)."
        )
    return values


def _open_url(url, timeout):
    """``urllib.request.urlopen``; a separate name so tests can replace it."""
    return urllib.request.urlopen(url, timeout=timeout)  # noqa: S310


def _download(url, folder, timeout):
    """Stream ``url`` into a temp file in ``folder``; return its path."""
    try:
        response = _open_url(url, timeout)
    except urllib.error.HTTPError as exc:
        raise OSError(
            f"could not download {url}: HTTP {exc.code} {exc.reason}. The pinned "
            "source may have moved; pass base_url= (a mirror) or local_path=."
        ) from None
    except OSError as exc:  # URLError, timeouts, refused connections
        reason = getattr(exc, "reason", exc)
        if url.startswith("file:"):
            raise OSError(
                f"could not read {url} ({reason}): the local copy lacks this file."
            ) from None
        raise OSError(
            f"could not download {url} ({reason}): you appear to be offline and "
            "the file is not cached. Connect to the internet once (the file is "
            "then cached), or pass local_path= pointing to a copy of the study "
            "data (the assembled Parquet or a checkout of the repository)."
        ) from None
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".download.", suffix=".part")
    try:
        with response, os.fdopen(fd, "wb") as fh:
            while block := response.read(1 << 20):
                fh.write(block)
    except BaseException as exc:  # dropped connection, full disk, Ctrl-C
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise OSError(f"download of {url} failed part-way: {exc}") from None
        raise
    return Path(tmp)


def parse_source_csv(source):
    """Parse one upstream CSV (path or buffer) into :data:`ROW_COLUMNS`.

    Uses pandas' default missing-value handling (empty fields, ``"NA"``,
    ``"None"``, ... become NaN), as the reference copy did, so that the
    content digest matches.
    """
    raw = pd.read_csv(
        source,
        usecols=lambda c: c in _UPSTREAM_RENAME,
        dtype={k: _CSV_DTYPES[v] for k, v in _UPSTREAM_RENAME.items()},
    )
    raw = raw.rename(columns=_UPSTREAM_RENAME)
    for column in ROW_COLUMNS:  # e.g. verb files have no ts_* columns
        if column not in raw:
            raw[column] = np.nan
    return raw[ROW_COLUMNS].astype(dict.fromkeys(FLOAT_COLUMNS, np.float64))


def _read_cache(path):
    """Inverse of :func:`_cache_bytes` (NaN was written as an empty field)."""
    return pd.read_csv(
        path,
        dtype=_CSV_DTYPES,
        keep_default_na=False,
        na_values=dict.fromkeys(ROW_COLUMNS, [""]),
    )[ROW_COLUMNS]


def _cache_bytes(rows):
    text = rows.to_csv(index=False, lineterminator="\n").encode("utf-8")
    return gzip.compress(text, compresslevel=6, mtime=0)


def _check_rows(rows, entry, origin):
    problem = None
    if len(rows) != entry.n_rows:
        problem = f"has {len(rows)} rows, expected {entry.n_rows}"
    elif content_digest(rows) != entry.content_sha256:
        problem = "does not match the pinned content checksum"
    if problem:
        raise OSError(f"{entry.file} from {origin} {problem}.")


def _load_file(entry, cache_dir, base_url, download_if_missing, timeout):
    """Rows of one manifest entry: from the cache, else downloaded and cached."""
    cached = cache_dir / entry.prompt_style / f"{entry.file}.gz"
    if cached.exists():
        try:
            rows = _read_cache(cached)
            _check_rows(rows, entry, f"the cache ({cached})")
            return rows
        except (OSError, EOFError, ValueError, zlib.error) as exc:
            if not download_if_missing:
                raise OSError(
                    f"cached file {cached} is corrupt ({exc}); delete it, or allow "
                    "download_if_missing=True to fetch it again."
                ) from None
            logger.warning("cached %s is corrupt (%s); downloading again", cached, exc)
    elif not download_if_missing:
        raise OSError(
            f"{entry.file} is not in the cache folder {cache_dir} and "
            "download_if_missing=False. Run once with download_if_missing=True "
            "while online, or pass local_path= pointing to a copy of the data."
        )
    url = f"{base_url.rstrip('/')}/{entry.prompt_style}/{entry.file}"
    logger.info("downloading %s", url)
    tmp = _download(url, cached.parent, timeout)
    try:
        rows = parse_source_csv(tmp)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise OSError(f"{url} is not a readable study CSV: {exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    _check_rows(rows, entry, url)
    cached.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(cached, _cache_bytes(rows))
    return rows


def _check_reference_copy(path):
    """Fail fast unless ``path`` is the pinned Parquet and pyarrow is present."""
    verify_sha256(
        path,
        SHARED_PARQUET_SHA256,
        what="local copy of the study data",
        fix="local_path must be the pinned influences_llm_calibration_all."
        "parquet (273,744 rows), a checkout of the repository, or None.",
    )
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise ImportError(
            "reading the Parquet copy needs pyarrow: pip install "
            "sklearn-betacal[parquet]"
        ) from None


def _from_reference_copy(path, manifest):
    """Rows of ``manifest`` taken from the (checked) reference Parquet."""
    frame = pd.read_parquet(path, columns=COLUMNS)
    keys = manifest[KEY_COLUMNS].assign(_order=np.arange(len(manifest)))
    frame = frame.merge(keys, on=KEY_COLUMNS, how="inner")
    return frame.sort_values(["_order", "row_in_file"], kind="stable").drop(
        columns="_order"
    )


def fetch_influences(
    *,
    dataset=None,
    model=None,
    prompt_style=None,
    split=None,
    data_home=None,
    download_if_missing=True,
    local_path=None,
    base_url=None,
    as_frame=True,
    return_X_y=False,
    timeout=60.0,
):
    """Load the complete Influences-on-LLM-Calibration study data.

    Open-ended QA answers of 12 instruction models on four QA sets (NQ-open,
    SciQ, TriviaQA, WikiQA) under four prompt styles (``0_shot``, ``cot``,
    ``few_shot``, ``verb``), train and test splits, with token-probability
    confidences, verbalized confidences (``verb`` style only) and an LLM-judge
    correctness label. Files are downloaded from the study's public GitHub
    repository at a pinned commit, verified by a pinned checksum and cached
    in ``data_home``; later calls load offline from the cache.

    ================  ====================================================
    rows (all)        273,744 in 247 files
    by prompt style   0_shot 113,396; cot 26,996; few_shot 21,956;
                      verb 111,396
    by dataset        nq 74,000; sciq 75,000; triviaqa 85,000;
                      wikiqa 39,744
    by split          test 121,664; train 152,080
    verb + test       38,916 (verbalized confidence in [0, 1]: 37,605)
    target            ``correct_judge`` in {0, 1}; 44.0 % correct
    ================  ====================================================

    Parameters
    ----------
    dataset, model, prompt_style, split : str, list of str or None, \
default=None
        Keep only these values (None keeps all). Valid values: datasets
        ``"nq", "sciq", "triviaqa", "wikiqa"``; models as in the study
        (``"gemma2"``, ``"llama8"``, ``"Qwen_Qwen2-72B-Instruct"``, ... see
        ``MODELS``); prompt styles ``"0_shot", "cot", "few_shot", "verb"``;
        splits ``"test", "train"``. Only the matching files are downloaded.
    data_home : str or path-like, default=None
        Cache folder; see :func:`get_data_home` (default
        ``~/sklearn_betacal_data`` or ``$SKLEARN_BETACAL_DATA``).
    download_if_missing : bool, default=True
        If False, raise ``OSError`` instead of downloading a file that is
        not cached.
    local_path : str or path-like, default=None
        Read a local copy instead of the network: either the assembled
        ``influences_llm_calibration_all.parquet`` (checked against its pinned
        sha256; needs pyarrow) or a folder holding the upstream CSVs (a
        checkout of the repository, or its ``model_responses_all`` folder),
        which is then read like a mirror and cached.
    base_url : str, default=None
        URL of a ``model_responses_all/`` folder to download from (a mirror,
        or ``file://`` URL); default the pinned GitHub commit.
    as_frame : bool, default=True
        See :func:`load_triviaqa_confidence`.
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.
    timeout : float, default=60.0
        Seconds before a download attempt gives up.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``frame`` (DataFrame with columns ``dataset, model, prompt_style,
        split, row_in_file, question, target, response, seq_prob,
        extracted_answer, extracted_seq_prob, correct_judge, infosel_logit,
        ts_seq_confidence, ts_infosel_confidence, verbal_confidence``, rows in
        file order), ``data`` (all but ``correct_judge``), ``target``
        (``correct_judge`` as int64), ``feature_names``, ``target_names`` and
        ``DESCR``.
    (data, target) : tuple if ``return_X_y`` is True

    Raises
    ------
    OSError
        Offline and the file is not cached (or ``download_if_missing=False``);
        a download, cached file or local copy fails its checksum.
    ValueError
        An unknown filter value, or no supported file matches the filters.

    See Also
    --------
    load_triviaqa_confidence : The bundled TriviaQA ``verb``/test subset,
        no download needed.

    Notes
    -----
    ``verbal_confidence`` is ``-1`` where the model's stated probability
    could not be parsed (2,983 ``verb`` rows) and exceeds 1 in 6 rows: keep
    ``verbal_confidence.between(0, 1)``. ``ts_*`` and ``infosel_*`` columns
    are the authors' post-hoc calibrated scores, not raw confidences.
    ``row_in_file`` indexes the same question for every model of a
    (dataset, split), so it is a question-level group. Licences: study data
    MIT; question text NQ CC BY-SA 3.0, SciQ CC BY-NC 3.0 (non-commercial),
    TriviaQA Apache-2.0, WikiQA Microsoft Research Data License. None of it
    ships with this package; it is downloaded at your request.

    References
    ----------
    .. [1] Y. Xia et al., "Influences on LLM Calibration: A Study of Response
       Agreement, Loss Functions, and Prompt Styles", 2025.

    Examples
    --------
    >>> from sklearn_betacal.datasets import fetch_influences
    >>> bunch = fetch_influences(dataset="triviaqa", prompt_style="verb",
    ...                          split="test")  # doctest: +SKIP
    >>> bunch.frame.shape  # doctest: +SKIP
    (12000, 16)
    """
    local_file = local_path is not None and Path(local_path).is_file()
    if local_file:
        _check_reference_copy(Path(local_path))
    manifest = load_manifest()
    filters = {
        "dataset": _selection(dataset, DATASETS, "dataset"),
        "model": _selection(model, MODELS, "model"),
        "prompt_style": _selection(prompt_style, PROMPT_STYLES, "prompt_style"),
        "split": _selection(split, SPLITS, "split"),
    }
    keep = np.logical_and.reduce([manifest[k].isin(v) for k, v in filters.items()])
    manifest = manifest[keep].reset_index(drop=True)
    if manifest.empty:
        raise ValueError(
            "no supported file matches these filters. Of the study's 384 "
            "(dataset, model, style, split) files, 247 are available; most "
            "cot/few_shot train files are not (see fetch_influences' Notes)."
        )

    if local_file:
        frame = _from_reference_copy(Path(local_path), manifest)
    else:
        if local_path is not None:
            folder = Path(local_path).expanduser().resolve()
            if not folder.is_dir():
                raise OSError(f"local_path {folder} does not exist.")
            if (folder / "model_responses_all").is_dir():
                folder = folder / "model_responses_all"
            base_url = folder.as_uri()
        cache_dir = get_data_home(data_home) / "influences" / COMMIT[:12]
        parts = []
        for entry in manifest.itertuples(index=False):
            rows = _load_file(
                entry,
                cache_dir,
                base_url or DEFAULT_BASE_URL,
                download_if_missing,
                timeout,
            )
            keys = pd.DataFrame(
                {
                    **{k: getattr(entry, k) for k in KEY_COLUMNS},
                    "row_in_file": np.arange(len(rows), dtype=np.int64),
                },
                index=rows.index,
            )
            parts.append(pd.concat([keys, rows], axis=1))
        frame = pd.concat(parts, ignore_index=True)
    frame = frame[COLUMNS].reset_index(drop=True)
    frame[TARGET] = frame[TARGET].astype(np.int64)
    return make_bunch(
        frame,
        feature_names=FEATURES,
        target=TARGET,
        as_frame=as_frame,
        return_X_y=return_X_y,
        descr=read_description("influences"),
    )
