# SPDX-License-Identifier: MIT
"""Simulate the reference data sets for the lme4 agreement tests.

Writes ``<name>.csv`` (columns ``h, cell, y, w``) for four shapes of data
drawn from Eq. (5), ``y ~ Bernoulli(expit(B0 + U_s + (B1 + V_s) h))``:

- ``few_big``: 6 cells of 400-800 rows, integer weights 1-3 (tests weights);
- ``many_small``: 60 cells of 8-60 rows (true slope SD 1.2);
- ``one_class``: 15 cells of ~60 rows, cell 3 all correct, cell 7 all wrong;
- ``mid``: 25 cells of 100-300 rows, large variances (a non-singular fit).

Written with NumPy 2.4 (``default_rng(20261129)``); the CSVs are committed, so
the tests never regenerate them. Run ``python make_data.py`` then
``Rscript fit_lme4.R`` to refresh ``lme4_reference.json``.
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def simulate(rng, sizes, b0, b1, sd_u, sd_v, weights=False):
    cells = np.repeat(np.arange(len(sizes)), sizes)
    h = rng.beta(4, 2, size=cells.size)
    u = rng.normal(0, sd_u, len(sizes))
    v = rng.normal(0, sd_v, len(sizes))
    eta = b0 + u[cells] + (b1 + v[cells]) * h
    y = (rng.uniform(size=cells.size) < 1 / (1 + np.exp(-eta))).astype(int)
    w = rng.integers(1, 4, cells.size) if weights else np.ones(cells.size, int)
    return h, cells, y, w


def write(name, h, cells, y, w):
    with open(HERE / f"{name}.csv", "w") as f:
        f.write("h,cell,y,w\n")
        for row in zip(h, cells, y, w, strict=True):
            f.write(f"{row[0]:.17g},{row[1]},{row[2]},{row[3]}\n")


def main():
    rng = np.random.default_rng(20261129)
    sizes = rng.integers(400, 801, 6)
    write("few_big", *simulate(rng, sizes, -2.0, 3.0, 0.6, 1.0, weights=True))
    sizes = rng.integers(8, 61, 60)
    write("many_small", *simulate(rng, sizes, -1.5, 3.0, 0.7, 1.2))
    sizes = rng.integers(40, 81, 15)
    h, cells, y, w = simulate(rng, sizes, -1.0, 2.5, 0.5, 0.8)
    y[cells == 3] = 1
    y[cells == 7] = 0
    write("one_class", h, cells, y, w)
    sizes = rng.integers(100, 301, 25)
    write("mid", *simulate(rng, sizes, -1.0, 2.0, 1.0, 1.5))


if __name__ == "__main__":
    main()
