# SPDX-License-Identifier: MIT
"""Speed of the hierarchical logistic scaler (Eq. 5) against its peers.

For N = 100,000 rows and G = 16, 128, 1024 cells simulated from Eq. (5), time
in ONE Python process:

- ``laplace``: this package's default solver (Laplace ML, lme4's objective);
- ``numpy floor``: a plain pooled logistic regression by Newton/IRLS on the
  same rows (no random effects) -- the least any solver of this model costs;
- ``statsmodels vb``: ``BinomialBayesMixedGLM(...).fit_vb()`` on the same
  model (random intercept + random slope variance components per cell);

and, when ``Rscript`` with lme4 is installed, lme4's
``glmer(y ~ h + (1 + h || cell), family = binomial)`` timed inside R (only the
``glmer`` call, data already loaded) on the same CSV. Reports medians, ratios,
the maximum absolute difference between our and glmer's per-row fitted
probabilities, and peak memory (tracemalloc peak for the Python solvers, max
RSS of the R process).

Usage: ``python benchmarks/bench_hierarchical.py [--runs 5] [--sm-runs 1]``

``--scale`` times instead the estimator the way a user calls it,
``HierarchicalLogisticScaler(partitioner="precomputed").fit(X, y)`` at
N = 1,000,000 rows and G = 4,096 cells (issue 15's goal: <= 2 s), against a
NumPy floor in the same process: a textbook pooled logistic regression (six
IRLS iterations on the ``(N, 2)`` design, no random effects). Wall and CPU
seconds, the load average before and after, and the fitted parameters (so
that a faster version can be checked to fit the same model):
``python benchmarks/bench_hierarchical.py --scale [--n 1000000] [--cells 4096]``
"""

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from _measure import (
    header,
    load_average,
    markdown_table,
    median_time,
    median_times,
    peak_bytes,
)
from scipy import sparse

from sklearn_betacal._hierarchical import _pooled_platt
from sklearn_betacal._kernels import _mixed

R_SCRIPT = r"""
suppressPackageStartupMessages({library(lme4); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1]); d$cell <- factor(d$cell)
runs <- as.integer(args[3]); times <- numeric(runs); cpu <- numeric(runs)
for (k in seq_len(runs)) {
  t0 <- proc.time()
  fit <- glmer(y ~ h + (1 + h || cell), family = binomial, data = d)
  t1 <- proc.time() - t0
  times[k] <- t1[["elapsed"]]
  cpu[k] <- t1[["user.self"]] + t1[["sys.self"]]
}
vc <- as.data.frame(VarCorr(fit))
write_json(list(times = times, cpu = cpu, fixef = unname(fixef(fit)),
                sd = vc$sdcor, fitted = unname(fitted(fit)),
                lme4 = as.character(packageVersion("lme4")),
                R = R.version.string),
           args[2], digits = NA, auto_unbox = TRUE)
"""


def simulate(n, n_cells, seed):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_cells, n)
    h = rng.beta(4, 2, n)
    u = rng.normal(0, 0.6, n_cells)
    v = rng.normal(0, 1.0, n_cells)
    eta = -1.5 + u[idx] + (3.0 + v[idx]) * h
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(np.float64)
    return h, idx.astype(np.int64), y


def laplace(h, idx, y, n_cells):
    w = np.ones_like(h)
    res = _mixed.fit_laplace(h, y, w, idx, n_cells, _pooled_platt(h, y, w))
    re = res["u"] * res["theta"]
    b0, b1 = res["beta"]
    return 1 / (1 + np.exp(-(b0 + re[idx, 0] + (b1 + re[idx, 1]) * h)))


def floor(h, idx, y, n_cells):
    b0, b1 = _pooled_platt(h, y, np.ones_like(h))
    return 1 / (1 + np.exp(-(b0 + b1 * h)))


def statsmodels_vb(h, idx, y, n_cells):
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

    n = h.size
    rows = np.arange(n)
    vc = sparse.csr_matrix(
        (np.r_[np.ones(n), h], (np.r_[rows, rows], np.r_[idx, idx + n_cells])),
        shape=(n, 2 * n_cells),
    )
    model = BinomialBayesMixedGLM(
        y, np.column_stack([np.ones(n), h]), vc, np.repeat([0, 1], n_cells)
    )
    res = model.fit_vb()
    eta = model.exog @ res.fe_mean + vc @ res.vc_mean
    return 1 / (1 + np.exp(-eta))


def timed(func, runs, *args):
    """Median wall and CPU seconds over ``runs``, tracemalloc peak (MiB), output."""
    wall, cpu = median_time(lambda: func(*args), runs, cpu=True)
    out, peak = peak_bytes(lambda: func(*args))
    return wall, cpu, peak / 2**20, out


def run_r(csv, runs, tmp):
    out = Path(tmp) / "r_out.json"
    script = Path(tmp) / "bench.R"
    script.write_text(R_SCRIPT)
    cmd = ["Rscript", str(script), str(csv), str(out), str(runs)]
    if shutil.which("time") and Path("/usr/bin/time").exists():
        cmd = ["/usr/bin/time", "-f", "%M", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    rss_mb = float("nan")
    if cmd[0] == "/usr/bin/time":
        rss_mb = int(proc.stderr.strip().splitlines()[-1]) / 1024
    res = json.loads(out.read_text())
    return float(np.median(res["times"])), float(np.median(res["cpu"])), rss_mb, res


def numpy_floor(h, y):
    """Six IRLS iterations of a pooled logistic regression, textbook NumPy."""
    X = np.column_stack([np.ones_like(h), h])
    beta = np.zeros(2)
    for _ in range(6):
        mu = 1 / (1 + np.exp(-(X @ beta)))
        W = mu * (1 - mu)
        beta = beta + np.linalg.solve(X.T @ (W[:, None] * X), X.T @ (y - mu))
    return beta


def estimator_fit(X, y):
    from sklearn_betacal import HierarchicalLogisticScaler

    return HierarchicalLogisticScaler(partitioner="precomputed").fit(X, y)


def scale(n, n_cells, runs):
    """The estimator at ``n`` rows and ``n_cells`` cells against the floor."""
    import sklearn_betacal

    h, idx, y = simulate(n, n_cells, seed=n_cells)
    X = np.column_stack([h, idx])
    print(header(prefix=""))
    print(f"sklearn_betacal from {Path(sklearn_betacal.__file__).parent}")
    print(f"N = {n:,}, G = {n_cells:,}; medians of {runs} runs, interleaved\n")
    model = estimator_fit(X, y)
    times = median_times(
        {"fit": lambda: estimator_fit(X, y), "floor": lambda: numpy_floor(h, y)},
        runs,
        cpu=True,
    )
    med = {
        f"{name}_{clock}": t
        for name, pair in times.items()
        for clock, t in zip(("wall", "cpu"), pair, strict=True)
    }
    rows = [
        [
            "floor: pooled logistic, 6 IRLS iterations",
            f"{med['floor_wall']:.3f}",
            f"{med['floor_cpu']:.3f}",
            "1.0",
        ],
        [
            "HierarchicalLogisticScaler.fit",
            f"{med['fit_wall']:.3f}",
            f"{med['fit_cpu']:.3f}",
            f"{med['fit_cpu'] / med['floor_cpu']:.1f}",
        ],
    ]
    head = ["step", "wall s", "CPU s", "CPU x floor"]
    print("\n".join(markdown_table(head, rows, align="lrrr")))
    print(f"\nload average after: {load_average()}")
    print(
        f"fixed_effects_ {model.fixed_effects_}, sigma_ {model.sigma_}, "
        f"deviance_ {model.deviance_:.6f}, n_iter_ {model.n_iter_}, "
        f"converged_ {model.converged_}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--cells", type=int, nargs="+", default=None)
    parser.add_argument(
        "--scale",
        action="store_true",
        help="time HierarchicalLogisticScaler.fit at N = 1e6, G = 4096 (or "
        "--n, --cells) against a NumPy floor",
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--sm-runs",
        type=int,
        default=1,
        help="runs of statsmodels fit_vb (about a minute each at N=1e5)",
    )
    parser.add_argument("--r-runs", type=int, default=5)
    parser.add_argument(
        "--sm-cells",
        type=int,
        nargs="*",
        default=None,
        help="run statsmodels only for these G (default: all)",
    )
    args = parser.parse_args()
    if args.scale:
        scale(args.n or 1_000_000, (args.cells or [4096])[0], args.runs)
        return
    args.n = args.n or 100_000
    args.cells = args.cells or [16, 128, 1024]
    have_r = shutil.which("Rscript") is not None

    print(header("statsmodels", prefix=""))
    print(
        f"N = {args.n}; medians of {args.runs} runs "
        f"(statsmodels: {args.sm_runs}, R: {args.r_runs})"
    )
    print("Times in seconds, wall (CPU) -- the machine is shared, CPU time is the")
    print("steadier figure; ratios use CPU time.")
    columns = (
        "| G | laplace | floor | statsmodels vb | glmer | sm/laplace | "
        "glmer/laplace | laplace/floor | max abs dp vs glmer (ours, sm) | "
        "peak MiB (ours, sm; R max RSS) |"
    )
    print(columns)
    print("|" + "---|" * 10)
    r_versions = ""
    with tempfile.TemporaryDirectory() as tmp:
        for g in args.cells:
            h, idx, y = simulate(args.n, g, seed=g)
            w_lap, c_lap, m_lap, p_lap = timed(laplace, args.runs, h, idx, y, g)
            w_fl, c_fl, _, _ = timed(floor, args.runs, h, idx, y, g)
            if args.sm_cells is None or g in args.sm_cells:
                w_sm, c_sm, m_sm, p_sm = timed(
                    statsmodels_vb, args.sm_runs, h, idx, y, g
                )
            else:
                w_sm, c_sm, m_sm, p_sm = (float("nan"),) * 3 + (
                    np.full(h.size, np.nan),
                )
            w_r, c_r, m_r, d_lap, d_sm = (float("nan"),) * 5
            if have_r:
                csv = Path(tmp) / f"g{g}.csv"
                np.savetxt(
                    csv,
                    np.column_stack([h, idx, y]),
                    delimiter=",",
                    header="h,cell,y",
                    comments="",
                    fmt=["%.17g", "%d", "%d"],
                )
                w_r, c_r, m_r, res = run_r(csv, args.r_runs, tmp)
                fitted = np.asarray(res["fitted"])
                d_lap = float(np.max(np.abs(p_lap - fitted)))
                d_sm = float(np.max(np.abs(p_sm - fitted)))
                r_versions = f"{res['R']}, lme4 {res['lme4']}"
            print(
                f"| {g} | {w_lap:.2f} ({c_lap:.2f}) | {w_fl:.3f} ({c_fl:.3f}) | "
                f"{w_sm:.1f} ({c_sm:.1f}) | {w_r:.2f} ({c_r:.2f}) | "
                f"{c_sm / c_lap:.0f}x | {c_r / c_lap:.1f}x | {c_lap / c_fl:.0f}x | "
                f"{d_lap:.1e}, {d_sm:.2f} | {m_lap:.1f}, {m_sm:.0f}; {m_r:.0f} |",
                flush=True,
            )
    if have_r:
        print(f"R: {r_versions}")


if __name__ == "__main__":
    main()
