# SPDX-License-Identifier: MIT
"""The command line's file hygiene and scale records (issue 20, items 7-8)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sklearn_betacal.cli import main

REPO = Path(__file__).resolve().parents[1]


def run(argv, capsys):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


def _answers(path, n=400, percent=False, seed=0):
    rng = np.random.default_rng(seed)
    h = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < h).astype(int)
    pd.DataFrame({"conf": h * 100 if percent else h, "ok": y}).to_csv(path, index=False)
    return path


def _fit(tmp_path, capsys, percent):
    data = _answers(tmp_path / "train.csv", percent=percent)
    model = tmp_path / ("pct.skops" if percent else "frac.skops")
    flags = ["--percent"] if percent else []
    status, _, err = run(
        ["fit", data, "--confidence", "conf", "--label", "ok", "--method",
         "platt", "--output", model, *flags],
        capsys,
    )  # fmt: skip
    assert status == 0, err
    return model


def test_apply_percent_model_refuses_fractions(tmp_path, capsys):
    pytest.importorskip("skops")
    model = _fit(tmp_path, capsys, percent=True)
    new = _answers(tmp_path / "new.csv", n=50)
    out = tmp_path / "out.csv"
    status, _, err = run(["apply", model, new, out], capsys)
    assert status == 2 and len(err.splitlines()) == 1
    assert "look like fractions" in err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "new.csv", "pct.skops", "train.csv"]  # fmt: skip


def test_apply_fraction_model_hint_names_only_existing_flags(tmp_path, capsys):
    pytest.importorskip("skops")
    model = _fit(tmp_path, capsys, percent=False)
    new = _answers(tmp_path / "new.csv", n=50, percent=True)
    status, _, err = run(["apply", model, new, tmp_path / "o.csv"], capsys)
    assert status == 2 and "outside [0, 1]" in err
    assert "pass --percent" not in err and "'betacal fit --percent'" in err


def test_duplicate_column_names_are_refused(tmp_path, capsys):
    path = tmp_path / "dup.csv"
    path.write_text("conf,ok,conf\n0.2,1,0.3\n0.7,0,0.1\n")
    status, _, err = run(["report", path, "-c", "conf", "-l", "ok"], capsys)
    assert status == 2 and "two columns named 'conf'" in err


def test_boolean_confidences_are_refused(tmp_path, capsys):
    path = tmp_path / "b.csv"
    path.write_text("conf,ok\nTrue,1\nFalse,0\nTrue,0\n")
    status, _, err = run(["report", path, "-c", "conf", "-l", "ok"], capsys)
    assert status == 2 and "booleans" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("command", ["report", "fit"])
def test_fifo_input_is_refused(tmp_path, capsys, command):
    fifo = tmp_path / "in.csv"
    os.mkfifo(fifo)
    argv = [command, fifo, "--confidence", "conf", "--label", "ok"]
    if command == "fit":
        argv += ["--method", "platt", "--output", tmp_path / "m.skops"]
    status, _, err = run(argv, capsys)
    assert status == 2 and "FIFO" in err


def test_force_refuses_a_fifo_out(tmp_path, capsys):
    data = _answers(tmp_path / "a.csv")
    fifo = tmp_path / "out.md"
    os.mkfifo(fifo)
    status, _, err = run(
        ["report", data, "-c", "conf", "-l", "ok", "-o", fifo, "--force"], capsys
    )
    assert status == 2 and "not a regular file" in err


def test_hostile_header_is_not_echoed_whole(tmp_path, capsys):
    path = tmp_path / "h.csv"
    path.write_text("x" * 2_000_000 + ",ok\n1,0\n")
    status, _, err = run(["report", path, "-c", "conf", "-l", "ok"], capsys)
    assert status == 2 and len(err) < 1200


def test_too_many_columns_are_refused(tmp_path, capsys):
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(20_001)) + "\n")
    status, _, err = run(["report", path, "-c", "c0", "-l", "c1"], capsys)
    assert status == 2 and "20001 columns" in err


def test_written_file_honours_umask_and_keeps_mode(tmp_path):
    from sklearn_betacal._io import atomic_write

    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "new.txt", "x")
        assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o644
        os.chmod(tmp_path / "new.txt", 0o640)
        atomic_write(tmp_path / "new.txt", "y")
        assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


def test_report_plot_failing_midway_leaves_no_folder(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    from sklearn_betacal.cli import _panels

    data = _answers(tmp_path / "a.csv")
    real = _panels.file_figures

    def half(folder, *args, **kwargs):
        real(folder, *args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_panels, "file_figures", half)
    folder = tmp_path / "figs"
    status, _, err = run(["report", data, "-c", "conf", "-l", "ok", "--plot", folder],
                         capsys)  # fmt: skip
    assert status == 2 and not folder.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]


def _start_apply(tmp_path):
    pytest.importorskip("skops")
    from sklearn_betacal import PlattScaler
    from sklearn_betacal.io import dump

    rng = np.random.default_rng(0)
    n = 3_000_000
    pd.DataFrame({"conf": rng.uniform(size=n).round(4), "ok": 1}).to_csv(
        tmp_path / "big.csv", index=False
    )
    h = rng.uniform(size=200)
    est = PlattScaler().fit(pd.DataFrame({"conf": h}), (rng.uniform(size=200) < h))
    meta = {"command": "betacal fit", "method": "platt", "confidence": "conf",
            "confidence_format": "number", "features": []}  # fmt: skip
    dump(est, tmp_path / "m.skops", metadata=meta)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sklearn_betacal.cli", "apply",
         str(tmp_path / "m.skops"), str(tmp_path / "big.csv"),
         str(out_dir / "o.csv"), "--chunk-size", "2000"],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    # small chunks: the run lasts long after its temporary file appears (with
    # 20,000-row chunks a loaded machine once let it finish before the test's
    # signal arrived); every caller stops it early, so the size costs nothing
    while not any(out_dir.iterdir()):  # the temporary file exists
        assert proc.poll() is None, proc.stderr.read()
    return proc, out_dir


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)]
)
def test_signal_during_apply_cleans_up(tmp_path, signum, status):
    proc, out_dir = _start_apply(tmp_path)
    name = next(out_dir.iterdir()).name
    assert name.startswith(".o.csv.betacal-") and name.endswith(".tmp")
    proc.send_signal(signum)
    err = proc.communicate()[1]
    assert proc.returncode == status
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert list(out_dir.iterdir()) == []


def test_sigkill_leftover_is_cleaned_by_the_next_write(tmp_path):
    from sklearn_betacal._io import atomic_write

    proc, out_dir = _start_apply(tmp_path)
    proc.kill()
    proc.communicate()
    assert len(list(out_dir.iterdir())) == 1  # the killed run's temp file
    atomic_write(out_dir / "o.csv", "x")
    assert [p.name for p in out_dir.iterdir()] == ["o.csv"]


def test_duplicate_parquet_column_names_are_refused(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from sklearn_betacal._io import TableReadError, read_table

    path = tmp_path / "dup.parquet"
    table = pa.Table.from_arrays(
        [pa.array([0.2, 0.7]), pa.array([1, 0]), pa.array([0.3, 0.1])],
        names=["conf", "ok", "conf"],
    )
    pq.write_table(table, path)
    with pytest.raises(TableReadError, match="two columns named 'conf'"):
        read_table(path, ["conf", "ok"])


def test_long_output_names_are_written_and_their_leftovers_cleaned(tmp_path):
    """A valid 240-character name failed with 'File name too long' (the
    temporary name adds ~45 characters), after all the work; its temporary
    name now carries a digest of the long name, and a killed write's
    leftover is still recognised as the target's."""
    from sklearn_betacal._io import _temp_prefix, atomic_write

    target = tmp_path / ("a" * 236 + ".csv")
    atomic_write(target, "x")
    assert [p.name for p in tmp_path.iterdir()] == [target.name]
    # a leftover of a dead process on this host, under the long name's prefix
    dead = max(2**22, os.getpid() + 1)  # above pid_max's default: no process
    prefix = _temp_prefix(target).replace(f"-{os.getpid()}-", f"-{dead}-")
    assert len(prefix) < 200
    (tmp_path / (prefix + "abc.tmp")).write_text("partial")
    atomic_write(target, "y")
    assert [p.name for p in tmp_path.iterdir()] == [target.name]
    assert target.read_text() == "y"


def test_one_line_warnings_once_each_in_any_thread(capsys):
    # the display of a betacal run: one line per warning text, repeated texts
    # once (a warning per fold or figure), from other threads too; Python's
    # display is back afterwards
    import threading
    import warnings

    from sklearn_betacal.cli._common import one_line_warnings

    before = warnings.showwarning
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with one_line_warnings():
            for _ in range(3):
                warnings.warn("small cell\nof 3 rows", UserWarning, stacklevel=1)
            worker = threading.Thread(
                target=lambda: warnings.warn("from a writer", UserWarning, stacklevel=1)
            )
            worker.start()
            worker.join()
        assert warnings.showwarning is before
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "betacal: warning: small cell of 3 rows",
        "betacal: warning: from a writer",
    ]
