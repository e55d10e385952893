# SPDX-License-Identifier: MIT
"""``betacal demo``: the main job, on a slice of the bundled data."""

import io

import pytest

from sklearn_betacal.cli import _demo, main
from sklearn_betacal.cli._protocol import CALIBRATORS


@pytest.fixture
def small_demo(monkeypatch):
    full = _demo.demo_frame

    def three_models():
        frame = full()
        return frame[frame.model.isin(sorted(frame.model.unique())[:3])]

    monkeypatch.setattr(_demo, "demo_frame", three_models)


def test_demo_cli_writes_report_and_prints_table(small_demo, tmp_path, capsys):
    out = tmp_path / "report"
    status = main(["demo", "--seeds", "1", "--kind", "verbal", "--out", str(out)])
    assert status == 0
    captured = capsys.readouterr()
    assert (
        "| calibrator | CE(h;β) | floor | CE²(h;β) debiased ×100 | ECE | Brier | AUAC |"
        in captured.out
    )
    assert "debiased CE(h;β) on the 10% tuning" in (out / "report.md").read_text()
    for name in ("BB", "HS-BB", "S-BB", "S-B", "TS", "None"):
        assert f"| {name} |" in captured.out
    n = len(CALIBRATORS)  # one seed, one kind: one step per calibrator
    assert f"{n}/{n}" in captured.err  # the progress bar reached the end
    report = (out / "report.md").read_text()
    assert "## verbal confidence" in report
    assert "Chosen hyper-parameters" in report
    leftovers = [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
    # one seed: no intervals; the abbreviations are explained
    assert "±" not in captured.out and "±" not in report.split("Methods:")[1]
    for text in (captured.out, report):
        assert "- **HS-BB**: hierarchical scaling + beta-binning" in text
        assert "- **TS**: temperature scaling" in text
    pytest.importorskip("matplotlib")
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert {"reliability_verbal.png", "selective_verbal.png"} <= set(pngs)
    if "cells_verbal.png" not in pngs:  # three models, one seed: too few rows
        assert "verbal: no group has the" in report
    for name in pngs:
        assert f"]({name})" in report


def test_demo_cli_rejects_bad_arguments(tmp_path, capsys):
    assert main(["demo", "--seeds", "0"]) == 2
    assert "--seeds must be a positive integer" in capsys.readouterr().err
    not_a_dir = tmp_path / "file.txt"
    not_a_dir.write_text("x")
    assert main(["demo", "--out", str(not_a_dir)]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_demo_cli_tune_by_auac_is_the_papers_option(small_demo, tmp_path):
    out = tmp_path / "report"
    argv = ["demo", "--seeds", "1", "--kind", "verbal", "--out", str(out), "--quiet"]
    assert main([*argv, "--tune-by", "auac"]) == 0
    assert "by AUAC (the paper's choice) on the 10%" in (out / "report.md").read_text()


class _Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self._tty = tty

    def isatty(self):
        return self._tty


def test_progress_redraws_in_a_terminal_and_prints_sparse_lines_when_piped():
    tty = _Stream(tty=True)
    bar = _demo._Progress(40, stream=tty)
    for k in range(40):
        bar.step(f"step {k}")
    text = tty.getvalue()
    assert text.count("\r") == 40 and text.count("\x1b[K") == 40
    assert text.endswith("\n") and text.count("\n") == 1

    piped = _Stream(tty=False)
    bar = _demo._Progress(40, stream=piped)
    for k in range(40):
        bar.step(f"step {k}")
    lines = piped.getvalue().splitlines()
    assert len(lines) == 10  # about one line per tenth of the work
    assert lines[-1].startswith("[" + "#" * 28 + "] 40/40")
    assert "\r" not in piped.getvalue() and "\x1b" not in piped.getvalue()


def test_demo_warnings_are_printed_once_with_their_calibrator():
    import pandas as pd

    results = pd.DataFrame(
        {
            "kind": ["verbal"] * 4,
            "calibrator": ["HS-BB", "HS-BB", "BB", "TS"],
            "seed": [0, 1, 0, 0],
            "warnings": [
                ("ConvergenceWarning: no convergence after 50 iterations",),
                ("ConvergenceWarning: no convergence after 80 iterations",),
                (),
                ("UserWarning: 3 rows fall back to the root",),
            ],
        }
    )
    lines = _demo.format_warnings(results)
    assert lines == [
        "warning (HS-BB; 2 runs): ConvergenceWarning: no convergence after 50 "
        "iterations",
        "warning (TS; 1 run): UserWarning: 3 rows fall back to the root",
    ]


def test_demo_cli_rejects_bad_n_jobs(capsys):
    assert main(["demo", "--n-jobs", "0"]) == 2
    assert "--n-jobs must be a positive integer or -1" in capsys.readouterr().err


def test_demo_in_two_workers_gives_the_same_tables(small_demo):
    from sklearn_betacal.cli._protocol import ProtocolConfig

    config = ProtocolConfig(group_column="model", calibrators=("BB", "S", "None"))
    kwargs = {"seeds": 2, "kinds": ("verbal",), "config": config, "progress": False}
    one = _demo.run_demo(**kwargs)
    two = _demo.run_demo(**kwargs, n_jobs=2)
    assert one[0].equals(two[0])
    assert one[1].equals(two[1])


def test_demo_warnings_outside_calibrators_are_reported_once(monkeypatch):
    import warnings

    import pandas as pd

    from sklearn_betacal.cli import _protocol

    def fake_run(rows, column, *, seed, config, on_step=None):
        warnings.warn(f"embedding: {seed + 3} empty texts", UserWarning, stacklevel=2)
        frame = pd.DataFrame({"calibrator": ["None"], "seed": [seed], "warnings": [()]})
        return frame, {"_y": [0]}

    monkeypatch.setattr(_protocol, "run_protocol", fake_run)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing escapes to the terminal
        runs = [_demo._one_run("verbal", None, "c", seed, None) for seed in (0, 1)]
    assert [r[2] for r in runs] == [
        ("UserWarning: embedding: 3 empty texts",),
        ("UserWarning: embedding: 4 empty texts",),
    ]
    results = pd.concat([r[0] for r in runs])
    results.attrs["other_warnings"] = [r[2] for r in runs]  # as run_demo keeps them
    assert _demo.format_warnings(results) == [
        "warning (data preparation; 2 runs): UserWarning: embedding: 3 empty texts"
    ]
