# SPDX-License-Identifier: MIT
"""The abstention gate's trade: risk against coverage per cell, with the
certified bound and the chosen thresholds."""

import numpy as np

from ..._kernels._selective import binomial_upper_bound
from .._selective import risk_coverage_curve
from ._base import _DisplayMixin, _estimator_name, _legend_below, _unit_axes

_LEGEND_OFFSET = 0.16


class AbstentionDisplay(_DisplayMixin):
    """Risk-coverage per cell, its certified upper bound and the thresholds.

    For each cell (all rows when there are no cells): the error rate of the
    answers kept against their share (solid, from
    :func:`~sklearn_betacal.metrics.risk_coverage_curve`), the
    Clopper-Pearson upper bound of that error at level ``1 - delta / n_cells``
    (dashed: where it is below ``max_error``, the dotted line, a threshold
    can be certified on these rows), and the operating point of the chosen
    threshold (a marker; none where the cell always abstains).

    Read more in the :ref:`User Guide <abstention>`.

    Parameters
    ----------
    curves : dict
        Cell name -> dict of arrays ``coverage``, ``risk``, ``bound``.
    points : dict
        Cell name -> ``(coverage, risk)`` at the chosen threshold, or
        ``None`` where the cell abstains.
    max_error : float
        The target error rate.
    name : str, default=None
        Title prefix.

    Attributes
    ----------
    lines_ : dict
        Cell name -> matplotlib Line2D of the risk-coverage curve.
    bound_lines_ : dict
        Cell name -> Line2D of the certified bound.
    markers_ : dict
        Cell name -> Line2D of the operating point (cells that answer).
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    See Also
    --------
    AbstentionGate : Certifies the thresholds.
    AccuracyConfidenceDisplay : The same trade indexed by threshold.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import AbstentionDisplay
    >>> rng = np.random.default_rng(0)
    >>> p = rng.beta(4, 1, size=2000)
    >>> y = rng.uniform(size=2000) < p
    >>> disp = AbstentionDisplay.from_predictions(y, p, thresholds=0.9)
    >>> sorted(disp.lines_)
    ['all']
    """

    def __init__(self, curves, points, *, max_error, name=None):
        self.curves = curves
        self.points = points
        self.max_error = max_error
        self.name = name

    def plot(self, *, ax=None, name=None, **kwargs):
        """Draw the curves.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw into; ``None``: a new figure.
        name : str, default=None
            Title prefix; defaults to the one given at construction.
        **kwargs : dict
            Passed to :meth:`matplotlib.axes.Axes.plot` for the curves.

        Returns
        -------
        display : AbstentionDisplay
        """
        ax, name = self._validate_plot_params(
            ax=ax, name=name, figsize=(6, 4.5), layout="constrained"
        )
        self.ax_, self.figure_ = ax, ax.figure
        self.lines_, self.bound_lines_, self.markers_ = {}, {}, {}
        for cell, curve in self.curves.items():
            point = self.points.get(cell)
            label = f"{cell}" + (" (abstains)" if point is None else "")
            (line,) = ax.plot(
                curve["coverage"], curve["risk"], label=label, clip_on=False, **kwargs
            )
            color = line.get_color()
            (bound,) = ax.plot(
                curve["coverage"], curve["bound"], ls="--", lw=1, color=color
            )
            self.lines_[cell], self.bound_lines_[cell] = line, bound
            if point is not None:
                (self.markers_[cell],) = ax.plot(
                    [point[0]], [point[1]], marker="o", color=color, clip_on=False
                )
        ax.axhline(self.max_error, color="0.3", ls=":", lw=1)
        title = "risk-coverage (--: bound, o: threshold)"
        _unit_axes(
            ax,
            xlabel="coverage (share answered)",
            ylabel="error rate of the answers",
            title=title if name is None else f"{name}: {title}",
        )
        _legend_below(ax, offset=_LEGEND_OFFSET)
        return self

    @classmethod
    def from_predictions(
        cls,
        y_true,
        y_prob,
        *,
        cells=None,
        thresholds=None,
        max_error=0.1,
        delta=0.05,
        pos_label=None,
        name=None,
        ax=None,
        **kwargs,
    ):
        """The trade of confidences ``y_prob`` (calibrated), per cell.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            Whether each answer was right (``pos_label``: which label is).
        y_prob : array-like of shape (n_samples,)
            Calibrated confidences.
        cells : array-like of shape (n_samples,), default=None
            Cell id per row; ``None``: all rows form one cell, ``"all"``.
        thresholds : float, dict or None, default=None
            The chosen threshold (one for all cells, or cell -> threshold,
            ``inf`` or missing: the cell abstains); ``None``: no markers.
        max_error, delta : float, default=0.1, 0.05
            Target error and the level shared among the cells for the bound.
        pos_label : int, float, bool or str, default=None
            The label of a right answer, where ``y_true`` does not say it.
        name : str, default=None
            Title prefix.
        ax, **kwargs
            See :meth:`plot`.

        Returns
        -------
        display : AbstentionDisplay
        """
        y, p, name = cls._check_predictions(y_true, y_prob, pos_label, name)
        y = np.asarray(y, dtype=np.float64)
        p = np.asarray(p, dtype=np.float64)
        if cells is None:
            keys, at = np.array(["all"]), np.zeros(p.shape[0], dtype=np.int64)
        else:
            keys, at = np.unique(np.asarray(cells), return_inverse=True)
        level = delta / keys.shape[0]
        curves, points = {}, {}
        for j, key in enumerate(keys):
            rows = at == j
            coverage, risk, _ = risk_coverage_curve(y[rows], p[rows])
            n = coverage * rows.sum()
            bound = binomial_upper_bound(np.rint(risk * n), np.rint(n), level)
            cell = str(key)
            curves[cell] = {"coverage": coverage, "risk": risk, "bound": bound}
            t = thresholds
            if isinstance(thresholds, dict):
                t = thresholds.get(key, thresholds.get(cell, np.inf))
            if t is None or not np.isfinite(t):
                points[cell] = None
                continue
            kept = p[rows] >= t
            points[cell] = (
                float(kept.mean()),
                float(1.0 - y[rows][kept].mean()) if kept.any() else 0.0,
            )
        disp = cls(curves, points, max_error=max_error, name=name)
        return disp.plot(ax=ax, **kwargs)

    @classmethod
    def from_estimator(cls, estimator, X, y, *, name=None, ax=None, **kwargs):
        """The trade of a fitted :class:`~sklearn_betacal.AbstentionGate` on
        ``(X, y)``: its calibrated confidences, cells, thresholds,
        ``max_error`` and ``delta``.

        Parameters
        ----------
        estimator : AbstentionGate
            Fitted.
        X : array-like
            The gate's input.
        y : array-like of shape (n_samples,)
            Labels, as the gate's calibrator reads them.
        name : str, default=None
            Title prefix; default the calibrator's class name.
        ax, **kwargs
            See :meth:`plot`.

        Returns
        -------
        display : AbstentionDisplay
        """
        from ..._abstention import AbstentionGate

        if not isinstance(estimator, AbstentionGate):
            raise TypeError(
                "AbstentionDisplay.from_estimator needs a fitted AbstentionGate; "
                f"got {type(estimator).__name__}. For confidences and "
                "thresholds of your own use from_predictions."
            )
        correct, p, _ = cls._response(estimator, X, y)
        cells = thresholds = None
        if estimator.cells_ is None:
            thresholds = float(estimator.thresholds_[0])
        else:
            cells = np.asarray(estimator.calibrator_.apply(X), dtype=np.int64)
            thresholds = dict(
                zip(estimator.cells_.tolist(), estimator.thresholds_, strict=True)
            )
        if name is None:
            name = _estimator_name(estimator.calibrator_)
        return cls.from_predictions(
            correct,
            p,
            cells=cells,
            thresholds=thresholds,
            max_error=estimator.max_error,
            delta=estimator.delta,
            name=name,
            ax=ax,
            **kwargs,
        )
