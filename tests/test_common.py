# SPDX-License-Identifier: MIT
"""Common tests over every estimator of the package.

``test_sklearn_compatible`` runs scikit-learn's estimator checks on
:data:`_instances.INSTANCES`, with the expected failures and their reasons
from :func:`_instances.expected_failed_checks` (one table for the whole
package). The ``test_*_invariant`` tests check the library's own contracts
(STYLE.md, DESIGN.md) for every calibrator that documents them:

- a zero weight is exactly dropping the row;
- an integer weight is exactly repeating the row, where documented (not for
  scaling-beta-binning, whose D1/D2 split draws rows, not weight units);
- a row in cell ``-1`` (outside every cell) is calibrated by the root.
"""

import numpy as np
import pytest
from _instances import INSTANCES, expected_failed_checks
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression

from sklearn_betacal import (
    BetaBinningCalibrator,
    GroupColumnPartitioner,
    HierarchicalLogisticScaler,
    PlattScaler,
    ScalingBetaBinningCalibrator,
    ScalingBinningCalibrator,
    TemperatureScaler,
    UMDBinner,
)
from sklearn_betacal._compat import parametrize_with_checks


@parametrize_with_checks(INSTANCES, expected_failed_checks=expected_failed_checks)
@pytest.mark.filterwarnings("ignore:The group column holds non-integer floats")
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ----------------------------------------------------------------- invariants
def _data(seed, n, grouped):
    """Confidences on a grid (ties on purpose), labels, and 3 groups."""
    rng = np.random.default_rng(seed)
    h = np.round(rng.uniform(0.05, 0.95, size=n) * 20) / 20
    g = rng.integers(0, 3, size=n)
    # group 0 is overconfident, group 2 underconfident: the cells differ
    truth = np.clip(h + 0.2 * (g - 1), 0.02, 0.98) if grouped else h
    y = (rng.uniform(size=n) < truth).astype(int)
    y[:2] = [0, 1]  # both classes, whatever the seed
    if not grouped:
        return h, y
    return np.column_stack([h, g]), y


def _frozen_scaler(seed):
    h, y = _data(seed, 200, grouped=False)
    return FrozenEstimator(LogisticRegression().fit(h.reshape(-1, 1), y))


#: name -> (estimator factory, grouped data, integer weight = repetition,
#: atol of the predicted probabilities). Exact repetition needs delta=0 for
#: the binning calibrators (a repeated row would get its own tie-breaking
#: nudge) and a partition that does not move with multiplicities.
WEIGHT_CASES = {
    "temperature": (lambda: TemperatureScaler(), False, True, 1e-9),
    "platt": (lambda: PlattScaler(), False, True, 1e-9),
    "umd": (lambda: UMDBinner(n_bins=4, delta=0.0), False, True, 1e-12),
    "scaling-binning": (
        lambda: ScalingBinningCalibrator(_frozen_scaler(0), n_bins=4, delta=0.0),
        False,
        True,
        1e-12,
    ),
    "beta-binning": (
        lambda: BetaBinningCalibrator(
            GroupColumnPartitioner(), points_per_bin=5, delta=0.0
        ),
        True,
        True,
        1e-12,
    ),
    "hierarchical": (
        lambda: HierarchicalLogisticScaler(GroupColumnPartitioner()),
        True,
        True,
        1e-6,
    ),
    "scaling-beta-binning": (
        lambda: ScalingBetaBinningCalibrator(
            GroupColumnPartitioner(), points_per_bin=5, random_state=0
        ),
        True,
        False,
        1e-12,
    ),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", list(WEIGHT_CASES))
def test_zero_weight_is_dropping_the_row_invariant(name, seed):
    make, grouped, _, atol = WEIGHT_CASES[name]
    X, y = _data(seed, 150, grouped)
    w = np.random.default_rng(seed).integers(0, 4, size=y.size).astype(float)
    w[:2] = 1.0
    keep = w > 0
    assert not keep.all()
    weighted = make().fit(X, y, sample_weight=w)
    dropped = make().fit(X[keep], y[keep], sample_weight=w[keep])
    assert_allclose(
        weighted.predict_proba(X), dropped.predict_proba(X), rtol=0, atol=atol
    )


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(
    "name", [name for name, case in WEIGHT_CASES.items() if case[2]]
)
def test_integer_weight_is_repeating_the_row_invariant(name, seed):
    make, grouped, _, atol = WEIGHT_CASES[name]
    X, y = _data(seed, 150, grouped)
    w = np.random.default_rng(seed + 10).integers(0, 4, size=y.size)
    w[:2] = 1
    weighted = make().fit(X, y, sample_weight=w.astype(float))
    repeated = make().fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert_allclose(
        weighted.predict_proba(X), repeated.predict_proba(X), rtol=0, atol=atol
    )


def _root_beta_binning(est, X, y, h_new):
    # Alg. 1, lines 1-2: the root is UMD on every row with B = floor(N / b),
    # drawing its tie-breaking nudges in the same row order as UMDBinner
    umd = UMDBinner(
        points_per_bin=est.points_per_bin, delta=est.delta, random_state=0
    ).fit(X[:, 0], y)
    return umd.predict_proba(h_new)[:, 1]


def _root_hierarchical(est, X, y, h_new):
    # Eq. (5) with U_s = V_s = 0: the fixed effects alone
    b0, b1 = np.ravel(est.fixed_effects_)
    return 1.0 / (1.0 + np.exp(-(b0 + b1 * h_new)))


ROOT_CASES = {
    "beta-binning": (
        lambda: BetaBinningCalibrator(
            GroupColumnPartitioner(), points_per_bin=5, random_state=0
        ),
        _root_beta_binning,
    ),
    "hierarchical": (
        lambda: HierarchicalLogisticScaler(GroupColumnPartitioner()),
        _root_hierarchical,
    ),
    "scaling-beta-binning": (
        lambda: ScalingBetaBinningCalibrator(
            GroupColumnPartitioner(), points_per_bin=5, random_state=0
        ),
        None,
    ),
}


@pytest.mark.parametrize("name", list(ROOT_CASES))
def test_cell_minus_one_uses_the_root_invariant(name):
    make, root = ROOT_CASES[name]
    X, y = _data(3, 300, grouped=True)
    est = make().fit(X, y)
    h_new = np.linspace(0.0, 1.0, 21)
    # groups 7 and 8 were never seen: GroupColumnPartitioner puts them in -1
    outside = [np.column_stack([h_new, np.full(h_new.size, g)]) for g in (7, 8)]
    for Xo in outside:
        assert_array_equal(est.apply(Xo), -1)
    p7, p8 = (est.predict_proba(Xo)[:, 1] for Xo in outside)
    # the root does not look at the features
    assert_array_equal(p7, p8)
    if root is not None:
        assert_allclose(p7, root(est, X, y, h_new), rtol=0, atol=1e-12)
    # and differs from at least one fitted cell (the check can fail)
    inside = np.column_stack([h_new, np.zeros(h_new.size)])
    assert not np.array_equal(est.predict_proba(inside)[:, 1], p7)
