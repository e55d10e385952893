# SPDX-License-Identifier: MIT
"""Per-cell calibration error (beta-calibration) with the worst cells' diagrams."""

import inspect
import math
import warnings
from types import SimpleNamespace

import numpy as np

from ..._docstrings import fill_doc
from ...bounds import points_per_bin_for_epsilon
from .._beta_calibration import (
    _cell_rows,
    _check_cells,
    beta_calibration_error,
    cell_calibration_table,
)
from .._calibration_error import reliability_table
from .._calibration_tests import calibration_test
from ._base import _DisplayMixin, _legend_below
from .reliability import ReliabilityDisplay

#: Thm 3.1 target behind ``min_count="auto"``: a cell is shown when one bin
#: holding all of it would be guaranteed within this epsilon of its accuracy.
AUTO_EPSILON = 0.1
AUTO_ALPHA = 0.1


def auto_min_count(n_samples):
    """Smallest cell size that Thm 3.1 guarantees to ``AUTO_EPSILON``.

    The ``b`` of :func:`~sklearn_betacal.bounds.points_per_bin_for_epsilon`
    for ``epsilon=0.1`` and ``alpha=0.1`` with ``N = n_samples``: with
    probability 0.9, every cell of at least ``b`` rows has its accuracy
    estimated within 0.1 simultaneously over all cells. When even ``b = N``
    does not reach it, ``N`` (then only a cell holding every row qualifies).
    """
    n_samples = int(n_samples)
    if n_samples < 2:
        return max(n_samples, 1)
    try:
        return points_per_bin_for_epsilon(AUTO_EPSILON, n_samples, alpha=AUTO_ALPHA)
    except ValueError:
        return n_samples


#: With no cell as large as Thm 3.1 asks, ``min_count="auto"`` shows this many
#: of the largest cells (the default number of diagrams) instead of nothing.
AUTO_MIN_CELLS = 4


#: the parameters of :meth:`BetaCalibrationDisplay.from_predictions` that make
#: the numbers (the others draw them)
_COMPUTE_OPTIONS = (
    "sample_weight",
    "n_bins",
    "strategy",
    "alpha",
    "min_count",
    "fallback_cells",
    "cell_names",
    "n_resamples",
    "random_state",
    "test_method",
)


def _data_min_count(counts):
    """``min_count="auto"`` for these cell sizes: never an empty figure.

    The Thm 3.1 size (:func:`auto_min_count` of the total) when at least one
    cell reaches it; else the size of the ``AUTO_MIN_CELLS``-th largest cell
    (of all cells when there are fewer), so the largest cells are drawn.
    """
    counts = np.asarray(counts, dtype=np.int64)
    bound = auto_min_count(int(counts.sum()))
    if counts.size == 0 or counts.max() >= bound:
        return bound
    k = min(AUTO_MIN_CELLS, counts.size)
    return max(int(np.sort(counts)[::-1][k - 1]), 1)


def _warn_hidden(counts, min_count):
    """Warn when cells are left out of the figure (or are below Thm 3.1's size)."""
    counts = np.asarray(counts, dtype=np.int64)
    hidden = counts < min_count
    bound = auto_min_count(int(counts.sum()))
    parts = []
    if hidden.any():
        parts.append(
            f"{int(hidden.sum())} of {counts.size} cells ({int(counts[hidden].sum())} "
            f"rows) have fewer than min_count={min_count} rows and are not drawn; "
            "pass min_count=1 to draw every cell"
        )
    if min_count < bound and counts.size and counts.max() < bound:
        parts.append(
            f"no cell has the {bound} rows that pin its accuracy to +-{AUTO_EPSILON} "
            f"(Thm 3.1, alpha={AUTO_ALPHA}), so the largest cells are drawn with "
            "wider error bars"
        )
    if parts:
        warnings.warn(
            "BetaCalibrationDisplay: " + "; ".join(parts) + ".",
            UserWarning,
            stacklevel=4,
        )


def _kdtree_paths(tree, prefix):
    """Leaf id -> its split path ("x3<=0.12, x0>-0.4") in a fitted kd-tree."""
    axis, threshold = tree["feature"], tree["threshold"]
    left, right = tree["children_left"], tree["children_right"]
    cell = tree["cell"]
    paths, stack = {}, [(0, ())]
    while stack:
        node, path = stack.pop()
        if axis[node] < 0:
            if cell[node] >= 0:
                paths[int(cell[node])] = ", ".join(path) or "all rows"
            continue
        cut = f"{prefix}{axis[node]}"
        stack.append((left[node], (*path, f"{cut}<={threshold[node]:.3g}")))
        stack.append((right[node], (*path, f"{cut}>{threshold[node]:.3g}")))
    return paths


def cell_descriptions(partitioner, cells):
    """What each cell id is: a group name, a kd-tree path or a cluster.

    ``partitioner`` is a fitted partitioner of this package (or a
    ``FrozenEstimator`` of one); ``-1`` is "outside every cell". Unknown
    partitioners give ``"cell <id>"``.
    """
    part = getattr(partitioner, "estimator", partitioner)
    kind = type(part).__name__
    names = {}
    if kind == "KDTreePartitioner":
        prefix = "pc" if getattr(part, "split_axis", "") == "pca" else "x"
        paths = _kdtree_paths(part.tree_, prefix)
        names = {c: f"kd {paths.get(int(c), c)}" for c in cells}
    elif kind == "GroupColumnPartitioner":
        groups = part.groups_
        names = {c: str(groups[c]) for c in cells if 0 <= c < len(groups)}
    elif kind == "ClusterPartitioner":
        labels = part.cluster_labels_
        names = {c: f"cluster {labels[c]}" for c in cells if 0 <= c < len(labels)}
    elif kind == "CrossPartitioner":
        for c in cells:
            if not 0 <= c < part.n_cells_:
                continue
            parts = []
            for (_, comp, _), code in zip(
                part.partitioners_, part.cell_codes_[c], strict=True
            ):
                parts.append(cell_descriptions(comp, [int(code)])[int(code)])
            names[c] = " | ".join(parts)
    return {
        c: names.get(c, "outside every cell" if c == -1 else f"cell {c}") for c in cells
    }


def _fallback_cells(estimator, cells):
    """Cells whose rows the estimator calibrates with its root calibrator."""
    tables = getattr(estimator, "cell_tables_", None)
    if tables is not None:  # beta-binning: a cell without its own table
        return [c for c in cells if c not in tables]
    fallback = set(np.asarray(getattr(estimator, "fallback_cells_", [])).tolist())
    return [c for c in cells if c == -1 or c in fallback]


def _short(text, width=38):
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"


class BetaCalibrationDisplay(_DisplayMixin):
    """Per-cell calibration error, worst cells first, with their diagrams.

    beta-calibration asks for calibration within every cell of a partition
    (paper Def. 2.3); this display shows where it fails. Left: one row per
    cell large enough to say something (``min_count`` rows), ordered by its
    binned calibration error -- the term that CE(h; beta) averages -- with a
    bootstrap interval, the noise level of a perfectly calibrated cell of
    the same size (a cell left of its tick is indistinguishable from a
    calibrated one), the cell size, and a hollow marker for cells that the
    calibrator sends to its root (whole-data) calibrator, and a star on the
    cells whose Kuiper calibration test
    (:func:`~sklearn_betacal.metrics.calibration_test`) rejects at
    ``alpha`` after the multiplicity adjustment. Right: reliability diagrams
    of the worst cells, with shared axes. Each cell is named by what it is:
    its group, its kd-tree path, or its cluster.

    The numbers come from :func:`~sklearn_betacal.metrics.cell_calibration_table`
    and :func:`~sklearn_betacal.metrics.reliability_table`.

    Read more in the :ref:`User Guide <displays>`.

    Parameters
    ----------
    cell_table : pandas.DataFrame
        Output of :func:`~sklearn_betacal.metrics.cell_calibration_table`.
    reliability_tables : dict, default=None
        Cell -> :func:`~sklearn_betacal.metrics.reliability_table` of its
        rows, for the cells that may get a diagram.
    cell_names : dict, default=None
        Cell -> description shown in the plot; default ``str(cell)``.
    fallback_cells : sequence, default=()
        Cells calibrated by the root calibrator (marked hollow).
    min_count : int, default=1
        Cells with fewer rows are left out of the plot (but stay in
        ``cell_table``).
    beta_ce : float, default=None
        CE(h; beta) over all cells, drawn as a vertical line.
    name : str, default=None
        Name of the confidences (calibrator) in the title.
    alpha : float, default=0.05
        Miscoverage of the intervals in the tables, and level of the tests.
    test_table : pandas.DataFrame, default=None
        The per-cell ``table`` of
        :func:`~sklearn_betacal.metrics.calibration_test`; cells whose
        ``pvalue_adjusted`` is below ``alpha`` are starred. ``None``: no
        stars.

    Attributes
    ----------
    cells_ : list
        The cells drawn, top to bottom (worst first, unless ``order`` was
        given to :meth:`plot`).
    excluded_cells_ : list
        Cells with fewer than ``min_count`` rows.
    significant_cells_ : list
        Drawn cells whose adjusted p-value is below ``alpha``.
    significant_markers_ : matplotlib PathCollection or None
        The stars on those cells (None when there is none).
    errorbar_ : matplotlib ErrorbarContainer
        Per-cell errors and their bootstrap intervals.
    noise_ : matplotlib PathCollection
        The noise-level ticks.
    fallback_markers_ : matplotlib PathCollection or None
        Hollow markers on the root-fallback cells (None when none is drawn).
    panel_displays_ : list of ReliabilityDisplay
        The diagrams of the worst cells.
    ax_ : matplotlib Axes
        The per-cell error axes.
    panel_axes_ : list of matplotlib Axes
    figure_ : matplotlib Figure

    See Also
    --------
    sklearn_betacal.metrics.cell_calibration_table : The numbers drawn.
    ReliabilityDisplay : The diagram of all rows together.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import BetaCalibrationDisplay
    >>> rng = np.random.default_rng(0)
    >>> cells = np.repeat(["history", "science", "sport"], [600, 600, 30])
    >>> p = rng.uniform(0.3, 1, size=cells.size)
    >>> y = rng.uniform(size=cells.size) < np.where(cells == "science", p - 0.25, p)
    >>> disp = BetaCalibrationDisplay.from_predictions(
    ...     y, p, cells=cells, min_count=100, random_state=0)
    >>> disp.cells_, disp.excluded_cells_
    (['science', 'history'], ['sport'])
    """

    def __init__(
        self,
        cell_table,
        *,
        reliability_tables=None,
        cell_names=None,
        fallback_cells=(),
        min_count=1,
        beta_ce=None,
        name=None,
        alpha=0.05,
        test_table=None,
    ):
        self.test_table = test_table
        self.cell_table = cell_table
        self.reliability_tables = reliability_tables
        self.cell_names = cell_names
        self.fallback_cells = fallback_cells
        self.min_count = min_count
        self.beta_ce = beta_ce
        self.name = name
        self.alpha = alpha

    def _cell_order(self, order):
        table = self.cell_table
        large = table.index[table["count"].to_numpy() >= self.min_count]
        excluded = [c for c in table.index.tolist() if c not in set(large)]
        if order is None:
            errors = table.loc[large, "calibration_error"].to_numpy()
            # stable: ties keep the cell order of the table
            ranked = np.argsort(-np.nan_to_num(errors, nan=-1.0), kind="stable")
            order = large[ranked].tolist()
        else:
            missing = [c for c in order if c not in table.index]
            if missing:
                raise ValueError(
                    f"order names cells that are not in the table: {missing[:5]}."
                )
            order = list(order)
        return order, excluded

    def _label(self, cell):
        names = self.cell_names or {}
        return _short(names.get(cell, cell))

    def plot(
        self,
        *,
        ax=None,
        panel_axes=None,
        n_panels=4,
        max_cells=25,
        order=None,
        name=None,
        legend=True,
    ):
        """Draw the per-cell errors and the worst cells' diagrams.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes for the per-cell errors. ``None`` creates a figure with
            that axes on the left and ``n_panels`` diagrams on the right.
        panel_axes : sequence of matplotlib Axes, default=None
            Axes for the diagrams when ``ax`` is given (none without it).
        n_panels : int, default=4
            Number of worst cells with a diagram (when the figure is created
            here).
        max_cells : int, default=25
            At most this many cells are listed (the worst ones).
        order : sequence, default=None
            Cells to list, in this order (e.g. ``raw_display.cells_``, to
            show the same cells before and after calibration); default: the
            cells with at least ``min_count`` rows, worst first.
        name : str, default=None
            Overrides the ``name`` given at construction.
        legend : bool, default=True
            Draw the legend (what the markers, bars and ticks mean).

        Returns
        -------
        display : BetaCalibrationDisplay
        """
        name = self.name if name is None else name
        cells, self.excluded_cells_ = self._cell_order(order)
        self.cells_ = cells[:max_cells]
        if ax is None:
            fig, ax, panel_axes = self._layout(n_panels, len(self.cells_))
        self.ax_, self.figure_ = ax, ax.figure
        self._plot_cells(ax, name, legend)
        panel_axes = [] if panel_axes is None else list(np.ravel(panel_axes))
        self.panel_axes_, self.panel_displays_ = panel_axes, []
        tables = self.reliability_tables or {}
        worst = [c for c in self.cells_ if c in tables][: len(panel_axes)]
        for pax, cell in zip(panel_axes, worst, strict=False):
            row = self.cell_table.loc[cell]
            disp = ReliabilityDisplay(
                tables[cell], ece=row["calibration_error"], alpha=self.alpha
            ).plot(ax=pax, legend=False)
            pax.set_title(
                f"{self._label(cell)}\nn = {int(row['count'])}, "
                f"CE = {row['calibration_error']:.3f}",
                fontsize="small",
            )
            self.panel_displays_.append(disp)
        for pax in panel_axes[len(worst) :]:
            pax.set_axis_off()
            if not worst and pax is panel_axes[0]:
                pax.text(
                    0.5,
                    0.5,
                    f"no cell has >= {self.min_count} rows:\ntoo small to judge",
                    ha="center",
                    va="center",
                    transform=pax.transAxes,
                )
        return self

    @staticmethod
    def _layout(n_panels, n_rows, figure=None):
        """Per-cell axes on the left, ``n_panels`` shared diagrams on the right.

        Into ``figure`` when given (e.g. a Figure not registered with pyplot),
        else into a new pyplot figure.
        """
        ncols = 2 if n_panels > 1 else n_panels
        nrows = max(math.ceil(n_panels / 2), 1)
        size = (5.5 + 3.2 * ncols, max(3.2 * nrows, 0.3 * n_rows + 1.8, 3.5))
        if figure is None:
            import matplotlib.pyplot as plt

            fig = plt.figure(figsize=size, layout="constrained")
        else:
            fig = figure
            fig.set_size_inches(*size)
        grid = fig.add_gridspec(nrows, 1 + ncols, width_ratios=[1.7] + [1] * ncols)
        ax = fig.add_subplot(grid[:, 0])
        panel_axes = []
        for k in range(n_panels):
            share = panel_axes[0] if panel_axes else None
            panel_axes.append(
                fig.add_subplot(grid[k // 2, 1 + k % 2], sharex=share, sharey=share)
            )
        return fig, ax, panel_axes

    def _plot_cells(self, ax, name, legend):
        table = self.cell_table.loc[self.cells_] if self.cells_ else self.cell_table[:0]
        ypos = np.arange(len(self.cells_))
        ce = table["calibration_error"].to_numpy()
        xerr = np.vstack(
            [ce - table["ce_lower"].to_numpy(), table["ce_upper"].to_numpy() - ce]
        )
        xerr = np.where(np.isfinite(xerr), np.maximum(xerr, 0), 0)
        self.errorbar_ = ax.errorbar(
            ce,
            ypos,
            xerr=xerr,
            fmt="o",
            ms=5,
            capsize=2,
            label="CE of the cell, bootstrap interval",
        )
        color = self.errorbar_.lines[0].get_color()
        fallback = np.isin(
            np.asarray(self.cells_, dtype=object),
            np.asarray(list(self.fallback_cells), dtype=object),
        )
        self.fallback_markers_ = None
        if fallback.any():
            self.fallback_markers_ = ax.scatter(
                ce[fallback],
                ypos[fallback],
                s=60,
                facecolor="white",
                edgecolor=color,
                zorder=3,
                label="root fallback (no own calibrator)",
            )
        self.significant_cells_, self.significant_markers_ = [], None
        if self.test_table is not None and self.cells_:
            adjusted = self.test_table["pvalue_adjusted"].reindex(self.cells_)
            sig = (adjusted < self.alpha).to_numpy()
            pairs = zip(self.cells_, sig, strict=True)
            self.significant_cells_ = [c for c, s in pairs if s]
            if sig.any():
                self.significant_markers_ = ax.scatter(
                    ce[sig],
                    ypos[sig],
                    marker="*",
                    s=110,
                    color="C3",
                    zorder=4,
                    label=f"miscalibrated: Kuiper test, adjusted p < {self.alpha:g}",
                )
        self.noise_ = ax.scatter(
            table["noise_level"].to_numpy(),
            ypos,
            marker="|",
            s=140,
            color="0.45",
            label=f"noise level of a calibrated cell ({100 * (1 - self.alpha):g}%)",
        )
        if self.beta_ce is not None:
            ax.axvline(
                self.beta_ce,
                ls=":",
                color="0.3",
                label=f"CE(h; beta) = {self.beta_ce:.3f}",
            )
        ax.set_yticks(
            ypos,
            [
                f"{self._label(c)}  (n={int(n)})"
                for c, n in zip(self.cells_, table["count"], strict=True)
            ],
            fontsize="small",
        )
        ax.set_ylim(max(len(self.cells_), 1) - 0.5, -0.5)  # worst on top
        ax.set_xlim(left=0)
        ax.set_xlabel("binned calibration error within the cell")
        shown = f"{len(self.cells_)} cells with >= {self.min_count} rows"
        if self.excluded_cells_:
            shown += f"; {len(self.excluded_cells_)} smaller cells not shown"
        ax.set_title(("" if name is None else f"{name}\n") + shown, fontsize="small")
        if legend:
            _legend_below(ax, offset=0.09, fontsize="x-small")

    @fill_doc
    @classmethod
    def from_predictions(
        cls,
        y_true,
        y_prob,
        *,
        cells,
        sample_weight=None,
        n_bins=10,
        strategy="uniform",
        alpha=0.05,
        min_count="auto",
        fallback_cells=(),
        cell_names=None,
        n_resamples=200,
        random_state=None,
        test_method="holm",
        pos_label=None,
        name=None,
        ax=None,
        panel_axes=None,
        n_panels=4,
        max_cells=25,
        order=None,
    ):
        """Per-cell display of confidences ``y_prob`` with cell ids ``cells``.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            Correctness labels (0/1 or bool), or labels with ``pos_label``.
        y_prob : array-like of shape (n_samples,)
            Confidences in ``[0, 1]`` (raw or calibrated).
        cells : array-like of shape (n_samples,)
            The cell of each row: cell ids of a partitioner or names.
        %(sample_weight)s
        %(cell_binning)s
        alpha : float, default=0.05
            Miscoverage of the intervals.
        min_count : int or "auto", default="auto"
            Cells with fewer rows are not drawn (with a warning that says
            how many). ``"auto"``: the cell size that Thm 3.1 guarantees to
            within 0.1 at ``alpha = 0.1``
            (:func:`~sklearn_betacal.bounds.points_per_bin_for_epsilon` with
            ``N`` the number of rows), i.e. cells whose accuracy is pinned
            down to +-0.1 simultaneously; when no cell is that large, the
            size of the fourth largest cell (the largest cells are drawn,
            never an empty figure, with a warning).
        fallback_cells : sequence, default=()
            Cells calibrated by a root calibrator (marked).
        cell_names : dict, default=None
            Cell -> description; default: the cell value itself.
        n_resamples : int, default=200
            Resamples for the intervals and noise levels.
        random_state : int, RandomState instance or None, default=None
            Seeds the resamples.
        test_method : {"holm", "fdr_bh"}, default="holm"
            Multiplicity adjustment of the per-cell Kuiper tests
            (:func:`~sklearn_betacal.metrics.calibration_test`); cells whose
            adjusted p-value is below ``alpha`` are starred.
        pos_label : int, float, bool or str, default=None
            The label meaning "correct".
        name : str, default=None
            Name of the confidences, shown in the title.
        ax, panel_axes, n_panels, max_cells, order
            See :meth:`plot`.

        Returns
        -------
        display : BetaCalibrationDisplay
        """
        y_true, y_prob, name = cls._check_predictions(y_true, y_prob, pos_label, name)
        arguments = locals()
        disp = cls._compute(
            y_true,
            y_prob,
            cells=cells,
            name=name,
            **{option: arguments[option] for option in _COMPUTE_OPTIONS},
        )
        return disp.plot(
            ax=ax,
            panel_axes=panel_axes,
            n_panels=n_panels,
            max_cells=max_cells,
            order=order,
        )

    @classmethod
    def _compute(cls, y_true, y_prob, *, cells, name=None, **options):
        """The display's numbers, without drawing (no matplotlib needed).

        ``options``: the parameters of :meth:`from_predictions` that make the
        numbers (:data:`_COMPUTE_OPTIONS`), with its defaults.
        """
        unknown = set(options) - set(_COMPUTE_OPTIONS)
        if unknown:
            raise TypeError(f"unexpected options {sorted(unknown)}")
        parameters = inspect.signature(cls.from_predictions).parameters
        o = SimpleNamespace(
            **{k: options.get(k, parameters[k].default) for k in _COMPUTE_OPTIONS}
        )
        common = {
            "sample_weight": o.sample_weight,
            "n_bins": o.n_bins,
            "strategy": o.strategy,
        }
        table = cell_calibration_table(
            y_true,
            y_prob,
            cells=cells,
            alpha=o.alpha,
            n_resamples=o.n_resamples,
            random_state=o.random_state,
            **common,
        )
        beta_ce = beta_calibration_error(y_true, y_prob, cells=cells, **common)
        test_table = calibration_test(
            y_true,
            y_prob,
            sample_weight=o.sample_weight,
            cells=cells,
            method=o.test_method,
            alpha=o.alpha,
        ).table
        min_count = o.min_count
        if isinstance(min_count, str):
            if min_count != "auto":
                raise ValueError(
                    f"min_count must be an int or 'auto'; got {min_count!r}."
                )
            min_count = _data_min_count(table["count"].to_numpy())
        _warn_hidden(table["count"].to_numpy(), min_count)
        y_arr, p_arr = np.asarray(y_true), np.asarray(y_prob)
        w_arr = None if o.sample_weight is None else np.asarray(o.sample_weight)
        # the table's rows are the cells in code order, as _cell_rows yields them
        codes, n_cells = _check_cells(cells, p_arr.shape[0])
        drawn = table["count"].to_numpy() >= min_count
        tables = {}
        for cell, draw, rows in zip(
            table.index, drawn, _cell_rows(codes, n_cells), strict=True
        ):
            if not draw:
                continue
            tables[cell] = reliability_table(
                y_arr[rows],
                p_arr[rows],
                alpha=o.alpha,
                n_bins=o.n_bins,
                strategy=o.strategy,
                sample_weight=None if w_arr is None else w_arr[rows],
            )
        return cls(
            table,
            reliability_tables=tables,
            cell_names=o.cell_names,
            fallback_cells=o.fallback_cells,
            min_count=min_count,
            beta_ce=beta_ce,
            name=name,
            alpha=o.alpha,
            test_table=test_table,
        )

    @classmethod
    def from_estimator(
        cls, estimator, X, y, *, cells=None, pos_label=None, name=None, **kwargs
    ):
        """Per-cell display of a fitted calibrator on ``(X, y)``.

        Parameters
        ----------
        estimator : fitted estimator with ``predict_proba``
            A group-conditional calibrator, a ``Pipeline`` ending in one
            (e.g. ``betacal fit``'s reader and calibrator) or a
            ``CalibratedClassifier`` with one (any estimator the beta-CE
            scorer reads cells from), whose cells come from ``apply`` (of the
            last step, on ``X`` transformed by the steps before it; of the
            CalibratedClassifier's first calibrator) and are named by its
            partitioner -- a group column's cells *are* its values, as in
            ``from_predictions(..., cells=column)`` -- with its
            root-fallback cells marked; or any calibrator or classifier
            together with ``cells``.
        X : array-like
            Input of ``estimator.predict_proba``.
        y : array-like of shape (n_samples,)
            True labels.
        cells : array-like of shape (n_samples,), default=None
            The cell of each row; required when the estimator has no
            ``apply``.
        pos_label : int, float, bool or str, default=None
            The class whose probability is the confidence; default
            ``estimator.classes_[1]``.
        name : str, default=None
            Name of the confidences; default the estimator's class name.
        **kwargs : dict
            The other parameters of :meth:`from_predictions` (weights,
            binning, ``min_count``, resampling, the test, ``ax`` ...),
            passed on unchanged; ``fallback_cells`` and ``cell_names``
            default to the estimator's.

        Returns
        -------
        display : BetaCalibrationDisplay
        """
        y_true, y_prob, name = cls._response(
            estimator, X, y, pos_label=pos_label, name=name
        )
        fallback, cell_names = (), None
        if cells is None:
            from sklearn.pipeline import Pipeline

            # a Pipeline ending in a calibrator (a reader, an embedder before
            # it): its cells are the last step's, as the scorers take them
            from ..._calibrated import CalibratedClassifier

            final, Xt = estimator, X
            if isinstance(estimator, Pipeline):
                final, Xt = estimator[-1], estimator[:-1].transform(X)
            if isinstance(final, CalibratedClassifier):
                # its (first) calibrator's partition, as the scorer takes it
                from .._scorers import _calibrated_classifier_cells

                try:
                    cells = _calibrated_classifier_cells(final, Xt)
                except TypeError as exc:
                    raise ValueError(f"{exc} Or pass cells=.") from None
                final = final.calibrated_classifiers_[0]["calibrators"][0]
            elif not hasattr(final, "apply"):
                raise ValueError(
                    f"{type(final).__name__} has no apply method giving the "
                    "cell of each row; pass cells= (one cell id or name per row)."
                )
            else:
                cells = final.apply(Xt)
            cells = np.asarray(cells).reshape(-1)
            ids = np.unique(cells).tolist()
            fallback = _fallback_cells(final, ids)
            partitioner = getattr(final, "partitioner_", None)
            if partitioner is not None:
                cell_names = cell_descriptions(partitioner, ids)
                values = getattr(
                    getattr(partitioner, "estimator", partitioner), "groups_", None
                )
                if values is not None:
                    # a group column: the cells are its values, as in
                    # from_predictions(..., cells=column) (order= across both)
                    lut = np.empty(len(values) + 1, dtype=object)
                    lut[:-1] = list(values)
                    lut[-1] = cell_names.get(-1, "outside every cell")
                    cells = lut[cells]
                    fallback = [lut[c] for c in fallback]
                    cell_names = None
        kwargs = {"fallback_cells": fallback, "cell_names": cell_names, **kwargs}
        return cls.from_predictions(y_true, y_prob, cells=cells, name=name, **kwargs)
