# SPDX-License-Identifier: MIT
"""What the displays share: the matplotlib check, estimator responses, axes.

Modelled on scikit-learn's ``_BinaryClassifierCurveDisplayMixin``
(``sklearn/utils/_plotting.py``): ``from_estimator`` and ``from_predictions``
are thin and share one ``plot``; matplotlib is imported inside plotting only,
and library code never chooses a backend.
"""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..._docstrings import fill_doc

#: How to get matplotlib; every ImportError of a display names it.
PLOT_EXTRA_HINT = "pip install 'sklearn-betacal[plot]'"


def have_matplotlib():
    """True when matplotlib can be imported (the ``plot`` extra)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def check_matplotlib_support(caller_name):
    """Raise an ImportError naming the ``plot`` extra if matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"{caller_name} requires matplotlib, which the 'plot' extra "
            f"installs: {PLOT_EXTRA_HINT}"
        ) from exc


def _estimator_name(estimator):
    """Class name of the estimator, looking through FrozenEstimator/Pipeline."""
    from sklearn.frozen import FrozenEstimator

    inner = estimator.estimator if isinstance(estimator, FrozenEstimator) else estimator
    if hasattr(inner, "steps"):
        inner = inner.steps[-1][1]
    return type(inner).__name__


def _correctness(y_true, pos_label):
    """0/1 correctness from labels: ``y_true == pos_label`` when it is given."""
    if pos_label is None:
        return y_true  # the metric functions check that it is 0/1 or bool
    y = np.asarray(y_true)
    if not np.any(y == pos_label):
        raise ValueError(
            f"pos_label={pos_label!r} does not occur in y_true (labels: "
            f"{np.unique(y)[:10].tolist()}); pass one of them."
        )
    return y == pos_label


class _DisplayMixin:
    """Response extraction and axes creation shared by the displays."""

    @classmethod
    def _check_predictions(cls, y_true, y_prob, pos_label, name):
        check_matplotlib_support(f"{cls.__name__}.from_predictions")
        return _correctness(y_true, pos_label), y_prob, name

    @classmethod
    def _response(cls, estimator, X, y, *, pos_label=None, name=None):
        """Correctness and confidence of a fitted classifier on ``(X, y)``.

        Binary classifiers (every calibrator of this package included): the
        confidence is ``predict_proba(X)[:, k]`` for the column ``k`` of
        ``pos_label`` (default ``classes_[1]``, "correct"), the label is
        ``y == pos_label``. Multiclass classifiers: top-label, i.e. the
        largest probability against "the predicted class is right".
        """
        check_matplotlib_support(f"{cls.__name__}.from_estimator")
        check_is_fitted(estimator)
        name = _estimator_name(estimator) if name is None else name
        if not hasattr(estimator, "predict_proba"):
            raise TypeError(
                f"{cls.__name__}.from_estimator needs an estimator with "
                f"predict_proba; {type(estimator).__name__} has none. For raw "
                "confidences use from_predictions(y_true, y_prob)."
            )
        classes = np.asarray(estimator.classes_)
        proba = np.asarray(estimator.predict_proba(X))
        y = np.asarray(y)
        if y.shape[0] != proba.shape[0]:
            raise ValueError(
                f"X has {proba.shape[0]} rows but y has {y.shape[0]}; pass the "
                "labels of the same rows."
            )
        if classes.shape[0] > 2:
            if pos_label is not None:
                raise ValueError(
                    "pos_label applies to binary classifiers; a multiclass "
                    "classifier is shown top-label (is the predicted class right)."
                )
            top = proba.argmax(axis=1)
            return classes[top] == y, proba[np.arange(top.shape[0]), top], name
        if pos_label is None:
            pos_label = classes[-1]
        column = np.flatnonzero(classes == pos_label)
        if column.shape[0] != 1:
            raise ValueError(
                f"pos_label={pos_label!r} is not one of the estimator's classes "
                f"{classes.tolist()}."
            )
        if classes.dtype.kind == "f" and set(classes.tolist()) == {0.0, 1.0}:
            from ..._validation import is_soft_labels

            if is_soft_labels(y):  # a judge's probability of "correct"
                truth = y if pos_label == 1.0 else 1.0 - y
                return truth, proba[:, column[0]], name
        return y == pos_label, proba[:, column[0]], name

    @fill_doc
    @classmethod
    def from_estimator(cls, estimator, X, y, *, pos_label=None, name=None, **kwargs):
        """The display of a fitted calibrator or classifier on ``(X, y)``.

        :meth:`from_predictions` of the estimator's correctness and
        confidence: for a binary classifier ``y == pos_label`` and
        ``predict_proba(X)`` of that class, for a multiclass one top-label.

        Parameters
        ----------
        %(display_estimator)s
        pos_label : int, float, bool or str, default=None
            The class whose probability is the confidence; default
            ``estimator.classes_[1]``.
        name : str, default=None
            Legend name; default the estimator's class name.
        **kwargs : dict
            The other parameters of :meth:`from_predictions` (weights,
            binning, ``ax`` ...), passed on unchanged.

        Returns
        -------
        display
            An instance of the class it is called on.
        """
        y_true, y_prob, name = cls._response(
            estimator, X, y, pos_label=pos_label, name=name
        )
        return cls.from_predictions(y_true, y_prob, name=name, **kwargs)

    @staticmethod
    def _legend_label(name, parts):
        """``name (part, part)``; the parts alone without a name; ``name`` alone
        without parts (None when there is neither)."""
        text = ", ".join(parts)
        if name is None:
            return text or None
        return f"{name} ({text})" if text else name

    def _validate_plot_params(self, *, ax, name, **subplots_kw):
        """The axes to draw into and the legend name, as ``plot`` resolves them.

        scikit-learn's ``_BinaryClassifierCurveDisplayMixin`` helper of the
        same name: ``ax=None`` draws into a new figure
        ``plt.subplots(**subplots_kw)`` (one Axes, or the array of them when
        ``subplots_kw`` asks for several), ``name=None`` is the name given at
        construction. Returns ``(ax, name)``.
        """
        if ax is None:
            check_matplotlib_support(f"{type(self).__name__}.plot")
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(**subplots_kw)
        return ax, self.name if name is None else name


def _unit_axes(ax, **labels):
    """Both axes over ``[0, 1]`` (confidences, accuracies, shares), labelled."""
    ax.set(xlim=(0, 1), ylim=(0, 1), **labels)


def _legend_below(ax, *, offset, fontsize="small", **legend_kw):
    """The legend under the x label, two entries a row, without a frame.

    Inside the axes, any corner (or ``loc="best"``) sits on a curve or on
    the lowest rows once several confidences share the axes. ``offset`` is
    how far below the axes its top is, in axes units.
    """
    return ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -offset),
        ncols=2,
        fontsize=fontsize,
        frameon=False,
        **legend_kw,
    )
