# SPDX-License-Identifier: MIT
"""The calibration report out of core: mergeable statistics, dask, the CLI on
a Parquet set, the drift test (``--against``)."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from sklearn_betacal.cli import main
from sklearn_betacal.cli._report import compute_report
from sklearn_betacal.metrics import (
    CalibrationStatistics,
    calibration_drift_test,
    calibration_test,
    cumulative_calibration_error,
)

bdask = pytest.importorskip("sklearn_betacal.dask")


def _data(n=6000, seed=0):
    """Confidences with ties, exact 0 and 1, a group that is always right
    and a tiny group; group 'b' is overconfident."""
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(size=n), 2)
    p[:50] = 0.0
    p[50:100] = 1.0
    g = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2]).astype(object)
    g[100:110] = "tiny"
    y = rng.uniform(size=n) < np.where(g == "b", 0.7 * p, p)
    y[g == "c"] = True
    return p, y, g


def assert_same_report(expected, got, path=""):
    """Every number equal to 1e-12 relative, counts and texts exactly.

    A p-value ``p`` is the tail of the statistic ``z``: a relative error
    ``e`` of ``z`` is one of about ``z**2 e = -2 log(p) e`` in ``p``, so
    p-values are compared at ``1e-12 * max(1, -2 log p)`` (the condition
    number of the tail, not a looser check of the statistic). A ``gap``
    (accuracy minus mean confidence, both in [0, 1]) is a difference: it is
    compared to 1e-12 of its operands (absolute), as a gap near 0 has no
    relative precision in either path.
    """
    if isinstance(expected, dict):
        assert expected.keys() == got.keys(), (path, expected.keys() ^ got.keys())
        for key in expected:
            assert_same_report(expected[key], got[key], f"{path}/{key}")
    elif isinstance(expected, list):
        assert len(expected) == len(got), path
        for i, (a, b) in enumerate(zip(expected, got, strict=True)):
            assert_same_report(a, b, f"{path}[{i}]")
    elif isinstance(expected, float):
        assert isinstance(got, float), (path, got)
        rtol, atol = 1e-12, 0.0
        if "pvalue" in path and 0 < expected < 1:
            rtol *= max(1.0, -2.0 * math.log(expected))
        if path.endswith("/gap"):
            atol = 1e-12
        assert got == pytest.approx(expected, rel=rtol, abs=atol), path
    else:
        assert type(expected) is type(got) and expected == got, (path, expected, got)


# ----------------------------------------------------------- the statistics
@pytest.mark.parametrize("n_chunks", [1, 7, 40])
def test_merged_statistics_give_the_in_memory_report(n_chunks):
    from sklearn_betacal.cli._report_set import report_from_statistics

    p, y, g = _data()
    expected = compute_report(p, y.astype(float), cells=g)
    order = np.argsort(p, kind="stable")
    # chunks of the sorted rows: tie runs of equal confidences cross chunks
    parts = [
        CalibrationStatistics(10, cells=True).update(y[c], p[c], g[c])
        for c in np.array_split(order, n_chunks)
    ]
    stats = parts[0]
    for part in parts[1:]:
        stats = stats.merge(part)
    assert stats.ordered
    assert_same_report(expected, report_from_statistics(stats))


@pytest.mark.parametrize("n_bins", [10, 7])
@pytest.mark.parametrize("grouped", [True, False])
def test_equal_mass_bins_from_the_value_table(n_bins, grouped):
    from sklearn_betacal.cli._report_set import report_from_statistics

    p, y, g = _data(seed=3)
    cells = g if grouped else None
    expected = compute_report(
        p, y.astype(float), cells=cells, n_bins=n_bins, strategy="quantile"
    )
    stats = CalibrationStatistics(n_bins, cells=grouped, max_values=10**6)
    rows = np.random.default_rng(3).permutation(len(p))
    for c in np.array_split(rows, 5):
        stats.update(y[c], p[c], None if cells is None else g[c])
    got = report_from_statistics(stats, strategy="quantile")
    assert_same_report(expected, got)
    with pytest.raises(ValueError, match="value table"):
        CalibrationStatistics(n_bins, cells=grouped).update(y, p, cells).equal_mass()


def test_merge_is_associative_and_ordered_pieces_are_checked():
    p, y, g = _data(2000, seed=1)
    order = np.argsort(p, kind="stable")
    chunks = [
        CalibrationStatistics(5, cells=True).update(y[c], p[c], g[c])
        for c in np.array_split(order, 4)
    ]
    left = chunks[0].merge(chunks[1]).merge(chunks[2]).merge(chunks[3])
    right = chunks[0].merge(chunks[1].merge(chunks[2].merge(chunks[3])))
    assert left.calibration_test()["ecce"].to_numpy() == pytest.approx(
        right.calibration_test()["ecce"].to_numpy(), rel=1e-12
    )
    assert left.roc_auc() == right.roc_auc()  # exact: integer counts
    # out of order: the binned numbers stay, the ordered ones are refused
    swapped = chunks[1].merge(chunks[0])
    assert not swapped.ordered
    assert swapped.calibration_error() == pytest.approx(
        chunks[0].merge(chunks[1]).calibration_error(), rel=1e-12
    )
    with pytest.raises(ValueError, match="in order of confidence"):
        swapped.roc_auc()
    with pytest.raises(ValueError, match="in order of confidence"):
        CalibrationStatistics(cells=True).update(y, p, g).calibration_test()


def test_ordered_summaries_match_the_kernels_on_ties():
    # few distinct confidences: every chunk boundary cuts a tie run
    rng = np.random.default_rng(3)
    p = np.sort(rng.choice([0.1, 0.5, 0.9], size=900))
    y = rng.uniform(size=900) < 0.5
    stats = CalibrationStatistics(4)
    for c in np.array_split(np.arange(900), 13):
        stats.update(y[c], p[c])
    assert stats.roc_auc() == pytest.approx(roc_auc_score(y, p), rel=1e-12)
    ecce = stats.calibration_test()["ecce"].iloc[0]
    assert ecce == pytest.approx(cumulative_calibration_error(y, p), rel=1e-12)
    single = CalibrationStatistics().update(np.ones(5), np.linspace(0, 1, 5))
    assert single.roc_auc() is None  # one class


def test_value_table_gives_the_ordered_numbers_in_any_order():
    from sklearn_betacal.cli._report_set import report_from_statistics

    p, y, g = _data(seed=6)  # 101 distinct confidences
    expected = compute_report(p, y.astype(float), cells=g)
    rows = np.random.default_rng(0).permutation(len(p))
    stats = CalibrationStatistics(cells=True, max_values=1000)
    for c in np.array_split(rows, 9):
        stats.update(y[c], p[c], g[c])
    assert not stats.ordered and stats.values is not None
    assert stats.values["p"].shape[0] <= 4 * 101
    assert_same_report(expected, report_from_statistics(stats))
    # more distinct pairs than max_values: the table is dropped, and the
    # numbers that need the order are refused rather than wrong
    small = CalibrationStatistics(cells=True, max_values=50)
    for c in np.array_split(rows, 3):
        small.update(y[c], p[c], g[c])
    assert small.values is None
    with pytest.raises(ValueError, match="max_values"):
        small.calibration_test()


def test_statistics_memory_does_not_grow_with_rows():
    rng = np.random.default_rng(0)
    stats = CalibrationStatistics(10, cells=True)
    sizes = []
    for k in range(3):
        p = np.sort(rng.uniform(k / 3, (k + 1) / 3, size=20000))
        y = rng.uniform(size=20000) < p
        stats.update(y, p, rng.integers(0, 5, size=20000))
        sizes.append(
            sum(v.nbytes for v in stats.sums.values())
            + sum(v.nbytes for v in stats.paths.values())
        )
    assert sizes[0] == sizes[1] == sizes[2]
    assert stats.n_rows == 60000 and stats.ordered


# ------------------------------------------------------ the Python counterpart
def _inputs(kind, p, y, g):
    frame = pd.DataFrame({"conf": p, "ok": y, "topic": g})
    if kind == "numpy":
        return {"y_true": y, "y_prob": p, "cells": g}
    if kind == "pandas":
        return {"data": frame, "y_true": "ok", "y_prob": "conf", "cells": "topic"}
    pl = pytest.importorskip("polars")
    return {
        "data": pl.from_pandas(frame),
        "y_true": "ok",
        "y_prob": "conf",
        "cells": "topic",
    }


@pytest.mark.parametrize("kind", ["numpy", "pandas", "polars"])
def test_calibration_report_in_memory_inputs(kind):
    p, y, g = _data(seed=2)
    expected = compute_report(p, y.astype(float), cells=g)
    got = bdask.calibration_report(**_inputs(kind, p, y, g))
    assert_same_report(expected, got)


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=1, processes=False, threads_per_worker=1, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def test_calibration_report_on_a_parquet_set(tmp_path, client):
    from sklearn_betacal.cli._report_set import report_from_statistics

    dd = pytest.importorskip("dask.dataframe")
    p, y, g = _data(seed=4)
    frame = pd.DataFrame({"conf": p, "ok": y, "topic": g.astype(str)})
    for i, rows in enumerate(np.array_split(np.arange(len(p)), 5)):
        frame.iloc[rows].to_parquet(tmp_path / f"part{i}.parquet")
    data = dd.read_parquet(str(tmp_path / "*.parquet"))
    got = bdask.calibration_report(data, y_true="ok", y_prob="conf", cells="topic")
    expected = compute_report(p, y.astype(float), cells=g.astype(str))
    assert_same_report(expected, got)  # one pass: the value table
    stats = bdask.calibration_statistics(
        data, y_true="ok", y_prob="conf", cells="topic", max_values=None
    )
    assert stats.ordered  # sorted by dask, merged in order
    assert_same_report(expected, report_from_statistics(stats))
    # dask Arrays, unevenly chunked, without groups
    da = pytest.importorskip("dask.array")
    got = bdask.calibration_report(
        y_true=da.from_array(y, chunks=1700), y_prob=da.from_array(p, chunks=1700)
    )
    assert_same_report(compute_report(p, y.astype(float)), got)


def test_calibration_statistics_names_a_bad_partition(client):
    dd = pytest.importorskip("dask.dataframe")
    p, y, _ = _data(1000)
    p[700] = 1.5
    frame = dd.from_pandas(pd.DataFrame({"p": p, "y": y}), npartitions=3)
    with pytest.raises(ValueError, match="partition"):
        bdask.calibration_statistics(frame, y_true="y", y_prob="p")


# -------------------------------------------------------------------- drift
def _period(rng, n, shift=0.0, group="b"):
    p = rng.uniform(size=n)
    g = rng.choice(["a", "b", "c", "d"], size=n)
    y = rng.uniform(size=n) < np.clip(np.where(g == group, p + shift, p), 0, 1)
    return CalibrationStatistics(10, cells=True).update(y, p, g)


def test_drift_names_the_shifted_group_only():
    rng = np.random.default_rng(0)
    old = _period(rng, 20000)
    new = _period(rng, 20000, shift=-0.08)
    table = calibration_drift_test(new, old)
    assert table.index[table["drifted"]].tolist() == ["b"]
    assert table.loc["b", "gap_new"] < table.loc["b", "gap_old"] - 0.05
    assert (table["bins_compared"] == 10).all()
    # the test statistic does not depend on which period is "new"
    back = calibration_drift_test(old, new)
    assert back["pvalue"].to_numpy() == pytest.approx(table["pvalue"].to_numpy())


@pytest.mark.slow
def test_drift_size_and_power():
    """Size under no drift <= alpha (family-wise, over 4 groups) and power
    rising with the planted shift (recorded in benchmarks/results)."""
    rng = np.random.default_rng(11)
    n_sim = 200
    null = [
        calibration_drift_test(_period(rng, 4000), _period(rng, 4000))["drifted"].any()
    ]
    null += [
        calibration_drift_test(_period(rng, 4000), _period(rng, 4000))["drifted"].any()
        for _ in range(n_sim - 1)
    ]
    # binomial 99.9% upper limit of 200 draws at rate 0.05 is 0.1
    assert np.mean(null) <= 0.1
    power = []
    for shift in (0.04, 0.12):
        hits = [
            calibration_drift_test(_period(rng, 4000, shift), _period(rng, 4000))[
                "drifted"
            ]["b"]
            for _ in range(50)
        ]
        power.append(np.mean(hits))
    assert power[0] < power[1]
    assert power[1] >= 0.8


# ---------------------------------------------------------------- the CLI
def _write_set(tmp_path, name, seed=0, shift=False, decimals=3):
    rng = np.random.default_rng(seed)
    folder = tmp_path / name
    folder.mkdir()
    frames = []
    for i in range(3):
        p = np.round(rng.uniform(size=3000), decimals)
        g = rng.choice(["art", "math", "news"], size=3000)
        y = rng.uniform(size=3000) < np.where((g == "math") & shift, 0.8 * p, p)
        frame = pd.DataFrame({"conf": p, "ok": y, "topic": g})
        frame.to_parquet(folder / f"part{i}.parquet")
        frames.append(frame)
    whole = tmp_path / f"{name}.parquet"
    pd.concat(frames, ignore_index=True).to_parquet(whole)
    return folder, whole


def _run(argv, capsys):
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_report_on_a_set_equals_the_file_report(tmp_path, capsys):
    pytest.importorskip("distributed")
    folder, whole = _write_set(tmp_path, "new", shift=True)
    old, _ = _write_set(tmp_path, "old", seed=1)
    common = ["-c", "conf", "-l", "ok", "-g", "topic", "--format", "json"]
    status, out, _ = _run(["report", str(whole), *common], capsys)
    assert status == 0
    expected = json.loads(out)
    argv = ["report", str(folder / "*.parquet"), *common, "--workers", "1"]
    status, out, _ = _run([*argv, "--against", str(old)], capsys)
    assert status == 0
    got = json.loads(out)
    drift = got.pop("drift")
    assert drift["drifted_groups"] == ["math"]
    assert got["input"].pop("source").endswith("(3 Parquet files, out of core)")
    expected["input"].pop("source")
    assert_same_report(expected, got)


def test_cli_equal_mass_bins_on_a_set_of_stated_confidences(tmp_path, capsys):
    pytest.importorskip("distributed")
    folder, whole = _write_set(tmp_path, "new", shift=True, decimals=2)
    common = ["-c", "conf", "-l", "ok", "-g", "topic", "--format", "json"]
    common += ["--strategy", "quantile", "--n-bins", "8"]
    status, out, _ = _run(["report", str(whole), *common], capsys)
    assert status == 0
    expected = json.loads(out)
    status, out, err = _run(["report", str(folder), *common, "--workers", "1"], capsys)
    assert status == 0, err
    got = json.loads(out)
    for report in (expected, got):
        report["input"].pop("source")
    assert got["strategy"] == "quantile"
    assert_same_report(expected, got)


def test_cli_set_refusals(tmp_path, capsys):
    folder, _ = _write_set(tmp_path, "new")
    base = ["report", str(folder), "-c", "conf", "-l", "ok"]
    status, out, err = _run([*base, "--strategy", "quantile"], capsys)
    assert status == 2 and out == "" and "--strategy uniform" in err
    assert "continuous" in err  # 3-decimal confidences: sorted, no table
    status, out, err = _run([*base, "--percent"], capsys)
    assert status == 2 and "--percent" in err
    status, out, err = _run(["report", str(folder), "-c", "nope", "-l", "ok"], capsys)
    assert status == 2 and "'nope' not found" in err
    assert len(err.splitlines()) == 1


def test_cli_plot_from_statistics(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    pytest.importorskip("distributed")
    folder, _ = _write_set(tmp_path, "new", shift=True)
    plots = tmp_path / "figures"
    argv = ["report", str(folder), "-c", "conf", "-l", "ok", "-g", "topic"]
    status, out, err = _run([*argv, "--plot", str(plots), "--workers", "1"], capsys)
    assert status == 0, err
    assert sorted(f.name for f in plots.iterdir()) == [
        "groups.png",
        "reliability.png",
        "report.md",
        "selective.png",
    ]
    assert "**miscalibrated**" in (plots / "report.md").read_text()


def test_in_memory_report_prints_the_noise_floor_and_debiased_form():
    from sklearn_betacal.metrics import (
        beta_calibration_error,
        beta_calibration_noise_floor,
    )

    p, y, g = _data(seed=5)
    report = compute_report(p, y.astype(float), cells=g)
    m = report["metrics"]
    assert m["beta_ce_noise_floor"] == beta_calibration_noise_floor(y, p, cells=g)
    assert m["beta_ce_squared_debiased"] == beta_calibration_error(
        y, p, cells=g, norm="l2_squared", debiased=True
    )
    assert calibration_test(y, p, cells=g).table.shape[0] == m["n_groups"]


def test_grid_count_equals_searchsorted():
    from sklearn_betacal.metrics._statistics import _count_at_or_below

    rng = np.random.default_rng(0)
    for m in (2, 3, 101, 1001):
        grid = np.linspace(0.0, 1.0, m)
        p = np.concatenate(
            [
                rng.uniform(size=20000),
                grid,
                np.nextafter(grid, 2.0).clip(0, 1),
                np.nextafter(grid, -1.0).clip(0, 1),
            ]
        )
        expected = np.searchsorted(grid, p, side="right")
        np.testing.assert_array_equal(_count_at_or_below(grid, p), expected)


def test_docs_example_runs_as_written(capsys):
    """docs/out_of_core.rst's Python example, as printed there."""
    from pathlib import Path

    pytest.importorskip("distributed")
    text = (Path(__file__).parents[1] / "docs" / "out_of_core.rst").read_text()
    start = text.index(".. code-block:: python", text.index("From Python"))
    lines = []
    for line in text[start:].split("\n\n", 1)[1].splitlines():
        if line and not line.startswith("   "):
            break
        lines.append(line[3:])
    exec(compile("\n".join(lines), "out_of_core.rst", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == ["['math']", "['math']"]


def test_cli_against_a_single_file_and_its_refusals(tmp_path, capsys):
    _, new = _write_set(tmp_path, "new", shift=True)
    _, old = _write_set(tmp_path, "old", seed=1)
    argv = ["report", str(new), "-c", "conf", "-l", "ok", "-g", "topic"]
    status, out, err = _run([*argv, "--against", str(old)], capsys)
    assert status == 0, err
    assert "## Drift against" in out
    assert "| math **drifted** |" in out
    status, out, err = _run([*argv, "--against", str(old), "-o", str(old)], capsys)
    assert status == 2 and out == "" and len(err.splitlines()) == 1
    assert old.stat().st_size > 0
    status, out, err = _run([*argv, "--workers", "2"], capsys)
    assert status == 2 and "--workers apply to a set" in err


def test_statistics_refuse_soft_labels():
    stats = CalibrationStatistics()
    with pytest.raises(ValueError, match="0/1"):
        stats.update(np.array([0.0, 0.3, 1.0]), np.array([0.1, 0.5, 0.9]))
    stats.update(np.array([0.0, 1.0, 1.0]), np.array([0.1, 0.5, 0.9]))
    assert stats.n_rows == 3
