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
from _measure import RESULTS  # noqa: E402

import sklearn_betacal._partition._tree as _tree  # noqa: E402
from sklearn_betacal import CalibrationTreePartitioner  # noqa: E402

#: the contenders: KMEANS_ROWS_PER_CELL
ROWS = {
    "k-means on all rows": None,
    "k-means on 128 rows per centre": 128,
    "k-means on 64 rows per centre": 64,
}


def one_liner(name, seed):
    _tree.KMEANS_ROWS_PER_CELL = ROWS[name]  # read when the partition is fitted
    return CalibrationTreePartitioner(random_state=seed)


def main(argv=None):
    default = _tree.KMEANS_ROWS_PER_CELL
    merge_stop.STOPS, merge_stop.one_liner = ROWS, one_liner
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--out" not in argv:
        argv += ["--out", str(RESULTS / "kmeans_rows.md")]
    try:
        merge_stop.main(argv)
    finally:
        _tree.KMEANS_ROWS_PER_CELL = default
    out = Path(argv[argv.index("--out") + 1])
    lines = out.read_text().splitlines()
    lines[0] = "# The fine cells' k-means on all rows or a subsample (issue 21, item 6)"
    out.write_text("\n".join(lines).replace("Both stops", "The k-means") + "\n")


if __name__ == "__main__":
    main()
