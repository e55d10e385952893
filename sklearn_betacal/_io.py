# SPDX-License-Identifier: MIT
"""Files in and out: table reading and the one atomic writer.

Everything the package writes to disk (CLI reports, the demo report and its
diagrams, the dataset cache) goes through :func:`atomic_write`: the new
content is complete in a temporary file of the target's folder before one
``os.replace`` swaps it in, and the temporary file is removed on any failure,
so a reader never sees a half-written file and nothing is left behind.
"""

import os
import tempfile
import zlib
from pathlib import Path

_PARQUET_SUFFIXES = {".parquet", ".pq"}
_CSV_SUFFIXES = {".csv", ".tsv", ".txt"}
_COMPRESSION_SUFFIXES = {".gz", ".bz2", ".xz", ".zip", ".zst"}


class TableReadError(ValueError):
    """A table file that cannot be read: the message names the fix."""


def _one_line(message):
    return " ".join(str(message).split())


def file_kind(path):
    """``"csv"``, ``"tsv"`` or ``"parquet"`` from the suffixes of ``path``."""
    path = Path(path)
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSION_SUFFIXES:
        suffixes = suffixes[:-1]
    last = suffixes[-1] if suffixes else ""
    if last in _PARQUET_SUFFIXES:
        return "parquet"
    if last in _CSV_SUFFIXES:
        return "tsv" if last == ".tsv" else "csv"
    raise TableReadError(
        f"cannot tell the format of {path}: use a .csv, .tsv (optionally "
        "compressed, e.g. .csv.gz) or .parquet file"
    )


def read_table(path, columns):
    """Read ``columns`` of a CSV/TSV (optionally compressed) or Parquet file.

    Raises :class:`TableReadError` with a one-line message for every failure:
    missing file, unknown format, missing column, missing pyarrow, corrupt or
    unparsable content.
    """
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise TableReadError(f"input file {path} does not exist")
    if path.is_dir():
        raise TableReadError(f"input {path} is a directory, not a file")
    kind = file_kind(path)
    try:
        if kind == "parquet":
            try:
                import pyarrow.parquet as pq
            except ImportError:
                raise TableReadError(
                    "reading Parquet needs pyarrow: pip install "
                    "sklearn-betacal[parquet] (or convert the file to CSV)"
                ) from None
            available = pq.read_schema(path).names
        else:
            sep = "\t" if kind == "tsv" else ","
            available = list(pd.read_csv(path, sep=sep, nrows=0).columns)
        missing = [c for c in columns if c not in available]
        if missing:
            shown = ", ".join(map(repr, available[:12]))
            more = " ..." if len(available) > 12 else ""
            raise TableReadError(
                f"column {missing[0]!r} not found in {path}; its columns are "
                f"{shown}{more}"
            )
        if kind == "parquet":
            return pd.read_parquet(path, columns=list(columns))
        return pd.read_csv(path, sep=sep, usecols=list(columns))
    except TableReadError:
        raise
    except (ValueError, OSError, EOFError, zlib.error) as exc:  # incl. ParserError
        raise TableReadError(
            f"could not read {path} as {kind}: {_one_line(exc)}"
        ) from None


def atomic_write(path, content):
    """Replace ``path`` by ``content`` in one step, leaving no temp file behind.

    Parameters
    ----------
    path : str or path-like
        Target file; its folder must exist.
    content : str, bytes or callable
        Text (written as UTF-8), bytes, or a function called with a binary
        file object that writes the content (e.g. ``fig.savefig(fh,
        format="png")``).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            if callable(content):
                content(fh)
            else:
                fh.write(
                    content.encode("utf-8") if isinstance(content, str) else content
                )
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
