# SPDX-License-Identifier: MIT
"""Reliability diagram with bin counts and exact intervals."""

import numpy as np

from ..._docstrings import fill_doc
from .._calibration_error import expected_calibration_error, reliability_table
from ._base import _DisplayMixin, _unit_axes

_REF_LABEL = "perfect calibration"


class ReliabilityDisplay(_DisplayMixin):
    """Reliability diagram: accuracy against confidence per bin, with counts.

    One point per non-empty bin at (mean confidence, accuracy) with its exact
    Clopper-Pearson interval, the diagonal of perfect calibration, and the
    bin counts -- as a histogram under the diagram, or as marker areas when
    the diagram is drawn into a single given axes -- so that a bin of three
    answers never looks like a measurement. The legend gives the ECE.
    All numbers come from :func:`~sklearn_betacal.metrics.reliability_table`
    and :func:`~sklearn_betacal.metrics.expected_calibration_error`.

    Use :meth:`from_predictions` or :meth:`from_estimator` to create one.
    Several calibrators are compared by drawing into the same axes
    (``ax=disp.ax_, hist_ax=disp.hist_ax_``: overlaid) or into the axes of
    one ``plt.subplots`` grid (side by side, ``sharey=True``).

    Read more in the :ref:`User Guide <displays>`.

    Parameters
    ----------
    table : pandas.DataFrame
        The output of :func:`~sklearn_betacal.metrics.reliability_table`.
    ece : float, default=None
        Expected calibration error shown in the legend; ``None`` omits it.
    name : str, default=None
        Name of the curve in the legend.
    alpha : float, default=0.05
        Miscoverage of the intervals in ``table`` (for the legend text).

    Attributes
    ----------
    line_ : matplotlib Line2D
        The curve through the non-empty bins.
    errorbar_ : matplotlib ErrorbarContainer
        The intervals.
    scatter_ : matplotlib PathCollection or None
        Markers with area proportional to the bin count (when no histogram
        axes is used).
    hist_ : matplotlib StepPatch or None
        The count histogram.
    ref_line_ : matplotlib Line2D or None
        The diagonal (None when it was already in the axes or not drawn).
    ax_ : matplotlib Axes
        The reliability diagram.
    hist_ax_ : matplotlib Axes or None
        The count histogram's axes.
    figure_ : matplotlib Figure

    See Also
    --------
    sklearn_betacal.metrics.reliability_table : The numbers drawn.
    BetaCalibrationDisplay : The same, per cell of a partition.
    sklearn.calibration.CalibrationDisplay : scikit-learn's curve, without
        counts or intervals.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import ReliabilityDisplay
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=500)
    >>> y = rng.uniform(size=500) < p ** 2           # overconfident
    >>> disp = ReliabilityDisplay.from_predictions(y, p, n_bins=5, name="raw")
    >>> disp.table["count"].tolist()
    [96, 82, 105, 100, 117]
    >>> disp.line_.get_label()
    'raw (ECE = 0.163)'
    """

    def __init__(self, table, *, ece=None, name=None, alpha=0.05):
        self.table = table
        self.ece = ece
        self.name = name
        self.alpha = alpha

    def plot(
        self, *, ax=None, hist_ax=None, name=None, ref_line=True, legend=True, **kwargs
    ):
        """Draw the diagram.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes of the diagram. ``None`` creates a figure with the diagram
            above a count histogram (``hist_ax_``).
        hist_ax : matplotlib Axes, default=None
            Axes for the count histogram when ``ax`` is given; without it the
            counts are shown as marker areas.
        name : str, default=None
            Legend name; defaults to the ``name`` given at construction.
        ref_line : bool, default=True
            Draw the diagonal (once per axes).
        legend : bool, default=True
            Draw the legend (name, ECE, what the bars and markers mean).
        **kwargs : dict
            Passed to :meth:`matplotlib.axes.Axes.plot` for the curve
            (``color``, ``marker``, ``linestyle`` ...).

        Returns
        -------
        display : ReliabilityDisplay
        """
        axes, name = self._validate_plot_params(
            ax=ax,
            name=name,
            nrows=2,
            sharex=True,
            figsize=(5, 5.6),
            gridspec_kw={"height_ratios": [3, 1]},
        )
        if ax is None:  # the diagram above its count histogram
            ax, hist_ax = axes
        self.ax_, self.hist_ax_, self.figure_ = ax, hist_ax, ax.figure
        label = self._legend_label(
            name, [] if self.ece is None else [f"ECE = {self.ece:.3f}"]
        )

        table = self.table
        full = table[~table["empty"].to_numpy(dtype=bool)]
        conf = full["mean_confidence"].to_numpy()
        acc = full["accuracy"].to_numpy()

        self.ref_line_ = None
        if ref_line and _REF_LABEL not in ax.get_legend_handles_labels()[1]:
            (self.ref_line_,) = ax.plot(
                [0, 1], [0, 1], ls="--", lw=1, color="0.55", label=_REF_LABEL
            )
        # a thin line: the markers and their intervals carry the information
        line_kw = {"marker": "o" if hist_ax is not None else None, "ms": 4, "lw": 1}
        line_kw.update(kwargs)
        (self.line_,) = ax.plot(conf, acc, label=label, clip_on=False, **line_kw)
        color = self.line_.get_color()
        yerr = np.vstack(
            [acc - full["ci_lower"].to_numpy(), full["ci_upper"].to_numpy() - acc]
        )
        self.errorbar_ = ax.errorbar(
            conf,
            acc,
            yerr=yerr,
            fmt="none",
            ecolor=color,
            elinewidth=1.2,
            capsize=2.5,
            clip_on=False,
        )
        for artist in self.errorbar_.lines[2]:  # the bars themselves
            artist.set_clip_on(False)
        self.scatter_ = None
        if hist_ax is None:
            share = full["count"].to_numpy() / max(int(table["count"].sum()), 1)
            self.scatter_ = ax.scatter(
                conf,
                acc,
                s=12 + 600 * share,
                color=color,
                alpha=0.75,
                edgecolor="white",
                linewidth=0.5,
                zorder=3,
                clip_on=False,
            )
        _unit_axes(ax, ylabel="accuracy")
        ax.set_aspect("equal" if hist_ax is None else "auto")
        title = f"bars: {100 * (1 - self.alpha):g}% Clopper-Pearson interval"
        if hist_ax is None:
            title += "\nmarker area: share of answers in the bin"
        if legend:
            ax.legend(
                loc="upper left",
                fontsize="small",
                title=title,
                title_fontsize="x-small",
                frameon=False,
            )

        self.hist_ = None
        if hist_ax is not None:
            edges = np.append(
                table["bin_lower"].to_numpy(), table["bin_upper"].to_numpy()[-1]
            )
            self.hist_ = hist_ax.stairs(
                table["count"].to_numpy(),
                edges,
                fill=True,
                alpha=0.35,
                color=color,
                label=name,
            )
            hist_ax.set(xlim=(0, 1), ylabel="count")
            hist_ax.set_xlabel("confidence")
        else:
            ax.set_xlabel("confidence")
        return self

    @fill_doc
    @classmethod
    def from_predictions(
        cls,
        y_true,
        y_prob,
        *,
        sample_weight=None,
        n_bins=10,
        strategy="uniform",
        alpha=0.05,
        pos_label=None,
        name=None,
        ax=None,
        hist_ax=None,
        ref_line=True,
        **kwargs,
    ):
        """Reliability diagram of confidences ``y_prob`` (raw or calibrated).

        Parameters
        ----------
        %(display_y_true)s
        %(y_prob)s
        %(sample_weight)s
        %(binning)s
        alpha : float, default=0.05
            Miscoverage of the Clopper-Pearson intervals.
        %(display_pos_label)s
        %(display_name)s
        ax, hist_ax, ref_line, **kwargs
            See :meth:`plot`.

        Returns
        -------
        display : ReliabilityDisplay
        """
        y_true, y_prob, name = cls._check_predictions(y_true, y_prob, pos_label, name)
        binning = {
            "sample_weight": sample_weight,
            "n_bins": n_bins,
            "strategy": strategy,
        }
        table = reliability_table(y_true, y_prob, alpha=alpha, **binning)
        ece = expected_calibration_error(y_true, y_prob, **binning)
        disp = cls(table, ece=ece, name=name, alpha=alpha)
        return disp.plot(ax=ax, hist_ax=hist_ax, ref_line=ref_line, **kwargs)
