# SPDX-License-Identifier: MIT
"""Soft labels (issue 39 item 7): a judge's probability that an answer is
correct, y in [0, 1], taken as y by every calibrator, metric and the CLI."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone

from sklearn_betacal import (
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    GroupColumnPartitioner,
    HierarchicalLogisticScaler,
    PlattScaler,
    ScalingBetaBinningCalibrator,
    ScalingBinningCalibrator,
    TemperatureScaler,
    UMDBinner,
)
from sklearn_betacal import metrics as m
from sklearn_betacal.cli import main

CONFIDENCE_ONLY = [
    UMDBinner(n_bins=5, random_state=0),
    PlattScaler(),
    ScalingBinningCalibrator(n_bins=5, random_state=0),
]
GROUPED = [
    BetaBinningCalibrator(GroupColumnPartitioner(), points_per_bin=100, random_state=0),
    HierarchicalLogisticScaler(GroupColumnPartitioner()),
    ScalingBetaBinningCalibrator(
        GroupColumnPartitioner(), points_per_bin=100, random_state=0
    ),
    # a supervised partitioner sees the soft labels too
    BetaBinningCalibrator(
        CalibrationTreePartitioner(random_state=0), points_per_bin=100, random_state=0
    ),
]


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    h = rng.uniform(size=n)
    g = rng.integers(0, 3, size=n)
    return h, np.column_stack([h, g]), rng


@pytest.mark.parametrize(
    "est", CONFIDENCE_ONLY + GROUPED, ids=lambda e: type(e).__name__
)
@pytest.mark.parametrize("level", [0.3, 0.85])
def test_constant_soft_labels_calibrate_to_their_value(est, level):
    """Soft labels of 0.3 everywhere calibrate to 0.3: rounded they would
    give 0 (or 1 for 0.85), dropped an error."""
    h, X, _ = _data()
    Xe = X if est in GROUPED else h
    model = clone(est).fit(Xe, np.full(h.shape[0], level))
    assert_array_equal(model.classes_, [0.0, 1.0])
    # the binnings average the labels exactly; the scalers' solvers stop at
    # their tolerance (and Platt's smoothed targets move the level by O(1/n))
    exact = isinstance(est, UMDBinner | BetaBinningCalibrator)
    atol = 1e-9 if exact else 1e-3
    assert_allclose(model.predict_proba(Xe)[:, 1], level, atol=atol)


@pytest.mark.parametrize(
    "est",
    [PlattScaler(), PlattScaler(target_smoothing=False), TemperatureScaler()],
    ids=["platt", "platt-raw", "temperature"],
)
def test_soft_label_is_a_positive_and_a_negative_weighted(est):
    """A soft label y is a positive row of weight y and a negative row of
    weight 1 - y: the scalers' likelihood is linear in y."""
    h, _, rng = _data(n=800, seed=3)
    y = np.clip(h**2 + rng.normal(0, 0.1, size=h.shape[0]), 0, 1)
    soft = clone(est).fit(h, y)
    hh = np.concatenate([h, h])
    yy = np.concatenate([np.ones_like(h), np.zeros_like(h)])
    ww = np.concatenate([y, 1 - y])
    hard = clone(est).fit(hh, yy, sample_weight=ww)
    grid = np.linspace(0.01, 0.99, 25)
    assert_allclose(
        soft.predict_proba(grid)[:, 1], hard.predict_proba(grid)[:, 1], atol=1e-6
    )


def test_soft_labels_pos_label_zero_reads_the_probability_of_incorrect():
    h, _, _ = _data(n=600)
    model = UMDBinner(n_bins=3, random_state=0, pos_label=0).fit(h, np.full(600, 0.3))
    assert_array_equal(model.classes_, [1.0, 0.0])
    assert_allclose(model.predict_proba(h)[:, 1], 0.7)
    with pytest.raises(ValueError, match="pos_label must be None, 1 or 0"):
        UMDBinner(pos_label=2).fit(h, np.full(600, 0.3))


@pytest.mark.parametrize(
    "metric",
    [
        m.expected_calibration_error,
        m.maximum_calibration_error,
        lambda y, p, **kw: m.brier_decomposition(y, p, **kw).brier,
        lambda y, p, **kw: m.brier_decomposition(y, p, **kw).calibration,
        lambda y, p, **kw: m.beta_calibration_error(
            y, p, cells=np.round(p * 1000).astype(int) % 3, **kw
        ),
        m.area_under_accuracy_confidence,
        lambda y, p, **kw: m.reliability_table(y, p, **kw)["accuracy"].to_numpy(),
    ],
    ids=["ece", "mce", "brier", "brier-calibration", "beta-ce", "auac", "table"],
)
def test_metrics_of_soft_labels_are_those_of_weighted_hard_labels(metric):
    """Brier, ECE, beta-CE, AUAC on soft labels equal the same metric on a
    positive of weight y and a negative of weight 1 - y (well defined,
    never rounded)."""
    rng = np.random.default_rng(5)
    p = np.round(rng.uniform(size=400), 3)
    y = rng.uniform(size=400)
    soft = metric(y, p)
    pp = np.concatenate([p, p])
    yy = np.concatenate([np.ones(400), np.zeros(400)])
    ww = np.concatenate([y, 1 - y])
    assert_allclose(soft, metric(yy, pp, sample_weight=ww), rtol=1e-10, atol=1e-12)
    assert not np.allclose(soft, metric(np.round(y), p))


def test_scorer_scores_soft_labels_as_they_are():
    h, _, rng = _data(n=1000, seed=2)
    y = np.clip(h + rng.normal(0, 0.05, size=1000), 0, 1)
    model = UMDBinner(n_bins=5, random_state=0).fit(h, y)
    score = m.neg_expected_calibration_error_scorer(model, h, y)
    p = model.predict_proba(h)[:, 1]
    assert score == pytest.approx(-m.expected_calibration_error(y, p))


def test_soft_labels_outside_the_unit_interval_are_refused():
    h, _, _ = _data(n=100)
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        UMDBinner().fit(h, np.linspace(0, 1.5, 100))
    with pytest.raises(ValueError, match="continuous"):
        m.expected_calibration_error(np.linspace(0, 1.5, 100), h)


def test_cli_reads_a_judges_probability_as_the_label(tmp_path, capsys):
    h, _, rng = _data(n=2000, seed=4)
    judge = np.round(np.clip(h**1.5 + rng.normal(0, 0.05, size=2000), 0, 1), 3)
    log = tmp_path / "log.csv"
    pd.DataFrame({"conf": h, "judge": judge}).to_csv(log, index=False)
    flags = ["--confidence", "conf", "--label", "judge"]
    assert main(["report", str(log), *flags, "--format", "json"]) == 0
    import json

    report = json.loads(capsys.readouterr().out)
    assert report["metrics"]["ece"] == pytest.approx(
        m.expected_calibration_error(judge, h), abs=1e-12
    )
    model = tmp_path / "m.skops"
    argv = ["fit", str(log), *flags, "--method", "umd", "--output", str(model)]
    assert main(argv) == 0
    capsys.readouterr()
    out = tmp_path / "o.csv"
    assert main(["apply", str(model), str(log), str(out)]) == 0
    p = pd.read_csv(out)["calibrated_confidence"].to_numpy()
    # the calibrated log is calibrated against the judge (not the rounded one)
    assert m.expected_calibration_error(judge, p) < 0.03
    assert abs(p.mean() - judge.mean()) < 0.01


def test_displays_show_soft_labels_as_they_are():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from sklearn_betacal import ReliabilityDisplay

    h, _, rng = _data(n=1000, seed=6)
    y = np.clip(h + rng.normal(0, 0.05, size=1000), 0, 1)
    model = UMDBinner(n_bins=5, random_state=0).fit(h, y)
    a = ReliabilityDisplay.from_estimator(model, h, y, n_bins=5)
    p = model.predict_proba(h)[:, 1]
    b = ReliabilityDisplay.from_predictions(y, p, n_bins=5)
    table = m.reliability_table(y, p, n_bins=5)
    for disp in (a, b):
        pd.testing.assert_frame_equal(disp.table, table)
        assert disp.ece == pytest.approx(m.expected_calibration_error(y, p, n_bins=5))


def test_cli_pos_label_of_soft_labels(tmp_path, capsys):
    log = tmp_path / "log.csv"
    pd.DataFrame({"c": [0.2, 0.8, 0.6], "j": [0.1, 0.9, 0.5]}).to_csv(log, index=False)
    argv = ["report", str(log), "-c", "c", "-l", "j", "--format", "json"]
    import json

    assert main([*argv, "--pos-label", "0"]) == 0
    flipped = json.loads(capsys.readouterr().out)["metrics"]["ece"]
    assert flipped == pytest.approx(
        m.expected_calibration_error([0.9, 0.1, 0.5], [0.2, 0.8, 0.6])
    )
    assert main([*argv, "--pos-label", "2"]) == 2
    assert "pos_label must be None, 1 or 0" in capsys.readouterr().err
    assert main([*argv, "--pos-label", "yes"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("betacal: error: --pos-label") and err.count("\n") == 1
