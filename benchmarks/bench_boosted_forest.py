# SPDX-License-Identifier: MIT
"""Prediction of the boosted scaler (``scaler="features"``) vs scikit-learn's.

``ScalingBetaBinningCalibrator(scaler="features")`` stores its boosted trees as
plain node arrays (a model file holds nothing but arrays) and walks them
itself. Here a ``HistGradientBoostingClassifier`` with the library's
``BOOSTING`` settings is fitted on synthetic rows (``[logit, 16 features]``,
miscalibration that varies with the features), its trees converted as the
calibrator converts them, and the raw score of ``N`` rows computed by

- ``sklearn``: the classifier's own ``_raw_predict`` (compiled Cython, one
  OpenMP thread): the peer, and the floor of a compiled walk;
- ``numpy``: :func:`forest_raw`'s NumPy path (one tree at a time over all
  rows), the reference;
- ``compiled``: its numba twin (extra ``fast``), when installed;

interleaved in one process (medians of ``--repeat`` rounds after a warm-up),
reported as ratios to ``sklearn``; every path's scores are checked equal to
the NumPy path's (bit for bit) and to scikit-learn's (to 1e-12).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_boosted_forest.py \
        --out benchmarks/results/boosted_forest.md
"""

import argparse
import os
from pathlib import Path

import numpy as np
from _measure import header, load_average, markdown_table, median_times, write_result
from sklearn.ensemble import HistGradientBoostingClassifier
from threadpoolctl import threadpool_limits

from sklearn_betacal import _scaling_beta_binning as sbb
from sklearn_betacal._kernels import _boosting


def forest(n_fit, d, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n_fit, d))
    s = rng.normal(scale=1.5, size=n_fit)
    p = 1 / (1 + np.exp(-(np.exp(0.4 * Z[:, 0]) * s + 0.8 * Z[:, 1] - 0.5 * Z[:, 2])))
    y = (rng.uniform(size=n_fit) < p).astype(int)
    F = np.column_stack([s, Z])
    model = HistGradientBoostingClassifier(
        monotonic_cst=[1] + [0] * d, random_state=seed, **sbb.BOOSTING
    ).fit(F, y)
    trees = [sbb._tree_arrays(tree.nodes) for (tree,) in model._predictors]
    baseline = float(np.ravel(model._baseline_prediction)[0])
    return model, trees, baseline


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    parser.add_argument("--fit-rows", type=int, default=20_000)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    lines = [
        "# Boosted scaler prediction (`benchmarks/bench_boosted_forest.py`)",
        "",
        'Raw scores of the boosted trees of `scaler="features"`: scikit-learn\'s own '
        "`HistGradientBoostingClassifier._raw_predict` (one thread) vs the library's "
        "NumPy walk and its compiled twin (extra `fast`), same forest, same rows, "
        "interleaved; medians of the rounds. Every path checked equal (compiled = "
        "NumPy bit for bit; both within 1e-12 of scikit-learn's).",
        "",
        header(prefix=""),
    ]
    lines.append(f"load average at start: {load_average()}")
    with threadpool_limits(1):
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        model, trees, baseline = forest(args.fit_rows, args.features)
        prepared = _boosting.prepare_forest(trees)
        try:
            from sklearn_betacal._kernels import _boosting_numba  # noqa: F401

            has_numba = True
        except ImportError:
            has_numba = False
        lines.append(
            f"forest: {len(trees)} trees (BOOSTING, early stopping), "
            f"{sum(t['children_left'].shape[0] for t in trees)} nodes, fitted on "
            f"{args.fit_rows} rows x {args.features + 1} columns; numba: {has_numba}"
        )
        rows = []
        rng = np.random.default_rng(1)
        for n in (int(v) for v in args.rows):
            F = np.column_stack(
                [rng.normal(scale=1.5, size=n), rng.normal(size=(n, args.features))]
            )

            def numpy_path(F=F):
                _boosting.USE_NUMBA = False
                return _boosting.forest_raw(F, baseline, prepared)

            def compiled_path(F=F):
                _boosting.USE_NUMBA = True
                return _boosting.forest_raw(F, baseline, prepared)

            fns = {"sklearn": lambda F=F: model._raw_predict(F), "numpy": numpy_path}
            if has_numba:
                fns["compiled"] = compiled_path
            ref = numpy_path()
            assert np.allclose(ref, model._raw_predict(F).ravel(), rtol=0, atol=1e-12)
            if has_numba:
                assert compiled_path().tobytes() == ref.tobytes()
            times = median_times(fns, args.repeat, warmup=1)
            _boosting.USE_NUMBA = None
            base = times["sklearn"]
            row = [f"{n:.0e}", f"{base * 1e3:.1f}"]
            row += [f"{times['numpy'] * 1e3:.1f}", f"{times['numpy'] / base:.2f}"]
            if has_numba:
                t = times["compiled"]
                row += [f"{t * 1e3:.1f}", f"{t / base:.2f}"]
            row.append(load_average())
            rows.append(row)
            print(row, flush=True)
    head = ["rows", "sklearn ms", "numpy ms", "numpy / sklearn"]
    if has_numba:
        head += ["compiled ms", "compiled / sklearn"]
    head.append("load")
    lines += [""] + markdown_table(head, rows)
    if args.out:
        write_result(args.out, lines)
    else:
        print("\n".join(lines))


if __name__ == "__main__":
    main()
