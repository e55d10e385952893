# SPDX-License-Identifier: MIT
"""Tests of the ``betacal`` command line (in-process and one real subprocess)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import log_loss, roc_auc_score

from sklearn_betacal import cli
from sklearn_betacal.cli import main
from sklearn_betacal.datasets import load_triviaqa_confidence
from sklearn_betacal.metrics import (
    area_under_accuracy_confidence,
    beta_calibration_error,
    brier_decomposition,
    expected_calibration_error,
    maximum_calibration_error,
)


@pytest.fixture(scope="module")
def trivia():
    return load_triviaqa_confidence().frame


@pytest.fixture
def csv_file(tmp_path, trivia):
    """A small study-like CSV: confidence, label and group columns."""
    frame = trivia.iloc[::7][["verbal_confidence", "correct_judge", "model"]]
    frame = frame.rename(
        columns={"verbal_confidence": "conf", "correct_judge": "ok", "model": "llm"}
    )
    path = tmp_path / "answers.csv"
    frame.to_csv(path, index=False)
    return path, frame


def run(argv, capsys):
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def assert_usage_error(status, out, err, *fragments):
    assert status == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("betacal: error: ")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


# --------------------------------------------------------------------------
# successful runs
# --------------------------------------------------------------------------


def test_report_bundled_default(capsys, trivia):
    status, out, err = run(["report"], capsys)
    assert status == 0 and err == ""
    y, p = trivia["correct_judge"], trivia["verbal_confidence"]
    ece = expected_calibration_error(y, p, n_bins=10)
    assert f"| ECE (expected calibration error) | {ece:.4f} |" in out
    assert "| 9 | [0.900, 1.000] | 8103 |" in out
    assert "rows: 11666" in out
    assert "beta-CE" not in out  # no group column given


def test_report_json_matches_metric_functions(csv_file, tmp_path, capsys):
    path, frame = csv_file
    out_path = tmp_path / "report.json"
    argv = [
        "report",
        str(path),
        "--confidence",
        "conf",
        "--label",
        "ok",
        "--group",
        "llm",
        "--n-bins",
        "8",
        "--strategy",
        "quantile",
        "--output",
        str(out_path),
    ]
    status, out, err = run(argv, capsys)
    assert status == 0
    assert err.strip() == f"betacal: wrote {out_path}"
    report = json.loads(out_path.read_text())
    assert json.loads(out) == report  # --format inferred from the suffix
    y, p, g = frame["ok"].to_numpy(), frame["conf"].to_numpy(), frame["llm"]
    binning = {"n_bins": 8, "strategy": "quantile"}
    m = report["metrics"]
    brier = brier_decomposition(y, p, **binning)
    expected = {
        "ece": expected_calibration_error(y, p, **binning),
        "mce": maximum_calibration_error(y, p, **binning),
        "brier": brier.brier,
        "brier_calibration": brier.calibration,
        "brier_refinement": brier.refinement,
        "nll": log_loss(y, p, labels=[0, 1]),
        "auc": roc_auc_score(y, p),
        "auac": area_under_accuracy_confidence(y, p),
        "beta_ce": beta_calibration_error(y, p, cells=g, **binning),
    }
    for key, value in expected.items():
        np.testing.assert_allclose(m[key], value, rtol=1e-12, atol=0, err_msg=key)
    assert m["n_groups"] == 12
    assert report["n_rows"] == len(frame)
    assert len(report["reliability_table"]) == 8
    assert sum(r["count"] for r in report["reliability_table"]) == len(frame)
    assert report["input"] == {
        "source": str(path),
        "confidence": "conf",
        "label": "ok",
        "group": "llm",
        "confidence_format": "number",
        "n_dropped": 0,
        "n_unparsed": 0,
        "n_empty": 0,
    }


def test_report_output_name_must_fit_the_report(tmp_path, capsys):
    # the report is plain text: a compressed or table name was written as
    # Markdown without a word, and so was a .json name under --format markdown
    for name, argv, said in [
        ("r.json.gz", [], "neither compressed nor a table"),
        ("r.md.bz2", [], "neither compressed nor a table"),
        ("r.parquet", [], "neither compressed nor a table"),
        ("r.json", ["--format", "markdown"], "pass --format json"),
        ("r.md", ["--format", "json"], "pass --format markdown"),
    ]:
        status, _, err = run(["report", "-o", str(tmp_path / name), *argv], capsys)
        assert status == 2 and said in err, err
    assert list(tmp_path.iterdir()) == []
    # the name says the format when --format does not
    for name, first in [
        ("r.json", "{"),
        ("r.md", "# Calibration report"),
        ("r.txt", "#"),
    ]:
        status, _, _ = run(["report", "-o", str(tmp_path / name)], capsys)
        assert status == 0
        assert (tmp_path / name).read_text().startswith(first)


def test_report_bundled_with_group(capsys, trivia):
    status, out, _ = run(["report", "--group", "model", "--format", "json"], capsys)
    assert status == 0
    report = json.loads(out)
    expected = beta_calibration_error(
        trivia["correct_judge"], trivia["verbal_confidence"], cells=trivia["model"]
    )
    np.testing.assert_allclose(report["metrics"]["beta_ce"], expected, rtol=1e-12)


def test_report_parquet_file(tmp_path, csv_file, capsys):
    pytest.importorskip("pyarrow")
    _, frame = csv_file
    path = tmp_path / "answers.parquet"
    frame.to_parquet(path)
    status, out, _ = run(
        ["report", str(path), "-c", "conf", "-l", "ok", "--format", "json"], capsys
    )
    assert status == 0
    assert json.loads(out)["n_rows"] == len(frame)


def test_report_compressed_tsv_and_bool_labels(tmp_path, capsys):
    frame = pd.DataFrame({"p": [0.9, 0.2, 0.7, 0.4], "y": [True, False, False, True]})
    path = tmp_path / "small.tsv.gz"
    frame.to_csv(path, sep="\t", index=False)
    status, out, _ = run(["report", str(path), "-c", "p", "-l", "y"], capsys)
    assert status == 0
    assert "accuracy: 0.5000; mean confidence: 0.5500" in out


def test_report_dropna(tmp_path, capsys):
    frame = pd.DataFrame({"p": [0.9, np.nan, 0.7, 0.4], "y": [1, 0, 0, 1]})
    path = tmp_path / "gaps.csv"
    frame.to_csv(path, index=False)
    status, out, _ = run(
        ["report", str(path), "-c", "p", "-l", "y", "--dropna"], capsys
    )
    assert status == 0
    assert "rows: 3 (1 with missing values dropped)" in out


def test_report_single_class_reports_auc_as_na(tmp_path, capsys):
    path = tmp_path / "all_right.csv"
    pd.DataFrame({"p": [0.9, 0.8], "y": [1, 1]}).to_csv(path, index=False)
    status, out, _ = run(["report", str(path), "-c", "p", "-l", "y"], capsys)
    assert status == 0
    assert "| AUC | n/a |" in out


def test_help_and_version(capsys):
    status, out, _ = run(["--help"], capsys)
    assert status == 0 and "report" in out
    status, out, _ = run(["report", "--help"], capsys)
    assert status == 0 and "--confidence" in out
    status, out, _ = run(["--version"], capsys)
    assert status == 0 and out.strip()


def test_commands_registry_is_extensible(capsys, monkeypatch):
    """A new subcommand is one registrar appended to COMMANDS."""

    def add_hello(subparsers):
        parser = subparsers.add_parser("hello")
        parser.set_defaults(func=lambda args: print("hi") or 0)

    monkeypatch.setattr(cli, "COMMANDS", [*cli.COMMANDS, add_hello])
    status, out, _ = run(["hello"], capsys)
    assert status == 0 and out == "hi\n"


# --------------------------------------------------------------------------
# bad input: exit 2, one line, no traceback
# --------------------------------------------------------------------------


def _write(tmp_path, name, frame):
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    "frame, argv_tail, fragments",
    [
        (
            pd.DataFrame({"p": [0.5, 0.6], "y": [0, 1]}),
            ["-c", "p", "-l", "label"],
            ["column 'label' not found", "'p', 'y'"],
        ),
        (
            pd.DataFrame({"p": [0.5, 0.6], "y": [0, 2]}),
            ["-c", "p", "-l", "y"],
            ["label column 'y' holds the labels '0', '2'", "--pos-label"],
        ),
        (
            # more than two: --pos-label would not help, so it is not hinted
            pd.DataFrame({"p": [0.5, 0.6, 0.7], "y": [0, 1, 2]}),
            ["-c", "p", "-l", "y"],
            ["Only binary classification is supported", "3 labels"],
        ),
        (
            pd.DataFrame({"p": [0.5, 0.6, 0.7], "y": ["A", "B", "C"]}),
            ["-c", "p", "-l", "y"],
            ["Only binary classification is supported", "3 labels ('A', 'B', 'C')"],
        ),
        (
            pd.DataFrame({"p": [0.5, 0.6], "y": ["A", "B"]}),
            ["-c", "p", "-l", "y"],
            ["label column 'y'", "'A', 'B'", "--pos-label LABEL"],
        ),
        (
            pd.DataFrame({"p": [0.5, 1.6, -0.1], "y": [0, 1, 1]}),
            ["-c", "p", "-l", "y"],
            ["confidence column 'p'", "2 value(s) outside [0, 1]", "min -0.1"],
        ),
        (
            pd.DataFrame({"p": [0.5, np.nan], "y": [0, 1]}),
            ["-c", "p", "-l", "y"],
            ["confidence column 'p'", "1 NaN", "--dropna"],
        ),
        (
            pd.DataFrame({"p": [0.5, 0.2], "y": [0, np.nan]}),
            ["-c", "p", "-l", "y"],
            ["label column 'y'", "1 missing value(s)", "--dropna"],
        ),
        # a missing text label, or any with --pos-label: a TypeError traceback
        # before (NaN sorted among strings)
        (
            pd.DataFrame({"p": [0.5, 0.6, 0.2], "y": ["yes", None, "no"]}),
            ["-c", "p", "-l", "y"],
            ["label column 'y'", "1 missing value(s)", "--dropna"],
        ),
        (
            pd.DataFrame({"p": [0.5, 0.6, 0.2], "y": [1, np.nan, 0]}),
            ["-c", "p", "-l", "y", "--pos-label", "1"],
            ["label column 'y'", "1 missing value(s)", "--dropna"],
        ),
        (
            pd.DataFrame({"p": ["high", "low"], "y": [0, 1]}),
            ["-c", "p", "-l", "y"],
            ["confidence column 'p'", "numeric"],
        ),
        # report has no model: its hint is its own flag, not a refit
        (
            pd.DataFrame({"p": ["85%", "20%"], "y": [1, 0]}),
            ["-c", "p", "-l", "y", "--percent"],
            ["non-numeric", "pass --verbalized"],
        ),
        (
            pd.DataFrame({"p": [0.5, 0.2], "y": [0, 1], "g": ["a", None]}),
            ["-c", "p", "-l", "y", "-g", "g"],
            ["group column 'g'", "1 missing"],
        ),
        (
            pd.DataFrame({"p": [], "y": []}),
            ["-c", "p", "-l", "y"],
            ["no rows"],
        ),
        (
            pd.DataFrame({"p": [0.5], "y": [1]}),
            ["-c", "p"],
            ["--confidence COL --label COL"],
        ),
        (
            pd.DataFrame({"p": [0.5], "y": [1]}),
            ["-c", "p", "-l", "y", "--n-bins", "0"],
            ["--n-bins must be a positive integer"],
        ),
        (
            pd.DataFrame({"p": [0.5], "y": [1]}),
            ["-c", "p", "-l", "y", "--n-bins", "ten"],
            ["invalid int value: 'ten'"],
        ),
        (
            pd.DataFrame({"p": [0.5], "y": [1]}),
            ["-c", "p", "-l", "y", "--strategy", "kmeans"],
            ["invalid choice: 'kmeans'"],
        ),
    ],
)
def test_report_bad_input_exits_2(tmp_path, capsys, frame, argv_tail, fragments):
    path = _write(tmp_path, "bad.csv", frame)
    status, out, err = run(["report", str(path), *argv_tail], capsys)
    assert_usage_error(status, out, err, *fragments)


def test_report_missing_file(tmp_path, capsys):
    missing = tmp_path / "nope.csv"
    status, out, err = run(["report", str(missing), "-c", "p", "-l", "y"], capsys)
    assert_usage_error(status, out, err, f"input file {missing} does not exist")


def test_report_unknown_format_and_unparsable_file(tmp_path, capsys):
    path = tmp_path / "data.xlsx"
    path.write_bytes(b"PK\x03\x04")
    status, out, err = run(["report", str(path), "-c", "p", "-l", "y"], capsys)
    assert_usage_error(status, out, err, "cannot tell the format", ".parquet")
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    status, out, err = run(["report", str(path), "-c", "p", "-l", "y"], capsys)
    assert_usage_error(status, out, err, "is empty", "csv file")
    path = tmp_path / "broken.csv.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + bytes(40))
    status, out, err = run(["report", str(path), "-c", "p", "-l", "y"], capsys)
    assert_usage_error(status, out, err, "could not read")
    path = tmp_path / "binary.csv"
    path.write_bytes(b"\xff\xfe\x00\x81garbage\x00")
    status, out, err = run(["report", str(path), "-c", "p", "-l", "y"], capsys)
    assert_usage_error(status, out, err, "could not read")


def test_report_corrupt_parquet(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    status, out, err = run(["report", str(path), "-c", "p", "-l", "y"], capsys)
    assert_usage_error(status, out, err, "could not read", "as parquet")


def test_report_parquet_without_pyarrow(tmp_path, capsys, monkeypatch):
    path = tmp_path / "answers.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    status, out, err = run(["report", str(path), "-c", "p", "-l", "y"], capsys)
    assert_usage_error(status, out, err, "pip install sklearn-betacal[parquet]")


def test_report_bundled_missing_column(capsys):
    status, out, err = run(["report", "--group", "topic"], capsys)
    assert_usage_error(status, out, err, "column 'topic' not found")


def test_report_bundled_nan_confidence_column(capsys):
    status, out, err = run(["report", "-c", "extracted_seq_prob"], capsys)
    assert_usage_error(status, out, err, "13 NaN", "--dropna")
    status, out, _ = run(["report", "-c", "extracted_seq_prob", "--dropna"], capsys)
    assert status == 0 and "rows: 11653 (13 with missing values dropped)" in out


def test_no_command_and_unknown_option(capsys):
    status, out, err = run([], capsys)
    assert_usage_error(status, out, err, "choose a command: demo, report")
    status, out, err = run(["report", "--bins", "3"], capsys)
    assert_usage_error(status, out, err, "unrecognized arguments: --bins")
    status, out, err = run(["frobnicate"], capsys)
    assert_usage_error(status, out, err, "invalid choice: 'frobnicate'")


# --------------------------------------------------------------------------
# --output
# --------------------------------------------------------------------------


def test_output_markdown_written(tmp_path, capsys):
    target = tmp_path / "report.md"
    status, out, _ = run(["report", "--output", str(target)], capsys)
    assert status == 0
    assert target.read_text() == out
    assert out.startswith("# Calibration report")
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temp left


def test_output_never_overwrites_input(csv_file, capsys):
    path, _ = csv_file
    before = path.read_bytes()
    for extra in ([], ["--force"]):
        argv = ["report", str(path), "-c", "conf", "-l", "ok", "-o", str(path)]
        status, out, err = run([*argv, *extra], capsys)
        assert_usage_error(status, out, err, "is the input file", "refusing")
    # the same file under another name (relative path, symlink) is caught too
    link = path.parent / "link.csv"
    link.symlink_to(path)
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        for out_name in ("answers.csv", "link.csv", "./sub/../answers.csv"):
            (path.parent / "sub").mkdir(exist_ok=True)
            status, out, err = run(
                [
                    "report",
                    "answers.csv",
                    "-c",
                    "conf",
                    "-l",
                    "ok",
                    "-o",
                    out_name,
                    "--force",
                ],
                capsys,
            )
            assert_usage_error(status, out, err, "is the input file")
    finally:
        os.chdir(cwd)
    assert path.read_bytes() == before


def test_output_existing_file_needs_force(tmp_path, capsys):
    target = tmp_path / "report.md"
    target.write_text("old")
    status, out, err = run(["report", "-o", str(target)], capsys)
    assert_usage_error(status, out, err, "exists; pass --force")
    assert target.read_text() == "old"
    status, out, _ = run(["report", "-o", str(target), "--force"], capsys)
    assert status == 0 and target.read_text() == out


def test_output_bad_location(tmp_path, capsys):
    status, out, err = run(["report", "-o", str(tmp_path / "no" / "r.md")], capsys)
    assert_usage_error(status, out, err, "does not exist")
    status, out, err = run(["report", "-o", str(tmp_path)], capsys)
    assert_usage_error(status, out, err, "is a directory")


def test_output_written_atomically(tmp_path, capsys, monkeypatch):
    target = tmp_path / "report.json"
    target.write_text("old report")
    real_replace = os.replace
    seen = []

    def checking_replace(src, dst):
        # at the moment of the swap the old file is still intact and the new
        # text is complete in a temp file of the same folder
        assert Path(dst) == target and target.read_text() == "old report"
        assert Path(src).parent == tmp_path
        json.loads(Path(src).read_text())
        seen.append(src)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", checking_replace)
    status, _, _ = run(["report", "-o", str(target), "--force"], capsys)
    assert status == 0 and len(seen) == 1
    assert json.loads(target.read_text())["n_rows"] == 11666

    def failing_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    target.write_text("old report")
    status, out, err = run(["report", "-o", str(target), "--force"], capsys)
    assert_usage_error(status, out, err, "could not write", "No space left")
    assert target.read_text() == "old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


# --------------------------------------------------------------------------
# the installed console script
# --------------------------------------------------------------------------


def test_console_script_subprocess(csv_file):
    script = shutil.which("betacal", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("betacal console script is not installed next to python")
    path, _ = csv_file
    bad = subprocess.run(
        [script, "report", str(path), "-c", "confidence", "-l", "ok"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert len(bad.stderr.splitlines()) == 1
    assert "column 'confidence' not found" in bad.stderr
    assert "Traceback" not in bad.stderr


# --------------------------------------------------------------------------
# report --plot and the per-group table
# --------------------------------------------------------------------------


def test_report_group_table_matches_cell_table_and_warns_small(csv_file, capsys):
    from sklearn_betacal.bounds import points_per_bin_for_epsilon
    from sklearn_betacal.metrics import cell_calibration_table

    path, frame = csv_file
    argv = ["report", str(path), "-c", "conf", "-l", "ok", "-g", "llm"]
    status, out, err = run([*argv, "--format", "json"], capsys)
    assert status == 0
    report = json.loads(out)
    minimum = points_per_bin_for_epsilon(0.1, len(frame), alpha=0.1)
    assert report["min_group_count"] == minimum
    table = cell_calibration_table(
        frame.ok.to_numpy(), frame.conf.to_numpy(), cells=frame.llm, n_resamples=0
    )
    rows = {row["group"]: row for row in report["groups"]}
    assert set(rows) == set(table.index)
    for group, expected in table.iterrows():
        row = rows[group]
        assert row["count"] == expected["count"]
        assert row["accuracy"] == pytest.approx(expected["accuracy"])
        assert row["mean_confidence"] == pytest.approx(expected["mean_confidence"])
        assert row["calibration_error"] == pytest.approx(expected["calibration_error"])
        assert row["too_small"] == (expected["count"] < minimum)
    errors = [row["calibration_error"] for row in report["groups"]]
    assert errors == sorted(errors, reverse=True)

    status, out, err = run(argv, capsys)
    assert "## Groups (worst calibration error first)" in out
    n_small = sum(row["too_small"] for row in report["groups"])
    assert n_small > 0  # ~140 rows per model in this file
    assert f"Small: {n_small} group(s) have fewer than {minimum} rows" in out
    assert out.count(" (small)") == n_small
    # significance is shown with the group's size and p-value
    for group in report["significant_groups"][:10]:
        row = rows[group]
        assert f"{group} (n = {row['count']}, p = " in out
    # --min-count sets the one size: the table's "small" and the figure's
    status, out, err = run([*argv, "--format", "json", "--min-count", "1"], capsys)
    assert status == 0
    one = json.loads(out)
    assert one["min_group_count"] == 1
    assert not any(row["too_small"] for row in one["groups"])
    status, out, err = run([*argv, "--min-count", "0"], capsys)
    assert_usage_error(status, out, err, "--min-count")


def test_report_plot_hides_small_groups_unless_min_count_says(
    csv_file, tmp_path, capsys
):
    """--plot's per-group figure leaves out the groups the report marks
    small, says so in the command's words, and --min-count 1 draws them."""
    pytest.importorskip("matplotlib")
    path, frame = csv_file
    argv = ["report", str(path), "-c", "conf", "-l", "ok", "-g", "llm"]
    status, out, err = run([*argv, "--plot", str(tmp_path / "a")], capsys)
    assert status == 0
    n_groups = frame.llm.nunique()
    assert f"of {n_groups} cells" in err and "--min-count 1 draws them" in err
    assert "min_count=" not in err
    status, out, err = run(
        [*argv, "--min-count", "1", "--plot", str(tmp_path / "b")], capsys
    )
    assert status == 0
    assert "not drawn" not in err


def test_report_plot_writes_figures_and_refuses_a_full_folder(
    csv_file, tmp_path, capsys
):
    pytest.importorskip("matplotlib")
    path, _ = csv_file
    folder = tmp_path / "figures"
    argv = ["report", str(path), "-c", "conf", "-l", "ok", "-g", "llm", "--plot"]
    status, out, err = run([*argv, str(folder)], capsys)
    assert status == 0, err
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["groups.png", "reliability.png", "report.md", "selective.png"]
    report = (folder / "report.md").read_text()
    assert report.startswith(out)  # the printed report, plus the figures
    for name in ("groups.png", "reliability.png", "selective.png"):
        assert f"]({name})" in report
        assert (folder / name).read_bytes()[:4] == b"\x89PNG"
    assert "wrote report.md and 3 figures" in err

    status, out, err = run([*argv, str(folder)], capsys)
    assert_usage_error(status, out, err, "is not empty", "--force")
    status, out, err = run([*argv, str(folder), "--force"], capsys)
    assert status == 0

    not_a_folder = tmp_path / "file.png"
    not_a_folder.write_text("x")
    status, out, err = run([*argv, str(not_a_folder)], capsys)
    assert_usage_error(status, out, err, "is not a folder")


def test_report_plot_never_overwrites_the_input(tmp_path, trivia, capsys):
    pytest.importorskip("matplotlib")
    folder = tmp_path / "here"
    folder.mkdir()
    path = folder / "answers.csv"  # the input lives in the --plot folder
    trivia.iloc[::50][["verbal_confidence", "correct_judge"]].to_csv(path, index=False)
    before = path.read_bytes()
    argv = ["report", str(path), "-c", "verbal_confidence", "-l", "correct_judge"]
    status, out, err = run([*argv, "--plot", str(folder)], capsys)
    assert_usage_error(status, out, err, "is not empty")
    status, out, err = run([*argv, "--plot", str(folder), "--force"], capsys)
    assert status == 0
    assert path.read_bytes() == before
    assert (folder / "reliability.png").exists()


def test_report_plot_without_matplotlib_names_the_extra(
    csv_file, tmp_path, capsys, monkeypatch
):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    path, _ = csv_file
    argv = ["report", str(path), "-c", "conf", "-l", "ok"]
    status, out, err = run([*argv, "--plot", str(tmp_path / "f")], capsys)
    assert_usage_error(status, out, err, "sklearn-betacal[plot]")
    assert not (tmp_path / "f").exists()


@pytest.mark.parametrize("command", ["report", "fit"])
def test_decimal_commas_are_named_not_sent_to_verbalized(tmp_path, capsys, command):
    # '0,7' in a ';'-separated file: the error sent the user to --verbalized,
    # which cannot read it either; it must name the decimal comma
    path = tmp_path / "semi.csv"
    rows = [f"0,{d};{d % 2}" for d in range(1, 10)]
    path.write_text("conf;ok\n" + "\n".join(rows) + "\n")
    argv = [command, str(path), "--confidence", "conf", "--label", "ok"]
    if command == "fit":
        argv += ["--method", "platt", "--output", str(tmp_path / "m.skops")]
    status, _, err = run(argv, capsys)
    assert status == 2 and "decimal comma" in err and "--verbalized" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["semi.csv"]


def test_report_plot_never_overwrites_the_input_through_a_link(tmp_path, capsys):
    """--plot DIR --force with the input a link to DIR/report.md replaced the
    input with the report (exit 0); refused before any work now, and the
    folder writer itself keeps any namesake that is the input."""
    pytest.importorskip("matplotlib")
    from sklearn_betacal._io import atomic_report_folder

    plots = tmp_path / "plots"
    plots.mkdir()
    table = "p,y\n" + "".join(f"{i / 20:.2f},{i % 2}\n" for i in range(1, 20))
    (plots / "report.md").write_text(table)
    link = tmp_path / "data.csv"
    link.symlink_to(plots / "report.md")
    argv = ["report", str(link), "-c", "p", "-l", "y", "--plot", str(plots), "--force"]
    status, out, err = run(argv, capsys)
    assert_usage_error(status, out, err, "is report.md in the --plot folder")
    assert (plots / "report.md").read_text() == table
    # the writer's own guard, for any file name
    (plots / "fig.png").write_text(table)
    with pytest.raises(FileExistsError, match="is the input file"):
        with atomic_report_folder(plots, protect=plots / "fig.png") as tmp:
            (tmp / "fig.png").write_text("figure")
    assert (plots / "fig.png").read_text() == table
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "plots"]


def test_report_plot_folder_is_checked_before_the_work(tmp_path, capsys):
    """--plot under a file, or in a folder that takes no file, printed the
    whole report first and then failed (with '[Errno 17] File exists')."""
    pytest.importorskip("matplotlib")
    data = tmp_path / "d.csv"
    data.write_text("p,y\n0.2,0\n0.8,1\n0.6,1\n0.3,0\n")
    base = ["report", str(data), "-c", "p", "-l", "y", "--plot"]
    status, out, err = run([*base, str(data / "sub")], capsys)
    assert_usage_error(status, out, err, "is a file, not a folder")
    assert out == ""


@pytest.mark.parametrize("inside", [False, True])
def test_report_output_in_the_plot_folder_is_refused_first(tmp_path, capsys, inside):
    """--output X --plot X wrote X as the report, then failed on the folder
    and left X behind; an output inside the folder was replaced with it."""
    pytest.importorskip("matplotlib")
    data = tmp_path / "d.csv"
    data.write_text("p,y\n0.2,0\n0.8,1\n0.6,1\n0.3,0\n")
    target = tmp_path / "X"
    output = target / "r.md" if inside else target
    if inside:
        target.mkdir()
    argv = ["report", str(data), "-c", "p", "-l", "y", "--output", str(output)]
    status, out, err = run([*argv, "--plot", str(target)], capsys)
    assert_usage_error(status, out, err, "is the --plot folder")
    assert out == "" and not output.exists()
    assert list(target.iterdir()) == [] if inside else not target.exists()


def test_report_plot_folder_must_be_writable_before_the_work(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    data = tmp_path / "d.csv"
    data.write_text("p,y\n0.2,0\n0.8,1\n0.6,1\n0.3,0\n")
    base = ["report", str(data), "-c", "p", "-l", "y", "--plot"]
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):  # root ignores the mode bits
            pytest.skip("this user can write into a read-only folder")
        status, out, err = run([*base, str(locked / "plots")], capsys)
        assert_usage_error(status, out, err, "cannot write to folder")
        assert out == ""
    finally:
        locked.chmod(0o700)


def test_report_takes_sep_as_fit_and_apply_do(tmp_path, capsys):
    """Its own 'pass --sep' hint named a flag report did not have: a .tsv
    that is in fact comma-separated could not be reported on."""
    path = tmp_path / "comma.tsv"
    path.write_text("p,y\n0.2,0\n0.8,1\n0.6,1\n0.3,0\n")
    status, out, err = run(["report", str(path), "-c", "p", "-l", "y"], capsys)
    assert_usage_error(status, out, err, "pass --sep")
    status, out, err = run(
        ["report", str(path), "-c", "p", "-l", "y", "--sep", ","], capsys
    )
    assert status == 0 and "4" in out


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_an_empty_file_is_one_clear_line_in_every_subcommand(tmp_path, capsys, suffix):
    """A 0-byte input (pandas: "No columns to parse from file") is named as
    empty in report, fit and apply alike; a header without rows too."""
    import gzip

    empty = tmp_path / f"empty{suffix}"
    if suffix == ".csv.gz":
        empty.write_bytes(gzip.compress(b""))
    else:
        empty.write_bytes(b"")
    model = tmp_path / "m.skops"
    commands = [
        ["report", str(empty), "-c", "conf", "-l", "ok"],
        ["fit", str(empty), "--confidence", "conf", "--label", "ok",
         "--method", "platt", "--output", str(model)],
    ]  # fmt: skip
    for argv in commands:
        status, out, err = run(argv, capsys)
        assert_usage_error(status, out, err, f"{empty} is empty", "header line")
        assert "No columns to parse" not in err
    good = tmp_path / "good.csv"
    pd.DataFrame({"conf": [0.2, 0.8, 0.6, 0.3], "ok": [0, 1, 1, 0]}).to_csv(
        good, index=False
    )
    assert main(["fit", str(good), "--confidence", "conf", "--label", "ok",
                 "--method", "platt", "--output", str(model)]) == 0  # fmt: skip
    capsys.readouterr()
    status, out, err = run(["apply", str(model), str(empty), str(tmp_path / "o.csv")],
                           capsys)  # fmt: skip
    assert_usage_error(status, out, err, f"{empty} is empty", "header line")
    header = tmp_path / "header.csv"
    header.write_text("conf,ok\n")
    status, out, err = run(
        ["fit", str(header), "--confidence", "conf", "--label", "ok",
         "--method", "platt", "--output", str(tmp_path / "n.skops")], capsys,
    )  # fmt: skip
    assert_usage_error(status, out, err, "header line but no rows")
