# SPDX-License-Identifier: MIT
"""``betacal report``: audit the calibration of a confidence column."""

import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np

from .._io import (
    _COMPRESSION_SUFFIXES,
    _CSV_SUFFIXES,
    _PARQUET_SUFFIXES,
    TableReadError,
    atomic_report_folder,
    atomic_write,
    read_table,
)
from ._common import (
    EXIT_OK,
    UsageError,
    add_confidence_scale,
    add_pos_label,
    check_can_create_in,
    check_confidence_kind,
    check_labels_present,
    check_output,
    decimal_comma_hint,
    one_line,
    read_labels,
    separator,
    verbalized_options,
)
from ._fit import _int_at_least
from ._gate import add_gate_flags, format_gate, gate_figure, report_gate


def _bundled_frame():
    from ..datasets import load_triviaqa_confidence

    return load_triviaqa_confidence().frame


def _left_out(n_unparsed, n_empty):
    """`` (... left out)`` of the rows line: responses that state no confidence."""
    parts = []
    if n_unparsed:
        parts.append(f"{n_unparsed} confidence text(s) without a confidence")
    if n_empty:
        parts.append(f"{n_empty} empty or N/A response(s)")
    return f" ({' and '.join(parts)} left out)" if parts else ""


#: --format of the report file names that say one (a .md holding JSON, or
#: the other way round, was written without a word)
_REPORT_SUFFIXES = {".md": "markdown", ".markdown": "markdown", ".json": "json"}


def _check_report_name(output, fmt):
    """Refuse a report file name that promises what the report is not: a
    compressed file or a table (the report is plain text), or the other
    ``--format`` than the one given (``fmt``; ``None`` takes it from the
    name)."""
    suffix = output.suffix.lower()
    # a table's names (a .txt is a text report as well)
    tables = _PARQUET_SUFFIXES | (_CSV_SUFFIXES - {".txt"})
    if suffix in _COMPRESSION_SUFFIXES or suffix in tables:
        raise UsageError(
            f"--output {output}: the report is a plain text file (Markdown or "
            "JSON, see --format), neither compressed nor a table; name it .md "
            "or .json"
        )
    said = _REPORT_SUFFIXES.get(suffix)
    if fmt is not None and said is not None and said != fmt:  # None: from the name
        raise UsageError(
            f"--output {output} names a {said} file but the report is {fmt}; "
            f"pass --format {said}, or name the file "
            f"{'.json' if fmt == 'json' else '.md'}"
        )


def _check_columns(
    frame,
    confidence,
    label,
    group,
    dropna,
    *,
    fmt="number",
    pos_label=None,
    options=None,
):
    """Return ``(p, y, groups, n_dropped, n_unparsed, n_empty)`` for the metrics.

    ``fmt``: how the confidence column is written (``"number"``,
    ``"percent"``, ``"verbalized"``: :func:`~._fit.confidence_values`, the
    reading of ``fit``); texts that state no confidence are left out and
    counted in ``n_unparsed``. With ``"verbalized"`` an empty response (or
    one pandas reads as missing: ``N/A``, ``None``, ``null``) states no
    confidence either: left out and counted in ``n_empty``, as ``fit``
    does; with the other formats a missing confidence needs ``dropna``.
    """
    import pandas as pd

    from .._validation import check_confidence, check_unit_interval

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
    check_confidence_kind(frame[confidence], confidence)
    n_unparsed = n_empty = 0
    warned = []
    if fmt != "number":
        from ._fit import (
            confidence_values,
            empty_responses,
            lost_groups,
            plain_numbers_only,
            unread_lines,
            unread_reasons,
        )

        if fmt == "verbalized" and plain_numbers_only(frame[confidence]):
            raise UsageError(
                f"--verbalized: confidence column {confidence!r} holds plain "
                "numbers only, no text; drop --verbalized (and pass --percent "
                "for 0-100)"
            )
        unread = {}
        read, n_unparsed = confidence_values(
            frame[confidence],
            fmt,
            column=confidence,
            command="report",
            options=options,
            unread=unread,
        )
        if fmt == "verbalized":
            failed = np.isnan(read) & ~empty_responses(frame[confidence])
            lines = unread_lines(unread, total=len(read), command="report")
            if group is not None:
                lines += lost_groups(
                    frame[group].to_numpy(), failed, name=group, command="report"
                )
            warned = lines  # printed once every check has passed
        if fmt == "verbalized":
            # before the empty responses go: a row missing both is refused
            # for its label, as fit refuses it
            check_labels_present(frame[label], label)
        missing = np.isnan(read) & (
            empty_responses(frame[confidence])
            if fmt == "verbalized"
            else frame[confidence].isna().to_numpy()
        )
        n_empty = int(missing.sum())
        if n_empty and fmt != "verbalized":
            raise UsageError(
                f"confidence column {confidence!r} has {int(missing.sum())} "
                "missing value(s); pass --dropna to leave those rows out"
            )
        keep = ~np.isnan(read)
        frame = frame[keep].assign(**{confidence: read[keep]})
        if len(frame) == 0:
            raise UsageError(
                f"no confidence could be read from column {confidence!r} "
                f"({n_unparsed} text(s) without one, {n_empty} empty)"
                + unread_reasons(unread)
            )
    y = read_labels(frame[label], label, pos_label)
    if not pd.api.types.is_numeric_dtype(frame[confidence].dtype):
        text = frame[confidence].dropna().astype(str)
        if len(text) and pd.to_numeric(text, errors="coerce").isna().any():
            bad = pd.to_numeric(text, errors="coerce").isna()
            example = text[bad].iloc[0]
            hint = decimal_comma_hint(example) or (
                "pass --verbalized to read model text ('Probability: 0.8', "
                "'80%', 'highly likely'), or --percent for numbers in 0-100"
            )
            raise UsageError(
                f"confidence column {confidence!r} has {int(bad.sum())} "
                f"non-numeric value(s) such as {example[:40]!r}; {hint}"
            )
    try:
        # "logit" checks type and finiteness only; the [0, 1] check below has a
        # message fit for the command line (there is no input= option here)
        p = check_confidence(
            frame[confidence].to_numpy(),
            input="logit",
            name=f"confidence column {confidence!r}",
        )
        check_unit_interval(
            p,
            f"confidence column {confidence!r}",
            "the report needs probabilities: pass --percent for numbers in "
            "0-100, or map scores or logits to [0, 1] first (e.g. with a "
            "fitted calibrator)",
        )
    except ValueError as exc:
        hint = " (or pass --dropna)" if "NaN" in str(exc) else ""
        raise UsageError(one_line(exc) + hint) from None
    groups = None if group is None else frame[group].to_numpy()
    for line in warned:
        print(f"betacal: warning: {line}", file=sys.stderr)
    return p, y, groups, n_dropped, n_unparsed, n_empty


# --------------------------------------------------------------------------
# computing and formatting the report
# --------------------------------------------------------------------------


def _finite_or_none(value):
    value = float(value)
    return value if math.isfinite(value) else None


def compute_report(
    p, y, *, cells=None, n_bins=10, strategy="uniform", min_count=None
):
    """All report numbers as a JSON-ready dict (``None`` where undefined).

    ``min_count``: the size below which a group is marked small
    (``--min-count``; default Thm 3.1's size for +-0.1, see
    :func:`_group_rows`).
    """
    from sklearn.metrics import log_loss, roc_auc_score

    from ..metrics import (
        area_under_accuracy_confidence,
        beta_calibration_error,
        beta_calibration_noise_floor,
        brier_decomposition,
        expected_calibration_error,
        maximum_calibration_error,
        reliability_table,
    )

    binning = {"n_bins": n_bins, "strategy": strategy}
    brier = brier_decomposition(y, p, **binning)
    both_classes = 0 < y.sum() < len(y)
    hard, weight = (y, p), None
    if np.any((y != 0.0) & (y != 1.0)):
        # soft labels (a judge's probability): NLL and AUC of a positive of
        # weight y and a negative of weight 1 - y, as the metrics read them
        hard = (np.repeat([1.0, 0.0], len(y)), np.concatenate([p, p]))
        weight = np.concatenate([y, 1.0 - y])
    metrics = {
        "ece": expected_calibration_error(y, p, **binning),
        "mce": maximum_calibration_error(y, p, **binning),
        "brier": brier.brier,
        "brier_calibration": brier.calibration,
        "brier_refinement": brier.refinement,
        "nll": log_loss(*hard, labels=[0, 1], sample_weight=weight),
        # AUC needs both classes; undefined otherwise
        "auc": roc_auc_score(*hard, sample_weight=weight) if both_classes else None,
        "auac": area_under_accuracy_confidence(y, p),
    }
    extra = {}
    if cells is not None:
        metrics["beta_ce"] = beta_calibration_error(y, p, cells=cells, **binning)
        metrics["beta_ce_noise_floor"] = beta_calibration_noise_floor(
            y, p, cells=cells, **binning
        )
        metrics["beta_ce_squared_debiased"] = beta_calibration_error(
            y, p, cells=cells, norm="l2_squared", debiased=True, **binning
        )
        metrics["n_groups"] = int(len(np.unique(cells)))
        extra = _group_rows(p, y, cells, binning, min_count)
    return _report_body(
        n_rows=int(len(y)),
        accuracy=float(np.mean(y)),
        mean_confidence=float(np.mean(p)),
        binning=binning,
        metrics=metrics,
        table=reliability_table(y, p, **binning),
        extra=extra,
    )


def _report_body(*, n_rows, accuracy, mean_confidence, binning, metrics, table, extra):
    """The report dict from its numbers (in memory, or from merged statistics:
    :mod:`._report_set`)."""
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
        "n_rows": n_rows,
        "accuracy": accuracy,
        "mean_confidence": mean_confidence,
        "n_bins": binning["n_bins"],
        "strategy": binning["strategy"],
        "metrics": {
            k: (v if v is None or isinstance(v, int) else float(v))
            for k, v in metrics.items()
        },
        "reliability_table": rows,
        **extra,
    }


def _group_rows(p, y, groups, binning, min_count=None):
    """Per-group counts, accuracy, mean confidence and CE, worst CE first.

    ``too_small`` marks groups below ``min_count`` rows (``--min-count``),
    by default the size at which Thm 3.1 pins a group's accuracy down to
    +-0.1 (``min_group_count``): the rule ``--plot``'s per-group figure
    draws by too. ``ecce``,
    ``pvalue_adjusted`` and ``significant`` are the group's Kuiper test
    (:func:`~sklearn_betacal.metrics.calibration_test`, Holm-adjusted at
    ``SIGNIFICANCE``); ``significant_groups`` lists the rejected groups.
    """
    from ..metrics import calibration_test, cell_calibration_table

    table = cell_calibration_table(y, p, cells=groups, n_resamples=0, **binning)
    tests = calibration_test(y, p, cells=groups, alpha=SIGNIFICANCE).table
    return _group_rows_from(table, tests, len(y), min_count)


def _group_rows_from(table, tests, n_rows, min_count=None):
    """The ``groups`` part of the report from the per-group table of
    :func:`~sklearn_betacal.metrics.cell_calibration_table` and the test
    table of :func:`~sklearn_betacal.metrics.calibration_test`."""
    from ..metrics._plot.beta_reliability import auto_min_count

    min_count = auto_min_count(n_rows) if min_count is None else int(min_count)
    table = table.sort_values("calibration_error", ascending=False, kind="stable")
    tests = tests.copy()
    tests.index = tests.index.astype(str)
    rows = [
        {
            "group": str(cell),
            "count": int(row["count"]),
            "accuracy": _finite_or_none(row["accuracy"]),
            "mean_confidence": _finite_or_none(row["mean_confidence"]),
            "calibration_error": _finite_or_none(row["calibration_error"]),
            "too_small": bool(row["count"] < min_count),
            "ecce": _finite_or_none(tests.loc[str(cell), "ecce"]),
            "pvalue_adjusted": _finite_or_none(tests.loc[str(cell), "pvalue_adjusted"]),
            "significant": bool(tests.loc[str(cell), "significant"]),
        }
        for cell, row in table.iterrows()
    ]
    significant = [row["group"] for row in rows if row["significant"]]
    return {
        "min_group_count": int(min_count),
        "groups": rows,
        "significant_groups": significant,
    }


#: Level of the per-group Kuiper tests (Holm-adjusted) in the report.
SIGNIFICANCE = 0.05

_METRIC_LABELS = [
    ("ece", "ECE (expected calibration error)"),
    ("mce", "MCE (maximum calibration error)"),
    ("beta_ce", "beta-CE (CE(h; beta), per-group ECE averaged)"),
    ("beta_ce_noise_floor", "  its noise floor (a calibrated confidence's)"),
    ("beta_ce_squared_debiased", "  squared beta-CE, debiased (Kumar et al.)"),
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
        )
        + _left_out(meta.get("n_unparsed", 0), meta.get("n_empty", 0)),
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
    lines += _format_groups(report)
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
    lines += format_gate(report.get("abstention"))
    return "\n".join(lines)


def _format_groups(report):
    if "groups" not in report:
        return []
    minimum = report["min_group_count"]
    lines = [
        "",
        "## Groups (worst calibration error first)",
        "",
        "| group | count | accuracy | mean confidence | CE | ECCE | Holm p |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    small = []
    for row in report["groups"]:
        note = " (small)" if row["too_small"] else ""
        note += " **miscalibrated**" if row["significant"] else ""
        if row["too_small"]:
            small.append(row["group"])
        lines.append(
            f"| {row['group']}{note} | {row['count']} | {_fmt(row['accuracy'])} "
            f"| {_fmt(row['mean_confidence'])} | {_fmt(row['calibration_error'])} "
            f"| {_fmt(row['ecce'])} | {_fmt(row['pvalue_adjusted'])} |"
        )
    lines += [
        "",
        "CE: binned calibration error within the group (the terms of beta-CE). "
        "ECCE: cumulative calibration error; Holm p: its Kuiper-test p-value "
        "adjusted for the number of groups.",
    ]
    found = report["significant_groups"]
    size = {row["group"]: row for row in report["groups"]}
    shown = ", ".join(
        f"{g} (n = {size[g]['count']}, p = {_fmt(size[g]['pvalue_adjusted'])})"
        for g in found[:10]
    ) + (", ..." if len(found) > 10 else "")
    lines.append(
        f"Significantly miscalibrated (Holm-adjusted p < {SIGNIFICANCE:g}): "
        + (f"{len(found)} group(s): {shown}." if found else "none.")
    )
    if small:
        shown = ", ".join(small[:10]) + (", ..." if len(small) > 10 else "")
        lines.append(
            f"Small: {len(small)} group(s) have fewer than {minimum} rows: {shown}. "
            "Their CE is mostly sampling noise (Thm 3.1 pins a group's accuracy "
            f"to +-0.1 at 90% from {minimum} rows on), and --plot's per-group "
            "figure leaves them out (--min-count N sets the size, --min-count 1 "
            "shows every group). Their Kuiper test accounts for their size: "
            "a small group marked miscalibrated is so beyond its noise."
        )
    return lines


def format_json(report):
    return json.dumps(report, indent=2) + "\n"


def add_report(subparsers):
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
        "Parquet file, or a set of Parquet files (a quoted glob pattern "
        "'dir/*.parquet' or a folder: reported out of core with dask); omit "
        "for the bundled TriviaQA data",
    )
    parser.add_argument(
        "--confidence",
        "-c",
        metavar="COL",
        help="confidence column, in [0, 1] (0-100 with --percent, model text "
        "with --verbalized)",
    )
    parser.add_argument(
        "--label",
        "-l",
        metavar="COL",
        help="label column: 0/1, bool, yes/no, ... (any two labels with --pos-label)",
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
    add_confidence_scale(parser, ", read as 'betacal fit --verbalized' reads them")
    add_pos_label(parser)
    parser.add_argument(
        "--dropna",
        action="store_true",
        help="drop rows with a missing value in the used columns (default: error)",
    )
    parser.add_argument(
        "--sep", type=separator, help="CSV separator of FILE (default: detected)"
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
        "--min-count",
        type=_int_at_least(1),
        metavar="N",
        help="with --group: groups of fewer than N rows are marked small and "
        "left out of --plot's per-group figure (default: the size at which "
        "Thm 3.1 pins a group's accuracy to +-0.1; 1 shows every group)",
    )
    parser.add_argument(
        "--plot",
        type=Path,
        metavar="DIR",
        help="also write figures (reliability diagram, selective curves and, "
        "with --group, the per-group errors) and report.md to the folder DIR; "
        "needs matplotlib (the plot extra)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --output file, or write into a non-empty "
        "--plot folder (never the input file)",
    )
    add_gate_flags(parser, report=True)
    parser.set_defaults(func=_run_report)


def _check_plot_dir(folder, force, input_path=None):
    """The ``--plot`` folder: checked (and the plot extra) before any work.

    It receives ``report.md`` and PNG files only, so an input table (CSV,
    TSV or Parquet) in it is never overwritten, even with ``--force``; an
    input that *is* such a file (``report.md``, a PNG, or a link to one in
    the folder) is refused here, and any other namesake when the files are
    put in place (:func:`atomic_report_folder`'s ``protect``).
    """
    from ..metrics._plot._base import PLOT_EXTRA_HINT, have_matplotlib

    if not have_matplotlib():
        raise UsageError(f"--plot needs matplotlib: {PLOT_EXTRA_HINT}")
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--plot {folder} exists and is not a folder")
    if input_path is not None and folder.is_dir():
        real = Path(input_path).resolve()
        if real.parent == folder.resolve() and (
            real.name == "report.md" or real.suffix.lower() == ".png"
        ):
            raise UsageError(
                f"the input {input_path} is {real.name} in the --plot folder "
                f"{folder}, which the report writes; choose another --plot folder"
            )
    # the report is written into a temporary folder beside FOLDER (made with
    # its missing parents): the nearest existing ancestor must take it, or
    # the whole report was computed and printed before the refusal
    ancestor = folder.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UsageError(
            f"--plot {folder}: {ancestor} is a file, not a folder; name a folder"
        )
    check_can_create_in(ancestor, "--plot")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise UsageError(
            f"--plot folder {folder} is not empty; pass --force to replace the "
            "report files in it, or name a new folder"
        )
    return folder


def _check_output_beside_plots(output, folder):
    """``--output`` is neither the ``--plot`` folder nor inside it: the
    report was written there, then the folder failed (or replaced it), and
    a file was left behind."""
    out, plots = Path(output).resolve(), Path(folder).resolve()
    if out == plots or plots in out.parents:
        raise UsageError(
            f"--output {output} is the --plot folder {folder} or inside it (the "
            "folder is written as a whole, with its own report.md); name the "
            "output elsewhere"
        )


def _write_plots(folder, report, text, p, y, groups, args):
    # every file is written into a temporary folder beside FOLDER first: a
    # failure midway leaves FOLDER as it was (atomic_report_folder)
    from ._panels import file_figures

    try:
        with atomic_report_folder(folder, protect=args.file) as tmp, (
            warnings.catch_warnings(record=True)
        ) as caught:
            warnings.simplefilter("always", UserWarning)
            figures = file_figures(
                tmp,
                y,
                p,
                name=report["input"]["confidence"],
                groups=groups,
                n_bins=args.n_bins,
                strategy=args.strategy,
                min_count="auto" if args.min_count is None else args.min_count,
            )
            figures.update(gate_figure(tmp, report.get("abstention"), p, y, groups))
            images = ["", "## Figures", ""]
            for name, caption in figures.items():
                images += [f"### {caption}", "", f"![{caption}]({name})", ""]
            atomic_write(tmp / "report.md", text + "\n".join(images))
    except OSError as exc:
        raise UsageError(f"could not write to --plot {folder}: {exc}") from None
    # the figures' own warnings (groups left out of groups.png), in the
    # command's words
    for message in dict.fromkeys(one_line(w.message) for w in caught):
        message = message.replace("pass min_count=1", "--min-count 1 draws them")
        message = message.replace("min_count=", "--min-count ")
        print(f"betacal: warning: {message}", file=sys.stderr)
    return len(figures)


def emit_report(args, report, output, markdown_tail=""):
    """Print the report (and write it to ``output``) in ``--format`` (else
    the one ``output``'s name says, else Markdown); return its Markdown.

    ``markdown_tail``: lines that follow the Markdown report (the drift
    section of ``--against``).
    """
    fmt = args.format
    if fmt is None:  # from the --output name (_check_report_name)
        said = None if output is None else _REPORT_SUFFIXES.get(output.suffix.lower())
        fmt = said or "markdown"
    markdown = format_markdown(report) + markdown_tail
    text = format_json(report) if fmt == "json" else markdown
    if output is not None:
        try:
            atomic_write(output, text)
        except OSError as exc:
            raise UsageError(f"could not write --output {output}: {exc}") from None
    sys.stdout.write(text)
    if output is not None:
        print(f"betacal: wrote {output}", file=sys.stderr)
    return markdown


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
        try:
            frame = read_table(args.file, used, sep=args.sep)
        except TableReadError as exc:
            raise UsageError(str(exc)) from None
        source = str(args.file)
    output = None
    if args.output is not None:
        output = check_output(args.output, args.file, args.force)
        _check_report_name(output, args.format)
    plot_dir = None
    if args.plot is not None:
        plot_dir = _check_plot_dir(args.plot, args.force, args.file)
        if output is not None:
            _check_output_beside_plots(output, plot_dir)
    if args.per_cell and (args.max_error is None or args.group is None):
        raise UsageError("--per-cell needs --max-error and --group COL (the cells)")
    fmt = "percent" if args.percent else "verbalized" if args.verbalized else "number"
    p, y, groups, n_dropped, n_unparsed, n_empty = _check_columns(
        frame,
        confidence,
        label,
        args.group,
        args.dropna,
        fmt=fmt,
        pos_label=args.pos_label,
        options=verbalized_options(args),
    )
    report = {
        "input": {
            "source": source,
            "confidence": confidence,
            "label": label,
            "group": args.group,
            "confidence_format": fmt,
            "n_dropped": n_dropped,
            "n_unparsed": n_unparsed,
            "n_empty": n_empty,
        },
        **compute_report(
            p,
            y,
            cells=groups,
            n_bins=args.n_bins,
            strategy=args.strategy,
            min_count=args.min_count,
        ),
    }
    if args.max_error is not None:
        report["abstention"] = report_gate(p, y, groups, args)
    markdown = emit_report(args, report, output)
    if plot_dir is not None:
        n = _write_plots(plot_dir, report, markdown, p, y, groups, args)
        print(
            f"betacal: wrote report.md and {n} figures to {plot_dir}", file=sys.stderr
        )
    return EXIT_OK
