# SPDX-License-Identifier: MIT
"""``betacal demo``: the main job, on a slice of the bundled data."""

import pytest

from sklearn_betacal.cli import _demo, main


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
    assert "8/8" in captured.err  # the progress bar reached the end
    report = (out / "report.md").read_text()
    assert "## verbal confidence" in report
    assert "Chosen hyper-parameters" in report
    leftovers = [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


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
