# SPDX-License-Identifier: MIT
"""``betacal demo``: the paper's protocol on the bundled TriviaQA data.

Runs :func:`sklearn_betacal.cli._protocol.run_protocol` on the bundled
confidences of twelve instruction-tuned LLMs (all models pooled), for the
verbalized and the token-probability confidence, over a few seeds; prints the
comparison table and writes a report folder: ``report.md`` (tables, chosen
hyper-parameters, how to read them) and, when matplotlib is installed,
figures drawn with the displays for every calibrator: reliability diagrams,
the calibration error of every answering model and the worst models'
diagrams, and the selective-answering curves.

The protocol and the plotting code are imported when the command runs, so
that ``betacal --help`` stays fast.
"""

import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .._io import atomic_report_folder, atomic_write
from ._common import EXIT_OK, UsageError, check_writable_folder


class _Progress:
    """A progress bar on a stream (stderr), no dependency.

    In a terminal it redraws one line in place (carriage return, then
    clear-to-end-of-line so a shorter label leaves no residue). When the
    stream is piped or redirected it writes a plain line about every tenth
    of the work, never control characters.
    """

    def __init__(self, total, stream=None, width=28):
        stream = sys.stderr if stream is None else stream
        self.total, self.done, self.stream, self.width = total, 0, stream, width
        self.start = time.perf_counter()
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.every = max(1, round(total / 10))

    def step(self, label):
        self.done += 1
        frac = self.done / self.total
        bar = "#" * int(frac * self.width)
        elapsed = time.perf_counter() - self.start
        line = f"[{bar:<{self.width}}] {self.done}/{self.total} {label} {elapsed:.0f}s"
        if self.tty:
            self.stream.write("\r" + line + "\x1b[K")
            if self.done == self.total:
                self.stream.write("\n")
        elif self.done == self.total or self.done % self.every == 0:
            self.stream.write(line + "\n")
        self.stream.flush()


def demo_frame():
    """The bundled TriviaQA records with text columns ready for embedding."""
    from ..datasets import load_triviaqa_confidence

    frame = load_triviaqa_confidence().frame.copy()
    frame["answer"] = frame["answer"].fillna("").astype(str)
    return frame


def run_demo(
    *, seeds=4, kinds=("verbal", "token"), config=None, progress=True, n_jobs=1
):
    """Run the protocol on the bundled data; return (summary, results, preds).

    ``preds`` maps each confidence kind to the test-split predictions of
    every seed pooled (each row a held-out prediction of its seed's split):
    ``"_y"``, ``"_groups"`` (the answering model) and one array per
    calibrator, used for the figures. ``n_jobs`` runs the (kind, seed) runs
    in that many worker processes (``-1``: one per core), each with
    ``config.blas_threads`` BLAS threads (one by default), so the cores are
    never oversubscribed; the tables do not depend on ``n_jobs``.
    """
    import pandas as pd

    from ._parallel import parallel_map
    from ._protocol import CONFIDENCE_COLUMNS, ProtocolConfig, summarize

    frame = demo_frame()
    # All twelve models pooled; the answering model is part of beta (crossed
    # with every kd-tree), as in the pooled rows of the paper experiment.
    config = config or ProtocolConfig(group_column="model")
    bar = _Progress(len(kinds) * seeds * len(config.calibrators)) if progress else None
    tasks = []
    for kind in kinds:
        column = CONFIDENCE_COLUMNS[kind]
        rows = frame[frame[column].between(0, 1)]
        tasks += [(kind, rows, column, seed, config) for seed in range(seeds)]

    def step(label):
        if bar is not None:
            bar.step(label)

    if n_jobs == 1:
        runs = (
            _one_run(
                *task, on_step=lambda name, t=task: step(f"{t[0]} seed {t[3]} {name}")
            )
            for task in tasks
        )
    else:  # run_protocol limits each worker's BLAS threads itself
        runs = parallel_map(_one_run, tasks, n_jobs=n_jobs, threads_per_job=None)
    frames, pooled, other = [], {}, []
    for (kind, _, _, seed, _), (res, preds, outside) in zip(tasks, runs, strict=True):
        other.append(outside)
        if n_jobs != 1:  # a worker's run is reported when it ends
            for name in config.calibrators:
                step(f"{kind} seed {seed} {name}")
        res.insert(0, "kind", kind)
        frames.append(res)
        for key, values in preds.items():
            pooled.setdefault(kind, {}).setdefault(key, []).append(values)
    results = pd.concat(frames, ignore_index=True)
    # warnings raised outside any calibrator (embedding, partitions): reported
    # once by format_warnings, like the calibrators' own
    results.attrs["other_warnings"] = other
    summary = summarize(results, by=("kind", "calibrator"))
    preds = {
        kind: {key: np.concatenate(parts) for key, parts in p.items()}
        for kind, p in pooled.items()
    }
    return summary, results, preds


def _one_run(kind, rows, column, seed, config, on_step=None):
    """One (confidence kind, seed) run of the protocol (a picklable task).

    Returns ``(results, predictions, warnings)``: the calibrators' warnings
    are in ``results``; ``warnings`` holds the others as ``"Category:
    message"`` strings, recorded instead of shown so that they never break
    the progress bar.
    """
    from ._protocol import recorded_warnings, run_protocol

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res, preds = run_protocol(
            rows, column, seed=seed, config=config, on_step=on_step
        )
    return res, preds, recorded_warnings(caught)


def _tuned_by(results):
    names = {"beta_ce": "the debiased CE(h;β)", "auac": "AUAC (the paper's choice)"}
    used = results["tune_by"].unique() if "tune_by" in results else ["auac"]
    return " / ".join(names[u] for u in used)


def format_warnings(results):
    """Each distinct warning of the runs once, with the calibrators that raised it."""
    import pandas as pd

    from ._protocol import collect_warnings

    other = results.attrs.get("other_warnings", [])
    runs = pd.DataFrame({"calibrator": "data preparation", "warnings": other})
    found = collect_warnings(
        pd.concat([results[["calibrator", "warnings"]], runs], ignore_index=True)
    )
    return [
        f"warning ({names}; {runs} run{'s' if runs > 1 else ''}): {message}"
        for names, runs, message in found
    ]


def write_report(out_dir, summary, results, preds, *, seeds, elapsed):
    """Write ``report.md`` (+ PNG figures when matplotlib exists) atomically."""
    out_dir = Path(out_dir)
    # every file is written into a temporary folder beside OUT_DIR first: a
    # failure midway leaves OUT_DIR as it was (atomic_report_folder)
    with atomic_report_folder(out_dir) as tmp:
        _write_report_files(tmp, summary, results, preds, seeds=seeds, elapsed=elapsed)
    return out_dir / "report.md"


def _write_report_files(out_dir, summary, results, preds, *, seeds, elapsed):
    from ..metrics._plot._base import PLOT_EXTRA_HINT, have_matplotlib
    from ._protocol import ProtocolConfig, format_legend, format_table

    lines = [
        "# betacal demo: beta-calibration of LLM confidences (bundled TriviaQA)",
        "",
        "Data: TriviaQA test questions answered by 12 instruction-tuned LLMs "
        "(Influences-on-LLM-Calibration study), all models pooled with the "
        "answering model part of beta (crossed with the kd-tree cells), "
        f"{seeds} seed(s), {elapsed:.0f} s.",
        "Protocol (paper Sec. 5): 20:60:10:10 split; kd-tree beta on a "
        "TF-IDF+SVD embedding of question + answer, fitted on the 20% split "
        "without labels; calibrators trained on the 60% split; kd-tree depth "
        f"and points-per-bin chosen by {_tuned_by(results)} on the 10% tuning "
        "split (GridSearchCV + PredefinedSplit); metrics on the last 10%.",
        "CE(h;β): per-cell binned calibration error on a fixed evaluation "
        f"beta (depth-{ProtocolConfig().eval_depth} kd-tree x model), weighted "
        "by cell size (App. A.1); floor: what perfectly calibrated "
        "confidences would score on the same cells and bins (noise); "
        "CE²(h;β) debiased: Kumar et al.'s unbiased squared error. "
        + (
            "Mean ± 95% t-interval over seeds; "
            if seeds >= 2
            else "One seed: no interval; "
        )
        + "best in bold.",
        "",
    ]
    for kind, block in summary.groupby("kind", sort=False):
        lines += [f"## {kind} confidence", "", format_table(block), ""]
    lines += ["Methods:", "", *format_legend(summary["calibrator"].unique()), ""]
    warned = format_warnings(results)
    if warned:
        lines += ["## Warnings (each once)", "", *[f"- {w}" for w in warned], ""]
    lines += ["## Chosen hyper-parameters (per seed)", ""]
    chosen = results[results.best_params != ""][
        ["kind", "seed", "calibrator", "best_params"]
    ]
    lines += ["| kind | seed | calibrator | chosen |", "|---|---|---|---|"]
    lines += [
        f"| {r.kind} | {r.seed} | {r.calibrator} | {r.best_params} |"
        for r in chosen.itertuples()
    ]
    lines.append("")
    if have_matplotlib():
        lines += [
            "## Figures",
            "",
            f"Test rows of all {seeds} seed(s) pooled (each a held-out "
            "prediction); groups are the answering models; every calibrator, "
            "shared axes.",
            "",
        ]
        written, notes = _write_figures(out_dir, preds)
        lines += [f"- {note}" for note in notes] + ([""] if notes else [])
        for name, caption in written.items():
            lines += [f"### {caption}", "", f"![{caption}]({name})", ""]
    else:
        lines += [f"(No figures: {PLOT_EXTRA_HINT}.)", ""]
    atomic_write(out_dir / "report.md", "\n".join(lines))


def _write_figures(out_dir, preds):
    """Figures per confidence kind; returns ``({file: caption}, notes)``."""
    from ._panels import demo_figures

    written, notes = {}, []
    for kind, p in preds.items():
        # the raw confidence first: it orders the groups in the figures
        names = sorted(
            (k for k in p if not k.startswith("_")), key=lambda k: k != "None"
        )
        curves = {name: p[name] for name in names}
        groups = p.get("_groups", p["_cells"])
        files, why = demo_figures(out_dir, kind, p["_y"], curves, groups)
        written.update(files)
        notes += why
    return written, notes


def add_demo(subparsers):
    parser = subparsers.add_parser(
        "demo",
        help="the paper's protocol on the bundled data (the main job)",
        description=(
            "Runs the beta-calibration protocol of the paper (20:60:10:10 split, "
            "kd-tree beta on text embeddings, GridSearchCV tuning by the debiased "
            "beta-CE, or by AUAC as the paper does) on the "
            "bundled TriviaQA confidences of 12 LLMs, prints the comparison table "
            "and writes a report folder: Markdown, and PNG figures when "
            "matplotlib is installed (reliability diagrams, calibration error "
            "per model, selective curves; every calibrator, shared axes)."
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
        "--n-jobs",
        type=int,
        default=1,
        metavar="N",
        help="run the (kind, seed) runs in N worker processes, one BLAS thread "
        "each (-1: one per core); the tables do not change (1)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress bar on stderr"
    )
    parser.add_argument(
        "--write-log",
        type=Path,
        metavar="FILE",
        help="instead of the protocol: write a raw answer log (question, "
        "model, raw response text, yes/no label) of --rows bundled answers to "
        "FILE (CSV or Parquet), the input of the day in docs/cli.rst",
    )
    parser.add_argument(
        "--rows",
        type=int,
        default=5000,
        metavar="N",
        help="rows of --write-log (5000)",
    )
    parser.add_argument("--random-state", type=int, default=0, metavar="N")
    parser.add_argument("--force", action="store_true", help="replace --write-log")
    parser.set_defaults(func=_run_demo)


def _write_log(args):
    from ._common import check_output

    out = check_output(args.write_log, None, args.force, name="--write-log")
    suffix = out.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise UsageError(f"--write-log {out}: give a .csv or .parquet file name")
    from ..datasets import make_raw_answer_log

    try:
        frame = make_raw_answer_log(args.rows, random_state=args.random_state)
    except ValueError as exc:
        raise UsageError(f"--rows: {exc}") from None
    if suffix == ".parquet":
        atomic_write(out, lambda fh: frame.to_parquet(fh, index=False))
    else:
        atomic_write(out, frame.to_csv(index=False))
    print(
        f"betacal: wrote a raw log of {len(frame)} answers to {out} (columns "
        "question, model, response, correct)",
        file=sys.stderr,
    )
    return EXIT_OK


def _run_demo(args):
    if args.write_log is not None:
        return _write_log(args)
    from ._protocol import ProtocolConfig, format_legend, format_table

    if args.seeds < 1:
        raise UsageError(f"--seeds must be a positive integer; got {args.seeds}")
    if args.n_jobs == 0 or args.n_jobs < -1:
        raise UsageError(
            f"--n-jobs must be a positive integer or -1; got {args.n_jobs}"
        )
    check_writable_folder(args.out, "--out")
    kinds = ("verbal", "token") if args.kind == "both" else (args.kind,)
    start = time.perf_counter()
    config = ProtocolConfig(group_column="model", tune_by=args.tune_by)
    summary, results, preds = run_demo(
        seeds=args.seeds,
        kinds=kinds,
        config=config,
        progress=not args.quiet,
        n_jobs=args.n_jobs,
    )
    elapsed = time.perf_counter() - start
    for warning in format_warnings(results):
        print(f"betacal: {warning}", file=sys.stderr)
    for kind, block in summary.groupby("kind", sort=False):
        print(f"\n## {kind} confidence ({args.seeds} seed(s))\n")
        print(format_table(block))
    print("\nMethods:")
    print("\n".join(format_legend(summary["calibrator"].unique())))
    path = write_report(
        args.out, summary, results, preds, seeds=args.seeds, elapsed=elapsed
    )
    print(f"\nbetacal: wrote {path} ({elapsed:.0f} s)", file=sys.stderr)
    return EXIT_OK
