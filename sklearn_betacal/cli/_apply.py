# SPDX-License-Identifier: MIT
"""``betacal apply MODEL IN OUT``: add calibrated confidences to a file.

The input is read and written in chunks (pyarrow record batches for Parquet,
pandas chunks for CSV), so the file may be larger than memory: peak memory
grows with ``--chunk-size``, not with the file. The output holds every input
column plus the calibrated confidence (and the cell id with ``--cells``); it
is written through a temporary file in the output's folder and moved into
place only when complete (:func:`sklearn_betacal._io.atomic_write`), so a
failure at any row leaves no output and no temporary file.
"""

import bz2
import contextlib
import gzip
import io
import lzma
import os
import sys
import time
from pathlib import Path

import numpy as np

from .._io import TableReadError, atomic_write, file_kind, iter_table_chunks
from ._common import EXIT_OK, UsageError, check_output, one_line
from ._fit import confidence_values

_WRITE_COMPRESSION = {".gz": gzip.GzipFile, ".bz2": bz2.BZ2File, ".xz": lzma.LZMAFile}


def add_apply(subparsers):
    parser = subparsers.add_parser(
        "apply",
        help="add calibrated confidences to a file with a model from 'betacal fit'",
        description=(
            "Read IN in chunks, add the calibrated confidence of every row "
            "(and its cell with --cells) and write OUT atomically. IN and OUT "
            "are CSV/TSV (optionally .gz/.bz2/.xz) or Parquet files."
        ),
    )
    parser.add_argument("model", metavar="MODEL", help="model file from 'betacal fit'")
    parser.add_argument("input", metavar="IN")
    parser.add_argument("output", metavar="OUT")
    parser.add_argument("--cells", action="store_true", help="add the cell id column")
    parser.add_argument(
        "--column",
        default="calibrated_confidence",
        metavar="NAME",
        help="name of the new column (default: calibrated_confidence)",
    )
    parser.add_argument("--sep", help="CSV separator of IN (default: detected)")
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=250_000,
        metavar="ROWS",
        help="rows per chunk (memory grows with it; default 250000)",
    )
    parser.add_argument("--force", action="store_true", help="replace OUT")
    parser.set_defaults(func=run_apply)
    return parser


def _load_model(path):
    from .. import io as model_io

    try:
        header = model_io.read_header(path)
        est = model_io.load(path)
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise UsageError(one_line(exc)) from None
    spec = header.get("metadata", {})
    if spec.get("command") != "betacal fit":
        raise UsageError(
            f"model file {path} was not written by 'betacal fit' (it has no column "
            "settings); fit one with 'betacal fit', or use "
            "sklearn_betacal.io.load in Python"
        )
    return est, spec


def _output_writer(path, kind):
    """``(open_stream(fh), write(chunk), close())`` for the output format."""
    suffix = path.suffix.lower()
    if kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        state = {}

        def write(fh, frame):
            table = pa.Table.from_pandas(frame, preserve_index=False)
            if "writer" not in state:
                state["writer"] = pq.ParquetWriter(fh, table.schema)
                state["schema"] = table.schema
            elif not table.schema.equals(state["schema"]):
                try:
                    table = table.cast(state["schema"])
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise UsageError(
                        "a column's type changes between chunks of the input "
                        f"({one_line(exc)}); write CSV output, or convert the input "
                        "to Parquet first"
                    ) from None
            state["writer"].write_table(table)

        def close(fh, empty_frame):
            if "writer" not in state:
                write(fh, empty_frame)
            state["writer"].close()

        return write, close
    sep = "\t" if kind == "tsv" else ","
    state = {"header": True}

    def write_csv(stream, frame):
        frame.to_csv(stream, sep=sep, index=False, header=state["header"])
        state["header"] = False

    def close_csv(stream, empty_frame):
        if state["header"]:
            write_csv(stream, empty_frame)

    if suffix in (".zip", ".zst"):
        raise UsageError(
            f"cannot write {suffix} output; use .csv, .csv.gz, .csv.bz2, .csv.xz "
            "or .parquet"
        )
    return write_csv, close_csv


def _check_paths(args):
    model = Path(args.model)
    src = Path(args.input)
    if not src.is_file():
        what = "is a directory" if src.is_dir() else "does not exist"
        raise UsageError(f"input file {src} {what}")
    out = Path(args.output)
    for other, what in ((model, "model file"),):
        if out.exists() and other.exists() and os.path.samefile(out, other):
            raise UsageError(f"OUT {out} is the {what}; refusing to overwrite it")
    out = check_output(out, src, args.force, name="OUT")
    try:
        kind = file_kind(out)
    except TableReadError as exc:
        raise UsageError(str(exc)) from None
    if args.chunk_size < 1:
        raise UsageError(f"--chunk-size must be at least 1, got {args.chunk_size}")
    return model, src, out, kind


def run_apply(args):
    start = time.perf_counter()
    model_path, src, out, out_kind = _check_paths(args)
    est, spec = _load_model(model_path)
    if args.cells and not hasattr(est, "apply"):
        raise UsageError(
            f"--cells: the {spec.get('method')} model has no cells (it uses the "
            "confidence only); drop --cells"
        )
    conf = spec["confidence"]
    columns = [conf, *spec.get("features", [])]
    fmt = spec.get("confidence_format", "number")
    try:
        chunks = iter_table_chunks(
            src,
            columns,
            args.chunk_size,
            sep=args.sep,
            text_columns=spec.get("text_columns", []),
        )
        first = next(chunks)
    except TableReadError as exc:
        raise UsageError(str(exc)) from None
    clash = [c for c in (args.column, "cell" if args.cells else None) if c in first]
    if clash:
        raise UsageError(
            f"the input already has a column {clash[0]!r}; name the new one with "
            "--column NAME"
            if clash[0] == args.column
            else "the input already has a column 'cell'; rename it or drop --cells"
        )
    write, close = _output_writer(out, out_kind)
    compress = (
        _WRITE_COMPRESSION.get(out.suffix.lower()) if out_kind != "parquet" else None
    )
    counts = {"rows": 0, "unparsed": 0}

    def calibrate(frame):
        h, _ = confidence_values(frame[conf], fmt, column=conf, check_scale=False)
        ok = ~np.isnan(h)
        p = np.full(h.shape[0], np.nan)
        cells = np.full(h.shape[0], -1, dtype=np.int64)
        if ok.any():
            X = frame.loc[ok, columns].reset_index(drop=True)
            X[conf] = h[ok]
            if len(columns) == 1:
                X = X[[conf]]
            try:
                p[ok] = est.predict_proba(X)[:, 1]
                if args.cells:
                    cells[ok] = est.apply(X)
            except (ValueError, TypeError) as exc:
                raise UsageError(
                    f"rows {counts['rows'] + 1}-{counts['rows'] + len(frame)} of "
                    f"{src}: {one_line(exc)}"
                ) from None
        counts["unparsed"] += int(np.count_nonzero(~ok))
        counts["rows"] += len(frame)
        frame = frame.copy()
        frame[args.column] = p
        if args.cells:
            frame["cell"] = cells
        return frame

    def produce(fh):
        stream = fh
        text = None
        with contextlib.ExitStack() as stack:
            if compress is not None:
                stream = stack.enter_context(compress(fileobj=fh, mode="wb"))
            if out_kind != "parquet":
                text = io.TextIOWrapper(stream, encoding="utf-8", newline="")
                stream = text
            empty = None
            try:
                for chunk in _chain(first, chunks):
                    result = calibrate(chunk)
                    empty = result.iloc[:0] if empty is None else empty
                    write(stream, result)
                close(stream, empty)
            except TableReadError as exc:
                raise UsageError(str(exc)) from None
            if text is not None:
                text.flush()
                text.detach()

    atomic_write(out, produce)
    seconds = time.perf_counter() - start
    note = ""
    if counts["unparsed"]:
        note = (
            f"; {counts['unparsed']} row(s) without a usable confidence have an "
            f"empty {args.column}"
        )
    print(
        f"betacal apply: {counts['rows']} rows written to {out} in "
        f"{seconds:.1f} s{note}",
        file=sys.stderr,
    )
    return EXIT_OK


def _chain(first, rest):
    yield first
    yield from rest
