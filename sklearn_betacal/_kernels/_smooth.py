# SPDX-License-Identifier: MIT
"""Smooth ECE (smECE) of Blasiok and Nakkiran, pure NumPy/SciPy.

J. Blasiok and P. Nakkiran, "Smooth ECE: Principled reliability diagrams via
kernel smoothing", ICLR 2024 (arXiv:2309.12236), Sec. 3-4: the residuals
``r = p - y`` are kernel-smoothed over the score axis with a Gaussian kernel
reflected at 0 and 1,

    smECE_sigma = int |r_hat_sigma(t)| delta_hat_sigma(t) dt / int delta_hat_sigma,

(``r_hat`` the smoothed residual, ``delta_hat`` the smoothed density), and the
bandwidth is the fixed point ``sigma* = smECE_sigma*`` (their Thm 4; the
statistic is then a consistent estimator of the distance to calibration up
to constant factors). The discretization is the one of the authors'
package ``relplot`` 1.0: scores are deposited on a uniform grid by linear
interpolation, the grid is convolved with the sampled reflected kernel, the
result is interpolated at ``max(200, round(10 / sigma))`` evaluation points,
and the fixed point is found by ten bisection steps from ``sigma = 1``.

``w`` are weights already rescaled by the caller to sum to the number of rows
with positive weight (so unit weights are the unweighted statistic and the
density's small regularizer sees the same scale).
"""

import numpy as np
from scipy.signal import fftconvolve

#: Regularizer added to the smoothed density before dividing (``relplot``).
_DENSITY_EPS = 1e-4
#: Evaluation mesh of the integral for wide kernels (``relplot.config``).
_MESH_POINTS = 200
#: Bisection steps of the bandwidth search and its smallest bandwidth.
_REFINE = 10
_MIN_SIGMA = 1e-3


def _grid_deposit(f, values, n_grid):
    """Linear-interpolation deposit of ``values`` at ``f`` on ``n_grid`` nodes."""
    pos = f * (n_grid - 1)
    idx = np.clip(pos.astype(np.intp), 0, n_grid - 2)
    frac = pos - idx
    out = np.bincount(idx, weights=(1.0 - frac) * values, minlength=n_grid)
    out += np.bincount(idx + 1, weights=frac * values, minlength=n_grid)
    return out


def _interpolate(t, grid_values):
    n = grid_values.shape[0]
    step = 1.0 / (n - 1)
    idx = np.clip((t * (n - 1)).astype(np.intp), 0, n - 2)
    frac = (t - idx * step) / step
    return grid_values[idx] * (1.0 - frac) + grid_values[idx + 1] * frac


def _reflected_smooth(f, values, t, sigma):
    """Values smoothed by the reflected Gaussian kernel, evaluated at ``t``."""
    n_grid = max(2000, round(20.0 / sigma)) // 2 + 1
    grid = _grid_deposit(f, values, n_grid)
    nodes = np.linspace(0.0, 1.0, n_grid)
    kernel = np.exp(-((nodes - 0.5) ** 2) / (2.0 * sigma**2))
    kernel /= np.sqrt(2.0 * np.pi) * sigma
    extended = np.concatenate([grid[::-1][:-1], grid, grid[::-1][1:]])
    smoothed = fftconvolve(extended, kernel, mode="valid")
    smoothed = smoothed[n_grid // 2 : n_grid // 2 + n_grid]
    return _interpolate(t, smoothed)


def smooth_ece_at(f, y, w, sigma):
    """smECE at a fixed bandwidth ``sigma`` (``relplot.smECE_sigma``)."""
    n_eval = max(round(10.0 / sigma), _MESH_POINTS)
    t = np.linspace(0.0, 1.0, n_eval)
    ones = np.ones_like(f) if w is None else w
    residual = f - y if w is None else w * (f - y)
    density = _reflected_smooth(f, ones, t, sigma) + _DENSITY_EPS
    smoothed = _reflected_smooth(f, residual, t, sigma) / density
    return float(np.sum(np.abs(smoothed) * density) / np.sum(density))


def smooth_ece(f, y, w):
    """smECE at its fixed-point bandwidth; returns ``(smece, sigma)``."""

    def below(sigma):  # the bandwidth is still smaller than its smECE
        return sigma < _MIN_SIGMA or sigma < smooth_ece_at(f, y, w, sigma)

    if below(1.0):
        sigma = 1.0
    else:
        sigma, lower = 1.0, 0.0
        for _ in range(_REFINE):
            mid = (sigma + lower) / 2.0
            if below(mid):
                lower = mid
            else:
                sigma = mid
    return smooth_ece_at(f, y, w, sigma), sigma


def smooth_reliability(f, y, w, sigma, t):
    """Smoothed accuracy ``t - r_hat(t)`` and density at ``t`` (the diagram)."""
    ones = np.ones_like(f) if w is None else w
    residual = f - y if w is None else w * (f - y)
    density = _reflected_smooth(f, ones, t, sigma) + _DENSITY_EPS
    smoothed = _reflected_smooth(f, residual, t, sigma) / density
    return t - smoothed, density
