"""The benchmark harness shared by every script in ``benchmarks/`` (not part of the package).

- timing: :func:`median_times` runs the contenders interleaved round-robin and
  returns medians, so a change of the machine's load is spread over all of
  them and their ratios stay meaningful on a shared machine;
  :func:`median_time` is the one-contender case;
- memory: :func:`peak_bytes` (tracemalloc, NumPy's allocations included) and
  :func:`peak_rss_mb` (the process's high-water mark);
- the run header: :func:`header` (date, machine, load, versions, commit) and
  :func:`load_average`;
- the result tables: :func:`markdown_table` (a Markdown table's lines),
  :func:`markdown_row` (one row, for rows printed as they are measured) and
  :func:`markdown_frame` (a pandas frame's table);
- the data: :func:`data_dir` (``--data`` or ``$BETACAL_SHARED_DATA``),
  :func:`load_influences` through the package's public
  :func:`sklearn_betacal.datasets.fetch_influences`, :func:`cifar_records`.

Scripts import it as ``from _measure import ...``: Python puts a script's own
folder first on ``sys.path``, and the studies in ``benchmarks/studies/`` add
the parent folder (:data:`HERE`) themselves.
"""

import datetime
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from importlib import metadata
from pathlib import Path

#: the ``benchmarks/`` folder
HERE = Path(__file__).resolve().parent
#: where results are written
RESULTS = HERE / "results"
#: the assembled Parquet of the Influences study, inside :func:`data_dir`
INFLUENCES_PARQUET = Path("influences") / "influences_llm_calibration_all.parquet"
#: the Influences rows with a verbalized confidence
VERBAL = "verbal_confidence"


def median_times(fns, repeats, *, cpu=False, warmup=0):
    """Median seconds of every callable in ``fns``, the calls interleaved.

    Parameters
    ----------
    fns : dict of str to callable
        The contenders, called without arguments.
    repeats : int
        Rounds; every round calls each contender once, in order.
    cpu : bool, default=False
        Also return the median CPU seconds of this process.
    warmup : int, default=0
        Untimed rounds first (imports, caches, first-touch allocations).

    Returns
    -------
    dict
        ``name -> median wall seconds``, or ``name -> (wall, cpu)`` with ``cpu``.
    """
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    wall = {name: [] for name in fns}
    used = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            c0, w0 = time.process_time(), time.perf_counter()
            fn()
            wall[name].append(time.perf_counter() - w0)
            used[name].append(time.process_time() - c0)
    med = statistics.median
    if cpu:
        return {name: (med(wall[name]), med(used[name])) for name in fns}
    return {name: med(wall[name]) for name in fns}


def median_time(fn, repeats, *, cpu=False, warmup=0):
    """:func:`median_times` of one callable: its median seconds (``(wall, cpu)``)."""
    return median_times({"fn": fn}, repeats, cpu=cpu, warmup=warmup)["fn"]


def timed(fn):
    """``(fn(), wall seconds)`` of one call."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def peak_bytes(fn):
    """``(fn(), peak bytes allocated during the call)`` as traced by tracemalloc.

    Counts NumPy's allocations (they go through the traced allocator), so the
    peak is the call's extra memory, including what it returns.
    """
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    out = fn()
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    return out, peak


def peak_rss_mb():
    """The process's peak resident memory so far, in MiB (Linux: ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_average():
    """The 1, 5 and 15 minute load averages, as ``"1.52 1.73 1.80"``."""
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def cpu_model():
    """The CPU's model name (``lscpu``), or what :mod:`platform` knows."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        out = ""
    for line in out.splitlines():
        if line.startswith("Model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def _version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _commit():
    try:
        out = subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def header(*packages, prefix="# "):
    """The lines every result starts with: date, machine, load, versions, commit.

    ``packages`` are distribution names to report beside python, numpy,
    scipy, scikit-learn and sklearn-betacal (peers, e.g. ``"netcal"``).
    Each line starts with ``prefix`` (``""`` for a Markdown paragraph).
    """
    names = ("numpy", "scipy", "scikit-learn", "sklearn-betacal", *packages)
    versions = ", ".join(f"{n} {_version(n)}" for n in names)
    lines = [
        f"date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
        f"commit {_commit()}",
        f"machine: {platform.machine()}, nproc {os.cpu_count()}, {cpu_model()}; "
        f"load average {load_average()}",
        f"versions: python {platform.python_version()}, {versions}",
    ]
    return "\n".join(prefix + line for line in lines)


def add_data_argument(parser):
    """Add ``--data`` (the real-data folder) to an argparse parser."""
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="folder holding influences/ and cifar/ (default: $BETACAL_SHARED_DATA)",
    )


def data_dir(path=None, *, required=True):
    """The real-data folder: ``path`` (``--data``), else ``$BETACAL_SHARED_DATA``.

    Neither given: exit with a hint, or return None if not ``required``.
    """
    if path is None:
        path = os.environ.get("BETACAL_SHARED_DATA")
    if path is None:
        if not required:
            return None
        sys.exit(
            "the real data is not found: pass --data FOLDER or set "
            "BETACAL_SHARED_DATA to the folder holding influences/ and cifar/"
        )
    return Path(path)


def load_influences(data=None, *, prompt_style="verb", judged=True):
    """The Influences study rows, through :func:`~sklearn_betacal.datasets.fetch_influences`.

    Reads the checked local Parquet copy in :func:`data_dir` (no network).
    ``judged`` keeps rows whose ``correct_judge`` is 0 or 1. ``answer`` and
    ``question`` are added as strings (missing text as ``""``), the form the
    text embedders take.
    """
    from sklearn_betacal.datasets import fetch_influences

    frame = fetch_influences(
        prompt_style=prompt_style, local_path=data_dir(data) / INFLUENCES_PARQUET
    ).frame
    if judged:
        frame = frame[frame.correct_judge.isin([0, 1])]
    frame = frame.reset_index(drop=True)
    frame["answer"] = frame["extracted_answer"].fillna("").astype(str)
    frame["question"] = frame["question"].fillna("").astype(str)
    return frame


def memo_minilm(cache=None):
    """Memoize ``TextEmbedder``'s MiniLM encoder by text (``_text._minilm_encode``).

    The encoder is frozen (only the PCA after it is fitted), so a text's
    encoding is the same whichever set asks for it; without the memo every
    (model, kind, seed) re-encodes the same texts (minutes each on 2 shared
    cores). Batches are encoded as the texts not seen before. ``cache``: an
    ``.npz`` file read first and rewritten after every batch that encoded
    new texts, so that later runs encode nothing (vectors kept as float32,
    the model's own precision, which the encoder casts up exactly). Calling
    it again adds nothing (the first memo stays).
    """
    import numpy as np

    from sklearn_betacal import _text

    if getattr(_text._minilm_encode, "memo", None) is not None:
        return
    raw, memo = _text._minilm_encode, {}
    cache = None if cache is None else Path(cache)
    if cache is not None and cache.exists():
        with np.load(cache, allow_pickle=False) as f:
            memo.update(zip(f["texts"].tolist(), f["vectors"], strict=True))

    def encode(texts, batch_size):
        texts = [str(t) for t in texts]
        new = list(dict.fromkeys(t for t in texts if t not in memo))
        if new:
            memo.update(zip(new, raw(new, batch_size), strict=True))
            if cache is not None:
                keys = list(memo)
                vectors = np.array([memo[k] for k in keys], dtype=np.float32)
                np.savez(cache, texts=np.array(keys), vectors=vectors)
        return np.array([memo[t] for t in texts], dtype=np.float64)

    encode.memo = memo
    _text._minilm_encode = encode


def verbal_sets(data=None, columns=(VERBAL, "question", "correct_judge")):
    """``{name: frame}``: the bundled TriviaQA and, given ``data``, each Influences set.

    The Influences rows are the ``verb`` prompt's with a verbalized confidence
    in [0, 1], one frame per QA dataset; ``data=None`` gives the bundled set
    alone (no download, no data folder needed).
    """
    from sklearn_betacal.datasets import load_triviaqa_confidence

    out = {"bundled triviaqa": load_triviaqa_confidence().frame[list(columns)]}
    if data is not None:
        frame = load_influences(data, judged=False)
        frame = frame[frame[VERBAL].between(0, 1)]
        for name, part in frame.groupby("dataset"):
            out[f"influences {name} verb"] = part[list(columns)]
    return out


def cifar_records(data=None):
    """The CIFAR record files (``cifar/*.npz`` in :func:`data_dir`), sorted."""
    return sorted((data_dir(data) / "cifar").glob("*.npz"))


def markdown_table(head, rows=(), *, align=""):
    """The lines of a Markdown table: the header, its rule, one line a row.

    Parameters
    ----------
    head : sequence of str
        The column titles.
    rows : iterable of sequence, default=()
        The cells of each row, already formatted (``str`` is applied to
        each). Empty for a table whose rows a long run prints one by one as
        they are measured (:func:`markdown_row`).
    align : str, default=""
        One letter a column: ``"r"`` right-aligned (numbers, ``---:``) or
        ``"l"`` left (``---``); the columns past its end are left-aligned.

    Returns
    -------
    list of str
    """
    rule = "".join("---:|" if a == "r" else "---|" for a in align.ljust(len(head)))
    return [markdown_row(head), "|" + rule, *(markdown_row(row) for row in rows)]


def markdown_row(cells):
    """One line of a Markdown table, ``| a | b |``."""
    return "| " + " | ".join(map(str, cells)) + " |"


def markdown_frame(frame, *, floatfmt=".4f"):
    """:func:`markdown_table` of a pandas frame: its index (named by
    ``frame.index.name``) then its columns, floats written with ``floatfmt``,
    numeric columns right-aligned."""
    cols = list(frame.columns)
    head = [str(frame.index.name or ""), *map(str, cols)]
    align = "l" + "".join("r" if frame[c].dtype.kind in "iuf" else "l" for c in cols)

    def cell(v):
        return format(v, floatfmt) if isinstance(v, float) else str(v)

    rows = (
        [key, *map(cell, row)]
        for key, row in zip(frame.index, frame.itertuples(index=False), strict=True)
    )
    return markdown_table(head, rows, align=align)


def write_result(path, lines, *, echo=True):
    """Write the result ``lines`` to ``path`` (folders made), print them too."""
    text = "\n".join(lines) + "\n"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if echo:
        print(text, end="")
    print(f"wrote {path}", file=sys.stderr)
