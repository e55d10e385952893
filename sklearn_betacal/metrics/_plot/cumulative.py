# SPDX-License-Identifier: MIT
"""Cumulative calibration plot: cumulative differences against the score's rank."""

import numpy as np

from ..._docstrings import fill_doc
from ..._kernels import _cumulative as _k
from .._calibration_error import _check_inputs
from .._calibration_tests import calibration_test
from ._base import _DisplayMixin


def cumulative_curve(y_true, y_prob, *, sample_weight=None, weight_type="frequency"):
    """The plotted numbers: rank share, cumulative difference, 2-sigma envelope.

    One point per distinct confidence (the last row of each tie run), in
    score order: ``rank`` is the share of the total weight at or below the
    score, ``cumulative`` the difference ``C`` of
    :func:`~sklearn_betacal.metrics.cumulative_calibration_error` there, and
    ``envelope`` twice the standard deviation of ``C`` at that point under
    perfect calibration. Returns ``(rank, cumulative, envelope, score)``,
    each starting with the origin (``score`` NaN there).
    """
    y, p, w, total = _check_inputs(y_true, y_prob, sample_weight)
    order, ends, cum = _k.cumulative_path(p, y, w)
    p_sorted = p[order]
    ws = np.ones_like(p_sorted) if w is None else w[order]
    v = _k.null_variance_terms(p, w, weight_type)[order]
    rank = np.cumsum(ws)[ends] / total
    cumulative = cum[ends] / total
    envelope = 2.0 * np.sqrt(np.cumsum(v)[ends]) / total
    zero = np.zeros(1)
    return (
        np.concatenate([zero, rank]),
        np.concatenate([zero, cumulative]),
        np.concatenate([zero, envelope]),
        np.concatenate([[np.nan], p_sorted[ends]]),
    )


@fill_doc
class CumulativeCalibrationDisplay(_DisplayMixin):
    """Cumulative calibration plot with its +-2 sigma envelope.

    The answers are sorted by confidence; the curve shows the cumulative
    difference ``C = (1/W) sum w (y - p)`` (correct minus announced) against
    the share of answers at or below each confidence (Arrieta-Ibarra et al.
    2022). A calibrated confidence gives a random walk that stays inside the
    grey envelope (twice the standard deviation of ``C`` under perfect
    calibration) ; miscalibration over a range of confidences shows as a
    steady slope over that range, and the slope *is* the gap there: a
    segment that climbs by ``0.02`` over ``10%`` of the answers has accuracy
    ``0.2`` above its confidence. The range of the curve is the ECCE, given
    in the legend with its p-value. No bins, so nothing to tune. The top axis
    gives the confidence at deciles of the rank.

    Use :meth:`from_predictions` or :meth:`from_estimator` to create one.

    Read more in the :ref:`User Guide <calibration_tests>`.

    Parameters
    ----------
    rank, cumulative, envelope, score : ndarray
        The output of the curve computation (see :meth:`from_predictions`).
    ecce : float, default=None
        The ECCE (range of the curve), shown in the legend.
    pvalue : float, default=None
        Its p-value, shown in the legend.
    name : str, default=None
        Name of the curve in the legend.

    Attributes
    ----------
    line_ : matplotlib Line2D
        The cumulative curve.
    envelope_ : matplotlib PolyCollection or None
        The +-2 sigma envelope.
    ax_ : matplotlib Axes
    score_ax_ : matplotlib Axes
        The top axis with the confidences at rank deciles.
    figure_ : matplotlib Figure

    See Also
    --------
    sklearn_betacal.metrics.calibration_test : The test behind the legend.
    ReliabilityDisplay : The binned diagram.

    References
    ----------
    %(arrieta_ibarra)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import CumulativeCalibrationDisplay
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000)
    >>> y = rng.uniform(size=1000) < p ** 1.5          # overconfident
    >>> disp = CumulativeCalibrationDisplay.from_predictions(y, p, name="raw")
    >>> disp.line_.get_label()
    'raw (ECCE = 0.085, p = 2.4e-10)'
    >>> round(float(disp.cumulative.min()), 3)
    -0.085
    """

    def __init__(
        self, rank, cumulative, envelope, score, *, ecce=None, pvalue=None, name=None
    ):
        self.rank = rank
        self.cumulative = cumulative
        self.envelope = envelope
        self.score = score
        self.ecce = ecce
        self.pvalue = pvalue
        self.name = name

    def plot(self, *, ax=None, name=None, envelope=True, score_axis=True, **kwargs):
        """Draw the curve.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw into; ``None`` creates a figure.
        name : str, default=None
            Legend name; defaults to the ``name`` given at construction.
        envelope : bool, default=True
            Draw the +-2 sigma envelope of a calibrated confidence.
        score_axis : bool, default=True
            Label a top axis with the confidence at each decile of the rank.
        **kwargs : dict
            Passed to :meth:`matplotlib.axes.Axes.plot` for the curve.

        Returns
        -------
        display : CumulativeCalibrationDisplay
        """
        ax, name = self._validate_plot_params(ax=ax, name=name, figsize=(5.5, 4))
        self.ax_, self.figure_ = ax, ax.figure
        parts = []
        if self.ecce is not None:
            parts.append(f"ECCE = {self.ecce:.3f}")
        if self.pvalue is not None:
            parts.append(f"p = {self.pvalue:.2g}")
        label = self._legend_label(name, parts)
        self.envelope_ = None
        if envelope:
            self.envelope_ = ax.fill_between(
                self.rank,
                -self.envelope,
                self.envelope,
                color="0.85",
                lw=0,
                label="±2σ of a calibrated confidence",
            )
        ax.axhline(0.0, color="0.5", lw=0.8)
        line_kw = {"lw": 1.2}
        line_kw.update(kwargs)
        (self.line_,) = ax.plot(self.rank, self.cumulative, label=label, **line_kw)
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of answers at or below the confidence (rank)")
        ax.set_ylabel("cumulative (correct − confidence) / W")
        ax.legend(loc="best", fontsize="small", frameon=False)
        self.score_ax_ = None
        if score_axis and self.rank.shape[0] > 1:
            top = ax.secondary_xaxis("top")
            ticks = np.linspace(0.1, 0.9, 5)
            pos = np.clip(np.searchsorted(self.rank, ticks), 1, self.rank.shape[0] - 1)
            top.set_xticks(ticks, [f"{s:.2f}" for s in self.score[pos]])
            top.set_xlabel("confidence", fontsize="small")
            self.score_ax_ = top
        return self

    @fill_doc
    @classmethod
    def from_predictions(
        cls,
        y_true,
        y_prob,
        *,
        sample_weight=None,
        weight_type="frequency",
        pos_label=None,
        name=None,
        ax=None,
        **kwargs,
    ):
        """Cumulative calibration plot of confidences ``y_prob``.

        Parameters
        ----------
        %(display_y_true)s
        %(y_prob)s
        %(sample_weight)s
        %(weight_type)s
        %(display_pos_label)s
        %(display_name)s
        ax, **kwargs
            See :meth:`plot`.

        Returns
        -------
        display : CumulativeCalibrationDisplay
        """
        y_true, y_prob, name = cls._check_predictions(y_true, y_prob, pos_label, name)
        rank, cumulative, envelope, score = cumulative_curve(
            y_true, y_prob, sample_weight=sample_weight, weight_type=weight_type
        )
        test = calibration_test(
            y_true, y_prob, sample_weight=sample_weight, weight_type=weight_type
        )
        disp = cls(
            rank,
            cumulative,
            envelope,
            score,
            ecce=test.statistic,
            pvalue=test.pvalue,
            name=name,
        )
        return disp.plot(ax=ax, **kwargs)
