# SPDX-License-Identifier: MIT
"""Tests of the bundled TriviaQA loader and the full-study fetcher.

No test touches the network: downloads are served from ``file://`` folders
built in ``tmp_path`` out of the reference copy in ``../shared/data``, and the
opener is replaced where a test simulates being offline.
"""

import gzip
import hashlib
import importlib.util
import shutil
import socket
import subprocess
import sys
import urllib.error
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_betacal.datasets import (
    _bundled,
    _influences,
    fetch_influences,
    get_data_home,
    load_triviaqa_confidence,
)

ROOT = Path(__file__).resolve().parents[1]
PARQUET = "influences_llm_calibration_all.parquet"


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch):
    """Make any socket connection fail loudly (``file://`` URLs still work)."""

    def refuse(*args, **kwargs):
        raise AssertionError("a test tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="session")
def shared_parquet(shared_data):
    pytest.importorskip("pyarrow")
    path = shared_data / "influences" / PARQUET
    if not path.exists():
        pytest.skip(f"{path} missing")
    return path


def write_upstream(frame, root):
    """Write ``frame``'s files as the upstream repository lays them out.

    Columns get their upstream names (``extracted_prom46_score``,
    ``extracted_prob``), ``verb`` files lose the ``ts_*``/``infosel_*``
    columns and other styles lose ``extracted_prob``, and a per-token list
    column is added that the parser must ignore.
    """
    folder = Path(root) / "model_responses_all"
    for (dataset, model, style, split), part in frame.groupby(
        _influences.KEY_COLUMNS, sort=False
    ):
        raw = part.sort_values("row_in_file")[_influences.ROW_COLUMNS].rename(
            columns={
                "correct_judge": "extracted_prom46_score",
                "verbal_confidence": "extracted_prob",
            }
        )
        raw.insert(3, "ans_tok", "['Guess', ':', ' x']")
        raw["prom46_score"] = "{0: 'rationale [RESULT] 0'}"
        if style == "verb":
            raw = raw.drop(
                columns=["infosel_logit", "ts_seq_confidence", "ts_infosel_confidence"]
            )
        else:
            raw = raw.drop(columns="extracted_prob")
        name = _influences.source_file_name(dataset, model, style, split)
        (folder / style).mkdir(parents=True, exist_ok=True)
        raw.to_csv(folder / style / name, index=False)
    return folder


@pytest.fixture(scope="module")
def wikiqa_phi7(influences_frame):
    """Reference rows of every supported wikiqa/phi7 file (6 files, 2,704 rows)."""
    keep = (influences_frame.dataset == "wikiqa") & (influences_frame.model == "phi7")
    return influences_frame[keep]


#: one file of the Influences release (243 rows), the one the download and
#: cache checks below fetch
ONE_FILE = {
    "dataset": "wikiqa",
    "model": "phi7",
    "prompt_style": "verb",
    "split": "test",
}


@pytest.fixture
def one_file(wikiqa_phi7):
    """The reference rows of :data:`ONE_FILE` (a copy, free to damage)."""
    verb_test = (wikiqa_phi7.prompt_style == "verb") & (wikiqa_phi7.split == "test")
    return wikiqa_phi7[verb_test].copy()


# --------------------------------------------------------------------------
# load_triviaqa_confidence
# --------------------------------------------------------------------------


def test_load_triviaqa_confidence_columns_dtypes_rows():
    bunch = load_triviaqa_confidence()
    frame = bunch.frame
    assert frame.shape == (11666, 8)
    assert bunch.feature_names == [
        "verbal_confidence",
        "extracted_seq_prob",
        "question_id",
        "model",
        "question",
        "gold_answer",
        "answer",
    ]
    assert list(frame.columns) == [*bunch.feature_names, "correct_judge"]
    assert bunch.data.shape == (11666, 7)
    pd.testing.assert_series_equal(bunch.target, frame["correct_judge"])
    assert frame["verbal_confidence"].dtype == np.float64
    assert frame["extracted_seq_prob"].dtype == np.float64
    assert frame["question_id"].dtype == np.int64
    assert frame["correct_judge"].dtype == np.int64
    for column in ("model", "question", "gold_answer", "answer"):
        assert pd.api.types.infer_dtype(frame[column], skipna=True) == "string"
    assert frame["verbal_confidence"].between(0, 1).all()
    assert set(frame["correct_judge"].unique()) == {0, 1}
    assert frame["correct_judge"].sum() == 5767
    assert frame["model"].nunique() == 12
    assert frame["question_id"].min() == 0 and frame["question_id"].max() == 999
    assert frame["question_id"].nunique() == 1000
    # question_id is a question-level group: one text per id, the same id for
    # every model that answered it
    assert frame.groupby("question_id")["question"].nunique().max() == 1
    assert frame.groupby("question")["question_id"].nunique().max() == 1
    assert frame.groupby("model").size().max() == 1000
    assert int(frame["extracted_seq_prob"].isna().sum()) == 13
    assert int(frame["answer"].isna().sum()) == 15
    assert list(bunch.target_names) == ["incorrect", "correct"]
    assert "TriviaQA" in bunch.DESCR and "Apache" in bunch.DESCR


def test_load_triviaqa_confidence_return_X_y_and_arrays():
    X, y = load_triviaqa_confidence(return_X_y=True)
    assert isinstance(X, pd.DataFrame) and isinstance(y, pd.Series)
    assert X.shape == (11666, 7) and y.shape == (11666,)
    Xa, ya = load_triviaqa_confidence(as_frame=False, return_X_y=True)
    assert isinstance(Xa, np.ndarray) and Xa.dtype == object
    assert ya.dtype == np.int64
    np.testing.assert_array_equal(Xa[:, 0].astype(float), X["verbal_confidence"])
    np.testing.assert_array_equal(ya, y.to_numpy())
    bunch = load_triviaqa_confidence(as_frame=False)
    assert bunch.frame is None and bunch.data.shape == (11666, 7)


def test_load_triviaqa_confidence_offline(no_network):
    frame = load_triviaqa_confidence().frame
    assert len(frame) == 11666


def test_load_triviaqa_confidence_deterministic():
    a = load_triviaqa_confidence().frame
    b = load_triviaqa_confidence().frame
    pd.testing.assert_frame_equal(a, b)
    a.loc[0, "verbal_confidence"] = -5.0  # a copy: mutation does not leak
    assert load_triviaqa_confidence().frame.loc[0, "verbal_confidence"] != -5.0


def test_load_triviaqa_confidence_checksum_failure(tmp_path, monkeypatch):
    good = _bundled.DATA_DIR / _bundled.TRIVIAQA_FILE
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / _bundled.TRIVIAQA_FILE).write_bytes(bytes(data))
    monkeypatch.setattr(_bundled, "DATA_DIR", tmp_path)
    with pytest.raises(OSError, match="corrupt or modified.*reinstall"):
        load_triviaqa_confidence()


def test_load_triviaqa_confidence_missing_file(tmp_path, monkeypatch):
    monkeypatch.setattr(_bundled, "DATA_DIR", tmp_path)
    with pytest.raises(OSError, match="not found.*reinstall"):
        load_triviaqa_confidence()


def test_load_triviaqa_confidence_pinned_sha256_matches_file_and_provenance():
    path = _bundled.DATA_DIR / _bundled.TRIVIAQA_FILE
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == _bundled.TRIVIAQA_SHA256
    provenance = (_bundled.DATA_DIR / "PROVENANCE.md").read_text()
    assert _bundled.TRIVIAQA_SHA256 in provenance
    assert _influences.MANIFEST_SHA256 in provenance
    assert _influences.SHARED_PARQUET_SHA256 in provenance
    assert _influences.COMMIT in provenance
    assert f"{path.stat().st_size:,}" in provenance
    assert path.stat().st_size < 1_000_000


def test_load_triviaqa_confidence_licences_shipped():
    apache = (_bundled.DATA_DIR / "LICENSE-TriviaQA-Apache-2.0.txt").read_text()
    assert "Apache License" in apache and "Version 2.0, January 2004" in apache
    assert "END OF TERMS AND CONDITIONS" in apache
    mit = (_bundled.DATA_DIR / "LICENSE-Influences-MIT.txt").read_text()
    assert "MIT License" in mit and "Copyright (c) 2025 Yuxi Xia" in mit


def test_load_triviaqa_confidence_matches_reference_copy(influences_frame):
    A = influences_frame
    keep = (
        (A.dataset == "triviaqa")
        & (A.prompt_style == "verb")
        & (A.split == "test")
        & A.verbal_confidence.between(0, 1)
    )
    ref = A[keep].sort_values(["row_in_file", "model"])
    frame = load_triviaqa_confidence().frame
    assert len(frame) == len(ref)
    np.testing.assert_array_equal(frame["question_id"], ref["row_in_file"])
    np.testing.assert_array_equal(frame["model"], ref["model"])
    np.testing.assert_array_equal(frame["question"], ref["question"])
    np.testing.assert_array_equal(frame["correct_judge"], ref["correct_judge"])
    np.testing.assert_array_equal(frame["verbal_confidence"], ref["verbal_confidence"])
    np.testing.assert_array_equal(
        frame["extracted_seq_prob"], ref["extracted_seq_prob"]
    )
    pd.testing.assert_series_equal(
        frame["answer"].reset_index(drop=True),
        ref["extracted_answer"].reset_index(drop=True),
        check_names=False,
        check_dtype=False,
    )


def test_load_triviaqa_confidence_ships_no_other_dataset_text(influences_frame):
    """SciQ (CC BY-NC) and NQ (CC BY-SA) question text must not be in the package."""
    shipped = b"".join(
        gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
        for p in _bundled.DATA_DIR.iterdir()
        if p.is_file()
    ).decode("utf-8")
    for dataset in ("sciq", "nq", "wikiqa"):
        questions = (
            influences_frame.loc[influences_frame.dataset == dataset, "question"]
            .drop_duplicates()
            .head(200)
        )
        leaked = [q for q in questions if len(q) > 30 and q in shipped]
        assert not leaked, f"{dataset} text shipped: {leaked[:2]}"


def test_build_script_reproduces_committed_files(shared_parquet, capsys):
    spec = importlib.util.spec_from_file_location(
        "build_triviaqa_bundle", ROOT / "scripts" / "build_triviaqa_bundle.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--source", str(shared_parquet), "--check"]) == 0
    assert "DIFFERS" not in capsys.readouterr().out


# --------------------------------------------------------------------------
# fetch_influences: local copy
# --------------------------------------------------------------------------


def test_fetch_influences_local_copy_row_counts(shared_parquet, no_network):
    bunch = fetch_influences(local_path=shared_parquet)
    frame = bunch.frame
    assert frame.shape == (273744, 16)
    assert list(frame.columns) == _influences.COLUMNS
    assert frame.groupby("prompt_style").size().to_dict() == {
        "0_shot": 113396,
        "cot": 26996,
        "few_shot": 21956,
        "verb": 111396,
    }
    assert frame.groupby("dataset").size().to_dict() == {
        "nq": 74000,
        "sciq": 75000,
        "triviaqa": 85000,
        "wikiqa": 39744,
    }
    assert frame.groupby("split").size().to_dict() == {
        "test": 121664,
        "train": 152080,
    }
    verb_test = frame[(frame.prompt_style == "verb") & (frame.split == "test")]
    assert len(verb_test) == 38916
    assert int(verb_test.verbal_confidence.between(0, 1).sum()) == 37605
    assert bunch.target.dtype == np.int64
    assert round(float(bunch.target.mean()), 3) == 0.440
    assert bunch.data.shape == (273744, 15)
    # rows come in manifest order, each file in row order
    manifest = _influences.load_manifest()
    sizes = frame.groupby(_influences.KEY_COLUMNS, sort=False).size()
    assert sizes.tolist() == manifest["n_rows"].tolist()


def test_fetch_influences_local_copy_filters(shared_parquet):
    frame = fetch_influences(
        local_path=shared_parquet,
        dataset="triviaqa",
        prompt_style="verb",
        split="test",
    ).frame
    assert frame.shape == (12000, 16)
    assert frame["model"].nunique() == 12
    frame = fetch_influences(
        local_path=shared_parquet, dataset=["nq", "sciq"], model="gemma2"
    ).frame
    assert set(frame["dataset"]) == {"nq", "sciq"}
    assert set(frame["model"]) == {"gemma2"}
    X, y = fetch_influences(
        local_path=shared_parquet, dataset="wikiqa", split="test", return_X_y=True
    )
    assert len(X) == len(y) == 2916 * 4


def test_fetch_influences_local_copy_checksum_mismatch(tmp_path):
    fake = tmp_path / PARQUET
    fake.write_bytes(b"PAR1 not the study data PAR1")
    with pytest.raises(OSError, match="corrupt or modified"):
        fetch_influences(local_path=fake)


# --------------------------------------------------------------------------
# fetch_influences: download, cache, checksum
# --------------------------------------------------------------------------


def test_fetch_influences_download_verifies_and_caches(
    wikiqa_phi7, shared_parquet, tmp_path, monkeypatch
):
    upstream = write_upstream(wikiqa_phi7, tmp_path / "mirror")
    home = tmp_path / "home"
    calls = []
    real_open = _influences._open_url

    def counting_open(url, timeout):
        calls.append(url)
        return real_open(url, timeout)

    monkeypatch.setattr(_influences, "_open_url", counting_open)
    bunch = fetch_influences(
        dataset="wikiqa", model="phi7", data_home=home, base_url=upstream.as_uri()
    )
    assert len(calls) == 6 and all(u.startswith("file://") for u in calls)
    expected = fetch_influences(
        local_path=shared_parquet, dataset="wikiqa", model="phi7"
    ).frame
    pd.testing.assert_frame_equal(bunch.frame, expected, check_dtype=False)
    cached = sorted((home / "influences" / _influences.COMMIT[:12]).rglob("*.gz"))
    assert [p.name for p in cached] == sorted(
        f"{f}.gz"
        for f in _influences.load_manifest().query(
            "dataset == 'wikiqa' and model == 'phi7'"
        )["file"]
    )
    assert not list(home.rglob("*.part"))  # atomic writes leave no debris

    # second call: offline, served from the cache only
    def offline(url, timeout):
        raise urllib.error.URLError("network is unreachable")

    monkeypatch.setattr(_influences, "_open_url", offline)
    again = fetch_influences(
        dataset="wikiqa", model="phi7", data_home=home, download_if_missing=False
    )
    pd.testing.assert_frame_equal(again.frame, bunch.frame)


def test_fetch_influences_data_home_from_environment(
    wikiqa_phi7, tmp_path, monkeypatch
):
    upstream = write_upstream(
        wikiqa_phi7[wikiqa_phi7.prompt_style == "verb"], tmp_path / "mirror"
    )
    monkeypatch.setenv("SKLEARN_BETACAL_DATA", str(tmp_path / "env_home"))
    assert get_data_home() == tmp_path / "env_home"
    fetch_influences(
        dataset="wikiqa",
        model="phi7",
        prompt_style="verb",
        base_url=upstream.as_uri(),
    )
    assert len(list((tmp_path / "env_home").rglob("*.csv.gz"))) == 2


def test_fetch_influences_local_directory(wikiqa_phi7, tmp_path, no_network):
    write_upstream(wikiqa_phi7, tmp_path / "checkout")
    bunch = fetch_influences(
        dataset="wikiqa",
        model="phi7",
        split="test",
        local_path=tmp_path / "checkout",
        data_home=tmp_path / "home",
    )
    assert len(bunch.frame) == 243 * 4


def _tampered(part):
    part.loc[part.index[7], "verbal_confidence"] = 0.123  # one value changed
    return part


@pytest.mark.parametrize(
    "damage, match",
    [
        (_tampered, "does not match the pinned content checksum"),
        (lambda part: part.iloc[:-1], "has 242 rows, expected 243"),
    ],
    ids=["tampered", "truncated"],
)
def test_fetch_influences_rejects_a_damaged_download(one_file, tmp_path, damage, match):
    upstream = write_upstream(damage(one_file), tmp_path / "mirror")
    home = tmp_path / "home"
    with pytest.raises(OSError, match=match):
        fetch_influences(**ONE_FILE, data_home=home, base_url=upstream.as_uri())
    assert not [p for p in home.rglob("*") if p.is_file()]  # nothing cached


def test_fetch_influences_corrupt_cache(one_file, tmp_path):
    upstream = write_upstream(one_file, tmp_path / "mirror")
    kwargs = {**ONE_FILE, "data_home": tmp_path / "home"}
    first = fetch_influences(base_url=upstream.as_uri(), **kwargs).frame
    (cached,) = (tmp_path / "home").rglob("*.csv.gz")
    first_bytes = cached.read_bytes()
    cached.write_bytes(first_bytes[:1000])  # truncated gzip
    with pytest.raises(OSError, match="cached file .* is corrupt"):
        fetch_influences(download_if_missing=False, **kwargs)
    data = bytearray(first_bytes)
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)  # damaged deflate data
    cached.write_bytes(bytes(data))
    with pytest.raises(OSError, match="cached file .* is corrupt"):
        fetch_influences(download_if_missing=False, **kwargs)
    # allowed to download: the cache is repaired
    again = fetch_influences(base_url=upstream.as_uri(), **kwargs).frame
    pd.testing.assert_frame_equal(again, first)
    # a well-formed gzip with edited content fails the content checksum
    rows = _influences._read_cache(cached)
    rows.loc[3, "question"] = "edited"
    cached.write_bytes(_influences._cache_bytes(rows))
    with pytest.raises(OSError, match="cached file .* is corrupt.*checksum"):
        fetch_influences(download_if_missing=False, **kwargs)


def test_fetch_influences_offline_and_nothing_cached(tmp_path, monkeypatch):
    def offline(url, timeout):
        raise urllib.error.URLError(OSError(101, "Network is unreachable"))

    monkeypatch.setattr(_influences, "_open_url", offline)
    with pytest.raises(OSError, match="appear to be offline.*local_path="):
        fetch_influences(dataset="triviaqa", data_home=tmp_path)
    assert not list(tmp_path.rglob("*.part"))


def test_fetch_influences_download_if_missing_false_empty_cache(tmp_path, no_network):
    with pytest.raises(OSError, match="not in the cache folder.*download_if_missing"):
        fetch_influences(dataset="sciq", download_if_missing=False, data_home=tmp_path)


def test_fetch_influences_mirror_missing_file(tmp_path):
    (tmp_path / "mirror").mkdir()
    with pytest.raises(OSError, match="the local copy lacks this file"):
        fetch_influences(
            dataset="nq",
            model="gemma2",
            split="test",
            prompt_style="verb",
            data_home=tmp_path / "home",
            base_url=(tmp_path / "mirror").as_uri(),
        )


def test_fetch_influences_connection_drops_mid_file(tmp_path, monkeypatch):
    class Dropping:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self, n):
            raise ConnectionResetError(104, "Connection reset by peer")

    monkeypatch.setattr(_influences, "_open_url", lambda url, timeout: Dropping())
    with pytest.raises(OSError, match="failed part-way.*reset"):
        fetch_influences(dataset="nq", model="gemma2", data_home=tmp_path)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_fetch_influences_local_copy_needs_pyarrow(shared_parquet, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"sklearn-betacal\[parquet\]"):
        fetch_influences(local_path=shared_parquet, dataset="wikiqa")


def test_fetch_influences_http_error(tmp_path, monkeypatch):
    def not_found(url, timeout):
        raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)

    monkeypatch.setattr(_influences, "_open_url", not_found)
    with pytest.raises(OSError, match="HTTP 404"):
        fetch_influences(dataset="nq", model="gemma2", data_home=tmp_path)


def test_fetch_influences_default_url_is_pinned_commit(tmp_path, monkeypatch):
    seen = []

    def record(url, timeout):
        seen.append(url)
        raise urllib.error.URLError("offline")

    monkeypatch.setattr(_influences, "_open_url", record)
    with pytest.raises(OSError):
        fetch_influences(
            dataset="triviaqa",
            model="phi4",
            prompt_style="verb",
            split="test",
            data_home=tmp_path,
        )
    assert seen == [
        "https://raw.githubusercontent.com/Yuuxii/Influences-on-LLM-Calibration/"
        f"{_influences.COMMIT}/model_responses_all/verb/triviaqa_phi4_verb_test.csv"
    ]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"dataset": "squad"}, r"dataset='squad' is not valid.*'triviaqa'"),
        ({"model": ["gemma2", "gpt4"]}, r"model=.* is not valid"),
        ({"prompt_style": "zero"}, r"prompt_style='zero' is not valid"),
        ({"split": "val"}, r"split='val' is not valid"),
        ({"split": []}, r"split=\[\] is not valid"),
        (
            {"dataset": "nq", "prompt_style": "cot", "split": "train"},
            "no supported file matches",
        ),
    ],
)
def test_fetch_influences_bad_filters(kwargs, match, tmp_path, no_network):
    with pytest.raises(ValueError, match=match):
        fetch_influences(data_home=tmp_path, **kwargs)


def test_fetch_influences_manifest_pinned():
    manifest = _influences.load_manifest()
    assert len(manifest) == 247
    assert int(manifest["n_rows"].sum()) == 273744
    assert set(manifest.columns) == {
        "dataset",
        "model",
        "prompt_style",
        "split",
        "file",
        "n_rows",
        "content_sha256",
    }
    assert manifest["content_sha256"].str.fullmatch("[0-9a-f]{64}").all()


# --------------------------------------------------------------------------
# content digest
# --------------------------------------------------------------------------


def _rows(texts, values):
    n = len(texts)
    frame = pd.DataFrame({c: [np.nan] * n for c in _influences.ROW_COLUMNS})
    for column in _influences.TEXT_COLUMNS:
        frame[column] = pd.Series(texts, dtype=object)
    frame["seq_prob"] = values
    return frame


@settings(max_examples=25, deadline=None)
@given(
    texts=st.lists(st.text(max_size=8) | st.none(), min_size=1, max_size=6),
    data=st.data(),
)
def test_content_digest_ignores_last_bits_but_not_values(texts, data):
    values = data.draw(
        st.lists(
            st.floats(0.001, 1000, allow_nan=False),
            min_size=len(texts),
            max_size=len(texts),
        )
    )
    base = _rows(texts, values)
    digest = _influences.content_digest(base)
    # a float parser that is off by one ulp must not change the digest
    # (unless the value sits exactly on a float32 rounding boundary: measure 0)
    nudged = _rows(texts, np.nextafter(np.asarray(values), np.inf))
    same32 = np.array_equal(
        np.asarray(values, dtype=np.float32),
        np.nextafter(np.asarray(values), np.inf).astype(np.float32),
    )
    assert (_influences.content_digest(nudged) == digest) == same32
    changed = _rows(texts, np.asarray(values) * 1.01)
    assert _influences.content_digest(changed) != digest
    edited = _rows(["x" + (t or "") for t in texts], values)
    assert _influences.content_digest(edited) != digest


def test_content_digest_distinguishes_missing_from_empty_and_order():
    a = _rows(["a", None], [0.5, 0.25])
    b = _rows(["a", ""], [0.5, 0.25])
    c = _rows([None, "a"], [0.25, 0.5])
    digests = {_influences.content_digest(f) for f in (a, b, c)}
    assert len(digests) == 3


def test_fetch_influences_cache_is_byte_reproducible(one_file, tmp_path):
    upstream = write_upstream(one_file, tmp_path / "mirror")
    blobs = []
    for home in ("h1", "h2"):
        fetch_influences(
            **ONE_FILE, data_home=tmp_path / home, base_url=upstream.as_uri()
        )
        (cached,) = (tmp_path / home).rglob("*.csv.gz")
        blobs.append(cached.read_bytes())
    assert blobs[0] == blobs[1]
    shutil.rmtree(tmp_path / "mirror")


def test_load_triviaqa_confidence_without_pyarrow():
    """pyarrow is an optional extra: the bundled data must load without it."""
    code = (
        "import sys\n"
        "class NoPyarrow:  # behave as if pyarrow were not installed\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pyarrow':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, NoPyarrow())\n"
        "from sklearn_betacal.datasets import load_triviaqa_confidence\n"
        "from sklearn_betacal.cli import main\n"
        "frame = load_triviaqa_confidence().frame\n"
        "assert frame.shape == (11666, 8), frame.shape\n"
        "assert 'pyarrow' not in str(frame['question'].dtype)\n"
        "assert main(['report', '--format', 'json']) == 0\n"
        "assert 'pyarrow' not in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert '"n_rows": 11666' in result.stdout


def test_datasets_docs_examples_run():
    """The ``>>>`` examples of docs/datasets.rst are doctests."""
    import doctest

    page = ROOT / "docs" / "datasets.rst"
    if not page.exists():
        pytest.skip("docs/datasets.rst not present")
    result = doctest.testfile(
        str(page),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    assert result.failed == 0 and result.attempted >= 8
