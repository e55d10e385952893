# SPDX-License-Identifier: MIT
"""Build the data files shipped in ``sklearn_betacal/datasets/data/``.

Reads the assembled Influences-on-LLM-Calibration snapshot
(``../shared/data/influences/influences_llm_calibration_all.parquet``, see its
PROVENANCE.md) and writes two files:

``triviaqa_confidence.csv.gz``
    The bundled TriviaQA subset loaded by
    :func:`sklearn_betacal.datasets.load_triviaqa_confidence`: prompt style
    ``verb``, split ``test``, dataset ``triviaqa``, rows whose verbalized
    confidence lies in ``[0, 1]`` (drops the ``-1`` parse-failure sentinel and
    the few values > 1), 12 models. Sorted by question then model so that the
    twelve copies of each question's text sit next to each other and gzip
    compresses them away. gzip with ``mtime=0`` and no file name, so the build
    is byte-reproducible.

``influences_manifest.csv``
    One row per upstream CSV file of the full study (247 files of the
    snapshot): dataset, model, prompt style, split, row count and the content
    digest (:func:`sklearn_betacal.datasets._influences.content_digest`) that
    :func:`sklearn_betacal.datasets.fetch_influences` checks every
    downloaded or cached file against.

Only TriviaQA text (Apache-2.0) is shipped as text inside the package. The
manifest holds names, counts and digests, no question text (SciQ text is
CC BY-NC, NQ text is CC BY-SA).

Usage::

    .venv/bin/python scripts/build_triviaqa_bundle.py [--source PARQUET] [--check]

``--check`` rebuilds in memory and fails if the committed files differ. The
script prints the sha256 of both files; they are pinned in
``sklearn_betacal/datasets/_bundled.py`` / ``_influences.py`` and in
``sklearn_betacal/datasets/data/PROVENANCE.md``.

Built with Python 3.11.7, pandas 3.1.1, numpy 2.4.6, pyarrow 26.0.1.
"""

import argparse
import gzip
import hashlib
import sys
from pathlib import Path

import pandas as pd

from sklearn_betacal.datasets._influences import (
    SHARED_PARQUET_SHA256,
    content_digest,
    source_file_name,
)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = (
    ROOT.parent
    / "shared"
    / "data"
    / "influences"
    / "influences_llm_calibration_all.parquet"
)
OUT_DIR = ROOT / "sklearn_betacal" / "datasets" / "data"
BUNDLE_COLUMNS = {
    # bundled name: column of the study snapshot
    "question_id": "row_in_file",
    "model": "model",
    "question": "question",
    "gold_answer": "target",
    "answer": "extracted_answer",
    "verbal_confidence": "verbal_confidence",
    "extracted_seq_prob": "extracted_seq_prob",
    "correct_judge": "correct_judge",
}


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def build_bundle(frame):
    """Return the gzip bytes of the bundled TriviaQA file and its row count."""
    keep = (
        (frame["dataset"] == "triviaqa")
        & (frame["prompt_style"] == "verb")
        & (frame["split"] == "test")
        & frame["verbal_confidence"].between(0, 1)
    )
    sub = frame.loc[keep, list(BUNDLE_COLUMNS.values())]
    sub.columns = list(BUNDLE_COLUMNS)
    # row_in_file is the question's position in the upstream test CSV, the same
    # question for every model: check it before using it as question_id.
    per_id = sub.groupby("question_id")["question"].nunique()
    if per_id.max() != 1:
        raise SystemExit("row_in_file does not identify one question across models")
    sub = sub.assign(correct_judge=sub["correct_judge"].astype("int64"))
    sub = sub.sort_values(["question_id", "model"], kind="stable")
    text = sub.to_csv(index=False, lineterminator="\n").encode("utf-8")
    data = bytearray(gzip.compress(text, compresslevel=9, mtime=0))
    # The header's OS byte is 255 ("unknown") from Python < 3.11's gzip and 3
    # (Unix) from newer ones; pin it so that every supported Python writes the
    # same bytes (the loader checks the file's sha256).
    data[9] = 3
    return bytes(data), len(sub)


def build_manifest(frame):
    """Return the CSV bytes of the per-file manifest of the full study."""
    rows = []
    keys = ["dataset", "model", "prompt_style", "split"]
    for key, part in frame.groupby(keys, sort=True):
        part = part.sort_values("row_in_file")
        if not (part["row_in_file"].to_numpy() == range(len(part))).all():
            raise SystemExit(f"rows of {key} are not 0..n-1 in file order")
        dataset, model, style, split = key
        rows.append(
            {
                "dataset": dataset,
                "model": model,
                "prompt_style": style,
                "split": split,
                "file": source_file_name(dataset, model, style, split),
                "n_rows": len(part),
                "content_sha256": content_digest(part),
            }
        )
    return pd.DataFrame(rows).to_csv(index=False, lineterminator="\n").encode()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)

    digest = hashlib.sha256(args.source.read_bytes()).hexdigest()
    if digest != SHARED_PARQUET_SHA256:
        raise SystemExit(f"{args.source}: sha256 {digest} is not the pinned snapshot")
    frame = pd.read_parquet(args.source)

    bundle, n_rows = build_bundle(frame)
    manifest = build_manifest(frame)
    outputs = {
        "triviaqa_confidence.csv.gz": bundle,
        "influences_manifest.csv": manifest,
    }
    status = 0
    for name, data in outputs.items():
        path = OUT_DIR / name
        if args.check:
            same = path.exists() and path.read_bytes() == data
            status |= not same
            print(f"{name}: {'up to date' if same else 'DIFFERS'}")
        else:
            path.write_bytes(data)
        print(f"{name}: {len(data):,} bytes, sha256 {sha256_bytes(data)}")
    print(f"bundled rows: {n_rows:,}")
    return status


if __name__ == "__main__":
    sys.exit(main())
