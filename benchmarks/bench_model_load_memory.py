# SPDX-License-Identifier: MIT
"""Peak memory of ``sklearn_betacal.io.load`` against the file's size.

The goal (issue 43): loading any model file takes at most 64 MiB + 4 times
the file's size. Each case is fitted, written with ``io.dump`` and loaded in
a fresh interpreter under ``tracemalloc`` (Python's and NumPy's allocations);
the table gives the file's size, the peak and the peak's ratio to the file
(beyond 64 MiB). The cases span small models (the 64 MiB dominates), a
binning of ~1.2M bins (a ~100 MiB file of arrays) and a kd-tree of 2**14
cells, plus a hostile file: a ~0.3 MiB archive of many small members, each
compressed 1000 times (refused from the central directory).

Usage::

    PYTHONPATH=<checkout> python benchmarks/bench_model_load_memory.py
"""

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
from _measure import header, markdown_table

import sklearn_betacal as sb
from sklearn_betacal import io as model_io

_PEAK = """
import sys, tracemalloc
from sklearn_betacal import io
import skops.io
tracemalloc.start()
try:
    io.load(sys.argv[1], max_size=None)
    print("loaded")
except ValueError as exc:
    print("refused")
print(tracemalloc.get_traced_memory()[1])
"""


def cases(scale):
    rng = np.random.default_rng(0)
    n = int(1_200_000 * scale)
    h = rng.uniform(size=n)
    y = (rng.uniform(size=n) < h).astype(int)
    yield (
        "UMDBinner, 1 point per bin",
        sb.UMDBinner(points_per_bin=1, random_state=0),
        h,
        y,
    )
    m = 200_000
    Z = rng.normal(size=(m, 3))
    yield "KDTreePartitioner, 2**14 cells", sb.KDTreePartitioner(max_depth=14), Z, None
    X = np.column_stack([h[:m], Z])
    bb = sb.BetaBinningCalibrator(sb.KDTreePartitioner(max_depth=6), random_state=0)
    yield "BetaBinningCalibrator, 64 cells", bb, X, y[:m]


def peak(path):
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True
    )
    verdict, value = out.stdout.split()
    return verdict, int(value)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, est, X, y in cases(args.scale):
            est.fit(X) if y is None else est.fit(X, y)
            path = model_io.dump(est, Path(tmp) / "m.skops")
            size = path.stat().st_size
            verdict, top = peak(path)
            rows.append(
                [name, verdict, f"{size / 2**20:.1f}", f"{top / 2**20:.1f}",
                 f"{max(top - 2**26, 0) / size:.2f}"]
            )  # fmt: skip
        good = model_io.dump(sb.PlattScaler().fit([0.2, 0.8], [0, 1]), Path(tmp) / "p")
        bomb = Path(tmp) / "bomb.skops"
        with zipfile.ZipFile(good) as zin, zipfile.ZipFile(bomb, "w") as zout:
            for info in zin.infolist():
                zout.writestr(info, zin.read(info))
            for k in range(300):
                zout.writestr(f"pad{k}.bin", b"\0" * (2**20 - 1), zipfile.ZIP_DEFLATED)
        size = bomb.stat().st_size
        verdict, top = peak(bomb)
        rows.append(
            ["300 small members compressed 1000x (bomb)", verdict,
             f"{size / 2**20:.1f}", f"{top / 2**20:.1f}",
             f"{max(top - 2**26, 0) / size:.2f}"]
        )  # fmt: skip
    lines = [header("skops", prefix=""), ""]
    lines += markdown_table(
        ["case", "io.load", "file MiB", "peak MiB", "(peak - 64 MiB) / file"], rows
    )
    lines += ["", "Goal: (peak - 64 MiB) / file <= 4 for every case."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
