# SPDX-License-Identifier: MIT
"""Generate ``metrics_golden.json``: golden numbers for test_metrics/test_bounds.

Independent of the package and of NumPy/SciPy: hand formulas in exact
rational arithmetic (``fractions``) and 50-digit ``mpmath``. Sources:

- chapter 000 (seed ``000_*.txt``): the printed BEFORE/AFTER reliability
  tables, their ECE (0.0245 / 0.0167), the [0.0,0.1) row's standard error
  (~0.018) and the 7-of-7 one-sided 95 % lower bound 0.05**(1/7) (~0.652);
- the paper (seed ``001_*.txt``): Example 2.1 / Table 1 and Thm 3.1 / eq. (6)
  (Figure 2 readings);
- Clopper-Pearson limits from their definition as binomial tail roots.

Run: ``python tests/data/metrics_make_golden.py`` (writes next to itself).
"""

import json
import platform
import sys
from fractions import Fraction as F
from pathlib import Path

import mpmath

# chapter 000 tables: (label, count, conf, acc) exactly as printed
BEFORE = [
    ("[0.0,0.1)", 54, "0.0040", "0.0185"),
    ("[0.1,0.2)", 1, "0.1697", "0"),
    ("[0.4,0.5)", 1, "0.4281", "1"),
    ("[0.9,1.0]", 7, "0.9976", "1"),
]
AFTER = [
    ("[0.0,0.1)", 54, "0.0156", "0.0185"),
    ("[0.2,0.3)", 1, "0.2459", "0"),
    ("[0.4,0.5)", 1, "0.4491", "1"),
    ("[0.9,1.0]", 7, "0.9860", "1"),
]


def ece_printed(rows):
    n = sum(r[1] for r in rows)
    return float(sum(F(c, n) * abs(F(a) - F(p)) for _, c, p, a in rows))


def ece_synthetic(rows):
    """ECE of synthetic data: each bin's rows share the printed confidence and
    hold round(acc * count) correct answers (the exact accuracy)."""
    n = sum(r[1] for r in rows)
    total = F(0)
    for _, c, p, a in rows:
        k = round(F(a) * c)
        total += F(c, n) * abs(F(k, c) - F(p))
    return float(total)


def clopper_pearson(x, n, alpha):
    """Roots of the binomial tails: P(X >= x | p_lo) = alpha/2 and
    P(X <= x | p_hi) = alpha/2 (exact, by bisection in mpmath)."""

    def tail_ge(p):
        return mpmath.fsum(
            mpmath.binomial(n, k) * p**k * (1 - p) ** (n - k) for k in range(x, n + 1)
        )

    def tail_le(p):
        return mpmath.fsum(
            mpmath.binomial(n, k) * p**k * (1 - p) ** (n - k) for k in range(0, x + 1)
        )

    def bisect(f, target, increasing):
        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        for _ in range(200):
            mid = (lo + hi) / 2
            if (f(mid) < target) == increasing:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    a2 = mpmath.mpf(alpha) / 2
    lower = 0.0 if x == 0 else float(bisect(tail_ge, a2, True))
    upper = 1.0 if x == n else float(bisect(tail_le, a2, False))
    return lower, upper


def beta_eps(n, b, alpha, nu):
    return float(
        mpmath.sqrt(
            mpmath.log(2 * mpmath.mpf(n) / (b * mpmath.mpf(alpha))) / (2 * (b - 1))
        )
        + nu
    )


def umd_eps(n, bins, alpha, nu):
    return float(
        mpmath.sqrt(
            mpmath.log(2 * mpmath.mpf(bins) / mpmath.mpf(alpha)) / (2 * (n // bins - 1))
        )
        + nu
    )


def smallest_b(eps, n, alpha, nu):
    """Brute-force integer scan (no root finding): smallest b in [2, n]."""
    for b in range(2, n + 1):
        if beta_eps(n, b, alpha, nu) <= eps:
            return b
    return None


def largest_bins(eps, n, alpha, nu):
    best = None
    for bins in range(1, n // 2 + 1):
        if umd_eps(n, bins, alpha, nu) <= eps:
            best = bins
    return best


def records(fn, names, out, cases):
    """One golden record a case: its inputs by name, then ``out: fn(*case)``."""
    return [{**dict(zip(names, case, strict=True)), out: fn(*case)} for case in cases]


def build():
    mpmath.mp.dps = 50
    return {
        "_generated_by": "tests/data/metrics_make_golden.py",
        "_versions": {
            "python": platform.python_version(),
            "mpmath": mpmath.__version__,
        },
        "chapter000": {
            "before_rows": BEFORE,
            "after_rows": AFTER,
            "ece_before_printed": 0.0245,
            "ece_after_printed": 0.0167,
            "ece_before_from_printed_rows": ece_printed(BEFORE),
            "ece_after_from_printed_rows": ece_printed(AFTER),
            "ece_before_synthetic_exact": ece_synthetic(BEFORE),
            "ece_after_synthetic_exact": ece_synthetic(AFTER),
            "std_error_row0_printed": 0.018,
            "std_error_row0_exact": float(
                mpmath.sqrt(mpmath.mpf(1) / 54 * 53 / 54 / 54)
            ),
            "seven_of_seven_lower_printed": 0.652,
            "seven_of_seven_lower_exact": float(
                mpmath.mpf("0.05") ** (mpmath.mpf(1) / 7)
            ),
        },
        "example_2_1": {
            "confidence": 0.8,
            "p_correct": [0.6, 0.7, 0.9, 1.0],
            "groups": [1, 1, 2, 2],
            "ece": 0.0,
            "beta_ce": float(
                F(1, 2) * abs(F(13, 20) - F(4, 5)) + F(1, 2) * abs(F(19, 20) - F(4, 5))
            ),
        },
        "clopper_pearson": records(
            clopper_pearson,
            ("x", "n", "alpha"),
            "interval",
            [
                (1, 54, 0.05),
                (0, 1, 0.05),
                (1, 1, 0.05),
                (7, 7, 0.05),
                (7, 7, 0.1),
                (3, 10, 0.05),
                (13, 40, 0.2),
            ],
        ),
        "beta_binning_epsilon": records(
            beta_eps,
            ("n", "b", "alpha", "nu"),
            "eps",
            [
                (1000, 300, 0.01, 0.0),
                (1000, 300, 0.1, 0.0),
                (5000, 400, 0.01, 0.0),
                (20000, 500, 0.01, 0.05),
                (100, 2, 0.5, 0.0),
            ],
        ),
        "umd_epsilon": records(
            umd_eps,
            ("n", "bins", "alpha", "nu"),
            "eps",
            [
                (1000, 10, 0.1, 0.0),
                (1001, 7, 0.05, 0.02),
                (20000, 50, 0.01, 0.0),
            ],
        ),
        "points_per_bin_for_epsilon": records(
            smallest_b,
            ("eps", "n", "alpha", "nu"),
            "b",
            [
                (0.1, 1000, 0.01, 0.0),
                (0.1, 5000, 0.01, 0.0),
                (0.1, 20000, 0.01, 0.0),
                (0.1, 1000, 0.1, 0.0),
                (0.15, 1000, 0.01, 0.0),
                (0.2, 3000, 0.05, 0.05),
            ],
        ),
        "figure2_readings": {
            "alpha": 0.01,
            "eps": 0.1,
            "nu": 0.0,
            "n_to_b": {"1000": 300, "5000": 400, "20000": 500},
        },
        "n_bins_for_epsilon": records(
            largest_bins,
            ("eps", "n", "alpha", "nu"),
            "bins",
            [
                (0.1, 5000, 0.1, 0.0),
                (0.2, 1000, 0.05, 0.0),
                (0.12, 3000, 0.1, 0.02),
            ],
        ),
    }


if __name__ == "__main__":
    out = Path(__file__).with_name("metrics_golden.json")
    out.write_text(json.dumps(build(), indent=1) + "\n")
    print(f"wrote {out} with python {sys.version.split()[0]}")
