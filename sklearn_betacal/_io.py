# SPDX-License-Identifier: MIT
"""Files in and out: table reading and the one atomic writer.

Tables (CSV/TSV, optionally compressed, or Parquet) are read by
:func:`read_table` (whole columns) or :func:`iter_table_chunks` (every
column, a bounded number of rows at a time, for files larger than memory);
both check the file, its format and the requested columns first, detect the
CSV separator (:func:`detect_sep`) unless told, and turn every failure into
a one-line :class:`TableReadError`.

Everything the package writes to disk (CLI reports, the demo report and its
diagrams, the dataset cache) goes through :func:`atomic_write`: the new
content is complete in a temporary file of the target's folder before one
``os.replace`` swaps it in, and the temporary file is removed on any failure,
so a reader never sees a half-written file and nothing is left behind. A
folder of files (``betacal apply`` on a set of Parquet files) is written the
same way by :func:`atomic_directory`, a report folder by
:func:`atomic_report_folder`.

File hygiene, in this one place for every subcommand: an input must be a
regular file (:func:`check_input_file`; a FIFO would block, a device never
end), a table may have at most :data:`MAX_COLUMNS` columns, a CSV header at
most :data:`MAX_HEADER_CHARS` characters and no duplicate column names. A new
file gets ``0o666 & ~umask`` (a folder ``0o777 & ~umask``), as ``open`` would
give it; a replaced file keeps its mode. Temporary files and folders are named
``.<target>.betacal-<pid>-<host>-<random>.tmp``: one left by a killed run
(SIGKILL, power loss) is removed by the next write to the same target once its
process is gone.
"""

import contextlib
import lzma
import os
import re
import socket
import stat
import tempfile
import warnings
import zipfile
import zlib
from pathlib import Path

_PARQUET_SUFFIXES = {".parquet", ".pq"}
_CSV_SUFFIXES = {".csv", ".tsv", ".txt"}
_COMPRESSION_SUFFIXES = {".gz", ".bz2", ".xz", ".zip", ".zst"}


class TableReadError(ValueError):
    """A table file that cannot be read: the message names the fix."""


#: Name of the sentinel column that catches rows with an extra field.
_EXTRA = "\x00betacal-extra-field"


#: the most columns a table may have (a wider one is refused before reading)
MAX_COLUMNS = 10_000
#: the longest CSV header read, in characters (the header is read first)
MAX_HEADER_CHARS = 1 << 20
#: the longest piece of user content (a column name, a value) quoted in a message
MAX_QUOTED = 200


def _one_line(message):
    return " ".join(str(message).split())


def shorten(text, limit=MAX_QUOTED):
    """``text`` cut to ``limit`` characters, with "…" when it was cut."""
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "…"


def quoted(value, limit=MAX_QUOTED):
    """``repr(value)`` for a message, cut to ``limit`` characters."""
    return shorten(repr(value), limit)


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(mode):
    """What a non-regular file is ("a FIFO (named pipe)", ...), else None."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_input_file(path, what="input file"):
    """Refuse anything but an existing regular file (links are followed).

    A FIFO blocks the reader until someone writes to it and a device such as
    ``/dev/zero`` never ends, so both are refused before they are opened.
    Raises :class:`TableReadError` (a ValueError) with a one-line message.
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise TableReadError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise TableReadError(
            f"cannot read {what} {path}: {exc.strerror or exc}"
        ) from None
    if stat.S_ISDIR(mode):
        raise TableReadError(f"{what} {path} is a directory, not a file")
    kind = _not_regular(mode)
    if kind is not None:
        raise TableReadError(
            f"{what} {path} is {kind}, not a regular file; save the data to a "
            "file first"
        )
    return path


def file_kind(path):
    """``"csv"``, ``"tsv"`` or ``"parquet"`` from the suffixes of ``path``."""
    path = Path(path)
    suffixes = [s.lower() for s in path.suffixes]
    compressed = bool(suffixes) and suffixes[-1] in _COMPRESSION_SUFFIXES
    if compressed:
        suffixes = suffixes[:-1]
    last = suffixes[-1] if suffixes else ""
    if last in _PARQUET_SUFFIXES:
        if compressed:
            # pandas neither reads nor writes a compressed Parquet file: it
            # would be written plain under a .gz name, or fail to read
            raise TableReadError(
                f"{path}: a Parquet file compresses its own columns and is not "
                f"compressed again ({path.suffixes[-1]}); use a plain .parquet "
                "name (decompress an input file first)"
            )
        return "parquet"
    if last in _CSV_SUFFIXES:
        return "tsv" if last == ".tsv" else "csv"
    raise TableReadError(
        f"cannot tell the format of {path}: use a .csv, .tsv (optionally "
        "compressed, e.g. .csv.gz) or .parquet file"
    )


#: separators that sniffing may pick, most likely first
_SEPARATORS = ",;\t|"
#: rows per chunk of :func:`iter_table_chunks` unless told otherwise
CHUNK_ROWS = 250_000
# what pandas/pyarrow raise on unreadable content: ParserError and
# UnicodeDecodeError are ValueErrors, a truncated .gz an EOFError, a corrupt
# one OSError/zlib.error, a bad Parquet file ArrowInvalid (a ValueError), a
# missing decompressor (zstandard for .zst) ImportError
_READ_ERRORS = (
    ValueError,
    OSError,
    EOFError,
    zlib.error,
    ImportError,
    lzma.LZMAError,
    zipfile.BadZipFile,
)


@contextlib.contextmanager
def _reading(path, kind):
    """Turn what a reader raises on bad content into one TableReadError."""
    try:
        yield
    except TableReadError:
        raise
    except UnicodeDecodeError as exc:
        raise TableReadError(
            f"could not read {path} as {kind}: it is not UTF-8 text (it holds "
            f"the byte {exc.object[exc.start : exc.start + 1]!r}); save it as "
            "UTF-8 (e.g. pandas to_csv(encoding='utf-8'))"
        ) from None
    except _READ_ERRORS as exc:
        if type(exc).__name__ == "EmptyDataError":  # pandas: no header line
            raise TableReadError(
                f"{path} is empty (no header line, no rows); give a {kind} file "
                "whose first line names its columns"
            ) from None
        raise TableReadError(
            f"could not read {path} as {kind}: {shorten(_one_line(exc), 500)}"
        ) from None


def _open_text(path):
    """``path`` opened as text, decompressed by its suffix (as pandas reads it)."""
    import bz2
    import gzip
    import io
    import lzma
    import zipfile

    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(
        Path(path).suffix.lower()
    )
    kwargs = {"encoding": "utf-8", "errors": "replace", "newline": ""}
    if opener is not None:
        return opener(path, "rt", **kwargs)
    if Path(path).suffix.lower() == ".zip":
        archive = zipfile.ZipFile(path)
        names = archive.namelist()
        if len(names) != 1:
            raise ValueError(
                f"a .zip input must hold exactly one file, not {len(names)}"
            )
        return io.TextIOWrapper(archive.open(names[0]), **kwargs)
    if Path(path).suffix.lower() == ".zst":
        try:
            import zstandard
        except ImportError:
            raise TableReadError(
                f"reading {path} needs the zstandard package: pip install "
                "zstandard (or decompress the file first)"
            ) from None
        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"))
        return io.TextIOWrapper(raw, **kwargs)
    return open(path, **kwargs)


def detect_sep(path, kind):
    """The separator of a CSV/TSV file, sniffed from its first 64 kB.

    A ``.tsv`` file is tab-separated. Otherwise the candidates are ``,``,
    ``;``, tab and ``|``; when sniffing cannot decide, ``,``.
    """
    import csv

    if kind == "tsv":
        return "\t"

    with _reading(path, kind), _open_text(path) as handle:
        sample = handle.read(65536)
    lines = sample.splitlines()
    if len(lines) > 1 and len(sample) == 65536:
        sample = "\n".join(lines[:-1])  # drop the cut-off last line
    try:
        return csv.Sniffer().sniff(sample, delimiters=_SEPARATORS).delimiter
    except csv.Error:
        return ","


def _csv_header(path, kind, sep):
    """The raw header fields of a CSV file, read on their own first.

    Reads at most :data:`MAX_HEADER_CHARS` characters, so neither a hostile
    header nor a million columns cost more than that before the refusal.
    """
    import csv
    import io

    with _reading(path, kind), _open_text(path) as handle:
        sample = handle.read(MAX_HEADER_CHARS + 1)
    buffer = io.StringIO(sample)
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, MAX_HEADER_CHARS + 1))
    try:
        fields = next(csv.reader(buffer, delimiter=sep), [])
    except csv.Error as exc:
        raise TableReadError(
            f"could not read the header of {path}: {shorten(exc)}"
        ) from None
    finally:
        csv.field_size_limit(limit)
    if len(sample) > MAX_HEADER_CHARS and buffer.tell() >= MAX_HEADER_CHARS:
        raise TableReadError(
            f"the header (first line) of {path} is longer than "
            f"{MAX_HEADER_CHARS} characters; betacal reads tables of at most "
            f"{MAX_COLUMNS} columns with short names: keep only the columns "
            "you need"
        )
    if fields:
        fields[0] = fields[0].removeprefix("\ufeff")  # pandas drops the BOM
    return fields


def _check_names(path, names):
    """Refuse too many columns and duplicate column names."""
    if len(names) > MAX_COLUMNS:
        raise TableReadError(
            f"{path} has {len(names)} columns, more than the {MAX_COLUMNS} "
            "betacal reads; keep only the columns you need (e.g. with "
            "pandas or cut) and retry"
        )
    seen = {}
    for i, name in enumerate(names):
        if name == "":  # pandas names each empty one "Unnamed: <i>"
            continue
        if name in seen:
            raise TableReadError(
                f"{path} has two columns named {quoted(name)} (columns "
                f"{seen[name] + 1} and {i + 1}); give every column its own name"
            )
        seen[name] = i


def _open_table(path, columns, sep):
    """Check ``path`` and ``columns``; return ``(kind, sep, all column names)``."""
    path = check_input_file(path)
    kind = file_kind(path)
    with _reading(path, kind):
        if kind == "parquet":
            try:
                import pyarrow.parquet as pq
            except ImportError:
                raise TableReadError(
                    "reading Parquet needs pyarrow: pip install "
                    "sklearn-betacal[parquet] (or convert the file to CSV)"
                ) from None
            available = pq.read_schema(path).names
            _check_names(path, available)
        else:
            import pandas as pd

            if sep is None:
                sep = detect_sep(path, kind)
            _check_names(path, _csv_header(path, kind, sep))
            available = list(pd.read_csv(path, sep=sep, nrows=0).columns)
    missing = [c for c in columns if c not in available]
    if missing:
        shown = ", ".join(quoted(c, 60) for c in available[:12])
        more = " ..." if len(available) > 12 else ""
        hint = "" if kind == "parquet" or len(available) > 1 else "; pass --sep"
        raise TableReadError(
            f"column {quoted(missing[0])} not found in {path}; its columns are "
            f"{shown}{more}{hint}"
        )
    return kind, sep, available


def read_table(path, columns, *, sep=None):
    """Read ``columns`` of a CSV/TSV (optionally compressed) or Parquet file.

    ``sep`` is the CSV separator; ``None`` detects it (:func:`detect_sep`).
    Raises :class:`TableReadError` with a one-line message for every failure:
    missing file, unknown format, missing column, missing pyarrow, corrupt or
    unparsable content.
    """
    import pandas as pd

    path = Path(path)
    kind, sep, available = _open_table(path, columns, sep)
    with _reading(path, kind):
        if kind == "parquet":
            return pd.read_parquet(path, columns=list(columns))
        # One pass. pandas drops the extra fields of a row silently when
        # usecols is given, so every column is read; with index_col=False a
        # later row with an extra field is a ParserError ("Expected 3 fields
        # in line 31, saw 4") and a first data row with one is a
        # ParserWarning (pandas would drop the field), raised here as an
        # error. Only a file that has such rows is read a second time, to
        # count them for the message.
        with _extra_fields_refused(path, sep, available, columns):
            frame = pd.read_csv(path, sep=sep, index_col=False)
        return frame[list(columns)]


@contextlib.contextmanager
def _extra_fields_refused(path, sep, available, columns):
    """Rows with more fields than the header, read with ``index_col=False``,
    raised as :func:`_raise_extra_fields`'s error (pandas would otherwise drop
    the fields, or -- without ``index_col=False`` -- take the first column
    as the index and shift every column left)."""
    import pandas as pd

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            yield
    except pd.errors.ParserWarning:
        _raise_extra_fields(path, sep, available, columns, 2)
    except pd.errors.ParserError as exc:
        found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if found is None or int(found[3]) <= int(found[1]):
            raise
        _raise_extra_fields(path, sep, available, columns, int(found[2]))


def _raise_extra_fields(path, sep, available, columns, line):
    """The :class:`TableReadError` for rows with more fields than the header.

    Reads the file again with one sentinel column past the header to count
    the rows with one extra field; ``line`` (the first offending line that
    pandas reported) is used when a row has several.
    """
    import pandas as pd

    message = (
        "have more fields than the header ({}); fix the separator or the quoting "
        "of those rows"
    )
    try:
        frame = pd.read_csv(
            path,
            sep=sep,
            header=0,
            names=[*available, _EXTRA],
            usecols=[*columns, _EXTRA],
            low_memory=False,
        )
    except pd.errors.ParserError:  # a row with two or more extra fields
        raise TableReadError(
            f"{path} line {line}: row(s) " + message.format(len(available))
        ) from None
    extra = frame[_EXTRA].notna().to_numpy()
    first = int(extra.argmax()) + 2 if extra.any() else line  # 1-based, after header
    raise TableReadError(
        f"{path} line {first}: {int(extra.sum())} row(s) "
        + message.format(len(available))
    )


def iter_table_chunks(
    path, columns, chunk_rows=CHUNK_ROWS, *, sep=None, text_columns=()
):
    """Read every column of a table file in chunks of ``chunk_rows`` rows.

    The file is checked first (it exists, has a known format and holds
    ``columns``), then read lazily: Parquet as pyarrow record batches, CSV as
    pandas chunks, so memory grows with ``chunk_rows``, not with the file.
    Yields pandas DataFrames with all the file's columns; at least one (empty
    for an empty file). CSV columns named in ``text_columns`` are read as
    strings in every chunk (pandas infers each chunk's types on its own).
    Read errors, also in a late chunk, are :class:`TableReadError`.
    """
    import pandas as pd

    path = Path(path)
    kind, sep, available = _open_table(path, columns, sep)

    def chunks():
        if kind == "parquet":
            import pyarrow.parquet as pq

            with pq.ParquetFile(path) as pf:
                schema = pf.schema_arrow
                yielded = False
                for batch in pf.iter_batches(batch_size=chunk_rows):
                    yielded = True
                    yield batch.to_pandas()
                if not yielded:
                    yield schema.empty_table().to_pandas()
            return
        dtype = dict.fromkeys(text_columns, str) or None
        # index_col=False as read_table's: a row with a trailing delimiter
        # made pandas take the first column as the index and shift the others
        # left (the labels were calibrated as confidences, silently)
        with pd.read_csv(
            path, sep=sep, chunksize=chunk_rows, dtype=dtype, index_col=False
        ) as reader:
            yielded = False
            while True:
                with _extra_fields_refused(path, sep, available, columns):
                    chunk = next(reader, None)
                if chunk is None:
                    break
                yielded = True
                yield chunk
            if not yielded:
                yield pd.DataFrame(columns=available)

    def guarded():
        with _reading(path, kind):
            yield from chunks()

    return guarded()


def _umask():
    """The process's umask, read without changing it where Linux tells it."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(path, is_dir):
    """The mode a new ``path`` gets: an existing one's, else ``open``'s."""
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is not None and (stat.S_ISDIR(st.st_mode) if is_dir else True):
        return stat.S_IMODE(st.st_mode)
    return (0o777 if is_dir else 0o666) & ~_umask()


def _host_tag():
    import hashlib

    return hashlib.sha1(socket.gethostname().encode()).hexdigest()[:8]


#: Longest target name kept whole in a temporary name: the prefix and
#: suffix add ~45 characters, and a name may have 255 (NAME_MAX). A valid
#: name of 230 characters failed with "File name too long", naming the
#: temporary file, after all the work.
_TEMP_NAME_MAX = 160


def _temp_stem(path):
    """The target's name as temporary names carry it: whole, or (when long)
    its first 100 characters and a digest of the rest, so that the
    temporary name stays within NAME_MAX and still belongs to ``path``."""
    import hashlib

    name = path.name
    if len(name) <= _TEMP_NAME_MAX:
        return name
    return name[:100] + "~" + hashlib.sha1(name.encode()).hexdigest()[:16]


def _temp_prefix(path):
    """``.<name>.betacal-<pid>-<host>-``: whose temporary file it is."""
    return f".{_temp_stem(path)}.betacal-{os.getpid()}-{_host_tag()}-"


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process: it exists
        return True
    return True


def remove_stale_temporaries(path):
    """Remove what a killed write to ``path`` left in its folder.

    Only this package's temporary files and folders for ``path`` (see
    :func:`_temp_prefix`) whose process no longer runs on this host are
    removed; an aside copy of a folder (``.old``) is put back when ``path``
    itself is missing (the run died between the two renames).
    """
    import shutil

    path = Path(path)
    pattern = re.compile(
        re.escape(f".{_temp_stem(path)}.betacal-")
        + r"(\d+)-([0-9a-f]{8})-.*\.(tmp|old)\Z"
    )
    host = _host_tag()
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return
    for entry in entries:
        found = pattern.match(entry.name)
        if found is None or found[2] != host:
            continue
        pid = int(found[1])
        if pid == os.getpid() or _alive(pid):
            continue
        stale = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            kept = stale / path.name
            if found[3] == "old" and kept.exists() and not os.path.lexists(path):
                os.replace(kept, path)
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)


def _same_file(a, b):
    """Whether paths ``a`` and ``b`` are one file (links resolved); False
    where either does not exist."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _refuse_non_regular(path):
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    kind = _not_regular(mode)
    if kind is not None:
        raise FileExistsError(
            f"{path} exists and is {kind}; only a regular file is replaced"
        )


def atomic_write(path, content):
    """Replace ``path`` by ``content`` in one step, leaving no temp file behind.

    The file gets the mode of the file it replaces, else ``0o666 & ~umask``
    (as ``open`` gives). Only a regular file is replaced (a FIFO or device at
    ``path`` is refused with :class:`FileExistsError`). Temporary files that
    a killed earlier write to ``path`` left are removed first.

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
    _refuse_non_regular(path)
    remove_stale_temporaries(path)
    mode = _mode_for(path, is_dir=False)
    fd, tmp = tempfile.mkstemp(
        dir=path.parent, prefix=_temp_prefix(path), suffix=".tmp"
    )
    try:
        os.fchmod(fd, mode)
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


def _temp_folder(path):
    remove_stale_temporaries(path)
    mode = _mode_for(path, is_dir=True)
    tmp = Path(
        tempfile.mkdtemp(dir=path.parent, prefix=_temp_prefix(path), suffix=".tmp")
    )
    os.chmod(tmp, mode)
    return tmp


@contextlib.contextmanager
def atomic_directory(path):
    """Write a folder in one step: yields a temporary folder to fill.

    The temporary folder sits beside ``path`` (same file system). When the
    block ends without error it is renamed to ``path``; an existing ``path``
    is moved aside first and removed only after the new folder is in place
    (put back if that rename fails). On any failure the temporary folder is
    removed and ``path`` is left as it was: a reader sees the old folder or
    the complete new one, never a partial one, and nothing is left behind.
    The folder gets the mode of the folder it replaces, else
    ``0o777 & ~umask``.
    """
    import shutil

    path = Path(path)
    tmp = _temp_folder(path)
    try:
        yield tmp
        old = None
        if path.exists():
            old = Path(
                tempfile.mkdtemp(
                    dir=path.parent, prefix=_temp_prefix(path), suffix=".old"
                )
            )
            os.replace(path, old / path.name)
        try:
            os.replace(tmp, path)
        except BaseException:
            if old is not None:
                os.replace(old / path.name, path)
                shutil.rmtree(old, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def atomic_report_folder(path, protect=None):
    """Write the files of a report folder in one step: yields a temporary folder.

    Everything is written into a temporary folder beside ``path``; a failure
    removes it and leaves ``path`` as it was. On success a new ``path`` is
    the temporary folder renamed; into an existing ``path`` each new file is
    renamed over its namesake (other files in ``path``, such as the input
    table, are kept), so no half-written file ever appears in it. A namesake
    that is the file ``protect`` (the input, also through a link) is never
    replaced: the report is refused and ``path`` left as it was.
    """
    import shutil

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_folder(path)
    try:
        yield tmp
        if path.is_dir():
            for entry in sorted(tmp.iterdir()):
                target = path / entry.name
                _refuse_non_regular(target)
                if protect is not None and _same_file(target, protect):
                    raise FileExistsError(
                        f"{target} is the input file; it is never overwritten: "
                        "choose another folder"
                    )
            for entry in sorted(tmp.iterdir()):
                target = path / entry.name
                if target.is_file():  # a replaced file keeps its mode
                    os.chmod(entry, stat.S_IMODE(target.stat().st_mode))
                os.replace(entry, target)
            tmp.rmdir()
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
