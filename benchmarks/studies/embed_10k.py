# SPDX-License-Identifier: MIT
"""What the ``embeddings`` extra costs: time to embed 10,000 questions, size.

Issue 38, item 5. ``TextEmbedder(method="minilm")`` (all-MiniLM-L6-v2 through
sentence-transformers on the CPU build of torch) fitted and applied to
10,000 distinct questions of the Influences study (or the bundled TriviaQA
questions repeated with a suffix when the study is absent), one torch
thread per BLAS thread as set by the environment, beside the default
``method="tfidf-svd"`` on the same texts in the same process. Records wall
and CPU seconds, the load average, and the installed size of torch,
sentence-transformers and transformers (their folders in site-packages).

Run: ``OMP_NUM_THREADS=1 python benchmarks/studies/embed_10k.py`` (appends
its result to ``results/embeddings.md`` with ``--append``).
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness
from _measure import RESULTS, header  # noqa: E402

N = 10_000


def questions(n):
    import pandas as pd

    env = os.environ.get("BETACAL_SHARED_DATA")
    path = Path(env or "") / "influences" / "influences_llm_calibration_all.parquet"
    if env and path.is_file():
        q = pd.read_parquet(path, columns=["question"]).question.dropna().unique()
        return list(q[:n]), "influences"
    from sklearn_betacal.datasets import load_triviaqa_confidence

    base = load_triviaqa_confidence().frame.question.unique().tolist()
    return [f"{base[i % len(base)]} ({i})" for i in range(n)], "triviaqa"


def folder_mb(name):
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return float("nan")
    root = Path(list(spec.submodule_search_locations)[0])
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) / 2**20


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=N)
    parser.add_argument("--append", action="store_true")
    args = parser.parse_args(argv)
    import pandas as pd

    from sklearn_betacal import TextEmbedder

    texts, source = questions(args.n)
    frame = pd.DataFrame({"question": texts})
    rows = []
    for method in ("tfidf-svd", "minilm"):
        load = os.getloadavg()
        c0, t0 = time.process_time(), time.perf_counter()
        TextEmbedder(["question"], method=method, n_components=32).fit_transform(frame)
        rows.append(
            (method, time.perf_counter() - t0, time.process_time() - c0, load[0])
        )
    import torch

    lines = [
        "",
        f"## Time to embed {len(texts):,} questions (issue 38, item 5)",
        "",
        header(prefix=""),
        "",
        f"`benchmarks/studies/embed_10k.py`; {source} questions; "
        f"torch {torch.__version__} ({torch.get_num_threads()} thread(s)), "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}. Fit and "
        "transform of `TextEmbedder(['question'], method=..., n_components=32)` "
        "(MiniLM: encoding + PCA; the model loaded from the installed package, "
        "offline), in one process one after the other.",
        "",
        "| method | wall s | CPU s | 1-min load at start |",
        "|---|---:|---:|---:|",
        *(f"| {m} | {w:.1f} | {c:.1f} | {ld:.2f} |" for m, w, c, ld in rows),
        "",
        "Installed size (site-packages folders): "
        + ", ".join(
            f"{n} {folder_mb(n):.0f} MB"
            for n in ("torch", "sentence_transformers", "transformers")
        )
        + ".",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.append:
        with open(RESULTS / "embeddings.md", "a", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
