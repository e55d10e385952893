# SPDX-License-Identifier: MIT
"""The fine cells' k-means on all rows or on a subsample, on every set.

Issue 21, item 6 (cost). ``CalibrationTreePartitioner()`` (``strategy="merge"``)
fits its fine k-means cells on at most ``_tree.KMEANS_ROWS_PER_CELL`` rows per
centre (a uniform draw of the weighted rows), then sends every row to its
nearest centre. Before: the k-means on every row (``None``). All side by side
in one process on the same rows, with ``merge_stop.py``'s sets, scores and
calibrated null (the module switch replaces that study's two stops; the stop
is today's).

Run: ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python
benchmarks/studies/kmeans_rows.py`` (``merge_stop.py``'s options); writes
``results/kmeans_rows.md`` and its CSV.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))  # the harness
sys.path.insert(0, str(HERE.parent))
import merge_stop  # noqa: E402
import numpy as np  # noqa: E402
import sklearn.cluster  # noqa: E402
from _measure import RESULTS, load_average, median_times  # noqa: E402
from _planted import planted_groups  # noqa: E402

import sklearn_betacal._partition._tree as _tree  # noqa: E402
from sklearn_betacal import (  # noqa: E402
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    KDTreePartitioner,
)

#: the contenders: KMEANS_ROWS_PER_CELL
ROWS = {
    "k-means on all rows": None,
    "k-means on 128 rows per centre": 128,
    "k-means on 64 rows per centre": 64,
}


#: ``--lloyd``: the cheaper k-means' Lloyd iterations and k-means++ trials
LLOYD_CAP, INIT_TRIALS = 16, 1
LLOYD = {"k-means as today": False, "k-means, 16 Lloyd iterations, 1 trial": True}
KMEANS = sklearn.cluster.KMeans


class CheapKMeans:
    """What ``_tree`` calls as ``KMeans(k, n_init=1, random_state=seed)``:
    ``INIT_TRIALS`` k-means++ candidates per centre, at most ``LLOYD_CAP``
    Lloyd iterations (the package's: 5 candidates for 50 centres, up to
    300 iterations, about 20-35 run)."""

    def __init__(self, n_clusters, *, n_init, random_state):
        self.n_clusters, self.random_state = n_clusters, random_state

    def fit(self, X, sample_weight=None):
        init, _ = sklearn.cluster.kmeans_plusplus(
            X,
            self.n_clusters,
            sample_weight=sample_weight,
            random_state=self.random_state,
            n_local_trials=INIT_TRIALS,
        )
        km = KMEANS(self.n_clusters, init=init, n_init=1, max_iter=LLOYD_CAP)
        km.fit(X, sample_weight=sample_weight)
        self.cluster_centers_ = km.cluster_centers_
        return self


def one_liner(name, seed):
    _tree.KMEANS_ROWS_PER_CELL = ROWS[name]  # read when the partition is fitted
    return CalibrationTreePartitioner(random_state=seed)


def one_liner_lloyd(name, seed):
    # _tree imports KMeans when the partition is fitted
    sklearn.cluster.KMeans = CheapKMeans if LLOYD[name] else KMEANS
    return CalibrationTreePartitioner(random_state=seed)


def lloyd_cost(repeats=9):
    """Markdown lines: CPU ms of the k-means and of the BB fit, today's and
    the cheaper one, and a kd-tree BB fit, interleaved in this process, on
    ``bench_learned_cost.py``'s larger planted set (40,528 rows)."""
    h, E, *_, y, _ = planted_groups(16, size_range=(1000, 5000), random_state=0)
    X = np.column_stack([h, E])
    seen = []

    class Recorder(CheapKMeans):
        def fit(self, Z, sample_weight=None):
            seen.append((Z, sample_weight, self.n_clusters, self.random_state))
            return super().fit(Z, sample_weight)

    sklearn.cluster.KMeans = Recorder
    try:
        BetaBinningCalibrator(partitioner=CalibrationTreePartitioner()).fit(X, y)
    finally:
        sklearn.cluster.KMeans = KMEANS
    Z, w, k, seed = seen[-1]

    def bb(cheap):
        sklearn.cluster.KMeans = CheapKMeans if cheap else KMEANS
        try:
            BetaBinningCalibrator(partitioner=CalibrationTreePartitioner()).fit(X, y)
        finally:
            sklearn.cluster.KMeans = KMEANS

    fns = {
        "k-means as today": lambda: KMEANS(k, n_init=1, random_state=seed).fit(
            Z, sample_weight=w
        ),
        "cheaper k-means": lambda: CheapKMeans(k, n_init=1, random_state=seed).fit(
            Z, sample_weight=w
        ),
        "kd-tree BB fit": lambda: BetaBinningCalibrator(
            partitioner=KDTreePartitioner()
        ).fit(X, y),
        "merge BB fit as today": lambda: bb(False),
        "merge BB fit, cheaper k-means": lambda: bb(True),
    }
    start = load_average()
    t = median_times(fns, repeats, cpu=True, warmup=1)
    ms = {name: 1e3 * t[name][1] for name in fns}
    kd = ms["kd-tree BB fit"]
    lines = [
        "",
        "## Cost at 40,528 rows (planted, 16 blobs in 32-d)",
        "",
        f"CPU ms of this process, medians of {repeats} interleaved rounds, one "
        f"BLAS thread; the k-means on the partition's draw ({Z.shape[0]} of "
        f"the grown rows, {k} centres); load average {start} (start), "
        f"{load_average()} (end), 2 shared cores.",
        "",
        "| contender | CPU ms | / kd-tree BB fit |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {v:.1f} | {v / kd:.2f}x |" for name, v in ms.items()]
    return lines


def main(argv=None):
    default = _tree.KMEANS_ROWS_PER_CELL
    argv = list(sys.argv[1:] if argv is None else argv)
    lloyd = "--lloyd" in argv
    if lloyd:
        argv.remove("--lloyd")
        merge_stop.STOPS, merge_stop.one_liner = LLOYD, one_liner_lloyd
    else:
        merge_stop.STOPS, merge_stop.one_liner = ROWS, one_liner
    if "--out" not in argv:
        name = "kmeans_rows_lloyd.md" if lloyd else "kmeans_rows.md"
        argv += ["--out", str(RESULTS / name)]
    try:
        merge_stop.main(argv)
    finally:
        _tree.KMEANS_ROWS_PER_CELL = default
        sklearn.cluster.KMeans = KMEANS
    out = Path(argv[argv.index("--out") + 1])
    lines = out.read_text().splitlines()
    lines[0] = "# The fine cells' k-means on all rows or a subsample (issue 21, item 6)"
    if lloyd:
        lines += lloyd_cost()
    out.write_text("\n".join(lines).replace("Both stops", "The k-means") + "\n")


if __name__ == "__main__":
    main()
