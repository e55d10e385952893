# SPDX-License-Identifier: MIT
"""Apply fitted estimators to dask collections, block by block.

Fit a calibrator (or a partitioner, a text embedder, any fitted
scikit-learn estimator) on data that fits in memory, then score a dask
Array or DataFrame of any size with it: :func:`predict_proba`,
:func:`predict` and :func:`transform` hand every block (dask Array) or
partition (dask DataFrame / Series) to the estimator's own method, as a
NumPy array or pandas object, and assemble the outputs lazily. Prediction
in this package is row-wise -- a row's output depends on that row and on
the fitted state only -- so the result is the same, number for number, as
calling the method on the whole data in memory. Nothing moves between
blocks and the fitted estimator is sent once to every worker, so the cost
is one pass over the data, spread over the workers.

This is the pattern of dask-ml's ``ParallelPostFit`` written as functions
(which also work for 1-D arrays of confidences and for DataFrames, where
dask-ml raises). Needs the ``dask`` extra (``pip install
'sklearn-betacal[dask]'``); ``import sklearn_betacal`` never imports dask,
and neither does importing this module: dask is imported on first use.

The calibration report of a dask collection, out of core:
:func:`calibration_statistics` (mergeable sufficient statistics computed
partition by partition, see :class:`~sklearn_betacal.metrics.CalibrationStatistics`)
and :func:`calibration_report` (every number of ``betacal report`` from
them); memory is a function of groups x bins, not of rows.

Outputs
-------
- dask Array input (1-D or 2-D): ``predict_proba`` and ``transform`` give
  a dask Array of shape ``(n, k)`` with the same row chunks, ``predict`` a
  dask Array of shape ``(n,)``.
- dask DataFrame or Series input: a dask DataFrame (``predict_proba``,
  ``transform``) or Series (``predict``) with the partitions' index, so
  the scores join back to the rows they came from.
- anything else: the estimator's own method, called eagerly.

``k`` is ``len(estimator.classes_)`` for ``predict_proba``; for
``transform`` it is read from ``get_feature_names_out()`` when the
estimator has it, else from the output of the first row (one row of the
first block is computed for that). A 2-D dask Array chunked along its
columns is first rechunked to one column chunk (a row needs all its
features). DataFrame outputs are named by ``classes_`` (``predict_proba``),
by ``get_feature_names_out()`` (``transform``), and ``method`` for
``predict``.

Examples
--------
>>> import numpy as np
>>> import dask.array as da  # doctest: +SKIP
>>> from sklearn_betacal import UMDBinner
>>> from sklearn_betacal.dask import predict_proba
>>> rng = np.random.default_rng(0)
>>> h = rng.uniform(size=5000)
>>> umd = UMDBinner(n_bins=10, random_state=0).fit(h, rng.uniform(size=5000) < h)
>>> big = da.random.random(10**8, chunks=10**6)  # doctest: +SKIP
>>> p = predict_proba(umd, big)  # lazy; p.compute() or p.to_zarr(...)  # doctest: +SKIP
"""

from functools import partial

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._outofcore import _is_dask, calibration_statistics

__all__ = [
    "calibration_report",
    "calibration_statistics",
    "predict",
    "predict_proba",
    "transform",
]

_INSTALL = (
    "sklearn_betacal.dask needs dask; install it with "
    "pip install 'sklearn-betacal[dask]'."
)


def predict_proba(estimator, X):
    """``estimator.predict_proba`` of every block of ``X`` (lazy for dask input).

    Parameters
    ----------
    estimator : fitted estimator with ``predict_proba`` and ``classes_``
    X : dask Array (1-D or 2-D), dask DataFrame or Series, or in-memory data

    Returns
    -------
    proba : dask Array of shape (n, n_classes), dask DataFrame, or ndarray
        A dask DataFrame (columns ``classes_``, the partitions' index) for
        DataFrame/Series input; for in-memory input, the estimator's own
        output.
    """
    return _apply(estimator, "predict_proba", X)


def predict(estimator, X):
    """``estimator.predict`` of every block of ``X`` (lazy for dask input).

    Parameters
    ----------
    estimator : fitted estimator with ``predict``
    X : dask Array (1-D or 2-D), dask DataFrame or Series, or in-memory data

    Returns
    -------
    y_pred : dask Array of shape (n,), dask Series, or ndarray
    """
    return _apply(estimator, "predict", X)


def transform(estimator, X):
    """``estimator.transform`` of every block of ``X`` (lazy for dask input).

    E.g. the cell id of every row from a fitted partitioner, or the
    embeddings of a text column from a fitted ``TextEmbedder``.

    Parameters
    ----------
    estimator : fitted transformer
    X : dask Array (1-D or 2-D), dask DataFrame or Series, or in-memory data

    Returns
    -------
    Xt : dask Array of shape (n, k), dask DataFrame, or the eager output
    """
    return _apply(estimator, "transform", X)


# ---------------------------------------------------------------- internals


def _apply(estimator, method, X):
    if not hasattr(estimator, method):
        raise TypeError(
            f"{type(estimator).__name__} has no {method} method; pass a fitted "
            f"estimator that implements {method}."
        )
    check_is_fitted(estimator)
    if not _is_dask(X):
        return getattr(estimator, method)(X)
    try:
        import dask.array as da
        import dask.dataframe as dd
    except ImportError as exc:  # pragma: no cover - dask is there if X is dask
        raise ImportError(_INSTALL) from exc
    if isinstance(X, da.Array):
        return _apply_array(estimator, method, X)
    if isinstance(X, dd.DataFrame | dd.Series):
        return _apply_frame(estimator, method, X)
    raise TypeError(
        f"sklearn_betacal.dask works on dask Arrays, DataFrames and Series; got "
        f"{type(X).__module__}.{type(X).__name__}. Convert it with "
        "to_dask_array() or to_dask_dataframe() first."
    )


def _width_and_dtype(estimator, method, sample):
    """``(k, dtype)`` of the method's 2-D output (``predict_proba``/``transform``)."""
    if method == "predict_proba":
        return len(estimator.classes_), np.dtype(np.float64)
    out = np.asarray(getattr(estimator, method)(sample))
    return (out.shape[1] if out.ndim == 2 else 1), out.dtype


def _predict_dtype(estimator, sample):
    classes = getattr(estimator, "classes_", None)
    if classes is not None:
        return np.asarray(classes).dtype
    return np.asarray(estimator.predict(sample)).dtype


def _call_block(estimator, method, shape_tail, dtype, block):
    """The method on one block; empty blocks give an empty output."""
    if block.shape[0] == 0:
        return np.empty((0, *shape_tail), dtype=dtype)
    out = np.asarray(getattr(estimator, method)(block))
    if shape_tail and out.ndim == 1:
        out = out.reshape(-1, 1)
    return out


def _apply_array(estimator, method, X):
    if X.ndim not in (1, 2):
        raise ValueError(f"X must be a 1-D or 2-D dask Array; got {X.ndim} dims.")
    if X.ndim == 2 and X.numblocks[1] > 1:
        X = X.rechunk({1: -1})  # a row needs all its features
    sample = X[:1].compute() if method != "predict_proba" else None
    if method == "predict":
        dtype = _predict_dtype(estimator, sample)
        func = partial(_call_block, estimator, method, (), dtype)
        kwargs = {"drop_axis": 1} if X.ndim == 2 else {}
        return X.map_blocks(
            func, dtype=dtype, meta=np.empty((0,), dtype=dtype), **kwargs
        )
    k, dtype = _width_and_dtype(estimator, method, sample)
    func = partial(_call_block, estimator, method, (k,), dtype)
    kwargs = {"new_axis": 1} if X.ndim == 1 else {}
    return X.map_blocks(
        func,
        dtype=dtype,
        chunks=(X.chunks[0], (k,)),
        meta=np.empty((0, k), dtype=dtype),
        **kwargs,
    )


def _call_partition(estimator, method, columns, dtype, part):
    """The method on one partition, as a pandas object with its index."""
    import pandas as pd

    X = part.to_numpy() if isinstance(part, pd.Series) else part
    if len(part) == 0:
        out = np.empty((0,) if columns is None else (0, len(columns)), dtype=dtype)
    else:
        out = np.asarray(getattr(estimator, method)(X))
    if columns is None:
        return pd.Series(out, index=part.index, name=method)
    return pd.DataFrame(out.reshape(len(part), -1), index=part.index, columns=columns)


def _apply_frame(estimator, method, X):
    import pandas as pd

    sample = None
    if method != "predict_proba":
        head = X.head(1, npartitions=-1)
        sample = head.to_numpy() if isinstance(head, pd.Series) else head
    if method == "predict":
        dtype = _predict_dtype(estimator, sample)
        meta = pd.Series(np.empty(0, dtype=dtype), name=method)
        columns = None
    else:
        k, dtype = _width_and_dtype(estimator, method, sample)
        if method == "predict_proba":
            columns = list(estimator.classes_)
        elif hasattr(estimator, "get_feature_names_out"):
            columns = list(estimator.get_feature_names_out())
        else:
            columns = list(range(k))
        meta = pd.DataFrame(np.empty((0, k), dtype=dtype), columns=columns)
    func = partial(_call_partition, estimator, method, columns, dtype)
    return X.map_partitions(func, meta=meta)


# ------------------------------------------------- the report, out of core
def calibration_report(
    data=None, *, y_true, y_prob, cells=None, n_bins=10, read_labels=None
):
    """Every number of ``betacal report``, computed out of core.

    The same dict as the in-memory report (reliability table with exact
    Clopper-Pearson intervals, ECE, MCE, Brier score and its split, NLL,
    AUC, AUAC and, with ``cells``, beta-CE with its noise floor and
    debiased squared form, and per group the CE, the ECCE and its
    Holm-adjusted Kuiper test) from :func:`calibration_statistics`.

    Parameters
    ----------
    data, y_true, y_prob, cells, n_bins, read_labels
        As in :func:`calibration_statistics`.

    Returns
    -------
    report : dict
        JSON-ready, as ``betacal report --format json`` prints it (without
        its ``input`` part).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.dask import calibration_report
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000)
    >>> y = rng.uniform(size=1000) < p
    >>> report = calibration_report(y_true=y, y_prob=p)
    >>> round(report["metrics"]["ece"], 4), report["n_rows"]
    (0.0309, 1000)
    """
    from .cli._report_set import report_from_statistics

    stats = calibration_statistics(
        data,
        y_true=y_true,
        y_prob=y_prob,
        cells=cells,
        n_bins=n_bins,
        read_labels=read_labels,
    )
    return report_from_statistics(stats)
