# SPDX-License-Identifier: MIT
"""The one door to scikit-learn's private names.

scikit-learn keeps helpers we rely on under private names (``_fit_context``,
the parameter-constraint classes of ``sklearn.utils._param_validation``,
``_BaseScorer``, ``_num_samples``, ...). They may move or change
between releases without a deprecation cycle, so every module of the package
imports them from here and nowhere else (``tests/test_package_layout.py``
enforces it): when scikit-learn changes one, this file is the only place to
adapt.

Version differences between the oldest supported versions (``.ci/floors.txt``,
tested by the floors leg of ``.ci/run``) and the newest ones live here too, in
the second section, so that no other module branches on a version.
"""

import inspect

import numpy as np

# -- scikit-learn private names ------------------------------------------------
from sklearn.base import _fit_context
from sklearn.metrics._scorer import _BaseScorer
from sklearn.utils import _safe_indexing as _sk_safe_indexing
from sklearn.utils._param_validation import (
    HasMethods,
    Hidden,
    Interval,
    InvalidParameterError,
    StrOptions,
    validate_parameter_constraints,
    validate_params,
)
from sklearn.utils.metadata_routing import _routing_enabled
from sklearn.utils.metaestimators import _BaseComposition
from sklearn.utils.validation import (
    _check_feature_names,
    _check_feature_names_in,
    _check_method_params,
    _get_feature_names,
    _num_samples,
)
from sklearn.utils.validation import validate_data as _validate_data

__all__ = [
    "HasMethods",
    "Hidden",
    "Interval",
    "InvalidParameterError",
    "StrOptions",
    "_BaseComposition",
    "_BaseScorer",
    "_check_feature_names_in",
    "_check_method_params",
    "_fit_context",
    "_num_samples",
    "_routing_enabled",
    "_safe_indexing",
    "validate_parameter_constraints",
    "validate_params",
    "fit_bayes_mixed_glm",
    "parametrize_with_checks",
    "validate_data",
    "all_estimators_skipped_modules",
]

# ---------------------------------------------------------------------------
# Version differences (each shim detects the feature, not a version number)
# ---------------------------------------------------------------------------


def fit_bayes_mixed_glm(fit, seed):
    """Call statsmodels' ``BinomialBayesMixedGLM.fit_vb``/``fit_map`` (``fit``)
    with its random starting point drawn from ``seed``.

    statsmodels >= 0.15 takes ``rng``; older versions draw the start from
    NumPy's global generator, which is seeded here and restored afterwards so
    that the caller's global random state is left as it was.
    """
    if "rng" in inspect.signature(fit).parameters:
        return fit(rng=np.random.default_rng(seed))
    # the old API offers no other way to seed it
    state = np.random.get_state()  # noqa: NPY002
    try:
        np.random.seed(seed)  # noqa: NPY002
        return fit()
    finally:
        np.random.set_state(state)  # noqa: NPY002


def _has_1d_sparse_arrays():
    from scipy import sparse

    return sparse.coo_array(np.ones(2)).shape == (2,)


def _applicable_failures(estimator, expected):
    """Drop expected failures whose cause the installed versions lack.

    ``check_estimator_sparse_array`` fails for the one-confidence calibrators
    (``one_d_array`` tag) only because the check cannot turn the flattened X
    into a *1-D* sparse array in lil format; SciPy < 1.13 has no 1-D sparse
    arrays, so there the check passes (and a strict xfail would not).
    """
    from sklearn.utils import get_tags

    if expected and get_tags(estimator).input_tags.one_d_array:
        if not _has_1d_sparse_arrays():
            expected = {
                k: v for k, v in expected.items() if k != "check_estimator_sparse_array"
            }
    return expected


def parametrize_with_checks(estimators, *, expected_failed_checks=None):
    """``sklearn.utils.estimator_checks.parametrize_with_checks`` whose cases
    are a list, with expected failures that hold on the installed versions.

    scikit-learn < 1.8 hands pytest a generator, which pytest >= 9 deprecates
    (an error under this project's ``filterwarnings``) and pytest 10 rejects.
    """
    import pytest
    from sklearn.utils.estimator_checks import parametrize_with_checks as _checks

    expected = None
    if expected_failed_checks is not None:

        def expected(estimator):
            return _applicable_failures(estimator, expected_failed_checks(estimator))

    mark = _checks(estimators, expected_failed_checks=expected)
    names, cases = mark.args
    if isinstance(cases, list | tuple):
        return mark
    return pytest.mark.parametrize(names, list(cases), **mark.kwargs)


def _names_scikit_learn_misses(X):
    """A zero-row pandas frame of ``X``'s column names when ``X`` is a polars
    DataFrame whose names scikit-learn cannot read, else None.

    scikit-learn < 1.8 reads a non-pandas frame's column names through the
    dataframe interchange protocol (``__dataframe__``), which polars 2
    dropped: there, a polars frame's columns were invisible to every
    estimator (no ``feature_names_in_``; a ``confidence_column`` given by
    name was refused). scikit-learn >= 1.8 reads them through narwhals.
    """
    if type(X).__module__.split(".")[0] != "polars" or not hasattr(X, "columns"):
        return None
    columns = list(X.columns)
    if not columns or _get_feature_names(X) is not None:
        return None
    import pandas as pd

    return pd.DataFrame(columns=columns)


def validate_data(
    _estimator, /, X="no_validation", y="no_validation", reset=True, **kwargs
):
    """scikit-learn's ``validate_data``, with a polars frame's column names
    set and checked where scikit-learn cannot read them
    (:func:`_names_scikit_learn_misses`), by scikit-learn's own rules
    (``_check_feature_names`` on the names alone)."""
    header = _names_scikit_learn_misses(X)
    if header is None:
        return _validate_data(_estimator, X, y, reset=reset, **kwargs)
    import warnings

    with warnings.catch_warnings():
        # what scikit-learn says of the nameless array it sees; the names
        # are checked below
        warnings.filterwarnings(
            "ignore", "X does not have valid feature names", UserWarning
        )
        out = _validate_data(_estimator, X, y, reset=reset, **kwargs)
    _check_feature_names(_estimator, header, reset=reset)
    return out


def all_estimators_skipped_modules():
    """The module names scikit-learn's ``all_estimators()`` does not walk
    (``sklearn.utils.discovery._MODULE_TO_IGNORE``), or None if this
    scikit-learn has no such set (then :mod:`sklearn_betacal.io` asks the
    full list)."""
    from sklearn.utils import discovery

    skipped = getattr(discovery, "_MODULE_TO_IGNORE", None)
    return None if skipped is None else frozenset(skipped)


def _safe_indexing(X, indices, *, axis=0):
    """scikit-learn's ``_safe_indexing``; columns of a polars frame by name
    also where scikit-learn cannot read its names
    (:func:`_names_scikit_learn_misses`: it refuses string keys there), by
    their positions."""
    if axis == 1 and _names_scikit_learn_misses(X) is not None:
        names = list(X.columns)
        if isinstance(indices, str):
            indices = names.index(indices)
        elif not isinstance(indices, slice):
            keys = np.asarray(indices, dtype=object).ravel()
            if keys.size and all(isinstance(k, str) for k in keys):
                indices = [names.index(k) for k in keys]
    return _sk_safe_indexing(X, indices, axis=axis)

