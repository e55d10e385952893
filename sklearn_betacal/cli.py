# SPDX-License-Identifier: MIT
"""The ``betacal`` command line.

``betacal report`` audits the calibration of a confidence column: reliability
table, ECE, MCE, Brier score with its calibration/refinement split, NLL, AUC,
AUAC and, given a group column, the beta-calibration error CE(h; beta). With
no file it reports on the bundled TriviaQA data
(:func:`sklearn_betacal.datasets.load_triviaqa_confidence`).

Exit status: 0 on success, 2 on bad input (missing file or column,
non-binary labels, confidences outside [0, 1], NaN, refused output path),
always with a one-line message on stderr and never a traceback.

Subcommands register themselves in :data:`COMMANDS`: a function that adds its
sub-parser and sets ``func`` (called with the parsed arguments, returns the
exit status). A new subcommand is one more function in that list.
"""

import argparse
import json
import math
import os
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np

from . import __version__

EXIT_OK = 0
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """``ArgumentParser`` whose errors are one line and never exit directly."""

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _one_line(message):
    return " ".join(str(message).split())


# --------------------------------------------------------------------------
# reading and checking the input
# --------------------------------------------------------------------------

_PARQUET_SUFFIXES = {".parquet", ".pq"}
_CSV_SUFFIXES = {".csv", ".tsv", ".txt"}
_COMPRESSION_SUFFIXES = {".gz", ".bz2", ".xz", ".zip", ".zst"}


def _file_kind(path):
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSION_SUFFIXES:
        suffixes = suffixes[:-1]
    last = suffixes[-1] if suffixes else ""
    if last in _PARQUET_SUFFIXES:
        return "parquet"
    if last in _CSV_SUFFIXES:
        return "tsv" if last == ".tsv" else "csv"
    raise UsageError(
        f"cannot tell the format of {path}: use a .csv, .tsv (optionally "
        "compressed, e.g. .csv.gz) or .parquet file"
    )


def _read_table(path, columns):
    """Read ``columns`` of a CSV/Parquet file; clear errors for every failure."""
    import pandas as pd

    if not path.exists():
        raise UsageError(f"input file {path} does not exist")
    if path.is_dir():
        raise UsageError(f"input {path} is a directory, not a file")
    kind = _file_kind(path)
    try:
        if kind == "parquet":
            try:
                import pyarrow.parquet as pq
            except ImportError:
                raise UsageError(
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
            raise UsageError(
                f"column {missing[0]!r} not found in {path}; its columns are "
                f"{shown}{more}"
            )
        if kind == "parquet":
            return pd.read_parquet(path, columns=list(columns))
        return pd.read_csv(path, sep=sep, usecols=list(columns))
    except UsageError:
        raise
    except (ValueError, OSError, EOFError, zlib.error) as exc:  # incl. ParserError
        raise UsageError(f"could not read {path} as {kind}: {_one_line(exc)}") from None


def _bundled_frame():
    from .datasets import load_triviaqa_confidence

    return load_triviaqa_confidence().frame


def _check_columns(frame, confidence, label, group, dropna):
    """Return ``(p, y, groups, n_dropped)`` validated for the metrics."""
    from ._validation import check_binary_labels, check_confidence

    used = [c for c in (confidence, label, group) if c is not None]
    missing = [c for c in used if c not in frame.columns]
    if missing:
        raise UsageError(
            f"column {missing[0]!r} not found; available: "
            + ", ".join(map(repr, list(frame.columns)[:12]))
        )
    n_dropped = 0
    if dropna:
        keep = frame[used].notna().all(axis=1)
        n_dropped = int((~keep).sum())
        frame = frame[keep]
    if len(frame) == 0:
        raise UsageError("no rows to report on (the input is empty)")
    if group is not None and frame[group].isna().any():
        raise UsageError(
            f"group column {group!r} has {int(frame[group].isna().sum())} missing "
            "value(s); every row needs a group (or pass --dropna)"
        )
    try:
        y = check_binary_labels(frame[label].to_numpy(), name=f"label column {label!r}")
        # "logit" checks type and finiteness only; the [0, 1] check below has a
        # message fit for the command line (there is no input= option here)
        p = check_confidence(
            frame[confidence].to_numpy(),
            input="logit",
            name=f"confidence column {confidence!r}",
        )
    except ValueError as exc:
        hint = " (or pass --dropna)" if "NaN" in str(exc) else ""
        raise UsageError(_one_line(exc) + hint) from None
    n_out = int(np.count_nonzero((p < 0) | (p > 1)))
    if n_out:
        raise UsageError(
            f"confidence column {confidence!r} has {n_out} value(s) outside [0, 1] "
            f"(min {p.min():.6g}, max {p.max():.6g}); the report needs "
            "probabilities: map scores or logits to [0, 1] first (e.g. with a "
            "fitted calibrator)"
        )
    groups = None if group is None else frame[group].to_numpy()
    return p, y, groups, n_dropped


# --------------------------------------------------------------------------
# computing and formatting the report
# --------------------------------------------------------------------------


def _finite_or_none(value):
    value = float(value)
    return value if math.isfinite(value) else None


def compute_report(p, y, *, groups=None, n_bins=10, strategy="uniform"):
    """All report numbers as a JSON-ready dict (``None`` where undefined)."""
    from sklearn.metrics import log_loss, roc_auc_score

    from .metrics import (
        area_under_accuracy_confidence,
        beta_calibration_error,
        brier_decomposition,
        expected_calibration_error,
        maximum_calibration_error,
        reliability_table,
    )

    binning = {"n_bins": n_bins, "strategy": strategy}
    brier = brier_decomposition(y, p, **binning)
    both_classes = 0 < y.sum() < len(y)
    metrics = {
        "ece": expected_calibration_error(y, p, **binning),
        "mce": maximum_calibration_error(y, p, **binning),
        "brier": brier.brier,
        "brier_calibration": brier.calibration,
        "brier_refinement": brier.refinement,
        "nll": log_loss(y, p, labels=[0, 1]),
        # AUC needs both classes; undefined otherwise
        "auc": roc_auc_score(y, p) if both_classes else None,
        "auac": area_under_accuracy_confidence(y, p),
    }
    if groups is not None:
        metrics["beta_ce"] = beta_calibration_error(y, p, groups=groups, **binning)
        metrics["n_groups"] = int(len(np.unique(groups)))
    table = reliability_table(y, p, **binning)
    rows = []
    for b, row in table.iterrows():
        rows.append(
            {
                "bin": int(b),
                "bin_lower": float(row["bin_lower"]),
                "bin_upper": float(row["bin_upper"]),
                "count": int(row["count"]),
                "mean_confidence": _finite_or_none(row["mean_confidence"]),
                "accuracy": _finite_or_none(row["accuracy"]),
                "gap": _finite_or_none(row["gap"]),
                "std_error": _finite_or_none(row["std_error"]),
                "ci_lower": _finite_or_none(row["ci_lower"]),
                "ci_upper": _finite_or_none(row["ci_upper"]),
            }
        )
    return {
        "n_rows": int(len(y)),
        "accuracy": float(np.mean(y)),
        "mean_confidence": float(np.mean(p)),
        "n_bins": n_bins,
        "strategy": strategy,
        "metrics": {
            k: (v if v is None or isinstance(v, int) else float(v))
            for k, v in metrics.items()
        },
        "reliability_table": rows,
    }


_METRIC_LABELS = [
    ("ece", "ECE (expected calibration error)"),
    ("mce", "MCE (maximum calibration error)"),
    ("beta_ce", "beta-CE (CE(h; beta), per-group ECE averaged)"),
    ("brier", "Brier score"),
    ("brier_calibration", "  calibration term"),
    ("brier_refinement", "  refinement term"),
    ("nll", "NLL (log loss)"),
    ("auc", "AUC"),
    ("auac", "AUAC (area under accuracy-confidence curve)"),
]


def _fmt(value, digits=4):
    return "n/a" if value is None else f"{value:.{digits}f}"


def format_markdown(report):
    """The report as a Markdown document (also readable in a terminal)."""
    meta = report["input"]
    lines = [
        "# Calibration report",
        "",
        f"- source: {meta['source']}",
        f"- confidence column: `{meta['confidence']}`; label column: "
        f"`{meta['label']}`"
        + (f"; group column: `{meta['group']}`" if meta["group"] else ""),
        f"- rows: {report['n_rows']}"
        + (
            f" ({meta['n_dropped']} with missing values dropped)"
            if meta["n_dropped"]
            else ""
        ),
        f"- accuracy: {report['accuracy']:.4f}; mean confidence: "
        f"{report['mean_confidence']:.4f}",
        f"- binning: {report['n_bins']} {report['strategy']} bins",
        "",
        "## Metrics",
        "",
        "| metric | value |",
        "|---|---:|",
    ]
    metrics = report["metrics"]
    for key, label in _METRIC_LABELS:
        if key in metrics:
            lines.append(f"| {label} | {_fmt(metrics[key])} |")
    if "n_groups" in metrics:
        lines.append(f"| groups | {metrics['n_groups']} |")
    lines += [
        "",
        "## Reliability table",
        "",
        "| bin | range | count | mean confidence | accuracy | gap | 95% CI |",
        "|---:|---|---:|---:|---:|---:|---|",
    ]
    for row in report["reliability_table"]:
        ci = (
            "n/a"
            if row["ci_lower"] is None
            else f"[{row['ci_lower']:.3f}, {row['ci_upper']:.3f}]"
        )
        lines.append(
            f"| {row['bin']} | [{row['bin_lower']:.3f}, {row['bin_upper']:.3f}] "
            f"| {row['count']} | {_fmt(row['mean_confidence'])} "
            f"| {_fmt(row['accuracy'])} | {_fmt(row['gap'])} | {ci} |"
        )
    lines += [
        "",
        "gap = accuracy - mean confidence (negative: overconfident). NLL clips "
        "confidences of exactly 0 or 1 to machine epsilon.",
        "",
    ]
    return "\n".join(lines)


def format_json(report):
    return json.dumps(report, indent=2) + "\n"


def _atomic_write_text(path, text):
    """Write ``text`` to ``path`` through a temp file and ``os.replace``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _check_output(output, input_path, force):
    """Refuse to clobber the input (ever) or another file (without --force)."""
    output = Path(output)
    if output.is_dir():
        raise UsageError(f"--output {output} is a directory; give a file name")
    if not output.parent.is_dir():
        raise UsageError(f"--output folder {output.parent} does not exist")
    if input_path is not None and (
        output.resolve() == input_path.resolve()
        or (output.exists() and os.path.samefile(output, input_path))
    ):
        raise UsageError(
            f"--output {output} is the input file; refusing to overwrite it"
        )
    if output.exists() and not force:
        raise UsageError(f"--output {output} exists; pass --force to replace it")
    return output


# --------------------------------------------------------------------------
# subcommands
# --------------------------------------------------------------------------


def _add_report(subparsers):
    parser = subparsers.add_parser(
        "report",
        help="calibration report for a confidence column",
        description=(
            "Reliability table, ECE, MCE, Brier (with calibration/refinement "
            "split), NLL, AUC, AUAC and, with --group, beta-CE. Without FILE, "
            "reports on the bundled TriviaQA data "
            "(confidence verbal_confidence, label correct_judge)."
        ),
    )
    parser.add_argument(
        "file",
        nargs="?",
        type=Path,
        metavar="FILE",
        help="CSV/TSV (optionally compressed) or "
        "Parquet file; omit for the bundled TriviaQA data",
    )
    parser.add_argument(
        "--confidence", "-c", metavar="COL", help="confidence column, in [0, 1]"
    )
    parser.add_argument(
        "--label", "-l", metavar="COL", help="label column, 0/1 or bool"
    )
    parser.add_argument(
        "--group", "-g", metavar="COL", help="group column: also report beta-CE"
    )
    parser.add_argument(
        "--n-bins", type=int, default=10, metavar="N", help="number of bins (10)"
    )
    parser.add_argument(
        "--strategy",
        choices=["uniform", "quantile"],
        default="uniform",
        help="equal-width (default) or equal-mass bins",
    )
    parser.add_argument(
        "--dropna",
        action="store_true",
        help="drop rows with a missing value in the used columns (default: error)",
    )
    parser.add_argument(
        "--output", "-o", metavar="FILE", help="also write the report to FILE"
    )
    parser.add_argument(
        "--format",
        choices=["markdown", "json"],
        help="report format (default: json for an --output ending in .json, "
        "else markdown)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --output file (never the input file)",
    )
    parser.set_defaults(func=_run_report)


def _run_report(args):
    if args.n_bins < 1:
        raise UsageError(f"--n-bins must be a positive integer; got {args.n_bins}")
    if args.file is None:
        confidence = args.confidence or "verbal_confidence"
        label = args.label or "correct_judge"
        frame = _bundled_frame()
        source = "bundled TriviaQA data (sklearn_betacal.datasets."
        source += "load_triviaqa_confidence)"
    else:
        if not args.confidence or not args.label:
            raise UsageError(
                "with an input file, name its columns: --confidence COL --label COL"
            )
        confidence, label = args.confidence, args.label
        used = list(dict.fromkeys(c for c in (confidence, label, args.group) if c))
        frame = _read_table(args.file, used)
        source = str(args.file)
    output = None
    if args.output is not None:
        output = _check_output(args.output, args.file, args.force)
    p, y, groups, n_dropped = _check_columns(
        frame, confidence, label, args.group, args.dropna
    )
    report = {
        "input": {
            "source": source,
            "confidence": confidence,
            "label": label,
            "group": args.group,
            "n_dropped": n_dropped,
        },
        **compute_report(
            p, y, groups=groups, n_bins=args.n_bins, strategy=args.strategy
        ),
    }
    fmt = args.format
    if fmt is None:
        is_json = output is not None and output.suffix.lower() == ".json"
        fmt = "json" if is_json else "markdown"
    text = format_json(report) if fmt == "json" else format_markdown(report)
    if output is not None:
        try:
            _atomic_write_text(output, text)
        except OSError as exc:
            raise UsageError(f"could not write --output {output}: {exc}") from None
    sys.stdout.write(text)
    if output is not None:
        print(f"betacal: wrote {output}", file=sys.stderr)
    return EXIT_OK


def _add_demo(subparsers):
    parser = subparsers.add_parser(
        "demo",
        help="the paper's protocol on the bundled data (the main job)",
        description=(
            "Runs the beta-calibration protocol of the paper (20:60:10:10 split, "
            "kd-tree beta on text embeddings, GridSearchCV tuning by the debiased "
            "beta-CE, or by AUAC as the paper does) on the "
            "bundled TriviaQA confidences of 12 LLMs, prints the comparison table "
            "and writes a report folder (Markdown + PNG reliability diagrams when "
            "matplotlib is installed)."
        ),
    )
    parser.add_argument(
        "--seeds", type=int, default=4, metavar="N", help="number of seeds (4)"
    )
    parser.add_argument(
        "--kind",
        choices=["verbal", "token", "both"],
        default="both",
        help="which confidence to calibrate (both)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("betacal-report"),
        metavar="DIR",
        help="report folder (betacal-report); its report files are replaced",
    )
    parser.add_argument(
        "--tune-by",
        choices=["beta_ce", "auac"],
        default="beta_ce",
        help="tuning score on the tuning split: debiased beta-CE (beta_ce) or "
        "the paper's AUAC",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress bar on stderr"
    )
    parser.set_defaults(func=_run_demo)


def _run_demo(args):
    import time

    from ._demo import run_demo, write_report
    from ._protocol import ProtocolConfig, format_table

    if args.seeds < 1:
        raise UsageError(f"--seeds must be a positive integer; got {args.seeds}")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} exists and is not a folder")
    kinds = ("verbal", "token") if args.kind == "both" else (args.kind,)
    start = time.perf_counter()
    config = ProtocolConfig(group_column="model", tune_by=args.tune_by)
    summary, results, preds = run_demo(
        seeds=args.seeds, kinds=kinds, config=config, progress=not args.quiet
    )
    elapsed = time.perf_counter() - start
    for kind, block in summary.groupby("kind", sort=False):
        print(f"\n## {kind} confidence ({args.seeds} seed(s))\n")
        print(format_table(block))
    path = write_report(
        args.out, summary, results, preds, seeds=args.seeds, elapsed=elapsed
    )
    print(f"\nbetacal: wrote {path} ({elapsed:.0f} s)", file=sys.stderr)
    return EXIT_OK


#: Subcommand registrars, in the order ``betacal --help`` lists them.
COMMANDS = [_add_demo, _add_report]


def build_parser():
    """The ``betacal`` argument parser with every subcommand of COMMANDS."""
    parser = _Parser(
        prog="betacal",
        description="Calibration audits for LLM question-answering confidences.",
    )
    parser.add_argument("--version", action="version", version=__version__)
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser
    )
    for register in COMMANDS:
        register(subparsers)
    names = ", ".join(subparsers.choices)
    parser.set_defaults(func=lambda args: _no_command(names))
    return parser


def _no_command(names):
    raise UsageError(f"choose a command: {names} (see 'betacal --help')")


def main(argv=None):
    """Run ``betacal`` with ``argv`` (default ``sys.argv[1:]``); return the status.

    Parameters
    ----------
    argv : list of str, default=None

    Returns
    -------
    status : int
        0 on success, 2 on bad input (a one-line message was written to
        stderr).

    Examples
    --------
    >>> from sklearn_betacal.cli import main
    >>> main(["report", "--n-bins", "5"])  # doctest: +ELLIPSIS
    # Calibration report
    ...
    0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return args.func(args)
    except UsageError as exc:
        print(f"betacal: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help / --version
        return exc.code if isinstance(exc.code, int) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
