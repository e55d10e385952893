# SPDX-License-Identifier: MIT
"""ReliabilityDisplay, BetaCalibrationDisplay and AccuracyConfidenceDisplay.

The artists must carry the numbers of the metric functions (bin centres,
counts, interval ends, per-cell errors); figures render with Agg (set in
conftest through MPLBACKEND).
"""

import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_betacal import (
    AccuracyConfidenceDisplay,
    BetaBinningCalibrator,
    BetaCalibrationDisplay,
    GroupColumnPartitioner,
    KDTreePartitioner,
    ReliabilityDisplay,
    UMDBinner,
)
from sklearn_betacal.bounds import points_per_bin_for_epsilon
from sklearn_betacal.metrics import (
    accuracy_confidence_curve,
    area_under_accuracy_confidence,
    beta_calibration_error,
    cell_calibration_table,
    expected_calibration_error,
    reliability_table,
    risk_coverage_curve,
)

DISPLAYS = [ReliabilityDisplay, BetaCalibrationDisplay, AccuracyConfidenceDisplay]


def _data(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, size=n)
    groups = rng.choice(["easy", "hard", "tiny"], size=n, p=[0.55, 0.42, 0.03])
    truth = np.where(groups == "hard", p**2, p)
    y = (rng.uniform(size=n) < truth).astype(int)
    return y, p, groups


@pytest.fixture
def plt():
    pyplot = pytest.importorskip("matplotlib.pyplot")
    yield pyplot
    pyplot.close("all")


# ------------------------------------------------------------- without plotting
def test_import_does_not_pull_matplotlib(fresh_imports):
    code = (
        "import sklearn_betacal as b; b.ReliabilityDisplay; "
        "b.BetaCalibrationDisplay; b.AccuracyConfidenceDisplay"
    )
    assert fresh_imports(code, ["matplotlib"]) == []


@pytest.mark.parametrize("display", DISPLAYS)
def test_display_without_matplotlib_names_the_plot_extra(display, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    y, p, g = _data(200)
    kwargs = {"cells": g} if display is BetaCalibrationDisplay else {}
    with pytest.raises(ImportError, match=r"sklearn-betacal\[plot\]"):
        display.from_predictions(y, p, **kwargs)
    umd = UMDBinner(random_state=0).fit(p, y)
    with pytest.raises(ImportError, match="'plot' extra"):
        display.from_estimator(umd, p, y, **kwargs)


def test_library_never_chooses_a_backend():
    from pathlib import Path

    import sklearn_betacal

    root = Path(sklearn_betacal.__file__).parent
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "matplotlib.use(" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []


# ---------------------------------------------------------- ReliabilityDisplay
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_reliability_display_artists_match_reliability_table(plt, strategy):
    y, p, _ = _data()
    disp = ReliabilityDisplay.from_predictions(
        y, p, n_bins=8, strategy=strategy, name="raw"
    )
    table = reliability_table(y, p, n_bins=8, strategy=strategy)
    full = table[~table["empty"]]
    x, acc = disp.line_.get_data()
    assert_allclose(x, full["mean_confidence"])
    assert_allclose(acc, full["accuracy"])
    # interval ends of the error bars
    segments = disp.errorbar_.lines[2][0].get_segments()
    assert_allclose([s[0][1] for s in segments], full["ci_lower"])
    assert_allclose([s[1][1] for s in segments], full["ci_upper"])
    assert_allclose([s[0][0] for s in segments], full["mean_confidence"])
    # the histogram: counts over the bin edges
    heights, edges = disp.hist_.get_data()[:2]
    assert_array_equal(heights, table["count"])
    assert_allclose(edges[:-1], table["bin_lower"])
    assert_allclose(edges[1:], table["bin_upper"])
    ece = expected_calibration_error(y, p, n_bins=8, strategy=strategy)
    assert disp.line_.get_label() == f"raw (ECE = {ece:.3f})"
    assert disp.ref_line_.get_label() == "perfect calibration"
    assert disp.ax_.get_legend() is not None
    assert "Clopper-Pearson" in disp.ax_.get_legend().get_title().get_text()
    assert disp.figure_ is disp.ax_.figure and disp.hist_ax_ is not None


def test_reliability_display_markers_are_not_clipped(plt):
    y, p, _ = _data()
    p[:50] = 0.0  # a bin at the very edge of the axes
    fig, ax = plt.subplots()
    disp = ReliabilityDisplay.from_predictions(y, p, ax=ax)
    assert not disp.line_.get_clip_on()
    assert not disp.scatter_.get_clip_on()
    assert all(not bar.get_clip_on() for bar in disp.errorbar_.lines[2])


def test_reliability_display_marker_area_grows_with_count(plt):
    y, p, _ = _data()
    fig, ax = plt.subplots()
    disp = ReliabilityDisplay.from_predictions(y, p, ax=ax)
    assert disp.hist_ is None and disp.hist_ax_ is None
    counts = reliability_table(y, p)["count"].to_numpy()
    sizes = disp.scatter_.get_sizes()
    order = np.argsort(counts[counts > 0])
    assert np.all(np.diff(sizes[order]) >= 0)
    assert "marker area" in ax.get_legend().get_title().get_text()


def test_reliability_display_overlay_shares_one_diagonal(plt):
    y, p, _ = _data()
    raw = ReliabilityDisplay.from_predictions(y, p, name="raw")
    umd = UMDBinner(random_state=0).fit(p, y)
    fitted = ReliabilityDisplay.from_estimator(
        umd, p, y, ax=raw.ax_, hist_ax=raw.hist_ax_
    )
    assert fitted.ref_line_ is None  # the diagonal is drawn once
    labels = raw.ax_.get_legend_handles_labels()[1]
    assert labels.count("perfect calibration") == 1
    assert any(label.startswith("UMDBinner (ECE") for label in labels)
    assert len(raw.hist_ax_.patches) == 2


def test_reliability_display_from_estimator_equals_from_predictions(plt):
    y, p, _ = _data()
    umd = UMDBinner(random_state=0).fit(p, y)
    a = ReliabilityDisplay.from_estimator(umd, p, y)
    b = ReliabilityDisplay.from_predictions(y, umd.predict_proba(p)[:, 1])
    assert a.table.equals(b.table)
    assert a.ece == b.ece


def test_reliability_display_string_labels_and_multiclass_top_label(plt):
    from sklearn.linear_model import LogisticRegression

    y, p, _ = _data()
    words = np.where(y == 1, "right", "wrong")
    a = ReliabilityDisplay.from_predictions(words, p, pos_label="right")
    b = ReliabilityDisplay.from_predictions(y, p)
    assert a.table.equals(b.table)
    with pytest.raises(ValueError, match="pos_label"):
        ReliabilityDisplay.from_predictions(words, p, pos_label="maybe")

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    target = np.digitize(X[:, 0] + 0.5 * rng.normal(size=300), [-0.5, 0.5])
    clf = LogisticRegression().fit(X, target)
    disp = ReliabilityDisplay.from_estimator(clf, X, target)
    proba = clf.predict_proba(X)
    expected = reliability_table(proba.argmax(1) == target, proba.max(1))
    assert disp.table.equals(expected)
    assert disp.line_.get_label().startswith("LogisticRegression")


def test_from_estimator_needs_predict_proba_and_matching_rows(plt):
    from sklearn.svm import LinearSVC

    y, p, _ = _data(300)
    svc = LinearSVC().fit(p.reshape(-1, 1), y)
    with pytest.raises(TypeError, match="predict_proba"):
        ReliabilityDisplay.from_estimator(svc, p.reshape(-1, 1), y)
    umd = UMDBinner(random_state=0).fit(p, y)
    with pytest.raises(ValueError, match="rows"):
        ReliabilityDisplay.from_estimator(umd, p, y[:-1])


# ------------------------------------------------------- BetaCalibrationDisplay
def test_beta_display_orders_by_error_and_excludes_small_cells(plt):
    y, p, g = _data()
    disp = BetaCalibrationDisplay.from_predictions(
        y, p, cells=g, min_count=100, random_state=0, name="raw"
    )
    table = cell_calibration_table(y, p, cells=g, random_state=0)
    assert disp.cell_table.equals(table)
    assert disp.excluded_cells_ == ["tiny"]
    assert disp.cells_ == ["hard", "easy"]
    errors = table.loc[disp.cells_, "calibration_error"].to_numpy()
    assert np.all(np.diff(errors) <= 0)
    # the artists carry the table's numbers, worst cell on top (y = 0)
    x, ypos = disp.errorbar_.lines[0].get_data()
    assert_allclose(x, errors)
    assert_array_equal(ypos, [0, 1])
    segments = disp.errorbar_.lines[2][0].get_segments()
    assert_allclose([s[0][0] for s in segments], table.loc[disp.cells_, "ce_lower"])
    assert_allclose([s[1][0] for s in segments], table.loc[disp.cells_, "ce_upper"])
    assert_allclose(
        disp.noise_.get_offsets()[:, 0], table.loc[disp.cells_, "noise_level"]
    )
    assert disp.beta_ce == pytest.approx(beta_calibration_error(y, p, cells=g))
    labels = [t.get_text() for t in disp.ax_.get_yticklabels()]
    n_hard = int((g == "hard").sum())
    assert labels[0] == f"hard  (n={n_hard})"
    assert "1 smaller cells not shown" in disp.ax_.get_title()
    # the small multiples: worst cells first, shared y-axes, same numbers
    assert len(disp.panel_displays_) == 2
    first = disp.panel_displays_[0]
    assert first.table.equals(reliability_table(y[g == "hard"], p[g == "hard"]))
    assert disp.panel_axes_[0].get_title().startswith("hard\n")
    assert (
        disp.panel_axes_[1]
        .get_shared_y_axes()
        .joined(disp.panel_axes_[0], disp.panel_axes_[1])
    )
    assert not disp.panel_axes_[2].axison  # no third cell large enough


def test_beta_display_auto_min_count_is_thm_3_1_bound(plt):
    y, p, g = _data(3000)
    disp = BetaCalibrationDisplay.from_predictions(y, p, cells=g, n_resamples=20)
    assert disp.min_count == points_per_bin_for_epsilon(0.1, 3000, alpha=0.1)
    counts = disp.cell_table["count"]
    assert set(disp.excluded_cells_) == set(counts.index[counts < disp.min_count])


def test_beta_display_too_little_data_says_so(plt):
    y, p, g = _data(60)
    disp = BetaCalibrationDisplay.from_predictions(
        y, p, cells=g, min_count=61, n_resamples=10
    )
    assert disp.cells_ == [] and disp.panel_displays_ == []
    texts = [t.get_text() for t in disp.panel_axes_[0].texts]
    assert any("too small to judge" in t for t in texts)


def test_beta_display_auto_min_count_never_draws_an_empty_figure(plt):
    # 1,895 rows in 14 groups: Thm 3.1 asks 252 rows per cell and none has
    # them; "auto" then draws the four largest cells and says why
    rng = np.random.default_rng(0)
    sizes = rng.multinomial(1895, np.full(14, 1 / 14))
    g = np.repeat(np.arange(14), sizes)
    p = rng.uniform(0.05, 0.95, size=1895)
    y = (rng.uniform(size=1895) < p).astype(int)
    from sklearn_betacal.metrics._plot.beta_reliability import auto_min_count

    assert auto_min_count(1895) > sizes.max()
    with pytest.warns(UserWarning, match="10 of 14 cells .* not drawn") as record:
        disp = BetaCalibrationDisplay.from_predictions(
            y, p, cells=g, n_resamples=10
        ).plot()
    assert "pin its accuracy" in str(record[0].message)
    assert disp.min_count == np.sort(sizes)[-4]
    assert len(disp.cells_) >= 4 and len(disp.panel_displays_) == 4
    # an explicit min_count that hides cells warns too
    with pytest.warns(UserWarning, match="pass min_count=1"):
        BetaCalibrationDisplay.from_predictions(
            y, p, cells=g, min_count=sizes.max(), n_resamples=10
        )


def test_beta_display_order_keeps_cells_across_calibrators(plt):
    y, p, g = _data()
    raw = BetaCalibrationDisplay.from_predictions(
        y, p, cells=g, min_count=100, n_resamples=20, random_state=0
    )
    fixed = np.where(g == "hard", np.sqrt(p) * 0 + p**2, p)
    fig, axes = plt.subplots(1, 2, sharey=True)
    after = BetaCalibrationDisplay.from_predictions(
        y,
        fixed,
        cells=g,
        min_count=100,
        n_resamples=20,
        random_state=0,
        ax=axes[1],
        order=raw.cells_,
    )
    assert after.cells_ == raw.cells_
    x, _ = after.errorbar_.lines[0].get_data()
    assert x[0] < 0.5 * raw.errorbar_.lines[0].get_data()[0][0]
    with pytest.raises(ValueError, match="not in the table"):
        BetaCalibrationDisplay.from_predictions(
            y, p, cells=g, n_resamples=0, order=["nowhere"]
        )


def test_beta_display_from_estimator_names_cells_and_marks_fallback(plt):
    y, p, g = _data()
    rng = np.random.default_rng(1)
    codes = np.searchsorted(np.unique(g), g)
    X = np.column_stack([p, codes])
    bb = BetaBinningCalibrator(
        partitioner=GroupColumnPartitioner(), points_per_bin=50, random_state=0
    )
    # "tiny" has 43 < b rows (Thm 3.1's condition), so it falls back to the root
    with pytest.warns(UserWarning, match="43 calibration rows in 1 of 3 cells"):
        bb.fit(X, y)
    assert bb.n_cells_fallback_ == 1
    disp = BetaCalibrationDisplay.from_estimator(
        bb, X, y, min_count=1, n_resamples=10, random_state=0
    )
    tiny = int(np.flatnonzero(np.unique(g) == "tiny")[0])
    # a group column's cells are its values (here the codes 0.0, 1.0, 2.0)
    assert disp.fallback_cells == [float(tiny)]
    assert sorted(disp.cells_) == [0.0, 1.0, 2.0]
    ce, ypos = disp.errorbar_.lines[0].get_data()
    hollow = disp.fallback_markers_.get_offsets()
    assert_allclose(hollow[:, 1], [disp.cells_.index(tiny)])
    assert disp.fallback_markers_.get_label().startswith("root fallback")

    Z = np.column_stack([p, rng.normal(size=len(p))])
    kd = BetaBinningCalibrator(
        partitioner=KDTreePartitioner(max_depth=1), points_per_bin=40, random_state=0
    ).fit(Z, y)
    disp = BetaCalibrationDisplay.from_estimator(kd, Z, y, n_resamples=5)
    threshold = kd.partitioner_.tree_["threshold"][0]
    assert sorted(disp.cell_names.values()) == sorted(
        [f"kd x0<={threshold:.3g}", f"kd x0>{threshold:.3g}"]
    )


def test_beta_display_needs_groups_without_apply(plt):
    y, p, g = _data(300)
    umd = UMDBinner(random_state=0).fit(p, y)
    with pytest.raises(ValueError, match="cells="):
        BetaCalibrationDisplay.from_estimator(umd, p, y)
    disp = BetaCalibrationDisplay.from_estimator(
        umd, p, y, cells=g, min_count=40, n_resamples=5
    )
    assert set(disp.cells_) == {"easy", "hard"}


def test_beta_display_from_a_pipeline_names_cells_by_group_value(plt):
    """from_estimator takes what the scorer takes (a Pipeline ending in a
    calibrator, as betacal fit writes it), and a group column's cells are
    its values, so docs/displays.rst's side-by-side recipe (order= of the
    raw display's cells) runs."""
    import pandas as pd
    from sklearn.pipeline import Pipeline

    from sklearn_betacal import ConfidenceReader

    y, p, g = _data()
    raw_text = pd.DataFrame({"response": 100 * p, "model": g})
    reader = ConfidenceReader("response", confidence_format="percent")
    X = reader.fit_transform(raw_text)
    bb = BetaBinningCalibrator(
        partitioner=GroupColumnPartitioner("model"),
        confidence_column="response",
        points_per_bin=20,
        random_state=0,
    ).fit(X, y)
    model = Pipeline([("read", reader), ("calibrate", bb)])
    h = X["response"].to_numpy()
    raw = BetaCalibrationDisplay.from_predictions(
        y, h, cells=g, name="raw", min_count=1, n_resamples=5, random_state=0
    )
    disp = BetaCalibrationDisplay.from_estimator(
        model, raw_text, y, order=raw.cells_, min_count=1, n_resamples=5,
        random_state=0,
    )  # fmt: skip
    assert set(disp.cells_) == set(np.unique(g))
    table = cell_calibration_table(
        y, model.predict_proba(raw_text)[:, 1], cells=g, n_resamples=5,
        random_state=0,
    )  # fmt: skip
    assert disp.cell_table.equals(table)
    # the same as the calibrator on the read rows
    direct = BetaCalibrationDisplay.from_estimator(
        bb, X, y, min_count=1, n_resamples=5, random_state=0
    )
    assert direct.cell_table.equals(table)


def test_beta_display_from_a_calibrated_classifier_takes_its_cells(plt):
    """A CalibratedClassifier with a group calibrator: its cells are those
    the scorer reads (its calibrator's partition of the partition
    features), named by the group values."""
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from sklearn_betacal import CalibratedClassifier

    rng = np.random.default_rng(0)
    n = 1200
    X = np.column_stack([rng.normal(size=n), rng.integers(0, 3, n).astype(float)])
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    clf = LogisticRegression().fit(X[:, :1], y)
    pick = FunctionTransformer(lambda Z: Z[:, :1])
    cal = CalibratedClassifier(
        FrozenEstimator(make_pipeline(pick, clf)),
        BetaBinningCalibrator(GroupColumnPartitioner(), points_per_bin=40,
                              random_state=0),
        partition_features=[1],
    ).fit(X, y)  # fmt: skip
    disp = BetaCalibrationDisplay.from_estimator(
        cal, X, y, min_count=1, n_resamples=5, random_state=0
    )
    assert sorted(disp.cells_) == [0.0, 1.0, 2.0]
    table = cell_calibration_table(
        y, cal.predict_proba(X)[:, 1], cells=X[:, 1], n_resamples=5,
        random_state=0,
    )  # fmt: skip
    assert disp.cell_table.equals(table)


# --------------------------------------------------- AccuracyConfidenceDisplay
def test_accuracy_confidence_display_matches_curves(plt):
    y, p, _ = _data()
    disp = AccuracyConfidenceDisplay.from_predictions(y, p, name="raw", grid=51)
    t, acc, cov = accuracy_confidence_curve(y, p, grid=51)
    assert_allclose(disp.line_.get_xdata(), t)
    assert_allclose(disp.line_.get_ydata(), acc)
    assert_allclose(disp.coverage_line_.get_ydata(), cov)
    c, r, _ = risk_coverage_curve(y, p)
    assert_allclose(disp.rc_line_.get_xdata(), c)
    assert_allclose(disp.rc_line_.get_ydata(), r)
    auac = area_under_accuracy_confidence(y, p, grid=51)
    assert disp.line_.get_label() == f"raw (AUAC = {auac:.3f})"


def test_accuracy_confidence_display_one_axes_and_estimator(plt):
    y, p, _ = _data()
    umd = UMDBinner(random_state=0).fit(p, y)
    fig, ax = plt.subplots()
    disp = AccuracyConfidenceDisplay.from_estimator(umd, p, y, ax=ax)
    assert disp.rc_ax_ is None and disp.rc_line_ is None
    assert disp.ax_ is ax and disp.figure_ is fig
    assert_allclose(
        disp.line_.get_ydata(),
        accuracy_confidence_curve(y, umd.predict_proba(p)[:, 1])[1],
    )


def test_displays_render_to_png(plt, tmp_path):
    import matplotlib

    assert matplotlib.get_backend().lower() == "agg"
    y, p, g = _data()
    for disp in (
        ReliabilityDisplay.from_predictions(y, p),
        BetaCalibrationDisplay.from_predictions(
            y, p, cells=g, min_count=50, n_resamples=10
        ),
        AccuracyConfidenceDisplay.from_predictions(y, p),
    ):
        path = tmp_path / f"{type(disp).__name__}.png"
        disp.figure_.savefig(path)
        assert path.stat().st_size > 5000


# ------------------------------------------- report figures (side by side)
def test_report_panels_share_axes_and_keep_the_raw_cell_order(plt):
    from sklearn_betacal.cli import _panels

    y, p, g = _data(3000)
    curves = {"raw": p, "fixed": np.where(g == "hard", p**2, p)}
    fig, displays = _panels.reliability_grid(y, curves, title="t", ncols=4)
    axes = [ax for ax in fig.axes if ax.axison]
    assert len(axes) == 2
    assert axes[0].get_shared_y_axes().joined(axes[0], axes[1])
    assert displays["raw"].ax_ is axes[0]
    assert axes[1].get_title() == f"fixed\nECE = {displays['fixed'].ece:.3f}"

    fig, displays = _panels.cells_grid(y, curves, g, title="t", min_count=100)
    assert displays["raw"].cells_ == ["hard", "easy"]
    assert displays["fixed"].cells_ == displays["raw"].cells_  # same rows
    before = displays["raw"].cell_table.loc["hard", "calibration_error"]
    after = displays["fixed"].cell_table.loc["hard", "calibration_error"]
    assert after < before / 2
    assert fig.legends  # one legend for the figure, not one per panel
    assert "1 smaller cells not shown" in fig.get_suptitle()

    fig = _panels.worst_cells_grid(y, curves, g, ["hard"], title="t")
    assert len(fig.axes) == 2
    assert fig.axes[0].get_ylabel().startswith("hard (n=")
    assert _panels.worst_cells_grid(y, curves, g, [], title="t") is None

    fig, displays = _panels.selective_figure(y, curves, title="t")
    assert len(displays["raw"].rc_ax_.lines) == 2  # both curves overlaid


def test_report_single_figures_are_not_registered_with_pyplot(plt):
    from sklearn_betacal.cli import _panels

    y, p, g = _data(3000)
    before = plt.get_fignums()
    fig, disp = _panels.reliability_figure(y, p, name="raw")
    assert disp.hist_ is not None and disp.figure_ is fig
    cells = BetaCalibrationDisplay._compute(
        y, p, cells=g, min_count=100, n_resamples=10, random_state=0
    )
    fig = _panels.cells_figure(cells, n_panels=2)
    assert cells.figure_ is fig and len(cells.panel_displays_) == 2
    assert plt.get_fignums() == before  # nothing left open in pyplot


def test_displays_take_a_calibrated_classifier_with_string_labels(plt):
    from sklearn.datasets import make_classification
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression

    from sklearn_betacal import CalibratedClassifier

    X, y = make_classification(n_samples=3000, random_state=0)
    labels = np.array(["ham", "spam"])[y]
    clf = LogisticRegression().fit(X[:1000], labels[:1000])
    cal = CalibratedClassifier(FrozenEstimator(clf), UMDBinner(random_state=0))
    cal.fit(X[1000:2000], labels[1000:2000])
    Xt, yt = X[2000:], labels[2000:]
    p = cal.predict_proba(Xt)[:, 1]
    disp = ReliabilityDisplay.from_estimator(cal, Xt, yt)
    assert disp.table.equals(reliability_table(yt == "spam", p))
    assert disp.line_.get_label().startswith("CalibratedClassifier (ECE")
    ham = ReliabilityDisplay.from_estimator(cal, Xt, yt, pos_label="ham")
    assert ham.table.equals(reliability_table(yt == "ham", 1 - p))
    groups = np.where(Xt[:, 0] > 0, "x0 > 0", "x0 <= 0")
    cells = BetaCalibrationDisplay.from_estimator(
        cal, Xt, yt, cells=groups, min_count=10, n_resamples=5
    )
    assert set(cells.cells_) == {"x0 > 0", "x0 <= 0"}
    sel = AccuracyConfidenceDisplay.from_estimator(cal, Xt, yt)
    assert_allclose(
        sel.line_.get_ydata(), accuracy_confidence_curve(yt == "spam", p)[1]
    )


def curves_few(curves):
    return {name: p[:300] for name, p in curves.items()}


def test_file_and_demo_figures_write_pngs_atomically(plt, tmp_path, monkeypatch):
    from sklearn_betacal.cli import _panels

    y, p, g = _data(3000)
    written = _panels.file_figures(tmp_path, y, p, name="raw", groups=g)
    assert set(written) == {"reliability.png", "selective.png", "groups.png"}
    curves = {"None": p, "fixed": np.where(g == "hard", p**2, p)}
    written, notes = _panels.demo_figures(tmp_path, "verbal", y, curves, g)
    assert notes == []
    assert set(written) == {
        "reliability_verbal.png",
        "cells_verbal.png",
        "worst_cells_verbal.png",
        "selective_verbal.png",
    }
    names = sorted(path.name for path in tmp_path.iterdir())
    assert all(name.endswith(".png") for name in names)  # no temp files
    assert all((tmp_path / n).read_bytes()[:4] == b"\x89PNG" for n in names)
    few = tmp_path / "few"
    few.mkdir()
    written, notes = _panels.demo_figures(
        few, "token", y[:300], curves_few(curves), g[:300]
    )
    # no group has the rows Thm 3.1 asks: the largest groups are drawn
    assert "cells_token.png" in written and notes == []

    from matplotlib.figure import Figure

    def broken(self, *args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(Figure, "savefig", broken)
    target = tmp_path / "fresh"
    target.mkdir()
    with pytest.raises(RuntimeError, match="disk full"):
        _panels.file_figures(target, y, p, name="raw")
    assert list(target.iterdir()) == []


def test_cell_descriptions_name_crossed_and_clustered_cells():
    from sklearn.cluster import KMeans

    from sklearn_betacal import ClusterPartitioner, CrossPartitioner
    from sklearn_betacal.metrics._plot.beta_reliability import cell_descriptions

    rng = np.random.default_rng(0)
    Z = np.column_stack([rng.normal(size=80), np.repeat([3, 7], 40)])
    cross = CrossPartitioner(
        [
            ("text", KDTreePartitioner(max_depth=1), [0]),
            ("model", GroupColumnPartitioner(), [1]),
        ]
    ).fit(Z)
    t = cross.partitioners_[0][1].tree_["threshold"][0]
    names = cell_descriptions(cross, [0, 3, -1])
    assert names == {
        0: f"kd x0<={t:.3g} | 3.0",
        3: f"kd x0>{t:.3g} | 7.0",
        -1: "outside every cell",
    }
    km = ClusterPartitioner(KMeans(n_clusters=2, n_init=1, random_state=0)).fit(Z)
    assert cell_descriptions(km, [0, 1, 5]) == {
        0: f"cluster {km.cluster_labels_[0]}",
        1: f"cluster {km.cluster_labels_[1]}",
        5: "cell 5",
    }
    assert cell_descriptions(object(), [2]) == {2: "cell 2"}


@pytest.mark.parametrize("kind", ["hierarchical", "scaling_beta_binning"])
def test_beta_display_from_every_group_calibrator(plt, kind):
    from sklearn_betacal import (
        HierarchicalLogisticScaler,
        ScalingBetaBinningCalibrator,
    )

    y, p, g = _data(3000)
    codes = np.searchsorted(np.unique(g), g).astype(float)
    X = np.column_stack([p, codes])
    if kind == "hierarchical":
        est = HierarchicalLogisticScaler(GroupColumnPartitioner()).fit(X, y)
    else:
        est = ScalingBetaBinningCalibrator(
            GroupColumnPartitioner(), points_per_bin=30, random_state=0
        ).fit(X, y)
    disp = BetaCalibrationDisplay.from_estimator(
        est, X, y, min_count=1, n_resamples=5, random_state=0
    )
    assert sorted(disp.cells_) == [0.0, 1.0, 2.0]
    table = cell_calibration_table(
        y,
        est.predict_proba(X)[:, 1],
        cells=est.partitioner_.groups_[est.apply(X)],
        n_resamples=5,
        random_state=0,
    )
    assert disp.cell_table.equals(table)


# ------------------------------------------------- tests of calibration (issue 22)
def test_cumulative_display_curve_is_the_ecce_path(plt):
    from sklearn_betacal import CumulativeCalibrationDisplay
    from sklearn_betacal.metrics import calibration_test

    y, p, _ = _data()
    p = np.round(p, 2)  # ties: one point per distinct confidence
    disp = CumulativeCalibrationDisplay.from_predictions(y, p, name="raw")
    test = calibration_test(y, p)
    x, c = disp.line_.get_data()
    assert x[0] == 0 and c[0] == 0 and x[-1] == pytest.approx(1.0)
    assert len(x) == np.unique(p).size + 1
    assert c.max() - c.min() == pytest.approx(test.statistic, rel=1e-12)
    # the envelope ends at 2 sigma, the null standard deviation of C_n
    assert disp.envelope[-1] == pytest.approx(2 * test.sigma, rel=1e-12)
    assert disp.line_.get_label().startswith(f"raw (ECCE = {test.statistic:.3f}")
    assert disp.envelope_ is not None and disp.score_ax_ is not None
    # the slope over a rank range is the gap: the last point is mean(y - p)
    assert c[-1] == pytest.approx(np.mean(y - p))


def test_cumulative_display_from_estimator_equals_from_predictions(plt):
    from sklearn.linear_model import LogisticRegression

    from sklearn_betacal import CumulativeCalibrationDisplay

    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 2))
    y = (rng.uniform(size=400) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(int)
    clf = LogisticRegression().fit(X, y)
    a = CumulativeCalibrationDisplay.from_estimator(clf, X, y)
    b = CumulativeCalibrationDisplay.from_predictions(
        y, clf.predict_proba(X)[:, 1], name="LogisticRegression"
    )
    assert_allclose(a.cumulative, b.cumulative)
    assert a.line_.get_label() == b.line_.get_label()


def test_beta_display_stars_cells_that_the_kuiper_test_rejects(plt):
    from sklearn_betacal.metrics import calibration_test

    y, p, g = _data()
    disp = BetaCalibrationDisplay.from_predictions(
        y, p, cells=g, min_count=20, random_state=0
    )
    table = calibration_test(y, p, cells=g).table
    expected = [c for c in disp.cells_ if table.loc[c, "pvalue_adjusted"] < 0.05]
    assert "hard" in expected and "tiny" not in expected  # hard is planted
    assert disp.significant_cells_ == expected
    ypos = disp.significant_markers_.get_offsets()[:, 1]
    assert_array_equal(ypos, [disp.cells_.index(c) for c in expected])
    bh = BetaCalibrationDisplay.from_predictions(
        y, p, cells=g, min_count=20, random_state=0, test_method="fdr_bh"
    )
    assert_allclose(
        bh.test_table["pvalue_adjusted"],
        calibration_test(y, p, cells=g, method="fdr_bh").table["pvalue_adjusted"],
    )


def test_accuracy_confidence_legend_covers_no_curve(plt):
    # overconfident verbalized answers: the accuracy curve starts low on the
    # left, where the fixed "lower left" legend sat on it
    from sklearn_betacal.datasets import load_triviaqa_confidence

    frame = load_triviaqa_confidence().frame
    y = frame.correct_judge.to_numpy()
    p = frame.verbal_confidence.to_numpy()
    from sklearn_betacal.cli._panels import selective_figure

    # the demo's figure: several confidences on one axes, one legend entry each
    curves = {"verbalized": p, "squared": p**2, "root": np.sqrt(p), "half": p / 2}
    fig, displays = selective_figure(y, curves, title="t")
    fig.canvas.draw()
    disp = displays["half"]
    for ax in [disp.ax_, disp.rc_ax_]:
        if ax is None or ax.get_legend() is None:
            continue
        box = ax.get_legend().get_window_extent()
        for line in ax.get_lines():
            xy = line.get_xydata()
            t = np.linspace(0, len(xy) - 1, 50 * len(xy))  # along the segments
            dense = np.column_stack(
                [np.interp(t, np.arange(len(xy)), xy[:, k]) for k in (0, 1)]
            )
            pts = ax.transData.transform(dense)
            inside = (
                (pts[:, 0] > box.x0)
                & (pts[:, 0] < box.x1)
                & (pts[:, 1] > box.y0)
                & (pts[:, 1] < box.y1)
            )
            assert not inside.any(), f"the legend covers {line.get_label()!r}"
