# SPDX-License-Identifier: MIT
"""The abstention gate in the CLI: fit --max-error, apply's columns, report."""

import json

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_array_equal

from sklearn_betacal import AbstentionGate
from sklearn_betacal import io as model_io
from sklearn_betacal.cli import main

pytest.importorskip("skops")


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    """A log whose group b is far overconfident; 'answer' as in LLM logs."""
    rng = np.random.default_rng(0)
    n = 6000
    h = rng.beta(4.0, 1.0, size=n)
    g = np.where(rng.uniform(size=n) < 0.3, "b", "a")
    truth = np.where(g == "b", np.clip((h - 0.3) / 0.7, 0, 1), h)
    frame = pd.DataFrame(
        {
            "conf": h,
            "topic": g,
            "answer": ["text"] * n,
            "correct": (rng.uniform(size=n) < truth).astype(int),
        }
    )
    path = tmp_path_factory.mktemp("gate") / "log.csv"
    frame.to_csv(path, index=False)
    return path, frame


def _fit(path, out, *extra):
    argv = [
        "fit",
        str(path),
        "--confidence",
        "conf",
        "--label",
        "correct",
        "--output",
        str(out),
        *extra,
    ]
    return main(argv)


def test_fit_stores_the_gate_and_apply_writes_the_answer(log, tmp_path, capsys):
    path, frame = log
    model = tmp_path / "m.skops"
    status = _fit(
        path,
        model,
        "--group",
        "topic",
        "--method",
        "bb",
        "--max-error",
        "0.1",
        "--delta",
        "0.1",
        "--per-cell",
    )
    assert status == 0
    printed = capsys.readouterr().out
    assert "abstention gate: max error 0.1, delta 0.1 (2 cells" in printed
    gate = model_io.load(model)
    assert isinstance(gate, AbstentionGate) and gate.per_cell
    assert model_io.read_header(model)["metadata"]["gate"] == {
        "max_error": 0.1,
        "delta": 0.1,
        "per_cell": True,
    }
    out = tmp_path / "out.csv"
    assert main(["apply", str(model), str(path), str(out)]) == 0
    result = pd.read_csv(out, keep_default_na=False)
    # the confidences as apply reads them (a CSV round trip need not give
    # back the last bit of every float with older pandas)
    X = pd.read_csv(path)[["conf", "topic"]]
    assert_array_equal(result["answered"].astype(str) == "True", gate.predict(X))
    assert_array_equal(result["abstain_reason"], gate.abstain_reason(X))
    assert set(result["abstain_reason"]) <= {"", "below threshold"}
    # the input's own answer column is kept
    assert (result["answer"] == "text").all()


def test_fit_per_cell_needs_cells_and_max_error(log, tmp_path, capsys):
    path, _ = log
    model = tmp_path / "m.skops"
    for extra, match in [
        (("--method", "umd", "--max-error", "0.1", "--per-cell"), "--per-cell needs"),
        (("--method", "umd", "--max-error", "1.5"), "must lie in"),
    ]:
        assert _fit(path, model, *extra) == 2
        err = capsys.readouterr().err
        assert match in err and len(err.strip().splitlines()) == 1
        assert not model.exists()


def test_apply_refuses_an_input_with_the_gate_columns(log, tmp_path, capsys):
    path, frame = log
    model = tmp_path / "m.skops"
    assert _fit(path, model, "--method", "umd", "--max-error", "0.2") == 0
    taken = tmp_path / "taken.csv"
    frame.assign(answered=1).to_csv(taken, index=False)
    capsys.readouterr()
    assert main(["apply", str(model), str(taken), str(tmp_path / "o.csv")]) == 2
    assert "'answered' is already taken" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()


def test_report_shows_the_certified_operating_point(log, tmp_path, capsys):
    path, _ = log
    argv = ["report", str(path), "-c", "conf", "-l", "correct", "--max-error"]
    assert main([*argv, "0.1"]) == 0
    text = capsys.readouterr().out
    assert "## Abstention (max error 0.1, delta 0.05)" in text
    assert "| coverage | error of the answers | threshold |" in text
    out = tmp_path / "r.json"
    assert main([*argv, "0.1", "-g", "topic", "--per-cell", "-o", str(out)]) == 0
    section = json.loads(out.read_text())["abstention"]
    cells = {pt["cell"]: pt for pt in section["operating_points"]}
    assert set(cells) == {"a", "b"}
    for pt in cells.values():
        assert pt["threshold"] is None or pt["error_bound"] <= 0.1
    # the confidences are not calibrated in group b: it needs a higher
    # threshold (or none) than group a
    assert cells["b"]["threshold"] is None or (
        cells["b"]["threshold"] > cells["a"]["threshold"]
    )
    capsys.readouterr()
    assert main([*argv, "0.1", "--per-cell"]) == 2
    assert "--per-cell needs --max-error and --group" in capsys.readouterr().err


def test_report_plot_draws_the_gate(log, tmp_path):
    pytest.importorskip("matplotlib")
    path, _ = log
    folder = tmp_path / "plots"
    argv = ["report", str(path), "-c", "conf", "-l", "correct", "-g", "topic"]
    assert main([*argv, "--max-error", "0.1", "--per-cell", "--plot", str(folder)]) == 0
    assert (folder / "abstention.png").stat().st_size > 0
    assert "abstention.png" in (folder / "report.md").read_text()


def test_fit_gives_the_question_column_to_the_gate(log, tmp_path, capsys):
    """``--question-column`` reaches the gate (not only a calibrator that
    splits): with several answers per question the gate certifies on the
    questions (its grouped test), with none it uses the binomial test."""
    path, frame = log
    src = tmp_path / "q.csv"
    frame.assign(qid=np.arange(len(frame)) // 3).to_csv(src, index=False)
    tests = {}
    for extra in ([], ["--question-column", "qid"]):
        model = tmp_path / f"m{len(extra)}.skops"
        assert _fit(src, model, "--method", "umd", "--max-error", "0.2", *extra) == 0
        capsys.readouterr()
        tests[len(extra)] = model_io.load(model).test_
    assert tests == {0: "binomial", 2: "grouped betting"}
