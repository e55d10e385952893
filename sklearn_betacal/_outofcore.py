# SPDX-License-Identifier: MIT
"""The report's statistics of a dask collection, partition by partition.

:func:`calibration_statistics` (public in :mod:`sklearn_betacal.dask`):
sort by confidence with dask, one
:class:`~sklearn_betacal.metrics.CalibrationStatistics` per
partition, merged in order by a balanced tree of dask tasks. Imported by
:mod:`sklearn_betacal.dask` and the command line; imports dask on first use.
"""

import numpy as np


def _is_dask(X):
    return type(X).__module__.split(".")[0] in ("dask", "dask_expr")


def _columns_of(data, y_true, y_prob, cells):
    """``(frame, confidence, label, group)``: one table of the three columns.

    ``data`` is a (dask, pandas or polars) DataFrame with ``y_prob``,
    ``y_true`` and ``cells`` naming its columns; or ``None`` with the three
    given as arrays or Series (dask or in memory) of one length.
    """
    if data is not None:
        if not all(isinstance(c, str) for c in (y_true, y_prob)):
            raise TypeError(
                "with a DataFrame, name its columns: y_true='label column', "
                "y_prob='confidence column' (and cells='group column')"
            )
        if type(data).__module__.split(".")[0] == "polars":
            data = data.to_pandas()
        missing = [c for c in (y_prob, y_true, cells) if c and c not in data.columns]
        if missing:
            raise ValueError(
                f"column {missing[0]!r} not found; the columns are "
                f"{', '.join(map(repr, list(data.columns)[:12]))}"
            )
        used = [y_prob, y_true] + ([cells] if cells is not None else [])
        return data[used], y_prob, y_true, cells
    names = {"confidence": y_prob, "label": y_true}
    if cells is not None:
        names["group"] = cells
    if any(_is_dask(v) for v in names.values()):
        import dask.array as da
        import dask.dataframe as dd

        series = []
        for name, v in names.items():
            if isinstance(v, da.Array):
                v = dd.from_dask_array(v.reshape(-1), columns=name)
            elif not _is_dask(v):
                raise TypeError(
                    "give y_true, y_prob and cells all as dask collections "
                    "(or all in memory)"
                )
            series.append(v.rename(name) if hasattr(v, "rename") else v)
        frame = dd.concat(series, axis=1)
        return frame, "confidence", "label", ("group" if "group" in names else None)
    import pandas as pd

    frame = pd.DataFrame({k: np.asarray(v).reshape(-1) for k, v in names.items()})
    return frame, "confidence", "label", ("group" if cells is not None else None)


def _part_statistics(
    part, confidence, label, group, n_bins, readers, index, max_values=None
):
    """Statistics of one partition, validated."""
    from .metrics import CalibrationStatistics
    from .metrics._calibration_error import _check_inputs

    stats = CalibrationStatistics(
        n_bins, cells=group is not None, max_values=max_values
    )
    if len(part) == 0:
        return stats
    try:
        read_labels, read_confidence = readers
        y = part[label]
        y = read_labels(y) if read_labels is not None else y.to_numpy()
        p = part[confidence]
        p = read_confidence(p) if read_confidence is not None else p.to_numpy()
        y, p, _, _ = _check_inputs(y, p, None)
        g = None
        if group is not None:
            column = part[group]
            if column.isna().any():
                raise ValueError(
                    f"group column {group!r} has {int(column.isna().sum())} "
                    "missing value(s); every row needs a group"
                )
            g = column.to_numpy()
    except ValueError as exc:
        raise ValueError(f"partition {index}: {exc}") from None
    return stats.update(y, p, g)


def _merge_two(a, b):
    return a.merge(b)


def _ordered_merge(items, merge):
    """Adjacent pairs merged level by level: a balanced tree, order kept."""
    while len(items) > 1:
        items = [
            merge(items[i], items[i + 1]) if i + 1 < len(items) else items[i]
            for i in range(0, len(items), 2)
        ]
    return items[0]


def calibration_statistics(
    data=None,
    *,
    y_true,
    y_prob,
    cells=None,
    n_bins=10,
    read_labels=None,
    read_confidence=None,
    max_values=1 << 20,
    compute=True,
):
    """Mergeable statistics of a calibration report, partition by partition.

    Every partition is summarized by a
    :class:`~sklearn_betacal.metrics.CalibrationStatistics`
    (sums per group x equal-width bin, and what the ECCE and the AUC need)
    and the summaries are merged by a balanced tree of dask tasks. The ECCE
    and the AUC need the rows in order of confidence: with few distinct
    confidences (``max_values``) a table of sums per distinct (confidence,
    cell) gives them in one pass; otherwise the rows are first sorted by
    confidence with dask (``sort_values``: a shuffle that spills to disk
    under ``dask.distributed``) and the partitions' ordered summaries are
    merged in order. Memory per task is one partition plus ``O(groups x bins)``;
    nothing of size ``n`` is ever gathered. Runs on the active dask
    scheduler: a ``distributed.Client`` (a ``LocalCluster`` or any cluster)
    when one is active.

    Parameters
    ----------
    data : dask, pandas or polars DataFrame, default=None
        The table; ``y_true``, ``y_prob`` and ``cells`` then name columns.
        ``None``: they are arrays or Series (dask, or NumPy/pandas).
    y_true : str or array-like
        Correctness labels, 0/1 or bool (or the column holding them).
    y_prob : str or array-like
        Confidences in ``[0, 1]``.
    cells : str or array-like, default=None
        Group (cell) of each row: a topic, a partitioner's cell id ...
    n_bins : int, default=10
        Equal-width bins.
    read_labels : callable, default=None
        Maps a partition's label Series to 0/1 values (``betacal report``
        passes its label reader); ``None``: the labels must be 0/1 or bool.
    read_confidence : callable, default=None
        Maps a partition's confidence Series to floats in ``[0, 1]`` (with
        its own checks and messages); ``None``: they must be such floats.
    max_values : int or None, default=2**20
        With at most this many distinct (confidence, cell) pairs -- LLM
        confidences, verbalized or a calibrator's outputs, take few values
        -- the data is read once, in any order, and the ECCE and the AUC come
        from the value table (``CalibrationStatistics(max_values=...)``);
        otherwise (continuous scores: the first partition holds more than
        ``max_values`` pairs, or distinct confidences for more than a
        quarter of its rows) the rows are sorted. ``None``: always sort.
    compute : bool, default=True
        ``False`` returns the dask ``Delayed`` of the statistics of the
        sorted rows (the value table's pass, when it applies, is computed).

    Returns
    -------
    stats : CalibrationStatistics
        Its methods give every number of the report; see
        :func:`calibration_report`.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn_betacal.dask import calibration_statistics
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000)
    >>> frame = pd.DataFrame({"p": p, "y": rng.uniform(size=1000) < p})
    >>> stats = calibration_statistics(frame, y_true="y", y_prob="p")
    >>> round(stats.calibration_error(), 4)
    0.0309
    """
    frame, confidence, label, group = _columns_of(data, y_true, y_prob, cells)
    readers = (read_labels, read_confidence)
    if not _is_dask(frame):  # in memory: the same statistics, one chunk
        part = frame.sort_values(confidence, kind="stable")
        return _part_statistics(
            part, confidence, label, group, n_bins, readers, 0, max_values
        )
    import dask

    def merged(parts, max_values=None):
        stats = [
            dask.delayed(_part_statistics)(
                part, confidence, label, group, n_bins, readers, i, max_values
            )
            for i, part in enumerate(parts)
        ]
        return _ordered_merge(stats, dask.delayed(_merge_two))

    if max_values:
        # few distinct confidences: one pass, no sort (the value table); the
        # first partition tells whether it can hold them
        parts = frame.to_delayed()
        first = merged(parts[:1], max_values).compute()
        # continuous scores (distinct values near the rows) go to the sort
        # at once: their table would be as large as the partition
        few = first.values is not None and (
            4 * np.unique(first.values["p"]).shape[0] <= first.n_rows
        )
        if few:
            stats = first
            if len(parts) > 1:
                stats = first.merge(merged(parts[1:], max_values).compute())
            if stats.values is not None:
                return stats
    stats = merged(frame.sort_values(confidence).to_delayed())
    return stats.compute() if compute else stats
