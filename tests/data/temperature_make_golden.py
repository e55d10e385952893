# SPDX-License-Identifier: MIT
"""Make ``temperature_golden.json``: reference temperatures from independent code.

Binary cases: the NLL-optimal inverse temperature of ``sigma(s / tau)`` is the
maximum-likelihood slope of a logistic regression of ``y`` on ``s`` *without
an intercept*, so statsmodels (``Logit``, and ``GLM`` with ``freq_weights``
for a weighted case) gives ``1 / tau`` by its own IRLS/Newton code.

Multiclass case: ``softmax(z / tau)`` has no statsmodels equivalent, so the
minimiser is computed with mpmath at 50 significant digits (Newton on the
exact first and second derivatives of the NLL in ``beta = 1/tau``), sharing
no code with the package.

The data are stored in the JSON itself, so the test does not depend on the
random generator. Run from the repository root::

    .venv/bin/python tests/data/temperature_make_golden.py
"""

import json
from pathlib import Path

import mpmath
import numpy as np
import scipy
import statsmodels
import statsmodels.api as sm

OUT = Path(__file__).with_name("temperature_golden.json")


def binary_case(seed, n, scale, true_tau):
    rng = np.random.default_rng(seed)
    s = np.round(rng.normal(scale=scale, size=n), 6)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-s / true_tau))).astype(int)
    w = rng.integers(0, 4, size=n)  # includes zeros
    beta = sm.Logit(y, s[:, None]).fit(disp=0, method="newton", tol=1e-14).params[0]
    glm = sm.GLM(y, s[:, None], family=sm.families.Binomial(), freq_weights=w)
    beta_w = glm.fit(tol=1e-14).params[0]
    return {
        "s": s.tolist(),
        "y": y.tolist(),
        "w": w.tolist(),
        "temperature": 1.0 / float(beta),
        "temperature_weighted": 1.0 / float(beta_w),
    }


def multiclass_case(seed, n, k, true_tau):
    rng = np.random.default_rng(seed)
    z = np.round(rng.normal(scale=3.0, size=(n, k)), 6)
    p = np.exp(z / true_tau)
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    mpmath.mp.dps = 50
    Z = [[mpmath.mpf(float(v)) for v in row] for row in z]

    def derivs(beta):
        g = h = mpmath.mpf(0)
        for row, label in zip(Z, y, strict=True):
            e = [mpmath.exp(beta * v) for v in row]
            s0 = mpmath.fsum(e)
            m1 = mpmath.fsum(a * v for a, v in zip(e, row, strict=True)) / s0
            m2 = mpmath.fsum(a * v * v for a, v in zip(e, row, strict=True)) / s0
            g += m1 - row[label]
            h += m2 - m1 * m1
        return g, h

    beta = mpmath.mpf(1)
    for _ in range(60):
        g, h = derivs(beta)
        step = g / h
        beta -= step
        if abs(step) < mpmath.mpf(10) ** -40:
            break
    return {"z": z.tolist(), "y": y.tolist(), "temperature": float(1 / beta)}


def main():
    golden = {
        "versions": {
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "statsmodels": statsmodels.__version__,
            "mpmath": mpmath.__version__,
        },
        "binary": [
            binary_case(0, 300, 3.0, 2.0),  # overconfident: tau > 1
            binary_case(1, 200, 0.5, 0.3),  # underconfident: tau < 1
        ],
        "multiclass": [multiclass_case(2, 60, 4, 1.7)],
    }
    OUT.write_text(json.dumps(golden, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
