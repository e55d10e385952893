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
per-cell power sums and closed-form 2x2 inverses. The rows are grouped by cell
once (:class:`_CellRows`, one stable sort), so that a per-cell sum is one
``np.add.reduceat`` over contiguous segments and a per-cell value is spread
to its rows by ``np.repeat``, and every evaluation writes into the same
float64 work arrays: an evaluation costs a few passes over the rows. The
gradient of ``d`` is exact: envelope theorem for the penalised deviance plus
the implicit derivative of the conditional modes in the log-determinant.

Pure NumPy/SciPy: inputs are validated float64/int64 arrays.
"""

import numpy as np
from scipy.optimize import minimize

from ._scaling import covariate_exponent

#: Newton iterations for the conditional modes per outer evaluation.
_INNER_MAX_ITER = 50
_INNER_TOL = 1e-10


def _bernoulli_deviance(eta, y, w):
    """``-2 * sum w (y log mu + (1 - y) log(1 - mu))`` (binomial deviance).

    ``-log-lik = softplus(eta) - y eta``, one ``exp`` and one ``log1p`` per row.
    """
    e = np.exp(-np.abs(eta))
    return float(2.0 * np.sum(w * (np.maximum(eta, 0.0) + np.log1p(e) - y * eta)))


class _CellRows:
    """The rows grouped by cell, and the per-row work arrays of an evaluation.

    One stable sort by cell (a radix sort for up to 65,535 cells) makes every
    cell a contiguous segment, rows in no cell last. A per-cell sum is then
    one ``np.add.reduceat`` and a per-cell value reaches its rows through
    ``np.repeat`` -- several times cheaper than ``np.bincount(weights=)`` and
    a fancy-index gather -- and :meth:`at` writes the linear predictor and the
    IRLS quantities into float64 buffers allocated once. No result depends on
    the row order beyond rounding.

    Parameters
    ----------
    x, y, w : ndarray of shape (n,), float64
        Covariate, target in [0, 1], non-negative weights.
    idx : ndarray of shape (n,), int64
        Cell index in ``[0, n_cells]``; ``n_cells`` marks rows in no cell
        (fixed effects only).
    n_cells : int
    """

    def __init__(self, x, y, w, idx, n_cells):
        n = x.shape[0]
        self.n_cells = n_cells
        key = idx.astype(np.uint16) if n_cells < 2**16 else idx
        order = np.argsort(key, kind="stable")
        self.x, self.y = x[order], y[order]
        # unit weights (the usual case) skip two products per evaluation
        self.w = None if bool(np.all(w == 1.0)) else w[order]
        counts = np.bincount(idx, minlength=n_cells + 1)
        self.counts = counts
        self.n_in = n - int(counts[n_cells])
        # segments of the non-empty cells; an empty one sums to 0
        self.full = np.flatnonzero(counts[:n_cells])
        starts = np.cumsum(counts[:n_cells]) - counts[:n_cells]
        self.starts = starts[self.full]
        self.all_full = self.full.size == n_cells
        self.eta, self.e, self.mu, self.r, self.ww, self.tmp, self.tmp2 = (
            np.empty(n) for _ in range(7)
        )

    def sums(self, v):
        """Per-cell sums of the row vector ``v`` (rows in no cell left out)."""
        if self.full.size == 0:
            return np.zeros(self.n_cells)
        seg = np.add.reduceat(v[: self.n_in], self.starts)
        if self.all_full:
            return seg
        out = np.zeros(self.n_cells)
        out[self.full] = seg
        return out

    def spread(self, per_cell, fill):
        """Per-row values: ``per_cell[cell]``, ``fill`` for rows in no cell."""
        return np.repeat(np.append(per_cell, fill), self.counts)

    def at(self, beta, theta, u):
        """Fill ``eta``, ``e = exp(-|eta|)``, ``mu``, ``ww = w mu (1 - mu)`` and
        ``r = w (mu - y)`` at ``eta = B0 + t0 u0 + (B1 + t1 u1) x``."""
        eta, e, mu, d = self.eta, self.e, self.mu, self.tmp
        np.multiply(self.spread(beta[1] + theta[1] * u[:, 1], beta[1]), self.x, out=eta)
        eta += self.spread(beta[0] + theta[0] * u[:, 0], beta[0])
        np.abs(eta, out=e)
        np.negative(e, out=e)
        np.exp(e, out=e)
        np.add(e, 1.0, out=d)
        # q = e / (1 + e) = min(mu, 1 - mu); mu (1 - mu) = e / (1 + e)^2 is
        # exact in both tails, unlike a product with 1 - mu
        np.divide(e, d, out=mu)
        np.divide(mu, d, out=self.ww)
        # mu = q below 0 and 1 - q above, as 0.5 + copysign(0.5 - q, eta):
        # a masked select costs ten times more on mixed signs
        np.subtract(0.5, mu, out=mu)
        np.copysign(mu, eta, out=mu)
        mu += 0.5
        np.subtract(mu, self.y, out=self.r)
        if self.w is not None:
            self.ww *= self.w
            self.r *= self.w

    def half_deviance(self):
        """Per-row ``w (softplus(eta) - y eta)`` at the last :meth:`at`, in
        ``tmp``: half the binomial deviance of each row."""
        dv, t = self.tmp, self.tmp2
        np.log1p(self.e, out=dv)
        np.maximum(self.eta, 0.0, out=t)
        dv += t
        np.multiply(self.y, self.eta, out=t)
        dv -= t
        if self.w is not None:
            dv *= self.w
        return dv

    def score_sums(self):
        """Per-cell ``sum r``, ``sum r x``, ``sum ww``, ``sum ww x``, ``sum ww x^2``."""
        t = self.tmp2
        r0 = self.sums(self.r)
        r1 = self.sums(np.multiply(self.r, self.x, out=t))
        s0 = self.sums(self.ww)
        s1 = self.sums(np.multiply(self.ww, self.x, out=t))
        s2 = self.sums(np.multiply(t, self.x, out=t))
        return r0, r1, s0, s1, s2


def _penalised(rows, beta, theta, u):
    """Per-cell penalised deviance ``dev_s(u_s) + |u_s|^2`` at ``u``."""
    rows.at(beta, theta, u)
    return 2.0 * rows.sums(rows.half_deviance()) + np.sum(u * u, axis=1)


def _modes(rows, beta, theta, u_start=None):
    """:func:`conditional_modes` on rows grouped by :class:`_CellRows`."""
    n_cells = rows.n_cells
    u = np.zeros((n_cells, 2)) if u_start is None else u_start.copy()
    t0, t1 = theta
    obj = _penalised(rows, beta, theta, u)
    converged = False
    for _ in range(_INNER_MAX_ITER):
        r0, r1, s0, s1, s2 = rows.score_sums()
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
        decrement = step[:, 0] * g0 + step[:, 1] * g1
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
            obj_new = _penalised(rows, beta, theta, u_new)
            worse = obj_new > obj + 1e-12 * np.abs(obj)
            if not worse.any():
                break
            scale[worse] *= 0.5
        u, obj = u_new, obj_new
    return u, converged


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
    return _modes(_CellRows(x, y, w, idx, n_cells), beta, theta, u_start)


def _laplace(rows, params, u_start=None, grad=True):
    """:func:`laplace_deviance` on rows grouped by :class:`_CellRows`."""
    beta = params[:2]
    theta = params[2:]
    t0, t1 = theta
    n_cells = rows.n_cells
    u, converged = _modes(rows, beta, theta, u_start)
    rows.at(beta, theta, u)
    half_dev = float(np.sum(rows.half_deviance()))
    r0, r1, s0, s1, s2 = rows.score_sums()
    h00 = t0 * t0 * s0 + 1.0
    h01 = t0 * t1 * s1
    h11 = t1 * t1 * s2 + 1.0
    det = h00 * h11 - h01 * h01
    dev = float(2.0 * half_dev + np.sum(u * u) + np.sum(np.log(det)))
    if not grad:
        return dev, u, converged

    # H^{-1} = [[a, b], [b, c]]
    a, b, c = h11 / det, -h01 / det, h00 / det
    u0, u1 = u[:, 0], u[:, 1]

    # (1) envelope part: partial derivative of dev + |u|^2 at fixed u
    g = np.empty(4)
    g[0] = 2.0 * np.sum(rows.r)
    g[1] = 2.0 * np.dot(rows.r, rows.x)
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
    # wd = ww (1 - 2 mu), its per-cell power sums p_0..p_3
    wd = rows.tmp
    np.multiply(rows.mu, -2.0, out=wd)
    wd += 1.0
    wd *= rows.ww
    p = [rows.sums(wd)]
    for _ in range(3):
        wd *= rows.x
        p.append(rows.sums(wd))
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
    return dev, g, u, converged, D


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
    rows = _CellRows(x, y, w, idx, n_cells)
    out = _laplace(rows, np.asarray(params, dtype=np.float64), u_start, grad)
    return out[:4] if grad else out


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
    rows = _CellRows(xs, y, w, idx, n_cells)
    # the objective is divided by the total weight (kept finite by the caller)
    scale = max(float(np.sum(w)), 1.0)
    # every evaluation starts Newton from the previous one's modes; the last
    # few are kept, so that the point L-BFGS-B returns (one it evaluated) is
    # not solved again for the boundary check and the result
    state = {"u": None, "at": None, "du": None}
    recent = {}

    def fun(params):
        u_start = state["u"]
        if state["du"] is not None:
            # first-order prediction of the modes at the new point from the
            # implicit derivative du/dphi: one Newton step fewer per call
            u_start = u_start + state["du"] @ (params - state["at"])
        dev, g, u, ok, du = _laplace(rows, params, u_start)
        state.update(u=u, at=params.copy(), du=du)
        recent[params.tobytes()] = (dev, u, ok)
        if len(recent) > 3:
            del recent[next(iter(recent))]
        return dev / scale, g / scale

    def run(start, u_start):
        state.update(u=u_start, du=None)
        return minimize(
            fun,
            start,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 500, "ftol": tol, "gtol": 1e-7},
        )

    def settle(params):
        """``params`` with ``|theta|``, and the deviance, modes and inner
        convergence there."""
        hit = recent.get(params.tobytes())
        out = params.copy()
        out[2:] = np.abs(params[2:])
        if hit is None:
            return (out, *_laplace(rows, out, state["u"], grad=False))
        dev, u, ok = hit
        # d is even in each theta_k: (theta_k, u_k) -> (-theta_k, -u_k)
        return out, dev, u * np.where(params[2:] < 0, -1.0, 1.0), ok

    start = np.concatenate([np.asarray(beta_start, float), theta_start])
    res = run(start, None)
    n_iter, n_restarts, success = int(res.nit), 0, bool(res.success)
    best, best_dev, best_u, inner_ok = settle(res.x)
    for _ in range(4):  # each restart leaves the boundary in one more theta
        on_edge = np.flatnonzero(best[2:] < _BOUNDARY_TOL)
        trials = []
        for k in on_edge:
            for t in _BOUNDARY_PROBES:
                probe = best.copy()
                probe[2 + k] = t
                dev, u, _ = _laplace(rows, probe, best_u, grad=False)
                trials.append((dev, probe, u))
        if not trials:
            break
        dev, probe, u = min(trials, key=lambda item: item[0])
        # a real improvement, not rounding: the optimiser's own tolerance
        if not dev < best_dev - max(tol * abs(best_dev), 1e-8):
            break
        res = run(probe, u)
        n_iter += int(res.nit)
        cand, cand_dev, cand_u, cand_ok = settle(res.x)
        if not cand_dev < best_dev:
            break
        best, best_dev, best_u, inner_ok = cand, cand_dev, cand_u, cand_ok
        success = bool(res.success)
        n_restarts += 1
    dev, u = best_dev, best_u
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
