# SPDX-License-Identifier: MIT
"""Speed of UMD binning (UMDBinner, Alg. 4) against NumPy floors and a peer.

Runs, in one process and on the same data:

* NumPy floors: ``np.sort`` of the scores, ``np.searchsorted`` of the scores
  into the ``B - 1`` edges (fit floor = their sum; predict floor = the
  searchsorted alone);
* the kernel (``umd_fit`` / ``umd_predict``) and the estimator
  (``UMDBinner.fit`` / ``predict_proba``, i.e. kernel + validation +
  tie-breaking noise + the (n, 2) output);
* the input validation alone (``validate_confidence_data``), to show the
  glue overhead;
* uncertainty-calibration's ``HistogramCalibrator`` (Kumar et al.'s code,
  uniform-mass bins, pure-Python binning loop), the peer.

Two score distributions: distinct (continuous uniform scores) and tied
(40 distinct values, like verbalized LLM confidences). Prints medians of
``--repeats`` runs and the ratios. Usage::

    python benchmarks/bench_umd.py [--sizes 1e6 1e7] [--repeats 5] [--bins 200]
    python benchmarks/bench_umd.py --before-after [--sizes 1e6] [--repeats 7]

``--before-after`` times, interleaved in one process, the kernel and the
estimator with the bin lookups by ``np.searchsorted`` (before: the grid
switched off) and by the uniform grid (after), against the same floors.
"""

import argparse
import os
import platform
import sys

import numpy as np
import scipy
import sklearn
from _measure import markdown_table, median_time, median_times

import sklearn_betacal
from sklearn_betacal import UMDBinner
from sklearn_betacal._kernels import _binning
from sklearn_betacal._kernels._binning import tie_break, umd_fit, umd_predict
from sklearn_betacal._validation import validate_confidence_data


def run(n, n_bins, repeats, kind, peer_repeats):
    rng = np.random.default_rng(0)
    if kind == "distinct":
        h = rng.uniform(size=n)
    else:  # 40 distinct values, skewed towards high confidence like LLMs
        levels = np.linspace(0.025, 1.0, 40)
        prob = levels**4 / np.sum(levels**4)
        h = rng.choice(levels, size=n, p=prob)
    y = (rng.uniform(size=n) < h**2).astype(np.float64)
    x = rng.permutation(h)  # test scores from the same distribution

    model = UMDBinner(n_bins=n_bins, random_state=0).fit(h, y)
    hn = tie_break(h, 1e-10, np.random.RandomState(0))
    # as the estimators call it: with the raw scores, so that tied test
    # scores are answered from the table's lookup
    table = umd_fit(hn, y, None, n_bins, delta=1e-10, raw=h)
    edges = table.edges

    res = {}
    res["np.sort"] = median_time(lambda: np.sort(hn), repeats)
    res["np.searchsorted(edges)"] = median_time(
        lambda: np.searchsorted(edges, hn, side="right"), repeats
    )
    res["fit floor (sort + searchsorted)"] = (
        res["np.sort"] + res["np.searchsorted(edges)"]
    )
    res["tie_break (nudge)"] = median_time(
        lambda: tie_break(h, 1e-10, np.random.RandomState(0)), repeats
    )
    res["umd_fit kernel"] = median_time(
        lambda: umd_fit(hn, y, None, n_bins, delta=1e-10, raw=h), repeats
    )
    res["validate_confidence_data"] = median_time(
        lambda: validate_confidence_data(model, h, y, reset=False), repeats
    )
    res["UMDBinner.fit"] = median_time(
        lambda: UMDBinner(n_bins=n_bins, random_state=0).fit(h, y), repeats
    )
    res["predict floor (searchsorted x)"] = median_time(
        lambda: np.searchsorted(edges, x, side="right"), repeats
    )
    res["umd_predict kernel"] = median_time(lambda: umd_predict(table, x), repeats)
    res["validate_confidence_data (X only)"] = median_time(
        lambda: validate_confidence_data(model, x, reset=False), repeats
    )
    res["UMDBinner.predict_proba"] = median_time(
        lambda: model.predict_proba(x), repeats
    )
    try:
        from calibration import HistogramCalibrator
    except ImportError:  # pragma: no cover - optional peer
        HistogramCalibrator = None
    if HistogramCalibrator is not None and peer_repeats > 0:
        peer = HistogramCalibrator(n, n_bins)
        res["peer HistogramCalibrator.train_calibration"] = median_time(
            lambda: peer.train_calibration(h, y), peer_repeats
        )
        res["peer HistogramCalibrator.calibrate"] = median_time(
            lambda: peer.calibrate(x), peer_repeats
        )
    return res


def before_after(n, n_bins, repeats, kind):
    """Searchsorted lookups (before) and grid lookups (after), interleaved."""
    rng = np.random.default_rng(0)
    if kind == "distinct":
        h = rng.uniform(size=n)
    else:
        levels = np.linspace(0.025, 1.0, 40)
        h = rng.choice(levels, size=n, p=levels**4 / np.sum(levels**4))
    y = (rng.uniform(size=n) < h**2).astype(np.float64)
    x = rng.permutation(h)
    hn = tie_break(h, 1e-10, np.random.RandomState(0))
    table = umd_fit(hn, y, None, n_bins, delta=1e-10, raw=h)
    model = UMDBinner(n_bins=n_bins, random_state=0).fit(h, y)
    grid_rows = _binning._GRID_MIN_ROWS

    def lookups(grid, fn):
        def run():
            _binning._GRID_MIN_ROWS = grid_rows if grid else 2**62
            try:
                fn()
            finally:
                _binning._GRID_MIN_ROWS = grid_rows

        return run

    fns = {
        "np.sort": lambda: np.sort(hn),
        "np.searchsorted(edges, h)": lambda: np.searchsorted(
            table.edges, hn, side="right"
        ),
        "np.searchsorted(edges, x)": lambda: np.searchsorted(
            table.edges, x, side="right"
        ),
    }
    for when, grid in (("before", False), ("after", True)):
        fns[f"umd_fit kernel ({when})"] = lookups(
            grid, lambda: umd_fit(hn, y, None, n_bins, delta=1e-10, raw=h)
        )
        fns[f"UMDBinner.fit ({when})"] = lookups(
            grid, lambda: UMDBinner(n_bins=n_bins, random_state=0).fit(h, y)
        )
        fns[f"umd_predict kernel ({when})"] = lookups(
            grid, lambda: umd_predict(table, x)
        )
        fns[f"UMDBinner.predict_proba ({when})"] = lookups(
            grid, lambda: model.predict_proba(x)
        )
    res = median_times(fns, repeats)
    fit_floor = res["np.sort"] + res["np.searchsorted(edges, h)"]
    pred_floor = res["np.searchsorted(edges, x)"]
    rows = []
    for name, sec in res.items():
        floor = fit_floor if "fit" in name else pred_floor
        ratio = f"{sec / floor:.2f}" if name.endswith(("(before)", "(after)")) else ""
        rows.append([name, f"{sec:.4f}", ratio])
    print("\n".join(markdown_table(["step", "median s", "x floor"], rows, align="lrr")))
    print(
        "\n(fit floor = np.sort + np.searchsorted(edges, h); predict floor = "
        "np.searchsorted(edges, x); goals: fit and predict <= 1.5x)"
    )


def main():
    sys.stdout.reconfigure(line_buffering=True)  # progress when redirected
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--peer-repeats", type=int, default=5)
    parser.add_argument("--bins", type=int, default=200)
    parser.add_argument("--kinds", nargs="+", default=["distinct", "tied"])
    parser.add_argument("--before-after", action="store_true")
    args = parser.parse_args()

    print(
        f"# python {platform.python_version()}, numpy {np.__version__}, "
        f"scipy {scipy.__version__}, scikit-learn {sklearn.__version__}, "
        f"sklearn_betacal {sklearn_betacal.__version__}; "
        f"{platform.machine()}; B = {args.bins}; "
        f"medians of {args.repeats} runs (peer: {args.peer_repeats})"
    )
    if args.before_after:
        for kind in args.kinds:
            for n in [int(s) for s in args.sizes]:
                one, five, fifteen = os.getloadavg()
                print(
                    f"\n## before/after, N = {n:.0e}, {kind} scores "
                    f"(load average {one:.2f} {five:.2f} {fifteen:.2f})\n"
                )
                before_after(n, args.bins, args.repeats, kind)
        return
    for kind in args.kinds:
        for n in [int(s) for s in args.sizes]:
            res = run(n, args.bins, args.repeats, kind, args.peer_repeats)
            print(f"\n## N = {n:.0e}, {kind} scores\n")
            rows = [[name, f"{sec:.4f}"] for name, sec in res.items()]
            print("\n".join(markdown_table(["step", "median s"], rows, align="lr")))
            fit_floor = res["fit floor (sort + searchsorted)"]
            pred_floor = res["predict floor (searchsorted x)"]
            print()
            print(
                f"- kernel fit / fit floor = {res['umd_fit kernel'] / fit_floor:.2f}"
                f"; UMDBinner.fit / fit floor = "
                f"{res['UMDBinner.fit'] / fit_floor:.2f} (goal <= 1.5)"
            )
            print(
                f"- kernel predict / predict floor = "
                f"{res['umd_predict kernel'] / pred_floor:.2f}; "
                f"UMDBinner.predict_proba / predict floor = "
                f"{res['UMDBinner.predict_proba'] / pred_floor:.2f} (goal <= 1.5)"
            )
            peer = res.get("peer HistogramCalibrator.train_calibration")
            if peer is not None:
                print(
                    f"- peer fit / UMDBinner.fit = "
                    f"{peer / res['UMDBinner.fit']:.1f}x (goal >= 10x)"
                )


if __name__ == "__main__":
    main()
