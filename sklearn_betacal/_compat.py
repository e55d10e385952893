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
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import (
    HasMethods,
    Hidden,
    Interval,
    StrOptions,
    validate_params,
)
from sklearn.utils.metadata_routing import _routing_enabled
from sklearn.utils.metaestimators import _BaseComposition
from sklearn.utils.validation import (
    _check_feature_names_in,
    _check_method_params,
    _num_samples,
)

__all__ = [
    "HasMethods",
    "Hidden",
    "Interval",
    "StrOptions",
    "_BaseComposition",
    "_BaseScorer",
    "_check_feature_names_in",
    "_check_method_params",
    "_fit_context",
    "_num_samples",
    "_routing_enabled",
    "_safe_indexing",
    "validate_params",
    "fit_bayes_mixed_glm",
    "parametrize_with_checks",
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
