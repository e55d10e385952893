# SPDX-License-Identifier: MIT
"""End-to-end tests of the paper's protocol (the pipeline behind ``betacal demo``)."""

import numpy as np
import pandas as pd
import pytest

from sklearn_betacal.cli._protocol import (
    CALIBRATORS,
    METHOD_LEGEND,
    OPTIONAL_CALIBRATORS,
    ProtocolConfig,
    collect_warnings,
    format_legend,
    format_table,
    run_protocol,
    split_indices,
    summarize,
)


def test_split_indices_partition_rows_at_fractions():
    parts = split_indices(1000, (0.2, 0.6, 0.1, 0.1), seed=3)
    assert [len(p) for p in parts] == [200, 600, 100, 100]
    joined = np.concatenate(parts)
    assert np.array_equal(np.sort(joined), np.arange(1000))
    again = split_indices(1000, (0.2, 0.6, 0.1, 0.1), seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again, strict=True))


def test_split_indices_rejects_bad_fractions():
    with pytest.raises(ValueError, match="sum to 1"):
        split_indices(10, (0.5, 0.6), seed=0)


def test_run_protocol_bundled_slice_all_calibrators_finite_and_hsbb_beats_none():
    from sklearn_betacal.datasets import load_triviaqa_confidence

    frame = load_triviaqa_confidence().frame
    # three models pooled: ~2,900 rows, enough for every calibrator's grid
    models = sorted(frame.model.unique())[:3]
    rows = frame[frame.model.isin(models)]
    config = ProtocolConfig(depths=(1, 2), points_per_bin=(30, 60), n_components=16)
    results, preds = run_protocol(rows, "verbal_confidence", seed=0, config=config)

    assert list(results.calibrator) == list(CALIBRATORS)
    assert np.all(np.isfinite(results.beta_ce))
    assert np.all(np.isfinite(results.auac))
    ce = results.set_index("calibrator").beta_ce
    assert ce["HS-BB"] < ce["None"]
    for name in CALIBRATORS:
        p = preds[name]
        assert p.shape == preds["_y"].shape
        assert np.all((p >= 0) & (p <= 1))

    again, _ = run_protocol(rows, "verbal_confidence", seed=0, config=config)
    pd.testing.assert_frame_equal(results, again)

    table = format_table(summarize(results))
    assert table.count("\n") == len(CALIBRATORS) + 1
    assert "**" in table
    assert "±" not in table  # one seed: no interval
    assert all(isinstance(w, tuple) for w in results.warnings)
    assert "_groups" not in preds


@pytest.mark.parametrize("tune_by", ["beta_ce", "auac"])
def test_run_protocol_tunes_by_the_chosen_score(tune_by):
    """The chosen b is the grid point with the best tuning-split score."""
    from sklearn.frozen import FrozenEstimator

    from sklearn_betacal import UMDBinner
    from sklearn_betacal.cli._protocol import _features, _partitioner
    from sklearn_betacal.datasets import load_triviaqa_confidence
    from sklearn_betacal.metrics import (
        area_under_accuracy_confidence,
        beta_calibration_error,
    )

    frame = load_triviaqa_confidence().frame
    rows = frame[frame.model.isin(sorted(frame.model.unique())[:2])]
    rows = rows.reset_index(drop=True)
    grid = (15, 60, 240)
    config = ProtocolConfig(
        depths=(1,),
        points_per_bin=grid,
        n_components=8,
        calibrators=("B", "S"),
        tune_by=tune_by,
    )
    results, _ = run_protocol(rows, "verbal_confidence", seed=1, config=config)
    assert set(results.tune_by) == {tune_by}
    for col in ("beta_ce_floor", "beta_ce_debiased", "brier"):
        assert np.all(np.isfinite(results[col]))
    assert np.all(results.beta_ce_floor > 0)
    # redo the search by hand on the same splits
    part, cal, tune, _ = split_indices(len(rows), config.fractions, 1)
    Z = _features(rows, config, part, 1)
    cells = FrozenEstimator(_partitioner(2, Z.shape[1], config).fit(Z[part]))
    h = rows.verbal_confidence.to_numpy(float)
    y = rows.correct_judge.to_numpy(float)
    scores = []
    for b in grid:
        q = UMDBinner(points_per_bin=b, random_state=1).fit(h[cal], y[cal])
        q = q.predict_proba(h[tune])[:, 1]
        if tune_by == "auac":
            scores.append(area_under_accuracy_confidence(y[tune], q))
        else:
            scores.append(
                -beta_calibration_error(
                    y[tune],
                    q,
                    cells=cells.transform(Z[tune]),
                    norm="l2_squared",
                    debiased=True,
                )
            )
    chosen = results.set_index("calibrator").best_params["B"]
    assert chosen == f"points_per_bin={grid[int(np.argmax(scores))]}"
    with pytest.raises(ValueError, match="tune_by"):
        run_protocol(rows, "verbal_confidence", config=ProtocolConfig(tune_by="x"))


def _fake_results(seeds):
    rows = []
    for seed in range(seeds):
        for name, ce in (("BB", 0.05), ("None", 0.2)):
            rows.append(
                {
                    "calibrator": name,
                    "seed": seed,
                    "beta_ce": ce + 0.01 * seed,
                    "ece": ce / 2,
                    "auac": 0.7,
                    "best_params": "",
                    "n_test": 10,
                    "warnings": (),
                }
            )
    return pd.DataFrame(rows)


def test_format_table_shows_intervals_only_with_two_seeds():
    one = format_table(summarize(_fake_results(1)))
    assert "±" not in one
    assert "| BB | **0.050** | 0.025 |" in one
    two = format_table(summarize(_fake_results(2)))
    assert two.count("±") == 6
    assert np.isnan(summarize(_fake_results(1)).beta_ce_ci).all()


def test_collect_warnings_once_per_message_with_its_calibrators():
    results = _fake_results(3)
    results["warnings"] = [
        ("ConvergenceWarning: stopped after 100 iterations",),
        (),
        ("ConvergenceWarning: stopped after 250 iterations", "UserWarning: x"),
        (),
        ("ConvergenceWarning: stopped after 100 iterations",),
        ("ConvergenceWarning: stopped after 7 iterations",),
    ]
    collected = collect_warnings(results)
    assert collected == [
        ("BB, None", 4, "ConvergenceWarning: stopped after 100 iterations"),
        ("BB", 1, "UserWarning: x"),
    ]


def test_method_legend_covers_every_calibrator():
    assert set(METHOD_LEGEND) == set(CALIBRATORS) | set(OPTIONAL_CALIBRATORS)
    lines = format_legend(["BB", "TS", "unknown"])
    assert lines[0].startswith("- **BB**: beta-binning")
    assert len(lines) == 2


def test_bb_kt_tunes_over_the_kd_trees_and_the_learned_trees():
    from sklearn_betacal.datasets import load_triviaqa_confidence

    frame = load_triviaqa_confidence().frame
    rows = frame[frame.model.isin(sorted(frame.model.unique())[:2])]
    config = ProtocolConfig(
        depths=(1, 2),
        points_per_bin=(30, 60),
        n_components=8,
        calibrators=("BB-KT", "BB", "BB-T"),
    )
    results, _ = run_protocol(rows, "verbal_confidence", seed=0, config=config)
    score = results.set_index("calibrator").beta_ce_debiased
    # its grid is the union of BB's and BB-T's: on the tuning split it can
    # only do as well as the better of the two, so on the test split it is
    # one of them
    assert score["BB-KT"] in (score["BB"], score["BB-T"])
