# SPDX-License-Identifier: MIT
"""The version shims give the same answer on every supported version.

The floors leg of ``.ci/run`` runs these on the oldest supported versions,
the main leg on the newest; both branches of each shim are exercised here
with stand-ins so that either leg covers both.
"""

import numpy as np
from numpy.testing import assert_allclose

from sklearn_betacal import _compat


def test_compat_fit_bayes_mixed_glm_passes_a_seeded_rng():
    def fit(rng=None):
        return rng.normal(size=3)

    assert_allclose(
        _compat.fit_bayes_mixed_glm(fit, 7), np.random.default_rng(7).normal(size=3)
    )


def test_compat_fit_bayes_mixed_glm_seeds_and_restores_the_global_state():
    def fit():  # the pre-0.15 statsmodels API: draws from the global state
        return np.random.normal(size=3)  # noqa: NPY002

    np.random.seed(123)  # noqa: NPY002
    expected_next = np.random.normal(size=2)  # noqa: NPY002
    np.random.seed(123)  # noqa: NPY002
    first = _compat.fit_bayes_mixed_glm(fit, 7)
    assert_allclose(first, _compat.fit_bayes_mixed_glm(fit, 7))
    assert not np.allclose(first, _compat.fit_bayes_mixed_glm(fit, 8))
    # the caller's global stream continues as if nothing had happened
    assert_allclose(np.random.normal(size=2), expected_next)  # noqa: NPY002


def test_compat_parametrize_with_checks_hands_pytest_a_list():
    from sklearn_betacal import PlattScaler

    mark = _compat.parametrize_with_checks([PlattScaler()])
    names, cases = mark.args
    assert isinstance(cases, list) and len(cases) > 10
    assert "ids" in mark.kwargs
