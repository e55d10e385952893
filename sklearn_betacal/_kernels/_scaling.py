# SPDX-License-Identifier: MIT
"""Scaling kernels: temperature scaling and Platt scaling.

Pure NumPy functions (no scikit-learn, no validation): float64 arrays that are
already checked go in, arrays and floats come out.

Temperature scaling (the calibration chapter, "Temperature scaling: the one-scalar
repair"; Guo et al. 2017) minimises the held-out negative log-likelihood

    NLL(beta) = sum_i w_i softplus(-y_i^pm s_i beta) / sum_i w_i

over the inverse temperature ``beta = 1 / tau``. Each term is convex in
``beta`` (softplus of a linear function), so the minimiser is the unique root
of the increasing derivative; the kernels find it with a safeguarded Newton
iteration on ``beta`` inside the chapter's bracket ``tau in [0.05, 20]``.
Each Newton step is one fused pass over the data (one ``exp`` plus two
reductions) and the exact second derivative gives quadratic convergence, so a
fit costs a handful of passes instead of golden-section's 80 probes.

Platt scaling (Platt 1999) fits ``sigma(a s + b)`` by maximum likelihood:
:func:`fit_platt` is the one fit (as scikit-learn's ``_sigmoid_calibration``
is), used by :class:`~sklearn_betacal.PlattScaler`, the learned tree's
recalibration scores and the hierarchical scaler's starting point; it runs a
SciPy trust-region Newton solver on the loss, gradient and 2 x 2 Hessian (the
Newton/IRLS system) of :func:`platt_objective`, and Platt's smoothed targets
are :func:`platt_targets`.
"""

import math
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize
from scipy.special import logit

#: Clip used to turn a probability of exactly 0 or 1 into a finite logit.
#: ``logit(1 - 1e-12) ~= 27.6``: large enough not to distort any real
#: confidence, small enough that ``exp`` never overflows downstream.
LOGIT_EPS = 1e-12

#: Largest double below 0.5 and smallest double above it: a negative score must
#: map below 0.5 and a positive one above it (sign part of the invariance
#: theorem, the calibration chapter), even when ``exp`` rounds ``exp(-z)`` to exactly 1.
BELOW_HALF = float(np.nextafter(0.5, 0.0))
ABOVE_HALF = float(np.nextafter(0.5, 1.0))

#: Elements per block in the Newton passes (128 KiB of float64): each block
#: runs the whole chain of ufuncs while it is still in the L2 cache.
CHUNK = 1 << 14

#: Status codes returned by the 1-D solver.
CONVERGED, AT_LOWER, AT_UPPER, FLAT, MAX_ITER = (
    "converged",
    "lower",
    "upper",
    "flat",
    "max_iter",
)


def data_logit_eps(h, w=None, *, label_floor=True):
    """Data-aware clips ``(low, high)`` for logits of the probabilities ``h``.

    ``h`` is clipped to ``[low, 1 - high]`` before the logit, each side at
    the larger of two resolutions of the fitted data:

    - the labels': with total weight ``W`` no probability closer to the
      boundary than Laplace's rule of succession, ``1 / (W + 2)``, can be
      told apart from it;
    - the confidences': half the distance from the boundary to the closest
      confidence strictly inside ``(0, 1)`` on that side. A verbalized 1.0
      next to a largest 0.95 is one step of the model's scale above it, so it
      maps to 0.975, not to ``1 - 1e-12``.

    A confidence of exactly 1.0 thus gets a logit of a few units (3.7 in the
    example above; at most ``log(W + 1)``) instead of 27.6, and a handful of
    such rows can no longer flatten a fitted slope by their leverage.

    ``label_floor=False`` drops the labels' resolution (a side without any
    inner confidence still uses it): every distinct fitted confidence then
    keeps a distinct logit, which temperature scaling needs to keep every
    ranking of the data it was fitted on.
    Returns an ndarray ``[low, high]``.
    """
    total = h.shape[0] if w is None else float(np.sum(w))
    floor = 1.0 / (total + 2.0)
    keep = h > 0 if w is None else (h > 0) & (w > 0)
    inner_low = h[keep & (h < 1)]
    keep = h < 1 if w is None else (h < 1) & (w > 0)
    inner_high = 1.0 - h[keep & (h > 0)]
    least = floor if label_floor else 0.0
    low = max(least, inner_low.min() / 2.0) if inner_low.size else floor
    high = max(least, inner_high.min() / 2.0) if inner_high.size else floor
    # 1 - high must stay below 1.0 (else the logit is inf): for total weights
    # beyond ~1e16, or confidences within an ulp of 1, 1 / (W + 2) is not
    info = np.finfo(np.float64)
    low, high = max(low, float(info.tiny)), max(high, float(info.epsneg))
    return np.array([min(low, 0.5), min(high, 0.5)])


def to_logit(p, eps=LOGIT_EPS):
    """``log(p / (1 - p))`` with ``p`` clipped to ``[eps, 1 - eps]``.

    ``eps`` may be a pair ``(low, high)``: clip to ``[low, 1 - high]``. The
    logit itself is :func:`scipy.special.logit`, computed in place on the
    clipped copy: one ufunc pass instead of ``log(p) - log1p(-p)``'s three
    (measured 0.15 s against 0.25-0.44 s of CPU at 1e7 values on a loaded
    machine; :func:`scipy.special.expit` against the former two-branch
    expit: 0.06 s against 0.25 s).
    """
    low, high = (eps, eps) if np.ndim(eps) == 0 else eps
    q = np.clip(np.asarray(p, dtype=np.float64), low, 1.0 - high)
    if np.ndim(q) == 0:
        return logit(q)
    return logit(q, out=q)


def _dot(a, b):
    """Inner product of two vectors without BLAS.

    ``np.dot`` hands long vectors to a multithreaded BLAS, whose threads stall
    badly on a busy machine (measured 30 ms instead of 0.6 ms at n = 1e6 with
    a load of 11 on 2 cores); einsum's loop is single-threaded, as fast when
    idle, and deterministic.
    """
    return np.einsum("i,i->", a, b)


# --------------------------------------------------------------------------
# 1-D convex minimisation on the inverse temperature
# --------------------------------------------------------------------------
def newton_convex_1d(derivs, lo, hi, x0=1.0, rtol=1e-12, max_iter=200):
    """Minimise a convex function of one variable on ``[lo, hi]``.

    ``derivs(x)`` returns ``(f'(x), f''(x))``. Newton steps on the root of the
    increasing ``f'``, safeguarded by the bracket of points where the sign of
    ``f'`` is known: a step that leaves the bracket probes the original bound
    (once) or is replaced by a geometric bisection. The loop is bounded by
    ``max_iter``; geometric bisection alone reaches ``rtol`` on ``[0.05, 20]``
    in about 45 steps.

    Returns
    -------
    x : float
        The minimiser (a bound when ``f'`` does not change sign inside).
    n_iter : int
        Number of ``derivs`` evaluations.
    status : str
        ``"converged"``, ``"lower"`` or ``"upper"`` (minimiser at or beyond a
        bound), or ``"max_iter"``.
    """
    a, b = lo, hi  # the minimiser lies in [a, b]
    a_probed = b_probed = False  # has f' been evaluated at the bound?
    x = min(max(x0, lo), hi)
    for it in range(1, max_iter + 1):
        g, h = derivs(x)
        if g == 0.0:
            return x, it, CONVERGED
        if g > 0.0:
            if x <= lo:  # f increasing on the whole bracket
                return lo, it, AT_LOWER
            b, b_probed = x, True
        else:
            if x >= hi:  # f decreasing on the whole bracket
                return hi, it, AT_UPPER
            a, a_probed = x, True
        step = g / h if h > 0.0 else math.nan
        # quadratic convergence: after a Newton step of relative size d the
        # error is ~c d^2 with c = x f'''(x) / (2 f''(x)) of order 1 for these
        # NLLs, so a step below sqrt(rtol) / 10 needs no confirming pass
        if abs(step) <= 0.1 * math.sqrt(rtol) * x:
            return min(max(x - step, a), b), it, CONVERGED
        # Newton on log(x) when f is locally convex in log(x) (a scale
        # parameter: far better first steps from x0 = 1), else on x itself.
        # Both steps agree to second order near the minimiser.
        curv_log = g + x * h
        if curv_log > 0.0:
            x_new = x * math.exp(max(-g / curv_log, -20.0))
        else:
            x_new = x - step
        if not a < x_new < b:
            if x_new <= a and not a_probed:
                x_new = a  # a == lo: check whether the optimum is below it
            elif x_new >= b and not b_probed:
                x_new = b
            else:  # Newton left the bracket: bisect on the log scale
                x_new = math.sqrt(a * b)
        if abs(x_new - x) <= rtol * x:
            return x_new, it, CONVERGED
        if b - a <= rtol * a:
            return 0.5 * (a + b), it, CONVERGED
        x = x_new
    return x, max_iter, MAX_ITER


# --------------------------------------------------------------------------
# binary temperature scaling
# --------------------------------------------------------------------------
def binary_margins(s, y):
    """Signed margins ``t_i = y_i^pm s_i`` with ``y^pm = 2y - 1``.

    As in the calibration chapter.

    ``y`` holds 0.0/1.0; arithmetic instead of ``np.where`` (4x faster).
    """
    t = 2.0 * y
    t -= 1.0
    t *= s
    return t


def binary_nll(beta, t, w=None):
    """Mean NLL of ``sigma(beta s)``: ``sum w softplus(-beta t) / sum w``."""
    loss = np.logaddexp(0.0, -beta * t)
    if w is None:
        return float(loss.mean())
    return float(_dot(w, loss) / w.sum())


def fit_inverse_temperature_binary(t, w, lo, hi, rtol=1e-12, max_iter=200):
    """Inverse temperature ``beta`` minimising the binary NLL on ``[lo, hi]``.

    Parameters
    ----------
    t : ndarray of float64, shape (n,)
        Signed margins ``y^pm s`` (see :func:`binary_margins`).
    w : ndarray of float64, shape (n,), or None
        Non-negative sample weights (``None``: all ones).
    lo, hi : float
        Bracket for ``beta`` (``1/tau_max, 1/tau_min``).

    Returns
    -------
    beta, n_iter, status
        See :func:`newton_convex_1d`; ``status == "flat"`` when every weighted
        margin is zero (the NLL does not depend on ``beta``; ``beta = 1``).
    """
    wt = t if w is None else w * t
    # With all weighted margins >= 0 (separable data) the NLL decreases in
    # beta for ever; with all <= 0 it increases. Decide those without Newton:
    # there f' underflows to 0 long before beta reaches a bound.
    has_pos = bool(np.any(wt > 0))
    has_neg = bool(np.any(wt < 0))
    if not has_pos and not has_neg:
        return 1.0, 0, FLAT
    if not has_neg:
        return hi, 0, AT_UPPER
    if not has_pos:
        return lo, 0, AT_LOWER
    wt2 = wt * t
    n = t.shape[0]
    buf = np.empty(min(n, CHUNK))
    buf2 = np.empty_like(buf)

    def derivs(beta):
        g = h = 0.0
        # blocks of CHUNK elements: the chain of passes stays in cache
        for a in range(0, n, CHUNK):
            tb, u, v = t[a : a + CHUNK], buf, buf2
            if tb.shape[0] < CHUNK:
                u, v = buf[: tb.shape[0]], buf2[: tb.shape[0]]
            # r = sigma(-beta t) = 1 / (1 + exp(beta t)); exp may overflow to
            # inf, which gives the correct limits r = 0 and r (1 - r) = 0.
            np.multiply(tb, beta, out=u)
            with np.errstate(over="ignore"):
                np.exp(u, out=u)
            np.add(u, 1.0, out=u)
            np.reciprocal(u, out=u)
            g -= _dot(wt[a : a + CHUNK], u)  # NLL' = -sum w t sigma(-beta t)
            np.subtract(1.0, u, out=v)
            np.multiply(v, u, out=v)
            h += _dot(wt2[a : a + CHUNK], v)  # NLL'' = sum w t^2 sigma sigma'
        return float(g), float(h)

    return newton_convex_1d(derivs, lo, hi, 1.0, rtol, max_iter)


def sigmoid_scaled(s, beta):
    """``sigma(beta * s)`` computed monotonically, with exact 0.5 decisions.

    ``beta * s`` (one correctly rounded product by a positive constant),
    ``exp``, ``+ 1`` and the reciprocal are each non-decreasing, so the
    composition never swaps two scores' order (it can only merge scores that
    round to the same double). ``sigma(z) >= 0.5`` exactly when ``z >= 0``,
    and the last step makes the output strictly below 0.5 for every negative
    score and strictly above for every positive one (invariance theorem,
    the calibration chapter), even when ``beta * s`` underflows or ``exp`` rounds to 1.
    Below ``beta * s ~= -709`` the result is 0 (true value < 1e-308).
    """
    p = np.multiply(s, -beta)
    with np.errstate(over="ignore"):
        np.exp(p, out=p)
    p += 1.0
    np.reciprocal(p, out=p)
    neg = s < 0
    pos = s > 0
    np.minimum(p, BELOW_HALF, out=p, where=neg)
    np.maximum(p, ABOVE_HALF, out=p, where=pos)
    return p


# --------------------------------------------------------------------------
# multiclass temperature scaling
# --------------------------------------------------------------------------
def multiclass_shift(z, y_idx):
    """Per-row quantities computed once: ``z - max_k z`` and its label entry.

    ``NLL(beta) = sum_i w_i [log sum_k exp(beta zs_ik) - beta zs_i,y_i]`` is
    unchanged by the shift, and ``zs <= 0`` means ``exp`` never overflows.
    The shift of logits near +-1.8e308 can reach -inf; such entries are
    raised to ``-max_float / (4 n)``, where ``exp(beta zs)`` is already 0 for
    every admissible ``beta`` and the sums over rows stay finite (0 * inf
    would be NaN).
    """
    zs = z - z.max(axis=1, keepdims=True)
    floor = -np.finfo(np.float64).max / (4.0 * max(zs.shape[0], 1))
    if zs.size and zs.min() < floor:
        np.maximum(zs, floor, out=zs)
    zy = zs[np.arange(zs.shape[0]), y_idx]
    return zs, zy


def multiclass_nll(beta, zs, zy, w=None):
    """Mean multiclass NLL of ``softmax(beta z)`` given the shifted logits."""
    loss = np.log(np.exp(beta * zs).sum(axis=1)) - beta * zy
    if w is None:
        return float(loss.mean())
    return float(_dot(w, loss) / w.sum())


def fit_inverse_temperature_multiclass(zs, zy, w, lo, hi, rtol=1e-12, max_iter=200):
    """Inverse temperature minimising the multiclass NLL on ``[lo, hi]``.

    ``NLL'(beta) = sum w (E_p[zs] - zs_y)`` and
    ``NLL''(beta) = sum w Var_p[zs]`` with ``p = softmax(beta zs)``; one
    ``exp`` pass over the ``(n, K)`` matrix and three row reductions per
    Newton step. Returns ``(beta, n_iter, status)`` as
    :func:`fit_inverse_temperature_binary`.
    """
    if w is not None:
        keep = w > 0
        if not keep.all():  # zero weight == dropped row
            zs, zy, w = zs[keep], zy[keep], w[keep]
    if not np.any(zs):
        return 1.0, 0, FLAT
    if not np.any(zy):  # every label is a row maximum: NLL non-increasing
        return hi, 0, AT_UPPER
    n, k = zs.shape
    rows = max(1, CHUNK // k)
    buf = np.empty((min(n, rows), k))
    m = np.empty(n)
    var = np.empty(n)

    def derivs(beta):
        # blocks of ~CHUNK elements: exp and the row sums stay in cache
        for a in range(0, n, rows):
            zb = zs[a : a + rows]
            e = buf if zb.shape[0] == buf.shape[0] else buf[: zb.shape[0]]
            np.multiply(zb, beta, out=e)
            np.exp(e, out=e)
            s0 = e.sum(axis=1)
            s1 = np.einsum("ik,ik->i", e, zb)
            np.multiply(e, zb, out=e)
            s2 = np.einsum("ik,ik->i", e, zb)
            mb = s1 / s0
            m[a : a + rows] = mb
            var[a : a + rows] = s2 / s0 - mb * mb
        np.maximum(var, 0.0, out=var)
        if w is None:
            return float(np.sum(m - zy)), float(np.sum(var))
        return float(_dot(w, m - zy)), float(_dot(w, var))

    return newton_convex_1d(derivs, lo, hi, 1.0, rtol, max_iter)


def softmax_scaled(z, beta, argmax_before):
    """Rows of ``softmax(beta z)`` with the argmax of every row kept exactly.

    The computation is monotone within each row, so it never reorders two
    classes; rounding can only merge the top entry with a runner-up that was
    within an ulp of it. Where that merge would move the (first-index)
    argmax away from ``argmax_before``, the leading class is raised by one
    ulp, the rounding the exact value calls for (invariance theorem,
    the calibration chapter, at the argmax level).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.multiply(z, beta)
        p -= p.max(axis=1, keepdims=True)
    if not np.all(np.isfinite(p) | (p == -np.inf)):
        # beta z overflowed (logits near +-1.8e308): shift first, then scale;
        # the row maximum becomes 0 and the rest <= 0 (-inf at worst)
        with np.errstate(over="ignore"):
            p = z - z.max(axis=1, keepdims=True)
            p *= beta
    np.exp(p, out=p)
    p /= p.sum(axis=1, keepdims=True)
    after = p.argmax(axis=1)
    moved = np.flatnonzero(after != argmax_before)
    if moved.size:
        top = p[moved, after[moved]]
        p[moved, argmax_before[moved]] = np.nextafter(top, np.inf)
    return p


# --------------------------------------------------------------------------
# Platt scaling
# --------------------------------------------------------------------------
def unit_exponent(x):
    """``e`` such that ``x * 2**-e`` has its largest magnitude in [0.5, 1).

    Scaling by a power of two (``np.ldexp``) is exact, so sums of squares,
    covariances and weighted means computed on the scaled values neither
    overflow (values near 1e300) nor lose the tiny ones (near 1e-300), and
    every ratio is unchanged. 0 for an empty or all-zero ``x``.
    """
    top = float(np.max(np.abs(x))) if x.size else 0.0
    return int(np.frexp(top)[1]) if top > 0 else 0


def covariate_exponent(x):
    """``k`` such that ``x * 2**-k`` has ``max |x| < 1``, or 0 below 2**20.

    A logistic model in ``x`` is the same model in ``x / 2**k`` (the slope,
    and a random slope's SD, scale by ``2**k``), and ``np.ldexp`` by a power
    of two is exact, so the rescaled fit is the same fit. It keeps ``x**2``
    (Hessians) and ``x**3`` (the mixed model's log-determinant gradient)
    finite for scores up to the float64 maximum; ordinary confidences and
    logits are left untouched (``k = 0``).
    """
    top = float(np.max(np.abs(x))) if x.size else 0.0
    if top <= 2.0**20:
        return 0
    return int(np.frexp(top)[1])


def separable(s, y, w):
    """True when no finite MLE exists: the weighted classes do not overlap."""
    live = w > 0
    # a soft label 0 < y < 1 is a positive and a negative at once
    pos = s[live & (y > 0.0)]
    neg = s[live & (y < 1.0)]
    if pos.size == 0 or neg.size == 0:
        return True
    if pos.min() == pos.max() == neg.min() == neg.max():
        return False  # one score value: the slope is not identified, b is finite
    return bool(neg.max() <= pos.min() or pos.max() <= neg.min())


def platt_targets(y, w=None):
    """Platt's (1999) smoothed targets ``(N+ + 1)/(N+ + 2)`` and ``1/(N- + 2)``.

    ``N+`` and ``N-`` are the (weighted) counts of positives and negatives
    (``sum w y`` and ``sum w (1 - y)``: a soft label counts in both);
    the targets are the posterior means of a uniform prior, which keeps the
    fit finite on separable data.
    """
    w = np.ones_like(y) if w is None else w
    n_pos = float(_dot(w, y))
    n_neg = float(w.sum()) - n_pos
    # linear in y: a soft label y is a positive of weight y and a negative of
    # weight 1 - y (the same numbers as before for 0/1 labels, bit for bit)
    return y * ((n_pos + 1.0) / (n_pos + 2.0)) + (1.0 - y) * (1.0 / (n_neg + 2.0))


def platt_objective(s, t, w):
    """Loss, gradient and Hessian of Platt's likelihood for SciPy's Newton.

    With ``f = a s + b`` and targets ``t`` (0/1 labels or smoothed), the mean
    cross-entropy is ``sum w [softplus(f) - t f] / sum w``; its gradient is
    ``sum w (sigma(f) - t) [s, 1]`` and its Hessian
    ``sum w sigma(f)(1 - sigma(f)) [[s^2, s], [s, 1]]`` (the IRLS system),
    all over ``sum w``. Returns ``(fun, jac, hess)`` callables on
    ``params = [a, b]`` that share one pass over the data per point.
    """
    total = float(w.sum())
    ws = w * s
    ws2 = ws * s
    cache = {}

    def _eval(params):
        key = (float(params[0]), float(params[1]))
        if cache.get("key") != key:
            f = key[0] * s + key[1]
            loss = np.logaddexp(0.0, f) - t * f
            p = sigmoid_scaled(f, 1.0)
            r = p - t
            q = p * (1.0 - p)
            cache.update(
                key=key,
                fun=float(_dot(w, loss)) / total,
                jac=np.array([_dot(ws, r), _dot(w, r)]) / total,
                hess=np.array(
                    [
                        [_dot(ws2, q), _dot(ws, q)],
                        [_dot(ws, q), _dot(w, q)],
                    ]
                )
                / total,
            )
        return cache

    def fun(params):
        c = _eval(params)
        return c["fun"], c["jac"]

    def hess(params):
        return _eval(params)["hess"]

    return fun, hess


def newton_polish(fun, hess, x):
    """One exact Newton step from ``x``, kept only if it does not hurt.

    SciPy's trust-region solver stops at its gradient tolerance; one more
    step of the 2 x 2 Newton/IRLS system squares the remaining error (from
    ~1e-9 to rounding level), so fits that differ only in rows of zero weight
    or in the solver's path land on the same optimum. Returns
    ``(x, max_abs_gradient)``.
    """
    f0, g0 = fun(x)
    try:
        step = np.linalg.solve(hess(x), g0)
    except np.linalg.LinAlgError:
        return x, float(np.max(np.abs(g0)))
    x1 = x - step
    f1, g1 = fun(x1)
    # judged by the gradient: near the optimum the loss changes by ~g^2/H,
    # below its own rounding, so comparing losses would be noise
    if np.isfinite(f1) and np.max(np.abs(g1)) <= np.max(np.abs(g0)):
        return x1, float(np.max(np.abs(g1)))
    return x, float(np.max(np.abs(g0)))


#: Tolerance of :func:`fit_platt` on the mean-loss gradient; a final Newton
#: step then polishes.
PLATT_GTOL = 1e-11
#: Largest ``|gradient|`` entry :func:`fit_platt` reports as converged after
#: the polish.
PLATT_CONVERGED = 1e-9


class PlattFit(NamedTuple):
    """Result of :func:`fit_platt`: ``sigma(coef * s + intercept)``."""

    coef: float
    intercept: float
    n_iter: int
    #: largest ``|gradient|`` entry of the mean loss at the result
    grad: float
    #: True when ``grad <= PLATT_CONVERGED``
    converged: bool
    #: the solver's message (for a warning that it did not converge)
    message: str


def fit_platt(s, t, w, *, max_iter=100):
    """Maximum-likelihood Platt fit ``sigma(a s + b)`` (Platt 1999).

    ``s`` are the scores (logits), ``t`` the targets (0/1 labels or
    :func:`platt_targets`), ``w`` non-negative weights (a zero weight drops
    a row, an integer weight repeats it), all float64 of one length. The
    weighted mean cross-entropy (:func:`platt_objective`) is minimised by
    SciPy's ``trust-exact`` Newton method from ``(a, b) = (1, 0)``, the
    identity map, to ``PLATT_GTOL``, then polished by one Newton step
    (:func:`newton_polish`). Scores beyond ``2**20`` are fitted as ``s /
    2**k`` (exact; :func:`covariate_exponent`) so ``s**2`` cannot overflow,
    and the slope is scaled back; weights whose largest lies outside
    ``[2**-100, 2**100]`` are brought to ``[0.5, 1)`` by a power of two (the
    mean loss is unchanged, exactly) so the weighted sums cannot overflow nor
    lose their bits. On separable data the result is where the solver
    stopped (a large slope): check with :func:`separable`.
    """
    if w.size and not 2.0**-100 <= w.max() <= 2.0**100:
        w = np.ldexp(w, -int(np.frexp(w.max())[1]))
    k = covariate_exponent(s)
    fun, hess = platt_objective(np.ldexp(s, -k) if k else s, t, w)
    res = minimize(
        fun,
        np.array([1.0, 0.0]),
        jac=True,
        hess=hess,
        method="trust-exact",
        options={"gtol": PLATT_GTOL, "maxiter": max_iter},
    )
    x, grad = newton_polish(fun, hess, res.x)
    return PlattFit(
        coef=float(np.ldexp(x[0], -k)),
        intercept=float(x[1]),
        n_iter=int(res.nit),
        grad=grad,
        converged=grad <= PLATT_CONVERGED,
        message=str(res.message),
    )
