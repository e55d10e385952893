# SPDX-License-Identifier: MIT
"""Memory and time of ``betacal apply`` on files larger than its memory budget.

1. ``betacal fit`` a BB model (``--group model``) and a text model
   (``--text question --model-column model``) on the bundled TriviaQA data.
2. Generate files of ``--rows`` rows (default 1e6 and 1e7) by resampling the
   bundled rows (columns: confidence, model, question id, question text,
   label), in CSV and Parquet, written chunk by chunk.
3. Run ``betacal apply`` on each in a fresh process and record the peak
   resident memory of that process (``ru_maxrss`` of the child) and its wall
   and CPU time. If apply streams, the peak is the same for 1e6 and 1e7 rows.

Usage::

    python benchmarks/bench_cli_apply.py --workdir /tmp/bench --rows 1e6 1e7
"""

import argparse
import platform
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
from _measure import markdown_row, markdown_table

import sklearn_betacal
from sklearn_betacal.datasets import load_triviaqa_confidence

BETACAL = [
    sys.executable,
    "-c",
    "import sys; from sklearn_betacal.cli import main; sys.exit(main())",
]


def run(argv):
    """Run ``argv`` in a child; return (peak RSS MiB, wall s, CPU s, stderr)."""
    code = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "wall = time.perf_counter() - t\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "sys.stderr.write(r.stderr + r.stdout)\n"
        "print(u.ru_maxrss, wall, u.ru_utime + u.ru_stime, r.returncode)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True
    )
    rss_kib, wall, cpu, rc = out.stdout.split()
    if int(rc) != 0:
        raise RuntimeError(f"{argv} failed:\n{out.stderr}")
    return int(rss_kib) / 1024, float(wall), float(cpu), out.stderr


def generate(frame, n_rows, path, chunk=1_000_000, seed=0):
    """Resampled rows of ``frame`` written chunk by chunk (CSV or Parquet)."""
    rng = np.random.default_rng(seed)
    writer = None
    done = 0
    with open(path, "wb") if path.suffix == ".csv" else _null() as fh:
        while done < n_rows:
            m = min(chunk, n_rows - done)
            part = frame.iloc[rng.integers(0, len(frame), m)].reset_index(drop=True)
            if path.suffix == ".csv":
                part.to_csv(fh, index=False, header=done == 0)
            else:
                import pyarrow as pa
                import pyarrow.parquet as pq

                table = pa.Table.from_pandas(part, preserve_index=False)
                if writer is None:
                    writer = pq.ParquetWriter(path, table.schema)
                writer.write_table(table)
            done += m
    if writer is not None:
        writer.close()


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--rows", type=float, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--chunk-size", type=int, default=250_000)
    args = parser.parse_args()
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    frame = load_triviaqa_confidence().frame[
        ["verbal_confidence", "model", "question_id", "question", "correct_judge"]
    ]
    train = work / "triviaqa.csv"
    frame.to_csv(train, index=False)

    print(
        f"python {platform.python_version()}, sklearn_betacal {sklearn_betacal.__version__}"
    )
    print(
        f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}"
    )
    models = {
        "bb --group model": ["--group", "model", "--method", "bb"],
        "bb --text question --model-column model": [
            "--text",
            "question",
            "--model-column",
            "model",
            "--method",
            "bb",
            "--max-depth",
            "2",
        ],
    }
    print("\n## fit on the bundled data (11,666 rows)\n")
    head = ["model", "peak RSS (MiB)", "wall (s)", "CPU (s)"]
    print("\n".join(markdown_table(head, align="lrrr")))
    paths = {}
    for name, flags in models.items():
        out = work / (name.split()[0] + str(len(paths)) + ".skops")
        rss, wall, cpu, _ = run(
            [
                *BETACAL,
                "fit",
                str(train),
                "--confidence",
                "verbal_confidence",
                "--label",
                "correct_judge",
                *flags,
                "--output",
                str(out),
                "--force",
            ]
        )
        paths[name] = out
        print(markdown_row([name, f"{rss:.0f}", f"{wall:.1f}", f"{cpu:.1f}"]))

    print(f"\n## apply (--chunk-size {args.chunk_size}), each run a fresh process\n")
    head = ["model", "input", "rows", "input size (MiB)", "peak RSS (MiB)"]
    head += ["wall (s)", "CPU (s)", "rows/s (CPU)"]
    print("\n".join(markdown_table(head, align="llrrrrrr")))
    for rows in [int(r) for r in args.rows]:
        for suffix in (".parquet", ".csv"):
            src = work / f"rows{rows}{suffix}"
            if not src.exists():
                generate(frame, rows, src)
            size = src.stat().st_size / 2**20
            for name, model in paths.items():
                if "text" in name and rows > 1_000_000:
                    continue  # TF-IDF of 1e7 questions: CPU-bound, memory as 1e6
                dst = work / f"out{suffix}"
                rss, wall, cpu, _ = run(
                    [
                        *BETACAL,
                        "apply",
                        str(model),
                        str(src),
                        str(dst),
                        "--force",
                        "--chunk-size",
                        str(args.chunk_size),
                    ]
                )
                cells = [name, suffix[1:], f"{rows:,}", f"{size:.0f}", f"{rss:.0f}"]
                cells += [f"{wall:.1f}", f"{cpu:.1f}", f"{rows / cpu:,.0f}"]
                print(markdown_row(cells), flush=True)
                dst.unlink()
    print(
        f"\nuptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}"
    )
    print(
        f"peak RSS of this driver: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )


if __name__ == "__main__":
    main()
