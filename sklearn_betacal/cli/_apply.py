# SPDX-License-Identifier: MIT
"""``betacal apply MODEL IN OUT``: add calibrated confidences to a file.

The input is read and written in chunks (pyarrow record batches for Parquet,
pandas chunks for CSV), so the file may be larger than memory: peak memory
grows with ``--chunk-size``, not with the file. The output holds every input
column plus the calibrated confidence (and the cell id with ``--cells``); it
is written through a temporary file in the output's folder and moved into
place only when complete (:func:`sklearn_betacal._io.atomic_write`), so a
failure at any row leaves no output and no temporary file.

``IN`` may also be a set of Parquet files (a glob pattern such as
``'answers/*.parquet'``, or a folder of ``.parquet`` files): with dask
installed it is read lazily as one dask DataFrame, every partition is
calibrated on its own (the same numbers as in memory: prediction is row by
row) and written as one Parquet file of the folder ``OUT``, which appears
complete or not at all (:func:`sklearn_betacal._io.atomic_directory`).

The model file records how ``betacal fit`` read the confidences (its
``confidence_format``: probabilities, percentages or verbalized text), and
``apply`` refuses an input read another way rather than return wrong numbers:
a percentage model whose input holds no confidence above 1 (fractions), a
probability model given a value above 1 (percentages) or text, a verbalized
model whose input column holds plain numbers only. The whole input is seen
before the output appears, so the refusal leaves nothing behind.
"""

import bz2
import contextlib
import glob
import gzip
import io
import lzma
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

from .._io import (
    _PARQUET_SUFFIXES,
    TableReadError,
    atomic_directory,
    atomic_write,
    check_input_file,
    file_kind,
    iter_table_chunks,
)
from . import _gate as gate
from ._common import (
    EXIT_OK,
    Progress,
    UsageError,
    add_progress_flags,
    check_can_create_in,
    check_output,
    one_line,
    separator,
)
from ._fit import (
    FORMAT_FLAGS,
    confidence_values,
    empty_responses,
    group_lines,
    plain_numbers_only,
    unread_lines,
)

#: The largest --chunk-size: far beyond memory, within a C long.
MAX_CHUNK_ROWS = 10**12

#: each opens a binary stream onto the open temporary file (GzipFile takes it
#: as ``fileobj``; BZ2File and LZMAFile as their first argument and have no
#: ``fileobj``: ``.bz2``/``.xz`` output failed with a TypeError)
_WRITE_COMPRESSION = {
    ".gz": lambda fh: gzip.GzipFile(fileobj=fh, mode="wb"),
    ".bz2": lambda fh: bz2.BZ2File(fh, mode="wb"),
    ".xz": lambda fh: lzma.LZMAFile(fh, mode="wb"),
}


def add_apply(subparsers):
    parser = subparsers.add_parser(
        "apply",
        help="add calibrated confidences to a file with a model from 'betacal fit'",
        description=(
            "Read IN in chunks, add the calibrated confidence of every row "
            "(and its cell with --cells) and write OUT atomically. IN and OUT "
            "are CSV/TSV (optionally .gz/.bz2/.xz) or Parquet files. IN may "
            "also be a set of Parquet files, as a quoted glob pattern "
            "('answers/*.parquet') or a folder: with the dask extra it is read "
            "lazily as a dask DataFrame and OUT is a folder of Parquet files, "
            "one per partition, written atomically."
        ),
    )
    parser.add_argument("model", metavar="MODEL", help="model file from 'betacal fit'")
    parser.add_argument(
        "input",
        metavar="IN",
        help="a table file, or a set of Parquet files: a quoted glob pattern "
        "or a folder",
    )
    parser.add_argument(
        "output", metavar="OUT", help="a table file (a folder when IN is a set)"
    )
    parser.add_argument("--cells", action="store_true", help="add the cell id column")
    parser.add_argument(
        "--column",
        default="calibrated_confidence",
        metavar="NAME",
        help="name of the new column (default: calibrated_confidence)",
    )
    parser.add_argument(
        "--sep", type=separator, help="CSV separator of IN (default: detected)"
    )
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=250_000,
        metavar="ROWS",
        help="rows per chunk (memory grows with it; default 250000)",
    )
    add_progress_flags(parser)
    parser.add_argument("--force", action="store_true", help="replace OUT")
    parser.set_defaults(func=run_apply)
    return parser


def _readable(path, what="input file"):
    """``check_input_file``, its refusal a usage error (one line, status 2)."""
    try:
        return check_input_file(path, what)
    except TableReadError as exc:
        raise UsageError(str(exc)) from None


def _load_model(path):
    from .. import io as model_io

    _readable(path, "model file")
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
    _check_spec(spec, path)
    fmt = spec.get("confidence_format", "number")
    if fmt not in FORMAT_FLAGS:
        raise UsageError(
            f"model file {path} records an unknown confidence format {fmt!r}; "
            "refit it with this version of 'betacal fit'"
        )
    return _reading_and_calibrator(est, spec, path), spec


def _check_spec(spec, path):
    """The column settings of a model file's header, typed as ``fit`` writes
    them: an altered header (a missing confidence column, a number where a
    list of names belongs) was a KeyError or TypeError traceback."""

    def names(value):
        return isinstance(value, list) and all(isinstance(v, str) for v in value)

    problem = None
    if not isinstance(spec.get("confidence"), str):
        problem = "no confidence column name"
    elif not names(spec.get("features", [])):
        problem = "'features' that is not a list of column names"
    elif not names(spec.get("text_columns", [])):
        problem = "'text_columns' that is not a list of column names"
    elif not names(spec.get("group_columns", [])):
        problem = "'group_columns' that is not a list of column names"
    elif not isinstance(spec.get("confidence_format", "number"), str):
        problem = "a confidence format that is not a name"
    if problem is not None:
        raise UsageError(
            f"model file {path} has a damaged header ({problem}); refit it with "
            "'betacal fit'"
        )


def _is_calibrator(est):
    """A calibrator of this package (the classes 'betacal fit' writes), or
    an AbstentionGate around one (``fit --max-error``)."""
    from .. import PlattScaler  # noqa: F401 -- the public classes, loaded
    from .._base import calibrator_input
    from ._gate import is_gate

    if is_gate(est):
        est = getattr(est, "calibrator_", None)
    return calibrator_input(est) in ("confidence", "group") and type(
        est
    ).__module__.startswith("sklearn_betacal.")


def _reading_and_calibrator(model, spec, path):
    """The calibrator of a model file, after checking its shape.

    ``apply`` accepts exactly what ``fit`` writes: a calibrator of this
    package (``--confidence-format number``), or ``Pipeline([("read",
    ConfidenceReader), ("calibrate", calibrator)])`` for ``--percent`` /
    ``--verbalized``, whose reader reads the header's column and format from
    the columns ``fit`` gave it. Anything else (a reversed or nested
    Pipeline, a reader of other columns: a nested reader read percentages
    twice) is an altered file. apply reads the confidences with the reader's
    format and gives the read rows to the calibrator, so that unreadable
    rows stay empty instead of failing the chunk.
    """
    from sklearn.pipeline import Pipeline

    from .._elicitation import ConfidenceReader

    fmt = spec.get("confidence_format", "number")
    altered = (
        f"model file {path} does not hold what 'betacal fit' writes for "
        f"--confidence-format {fmt} (%s): the file was altered; refit it with "
        "'betacal fit'"
    )
    if fmt == "number":
        if not _is_calibrator(model):
            raise UsageError(
                altered
                % f"a calibrator with predict_proba, not a {type(model).__name__}"
            )
        return model
    steps = getattr(model, "steps", None) if type(model) is Pipeline else None
    if (
        not isinstance(steps, list)
        or len(steps) != 2
        or not all(isinstance(s, tuple) and len(s) == 2 for s in steps)
        or [name for name, _ in steps] != ["read", "calibrate"]
        or type(steps[0][1]) is not ConfidenceReader
        or not _is_calibrator(steps[1][1])
    ):
        raise UsageError(altered % "Pipeline([read, calibrate])")
    reader = steps[0][1]
    columns = [spec.get("confidence"), *spec.get("features", [])]
    names = getattr(reader, "feature_names_in_", None)
    if (
        reader.confidence_format != fmt
        or reader.confidence_column != spec.get("confidence")
        or names is None
        or list(names) != columns
    ):
        raise UsageError(
            f"model file {path}: its stored reading of the confidences does not "
            f"match its header ({fmt!r} of column {spec.get('confidence')!r}); "
            "the file was altered: refit it with 'betacal fit'"
        )
    # the reader's options (--scale, --table, --qualitative of fit)
    spec["reading"] = reader._options()
    return steps[-1][1]


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
                    # closed now, while its file is open: left to the garbage
                    # collector it printed a traceback ("Exception ignored")
                    with contextlib.suppress(Exception):
                        state.pop("writer").close()
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
    src = _readable(args.input)
    out = Path(args.output)
    for other, what in ((model, "model file"),):
        if out.exists() and other.exists() and os.path.samefile(out, other):
            raise UsageError(f"OUT {out} is the {what}; refusing to overwrite it")
    out = check_output(out, src, args.force, name="OUT")
    try:
        kind = file_kind(out)
    except TableReadError as exc:
        raise UsageError(str(exc)) from None
    if not 1 <= args.chunk_size <= MAX_CHUNK_ROWS:
        # beyond a C long, Parquet's batch reader failed with an OverflowError
        raise UsageError(
            f"--chunk-size must lie in [1, {MAX_CHUNK_ROWS}], got {args.chunk_size}"
        )
    return model, src, out, kind


def _load_checked_model(path, args):
    est, spec = _load_model(path)
    if args.cells and not hasattr(est, "apply"):
        raise UsageError(
            f"--cells: the {spec.get('method')} model has no cells (it uses the "
            "confidence only); drop --cells"
        )
    return est, spec


def _check_new_columns(args, present):
    """The new column (and ``cell``) must not be a column of the input, nor
    each other (``--cells --column cell`` wrote the cells over the
    calibrated confidences)."""
    if args.cells and args.column == "cell":
        raise UsageError(
            "--column cell is the name of --cells' column; name the calibrated "
            "one otherwise (e.g. --column calibrated_confidence)"
        )
    clash = [c for c in (args.column, "cell" if args.cells else None) if c in present]
    if clash:
        raise UsageError(
            f"the input already has a column {clash[0]!r}; name the new one with "
            "--column NAME"
            if clash[0] == args.column
            else "the input already has a column 'cell'; rename it or drop --cells"
        )


class _Scale:
    """What the input's confidences show about their scale, over all chunks.

    ``see`` takes one chunk's column and its confidences in [0, 1];
    ``merge`` adds another's (dask partitions); ``check`` refuses, at the end,
    an input that the model would read on the wrong scale.
    """

    def __init__(self, fmt):
        self.fmt = fmt
        self.n = 0  # confidences seen
        self.top = -np.inf  # the largest, in [0, 1]
        self.numbers_only = True  # every chunk's column read as numbers

    def see(self, column, h):
        seen = h[~np.isnan(h)]
        if seen.size:
            self.n += seen.size
            self.top = max(self.top, float(seen.max()))
        if column.notna().any():
            self.numbers_only &= plain_numbers_only(column)
        return self

    def merge(self, other):
        self.n += other.n
        self.top = max(self.top, other.top)
        self.numbers_only &= other.numbers_only
        return self

    def check(self, source, column):
        if self.fmt == "percent" and self.n and self.top <= 0.01:
            raise UsageError(
                f"the model reads {FORMAT_FLAGS['percent']}, but no confidence in "
                f"column {column!r} of {source} is above 1 (max "
                f"{self.top * 100:.6g}): they look like fractions; multiply them "
                "by 100, or refit without --percent"
            )
        if self.fmt == "verbalized" and self.n and self.numbers_only:
            raise UsageError(
                f"the model reads {FORMAT_FLAGS['verbalized']}, but column "
                f"{column!r} of {source} holds plain numbers only; refit without "
                "--verbalized (with --percent for 0-100)"
            )


def _per_group(values, failed):
    """``(groups, rows lost, rows)`` of one chunk."""
    groups, inverse = np.unique(values, return_inverse=True)
    n_lost = np.bincount(inverse, weights=failed, minlength=len(groups))
    n = np.bincount(inverse, minlength=len(groups))
    return groups.tolist(), n_lost.astype(int).tolist(), n.tolist()


def _calibrator(est, spec, args, where, unread, lost):
    """``calibrate(frame, first_row) -> (frame + new columns, n_unparsed, scale)``.

    ``where(first_row, n_rows)`` names the rows in an error message; ``scale``
    is the chunk's :class:`_Scale`; ``unread`` (a dict) counts the texts
    left unread by reason (:func:`~._fit.add_unread`), ``lost`` the rows
    they cost each group of the model's group columns.
    """
    conf = spec["confidence"]
    columns = [conf, *spec.get("features", [])]
    fmt = spec.get("confidence_format", "number")
    lock = threading.Lock()

    def calibrate(frame, first_row):
        chunk_unread = {}
        try:
            h, _ = confidence_values(
                frame[conf],
                fmt,
                column=conf,
                check_scale=False,
                command="apply",
                options=spec.get("reading"),
                unread=chunk_unread,
            )
        except UsageError as exc:
            raise UsageError(f"{where(first_row, len(frame))}: {exc}") from None
        failed = np.isnan(h)
        if fmt == "verbalized":
            failed &= ~empty_responses(frame[conf])
        with lock:  # the chunks of a Parquet set run in threads
            for reason, (count, examples) in chunk_unread.items():
                entry = unread.setdefault(reason, [0, []])
                entry[0] += count
                entry[1] = list(dict.fromkeys(entry[1] + examples))[:3]
            # rows lost per group of the model's group columns (every chunk
            # counts its rows, so that "lost all" is true of the whole input)
            for name in spec.get("group_columns", []):
                if name in frame.columns:
                    table = lost.setdefault(name, {})
                    values = frame[name].astype(str).to_numpy()
                    for g, n_lost, n in zip(*_per_group(values, failed), strict=True):
                        entry = table.setdefault(g, [0, 0])
                        entry[0] += n_lost
                        entry[1] += n
        scale = _Scale(fmt).see(frame[conf], h)
        ok = ~np.isnan(h)
        p = np.full(h.shape[0], np.nan)
        cells = np.full(h.shape[0], -1, dtype=np.int64)
        X = None
        if ok.any():
            X = frame.loc[ok, columns].reset_index(drop=True)
            X[conf] = h[ok]
            if len(columns) == 1:
                X = X[[conf]]
            try:
                p[ok] = est.predict_proba(X)[:, 1]
                if args.cells:
                    cells[ok] = gate.inner(est).apply(X)
            except (ValueError, TypeError) as exc:
                raise UsageError(
                    f"{where(first_row, len(frame))}: {one_line(exc)}"
                ) from None
        frame = frame.copy()
        frame[args.column] = p
        if args.cells:
            import pandas as pd

            # a row that was not calibrated has no cell (empty, as its
            # calibrated value): -1 is the partition's own "outside every
            # cell", served by the root calibrator
            frame["cell"] = pd.arrays.IntegerArray(cells, ~ok)
        if gate.is_gate(est):  # the answer and why not, beside the confidence
            gate.check_new_gate_columns(frame, args.column)
            for name, values in gate.gate_columns(est, X, ok, len(frame)).items():
                frame[name] = values
        return frame, int(np.count_nonzero(~ok)), scale

    return calibrate


def _report(counts, out, start, column, unread, lost):
    seconds = time.perf_counter() - start
    note = ""
    if counts["unparsed"]:
        note = (
            f"; {counts['unparsed']} row(s) without a usable confidence have an "
            f"empty {column}"
        )
    print(
        f"betacal apply: {counts['rows']} rows written to {out} in "
        f"{seconds:.1f} s{note}",
        file=sys.stderr,
    )
    # the texts that could not be read, by reason: never silent
    lines = unread_lines(unread, total=counts["rows"], command="apply")
    for name, table in lost.items():
        lines += group_lines(table, name=name, command="apply")
    for line in lines:
        print(f"betacal: warning: {line}", file=sys.stderr)


def run_apply(args):
    start = time.perf_counter()
    files = _input_set(args.input)
    if files is not None:
        return _apply_set(args, files, start)
    model_path, src, out, out_kind = _check_paths(args)
    progress = Progress(args.progress)
    with progress.step(f"loading {model_path}"):
        est, spec = _load_checked_model(model_path, args)
    conf = spec["confidence"]
    columns = [conf, *spec.get("features", [])]
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
    _check_new_columns(args, first)
    write, close = _output_writer(out, out_kind)
    compress = (
        _WRITE_COMPRESSION.get(out.suffix.lower()) if out_kind != "parquet" else None
    )
    counts = {"rows": 0, "unparsed": 0}
    scale = _Scale(spec.get("confidence_format", "number"))
    unread, lost = {}, {}
    calibrate_rows = _calibrator(
        est,
        spec,
        args,
        lambda row, n: f"rows {row + 1}-{row + n} of {src}",
        unread,
        lost,
    )

    def calibrate(frame):
        frame, unparsed, seen = calibrate_rows(frame, counts["rows"])
        scale.merge(seen)
        counts["unparsed"] += unparsed
        counts["rows"] += len(frame)
        progress.update(f"applying: {counts['rows']} rows calibrated")
        return frame

    def produce(fh):
        stream = fh
        text = None
        with contextlib.ExitStack() as stack:
            if compress is not None:
                stream = stack.enter_context(compress(fh))
            if out_kind != "parquet":
                text = io.TextIOWrapper(stream, encoding="utf-8", newline="")
                stream = text
            empty = None
            try:
                for chunk in _chain(first, chunks):
                    result = calibrate(chunk)
                    empty = result.iloc[:0] if empty is None else empty
                    write(stream, result)
                # the whole input seen: refuse it before OUT appears
                scale.check(src, conf)
                close(stream, empty)
            except TableReadError as exc:
                raise UsageError(str(exc)) from None
            if text is not None:
                text.flush()
                text.detach()

    atomic_write(out, produce)
    if progress.enabled and progress.tty:
        progress.stream.write("\n")
    _report(counts, out, start, args.column, unread, lost)
    return EXIT_OK


# ------------------------------------------------- a set of Parquet files (dask)
_DASK_HINT = (
    "reading a set of Parquet files (IN is a pattern or a folder) needs the "
    "dask extra: pip install 'sklearn-betacal[dask]' (or apply the model to "
    "each file)"
)


def _input_set(text):
    """The files of IN when it is a glob pattern or a folder, else None."""
    path = Path(text)
    if path.is_dir():
        files = sorted(
            f
            for f in path.iterdir()
            if not f.is_dir() and f.suffix.lower() in _PARQUET_SUFFIXES
        )
        if not files:
            raise UsageError(f"input folder {path} holds no .parquet file")
        for f in files:
            _readable(f)
        return files
    if path.is_file() or not any(c in text for c in "*?["):  # glob's wildcards
        return None
    files = sorted(Path(f) for f in glob.glob(text))
    files = [f for f in files if not f.is_dir()]
    if not files:
        raise UsageError(f"input pattern {text!r} matches no file")
    for f in files:
        _readable(f)
        try:
            kind = file_kind(f)
        except TableReadError:
            kind = None
        if kind != "parquet" or f.suffix.lower() not in _PARQUET_SUFFIXES:
            raise UsageError(
                f"input pattern {text!r} matches {f}, which is not a Parquet file; "
                "a set of files must be Parquet (.parquet); apply the model to "
                "other files one by one"
            )
    return files


def _check_output_folder(args, files, model):
    """OUT is a folder that is created or (--force) replaced, never an input."""
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UsageError(
            f"OUT {out} is a file; with a set of input files OUT is a folder "
            "(it receives one Parquet file per partition)"
        )
    if not out.parent.is_dir():
        raise UsageError(f"OUT folder {out.parent} does not exist")
    target = out.resolve()
    for f in [*files, model]:
        if target == f.resolve() or target in f.resolve().parents:
            what = "model file" if f == model else "input file"
            raise UsageError(f"OUT {out} holds the {what} {f}; refusing to replace it")
    if out.exists() and any(out.iterdir()) and not args.force:
        raise UsageError(f"OUT {out} exists; pass --force to replace the folder")
    check_can_create_in(out.parent, "OUT")
    return out


def _apply_set(args, files, start):
    model = Path(args.model)
    out = _check_output_folder(args, files, model)
    try:
        import dask
        import dask.dataframe as dd
    except ImportError:
        raise UsageError(_DASK_HINT) from None
    from ._parallel import limit_threads

    est, spec = _load_checked_model(model, args)
    conf = spec["confidence"]
    columns = [conf, *spec.get("features", [])]
    try:
        frame = dd.read_parquet([str(f) for f in files])
        present = list(frame.columns)
    except (ValueError, TypeError, OSError, KeyError) as exc:  # pyarrow's too
        raise UsageError(
            f"could not read {args.input} as Parquet: {one_line(exc)}"
        ) from None
    missing = [c for c in columns if c not in present]
    if missing:
        raise UsageError(
            f"column {missing[0]!r} not found in {args.input}; its columns are "
            f"{', '.join(map(repr, present[:12]))}{' ...' if len(present) > 12 else ''}"
        )
    _check_new_columns(args, present)
    unread, lost = {}, {}
    calibrate = _calibrator(
        est, spec, args, lambda row, n: f"partition {row} of {args.input}", unread, lost
    )
    width = len(str(max(frame.npartitions - 1, 0)))

    parts = frame.to_delayed()
    failed = threading.Event()

    def write_part(i, folder):
        # errors are returned, not raised: dask.compute raises at the first
        # error while other threads are still writing into ``folder``, which
        # the failed block then could not remove; so every task ends first
        # (the rest skip their work once one has failed)
        if failed.is_set():
            return None
        try:
            part = parts[i].compute(scheduler="sync")
            result, unparsed, scale = calibrate(part, i)
            result.to_parquet(folder / f"part.{i:0{width}d}.parquet", index=False)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            failed.set()
            return exc
        return len(result), unparsed, scale

    with atomic_directory(out) as folder, limit_threads(1):
        tasks = [dask.delayed(write_part)(i, folder) for i in range(len(parts))]
        try:
            try:
                done = dask.compute(*tasks)
            except BaseException:  # Ctrl-C, SIGTERM: the other tasks stop
                failed.set()
                raise
            error = next((d for d in done if isinstance(d, BaseException)), None)
            if error is not None:
                raise error
            scale = _Scale(spec.get("confidence_format", "number"))
            for _, _, seen in done:
                scale.merge(seen)
            scale.check(args.input, conf)
        except KeyError as exc:  # pyarrow/pandas: a file without a column
            raise UsageError(
                f"applying to {args.input}: a file of the set lacks a column that "
                f"the first file has ({exc.args[0] if exc.args else exc}); give "
                "files with the same columns"
            ) from None
        except (ValueError, TypeError, OSError) as exc:
            # a corrupt file, types that differ between files, a full disk;
            # pyarrow's errors derive from these
            raise UsageError(f"applying to {args.input}: {one_line(exc)}") from None
    counts = {
        "rows": sum(n for n, _, _ in done),
        "unparsed": sum(u for _, u, _ in done),
    }
    _report(
        counts,
        f"{out}/ ({len(done)} Parquet files)",
        start,
        args.column,
        unread,
        lost,
    )
    return EXIT_OK


def _chain(first, rest):
    yield first
    yield from rest
