# SPDX-License-Identifier: MIT
"""The partitioner protocol and the cell lookup: the ground floor of partitions.

What a calibrator needs to know about a partitioner, and what a partitioner
needs to look its cells up, in one module that imports nothing of the
package's estimators (only scikit-learn's tags and ``Pipeline``, lazily):

- :func:`fit_takes`: whether an estimator's ``fit`` has a parameter (the one
  "does fit take this keyword" question of the library: partitioners,
  scalers inside scaling-binning, the classifier of CalibratedClassifier);
- :func:`supervised_step`, :func:`is_supervised`, :func:`fit_supervised`:
  how a partitioner that learns from labels (its tags say ``y`` is required)
  is recognised and fitted, also as the last step of a Pipeline;
- :func:`partition_view`: the numbers a partitioner reads (a Pipeline's
  last step's input), for a scaler that should see what the cells see;
- :func:`cell_positions`: the position of every row's cell id in the sorted
  ids of the fitted cells (``-1`` for any other), with a lookup array when
  the ids are dense.

Calibrators (``_base.py``, ``_group_binning.py``, ``_hierarchical.py``) and
partitioners (``_partition/``) both import it; it imports neither, so
importing a calibrator of one confidence never loads a partitioner.
"""

from inspect import signature
from numbers import Integral

import numpy as np


def fit_takes(estimator, name):
    """Whether ``estimator.fit`` has a parameter called ``name``.

    As scikit-learn's ``has_fit_parameter``, but False (not an error) when
    the signature cannot be read.
    """
    try:
        return name in signature(estimator.fit).parameters
    except (TypeError, ValueError):
        return False


def supervised_step(part):
    """``(step, prefix)``: the estimator whose tags say whether ``part`` is
    supervised, and the prefix that routes ``fit`` keywords to it -- the last
    step of a :class:`~sklearn.pipeline.Pipeline` (``"name__"``), else
    ``part`` itself (``""``)."""
    from sklearn.pipeline import Pipeline

    if isinstance(part, Pipeline) and part.steps:
        name, step = part.steps[-1]
        return step, f"{name}__"
    return part, ""


def is_supervised(part):
    """Whether ``part`` (or a Pipeline's last step) requires ``y`` in ``fit``."""
    from sklearn.utils import get_tags

    step, _ = supervised_step(part)
    return not isinstance(step, str) and get_tags(step).target_tags.required


def fit_supervised(
    part,
    Z,
    y,
    *,
    confidence=None,
    sample_weight=None,
    points_per_bin=None,
    groups=None,
):
    """``part.fit(Z, y, ...)`` with each keyword its ``fit`` (or a Pipeline's
    last step's) takes: the confidences, the weights, ``points_per_bin``
    (only an int; a learned tree sizes its leaves by it) and the rows'
    question ``groups`` (a learned tree keeps them within its folds; a
    partitioner that splits nothing does not take them)."""
    step, prefix = supervised_step(part)
    kwargs = {}
    if groups is not None and fit_takes(step, "groups"):
        kwargs[prefix + "groups"] = groups
    if confidence is not None and fit_takes(step, "confidence"):
        kwargs[prefix + "confidence"] = confidence
    if sample_weight is not None and fit_takes(step, "sample_weight"):
        kwargs[prefix + "sample_weight"] = sample_weight
    if isinstance(points_per_bin, Integral) and fit_takes(step, "points_per_bin"):
        kwargs[prefix + "points_per_bin"] = int(points_per_bin)
    if prefix and kwargs:
        # the keywords name their step; with metadata routing enabled a
        # Pipeline refuses "step__param" (unrequested metadata): this fit of
        # the calibrator's own clone routes them by name, as without routing
        from sklearn import config_context

        with config_context(enable_metadata_routing=False):
            return part.fit(Z, y, **kwargs)
    return part.fit(Z, y, **kwargs)


def pipeline_head(part):
    """``(head, last)`` of a fitted Pipeline partitioner of two or more
    steps (``head = part[:-1]``; a ``FrozenEstimator`` unwrapped), else
    ``None``: ``part.transform(Z)`` is ``last.transform(head.transform(Z))``,
    so a caller that needs the head's output too computes it once."""
    from sklearn.frozen import FrozenEstimator
    from sklearn.pipeline import Pipeline

    if isinstance(part, FrozenEstimator):
        part = part.estimator
    if isinstance(part, Pipeline) and len(part.steps) > 1:
        return part[:-1], part.steps[-1][1]
    return None


def partition_view(part, Z):
    """The features a fitted partitioner ``part`` cuts, as a 2-D array.

    What a scaler that reads "the partition features" should read (the
    boosted scaler of ``ScalingBetaBinningCalibrator(scaler="features")``):

    - a ``FrozenEstimator``: the view of the estimator it wraps;
    - a :class:`~sklearn.pipeline.Pipeline`: the input of its last step,
      ``part[:-1].transform(Z)`` (e.g. the embedding of a
      ``make_pipeline(TextEmbedder(...), partitioner)``, never the raw text);
    - a partitioner with a ``_partition_view(Z)`` method (the cross of
      several partitions: its components' views side by side; a group
      column: its cell ids) -- that method's result;
    - any other partitioner: ``Z`` itself.

    The result is not checked here (the scaler says what it needs).
    """
    from sklearn.frozen import FrozenEstimator
    from sklearn.pipeline import Pipeline

    split = pipeline_head(part)
    if split is not None:
        return split[0].transform(Z)
    if isinstance(part, FrozenEstimator):
        part = part.estimator
    if isinstance(part, Pipeline):
        part = part.steps[-1][1] if part.steps else part
    view = getattr(part, "_partition_view", None)
    if callable(view):
        return view(Z)
    return Z


def dense_ids(hi, n):
    """Whether cell ids ``0 .. hi`` are dense enough, for ``n`` rows, that a
    lookup array (``hi + 2`` slots) beats a binary search per row."""
    return hi < 4 * n + 1024


def cell_positions(values, cells):
    """Position of every value in the sorted unique array ``cells``; -1 if absent.

    ``values`` are one cell id (or group key) per row. Non-negative integer
    cells that are not much sparser than the rows (:func:`dense_ids`) go
    through a lookup array, one gather with no binary search per row; other
    keys (strings, sparse ids) through ``np.searchsorted``. Returns int64.
    """
    n_cells = cells.shape[0]
    if n_cells == 0:
        return np.full(values.shape[0], -1, dtype=np.int64)
    if (
        values.dtype.kind in "iu"
        and cells.dtype.kind in "iu"
        and cells[0] >= 0
        and dense_ids(int(cells[-1]), values.shape[0])
    ):
        hi = int(cells[-1])
        lut = np.full(hi + 2, -1, dtype=np.int64)  # lut[-1]: cell -1, absent
        lut[cells] = np.arange(n_cells)
        inside = (values >= -1) & (values <= hi)
        if inside.all():
            return lut[values]
        return lut[np.where(inside, values, -1)]
    at = np.minimum(np.searchsorted(cells, values), n_cells - 1)
    return np.where(cells[at] == values, at, -1).astype(np.int64)
