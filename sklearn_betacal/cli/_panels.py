# SPDX-License-Identifier: MIT
"""Report figures: the displays composed side by side with shared axes.

Used by ``betacal demo`` and ``betacal report --plot``. Every figure is a
:class:`matplotlib.figure.Figure` that is not registered with pyplot, so no
backend is chosen or needed and nothing stays open; the caller saves it.
Each function takes the labels once and a mapping ``name -> confidences``
(raw first, then the calibrators) so that all calibrators are compared on the
same rows.
"""

import math

import numpy as np

from ..metrics._plot._base import check_matplotlib_support
from ..metrics._plot.accuracy_confidence import AccuracyConfidenceDisplay
from ..metrics._plot.beta_reliability import BetaCalibrationDisplay
from ..metrics._plot.reliability import ReliabilityDisplay

_PANEL = 2.6  # inches per small panel


def _tidy_grid(axes, n_used):
    """Hide the unused panels of a grid; keep tick labels on its outer edge."""
    for ax in axes.flat[n_used:]:
        ax.set_axis_off()
    for ax in axes.flat:
        ax.label_outer()


def _new_figure(width, height):
    check_matplotlib_support("betacal report figures")
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _figure(nrows, ncols, width, height, **subplots_kw):
    fig = _new_figure(width, height)
    axes = fig.subplots(nrows, ncols, squeeze=False, **subplots_kw)
    return fig, axes


def _grid_shape(n, ncols):
    ncols = max(1, min(ncols, n))
    return math.ceil(n / ncols), ncols


def reliability_grid(y_true, curves, *, title, n_bins=10, strategy="uniform", ncols=4):
    """One reliability diagram per confidence, side by side, shared axes."""
    nrows, ncols = _grid_shape(len(curves), ncols)
    fig, axes = _figure(
        nrows,
        ncols,
        _PANEL * ncols + 0.4,
        _PANEL * nrows + 0.9,
        sharex=True,
        sharey=True,
    )
    displays = {}
    for ax, (name, p) in zip(axes.flat, curves.items(), strict=False):
        disp = ReliabilityDisplay.from_predictions(
            y_true,
            p,
            n_bins=n_bins,
            strategy=strategy,
            name=name,
            ax=ax,
            legend=False,
        )
        ax.set_title(f"{name}\nECE = {disp.ece:.3f}", fontsize="small")
        displays[name] = disp
    _tidy_grid(axes, len(curves))
    fig.suptitle(
        f"{title}\nbars: 95% Clopper-Pearson interval of the accuracy; marker "
        "area: share of answers in the bin; dashed: perfect calibration",
        fontsize="small",
    )
    return fig, displays


def cells_grid(
    y_true,
    curves,
    groups,
    *,
    title,
    min_count="auto",
    n_bins=10,
    cell_names=None,
    random_state=0,
    ncols=4,
    max_cells=25,
):
    """Per-cell errors of each confidence side by side, in the raw cell order.

    The first confidence (the raw one) orders the cells, worst first; every
    other panel lists the same cells in the same rows, so a dot moving left
    is a cell that calibration fixed. x- and y-axes are shared.
    """
    names = list(curves)
    nrows, ncols = _grid_shape(len(names), ncols)
    common = {
        "cells": groups,
        "n_bins": n_bins,
        "cell_names": cell_names,
        "random_state": random_state,
    }
    first = BetaCalibrationDisplay._compute(
        y_true, curves[names[0]], min_count=min_count, **common
    )
    order, excluded = first._cell_order(None)
    order = order[:max_cells]
    rows = max(len(order), 1)
    fig, axes = _figure(
        nrows,
        ncols,
        3.3 * ncols + 2.4,
        (0.24 * rows + 1.3) * nrows + 0.9,
        sharex=True,
        sharey=True,
    )
    displays = {}
    for k, (ax, name) in enumerate(zip(axes.flat, names, strict=False)):
        disp = (
            first
            if k == 0
            else BetaCalibrationDisplay._compute(
                y_true, curves[name], min_count=first.min_count, **common
            )
        )
        disp.plot(ax=ax, order=order, name=name, legend=False)
        ax.set_title(f"{name}\nCE(h; beta) = {disp.beta_ce:.3f}", fontsize="small")
        displays[name] = disp
    _tidy_grid(axes, len(names))
    handles, labels = axes.flat[0].get_legend_handles_labels()
    labels = [lab.split(" = ")[0] if lab.startswith("CE(h") else lab for lab in labels]
    fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncols=4,
        fontsize="x-small",
        frameon=False,
    )
    note = f"cells with >= {first.min_count} rows, worst first for {names[0]}"
    if excluded:
        note += f"; {len(excluded)} smaller cells not shown"
    if not order:
        note += " -- no cell is large enough to judge"
    fig.suptitle(f"{title}\n{note}", fontsize="small")
    return fig, displays


def cells_figure(disp, *, n_panels=4, max_cells=25):
    """A computed :class:`BetaCalibrationDisplay` drawn into a new Figure."""
    fig = _new_figure(1, 1)  # _layout sets the size
    n_rows = min(len(disp._cell_order(None)[0]), max_cells)
    _, ax, panel_axes = disp._layout(n_panels, n_rows, figure=fig)
    disp.plot(ax=ax, panel_axes=panel_axes, max_cells=max_cells)
    return fig


def reliability_figure(y_true, y_prob, *, name, n_bins=10, strategy="uniform"):
    """One reliability diagram with its count histogram, in a new Figure."""
    fig, axes = _figure(2, 1, 5, 5.6, sharex=True, height_ratios=[3, 1])
    disp = ReliabilityDisplay.from_predictions(
        y_true,
        y_prob,
        n_bins=n_bins,
        strategy=strategy,
        name=name,
        ax=axes[0, 0],
        hist_ax=axes[1, 0],
    )
    return fig, disp


def worst_cells_grid(
    y_true, curves, groups, cells, *, title, n_bins=10, cell_names=None
):
    """Reliability diagrams of the given cells (rows) for every confidence
    (columns), all axes shared: did calibration fix the worst cells?"""
    names, cells = list(curves), list(cells)
    if not cells:
        return None
    fig, axes = _figure(
        len(cells),
        len(names),
        _PANEL * len(names) + 0.6,
        _PANEL * len(cells) + 0.9,
        sharex=True,
        sharey=True,
    )
    g = np.asarray(groups).reshape(-1)
    labels = cell_names or {}
    for i, cell in enumerate(cells):
        rows = g == cell
        for j, name in enumerate(names):
            ax = axes[i, j]
            disp = ReliabilityDisplay.from_predictions(
                np.asarray(y_true)[rows],
                np.asarray(curves[name])[rows],
                n_bins=n_bins,
                ax=ax,
                legend=False,
            )
            head = f"{name}\n" if i == 0 else ""
            ax.set_title(f"{head}ECE = {disp.ece:.3f}", fontsize="small")
            if j == 0:
                ax.set_ylabel(
                    f"{str(labels.get(cell, cell))[:28]} (n={int(rows.sum())})\n"
                    "accuracy",
                    fontsize="small",
                )
            ax.label_outer()
    fig.suptitle(
        f"{title}\nrows: the worst cells of {names[0]}; bars: 95% "
        "Clopper-Pearson interval; marker area: share of the cell's answers",
        fontsize="small",
    )
    return fig


def selective_figure(y_true, curves, *, title):
    """Accuracy-confidence and risk-coverage curves of every confidence."""
    fig, axes = _figure(1, 2, 10, 4.2)
    displays = {}
    for name, p in curves.items():
        displays[name] = AccuracyConfidenceDisplay.from_predictions(
            y_true, p, name=name, ax=axes[0]
        )
    fig.suptitle(title, fontsize="small")
    return fig, displays


def save_png(fig, path, dpi=110):
    """Write ``fig`` to ``path`` as PNG atomically (temp file + rename)."""
    from .._io import atomic_write

    atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=dpi))


def file_figures(
    out_dir,
    y_true,
    y_prob,
    *,
    name,
    groups=None,
    n_bins=10,
    strategy="uniform",
    random_state=0,
    min_count="auto",
):
    """The figures of ``betacal report --plot``: ``{file name: caption}``.

    ``reliability.png`` and ``selective.png`` for all rows; with ``groups``,
    ``groups.png``: the per-group errors of the groups of at least
    ``min_count`` rows (``--min-count``), worst first, with the worst groups'
    diagrams.
    """
    written = {}
    fig, _ = reliability_figure(
        y_true, y_prob, name=name, n_bins=n_bins, strategy=strategy
    )
    save_png(fig, out_dir / "reliability.png")
    written["reliability.png"] = "reliability diagram, all rows"
    fig, _ = selective_figure(y_true, {name: y_prob}, title="selective answering")
    save_png(fig, out_dir / "selective.png")
    written["selective.png"] = "accuracy-confidence and risk-coverage curves"
    if groups is not None:
        disp = BetaCalibrationDisplay._compute(
            y_true,
            y_prob,
            cells=groups,
            n_bins=n_bins,
            strategy=strategy,
            random_state=random_state,
            name=name,
            min_count=min_count,
        )
        save_png(cells_figure(disp), out_dir / "groups.png")
        written["groups.png"] = "calibration error per group, worst first"
    return written


def demo_figures(out_dir, kind, y_true, curves, groups, *, n_bins=10, random_state=0):
    """The figures of ``betacal demo`` for one confidence kind.

    ``curves`` maps every calibrator (raw first) to its confidences on the
    same rows; ``groups`` names each row's group. Returns
    ``({file name: caption}, notes)``; ``notes`` says why a figure is
    missing (no group large enough to judge).
    """
    written, notes = {}, []
    title = f"{kind} confidence"
    fig, _ = reliability_grid(
        y_true, curves, title=f"{title}: all test rows", n_bins=n_bins
    )
    save_png(fig, out_dir / f"reliability_{kind}.png")
    written[f"reliability_{kind}.png"] = f"{kind}: reliability diagrams, all test rows"
    fig, displays = cells_grid(
        y_true,
        curves,
        groups,
        title=f"{title}: calibration error per group",
        n_bins=n_bins,
        random_state=random_state,
    )
    first = next(iter(displays.values()))
    if first.cells_:
        save_png(fig, out_dir / f"cells_{kind}.png")
        written[f"cells_{kind}.png"] = (
            f"{kind}: calibration error per group, worst first for the raw "
            "confidence, the same rows for every calibrator"
        )
        fig = worst_cells_grid(
            y_true,
            curves,
            groups,
            first.cells_[:3],
            title=f"{title}: the worst groups",
            n_bins=n_bins,
        )
        save_png(fig, out_dir / f"worst_cells_{kind}.png")
        written[f"worst_cells_{kind}.png"] = (
            f"{kind}: reliability diagrams of the worst groups (rows) per calibrator"
        )
    else:
        notes.append(
            f"{kind}: no group has the {first.min_count} rows that Thm 3.1 "
            f"needs to pin its accuracy to +-0.1 ({len(y_true)} pooled test "
            "rows); run more seeds for the per-group figures."
        )
    fig, _ = selective_figure(y_true, curves, title=f"{title}: selective answering")
    save_png(fig, out_dir / f"selective_{kind}.png")
    written[f"selective_{kind}.png"] = f"{kind}: accuracy-confidence and risk-coverage"
    return written, notes
