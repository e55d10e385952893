# SPDX-License-Identifier: MIT
"""``betacal report`` from merged statistics: a Parquet set, out of core.

:func:`report_from_statistics` turns a
:class:`~sklearn_betacal.metrics._statistics.CalibrationStatistics` (merged
over the partitions of a data set by
:func:`sklearn_betacal.dask.calibration_statistics`) into the very dict
:func:`._report.compute_report` builds from arrays in memory, number for
number (to rounding), so the Markdown, JSON and figures are the same.
"""

import logging
import os
import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np

from .._io import TableReadError, atomic_report_folder, atomic_write, read_table
from ._common import EXIT_OK, UsageError, check_output, one_line
from ._report import (
    SIGNIFICANCE,
    _finite_or_none,
    _fmt,
    _group_rows_from,
    _report_body,
)


def report_from_statistics(stats, *, strategy="uniform", min_count=None):
    """The report dict of :func:`._report.compute_report` from statistics
    (``min_count``: ``--min-count``, as there)."""
    if strategy == "quantile" and getattr(stats, "quantile_edges", None) is None:
        stats = stats.equal_mass()  # exact edges from the value table
    binning = {"n_bins": stats.n_bins, "strategy": strategy}
    brier = stats.brier_decomposition()
    n = stats.n_rows
    totals = stats.bin_totals()
    metrics = {
        "ece": stats.calibration_error("l1"),
        "mce": stats.calibration_error("max"),
        "brier": brier.brier,
        "brier_calibration": brier.calibration,
        "brier_refinement": brier.refinement,
        "nll": stats.log_loss(),
        "auc": stats.roc_auc(),
        "auac": stats.auac(),
    }
    extra = {}
    if stats.grouped:
        metrics["beta_ce"] = stats.beta_calibration_error()
        metrics["beta_ce_noise_floor"] = stats.noise_floor()
        metrics["beta_ce_squared_debiased"] = stats.beta_calibration_error(
            "l2_squared", debiased=True
        )
        metrics["n_groups"] = int(stats.labels.shape[0])
        tests = stats.calibration_test(alpha=SIGNIFICANCE)
        extra = _group_rows_from(stats.group_table(), tests, n, min_count)
    return _report_body(
        n_rows=n,
        accuracy=float(np.sum(totals["n_pos"]) / n),
        mean_confidence=float(np.sum(totals["sum_p"]) / n),
        binning=binning,
        metrics=metrics,
        table=stats.reliability_table(),
        extra=extra,
    )


# --------------------------------------------------------------------------
# the command line: a Parquet set (or --against), through dask.distributed
# --------------------------------------------------------------------------

#: rows a bin needs in both periods for the drift test
DRIFT_MIN_COUNT = 30


def add_report(subparsers):
    """``betacal report`` (:func:`._report.add_report`) with the options of a
    Parquet set and of drift; a run on a set or with ``--against`` goes
    through merged statistics, any other through the in-memory report."""
    from ._report import _run_report
    from ._report import add_report as add_in_memory

    add_in_memory(subparsers)
    parser = subparsers.choices["report"]
    add_set_options(parser)

    def run(args):
        if args.n_bins < 1:
            raise UsageError(f"--n-bins must be a positive integer; got {args.n_bins}")
        if run_report_set(args):
            return EXIT_OK
        return _run_report(args)

    parser.set_defaults(func=run)


def add_set_options(parser):
    """The options of ``betacal report`` for Parquet sets and drift."""
    parser.add_argument(
        "--against",
        type=Path,
        metavar="OLD",
        help="also test, per group, whether calibration changed from OLD (a "
        "file or a Parquet set of an earlier period, same columns) to FILE, "
        "and name the groups that drifted (Holm-adjusted)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="with a Parquet set: the dask.distributed scheduler to run on "
        "(default: a local cluster on this machine)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="with a Parquet set: threads of the local cluster (default: the "
        "number of CPUs)",
    )


def _files_of(path):
    """The Parquet files of a set (pattern or folder), or None for one file."""
    from ._apply import _input_set

    return _input_set(str(path))


@contextmanager
def _cluster(args):
    """A ``distributed.Client``: to ``--scheduler``, or on a LocalCluster."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise UsageError(
            "a report on a set of Parquet files needs the dask extra: pip "
            "install 'sklearn-betacal[dask]' (or report on one file)"
        ) from None
    for name in ("distributed", "distributed.shuffle"):
        logging.getLogger(name).setLevel(logging.ERROR)
    if args.scheduler:
        try:
            client = Client(args.scheduler, timeout="20s")
        except OSError as exc:
            raise UsageError(
                f"--scheduler {args.scheduler}: could not connect ({one_line(exc)})"
            ) from None
        with client:
            yield client
        return
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be a positive integer; got {args.workers}")
    threads = args.workers or os.cpu_count() or 1
    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=threads,
            processes=False,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def _cli_readers(args, confidence, label):
    """Per-partition readers of the label and confidence columns with the
    in-memory report's messages."""
    from .._validation import check_confidence, check_unit_interval
    from ._common import read_labels

    def labels(values):
        return read_labels(values, label, args.pos_label)

    def confidences(values):
        try:
            p = check_confidence(
                values.to_numpy(),
                input="logit",
                name=f"confidence column {confidence!r}",
            )
            check_unit_interval(
                p,
                f"confidence column {confidence!r}",
                "the report needs probabilities: map scores or logits to "
                "[0, 1] first (e.g. with a fitted calibrator)",
            )
        except ValueError as exc:
            hint = " (or pass --dropna)" if "NaN" in str(exc) else ""
            raise UsageError(one_line(exc) + hint) from None
        return p

    return labels, confidences


def _open_set(args, path, files, used):
    """``(frame, n_rows)``: the set as a lazy dask DataFrame of the used
    columns, checked (names, confidence type) before any cluster starts."""
    import dask.dataframe as dd
    import pyarrow.parquet as pq

    confidence = args.confidence
    try:
        frame = dd.read_parquet([str(f) for f in files])
        present = list(frame.columns)
        n_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    except (ValueError, TypeError, OSError, KeyError) as exc:
        raise UsageError(f"could not read {path} as Parquet: {one_line(exc)}") from None
    missing = [c for c in used if c not in present]
    if missing:
        raise UsageError(
            f"column {missing[0]!r} not found in {path}; its columns are "
            f"{', '.join(map(repr, present[:12]))}{' ...' if len(present) > 12 else ''}"
        )
    frame = frame[used]
    kind = frame.dtypes[confidence]
    if getattr(kind, "kind", "O") not in "iuf":
        raise UsageError(
            f"confidence column {confidence!r} of {path} holds {kind}, not numbers; "
            "a Parquet set is read as numbers in [0, 1] (--percent and "
            "--verbalized need one file)"
        )
    if args.dropna:
        frame = frame.dropna()
    return frame, n_rows


def _set_statistics(args, path, opened):
    """``(stats, n_dropped)`` of an opened Parquet set, on the cluster."""
    from .._outofcore import calibration_statistics

    frame, n_total = opened
    labels, confidences = _cli_readers(args, args.confidence, args.label)
    try:
        stats = calibration_statistics(
            frame,
            y_true=args.label,
            y_prob=args.confidence,
            cells=args.group,
            n_bins=args.n_bins,
            read_labels=labels,
            read_confidence=confidences,
        )
    except KeyError as exc:
        raise UsageError(
            f"reading {path}: a file of the set lacks a column that the first "
            f"file has ({exc.args[0] if exc.args else exc}); give files with "
            "the same columns"
        ) from None
    except (ValueError, TypeError, OSError) as exc:
        raise UsageError(f"reading {path}: {one_line(exc)}") from None
    if stats.n_rows == 0:
        raise UsageError(f"no rows to report on ({path} is empty)")
    return stats, n_total - stats.n_rows


def _file_statistics(args, path, frame=None):
    """``(stats, n_dropped, n_unparsed, n_empty)`` of one file in memory,
    read and checked as the in-memory report reads it."""
    from .._outofcore import calibration_statistics
    from ._report import _check_columns

    used = list(
        dict.fromkeys(c for c in (args.confidence, args.label, args.group) if c)
    )
    if frame is None:
        try:
            frame = read_table(path, used, sep=args.sep)
        except TableReadError as exc:
            raise UsageError(str(exc)) from None
    fmt = "percent" if args.percent else "verbalized" if args.verbalized else "number"
    p, y, groups, n_dropped, n_unparsed, n_empty = _check_columns(
        frame,
        args.confidence,
        args.label,
        args.group,
        args.dropna,
        fmt=fmt,
        pos_label=args.pos_label,
    )
    try:
        stats = calibration_statistics(
            y_true=y, y_prob=p, cells=groups, n_bins=args.n_bins
        )
    except ValueError as exc:  # soft labels: the statistics count 0/1 ones
        raise UsageError(f"{path or 'the bundled data'}: {one_line(exc)}") from None
    return stats, n_dropped, n_unparsed, n_empty


def drift_section(stats_new, stats_old, against):
    """The JSON-ready ``drift`` part of the report."""
    from ..metrics import calibration_drift_test

    table = calibration_drift_test(
        stats_new, stats_old, alpha=SIGNIFICANCE, min_count=DRIFT_MIN_COUNT
    )
    grouped = stats_new.grouped
    rows = []
    for group, row in table.iterrows():
        rows.append(
            {
                "group": str(group) if grouped else "all rows",
                "count_new": int(row["count_new"]),
                "count_old": int(row["count_old"]),
                "gap_new": _finite_or_none(row["gap_new"]),
                "gap_old": _finite_or_none(row["gap_old"]),
                "ce_new": _finite_or_none(row["ce_new"]),
                "ce_old": _finite_or_none(row["ce_old"]),
                "bins_compared": int(row["bins_compared"]),
                "statistic": _finite_or_none(row["statistic"]),
                "pvalue": _finite_or_none(row["pvalue"]),
                "pvalue_adjusted": _finite_or_none(row["pvalue_adjusted"]),
                "drifted": bool(row["drifted"]),
            }
        )
    rows.sort(key=lambda r: (r["pvalue_adjusted"] is None, r["pvalue_adjusted"] or 0))
    return {
        "against": str(against),
        "alpha": SIGNIFICANCE,
        "method": "holm",
        "min_count": DRIFT_MIN_COUNT,
        "groups": rows,
        "drifted_groups": [r["group"] for r in rows if r["drifted"]],
    }


def format_drift(drift):
    """The drift part of the Markdown report."""
    lines = [
        "",
        f"## Drift against {drift['against']}",
        "",
        "| group | rows | rows before | gap | gap before | CE | CE before "
        "| bins | Holm p |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in drift["groups"]:
        note = " **drifted**" if r["drifted"] else ""
        lines.append(
            f"| {r['group']}{note} | {r['count_new']} | {r['count_old']} "
            f"| {_fmt(r['gap_new'])} | {_fmt(r['gap_old'])} | {_fmt(r['ce_new'])} "
            f"| {_fmt(r['ce_old'])} | {r['bins_compared']} "
            f"| {_fmt(r['pvalue_adjusted'])} |"
        )
    found = drift["drifted_groups"]
    shown = ", ".join(found[:10]) + (", ..." if len(found) > 10 else "")
    lines += [
        "",
        "gap = accuracy - mean confidence. Test: per bin holding at least "
        f"{drift['min_count']} rows in both periods, the two mean residuals "
        "(accuracy - confidence) compared by a z statistic (variance pooled "
        "over the periods); a group's sum of "
        "squared z against chi-squared, Holm-adjusted over the groups.",
        f"Calibration changed (Holm-adjusted p < {drift['alpha']:g}): "
        + (f"{len(found)} group(s): {shown}." if found else "none."),
        "",
    ]
    return lines


def statistics_figures(out_dir, stats, *, name):
    """The figures of ``report --plot`` drawn from merged statistics:
    ``{file name: caption}`` (the same files as :func:`._panels.file_figures`;
    the per-group figure has no bootstrap intervals or simulated noise
    levels, which need the rows)."""
    from ..metrics._plot.accuracy_confidence import AccuracyConfidenceDisplay
    from ..metrics._plot.beta_reliability import (
        BetaCalibrationDisplay,
        _data_min_count,
    )
    from ..metrics._plot.reliability import ReliabilityDisplay
    from ._panels import _figure, cells_figure, save_png

    written = {}
    fig, axes = _figure(2, 1, 5, 5.6, sharex=True, height_ratios=[3, 1])
    ReliabilityDisplay(
        stats.reliability_table(), ece=stats.calibration_error(), name=name
    ).plot(ax=axes[0, 0], hist_ax=axes[1, 0])
    save_png(fig, out_dir / "reliability.png")
    written["reliability.png"] = "reliability diagram, all rows"
    fig, axes = _figure(1, 2, 10, 4.2)
    thresholds, accuracy, coverage = stats.accuracy_confidence_curve()
    AccuracyConfidenceDisplay(
        thresholds,
        accuracy,
        coverage,
        coverage[::-1],
        1.0 - accuracy[::-1],
        auac=stats.auac(),
        name=name,
    ).plot(ax=axes[0])
    fig.suptitle("selective answering", fontsize="small")
    save_png(fig, out_dir / "selective.png")
    written["selective.png"] = "accuracy-confidence curve"
    if stats.grouped:
        table = stats.group_table()
        min_count = _data_min_count(table["count"].to_numpy())
        tables = {
            cell: stats.reliability_table(group=cell)
            for cell, count in zip(table.index, table["count"], strict=True)
            if count >= min_count
        }
        disp = BetaCalibrationDisplay(
            table,
            reliability_tables=tables,
            min_count=min_count,
            beta_ce=stats.beta_calibration_error(),
            name=name,
            test_table=stats.calibration_test(alpha=SIGNIFICANCE),
        )
        save_png(cells_figure(disp), out_dir / "groups.png")
        written["groups.png"] = "calibration error per group, worst first"
    return written


def run_report_set(args):
    """``betacal report`` on a Parquet set, or with ``--against``; ``False``
    when neither applies (the in-memory report runs)."""
    if args.file is None and args.against is None:
        return False
    files = None if args.file is None else _files_of(args.file)
    if files is None and args.against is None:
        if args.scheduler or args.workers:
            raise UsageError(
                "--scheduler and --workers apply to a set of Parquet files "
                "(a quoted glob pattern or a folder)"
            )
        return False
    from ._report import (
        _bundled_frame,
        _check_plot_dir,
        _check_report_name,
        emit_report,
    )

    old_files = None if args.against is None else _files_of(args.against)
    if (files is not None or old_files is not None) and (
        args.percent or args.verbalized
    ):
        raise UsageError(
            "--percent and --verbalized read one file in memory; a Parquet set "
            "holds confidences as numbers in [0, 1]"
        )
    if args.file is None:  # the bundled data against OLD
        args.confidence = args.confidence or "verbal_confidence"
        args.label = args.label or "correct_judge"
    if not args.confidence or not args.label:
        raise UsageError(
            "with an input file, name its columns: --confidence COL --label COL"
        )
    output = None
    if args.output is not None:
        output = check_output(args.output, args.file, args.force)
        if args.against is not None:  # never the earlier period's file either
            check_output(args.output, args.against, args.force)
        _check_report_name(output, args.format)
    plot_dir = None
    if args.plot is not None:
        plot_dir = _check_plot_dir(args.plot, args.force, args.file)
    used = list(
        dict.fromkeys(c for c in (args.confidence, args.label, args.group) if c)
    )
    n_unparsed = n_empty = 0
    opened = None if files is None else _open_set(args, args.file, files, used)
    old_opened = (
        None if old_files is None else _open_set(args, args.against, old_files, used)
    )
    needs_cluster = files is not None or old_files is not None
    with _cluster(args) if needs_cluster else nullcontext():
        if files is not None:
            stats, n_dropped = _set_statistics(args, args.file, opened)
            source = f"{args.file} ({len(files)} Parquet files, out of core)"
        else:
            frame = _bundled_frame() if args.file is None else None
            stats, n_dropped, n_unparsed, n_empty = _file_statistics(
                args, args.file, frame
            )
            source = (
                str(args.file) if args.file is not None else "bundled TriviaQA data"
            )
        drift = None
        if args.against is not None:
            if old_files is not None:
                old, _ = _set_statistics(args, args.against, old_opened)
            else:
                old = _file_statistics(args, args.against)[0]
            if old.grouped != stats.grouped:  # pragma: no cover - same args
                raise UsageError("--against: the two periods differ in grouping")
            drift = drift_section(stats, old, args.against)
    shown = stats
    if args.strategy == "quantile":
        try:
            shown = stats.equal_mass()
        except ValueError:
            raise UsageError(
                "--strategy quantile on a Parquet set (or with --against) needs "
                "confidences of few distinct values (stated ones, a calibrator's "
                "bins); these are continuous: use --strategy uniform"
            ) from None
    report = {
        "input": {
            "source": source,
            "confidence": args.confidence,
            "label": args.label,
            "group": args.group,
            "confidence_format": (
                "percent"
                if args.percent
                else "verbalized"
                if args.verbalized
                else "number"
            ),
            "n_dropped": n_dropped,
            "n_unparsed": n_unparsed,
            "n_empty": n_empty,
        },
        **report_from_statistics(
            shown, strategy=args.strategy, min_count=args.min_count
        ),
    }
    if drift is not None:
        report["drift"] = drift
    tail = "" if drift is None else "\n".join(format_drift(drift))
    markdown = emit_report(args, report, output, tail)
    if plot_dir is not None:
        try:
            with atomic_report_folder(plot_dir, protect=args.file) as tmp:
                figures = statistics_figures(tmp, shown, name=args.confidence)
                images = ["", "## Figures", ""]
                for name, caption in figures.items():
                    images += [f"### {caption}", "", f"![{caption}]({name})", ""]
                atomic_write(tmp / "report.md", markdown + "\n".join(images))
        except OSError as exc:
            raise UsageError(f"could not write to --plot {plot_dir}: {exc}") from None
        print(
            f"betacal: wrote report.md and {len(figures)} figures to {plot_dir}",
            file=sys.stderr,
        )
    return True
