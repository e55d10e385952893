# SPDX-License-Identifier: MIT
"""Accuracy-confidence curve (behind AUAC) and risk-coverage curve."""

import numpy as np

from ..._docstrings import fill_doc
from .._selective import (
    accuracy_confidence_curve,
    area_under_accuracy_confidence,
    risk_coverage_curve,
)
from ._base import _DisplayMixin, _legend_below, _unit_axes

#: How far below the axes the legends start (under the x label).
_LEGEND_OFFSET = 0.16


class AccuracyConfidenceDisplay(_DisplayMixin):
    """Selective QA: accuracy of the answers kept, by threshold and by coverage.

    Left: the accuracy-confidence curve, the accuracy of the answers whose
    confidence is at least the threshold (solid; its area is the AUAC of the
    paper's Sec. 5, given in the legend) and the share of answers kept
    (dashed). Right: the risk-coverage curve, the error rate of the answers
    kept against their share. The numbers come from
    :func:`~sklearn_betacal.metrics.accuracy_confidence_curve`,
    :func:`~sklearn_betacal.metrics.area_under_accuracy_confidence` and
    :func:`~sklearn_betacal.metrics.risk_coverage_curve`.

    Read more in the :ref:`User Guide <displays>`.

    Parameters
    ----------
    thresholds, accuracy, coverage : ndarray of shape (n_thresholds,)
        The accuracy-confidence curve.
    rc_coverage, rc_risk : ndarray of shape (n_points,)
        The risk-coverage curve.
    auac : float, default=None
        Area under the accuracy curve, for the legend.
    name : str, default=None
        Legend name.

    Attributes
    ----------
    line_ : matplotlib Line2D
        The accuracy-confidence curve.
    coverage_line_ : matplotlib Line2D
        The share of answers kept.
    rc_line_ : matplotlib Line2D or None
        The risk-coverage curve (None when only one axes was given).
    ax_ : matplotlib Axes
        The accuracy-confidence axes.
    rc_ax_ : matplotlib Axes or None
        The risk-coverage axes.
    figure_ : matplotlib Figure

    See Also
    --------
    sklearn_betacal.metrics.area_under_accuracy_confidence : The AUAC.
    ReliabilityDisplay : Whether the confidences mean what they say.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import AccuracyConfidenceDisplay
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000)
    >>> y = rng.uniform(size=1000) < p
    >>> disp = AccuracyConfidenceDisplay.from_predictions(y, p, name="raw")
    >>> disp.line_.get_label()
    'raw (AUAC = 0.759)'
    """

    def __init__(
        self,
        thresholds,
        accuracy,
        coverage,
        rc_coverage,
        rc_risk,
        *,
        auac=None,
        name=None,
    ):
        self.thresholds = thresholds
        self.accuracy = accuracy
        self.coverage = coverage
        self.rc_coverage = rc_coverage
        self.rc_risk = rc_risk
        self.auac = auac
        self.name = name

    def plot(self, *, ax=None, name=None, **kwargs):
        """Draw the curves.

        Parameters
        ----------
        ax : matplotlib Axes or pair of Axes, default=None
            One Axes: the accuracy-confidence curve only. Two: that curve and
            the risk-coverage curve. ``None``: a new figure with both.
        name : str, default=None
            Legend name; defaults to the one given at construction.
        **kwargs : dict
            Passed to :meth:`matplotlib.axes.Axes.plot` for both curves
            (``color``, ``linestyle`` ...).

        Returns
        -------
        display : AccuracyConfidenceDisplay
        """
        ax, name = self._validate_plot_params(
            ax=ax, name=name, ncols=2, figsize=(9, 4), layout="constrained"
        )
        axes = list(np.ravel(ax))
        self.ax_ = axes[0]
        self.rc_ax_ = axes[1] if len(axes) > 1 else None
        self.figure_ = self.ax_.figure
        label = self._legend_label(
            name, [] if self.auac is None else [f"AUAC = {self.auac:.3f}"]
        )
        (self.line_,) = self.ax_.plot(
            self.thresholds, self.accuracy, label=label, clip_on=False, **kwargs
        )
        color = self.line_.get_color()
        (self.coverage_line_,) = self.ax_.plot(
            self.thresholds, self.coverage, ls="--", lw=1, color=color, clip_on=False
        )
        _unit_axes(
            self.ax_,
            xlabel="confidence threshold",
            ylabel="accuracy of the answers kept",
            title="accuracy-confidence (dashed: share kept)",
        )
        _legend_below(self.ax_, offset=_LEGEND_OFFSET)
        self.rc_line_ = None
        if self.rc_ax_ is not None:
            rc_kwargs = {"color": color, **kwargs}
            (self.rc_line_,) = self.rc_ax_.plot(
                self.rc_coverage,
                self.rc_risk,
                label=name,
                clip_on=False,
                **rc_kwargs,
            )
            _unit_axes(
                self.rc_ax_,
                xlabel="coverage (share answered)",
                ylabel="risk (error rate of the answers kept)",
                title="risk-coverage",
            )
            if name is not None:
                _legend_below(self.rc_ax_, offset=_LEGEND_OFFSET)
        return self

    @fill_doc
    @classmethod
    def from_predictions(
        cls,
        y_true,
        y_prob,
        *,
        sample_weight=None,
        grid=101,
        pos_label=None,
        name=None,
        ax=None,
        **kwargs,
    ):
        """Curves of confidences ``y_prob`` (raw or calibrated).

        Parameters
        ----------
        %(display_y_true)s
        %(y_prob)s
        %(sample_weight)s
        grid : int or array-like, default=101
            Thresholds of the accuracy-confidence curve, as in
            :func:`~sklearn_betacal.metrics.area_under_accuracy_confidence`.
        %(display_pos_label)s
        %(display_name)s
        ax, **kwargs
            See :meth:`plot`.

        Returns
        -------
        display : AccuracyConfidenceDisplay
        """
        y_true, y_prob, name = cls._check_predictions(y_true, y_prob, pos_label, name)
        thresholds, accuracy, coverage = accuracy_confidence_curve(
            y_true, y_prob, sample_weight=sample_weight, grid=grid
        )
        rc_coverage, rc_risk, _ = risk_coverage_curve(
            y_true, y_prob, sample_weight=sample_weight
        )
        auac = area_under_accuracy_confidence(
            y_true, y_prob, sample_weight=sample_weight, grid=grid
        )
        disp = cls(
            thresholds,
            accuracy,
            coverage,
            rc_coverage,
            rc_risk,
            auac=auac,
            name=name,
        )
        return disp.plot(ax=ax, **kwargs)
