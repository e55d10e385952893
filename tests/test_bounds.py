# SPDX-License-Identifier: MIT
"""Tests for sklearn_betacal.bounds (Thm 3.1, eq. (6) and their inverses)."""

import math

import pytest
from _golden import load_golden
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_betacal.bounds import (
    beta_binning_epsilon,
    n_bins_for_epsilon,
    points_per_bin_for_epsilon,
    umd_epsilon,
)

GOLDEN = load_golden("metrics_golden.json")


@pytest.mark.parametrize("case", GOLDEN["beta_binning_epsilon"], ids=str)
def test_beta_binning_epsilon_matches_mpmath(case):
    got = beta_binning_epsilon(case["n"], case["b"], alpha=case["alpha"], nu=case["nu"])
    assert_allclose(got, case["eps"], rtol=1e-13)


@pytest.mark.parametrize("case", GOLDEN["umd_epsilon"], ids=str)
def test_umd_epsilon_matches_mpmath(case):
    got = umd_epsilon(case["n"], case["bins"], alpha=case["alpha"], nu=case["nu"])
    assert_allclose(got, case["eps"], rtol=1e-13)


@pytest.mark.parametrize("case", GOLDEN["points_per_bin_for_epsilon"], ids=str)
def test_points_per_bin_for_epsilon_matches_integer_scan(case):
    got = points_per_bin_for_epsilon(
        case["eps"], case["n"], alpha=case["alpha"], nu=case["nu"]
    )
    assert isinstance(got, int)
    assert got == case["b"]


@pytest.mark.parametrize("case", GOLDEN["n_bins_for_epsilon"], ids=str)
def test_n_bins_for_epsilon_matches_integer_scan(case):
    got = n_bins_for_epsilon(case["eps"], case["n"], alpha=case["alpha"], nu=case["nu"])
    assert isinstance(got, int)
    assert got == case["bins"]


def test_points_per_bin_for_epsilon_reproduces_figure2():
    # Figure 2: "when nu = 0, practitioners should set b ~ 300 when N = 1000,
    # b ~ 400 when N = 5000, b ~ 500 when N = 20000 (attaining eps = 0.1)".
    # The alpha behind the figure is not stated; alpha = 0.01 reproduces it.
    fig = GOLDEN["figure2_readings"]
    got = {
        int(n): points_per_bin_for_epsilon(fig["eps"], int(n), alpha=fig["alpha"])
        for n in fig["n_to_b"]
    }
    for n, reading in fig["n_to_b"].items():
        assert abs(got[int(n)] - reading) <= 0.1 * reading, (n, got)
        # rounding the answer to the nearest 100 gives the reading
        assert round(got[int(n)], -2) == reading
    assert got[1000] < got[5000] < got[20000]


def test_points_per_bin_for_epsilon_figure2_misspecified_needs_more_than_n():
    # Figure 2: with nu = 0.1, eps = 0.15 needs b > 1000 (N = 1000: impossible)
    with pytest.raises(ValueError, match="No points_per_bin <= n_samples=1000"):
        points_per_bin_for_epsilon(0.15, 1000, alpha=0.01, nu=0.1)
    assert points_per_bin_for_epsilon(0.15, 20000, alpha=0.01, nu=0.1) > 1000


def test_points_per_bin_for_epsilon_default_alpha_documented():
    # the default alpha = 0.1 gives smaller b than the figure's alpha = 0.01
    assert points_per_bin_for_epsilon(0.1, 1000) == 226


def test_points_per_bin_for_epsilon_rejects_eps_not_above_nu():
    with pytest.raises(ValueError, match="must exceed the misspecification"):
        points_per_bin_for_epsilon(0.05, 1000, nu=0.05)
    with pytest.raises(ValueError, match="must exceed the misspecification"):
        n_bins_for_epsilon(0.01, 1000, nu=0.2)


def test_points_per_bin_for_epsilon_small_b_edge():
    # a loose target is reached already at b = 2
    assert points_per_bin_for_epsilon(5.0, 100) == 2


def test_n_bins_for_epsilon_unreachable():
    with pytest.raises(ValueError, match="Even one bin"):
        n_bins_for_epsilon(0.01, 100)


def test_epsilon_functions_reject_impossible_sizes():
    with pytest.raises(ValueError, match="exceeds n_samples"):
        beta_binning_epsilon(100, 101)
    with pytest.raises(ValueError, match="n_samples >= 2 \\* n_bins"):
        umd_epsilon(100, 51)


@pytest.mark.parametrize(
    "func, args, kwargs",
    [
        (beta_binning_epsilon, (1000, 1), {}),
        (beta_binning_epsilon, (1000.0, 10), {}),
        (beta_binning_epsilon, (1000, 10), {"alpha": 0}),
        (beta_binning_epsilon, (1000, 10), {"alpha": 1.5}),
        (beta_binning_epsilon, (1000, 10), {"nu": -0.1}),
        (umd_epsilon, (1000, 0), {}),
        (points_per_bin_for_epsilon, (0.0, 1000), {}),
        (points_per_bin_for_epsilon, (0.1, 1), {}),
        (n_bins_for_epsilon, (-1, 1000), {}),
        (n_bins_for_epsilon, (0.1, 1000), {"alpha": 1}),
    ],
)
def test_bounds_param_validation(func, args, kwargs):
    with pytest.raises(InvalidParameterError):
        func(*args, **kwargs)


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(2, 50000),
    eps=st.floats(0.02, 1.5),
    alpha=st.floats(1e-4, 0.5),
    nu=st.floats(0, 0.05),
)
def test_points_per_bin_for_epsilon_property_smallest_integer(n, eps, alpha, nu):
    try:
        b = points_per_bin_for_epsilon(eps, n, alpha=alpha, nu=nu)
    except ValueError:
        # unreachable: then even b = N misses the target
        assert eps <= nu or beta_binning_epsilon(n, n, alpha=alpha, nu=nu) > eps
        return
    assert 2 <= b <= n
    assert beta_binning_epsilon(n, b, alpha=alpha, nu=nu) <= eps
    if b > 2:
        assert beta_binning_epsilon(n, b - 1, alpha=alpha, nu=nu) > eps


@settings(max_examples=80, deadline=None)
@given(n=st.integers(2, 50000), eps=st.floats(0.02, 1.5), alpha=st.floats(1e-4, 0.5))
def test_n_bins_for_epsilon_property_largest_integer(n, eps, alpha):
    try:
        bins = n_bins_for_epsilon(eps, n, alpha=alpha)
    except ValueError:
        assert umd_epsilon(n, 1, alpha=alpha) > eps
        return
    assert 1 <= bins <= n // 2
    assert umd_epsilon(n, bins, alpha=alpha) <= eps
    if bins + 1 <= n // 2:
        assert umd_epsilon(n, bins + 1, alpha=alpha) > eps


def test_beta_binning_epsilon_decreasing_in_points_per_bin():
    values = [beta_binning_epsilon(5000, b) for b in range(2, 5001, 7)]
    assert all(a > b for a, b in zip(values[:-1], values[1:], strict=True))
    assert math.isclose(
        beta_binning_epsilon(5000, 100, nu=0.05) - beta_binning_epsilon(5000, 100),
        0.05,
    )
