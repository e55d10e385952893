# SPDX-License-Identifier: MIT
"""A practitioner's day with a raw answer log (issue 23, items 2 and 3).

The raw log of ``betacal demo --write-log`` / ``make_raw_answer_log``; yes/no
labels and ``--pos-label``; ``report --verbalized/--percent``; the reading
stored in the model (``ConfidenceReader``) so that ``betacal apply`` and
``io.load(...)`` in Python read raw strings alike; progress on a terminal
only; the tune's warnings and label; the summary's cell names; lazy
imports; and the day of ``docs/cli.rst`` run as written.
"""

import doctest
import io
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_betacal import ConfidenceReader, parse_verbalized_confidence
from sklearn_betacal import io as model_io
from sklearn_betacal.cli import main
from sklearn_betacal.cli._common import Progress
from sklearn_betacal.datasets import make_raw_answer_log

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(scope="module")
def log():
    return make_raw_answer_log(1500, random_state=0)


@pytest.fixture
def log_csv(log, tmp_path):
    path = tmp_path / "answers.csv"
    log.to_csv(path, index=False)
    return path


def _fail(capsys, argv, *fragments):
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("betacal: error: ") and err.count("\n") == 1, err
    for fragment in fragments:
        assert fragment in err, err
    return err


# ------------------------------------------------------------------ the log
def test_raw_log_is_real_rows_written_as_text(log):
    from sklearn_betacal.datasets import load_triviaqa_confidence

    assert log.columns.tolist() == ["question", "model", "response", "correct"]
    assert set(log["correct"]) == {"yes", "no"}
    # the same seed, the same log; the rows are bundled rows
    assert make_raw_answer_log(1500, random_state=0).equals(log)
    assert not make_raw_answer_log(1500, random_state=1).equals(log)
    bundled = load_triviaqa_confidence().frame
    assert set(log["question"]) <= set(bundled["question"])
    parsed = parse_verbalized_confidence(log["response"]).confidence
    # every readable text gives back a stated confidence of the bundled data
    read = parsed[~np.isnan(parsed)]
    assert np.isin(np.round(read, 6), np.round(bundled["verbal_confidence"], 6)).all()
    assert 0.04 < np.isnan(parsed).mean() < 0.12
    with pytest.raises(ValueError, match="n_rows must lie in"):
        make_raw_answer_log(0)


def test_write_log_command(tmp_path, capsys):
    out = tmp_path / "log.csv"
    assert main(["demo", "--write-log", str(out), "--rows", "300"]) == 0
    assert "300 answers" in capsys.readouterr().err
    written = pd.read_csv(out)
    pd.testing.assert_frame_equal(written, make_raw_answer_log(300))
    _fail(capsys, ["demo", "--write-log", out, "--rows", "300"], "--force")
    _fail(capsys, ["demo", "--write-log", tmp_path / "x.json"], ".csv or .parquet")
    _fail(capsys, ["demo", "--write-log", tmp_path / "y.csv", "--rows", "0"], "--rows")


# ------------------------------------------------------------------- labels
@pytest.mark.parametrize(
    ("labels", "correct"),
    [
        (["yes", "no"], "yes"),
        (["Yes", "No"], "Yes"),
        (["TRUE", "false"], "TRUE"),
        (["correct", "incorrect"], "correct"),
        (["wrong", "right"], "right"),
    ],
)
def test_evident_label_words_need_no_pos_label(labels, correct):
    from sklearn_betacal.cli._common import read_labels

    y = np.array(labels * 3, dtype=object)
    assert_array_equal(read_labels(y, "c"), (y == correct).astype(float))


def test_pos_label_reads_any_two_labels(tmp_path, capsys):
    from sklearn_betacal.cli._common import read_labels

    ab = np.array(["A", "B", "A"], dtype=object)
    assert_array_equal(read_labels(ab, "c", "B"), [0, 1, 0])
    assert_array_equal(read_labels(np.array([1, 2, 2]), "c", "2"), [0, 1, 1])
    assert_array_equal(read_labels(np.array([True, False]), "c", "true"), [1, 0])
    rng = np.random.default_rng(0)
    h = rng.uniform(0.05, 0.95, 400)
    y = (rng.uniform(size=400) < h).astype(int)
    frame = pd.DataFrame({"h": h, "y01": y, "yab": np.where(y == 1, "good", "bad")})
    src = tmp_path / "f.csv"
    frame.to_csv(src, index=False)
    base = ["--confidence", "h", "--method", "platt", "--force"]
    assert main(["fit", str(src), "--label", "y01", *base, "--output",
                 str(tmp_path / "a.skops")]) == 0  # fmt: skip
    assert main(["fit", str(src), "--label", "yab", "--pos-label", "good", *base,
                 "--output", str(tmp_path / "b.skops")]) == 0  # fmt: skip
    a = model_io.load(tmp_path / "a.skops")
    b = model_io.load(tmp_path / "b.skops")
    assert_allclose(a.coef_, b.coef_, rtol=1e-12)
    assert model_io.read_header(tmp_path / "b.skops")["metadata"]["pos_label"] == "good"
    capsys.readouterr()
    _fail(capsys, ["fit", src, "--label", "yab", *base, "--output",
                   tmp_path / "c.skops"], "'bad', 'good'", "--pos-label")  # fmt: skip
    _fail(capsys, ["report", src, "-c", "h", "-l", "yab", "--pos-label", "fine"],
          "--pos-label 'fine' is not a label", "'bad', 'good'")  # fmt: skip
    _fail(capsys, ["report", src, "-c", "h", "-l", "y01", "--pos-label", "7"],
          "--pos-label '7' is not a label")  # fmt: skip
    # report with a pos-label equals the report on 0/1 labels
    capsys.readouterr()
    assert main(["report", str(src), "-c", "h", "-l", "yab", "--pos-label", "good",
                 "--format", "json"]) == 0  # fmt: skip
    with_pos = json.loads(capsys.readouterr().out)
    assert main(["report", str(src), "-c", "h", "-l", "y01", "--format", "json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert with_pos["metrics"] == plain["metrics"]


# ------------------------------------------------------------------ report
def test_verbalized_empty_responses_are_left_out_alike_in_fit_and_report(
    tmp_path, capsys
):
    # an empty or N/A response (pandas reads N/A, None, null as missing)
    # states no confidence, as "I cannot say" does: fit and report leave it
    # out and count it, neither asks for --dropna (a missing label still does)
    rng = np.random.default_rng(3)
    n = 2000
    h = np.round(rng.uniform(0.05, 0.95, size=n), 2)
    response = np.array([f"Probability: {v:.2f}" for v in h], dtype=object)
    response[0::40], response[1::40] = "N/A", ""
    response[2::40], response[3::40] = "None", "I cannot say"
    y = (rng.uniform(size=n) < h).astype(int)
    src = tmp_path / "log.csv"
    pd.DataFrame({"response": response, "y": y}).to_csv(src, index=False)
    n_empty, n_text = 3 * n // 40, n // 40
    fit = ["fit", str(src), "--confidence", "response", "--verbalized", "--label",
           "y", "--method", "umd", "--output", str(tmp_path / "m.skops")]  # fmt: skip
    assert main(fit) == 0
    out = capsys.readouterr().out
    assert (
        f"{n - n_empty - n_text} used, {n_empty + n_text} left out ({n_text} "
        f"unparseable confidence text(s), {n_empty} empty or N/A response(s))"
    ) in out
    argv = ["report", str(src), "-c", "response", "-l", "y", "--verbalized",
            "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    raw = json.loads(capsys.readouterr().out)
    assert raw["input"]["n_unparsed"] == n_text
    assert raw["input"]["n_empty"] == n_empty
    ok = np.ones(n, dtype=bool)
    for k in range(4):
        ok[k::40] = False
    plain = tmp_path / "plain.csv"
    pd.DataFrame({"h": h[ok], "y": y[ok]}).to_csv(plain, index=False)
    assert main(["report", str(plain), "-c", "h", "-l", "y", "--format", "json"]) == 0
    assert raw["metrics"] == json.loads(capsys.readouterr().out)["metrics"]
    # the same responses in a Parquet file (where "", "N/A" and "None" are
    # texts, not missing values), and blank ones, count the same
    pytest.importorskip("pyarrow")
    pq = tmp_path / "log.parquet"
    padded = pd.DataFrame({"response": response, "y": y})
    padded.loc[1::40, "response"] = "   "
    padded.to_parquet(pq)
    argv_pq = ["report", str(pq), *argv[2:]]
    assert main(argv_pq) == 0
    raw_pq = json.loads(capsys.readouterr().out)
    assert raw_pq["input"] == {**raw["input"], "source": str(pq)}
    assert raw_pq["metrics"] == raw["metrics"]
    # a missing label is another matter, also on a row with an empty response
    frame = pd.read_csv(src, keep_default_na=False, dtype=str)
    frame.loc[10, "y"] = ""
    frame.loc[0, "y"] = ""  # response "N/A"
    frame.to_csv(src, index=False)
    _fail(capsys, argv, "--dropna")
    frame.loc[10, "y"] = "1"
    frame.to_csv(src, index=False)
    _fail(capsys, argv, "--dropna")
    _fail(capsys, [*fit, "--force"], "--dropna")
    # a column of empty responses only: no confidence, not "plain numbers"
    empty = tmp_path / "empty.csv"
    pd.DataFrame({"response": ["", "N/A", ""], "y": [1, 0, 1]}).to_csv(
        empty, index=False
    )
    _fail(capsys, ["report", empty, "-c", "response", "-l", "y", "--verbalized"],
          "no confidence could be read", "3 empty")  # fmt: skip


def test_report_reads_verbalized_and_percent_like_fit(log, log_csv, tmp_path, capsys):
    argv = ["report", str(log_csv), "-c", "response", "-l", "correct",
            "--verbalized", "--group", "model", "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    raw = json.loads(capsys.readouterr().out)
    h = parse_verbalized_confidence(log["response"]).confidence
    ok = ~np.isnan(h)
    numbers = tmp_path / "numbers.csv"
    pd.DataFrame(
        {"h": h[ok], "y": (log["correct"] == "yes")[ok].astype(int),
         "g": log["model"][ok], "pct": 100 * h[ok]}
    ).to_csv(numbers, index=False)  # fmt: skip
    assert main(["report", str(numbers), "-c", "h", "-l", "y", "--group", "g",
                 "--format", "json"]) == 0  # fmt: skip
    plain = json.loads(capsys.readouterr().out)
    assert raw["metrics"] == plain["metrics"]
    assert raw["input"]["n_unparsed"] == int((~ok).sum())
    assert main(["report", str(numbers), "-c", "pct", "-l", "y", "--percent",
                 "--format", "json"]) == 0  # fmt: skip
    pct = json.loads(capsys.readouterr().out)
    assert_allclose(pct["metrics"]["ece"], plain["metrics"]["ece"], rtol=1e-12)
    # text without --verbalized: the hint names both flags
    _fail(capsys, ["report", log_csv, "-c", "response", "-l", "correct"],
          "non-numeric", "--verbalized", "--percent")  # fmt: skip
    _fail(capsys, ["report", numbers, "-c", "pct", "-l", "y"],
          "outside [0, 1]", "--percent")  # fmt: skip
    _fail(capsys, ["report", numbers, "-c", "h", "-l", "y", "--verbalized"],
          "plain numbers only")  # fmt: skip


# ------------------------------------------------- the reading in the model
def test_verbalized_model_reads_raw_strings_in_apply_and_python(
    log, log_csv, tmp_path, capsys
):
    model = tmp_path / "bb.skops"
    assert main(["fit", str(log_csv), "--confidence", "response", "--label",
                 "correct", "--verbalized", "--group", "model", "--method", "bb",
                 "--points-per-bin", "40", "--output", str(model)]) == 0  # fmt: skip
    # Parquet out: exact floats (pandas < 3 parses CSV floats an ulp off)
    out = tmp_path / "cal.parquet"
    assert main(["apply", str(model), str(log_csv), str(out), "--cells"]) == 0
    written = pd.read_parquet(out)
    loaded = model_io.load(model)
    reader, calibrator = loaded[0], loaded[-1]
    assert isinstance(reader, ConfidenceReader)
    assert (reader.confidence_column, reader.confidence_format) == (
        "response",
        "verbalized",
    )
    readable = ~np.isnan(reader.read(log))  # the whole log: extra columns
    assert_array_equal(readable, written["calibrated_confidence"].notna())
    p = loaded.predict_proba(log[readable])[:, 1]
    assert_array_equal(p, written["calibrated_confidence"][readable])
    h = parse_verbalized_confidence(log["response"]).confidence[readable]
    X = log.loc[readable, ["response", "model"]].assign(response=h)
    assert_array_equal(p, calibrator.predict_proba(X)[:, 1])
    assert_array_equal(written["cell"][readable], calibrator.apply(X))
    # a row that was not calibrated has no cell either (it was -1, the root's)
    assert (~readable).any()
    assert written["cell"][~readable].isna().all()
    out_csv = tmp_path / "cal.csv"
    assert main(["apply", str(model), str(log_csv), str(out_csv), "--cells"]) == 0
    assert_array_equal(pd.read_csv(out_csv)["cell"].isna(), ~readable)
    with pytest.raises(ValueError, match=r"row\(s\) of the confidence column give no"):
        loaded.predict_proba(log)


def test_reader_formats_and_errors():
    frame = pd.DataFrame({"c": [80, 35.5], "g": ["a", "b"]})
    reader = ConfidenceReader("c", confidence_format="percent").fit(frame)
    assert_allclose(reader.transform(frame)["c"], [0.8, 0.355])
    assert reader.transform(frame)["g"].tolist() == ["a", "b"]
    # more columns, another order: its own columns by name
    wide = frame.assign(extra=1)[["extra", "g", "c"]]
    assert reader.transform(wide).columns.tolist() == ["c", "g"]
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['g'\]"):
        reader.transform(frame[["c"]])
    with pytest.raises(ValueError, match=r"outside \[0, 100\]"):
        reader.transform(frame.assign(c=[80, 120]))
    number = ConfidenceReader(0).fit(np.array([[0.2, 1.0], [0.9, 2.0]]))
    assert_allclose(number.transform(np.array([[0.5, 3.0]])), [[0.5, 3.0]])
    with pytest.raises(ValueError, match="confidence_format='percent'"):
        number.transform(np.array([[50.0, 3.0]]))
    text = pd.DataFrame({"c": ["Probability: 0.8"]})
    with pytest.raises(ValueError, match="confidence_format='verbalized'"):
        ConfidenceReader("c").fit(text).read(text)


def test_apply_refuses_a_model_whose_reading_disagrees_with_its_header(
    log_csv, tmp_path, capsys
):
    model = tmp_path / "m.skops"
    assert main(["fit", str(log_csv), "--confidence", "response", "--label",
                 "correct", "--verbalized", "--method", "platt",
                 "--output", str(model)]) == 0  # fmt: skip
    loaded = model_io.load(model)
    header = model_io.read_header(model)["metadata"]
    loaded[0].set_params(confidence_format="percent")
    altered = tmp_path / "altered.skops"
    model_io.dump(loaded, altered, metadata=header)
    capsys.readouterr()
    _fail(capsys, ["apply", altered, log_csv, tmp_path / "o.csv"],
          "stored reading of the confidences does not match")  # fmt: skip


def test_elicitation_guide_runs_as_written():
    result = doctest.testfile(
        str(DOCS / "elicitation.rst"),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    assert result.attempted >= 8 and result.failed == 0


# ----------------------------------------------------------------- progress
class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_only_on_a_terminal_unless_told():
    tty, pipe = _Terminal(), io.StringIO()
    for stream in (tty, pipe):
        progress = Progress(None, stream)
        with progress.step("fitting"):
            progress.update("candidate 1/2")
    assert pipe.getvalue() == ""
    text = tty.getvalue()
    assert "\rbetacal: fitting ...\x1b[K" in text and "candidate 1/2" in text
    assert re.search(r"fitting done \(\d+\.\d s\)\x1b\[K\n$", text)
    forced = io.StringIO()
    with Progress(True, forced).step("fitting"):
        pass
    assert "\r" not in forced.getvalue()
    assert forced.getvalue().startswith("betacal: fitting ...\n")
    quiet = _Terminal()
    with Progress(False, quiet).step("fitting"):
        pass
    assert quiet.getvalue() == ""


def test_fit_and_apply_progress_flags(log_csv, tmp_path, capsys):
    base = ["fit", str(log_csv), "--confidence", "response", "--label", "correct",
            "--verbalized", "--method", "platt", "--force"]  # fmt: skip
    model = str(tmp_path / "m.skops")
    assert main([*base, "--output", model]) == 0
    assert "betacal: fitting" not in capsys.readouterr().err  # piped: quiet
    assert main([*base, "--output", model, "--progress"]) == 0
    err = capsys.readouterr().err
    assert "betacal: fitting platt on" in err and "done (" in err
    out = str(tmp_path / "o.csv")
    assert main(["apply", model, str(log_csv), out, "--progress"]) == 0
    assert "betacal: applying: 1500 rows calibrated" in capsys.readouterr().err
    assert main(["apply", model, str(log_csv), out, "--force", "--quiet"]) == 0
    assert "applying" not in capsys.readouterr().err
    _fail(capsys, [*base, "--output", model, "--progress", "--quiet"], "not allowed")


# --------------------------------------------------------------------- tune
def test_tune_shows_only_the_written_models_warnings_once(log_csv, tmp_path, capsys):
    """The fold fits of every candidate warn (small cells); only the chosen
    model's own fit is reported, each warning once."""
    import warnings

    from sklearn_betacal import BetaBinningCalibrator, GroupColumnPartitioner

    model = tmp_path / "m.skops"
    assert main(["fit", str(log_csv), "--confidence", "response", "--label",
                 "correct", "--verbalized", "--group", "model", "--method", "bb",
                 "--tune", "--output", str(model)]) == 0  # fmt: skip
    captured = capsys.readouterr()
    shown = [line for line in captured.err.splitlines() if "warning:" in line]
    # the texts left unread are reported first (tests/test_cli_fit_apply.py)
    unread = [s for s in shown if "unread" in s or "could not be read" in s]
    unread += [s for s in shown if "warning:   " in s]
    unread.sort(key=shown.index)
    assert unread and shown[: len(unread)] == unread
    shown = shown[len(unread) :]
    b = model_io.load(model)[-1].points_per_bin
    log = pd.read_csv(log_csv)
    h = parse_verbalized_confidence(log["response"]).confidence
    ok = ~np.isnan(h)
    X = log.loc[ok, ["response", "model"]].reset_index(drop=True)
    X["response"] = h[ok]
    y = (log["correct"] == "yes").to_numpy()[ok].astype(float)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        BetaBinningCalibrator(
            GroupColumnPartitioner("model"), confidence_column="response",
            points_per_bin=b, random_state=0,
        ).fit(X, y)  # fmt: skip
    expected = list(dict.fromkeys(" ".join(str(w.message).split()) for w in caught))
    assert shown == [f"betacal: warning: {m}" for m in expected]
    assert "cross-validated Brier score (a proper score" in captured.out


def test_tune_with_frozen_fold_partitions_scores_as_a_grid_search(tmp_path, capsys):
    """Each fold's text partition fitted once (cells reused by every
    candidate) gives the scores of refitting it for each candidate."""
    from sklearn.base import clone

    from sklearn_betacal.cli import build_parser
    from sklearn_betacal.cli._fit import build_estimator

    log = make_raw_answer_log(900, random_state=3)
    h = parse_verbalized_confidence(log["response"]).confidence
    ok = ~np.isnan(h)
    frame = pd.DataFrame(
        {"h": h[ok], "q": log["question"][ok], "y": (log["correct"] == "yes")[ok]}
    )
    src = tmp_path / "f.csv"
    frame.to_csv(src, index=False)
    argv = ["fit", str(src), "--confidence", "h", "--label", "y", "--text", "q",
            "--method", "bb", "--max-depth", "2", "--tune",
            "--output", str(tmp_path / "m.skops")]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    args = build_parser().parse_args(argv)
    est, _ = build_estimator(args)
    X = frame[["h", "q"]].reset_index(drop=True)
    y = frame["y"].to_numpy().astype(float)
    part = clone(est.partitioner).fit(X[["q"]])
    _check_tune_is_a_grid_search(out, est, X, y, part, "h")


def _check_tune_is_a_grid_search(out, est, X, y, part, confidence_column):
    """--tune's choice and scores (in ``out``) are a GridSearchCV's over
    TUNE_GRID by the Brier score, every candidate refitted whole; returns
    the search's mean scores. (``part``, ``confidence_column``: unused
    since --tune scores by the Brier score, which needs no cells.)"""
    from sklearn.model_selection import GridSearchCV, KFold

    from sklearn_betacal.cli._fit import TUNE_GRID

    grid = [b for b in TUNE_GRID if 4 * b <= len(X)]
    search = GridSearchCV(
        est, {"points_per_bin": grid}, scoring="neg_brier_score",
        cv=KFold(5, shuffle=True, random_state=0), error_score="raise",
    ).fit(X, y)  # fmt: skip
    best = search.best_params_["points_per_bin"]
    assert f"b = {best};" in out
    for b, score in zip(grid, search.cv_results_["mean_test_score"], strict=True):
        assert f"b={b}: {-score:.5f}" in out
    return search.cv_results_["mean_test_score"]


def test_tune_of_the_learned_tree_embeds_once_and_scores_as_a_grid_search(
    tmp_path, capsys
):
    """--partition learned --tune: each fold's embedding computed once (the
    tree refitted per candidate on it) gives the scores of refitting the
    whole partition -- embedder and tree -- for every candidate."""
    from sklearn.base import clone

    from sklearn_betacal._cells import fit_supervised
    from sklearn_betacal.cli import build_parser
    from sklearn_betacal.cli._fit import build_estimator
    from sklearn_betacal.datasets import load_triviaqa_confidence

    frame = load_triviaqa_confidence().frame.dropna(subset=["answer"]).iloc[:1500]
    frame = frame[["verbal_confidence", "question", "answer", "correct_judge"]]
    src = tmp_path / "f.csv"
    frame.to_csv(src, index=False)
    argv = ["fit", str(src), "--confidence", "verbal_confidence", "--label",
            "correct_judge", "--text", "question", "answer", "--method", "bb",
            "--partition", "learned", "--tune",
            "--output", str(tmp_path / "m.skops")]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    args = build_parser().parse_args(argv)
    est, _ = build_estimator(args)
    X = frame[["verbal_confidence", "question", "answer"]].reset_index(drop=True)
    y = frame["correct_judge"].to_numpy().astype(float)
    part = clone(est.partitioner)
    h = X["verbal_confidence"].to_numpy()
    fit_supervised(part, X[["question", "answer"]], y, confidence=h)
    scores = _check_tune_is_a_grid_search(out, est, X, y, part, "verbal_confidence")
    # not a tie that any b would pass: the candidates' scores differ
    assert np.ptp(scores) > 1e-4


def _learned_tune_on_triviaqa():
    """``(argv, args, est, X, y)`` of ``betacal fit --method bb --partition
    learned --tune`` on the first 1,500 TriviaQA rows (question + answer)."""
    from sklearn_betacal.cli import build_parser
    from sklearn_betacal.cli._fit import build_estimator
    from sklearn_betacal.datasets import load_triviaqa_confidence

    frame = load_triviaqa_confidence().frame.dropna(subset=["answer"]).iloc[:1500]
    argv = ["fit", "f.csv", "--confidence", "verbal_confidence", "--label",
            "correct_judge", "--text", "question", "answer", "--method", "bb",
            "--partition", "learned", "--tune", "--output", "m.skops"]  # fmt: skip
    args = build_parser().parse_args(argv)
    est, _ = build_estimator(args)
    X = frame[["verbal_confidence", "question", "answer"]].reset_index(drop=True)
    y = frame["correct_judge"].to_numpy().astype(float)
    return argv, args, est, X, y


def test_tune_fold_embedding_gives_the_learned_fit_bit_for_bit():
    """The fold partitioner of --partition learned --tune (embedding fitted
    and computed once per fold) gives every candidate exactly the model of
    refitting embedder and tree, on folds where the tree splits."""
    import warnings

    from sklearn.base import clone
    from sklearn.model_selection import KFold

    from sklearn_betacal.cli._fit import _learned_fold_partitions

    argv, args, est, X, y = _learned_tune_on_triviaqa()
    cv = KFold(5, shuffle=True, random_state=0)
    folds = _learned_fold_partitions(est, X, cv, args)
    n_split = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small cells of fold models
        for train, test, part in folds[:2]:
            for b in (10, 50, 10):  # the second b = 10 reuses the embedding
                fast = clone(est).set_params(points_per_bin=b, partitioner=part)
                slow = clone(est).set_params(points_per_bin=b)
                fast.fit(X.iloc[train], y[train])
                slow.fit(X.iloc[train], y[train])
                assert_array_equal(
                    fast.predict_proba(X.iloc[test]), slow.predict_proba(X.iloc[test])
                )
                tree = slow.partitioner_[-1]
                assert fast.partitioner_[-1].tree_["threshold"].tobytes() == (
                    tree.tree_["threshold"].tobytes()
                )
                n_split += tree.n_cells_ > 1
    assert n_split >= 4  # the embedding matters: the trees split


def test_tune_of_bb_on_the_fold_embedding_scores_as_refitting_bit_for_bit(
    monkeypatch,
):
    """--method bb --partition learned --tune fits each candidate on the
    numbers [confidence, fold embedding] with the fold's tree, its Platt
    scores computed once per fold: every fold's model and score are exactly
    those of refitting embedder and tree on the text (the search's scorer,
    cross_val_score), on folds where the tree splits."""
    import warnings

    from sklearn.base import clone
    from sklearn.model_selection import KFold, cross_val_score

    from sklearn_betacal._partition import _tree
    from sklearn_betacal.cli import build_parser
    from sklearn_betacal.cli._fit import _embedded_bb_folds, build_estimator

    argv, args, est, X, y = _learned_tune_on_triviaqa()
    scorer = "neg_brier_score"
    cv = KFold(5, shuffle=True, random_state=0)
    folds = _embedded_bb_folds(est, X, y, cv, args)
    assert len(folds) == 5
    n_platt = []
    scores = _tree.recalibration_scores

    def counted(*a, **kw):
        n_platt.append(1)
        return scores(*a, **kw)

    n_split = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small cells of fold models
        for b in (10, 35, 150):
            candidate = clone(est).set_params(points_per_bin=b)
            slow = cross_val_score(
                candidate, X, y, scoring=scorer, cv=cv, error_score="raise"
            )
            with monkeypatch.context() as m:
                m.setattr(_tree, "recalibration_scores", counted)
                assert [fold(candidate) for fold in folds] == slow.tolist()
            for fold, (train, test) in zip(folds[:2], cv.split(X), strict=False):
                fast = fold.fit(candidate)
                whole = clone(candidate).fit(X.iloc[train], y[train])
                assert_array_equal(
                    fast.predict_proba(fold.F_test), whole.predict_proba(X.iloc[test])
                )
                tree = whole.partitioner_[-1]
                assert fast.partitioner_.tree_["threshold"].tobytes() == (
                    tree.tree_["threshold"].tobytes()
                )
                n_split += tree.n_cells_ > 1
    assert n_split >= 3  # the embedding matters: the trees split
    assert len(n_platt) == 5  # once per fold, for all three candidates
    # another calibrator (S-BB's scaler may read the features) is not taken
    sbb, _ = build_estimator(
        build_parser().parse_args(["s-bb" if a == "bb" else a for a in argv])
    )
    assert _embedded_bb_folds(sbb, X, y, cv, args) is None


# ------------------------------------------------------------------ summary
def test_summary_names_crossed_cells_and_says_when_the_tree_found_nothing(
    tmp_path, capsys
):
    log = make_raw_answer_log(1200, random_state=0)
    src = tmp_path / "log.csv"
    log.to_csv(src, index=False)
    model = tmp_path / "m.skops"
    assert main(["fit", str(src), "--confidence", "response", "--label", "correct",
                 "--verbalized", "--group", "model", "--text", "question",
                 "--max-depth", "1", "--method", "bb", "--points-per-bin", "20",
                 "--output", str(model)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    calibrator = model_io.load(model)[-1]
    part = calibrator.partitioner_
    groups = part.partitioners_[0][1].groups_
    tree = part.partitioners_[1][1][-1].tree_
    f, t = int(tree["feature"][0]), float(tree["threshold"][0])
    for c, (g, k) in enumerate(part.cell_codes_.tolist()):
        side = f"e{f}<={t:.3g}" if k == 0 else f"e{f}>{t:.3g}"
        assert f"| {c} | model={groups[g]} x text[{side}] |" in out
    # a learned tree on text that says nothing about the miscalibration
    rng = np.random.default_rng(0)
    words = np.array("alpha beta gamma delta epsilon zeta eta theta".split())
    h = rng.uniform(0.05, 0.95, 1500)
    flat = pd.DataFrame(
        {"q": [" ".join(rng.choice(words, 4)) for _ in range(1500)], "h": h,
         "y": (rng.uniform(size=1500) < h).astype(int)}
    )  # fmt: skip
    flat.to_csv(tmp_path / "flat.csv", index=False)
    assert main(["fit", str(tmp_path / "flat.csv"), "--confidence", "h", "--label",
                 "y", "--text", "q", "--partition", "learned", "--method", "bb",
                 "--output", str(tmp_path / "flat.skops")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    tree = model_io.load(tmp_path / "flat.skops").partitioner_[-1]
    assert tree.n_cells_ == 1
    assert "the learned tree found nothing to split" in out
    assert "no direction of the text embedding" in out
    assert "| 0 | text[all] | 1500 |" in out


def _X(log):
    """The rows ``fit --verbalized`` uses of a raw log, as the model reads them."""
    h = parse_verbalized_confidence(log["response"]).confidence
    ok = ~np.isnan(h)
    X = log.loc[ok, ["response", "question", "model"]].reset_index(drop=True)
    X["response"] = h[ok]
    return X


def test_summary_names_each_serving_region_once_with_its_bins(tmp_path, capsys):
    """The cells one ancestor region serves are one line naming the region
    (the group value its cells share) with the bins of its calibrator; a
    serving calibrator with one bin is named in a warning."""
    log = make_raw_answer_log(1500, random_state=0)
    src = tmp_path / "log.csv"
    log.to_csv(src, index=False)
    model = tmp_path / "m.skops"
    assert main(["fit", str(src), "--confidence", "response", "--label", "correct",
                 "--verbalized", "--group", "model", "--text", "question",
                 "--method", "bb", "--points-per-bin", "60",
                 "--output", str(model)]) == 0  # fmt: skip
    captured = capsys.readouterr()
    out, err = captured.out, captured.err
    est = model_io.load(model)[-1]
    groups = est.partitioner_.partitioners_[0][1].groups_
    codes = est.partitioner_.cell_codes_
    regions = np.unique(est.fallback_to_[est.fallback_to_ >= 0])
    assert regions.size >= 2  # the regions the test is about
    route = est._router()
    one_bin = []
    for node in regions.tolist():
        lines = [x for x in out.splitlines() if f"| ancestor region {node} |" in x]
        assert len(lines) == 1, lines
        cells = est.fallback_cells_[est.fallback_to_ == node]
        # the group value all its cells share names it
        (g,) = set(codes[cells, 0].tolist())
        bins = est.tables_.table(int(route(cells[:1])[0])).values.shape[0]
        what, name, rows, who, n_bins = lines[0].split("|")[1:6]
        assert name.strip().startswith(f"model={groups[g]}")
        assert who.strip() == f"ancestor region {node}" and int(n_bins) == bins
        X = _X(log)[list(est.feature_names_in_)]
        assert int(rows) == int(np.isin(est.apply(X), cells).sum())
        assert what.strip().startswith(f"{len(cells)} cells: " * (len(cells) > 1))
        if bins == 1:
            one_bin.append(f"ancestor region {node} (model={groups[g]})")
    tables = est.cell_tables_
    own_one_bin = [s for s in tables if tables[s]["bin_values"].size == 1]
    if one_bin or own_one_bin:
        assert "have one bin" in err and "no longer ranked" in err
        for who in one_bin[:6]:
            assert who in err
    else:
        assert "one bin" not in err


@pytest.mark.slow
def test_tune_on_the_docs_day_serves_no_model_a_constant(tmp_path, capsys):
    """docs/cli.rst's day, --tune with --text question --group model: the
    Brier score keeps every model ranked (the squared beta-CE chose b = 200,
    one value for every answer of 7 of 12 models) and the calibrated log's
    AUAC at least the raw log's - 0.01."""
    from sklearn_betacal.metrics import area_under_accuracy_confidence

    log = make_raw_answer_log(5000, random_state=0)
    src = tmp_path / "answers.csv"
    log.to_csv(src, index=False)
    model, out = tmp_path / "tuned.skops", tmp_path / "calibrated.csv"
    assert main(["fit", str(src), "--confidence", "response", "--label", "correct",
                 "--verbalized", "--text", "question", "--group", "model",
                 "--method", "bb", "--tune", "--output", str(model)]) == 0  # fmt: skip
    assert main(["apply", str(model), str(src), str(out)]) == 0
    capsys.readouterr()
    cal = pd.read_csv(out).dropna(subset=["calibrated_confidence"])
    assert cal.groupby("model")["calibrated_confidence"].nunique().min() > 1
    h = parse_verbalized_confidence(log["response"]).confidence
    ok = ~np.isnan(h)
    y = (log["correct"] == "yes").to_numpy(dtype=float)[ok]
    raw = area_under_accuracy_confidence(y, h[ok])
    calibrated = area_under_accuracy_confidence(
        y, cal["calibrated_confidence"].to_numpy()
    )
    assert calibrated >= raw - 0.01


# ------------------------------------------------------------- lazy imports
def test_cli_parser_imports_nothing_heavy(fresh_imports):
    code = "from sklearn_betacal.cli import build_parser; build_parser()"
    heavy = ["pandas", "sklearn", "scipy", "skops", "matplotlib", "pyarrow"]
    assert fresh_imports(code, heavy) == []


# ------------------------------------------------- the day of docs/cli.rst
def day_commands():
    """The ``$ betacal ...`` lines of the day section of docs/cli.rst."""
    text = (DOCS / "cli.rst").read_text(encoding="utf-8")
    section = text.split("A day with a raw answer log", 1)[1].split("\n1. ", 1)[0]
    return [
        shlex.split(line.strip()[len("$ betacal ") :])
        for line in section.splitlines()
        if line.strip().startswith("$ betacal ")
    ]


def test_docs_day_has_every_step():
    commands = [argv[0] for argv in day_commands()]
    assert commands == ["demo", "report", "fit", "fit", "apply", "report"]


@pytest.mark.slow
def test_docs_day_runs_as_written(tmp_path, monkeypatch, capsys):
    pytest.importorskip("skops")
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    for argv in day_commands():
        assert main(argv) == 0, argv
    assert (tmp_path / "picture" / "groups.png").is_file()
    out = pd.read_csv(tmp_path / "calibrated.csv")
    assert len(out) == 5000 and out["calibrated_confidence"].notna().mean() > 0.9
