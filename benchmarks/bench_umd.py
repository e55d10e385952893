# SPDX-License-Identifier: MIT
"""Speed of UMD binning (UMDBinner, Alg. 4) against its NumPy floors.

Cases: N in ``--sizes`` x scores in ``--kinds`` ("distinct": uniform
scores; "tied": 40 distinct values, like verbalized LLM confidences), B =
``--bins``. Every case times, interleaved in one process (medians of
``--repeats`` rounds):

* the floors: ``np.sort`` of the nudged scores plus ``np.searchsorted`` of
  them into the ``B - 1`` edges (fit floor), ``np.searchsorted`` of the test
  scores (predict floor);
* the engine (``umd_fit_segments`` / ``umd_predict_segments``, one table)
  and, as "before", the single-table kernel that UMDBinner ran until
  session 17 (now the test oracle ``tests/_umd_oracle.py``);
* the estimator (``UMDBinner.fit`` / ``predict_proba``: validation, nudges,
  engine, the (n, 2) output).

Goals: ``UMDBinner.fit`` <= 1.5x the fit floor, ``predict_proba`` <= 1.5x
the predict floor. Usage::

    python benchmarks/bench_umd.py [--sizes 1e6 1e7] [--repeats 5] [--bins 200]

Writes ``results/umd.md`` (``--out``).
"""

import argparse
import sys

import numpy as np
from _measure import HERE, RESULTS, header, load_average, markdown_table, median_times
from _measure import write_result as _write

CASES = [(n, kind) for kind in ("distinct", "tied") for n in (10**6, 10**7)]


def data(n, kind):
    rng = np.random.default_rng(0)
    if kind == "distinct":
        h = rng.uniform(size=n)
    else:  # 40 distinct values, skewed towards high confidence like LLMs
        levels = np.linspace(0.025, 1.0, 40)
        h = rng.choice(levels, size=n, p=levels**4 / np.sum(levels**4))
    y = (rng.uniform(size=n) < h**2).astype(np.float64)
    return h, y, rng.permutation(h)


def case(n, kind, n_bins, repeats):
    """``(rows, ratios)`` of one case: median seconds and x-floor ratios."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    import _umd_oracle as before

    from sklearn_betacal import UMDBinner
    from sklearn_betacal._kernels._cell_binning import (
        CellTables,
        segment_lookup,
        tie_break,
        umd_fit_segments,
        umd_predict_segments,
    )

    h, y, x = data(n, kind)
    hn = tie_break(h, 1e-10, np.random.RandomState(0))
    model = UMDBinner(n_bins=n_bins, random_state=0).fit(h, y)
    tables = CellTables(**model._table)
    old = before.umd_fit(hn, y, None, n_bins, delta=1e-10, raw=h, labels=True)
    edges = tables.edges

    def engine_fit():
        return umd_fit_segments(
            hn, y, None, None, [n_bins], delta=1e-10, raw=h, labels=True
        )

    fns = {
        "np.sort": lambda: np.sort(hn),
        "np.searchsorted(edges, h)": lambda: np.searchsorted(edges, hn, "right"),
        "np.searchsorted(edges, x)": lambda: np.searchsorted(edges, x, "right"),
        "fit: single-table kernel (before)": lambda: before.umd_fit(
            hn, y, None, n_bins, delta=1e-10, raw=h, labels=True
        ),
        "fit: segment engine (after)": engine_fit,
        "UMDBinner.fit": lambda: UMDBinner(n_bins=n_bins, random_state=0).fit(h, y),
        "predict: single-table kernel (before)": lambda: before.umd_predict(old, x),
        "predict: segment engine (after)": lambda: umd_predict_segments(
            tables, x, None, segment_lookup(tables)
        ),
        "UMDBinner.predict_proba": lambda: model.predict_proba(x),
    }
    res = median_times(fns, repeats, warmup=1)
    fit_floor = res["np.sort"] + res["np.searchsorted(edges, h)"]
    pred_floor = res["np.searchsorted(edges, x)"]
    rows = []
    for name, sec in res.items():
        floor = fit_floor if "fit" in name else pred_floor
        ratio = "" if name.startswith("np.") else f"{sec / floor:.2f}"
        rows.append([name, f"{sec:.4f}", ratio])
    return (
        rows,
        res["UMDBinner.fit"] / fit_floor,
        (res["UMDBinner.predict_proba"] / pred_floor),
    )


def main():
    sys.stdout.reconfigure(line_buffering=True)  # progress when redirected
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--kinds", nargs="+", default=["distinct", "tied"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--bins", type=int, default=200)
    parser.add_argument("--out", default=str(RESULTS / "umd.md"))
    args = parser.parse_args()

    lines = ["# UMD binning speed (`benchmarks/bench_umd.py`)", ""]
    lines += [header(prefix="- "), ""]
    lines += [
        f"B = {args.bins}, delta = 1e-10, medians of {args.repeats} interleaved "
        "rounds. Goals: UMDBinner.fit <= 1.5x the fit floor (np.sort + "
        "np.searchsorted(edges, h)), predict_proba <= 1.5x the predict floor "
        "(np.searchsorted(edges, x)).",
        "",
    ]
    summary = []
    for kind in args.kinds:
        for n in [int(s) for s in args.sizes]:
            rows, fit_x, pred_x = case(n, kind, args.bins, args.repeats)
            lines += [f"## N = {n:.0e}, {kind} scores (load {load_average()})", ""]
            lines += markdown_table(["step", "median s", "x floor"], rows, align="lrr")
            lines.append("")
            summary.append([f"{n:.0e} {kind}", f"{fit_x:.2f}", f"{pred_x:.2f}"])
    lines += ["## Goals", ""]
    lines += markdown_table(
        ["case", "UMDBinner.fit x floor", "predict_proba x floor"], summary, align="lrr"
    )
    _write(args.out, lines)


if __name__ == "__main__":
    main()
