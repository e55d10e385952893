# SPDX-License-Identifier: MIT
"""KDTreePartitioner: build/transform speed against floors and a peer, and
which ``split_axis`` gives the lowest beta-calibration error on real data.

Two sub-commands, each in one process.

``speed`` -- on Gaussian rows of shape (N, d) (float32 by default), for
each depth:

* the median-finding floor: per tree level one strided copy of a column and
  one ``np.partition`` of it over all N rows (what any level-wise median
  kd-tree must at least do), over the depth the tree actually reached;
* the kernel ``build_kdtree`` (split_axis="cycle") on validated data, as
  committed ("after": the NumPy build, the only one since session 17) and
  -- with ``--before REF`` -- the kernel files of the git revision REF
  loaded into the same process ("before"; for a revision that still had
  the compiled twin ``_kdtree_numba``, that twin, compiled before timing,
  when numba is installed: ``--before 32982c0`` re-measures the choice
  written in docs/scaling.rst), with the extra
  memory of each (``tracemalloc`` peak above the level before the call,
  per row; it includes the fitted arrays the kernel returns);
* the estimator ``KDTreePartitioner.fit`` (kernel + ``validate_data``,
  whose finite check reads all N x d values) and ``.transform`` of up to
  1e5 new rows;
* optionally (``--peer-depths``) ``split_axis="max_spread"`` and ``"pca"``
  fits (they read every coordinate, so they cannot approach the floor) and
  the peer ``sklearn.neighbors.KDTree`` with ``leaf_size = ceil(N / 2**depth)``.

A depth of 64 with ``--min-samples-leaf 1`` is the deep/tiny-leaf case
(issue 14 item 18): the tree grows until every leaf holds one row (or only
tied rows), ``log2(N)`` levels.

Medians of ``--repeats`` runs of CPU time (``time.process_time``; the
machine is shared, CPU time is less disturbed by other processes than wall
time, which is printed too) and ratios to the floor; peak RSS at the end.
BLAS is limited to ``--blas-threads`` (default 1) threads.

``quality`` -- the verbalized-confidence rows of the Influences-on-LLM-
Calibration data (``$BETACAL_SHARED_DATA/influences``), embedded by TF-IDF of
question + extracted answer and ``TruncatedSVD``; per seed a 20:60:20 split
(tree : calibration : test, the paper's protocol without its tuning split);
``BetaBinningCalibrator(partitioner=FrozenEstimator(tree))`` fitted on the
calibration rows; on the test rows beta-CE (``beta_calibration_error``)
under the tree's own cells, under two fixed reference partitions (dataset x
model, 48 groups; KMeans-32 on the embedding) so that different trees are
scored against the same beta, and plain ECE. The embedding is used as is
(SVD coordinates come sorted by singular value, which favours "cycle") and
after a random rotation (like a neural embedding, whose coordinates have no
order). Usage::

    python benchmarks/bench_kdtree.py [--blas-threads 1] speed --n 1e6 --d 384 \
        --before e0f8b7b~1 --depths 3 6 10 64
    python benchmarks/bench_kdtree.py quality [--seeds 3] [--svd 128]
"""

import argparse
import importlib
import importlib.util
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import types

import numpy as np
from _measure import (
    add_data_argument,
    header,
    load_influences,
    median_time,
    peak_bytes,
    peak_rss_mb,
)

from sklearn_betacal import KDTreePartitioner
from sklearn_betacal._kernels._kdtree import build_kdtree

DEPTHS = (2, 4, 6, 8, 10)


def timed(fn, repeats):
    """Median CPU and wall seconds of ``repeats`` calls of ``fn``."""
    wall, cpu = median_time(fn, repeats, cpu=True)
    return cpu, wall


def peak_rss_gb():
    return peak_rss_mb() / 1024


def floor(X, depth):
    for lev in range(depth):
        col = np.ascontiguousarray(X[:, lev % X.shape[1]])
        np.partition(col, (col.shape[0] - 1) // 2)


def _git_show(ref, path):
    here = os.path.dirname(os.path.abspath(__file__))
    return subprocess.run(
        ["git", "show", f"{ref}:{path}"],
        cwd=here,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def kernel_at(ref):
    """The kd-tree kernel module as of git revision ``ref`` (for "before"),
    with that revision's compiled kernels ``_kdtree_numba``.

    Both files are executed into a stand-in package registered in
    ``sys.modules``: the old ``from . import _kdtree_numba`` finds the old
    compiled kernels, and its other relative imports (``from ._scaling
    import ...``) today's modules of ``sklearn_betacal._kernels``, so
    today's package needs none of the old functions. The old kernels
    compile in memory (no source file for numba's disk cache).
    """
    tag = "".join(ch if ch.isalnum() else "_" for ch in ref)
    pkg_name = f"sklearn_betacal._kernels._at_{tag}"
    if pkg_name in sys.modules:
        return sys.modules[f"{pkg_name}._kdtree"]
    pkg = types.ModuleType(pkg_name)
    pkg.__path__ = []
    sys.modules[pkg_name] = pkg
    src = _git_show(ref, "sklearn_betacal/_kernels/_kdtree.py")
    for name in set(re.findall(r"^from \.(\w+) import", src, re.M)):
        if name != "_kdtree_numba":
            sys.modules[f"{pkg_name}.{name}"] = importlib.import_module(
                f"sklearn_betacal._kernels.{name}"
            )
    if re.search(r"^from \. import .*\bcompiled_twin\b", src, re.M):
        # today's compiled_twin imports relative to the real package, which
        # would time today's compiled kernels as "before": the stand-in's own
        # (the same rule; the old kernels, exec'd below when numba is there)
        def twin(setting, size, floor, module):
            if setting is False or (setting is None and size < floor):
                return None
            return sys.modules.get(pkg_name + module)

        pkg.compiled_twin = twin
    try:
        nb_src = _git_show(ref, "sklearn_betacal/_kernels/_kdtree_numba.py")
    except subprocess.CalledProcessError:
        nb_src = None  # a revision before the compiled kernels
    if nb_src is not None and importlib.util.find_spec("numba") is not None:
        nb = types.ModuleType(f"{pkg_name}._kdtree_numba")
        nb.__package__ = pkg_name
        nb.__file__ = os.path.join(tempfile.gettempdir(), f"{tag}_kdtree_numba.py")
        sys.modules[nb.__name__] = nb
        pkg._kdtree_numba = nb
        exec(compile(nb_src, f"{ref}:_kdtree_numba.py", "exec"), nb.__dict__)
    mod = types.ModuleType(f"{pkg_name}._kdtree")
    mod.__package__ = pkg_name
    sys.modules[mod.__name__] = mod
    exec(compile(src, f"{ref}:_kdtree.py", "exec"), mod.__dict__)
    return mod


def speed(args):
    from sklearn.neighbors import KDTree

    n, d, reps = int(float(args.n)), args.d, args.repeats
    msl = args.min_samples_leaf
    print(header())
    print(f"# uptime: {os.popen('uptime').read().strip()}")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d), dtype=np.float64).astype(args.dtype)
    X_new = rng.standard_normal((min(n, 100_000), d)).astype(args.dtype)
    print(
        f"# N={n:.0e} d={d} {args.dtype} ({X.nbytes / 2**30:.2f} GiB), "
        f"min_samples_leaf={msl}, repeats={reps}"
    )
    print(f"# peak RSS after data: {peak_rss_gb():.2f} GiB")
    before = kernel_at(args.before) if args.before else None
    if before is not None:
        print(f"# before = sklearn_betacal/_kernels/_kdtree.py at {args.before}")
    has_numba = importlib.util.find_spec("numba") is not None
    if before is not None and hasattr(before, "USE_NUMBA") and has_numba:
        before.USE_NUMBA = True
        before.build_kdtree(X[:1000], 3, msl, "cycle")  # compile outside timings
    cols = (
        "depth (reached) | floor | before build (x floor) | after build"
        " (x floor) | before B/row | after B/row | fit (x floor) | transform"
        f" {X_new.shape[0]:.0e} rows | fit max_spread | fit pca | sklearn KDTree"
        " (x after)"
    )
    print("\nCPU seconds, median of repeats (wall seconds in brackets)\n")
    print("| " + cols + " |")
    print("|" + "---|" * (cols.count("|") + 1))
    peers = set(args.peer_depths)
    for depth in args.depths:
        tree = build_kdtree(X, depth, msl, "cycle")
        reached = int(tree["depth"].max())
        del tree
        f_c, f_w = timed(lambda r=reached: floor(X, r), reps)
        row = [f"{depth} ({reached})", f"{f_c:.3f} ({f_w:.3f})"]
        if before is not None:
            b_reps = reps if depth <= 16 else max(1, min(reps, args.slow_repeats))
            # "before" runs its compiled path when numba is installed; one
            # untimed build compiles what this depth needs (as the build of
            # "after" above, whose kernels numba may also load from disk)
            if hasattr(before, "USE_NUMBA"):
                before.USE_NUMBA = has_numba
            before.build_kdtree(X, depth, msl, "cycle")
            b_c, b_w = timed(
                lambda depth=depth: before.build_kdtree(X, depth, msl, "cycle"), b_reps
            )
            row.append(f"{b_c:.3f} ({b_w:.3f}) **{b_c / f_c:.2f}x**")
        else:
            row.append("-")
        k_c, k_w = timed(lambda depth=depth: build_kdtree(X, depth, msl, "cycle"), reps)
        row.append(f"{k_c:.3f} ({k_w:.3f}) **{k_c / f_c:.2f}x**")
        if before is not None:
            mb = peak_bytes(lambda d_=depth: before.build_kdtree(X, d_, msl, "cycle"))[
                1
            ]
            row.append(f"{mb / n:.1f}")
        else:
            row.append("-")
        ma = peak_bytes(lambda d_=depth: build_kdtree(X, d_, msl, "cycle"))[1]
        row.append(f"{ma / n:.1f}")
        part = KDTreePartitioner(depth, min_samples_leaf=msl)
        e_c, e_w = timed(lambda part=part: part.fit(X), reps)
        t_c, t_w = timed(lambda part=part: part.transform(X_new), reps)
        row += [f"{e_c:.3f} ({e_w:.3f}) {e_c / f_c:.2f}x", f"{t_c:.3f} ({t_w:.3f})"]
        slow_reps = max(1, min(reps, args.slow_repeats))
        for axis in ("max_spread", "pca"):
            if depth in peers:
                p = KDTreePartitioner(
                    depth, split_axis=axis, min_samples_leaf=msl, random_state=0
                )
                c, w = timed(lambda p=p: p.fit(X), slow_reps)
                row.append(f"{c:.2f} ({w:.2f})")
            else:
                row.append("-")
        if depth in peers:
            leaf = math.ceil(n / 2**depth)
            c, w = timed(lambda leaf=leaf: KDTree(X, leaf_size=leaf), slow_reps)
            row.append(f"{c:.2f} ({w:.2f}) {c / k_c:.1f}x")
        else:
            row.append("-")
        print("| " + " | ".join(row) + " |", flush=True)
    print(f"\n# peak RSS at end: {peak_rss_gb():.2f} GiB")
    print(f"# uptime: {os.popen('uptime').read().strip()}")


def _embed(frame, n_components, seed):
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    text = frame.question.fillna("") + " " + frame.extracted_answer.fillna("")
    tfidf = TfidfVectorizer(min_df=2, sublinear_tf=True).fit_transform(text)
    emb = TruncatedSVD(n_components, random_state=seed).fit_transform(tfidf)
    return emb.astype(np.float32)


def quality(args):
    import pandas as pd
    from sklearn.cluster import KMeans
    from sklearn.frozen import FrozenEstimator

    from sklearn_betacal import BetaBinningCalibrator
    from sklearn_betacal.metrics import (
        beta_calibration_error,
        expected_calibration_error,
    )

    print(header())
    A = load_influences(args.data, judged=False)
    V = A[A.verbal_confidence.between(0, 1)]
    V = V.reset_index(drop=True)
    h = V.verbal_confidence.to_numpy(float)
    y = V.correct_judge.to_numpy(float)
    t0 = time.perf_counter()
    emb = _embed(V, args.svd, 0)
    rot = np.linalg.qr(np.random.default_rng(0).normal(size=(args.svd, args.svd)))[0]
    embeddings = {"svd": emb, "rotated": (emb @ rot).astype(np.float32)}
    print(
        f"# {len(V)} verb rows, TF-IDF + TruncatedSVD({args.svd}) in "
        f"{time.perf_counter() - t0:.0f} s; BetaBinningCalibrator("
        f"points_per_bin={args.b}); {args.seeds} seeds; beta-CE with 10 "
        "uniform bins per cell, -1 rows form their own cell"
    )
    group_ref = pd.factorize(V.dataset + "/" + V.model)[0]
    configs = [("none (raw)", None, 0), ("UMD only", "cycle", 0)]
    for depth in args.depths:
        configs += [(axis, axis, depth) for axis in ("cycle", "max_spread", "pca")]
    results = {}
    for emb_name, Z in embeddings.items():
        for seed in range(args.seeds):
            perm = np.random.default_rng(seed).permutation(len(V))
            n_tree, n_cal = int(0.2 * len(V)), int(0.6 * len(V))
            i_tree, i_cal = perm[:n_tree], perm[n_tree : n_tree + n_cal]
            i_test = perm[n_tree + n_cal :]
            km = KMeans(32, random_state=seed, n_init=1).fit(Z[i_tree])
            ref_km = km.predict(Z[i_test])
            for name, axis, depth in configs:
                if axis is None:
                    p_test, cells = h[i_test], np.zeros(len(i_test), int)
                else:
                    tree = KDTreePartitioner(depth, split_axis=axis, random_state=seed)
                    tree.fit(Z[i_tree])
                    cal = BetaBinningCalibrator(
                        partitioner=FrozenEstimator(tree),
                        points_per_bin=args.b,
                        random_state=seed,
                    )
                    cal.fit(np.column_stack([h[i_cal], Z[i_cal]]), y[i_cal])
                    X_test = np.column_stack([h[i_test], Z[i_test]])
                    p_test = cal.predict_proba(X_test)[:, 1]
                    cells = tree.apply(Z[i_test])
                yt = y[i_test]
                row = (
                    beta_calibration_error(yt, p_test, cells=cells),
                    beta_calibration_error(yt, p_test, cells=group_ref[i_test]),
                    beta_calibration_error(yt, p_test, cells=ref_km),
                    expected_calibration_error(yt, p_test),
                    float(np.mean(cells == -1)),
                )
                results.setdefault((emb_name, name, depth), []).append(row)
    print(
        "\nTest-split means over seeds (+- std). Lower is better for all "
        "errors. 'own' = beta-CE under the tree's own cells (not comparable "
        "across trees); 'dataset x model' and 'KMeans-32' are fixed betas.\n"
    )
    print(
        "| embedding | split_axis | depth | beta-CE own | beta-CE dataset x model |"
        " beta-CE KMeans-32 | ECE | test rows outside (-1) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (emb_name, name, depth), rows in results.items():
        r = np.array(rows)
        m, s = r.mean(axis=0), r.std(axis=0)
        cells = " | ".join(f"{m[i]:.4f} +- {s[i]:.4f}" for i in range(4))
        print(f"| {emb_name} | {name} | {depth} | {cells} | {m[4]:.3f} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("speed")
    sp.add_argument("--n", default="1e5")
    sp.add_argument("--d", type=int, default=384)
    sp.add_argument("--repeats", type=int, default=5)
    sp.add_argument("--slow-repeats", type=int, default=5)
    sp.add_argument("--depths", type=int, nargs="+", default=list(DEPTHS))
    sp.add_argument("--peer-depths", type=int, nargs="*", default=[])
    sp.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    sp.add_argument("--min-samples-leaf", type=int, default=1)
    sp.add_argument(
        "--before",
        default=None,
        help="git revision whose kd-tree kernel is timed as 'before'",
    )
    qp = sub.add_parser("quality")
    add_data_argument(qp)
    qp.add_argument("--seeds", type=int, default=3)
    qp.add_argument("--svd", type=int, default=128)
    qp.add_argument("--b", type=int, default=50)
    qp.add_argument("--depths", type=int, nargs="+", default=[2, 4, 6])
    ap.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        help="BLAS threads (default 1: on a shared 2-core machine OpenBLAS "
        "threads spin and inflate CPU and wall time of the 'pca' projection)",
    )
    args = ap.parse_args()
    from threadpoolctl import threadpool_limits

    with threadpool_limits(args.blas_threads):
        speed(args) if args.cmd == "speed" else quality(args)


if __name__ == "__main__":
    main()
