# SPDX-License-Identifier: MIT
"""``betacal fit`` and ``betacal apply``: model files, streaming, bad input."""

import gzip
import os
import pickle

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone

from sklearn_betacal import io as model_io
from sklearn_betacal.cli import main
from sklearn_betacal.datasets import load_triviaqa_confidence

pytest.importorskip("skops")


@pytest.fixture(scope="module")
def frame():
    f = load_triviaqa_confidence().frame
    return f[["verbal_confidence", "model", "question", "correct_judge"]].copy()


@pytest.fixture(scope="module")
def fitted(frame, tmp_path_factory):
    """A BB model on the bundled data, fitted from a ';'-separated CSV."""
    d = tmp_path_factory.mktemp("fitted")
    src = d / "train.csv"
    frame.to_csv(src, sep=";", index=False)
    model = d / "bb.skops"
    status = main(
        ["fit", str(src), "--confidence", "verbal_confidence", "--label",
         "correct_judge", "--group", "model", "--method", "bb",
         "--points-per-bin", "40", "--output", str(model)]
    )  # fmt: skip
    assert status == 0
    return src, model


def _listing(folder):
    return sorted(p.name for p in folder.iterdir())


def _fail(capsys, argv, match):
    status = main(argv)
    err = capsys.readouterr().err.strip()
    assert status == 2, err
    assert err.startswith("betacal: error:") and "\n" not in err, err
    assert match in err, err
    return err


def test_fit_writes_a_model_that_skops_loads_with_the_trusted_list(fitted, frame):
    import skops.io

    _, model = fitted
    est = skops.io.load(model, trusted=model_io.trusted_types())
    header = model_io.read_header(model)["metadata"]
    assert header["method"] == "bb" and header["features"] == ["model"]
    assert list(est.feature_names_in_) == ["verbal_confidence", "model"]
    assert est.points_per_bin_ == 40
    assert est.n_cells_fitted_ == frame["model"].nunique()


def test_fit_prints_cells_fallbacks_and_bounds(frame, tmp_path, capsys):
    src = tmp_path / "train.parquet"
    pytest.importorskip("pyarrow")
    frame.to_parquet(src)
    status = main(
        ["fit", str(src), "--confidence", "verbal_confidence", "--label",
         "correct_judge", "--group", "model", "--method", "bb",
         "--points-per-bin", "1000", "--output", str(tmp_path / "m.skops")]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0
    sizes = frame["model"].value_counts()
    n_own = int((sizes >= 1000).sum())  # Thm 3.1's condition n_s >= b
    assert 0 < n_own < len(sizes)
    assert (
        f"cells: {n_own} with their own calibrator, {len(sizes) - n_own} with " in out
    )
    assert "| cell | name | rows | served by | bins | epsilon |" in out
    est = model_io.load(tmp_path / "m.skops")
    small = []
    for s, e in zip(est.cells_, est.epsilon_, strict=True):
        group = est.partitioner_.groups_[s]
        if sizes[group] >= 1000:
            bins = est.cell_tables_[s]["bin_values"].shape[0]
            assert f"| {s} | model={group} | {sizes[group]} | own calibrator | " in out
            assert f"| own calibrator | {bins} | {e:.4f} |" in out
        else:
            small.append((s, sizes[group]))
    # the cells the root serves: one line, with the root's bins
    cells = ", ".join(str(s) for s, _ in small[:8]) + ", ..." * (len(small) > 8)
    rows = sum(n for _, n in small)
    bins = est.root_["bin_values"].shape[0]
    line = f"| {len(small)} cells: {cells} | (all rows) | {rows} | root | {bins} | "
    assert line in out
    assert f"rows: {len(frame)} used, 0 left out" in out


def test_apply_adds_the_calibrated_column_in_any_chunking(
    fitted, frame, tmp_path, capsys
):
    src, model = fitted
    est = model_io.load(model)
    X = frame[["verbal_confidence", "model"]]
    expected = est.predict_proba(X)[:, 1]
    one = tmp_path / "one.csv"
    many = tmp_path / "many.csv"
    assert main(["apply", str(model), str(src), str(one), "--cells"]) == 0
    assert (
        main(
            ["apply", str(model), str(src), str(many), "--cells", "--chunk-size", "997"]
        )
        == 0
    )
    assert "11666 rows written" in capsys.readouterr().err
    assert one.read_bytes() == many.read_bytes()
    result = pd.read_csv(one)
    assert list(result.columns) == [*frame.columns, "calibrated_confidence", "cell"]
    assert_allclose(result["calibrated_confidence"], expected, rtol=1e-12)
    assert_array_equal(result["cell"], est.apply(X))
    assert _listing(tmp_path) == ["many.csv", "one.csv"]


@pytest.mark.parametrize(
    "suffix", [".parquet", ".csv.gz", ".csv.bz2", ".csv.xz", ".tsv"]
)
def test_apply_reads_and_writes_every_format(fitted, frame, tmp_path, suffix):
    pytest.importorskip("pyarrow")
    src, model = fitted
    pq_in = tmp_path / "in.parquet"
    frame.to_parquet(pq_in)
    out = tmp_path / f"out{suffix}"
    assert (
        main(["apply", str(model), str(pq_in), str(out), "--chunk-size", "4000"]) == 0
    )
    if suffix == ".parquet":
        result = pd.read_parquet(out)
    else:
        result = pd.read_csv(out, sep="\t" if suffix == ".tsv" else ",")
    expected = model_io.load(model).predict_proba(
        frame[["verbal_confidence", "model"]]
    )[:, 1]
    assert_allclose(result["calibrated_confidence"], expected, rtol=1e-12)
    assert len(result) == len(frame)


@pytest.mark.parametrize("suffix", [".parquet.gz", ".pq.bz2", ".parquet.zst"])
def test_compressed_parquet_names_are_refused_both_ways(
    fitted, frame, tmp_path, capsys, suffix
):
    # pandas neither writes nor reads a compressed Parquet file: OUT was
    # written plain under a .gz name, IN failed in pyarrow's words
    pytest.importorskip("pyarrow")
    src, model = fitted
    out = tmp_path / f"out{suffix}"
    _fail(
        capsys,
        ["apply", str(model), str(src), str(out), "--sep", ";"],
        "plain .parquet",
    )
    assert not out.exists()
    packed = tmp_path / "in.parquet.gz"
    packed.write_bytes(gzip.compress(frame.to_parquet()))
    before = _listing(tmp_path)
    _fail(
        capsys,
        ["apply", str(model), str(packed), str(tmp_path / "o.csv")],
        "decompress",
    )
    _fail(
        capsys,
        ["fit", str(packed), "--confidence", "verbal_confidence", "--label",
         "correct_judge", "--method", "umd", "--output", str(tmp_path / "m.skops")],
        "not compressed again",
    )  # fmt: skip
    assert _listing(tmp_path) == before


def test_apply_parquet_output_of_a_column_that_changes_type(tmp_path, capfd):
    # a passthrough column of numbers that turns to text in a later chunk:
    # Parquet's schema is the first chunk's; one line, exit 2, no output, and
    # no "Exception ignored" traceback from the abandoned writer at exit
    pytest.importorskip("pyarrow")
    import gc
    import sys

    n = 3000
    frame = pd.DataFrame(
        {
            "conf": np.linspace(0.05, 0.95, 2 * n),
            "y": np.arange(2 * n) % 2,
            "note": [str(i) for i in range(n)] + [f"text{i}" for i in range(n)],
        }
    )
    src = tmp_path / "in.csv"
    frame.to_csv(src, index=False)
    model = tmp_path / "u.skops"
    argv = ["fit", str(src), "--confidence", "conf", "--label", "y", "--method",
            "umd", "--output", str(model)]  # fmt: skip
    assert main(argv) == 0
    before = _listing(tmp_path)
    capfd.readouterr()
    ignored = []
    hook, sys.unraisablehook = sys.unraisablehook, ignored.append
    try:
        status = main(["apply", str(model), str(src), str(tmp_path / "o.parquet"),
                       "--chunk-size", "1000"])  # fmt: skip
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert not ignored, [str(u.exc_value) for u in ignored]
    err = capfd.readouterr().err
    assert status == 2
    assert err.startswith("betacal: error: a column's type changes between chunks")
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert _listing(tmp_path) == before
    # the same file in one chunk is written, its column as text
    out = tmp_path / "one.parquet"
    assert main(["apply", str(model), str(src), str(out)]) == 0
    assert pd.read_parquet(out)["note"].tolist() == frame["note"].tolist()


def test_percent_flag_equals_probabilities(frame, tmp_path):
    pct = frame.assign(verbal_confidence=frame["verbal_confidence"] * 100)
    src, src_pct = tmp_path / "p.csv", tmp_path / "pct.csv"
    frame.to_csv(src, index=False)
    pct.to_csv(src_pct, index=False)
    args = ["--confidence", "verbal_confidence", "--label", "correct_judge",
            "--method", "platt"]  # fmt: skip
    assert main(["fit", str(src), *args, "--output", str(tmp_path / "a.skops")]) == 0
    assert (
        main(
            [
                "fit",
                str(src_pct),
                *args,
                "--percent",
                "--output",
                str(tmp_path / "b.skops"),
            ]
        )
        == 0
    )
    a = model_io.load(tmp_path / "a.skops")
    b = model_io.load(tmp_path / "b.skops")
    # a percent model holds its reading: Pipeline(ConfidenceReader, Platt)
    assert b[0].confidence_format == "percent"
    assert_allclose(a.coef_, b[-1].coef_, rtol=1e-9)
    assert_allclose(
        b.predict_proba(pct[["verbal_confidence"]]),
        a.predict_proba(frame[["verbal_confidence"]]),
        rtol=1e-9,
    )
    assert main(["apply", str(tmp_path / "b.skops"), str(src_pct),
                 str(tmp_path / "out.csv")]) == 0  # fmt: skip
    out = pd.read_csv(tmp_path / "out.csv")
    expected = a.predict_proba(frame[["verbal_confidence"]])[:, 1]
    assert_allclose(out["calibrated_confidence"], expected, rtol=1e-9)


def test_verbalized_confidences_are_parsed_and_failures_counted(
    frame, tmp_path, capsys
):
    texts = [f"Guess: x\nProbability: {v}" for v in frame["verbal_confidence"]]
    texts[:7] = ["no idea"] * 7
    src = tmp_path / "verb.csv"
    frame.assign(verbal_confidence=texts).to_csv(src, index=False)
    model = tmp_path / "m.skops"
    status = main(
        ["fit", str(src), "--confidence", "verbal_confidence", "--label",
         "correct_judge", "--verbalized", "--method", "umd", "--output", str(model)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0
    assert f"rows: {len(frame) - 7} used, 7 left out (7 unparseable" in out
    assert main(["apply", str(model), str(src), str(tmp_path / "o.csv")]) == 0
    assert "7 row(s) without a usable confidence" in capsys.readouterr().err
    result = pd.read_csv(tmp_path / "o.csv")
    assert result["calibrated_confidence"].isna().sum() == 7
    assert result["calibrated_confidence"][7:].notna().all()


@pytest.mark.parametrize(
    "method,flags",
    [
        ("temperature", []),
        ("s-b", ["--points-per-bin", "100"]),
        ("hls", ["--group", "model"]),
        ("hs-bb", ["--group", "model"]),
        ("s-bb", ["--model-column", "model"]),
        ("bb", ["--text", "question", "--n-components", "4", "--max-depth", "2"]),
        ("bb", ["--text", "question", "--model-column", "model", "--max-depth", "1"]),
    ],
)
def test_every_method_fits_and_applies(frame, tmp_path, method, flags):
    src = tmp_path / "train.csv"
    frame.iloc[:4000].to_csv(src, index=False)
    model = tmp_path / "m.skops"
    argv = ["fit", str(src), "--confidence", "verbal_confidence", "--label",
            "correct_judge", "--method", method, *flags,
            "--output", str(model)]  # fmt: skip
    assert main(argv) == 0
    out = tmp_path / "o.csv"
    grouped = bool(flags) and flags[0] != "--points-per-bin"
    cells = ["--cells"] if grouped else []
    assert (
        main(["apply", str(model), str(src), str(out), "--chunk-size", "1500", *cells])
        == 0
    )
    result = pd.read_csv(out)
    p = result["calibrated_confidence"]
    assert p.between(0, 1).all() and len(p) == 4000
    est = model_io.load(model)
    X = result[list(est.feature_names_in_)]
    assert_allclose(p, est.predict_proba(X)[:, 1], rtol=1e-12)
    if grouped:
        assert_array_equal(result["cell"], est.apply(X))
    else:
        assert (
            main(["apply", str(model), str(src), str(out), "--force", "--cells"]) == 2
        )


def test_tune_chooses_points_per_bin_by_the_brier_score(frame, tmp_path, capsys):
    src = tmp_path / "train.csv"
    frame.to_csv(src, index=False)
    model = tmp_path / "m.skops"
    status = main(
        ["fit", str(src), "--confidence", "verbal_confidence", "--label",
         "correct_judge", "--group", "model", "--method", "bb", "--tune",
         "--output", str(model)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0
    what = "tuned points per bin by 5-fold cross-validated Brier score"
    assert what in out
    b = model_io.load(model).points_per_bin_
    assert f"together): b = {b};" in out


def test_tune_without_groups_minimises_the_cross_validated_brier_score(
    frame, tmp_path, capsys
):
    """The chosen b is the argmin of a by-hand 5-fold Brier score."""
    from sklearn.model_selection import KFold

    from sklearn_betacal import UMDBinner
    from sklearn_betacal.cli._fit import TUNE_GRID

    src = tmp_path / "train.csv"
    frame.to_csv(src, index=False)
    model = tmp_path / "m.skops"
    argv = ["fit", str(src), "--confidence", "verbal_confidence", "--label",
            "correct_judge", "--method", "umd", "--tune",
            "--output", str(model)]  # fmt: skip
    assert main(argv) == 0
    assert "by 5-fold cross-validated Brier score" in capsys.readouterr().out
    X = frame[["verbal_confidence"]]
    y = frame["correct_judge"].to_numpy()
    scores = {}
    for b in TUNE_GRID:
        errors = []
        for train, test in KFold(5, shuffle=True, random_state=0).split(X):
            est = UMDBinner(points_per_bin=b, random_state=0).fit(
                X.iloc[train], y[train]
            )
            p = est.predict_proba(X.iloc[test])[:, 1]
            errors.append(np.mean((p - y[test]) ** 2))
        scores[b] = np.mean(errors)
    assert model_io.load(model).points_per_bin == min(scores, key=scores.get)


# ------------------------------------------------------------------ bad input


def test_fit_bad_input_is_one_line_exit_2(frame, tmp_path, capsys):
    src = tmp_path / "train.csv"
    frame.to_csv(src, index=False)
    model = str(tmp_path / "m.skops")
    base = ["--label", "correct_judge", "--output", model]
    _fail(capsys, ["fit", str(tmp_path / "nope.csv"), "--confidence", "x",
                   "--method", "platt", *base], "does not exist")  # fmt: skip
    _fail(capsys, ["fit", str(src), "--confidence", "conf", "--method", "platt",
                   *base], "column 'conf' not found")  # fmt: skip
    _fail(capsys, ["fit", str(src), "--confidence", "verbal_confidence",
                   "--method", "bb", *base], "--group COL")  # fmt: skip
    _fail(capsys, ["fit", str(src), "--confidence", "verbal_confidence",
                   "--method", "platt", "--group", "model", *base],
          "uses the confidence only")  # fmt: skip
    _fail(capsys, ["fit", str(src), "--confidence", "verbal_confidence",
                   "--method", "nope", *base], "invalid choice")  # fmt: skip
    _fail(capsys, ["fit", str(src), "--confidence", "verbal_confidence",
                   "--method", "platt", "--percent", *base],
          "drop --percent")  # fmt: skip
    _fail(capsys, ["fit", str(src), "--confidence", "model",
                   "--method", "platt", *base], "pass --verbalized")  # fmt: skip
    _fail(capsys, ["fit", str(src), "--confidence", "verbal_confidence",
                   "--method", "platt", "--label", "model", "--output", model],
          "label column 'model'")  # fmt: skip
    _fail(capsys, ["fit", str(src), "--confidence", "verbal_confidence",
                   "--method", "platt", "--label", "correct_judge",
                   "--output", str(src)], "is the input file")  # fmt: skip
    _fail(capsys, ["fit", str(src), "--confidence", "verbal_confidence",
                   "--method", "platt", "--label", "correct_judge",
                   "--output", str(tmp_path / "no" / "m.skops")],
          "does not exist")  # fmt: skip
    assert _listing(tmp_path) == ["train.csv"]


def test_fit_checks_the_output_folder_before_reading(
    frame, tmp_path, capsys, monkeypatch
):
    """A folder that refuses files is reported before any work is done."""
    src = tmp_path / "train.csv"
    frame.to_csv(src, index=False)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    from sklearn_betacal.cli import _fit

    def no_read(*args, **kwargs):
        raise AssertionError("the input was read before the output was checked")

    monkeypatch.setattr(_fit, "read_table", no_read)
    if os.geteuid() == 0:  # root writes anywhere: simulate a read-only folder
        import tempfile

        def refuse(*args, **kwargs):
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    else:
        out_dir.chmod(0o500)
    try:
        _fail(capsys, ["fit", str(src), "--confidence", "verbal_confidence",
                       "--label", "correct_judge", "--method", "platt",
                       "--output", str(out_dir / "m.skops")],
              "cannot write to folder")  # fmt: skip
    finally:
        out_dir.chmod(0o700)
    assert _listing(out_dir) == []


def test_apply_bad_input_is_one_line_exit_2(fitted, frame, tmp_path, capsys):
    src, model = fitted
    out = tmp_path / "o.csv"
    _fail(capsys, ["apply", str(model), str(src), str(src)], "is the input file")
    _fail(capsys, ["apply", str(model), str(src), str(model)], "is the model file")
    _fail(capsys, ["apply", str(model), str(tmp_path / "x.csv"), str(out)],
          "does not exist")  # fmt: skip
    _fail(capsys, ["apply", str(tmp_path / "m.skops"), str(src), str(out)],
          "does not exist")  # fmt: skip
    fake = tmp_path / "fake.skops"
    fake.write_bytes(pickle.dumps({"a": 1}))
    _fail(capsys, ["apply", str(fake), str(src), str(out)], "Pickle files are never")
    _fail(capsys, ["apply", str(model), str(src), str(tmp_path / "o.zip")],
          "cannot tell the format")  # fmt: skip
    _fail(capsys, ["apply", str(model), str(src), str(tmp_path / "o.csv.zst")],
          "cannot write .zst output")  # fmt: skip
    no_group = tmp_path / "no_group.csv"
    frame.drop(columns="model").to_csv(no_group, index=False)
    _fail(capsys, ["apply", str(model), str(no_group), str(out)],
          "column 'model' not found")  # fmt: skip
    out.write_text("keep me")
    _fail(capsys, ["apply", str(model), str(src), str(out)], "pass --force")
    assert out.read_text() == "keep me"
    clash = tmp_path / "clash.csv"
    frame.assign(calibrated_confidence=1.0).to_csv(clash, index=False)
    _fail(capsys, ["apply", str(model), str(clash), str(tmp_path / "c.csv")],
          "--column NAME")  # fmt: skip
    plain = tmp_path / "plain.skops"
    model_io.dump(model_io.load(model), plain)
    _fail(capsys, ["apply", str(plain), str(src), str(tmp_path / "p.csv")],
          "not written by 'betacal fit'")  # fmt: skip
    # beyond a C long: Parquet's batch reader raised OverflowError
    _fail(capsys, ["apply", str(model), str(src), str(tmp_path / "h.csv"),
                   "--chunk-size", str(10**20)],
          "--chunk-size must lie in")  # fmt: skip
    # the two new columns under one name: the cells wrote over the confidences
    _fail(capsys, ["apply", str(model), str(src), str(tmp_path / "q.csv"),
                   "--cells", "--column", "cell"], "--column cell")  # fmt: skip
    assert sorted(_listing(tmp_path)) == sorted(
        ["o.csv", "fake.skops", "no_group.csv", "clash.csv", "plain.skops"]
    )


def test_apply_refuses_a_model_from_another_version(
    fitted, tmp_path, capsys, monkeypatch
):
    src, model = fitted
    monkeypatch.setattr(model_io, "__version__", "7.0.0")
    _fail(capsys, ["apply", str(model), str(src), str(tmp_path / "o.csv")],
          "Refit the model with this version")  # fmt: skip
    assert _listing(tmp_path) == []


def test_apply_failure_in_a_late_chunk_leaves_nothing(fitted, frame, tmp_path, capsys):
    src, model = fitted
    bad = frame.copy()
    bad.loc[len(bad) - 3, "verbal_confidence"] = 1.7
    bad_src = tmp_path / "bad.csv"
    bad.to_csv(bad_src, index=False)
    _fail(capsys, ["apply", str(model), str(bad_src), str(tmp_path / "o.csv"),
                   "--chunk-size", "1000"], "outside [0, 1]")  # fmt: skip
    assert _listing(tmp_path) == ["bad.csv"]


def test_apply_corrupt_and_ragged_inputs(fitted, frame, tmp_path, capsys):
    _, model = fitted
    corrupt = tmp_path / "c.csv.gz"
    data = gzip.compress(frame.to_csv(index=False).encode())
    corrupt.write_bytes(data[: len(data) // 2])
    _fail(capsys, ["apply", str(model), str(corrupt), str(tmp_path / "o.csv")],
          "could not read")  # fmt: skip
    ragged = tmp_path / "r.csv"
    ragged.write_text("verbal_confidence,model\n0.5,a\n0.6,b,extra,more\n")
    _fail(capsys, ["apply", str(model), str(ragged), str(tmp_path / "o.csv")],
          "line 3: 1 row(s) have more fields than the header")  # fmt: skip
    assert _listing(tmp_path) == ["c.csv.gz", "r.csv"]


def test_apply_empty_input_writes_header_only(fitted, tmp_path):
    _, model = fitted
    empty = tmp_path / "e.csv"
    empty.write_text("verbal_confidence,model\n")
    out = tmp_path / "o.csv"
    assert main(["apply", str(model), str(empty), str(out)]) == 0
    assert out.read_text().strip() == "verbal_confidence,model,calibrated_confidence"


def test_missing_decompressor_is_named(fitted, tmp_path, capsys):
    try:
        import zstandard  # noqa: F401

        pytest.skip("zstandard is installed: the decompressor is not missing")
    except ImportError:
        pass
    _, model = fitted
    src = tmp_path / "x.tsv.zst"
    src.write_bytes(b"\x28\xb5\x2f\xfd not really zstd")
    _fail(capsys, ["apply", str(model), str(src), str(tmp_path / "o.csv")],
          "zstandard")  # fmt: skip
    assert _listing(tmp_path) == ["x.tsv.zst"]


def test_epsilon_sets_points_per_bin_from_the_bound(frame, tmp_path, capsys):
    from sklearn_betacal.bounds import points_per_bin_for_epsilon

    src = tmp_path / "train.csv"
    frame.to_csv(src, index=False)
    model = tmp_path / "m.skops"
    argv = ["fit", str(src), "--confidence", "verbal_confidence", "--label",
            "correct_judge", "--group", "model", "--method", "bb",
            "--epsilon", "0.2", "--output", str(model)]  # fmt: skip
    assert main(argv) == 0
    b = points_per_bin_for_epsilon(0.2, len(frame), alpha=0.1)
    assert model_io.load(model).points_per_bin_ == b
    assert f"points per bin b = {b};" in capsys.readouterr().out
    _fail(capsys, [*argv[:-2], "--points-per-bin", "30", "--output", str(model),
                   "--force"], "drop --points-per-bin")  # fmt: skip
    _fail(capsys, [*argv[:-2], "--epsilon", "2", "--output", str(model)],
          "must lie in (0, 1)")  # fmt: skip


def test_group_values_that_look_numeric_in_a_late_chunk(tmp_path):
    """A chunk whose string groups all look like numbers is still read as text."""
    rng = np.random.default_rng(0)
    n = 3000
    group = np.where(np.arange(n) < 2000, rng.choice(["a", "b"], n), "7")
    h = rng.uniform(size=n)
    y = (rng.uniform(size=n) < h).astype(int)
    src = tmp_path / "t.csv"
    pd.DataFrame({"conf": h, "g": group, "y": y}).to_csv(src, index=False)
    model = tmp_path / "m.skops"
    argv = ["fit", str(src), "--confidence", "conf", "--label", "y",
            "--group", "g", "--method", "bb", "--output", str(model)]  # fmt: skip
    assert main(argv) == 0
    out = tmp_path / "o.csv"
    assert main(["apply", str(model), str(src), str(out), "--chunk-size", "1000",
                 "--cells"]) == 0  # fmt: skip
    est = model_io.load(model)
    frame = pd.read_csv(src, dtype={"g": str})
    result = pd.read_csv(out, dtype={"g": str})
    assert_array_equal(result["cell"], est.apply(frame[["conf", "g"]]))
    assert (result["cell"][2000:] >= 0).all()  # "7" is a group seen in fit


@pytest.mark.parametrize("chunk_size", ["100000", "700"])
def test_apply_warnings_are_one_line_each(fitted, frame, tmp_path, capsys, chunk_size):
    # rows of a group the model never saw: GroupColumnPartitioner warns, in
    # the writer thread too when the input comes in chunks; each warning is
    # one "betacal: warning:" line, never Python's two lines with source code
    import warnings

    src, model = fitted
    unseen = frame.copy()
    unseen.loc[unseen.index[:500], "model"] = "never-seen"
    path = tmp_path / "in.csv"
    unseen.to_csv(path, index=False)
    before = warnings.showwarning
    status = main(["apply", str(model), str(path), str(tmp_path / "o.csv"),
                   "--chunk-size", chunk_size])  # fmt: skip
    assert status == 0
    assert warnings.showwarning is before  # restored after the run
    err = capsys.readouterr().err.splitlines()
    said = [line for line in err if "never-seen" in line]
    assert said and all(line.startswith("betacal: warning: ") for line in said)
    assert not [line for line in err if "UserWarning" in line or ".py:" in line]


def test_fit_warnings_are_one_line_each(frame, tmp_path, capsys):
    # labels inverted: the confidences carry inverted signal, so temperature
    # scaling runs to its upper bound and warns (a multi-line message would
    # break a log line per warning)
    src = tmp_path / "train.csv"
    inverted = frame.iloc[:3000].copy()
    inverted["correct_judge"] = 1 - inverted["correct_judge"]
    inverted.to_csv(src, index=False)
    argv = ["fit", str(src), "--confidence", "verbal_confidence", "--label",
            "correct_judge", "--method", "temperature", "--output",
            str(tmp_path / "m.skops")]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err and all(line.startswith("betacal: warning: ") for line in err)
    assert any("upper bound" in line for line in err)


# ------------------------------------------- a set of Parquet files through dask


def _parquet_set(frame, folder, n_files=4):
    """``frame`` split into ``n_files`` Parquet files (uneven sizes)."""
    pytest.importorskip("pyarrow")
    folder.mkdir()
    cuts = np.linspace(0, len(frame), n_files + 1).astype(int)
    cuts[1] += 7  # files of different lengths
    for i in range(n_files):
        frame.iloc[cuts[i] : cuts[i + 1]].to_parquet(folder / f"answers-{i}.parquet")
    return folder


def test_apply_to_a_set_of_parquet_files_gives_the_numbers_of_numpy(
    fitted, frame, tmp_path, capsys
):
    pytest.importorskip("dask.dataframe")
    _, model = fitted
    src = _parquet_set(frame, tmp_path / "in")
    est = model_io.load(model)
    X = frame[["verbal_confidence", "model"]]
    expected = est.predict_proba(X)[:, 1]
    for pattern in (str(src / "*.parquet"), str(src)):
        out = tmp_path / "out"
        argv = ["apply", str(model), pattern, str(out), "--cells", "--force"]
        assert main(argv) == 0
        assert "11666 rows written" in capsys.readouterr().err
        parts = sorted(out.iterdir())
        assert [p.name for p in parts] == [f"part.{i}.parquet" for i in range(4)]
        result = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
        assert list(result.columns) == [*frame.columns, "calibrated_confidence", "cell"]
        # row by row, so the same numbers as calling the model on all rows
        assert_array_equal(result["calibrated_confidence"], expected)
        assert_array_equal(result["cell"], est.apply(X))
        assert_array_equal(result["question"], frame["question"])
    # the input is untouched and nothing else is left in the folders
    assert _listing(src) == [f"answers-{i}.parquet" for i in range(4)]
    assert _listing(tmp_path) == ["in", "out"]


def test_apply_to_a_parquet_set_refuses_to_touch_its_input(
    fitted, frame, tmp_path, capsys
):
    pytest.importorskip("dask.dataframe")
    _, model = fitted
    src = _parquet_set(frame, tmp_path / "in")
    before = {p.name: p.read_bytes() for p in src.iterdir()}
    pattern = str(src / "*.parquet")
    for out, match in [
        (src, "holds the input file"),
        (tmp_path, "holds the input file"),
        (src / "answers-0.parquet", "is a file"),
    ]:
        _fail(capsys, ["apply", str(model), pattern, str(out), "--force"], match)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "keep.txt").write_text("x")
    _fail(capsys, ["apply", str(model), pattern, str(tmp_path / "old")],
          "pass --force")  # fmt: skip
    _fail(capsys, ["apply", str(model), str(tmp_path / "none-*.parquet"),
                   str(tmp_path / "o")], "matches no file")  # fmt: skip
    assert {p.name: p.read_bytes() for p in src.iterdir()} == before
    assert (tmp_path / "old" / "keep.txt").read_text() == "x"
    assert _listing(tmp_path) == ["in", "old"]


def test_apply_to_a_parquet_set_failure_waits_for_every_writer(
    fitted, frame, tmp_path, capsys, monkeypatch
):
    # dask.compute raises at the first failing partition while other threads
    # go on calibrating and writing into the temporary folder -- after the
    # failure removed it, or while it does, which left a .out.*.tmp behind in
    # CI: every writer must write while its folder exists and have ended when
    # apply returns
    pytest.importorskip("dask.dataframe")
    import threading
    import time

    _, model = fitted
    bad = frame.copy()
    bad.loc[2, "verbal_confidence"] = 1.7  # in the first file
    src = _parquet_set(bad, tmp_path / "in")
    running, writes, lock = [0], [], threading.Lock()
    write = pd.DataFrame.to_parquet

    def slow_write(self, path, *args, **kwargs):
        with lock:
            running[0] += 1
            writes.append(os.path.isdir(os.path.dirname(path)))
        try:
            time.sleep(0.3)
            return write(self, path, *args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(pd.DataFrame, "to_parquet", slow_write)
    _fail(capsys, ["apply", str(model), str(src), str(tmp_path / "out")],
          "partition 0 of")  # fmt: skip
    assert running[0] == 0
    time.sleep(1.0)  # a stray thread would reach its write by now
    assert all(writes), writes
    assert _listing(tmp_path) == ["in"]


def test_apply_to_a_parquet_set_failure_leaves_nothing(fitted, frame, tmp_path, capsys):
    pytest.importorskip("dask.dataframe")
    _, model = fitted
    bad = frame.copy()
    bad.loc[len(bad) - 3, "verbal_confidence"] = 1.7  # in the last file
    src = _parquet_set(bad, tmp_path / "in")
    out = tmp_path / "out"
    out.mkdir()
    (out / "previous.parquet").write_bytes(b"earlier output")
    err = _fail(capsys, ["apply", str(model), str(src), str(out), "--force"],
                "outside [0, 1]")  # fmt: skip
    assert "partition 3 of" in err
    # the earlier output is kept as it was and no temporary folder remains
    assert _listing(out) == ["previous.parquet"]
    assert _listing(tmp_path) == ["in", "out"]
    (src / "notes.csv").write_text("a\n1\n")
    _fail(capsys, ["apply", str(model), str(src / "*"), str(tmp_path / "o2")],
          "not a Parquet file")  # fmt: skip
    _fail(capsys, ["apply", str(model), str(src), str(tmp_path / "o3"),
                   "--column", "model"], "already has a column 'model'")  # fmt: skip
    # a file without a column the others have, and a corrupt file
    src = _parquet_set(frame, tmp_path / "in2", n_files=2)
    frame.iloc[:5][["verbal_confidence"]].to_parquet(src / "answers-9.parquet")
    _fail(capsys, ["apply", str(model), str(src), str(tmp_path / "o4")],
          "a file of the set lacks a column")  # fmt: skip
    (src / "answers-9.parquet").write_bytes(b"PAR1 not really")
    _fail(capsys, ["apply", str(model), str(src), str(tmp_path / "o5")],
          "applying to")  # fmt: skip
    assert _listing(tmp_path) == ["in", "in2", "out"]


def test_apply_to_a_parquet_set_names_the_missing_dask_extra(
    fitted, frame, tmp_path, capsys, monkeypatch
):
    import builtins

    _, model = fitted
    src = _parquet_set(frame, tmp_path / "in", n_files=2)
    real_import = builtins.__import__

    def no_dask(name, *args, **kwargs):
        if name == "dask" or name.startswith("dask."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    _fail(capsys, ["apply", str(model), str(src), str(tmp_path / "out")],
          "pip install 'sklearn-betacal[dask]'")  # fmt: skip
    assert _listing(tmp_path) == ["in"]


def test_fit_crosses_groups_before_text_so_fallback_stays_in_the_group(frame, tmp_path):
    # a (group, text-leaf) cell too small for its own binning must fall back
    # to its group's rows, not to a text leaf pooled across groups
    src = tmp_path / "train.csv"
    frame.to_csv(src, index=False)
    model = tmp_path / "m.skops"
    argv = ["fit", str(src), "--confidence", "verbal_confidence", "--label",
            "correct_judge", "--group", "model", "--text", "question",
            "--max-depth", "3", "--method", "bb", "--points-per-bin", "40",
            "--output", str(model)]  # fmt: skip
    assert main(argv) == 0
    part = model_io.load(model).partitioner_
    names = [name for name, _, _ in part.partitioners_]
    group = names.index("group")
    first_region = [chain[0] for chain in part.cell_ancestors()]
    for region in np.unique(first_region):
        members = np.flatnonzero(np.asarray(first_region) == region)
        assert np.unique(part.cell_codes_[members, group]).size == 1


def test_fit_without_method_is_the_recommended_calibrator(
    frame, tmp_path, capsys, monkeypatch
):
    # no --method with --text: s-bb, feature-aware scaler, cv=3, learned tree
    # where every question occurs once; bb on the learned tree where a
    # question repeats (several models' answers: the bundled log) or with
    # groups only; --scaler keeps s-bb; nothing to group by: --method needed
    from sklearn_betacal import (
        BetaBinningCalibrator,
        CalibrationTreePartitioner,
        GroupColumnPartitioner,
        ScalingBetaBinningCalibrator,
    )

    pooled = frame.iloc[:3000]
    once = frame.drop_duplicates("question").iloc[:900]
    assert pooled.question.duplicated().any() and not once.question.duplicated().any()
    base = ["--confidence", "verbal_confidence", "--label", "correct_judge"]
    for name, rows, extra, cls, kind in [
        ("once", once, ["--text", "question"], ScalingBetaBinningCalibrator, "s-bb"),
        ("pooled", pooled, ["--text", "question"], BetaBinningCalibrator, "bb"),
        # distinct texts, but a --question-column that repeats: a question
        # answered more than once, as a repeated text says
        (
            "qcol",
            once.assign(qid=np.arange(len(once)) // 2),
            ["--text", "question", "--question-column", "qid"],
            BetaBinningCalibrator,
            "bb",
        ),
        ("groups", pooled, ["--group", "model"], BetaBinningCalibrator, "bb"),
        (
            "scaler",
            pooled,
            ["--text", "question", "--scaler", "features"],
            ScalingBetaBinningCalibrator,
            "s-bb",
        ),
    ]:
        src, model = tmp_path / f"{name}.csv", tmp_path / f"{name}.skops"
        rows.to_csv(src, index=False)
        assert main(["fit", str(src), *base, *extra, "--output", str(model)]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"# betacal fit: {kind}")
        assert "# the recommended calibrator where" in out
        est = model_io.load(model)
        assert type(est) is cls
        part = est.partitioner_
        if name == "groups":
            assert isinstance(part, GroupColumnPartitioner)
        else:
            assert isinstance(part[-1], CalibrationTreePartitioner)
        if cls is ScalingBetaBinningCalibrator:
            assert est.scaler == "features" and est.cv == 3
    # with the embeddings extra installed the summary says --embedding minilm
    # helps (the default word view was used); without it, nothing is said
    from sklearn_betacal.cli import _fit

    src = tmp_path / "once.csv"
    for installed in (True, False):
        monkeypatch.setattr(_fit, "_has_embeddings_extra", lambda i=installed: i)
        argv = ["fit", str(src), *base, "--text", "question", "--max-depth", "0"]
        assert main([*argv, "--output", str(tmp_path / "e.skops"), "--force"]) == 0
        out = capsys.readouterr().out
        assert ("--embedding minilm" in out) == installed
    status = main(["fit", str(src), *base, "--output", str(tmp_path / "x.skops")])
    assert status == 2
    assert "give --method NAME" in capsys.readouterr().err


def test_learned_partition_of_the_text(frame, tmp_path, capsys):
    # --partition learned: the text embedding split by CalibrationTreePartitioner
    # (a tree along the learned recalibration directions), grown on half of
    # the rows, the other half binned
    from sklearn_betacal import CalibrationTreePartitioner

    src = tmp_path / "train.csv"
    frame.iloc[:4000].to_csv(src, index=False)
    model = tmp_path / "m.skops"
    base = ["fit", str(src), "--confidence", "verbal_confidence", "--label",
            "correct_judge", "--method", "bb", "--text", "question",
            "--partition", "learned", "--points-per-bin", "40"]  # fmt: skip
    assert main([*base, "--output", str(model)]) == 0
    est = model_io.load(model)
    tree = est.partitioner_[-1]
    assert isinstance(tree, CalibrationTreePartitioner)
    assert tree.n_directions_ == 2 and tree.tree_["cell"].max() + 1 == tree.n_cells_
    assert tree.leaf_n_samples_.sum() == 2000  # grown on half of the 4,000 rows
    assert est.n_cells_fallback_ == 0
    out = tmp_path / "o.csv"
    assert main(["apply", str(model), str(src), str(out), "--cells"]) == 0
    result = pd.read_csv(out)
    X = result[list(est.feature_names_in_)]
    assert_allclose(result["calibrated_confidence"], est.predict_proba(X)[:, 1])
    assert_array_equal(result["cell"], est.apply(X))
    # --tune scores every b on the learned partition fitted on all rows
    tuned = tmp_path / "t.skops"
    capsys.readouterr()
    argv = [*base[:-2], "--tune", "--output", str(tuned)]
    assert main(argv) == 0
    what = "tuned points per bin by 5-fold cross-validated Brier score"
    assert what in capsys.readouterr().out
    # the learned tree needs text
    _fail(capsys, [*base[:8], "--partition", "learned", "--group", "model",
                   "--output", str(tmp_path / "x.skops")], "--text COL")  # fmt: skip
    # crossed with the answering model: cells within each model
    crossed = tmp_path / "c.skops"
    assert main([*base, "--model-column", "model", "--output", str(crossed)]) == 0
    est = model_io.load(crossed)
    parts = est.partitioner_.partitioners_
    assert [name for name, _, _ in parts] == ["model", "text"]
    assert isinstance(parts[1][1][-1], CalibrationTreePartitioner)
    assert parts[1][1][-1].leaf_n_samples_.sum() == 2000  # the honest half
    assert main(["apply", str(crossed), str(src), str(tmp_path / "c.csv")]) == 0


class _FullDisk:
    """A binary file that takes ``room`` bytes, then fails as a full disk."""

    def __init__(self, fh, room):
        self._fh, self._room = fh, room

    def write(self, data):
        data = bytes(data)
        if len(data) > self._room:
            self._fh.write(data[: self._room])
            self._room = 0
            raise OSError(28, "No space left on device")
        self._room -= len(data)
        return self._fh.write(data)

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()


def _disk_with_room(monkeypatch, room):
    real = os.fdopen

    def fdopen(fd, mode="r", *args, **kwargs):
        return _FullDisk(real(fd, mode, *args, **kwargs), room)

    monkeypatch.setattr(os, "fdopen", fdopen)


@pytest.mark.parametrize("out_name", ["out.csv", "out.parquet", "out.csv.gz"])
def test_apply_failing_mid_write_keeps_old_output_and_leaves_no_temp_file(
    fitted, frame, tmp_path, capsys, monkeypatch, out_name
):
    # the disk fills after the first chunks are written: OUT keeps its old
    # bytes (no partial file), no temporary file is left, IN is untouched
    if out_name.endswith(".parquet"):
        pytest.importorskip("pyarrow")
    _, model = fitted
    src = tmp_path / "in.csv"
    frame.to_csv(src, index=False)
    out = tmp_path / out_name
    out.write_bytes(b"old output")
    before = src.read_bytes()
    _disk_with_room(monkeypatch, 20_000)
    argv = ["apply", str(model), str(src), str(out), "--chunk-size", "500", "--force"]
    status = main(argv)
    err = capsys.readouterr().err
    assert status != 0 and "No space left on device" in err, err
    assert out.read_bytes() == b"old output"
    assert src.read_bytes() == before
    assert _listing(tmp_path) == sorted(["in.csv", out_name])
    monkeypatch.undo()
    assert main(argv) == 0 and len(out.read_bytes()) > 20_000  # room was short


def test_fit_failing_mid_write_keeps_old_model_and_leaves_no_temp_file(
    frame, tmp_path, capsys, monkeypatch
):
    src = tmp_path / "train.csv"
    frame.to_csv(src, index=False)
    model = tmp_path / "m.skops"
    model.write_bytes(b"old model")
    before = src.read_bytes()
    _disk_with_room(monkeypatch, 1_000)
    status = main(
        ["fit", str(src), "--confidence", "verbal_confidence", "--label",
         "correct_judge", "--method", "platt", "--output", str(model), "--force"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert status != 0 and "No space left on device" in err, err
    assert model.read_bytes() == b"old model"
    assert src.read_bytes() == before
    assert _listing(tmp_path) == ["m.skops", "train.csv"]


def _assert_file_is_the_python_fit(est, X, y, model, src, tmp_path):
    """The model file ``est`` (loaded from ``model``) predicts what the same
    calibrator fitted in Python on ``X, y`` predicts, and ``betacal apply``
    of ``src`` writes it."""
    again = clone(est).fit(X, y)
    assert_array_equal(est.predict_proba(X), again.predict_proba(X))
    result = tmp_path / "o.csv"
    assert main(["apply", str(model), str(src), str(result)]) == 0
    p = pd.read_csv(result)["calibrated_confidence"]
    assert_allclose(p, est.predict_proba(X)[:, 1], rtol=1e-12)


def test_cv_cross_fits_the_scaler_and_reports_every_fold(frame, tmp_path, capsys):
    src = tmp_path / "train.csv"
    frame.iloc[:3000].to_csv(src, index=False)
    model = tmp_path / "m.skops"
    argv = ["fit", str(src), "--confidence", "verbal_confidence", "--label",
            "correct_judge", "--model-column", "model", "--method", "s-bb",
            "--cv", "3", "--output", str(model)]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "cross-fitted over 3 folds (--cv 3)" in out
    assert all(f"fold {j} of 3:" in out for j in (1, 2, 3))
    est = model_io.load(model)
    assert est.cv == 3 and est.scaler == "pooled" and len(est.estimators_) == 3
    # every row binned exactly once over the folds, as the summary says
    binned = np.concatenate([m.binning_indices_ for m in est.estimators_])
    assert_array_equal(np.sort(binned), np.arange(3000))
    # the model file holds what the same calibrator fitted in Python holds
    X = frame.iloc[:3000][["verbal_confidence", "model"]]
    y = frame.iloc[:3000]["correct_judge"].astype(int)
    _assert_file_is_the_python_fit(est, X, y, model, src, tmp_path)


def test_cv_warns_of_the_folds_small_cells_on_one_line(frame, tmp_path, capsys):
    """--cv K: the K folds' small-cell warnings reach stderr as one line
    (the ranges over the folds), not as K near-copies."""
    src = tmp_path / "train.csv"
    frame.iloc[:3000].to_csv(src, index=False)
    argv = ["fit", str(src), "--confidence", "verbal_confidence", "--label",
            "correct_judge", "--model-column", "model", "--method", "s-bb",
            "--cv", "3", "--points-per-bin", "400", "--quiet",
            "--output", str(tmp_path / "m.skops")]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    small = [line for line in err if "fewer than b=" in line]
    assert len(small) == 1, err
    assert small[0].startswith(
        "betacal: warning: ScalingBetaBinningCalibrator(cv=3): in "
    ), small


@pytest.mark.parametrize(
    "flag,says",
    [
        (["--cv", "3"], "--cv cross-fits the scaler of hs-bb and s-bb"),
        (["--scaler", "features"], "--scaler chooses the scaler of hs-bb and s-bb"),
    ],
)
@pytest.mark.parametrize("method", ["umd", "bb", "hls"])
def test_scaler_flags_are_refused_where_there_is_no_scaler(
    frame, tmp_path, capsys, method, flag, says
):
    src = tmp_path / "train.csv"
    frame.iloc[:500].to_csv(src, index=False)
    groups = [] if method == "umd" else ["--model-column", "model"]
    argv = ["fit", str(src), "--confidence", "verbal_confidence", "--label",
            "correct_judge", *groups, "--method", method, *flag,
            "--output", str(tmp_path / "m.skops")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{says}, not of {method}" in err
    assert not (tmp_path / "m.skops").exists()


def test_scaler_features_boosts_on_the_text_embedding(frame, tmp_path, capsys):
    """--method s-bb --scaler features --text COL --partition learned --cv 3:
    the configuration of the MCGrad comparison, from the command line. Its
    boosting reads the text embedding (16 components) and the model column's
    cell id; the model file predicts what the same calibrator fitted in
    Python predicts, and apply writes it."""
    src = tmp_path / "train.csv"
    frame.iloc[:3000].to_csv(src, index=False)
    model = tmp_path / "m.skops"
    argv = ["fit", str(src), "--confidence", "verbal_confidence", "--label",
            "correct_judge", "--text", "question", "--model-column", "model",
            "--partition", "learned", "--method", "s-bb", "--scaler", "features",
            "--cv", "3", "--quiet", "--output", str(model)]  # fmt: skip
    assert main(argv) == 0
    est = model_io.load(model)
    assert est.scaler == "features" and est.cv == 3
    for member in est.estimators_:
        assert member.scaler_["view"] == "partition"
        assert member.scaler_["n_features"] == 1 + 16
    cols = list(est.feature_names_in_)
    X = frame.iloc[:3000][cols]
    y = frame.iloc[:3000]["correct_judge"].astype(int)
    _assert_file_is_the_python_fit(est, X, y, model, src, tmp_path)


def test_embedding_chooses_the_text_embedder_method(frame, tmp_path, capsys):
    from sklearn_betacal import _text
    from sklearn_betacal.cli import _fit

    assert _fit.TEXT_METHODS == _text.METHODS
    src = tmp_path / "train.csv"
    frame.iloc[:2000].to_csv(src, index=False)
    model = tmp_path / "m.skops"
    argv = ["fit", str(src), "--confidence", "verbal_confidence", "--label",
            "correct_judge", "--text", "question", "--embedding", "tfidf-char-svd",
            "--n-components", "4", "--max-depth", "2", "--method", "bb", "--quiet",
            "--output", str(model)]  # fmt: skip
    assert main(argv) == 0
    est = model_io.load(model)
    embed = est.partitioner_[0]
    assert embed.method == "tfidf-char-svd"
    assert embed.vectorizer_.analyzer == "char_wb"
    # without --text there is nothing to embed
    argv = ["fit", str(src), "--confidence", "verbal_confidence", "--label",
            "correct_judge", "--group", "model", "--embedding", "tfidf-char-svd",
            "--method", "bb", "--output", str(tmp_path / "n.skops")]  # fmt: skip
    assert main(argv) == 2
    assert "--embedding tfidf-char-svd embeds the --text columns" in (
        capsys.readouterr().err
    )


def test_apply_reads_trailing_delimiters_as_fit_does(fitted, frame, tmp_path, capsys):
    """Rows ending in the delimiter: pandas took the first column as the
    index and shifted every column left (the labels were calibrated as the
    confidences, exit 0); apply now reads them as fit and report do. A first
    data row with one field more than the header is refused."""
    _, model = fitted
    rows = frame[["verbal_confidence", "model"]].iloc[:50]
    clean = tmp_path / "clean.csv"
    rows.to_csv(clean, index=False)
    trailing = tmp_path / "trailing.csv"
    lines = clean.read_text().splitlines()
    trailing.write_text(
        "\n".join([lines[0], *(line + "," for line in lines[1:])]) + "\n"
    )
    for src, out in ((clean, "a.csv"), (trailing, "b.csv")):
        assert main(["apply", str(model), str(src), str(tmp_path / out)]) == 0
    a, b = pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")
    assert_array_equal(b["verbal_confidence"], rows["verbal_confidence"])
    assert_array_equal(b["calibrated_confidence"], a["calibrated_confidence"])
    capsys.readouterr()
    first = tmp_path / "first.csv"
    first.write_text("\n".join([lines[0], lines[1] + ",x", *lines[2:]]) + "\n")
    _fail(capsys, ["apply", str(model), str(first), str(tmp_path / "c.csv")],
          "more fields than")  # fmt: skip


def test_sep_is_one_character_or_a_tab_escape(fitted, frame, tmp_path, capsys):
    """--sep '::' or '' was a TypeError traceback from the CSV reader; the
    escape '\\t' typed as two characters means a tab."""
    _, model = fitted
    tsv = tmp_path / "in.csv"
    frame.iloc[:200].to_csv(tsv, sep="\t", index=False)
    out = tmp_path / "out.csv"
    assert main(["apply", str(model), str(tsv), str(out), "--sep", "\\t"]) == 0
    assert len(pd.read_csv(out)) == 200
    for cmd in (
        ["apply", str(model), str(tsv), str(tmp_path / "o.csv")],
        ["fit", str(tsv), "--confidence", "verbal_confidence", "--label",
         "correct_judge", "--method", "platt", "--output", str(tmp_path / "m.skops")],
    ):  # fmt: skip
        for sep in ("::", ""):
            assert main([*cmd, "--sep", sep]) == 2
            assert "--sep: must be one character" in capsys.readouterr().err


def test_apply_refuses_a_model_file_with_an_altered_header(fitted, tmp_path, capsys):
    """A header without its confidence column, a number where a list of
    names belongs, or an estimator without predict_proba: KeyError /
    TypeError / AttributeError tracebacks before; one line, exit 2 now."""
    from sklearn.preprocessing import StandardScaler

    src, model = fitted
    spec = model_io.read_header(model)["metadata"]
    est = model_io.load(model)
    cases = {
        "no_confidence": (est, {k: v for k, v in spec.items() if k != "confidence"}),
        "features": (est, {**spec, "features": 5}),
        "text": (est, {**spec, "text_columns": 5}),
        "format": (est, {**spec, "confidence_format": ["x"]}),
        "scaler": (StandardScaler().fit([[0.5]]), spec),
    }
    for name, (obj, metadata) in cases.items():
        path = tmp_path / f"{name}.skops"
        model_io.dump(obj, path, metadata=metadata)
        match = "predict_proba" if name == "scaler" else "damaged header"
        _fail(capsys, ["apply", str(path), str(src), str(tmp_path / f"{name}.csv")],
              match)  # fmt: skip
        assert not (tmp_path / f"{name}.csv").exists()


def test_unread_texts_are_reported_loudly_in_fit_report_and_apply(tmp_path, capsys):
    """Texts that state no confidence (or two, or a negated one) are counted
    by reason with examples, and the groups that lost rows are named, in
    fit, report and apply; a group that lost every row is named alone."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(240):
        model = "abc"[i % 3]
        p = rng.uniform(0.3, 1.0)
        text = {
            "a": f"Guess: x\nProbability: {p:.2f}",
            "b": f"J ({round(p * 100)}% sure)" if i % 2 else "I do not know",
            "c": "90% sure or 80% sure" if i % 2 else "not 90% sure",
        }[model]
        rows.append((model, text, int(rng.uniform() < p)))
    log = tmp_path / "log.csv"
    pd.DataFrame(rows, columns=["model", "response", "correct"]).to_csv(
        log, index=False
    )
    model = tmp_path / "m.skops"
    flags = ["--confidence", "response", "--label", "correct", "--verbalized"]

    def warnings_of(argv):
        assert main([str(a) for a in argv]) == 0
        err = capsys.readouterr().err
        return [line for line in err.splitlines() if "warning" in line]

    for argv, where in [
        (["fit", log, *flags, "--method", "bb", "--group", "model", "--output", model],
         "the model"),
        (["report", log, *flags, "--group", "model"], "the report"),
        (["apply", model, log, tmp_path / "out.csv"], "the output"),
    ]:  # fmt: skip
        lines = "\n".join(warnings_of(argv))
        assert "120 of 240 confidence text(s) could not be read" in lines
        assert "40 state no confidence [none], e.g. 'I do not know'" in lines
        assert "[ambiguous], e.g. '90% sure or 80% sure'" in lines
        assert "[negated-or-bound], e.g. 'not 90% sure'" in lines
        assert "2 group(s) lost rows to unread texts: 'c' 80/80, 'b' 40/80" in lines
        assert "group 'c' of column 'model' lost all its 80 row(s)" in lines
        assert where in lines
    out = pd.read_csv(tmp_path / "out.csv")
    assert out["calibrated_confidence"].isna().sum() == 120


def test_scale_flag_reads_points_of_a_scale_into_the_model(tmp_path, capsys):
    texts = [f"Confidence: {k}" for k in range(1, 7)] * 10
    log = tmp_path / "six.csv"
    pd.DataFrame({"r": texts, "y": [0, 0, 1, 0, 1, 1] * 10}).to_csv(log, index=False)
    model = tmp_path / "m.skops"
    flags = ["--confidence", "r", "--label", "y", "--verbalized"]
    argv = ["fit", log, *flags, "--scale", "1,6", "--method", "platt"]
    assert main([*map(str, argv), "--output", str(model)]) == 0
    assert "0 unparseable" in capsys.readouterr().out
    reader = model_io.load(model).steps[0][1]
    assert reader.scale == (1.0, 6.0)
    assert main(["apply", str(model), str(log), str(tmp_path / "o.csv")]) == 0
    assert "could not be read" not in capsys.readouterr().err
    assert pd.read_csv(tmp_path / "o.csv")["calibrated_confidence"].notna().all()
    # without the scale the points 2-6 are unread (1 reads as a
    # probability of 1), and said so
    assert main(["report", str(log), *map(str, flags)]) == 0
    err = capsys.readouterr().err
    assert "50 of 60 confidence text(s) could not be read" in err
    assert "[needs-scale]" in err and "pass --scale" in err
    assert main(["report", str(log), *map(str, flags[:-1]), "--scale", "1,6"]) == 2
    assert "pass --verbalized too" in capsys.readouterr().err
