# SPDX-License-Identifier: MIT
"""Planted groups of known truth that look like text embeddings (issue 21, item 2).

``planted_groups`` draws ``n_groups`` Gaussian blobs in a ``dim``-d space
(random unit-norm centres scaled by ``separation``, isotropic unit noise), each
with its own miscalibration on the logit: the true probability of a row of
group ``g`` with model confidence ``h`` is
``sigmoid(a_g + s_g * logit(h))``. ``null=True`` plants ``a_g = 0, s_g = 1``
(the model is calibrated in every group). Benchmark helper, not package code.
"""

import numpy as np


def _logit(p):
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return np.log(p) - np.log1p(-p)


def planted_groups(
    n_groups=16,
    *,
    dim=32,
    size_range=(100, 5000),
    sizes=None,
    separation=4.0,
    intercept_sd=0.8,
    log_slope_sd=0.4,
    null=False,
    truth=None,
    random_state=0,
):
    """Draw one sample; return ``(h, E, g, p, y, truth)``.

    ``truth`` (a dict from a previous call) reuses the centres and the
    per-group miscalibration, so a test set shares the calibration set's
    groups; ``sizes`` then sets the rows per group.
    """
    rng = np.random.default_rng(random_state)
    if truth is None:
        C = rng.normal(size=(n_groups, dim))
        C *= separation / np.linalg.norm(C, axis=1, keepdims=True)
        if null:
            a = np.zeros(n_groups)
            s = np.ones(n_groups)
        else:
            a = rng.normal(0.0, intercept_sd, size=n_groups)
            s = np.exp(rng.normal(0.0, log_slope_sd, size=n_groups))
        # per-group location of the model's confidences (groups differ in
        # how hard they are, not only in miscalibration)
        mu = rng.normal(0.8, 0.8, size=n_groups)
        truth = {"centres": C, "intercept": a, "slope": s, "mu": mu}
    C, a, s, mu = truth["centres"], truth["intercept"], truth["slope"], truth["mu"]
    k = C.shape[0]
    if sizes is None:
        lo, hi = size_range
        sizes = np.exp(rng.uniform(np.log(lo), np.log(hi), size=k)).astype(int)
    sizes = np.broadcast_to(np.asarray(sizes, dtype=int), (k,))
    g = np.repeat(np.arange(k), sizes)
    E = C[g] + rng.normal(size=(g.size, C.shape[1]))
    z = rng.normal(mu[g], 1.2)
    h = 1.0 / (1.0 + np.exp(-z))
    p = 1.0 / (1.0 + np.exp(-(a[g] + s[g] * _logit(h))))
    y = (rng.uniform(size=g.size) < p).astype(int)
    return h, E, g, p, y, truth


def true_calibration_error(f, p, g):
    """Exact CE of predictions ``f`` against true probabilities ``p``.

    ``sum_{group, level} w |mean(p) - f|`` over the rows sharing a true group
    and a predicted value (binning calibrators predict finitely many values;
    the conditional mean uses the true ``p``, so no label noise enters).
    """
    key = np.round(f, 12)
    _, inv = np.unique(np.column_stack([g, key]), axis=0, return_inverse=True)
    inv = inv.ravel()
    cnt = np.bincount(inv)
    mp = np.bincount(inv, weights=p) / cnt
    mf = np.bincount(inv, weights=f) / cnt
    return float(np.sum(cnt * np.abs(mp - mf)) / f.size)
