# SPDX-License-Identifier: MIT
"""Laplace maximum likelihood for the random-intercept/random-slope logit model.

The model is Eq. (5) of the beta-calibration paper,

    Y_i ~ Bernoulli(expit(B0 + U_s + (B1 + V_s) x_i)),
    U_s ~ N(0, sigma_0^2),  V_s ~ N(0, sigma_1^2)  independent,

i.e. lme4's ``glmer(y ~ x + (1 + x || cell), family = binomial)``. It is fitted
the way glmer fits it with its default ``nAGQ = 1``: the random effects are
written in lme4's spherical form ``(U_s, V_s) = (theta_0 u_0s, theta_1 u_1s)``
with ``u_s ~ N(0, I)``, their conditional modes are found by penalised Newton
(lme4's PIRLS), and the marginal deviance is replaced by its Laplace
approximation

    d(beta, theta) = sum_s [ dev_s(u_s) + |u_s|^2 + log det H_s ],
    H_s = Lambda' Z_s' W_s Z_s Lambda + I,

which is minimised over ``(beta, theta)``; ``theta`` enters only through
``theta_k^2`` and is reported as ``|theta|`` (lme4's bound ``theta >= 0``), and
a zero ``theta_k`` is checked against a profile before it is accepted
(:func:`fit_laplace`).

Because the two random effects of a cell enter only that cell's rows, every
``H_s`` is a 2x2 matrix and all inner Newton problems are solved at once with
per-cell power sums (``np.bincount``) and closed-form 2x2 inverses. The
gradient of ``d`` is exact: envelope theorem for the penalised deviance plus
the implicit derivative of the conditional modes in the log-determinant.

Pure NumPy/SciPy: inputs are validated float64/int64 arrays.
"""

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from ._scaling import covariate_exponent

#: Newton iterations for the conditional modes per outer evaluation.
_INNER_MAX_ITER = 50
_INNER_TOL = 1e-10


def _cell_sums(values, idx, n_bins):
    return np.bincount(idx, weights=values, minlength=n_bins)[: n_bins - 1]


def _row_deviance(eta, y, w):
    """Per-row ``-2 w (y log mu + (1 - y) log(1 - mu))`` and ``mu = expit(eta)``.

    One ``exp`` and one ``log1p`` per row: ``-log-lik = softplus(eta) - y eta``.
    """
    e = np.exp(-np.abs(eta))
    dev = 2.0 * w * (np.maximum(eta, 0.0) + np.log1p(e) - y * eta)
    mu = np.where(eta >= 0, 1.0, e) / (1.0 + e)
    return dev, mu


def _bernoulli_deviance(eta, y, w):
    """``-2 * sum w (y log mu + (1 - y) log(1 - mu))`` (binomial deviance)."""
    return float(np.sum(_row_deviance(eta, y, w)[0]))


def conditional_modes(x, y, w, idx, n_cells, beta, theta, u_start=None):
    """Conditional modes of the spherical random effects (lme4's PIRLS step).

    Minimises ``dev(u) + |u|^2`` for every cell at once by damped Newton on
    the 2-vector ``u_s`` (the penalised logistic deviance is strictly convex).

    Parameters
    ----------
    x, y, w : ndarray of shape (n,), float64
        Covariate, target in [0, 1], non-negative weights.
    idx : ndarray of shape (n,), int64
        Cell index in ``[0, n_cells)``; ``n_cells`` marks rows in no cell
        (fixed effects only).
    n_cells : int
    beta, theta : ndarray of shape (2,)
    u_start : ndarray of shape (n_cells, 2) or None

    Returns
    -------
    u : ndarray of shape (n_cells, 2)
    converged : bool
    """
    nb = n_cells + 1
    u = np.zeros((n_cells, 2)) if u_start is None else u_start.copy()
    fixed = beta[0] + beta[1] * x
    t0, t1 = theta

    def per_cell_objective(u):
        ue = np.vstack([u, np.zeros((1, 2))])
        eta = fixed + t0 * ue[idx, 0] + t1 * ue[idx, 1] * x
        dev, mu = _row_deviance(eta, y, w)
        return _cell_sums(dev, idx, nb) + np.sum(u * u, axis=1), mu

    obj, mu = per_cell_objective(u)
    converged = False
    for _ in range(_INNER_MAX_ITER):
        r = w * (mu - y)
        ww = w * mu * (1.0 - mu)
        r0 = _cell_sums(r, idx, nb)
        r1 = _cell_sums(r * x, idx, nb)
        s0 = _cell_sums(ww, idx, nb)
        s1 = _cell_sums(ww * x, idx, nb)
        s2 = _cell_sums(ww * x * x, idx, nb)
        # gradient and Hessian of (dev + |u|^2) / 2
        g0 = t0 * r0 + u[:, 0]
        g1 = t1 * r1 + u[:, 1]
        h00 = t0 * t0 * s0 + 1.0
        h01 = t0 * t1 * s1
        h11 = t1 * t1 * s2 + 1.0
        det = h00 * h11 - h01 * h01
        step = np.column_stack(
            [(h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det]
        )
        decrement = np.sum(step * np.column_stack([g0, g1]), axis=1)
        if np.all(decrement < _INNER_TOL):
            # inside the region of quadratic convergence: the last full
            # Newton step takes the score from ~sqrt(tol) to ~tol
            u = u - step
            converged = True
            break
        # step halving per cell until the penalised deviance decreases
        scale = np.ones(n_cells)
        for _halving in range(30):
            u_new = u - scale[:, None] * step
            obj_new, mu_new = per_cell_objective(u_new)
            worse = obj_new > obj + 1e-12 * np.abs(obj)
            if not worse.any():
                break
            scale[worse] *= 0.5
        u, obj, mu = u_new, obj_new, mu_new
    return u, converged


def laplace_deviance(params, x, y, w, idx, n_cells, u_start=None, grad=True):
    """Laplace-approximated deviance ``d(beta, theta)`` and its gradient.

    Parameters
    ----------
    params : ndarray of shape (4,)
        ``(beta_0, beta_1, theta_0, theta_1)``.
    x, y, w, idx, n_cells :
        As in :func:`conditional_modes`.
    u_start : ndarray of shape (n_cells, 2) or None
        Warm start for the conditional modes.
    grad : bool
        Also return the gradient with respect to ``params``.

    Returns
    -------
    deviance : float
    gradient : ndarray of shape (4,) (only when ``grad``)
    u : ndarray of shape (n_cells, 2)
        Spherical conditional modes.
    converged : bool
    """
    beta = params[:2]
    theta = params[2:]
    t0, t1 = theta
    nb = n_cells + 1
    u, converged = conditional_modes(x, y, w, idx, n_cells, beta, theta, u_start)
    ue = np.vstack([u, np.zeros((1, 2))])
    eta = beta[0] + beta[1] * x + t0 * ue[idx, 0] + t1 * ue[idx, 1] * x
    row_dev, mu = _row_deviance(eta, y, w)
    ww = w * mu * (1.0 - mu)
    s0 = _cell_sums(ww, idx, nb)
    s1 = _cell_sums(ww * x, idx, nb)
    s2 = _cell_sums(ww * x * x, idx, nb)
    h00 = t0 * t0 * s0 + 1.0
    h01 = t0 * t1 * s1
    h11 = t1 * t1 * s2 + 1.0
    det = h00 * h11 - h01 * h01
    dev = float(np.sum(row_dev) + np.sum(u * u) + np.sum(np.log(det)))
    if not grad:
        return dev, u, converged

    # H^{-1} = [[a, b], [b, c]]
    a, b, c = h11 / det, -h01 / det, h00 / det
    r = w * (mu - y)
    r0 = _cell_sums(r, idx, nb)
    r1 = _cell_sums(r * x, idx, nb)
    u0, u1 = u[:, 0], u[:, 1]

    # (1) envelope part: partial derivative of dev + |u|^2 at fixed u
    g = np.empty(4)
    g[0] = 2.0 * np.sum(r)
    g[1] = 2.0 * np.sum(r * x)
    g[2] = 2.0 * np.sum(r0 * u0)
    g[3] = 2.0 * np.sum(r1 * u1)

    # (2) implicit derivative du/dphi = -H^{-1} M, with
    # M = sum_i ww z_i (d eta_i / d phi)' + sum_i r_i d z_i / d phi,
    # z_i = (t0, t1 x_i), d eta_i/d phi = (1, x_i, u0, u1 x_i).
    # Rows of M: component of u; columns: phi = (b0, b1, t0, t1).
    M = np.empty((n_cells, 2, 4))
    M[:, 0, 0] = t0 * s0
    M[:, 0, 1] = t0 * s1
    M[:, 0, 2] = t0 * s0 * u0 + r0
    M[:, 0, 3] = t0 * s1 * u1
    M[:, 1, 0] = t1 * s1
    M[:, 1, 1] = t1 * s2
    M[:, 1, 2] = t1 * s1 * u0
    M[:, 1, 3] = t1 * s2 * u1 + r1
    D = np.empty_like(M)
    D[:, 0, :] = -(a[:, None] * M[:, 0, :] + b[:, None] * M[:, 1, :])
    D[:, 1, :] = -(b[:, None] * M[:, 0, :] + c[:, None] * M[:, 1, :])

    # (3) log det H: d/dphi_k = sum_i w W'_i q_i deta_i/dphi_k
    #                          + 2 sum_i ww_i z_i' H^{-1} dz_i/dphi_k,
    # q_i = z_i' H^{-1} z_i = qa + qb x + qc x^2,
    # total deta_i/dphi_k = e0_k + e1_k x (per-cell constants).
    wd = ww * (1.0 - 2.0 * mu)
    p = [_cell_sums(wd * x**k, idx, nb) for k in range(4)]
    qa = t0 * t0 * a
    qb = 2.0 * t0 * t1 * b
    qc = t1 * t1 * c
    e0 = np.empty((n_cells, 4))
    e1 = np.empty((n_cells, 4))
    e0[:, 0], e1[:, 0] = 1.0, 0.0
    e0[:, 1], e1[:, 1] = 0.0, 1.0
    e0[:, 2], e1[:, 2] = u0, 0.0
    e0[:, 3], e1[:, 3] = 0.0, u1
    e0 += t0 * D[:, 0, :]
    e1 += t1 * D[:, 1, :]
    # sum_i wd (qa + qb x + qc x^2)(e0 + e1 x)
    poly = (
        qa[:, None] * (p[0][:, None] * e0 + p[1][:, None] * e1)
        + qb[:, None] * (p[1][:, None] * e0 + p[2][:, None] * e1)
        + qc[:, None] * (p[2][:, None] * e0 + p[3][:, None] * e1)
    )
    g += poly.sum(axis=0)
    # explicit theta dependence of z: dz/dt0 = (1, 0), dz/dt1 = (0, x)
    g[2] += 2.0 * np.sum(t0 * a * s0 + t1 * b * s1)
    g[3] += 2.0 * np.sum(t0 * b * s1 + t1 * c * s2)
    return dev, g, u, converged


#: Trial values of a zero ``theta_k`` for the boundary check (lme4's
#: ``restart_edge`` probes one point; the deviance is even in ``theta_k``, so
#: its slope at 0 is exactly 0 and a finite profile is needed).
_BOUNDARY_PROBES = (0.05, 0.2, 0.5, 1.0, 2.0)
#: Below this a theta is "on the boundary" (lme4's ``boundary.tol`` is 1e-5).
_BOUNDARY_TOL = 1e-4


def fit_laplace(x, y, w, idx, n_cells, beta_start, theta_start=(1.0, 1.0), tol=1e-9):
    """Maximum likelihood of Eq. (5) under the Laplace approximation.

    Minimises :func:`laplace_deviance` jointly over ``(beta, theta)`` with
    L-BFGS-B (lme4 optimises the same objective with bobyqa then Nelder-Mead,
    also jointly over beta in its final stage), then checks the boundary.

    The deviance is an even function of each ``theta_k`` (``u_k -> -u_k``), so
    its derivative at ``theta_k = 0`` is exactly zero: a gradient method that
    is projected onto the bound ``theta >= 0`` stays there for good, even when
    ``theta_k = 0`` is a local *maximum* of the profile (lme4's own tests note
    that L-BFGS-B "can't get off the boundary" for glmer). So ``theta`` is
    optimised without bounds and reported as ``|theta|``, and every
    ``theta_k`` that ends below ``_BOUNDARY_TOL`` is profiled at a few
    positive values (beta and the other theta fixed): if one lowers the
    deviance, the fit restarts from the best of them (lme4's
    ``restart_edge``, with a profile instead of its one-sided difference). The
    boundary solution is kept only when no probe beats it -- a
    likelihood-ratio check of ``theta_k = 0`` against its neighbours.

    Returns
    -------
    dict with ``beta`` (2,), ``theta`` (2,), ``u`` (n_cells, 2) spherical modes,
    ``deviance``, ``converged``, ``n_iter`` and ``n_restarts`` (boundary
    restarts that lowered the deviance).
    """
    shift = covariate_exponent(x)
    xs = np.ldexp(x, -shift) if shift else x
    beta_start = np.array([beta_start[0], np.ldexp(beta_start[1], shift)])
    # the objective is divided by the total weight (kept finite by the caller)
    scale = max(float(np.sum(w)), 1.0)
    state = {"u": None}

    def fun(params):
        dev, g, u, _ = laplace_deviance(params, xs, y, w, idx, n_cells, state["u"])
        state["u"] = u
        return dev / scale, g / scale

    def run(start):
        state["u"] = None
        return minimize(
            fun,
            start,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 500, "ftol": tol, "gtol": 1e-7},
        )

    def deviance_at(params):
        return laplace_deviance(params, xs, y, w, idx, n_cells, grad=False)[0]

    start = np.concatenate([np.asarray(beta_start, float), theta_start])
    res = run(start)
    n_iter, n_restarts, success = int(res.nit), 0, bool(res.success)
    best = res.x.copy()
    best[2:] = np.abs(best[2:])
    best_dev = deviance_at(best)
    for _ in range(4):  # each restart leaves the boundary in one more theta
        on_edge = np.flatnonzero(best[2:] < _BOUNDARY_TOL)
        trials = []
        for k in on_edge:
            for t in _BOUNDARY_PROBES:
                probe = best.copy()
                probe[2 + k] = t
                trials.append((deviance_at(probe), probe))
        if not trials:
            break
        dev, probe = min(trials, key=lambda item: item[0])
        # a real improvement, not rounding: the optimiser's own tolerance
        if not dev < best_dev - max(tol * abs(best_dev), 1e-8):
            break
        res = run(probe)
        n_iter += int(res.nit)
        cand = res.x.copy()
        cand[2:] = np.abs(cand[2:])
        cand_dev = deviance_at(cand)
        if not cand_dev < best_dev:
            break
        best, best_dev, success = cand, cand_dev, bool(res.success)
        n_restarts += 1
    dev, u, inner_ok = laplace_deviance(best, xs, y, w, idx, n_cells, grad=False)
    beta, theta = best[:2].copy(), best[2:].copy()
    beta[1], theta[1] = np.ldexp(beta[1], -shift), np.ldexp(theta[1], -shift)
    return {
        "beta": beta,
        "theta": theta,
        "u": u,
        "deviance": float(dev),
        "converged": bool(success and inner_ok and np.isfinite(dev)),
        "n_iter": n_iter,
        "n_restarts": n_restarts,
    }


def fit_pooled_logistic(x, y, w, tol=1e-10, max_iter=100):
    """Weighted ML logistic regression ``expit(b0 + b1 x)`` by Newton (IRLS).

    Used as the starting point of :func:`fit_laplace`. Returns ``beta`` (2,)
    (finite even under separation: iterations stop after ``max_iter``).
    """
    k = covariate_exponent(x)
    x = np.ldexp(x, -k) if k else x
    # the ML fit is unchanged by a common weight factor: beyond 2**100 bring
    # the largest weight to [0.5, 1) by an exact power of two so the sums
    # cannot overflow (below, nothing changes: the start of the mixed fit and
    # its weight = repetition invariance stay as they were)
    if w.size and w.max() > 2.0**100:
        w = np.ldexp(w, -int(np.frexp(w.max())[1]))
    beta = np.zeros(2)
    for _ in range(max_iter):
        eta = beta[0] + beta[1] * x
        mu = expit(eta)
        r = w * (mu - y)
        ww = w * mu * (1.0 - mu)
        g = np.array([r.sum(), (r * x).sum()])
        H = np.array([[ww.sum(), (ww * x).sum()], [(ww * x).sum(), (ww * x * x).sum()]])
        H += 1e-10 * np.eye(2) * max(H[0, 0], 1.0)
        step = np.linalg.solve(H, g)
        beta = beta - step
        if abs(step @ g) < tol:
            break
    beta[1] = np.ldexp(beta[1], -k)
    return beta
