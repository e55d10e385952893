# SPDX-License-Identifier: MIT
"""The abstention gate in the CLI: ``--max-error``, ``--delta``, ``--per-cell``.

- ``betacal fit ... --max-error A [--delta D] [--per-cell]`` wraps the
  calibrator in :class:`~sklearn_betacal.AbstentionGate` (fitted on half of
  the rows, the other half certifies) and stores the gate in the model file;
- ``betacal apply`` then adds an ``answer`` column and an
  ``abstain_reason`` column (``below threshold`` / ``uncertifiable cell`` /
  ``no confidence``);
- ``betacal report FILE ... --max-error A [--per-cell --group COL]``
  certifies a threshold on the file's (already calibrated) confidences and
  shows the risk-coverage curve with the chosen operating point.

The subcommands call in here through a few functions, so their own modules
only gain one line each.
"""

import numpy as np

from ._common import UsageError, one_line, open_unit

#: Columns ``betacal apply`` adds for a gate.
ANSWER, REASON = "answered", "abstain_reason"
NO_CONFIDENCE = "no confidence"


def add_gate_flags(parser, *, report=False):
    """The gate's flags, in one block, for ``fit`` and ``report``."""
    group = parser.add_argument_group(
        "abstention gate",
        "answer only above a threshold certified so that, with probability "
        ">= 1 - DELTA, at most a share ERROR of the answers is wrong "
        "(AbstentionGate)",
    )
    group.add_argument(
        "--max-error",
        type=open_unit,
        metavar="ERROR",
        help="target error rate of the answered questions, e.g. 0.1"
        + (
            " (the confidences are read as calibrated ones)"
            if report
            else "; the model file then holds the gate (half of the rows "
            "fit the calibrator, half certify the threshold)"
        ),
    )
    group.add_argument(
        "--delta",
        type=open_unit,
        default=0.05,
        metavar="DELTA",
        help="probability that the guarantee fails (default 0.05)",
    )
    group.add_argument(
        "--per-cell",
        action="store_true",
        help="one threshold per "
        + ("--group" if report else "cell of the calibrator's partition")
        + ", each certified (delta shared among them)",
    )


def check_gate_flags(args, *, has_cells):
    """Refuse ``--per-cell`` / ``--delta`` without ``--max-error``, and
    ``--per-cell`` where there are no cells."""
    if args.max_error is None:
        if args.per_cell:
            raise UsageError("--per-cell needs --max-error (the gate's target error)")
        return False
    if args.per_cell and not has_cells:
        raise UsageError(
            "--per-cell needs cells: a grouped method (bb, hs-bb, s-bb, hls) "
            "with --group or --text"
            if not hasattr(args, "n_bins")
            else "--per-cell needs --group COL (the cells)"
        )
    return True


def gate_estimator(est, args):
    """``est`` wrapped in the gate when ``--max-error`` is given."""
    if getattr(args, "max_error", None) is None:
        return est
    from .._abstention import AbstentionGate

    if args.per_cell and not hasattr(est, "apply"):
        raise UsageError(
            f"--per-cell needs a calibrator with cells; --method {args.method} "
            "has none (use a grouped method with --group or --text)"
        )
    return AbstentionGate(
        est,
        max_error=args.max_error,
        delta=args.delta,
        per_cell=args.per_cell,
        random_state=args.random_state,
    )


def is_gate(est):
    from .._abstention import AbstentionGate

    return isinstance(est, AbstentionGate)


def inner(est):
    """The calibrator of a gate (fitted), else ``est``."""
    return est.calibrator_ if is_gate(est) else est


def gate_metadata(est):
    """The gate's settings for the model file's header (``None``: no gate)."""
    if not is_gate(est):
        return None
    return {
        "max_error": float(est.max_error),
        "delta": float(est.delta),
        "per_cell": bool(est.per_cell),
    }


def print_gate_summary(est, out):
    """The certified threshold(s), their bounds and coverage, as ``fit`` prints."""
    if not is_gate(est):
        return
    cells = ["all"] if est.cells_ is None else [str(c) for c in est.cells_]
    print(
        f"abstention gate: max error {est.max_error:g}, delta {est.delta:g}"
        + (
            f" ({len(cells)} cells, {est.delta_per_cell_:.3g} each)"
            if est.cells_ is not None
            else ""
        ),
        file=out,
    )
    print("| cell | certify rows | threshold | answered | error bound |", file=out)
    print("|---|---:|---:|---:|---:|", file=out)
    for j, cell in enumerate(cells):
        if est.certified_[j]:
            row = (
                f"{est.thresholds_[j]:.4f} | {est.coverage_[j]:.1%} | "
                f"{est.risk_bounds_[j]:.4f}"
            )
        else:
            row = "none (abstains) | 0% | n/a"
        print(f"| {cell} | {est.n_certify_[j]:.0f} | {row} |", file=out)


def check_new_gate_columns(frame, column):
    """Refuse an input that already has a column the gate writes."""
    clash = [c for c in (ANSWER, REASON) if c in frame.columns and c != column]
    if clash or column in (ANSWER, REASON):
        name = clash[0] if clash else column
        raise UsageError(
            f"the model is an abstention gate, which adds the columns {ANSWER!r} "
            f"and {REASON!r}; {name!r} is already taken (rename the input's "
            "column, or name the calibrated one with --column NAME)"
        )


def gate_columns(est, X, ok, n):
    """``{answer, abstain_reason}`` for ``n`` rows; ``X`` holds the ``ok`` ones."""
    answer = np.zeros(n, dtype=bool)
    reason = np.full(n, NO_CONFIDENCE, dtype=object)
    if X is not None:
        answer[ok] = est.predict(X)
        reason[ok] = est.abstain_reason(X)
    return {ANSWER: answer, REASON: reason}


# ------------------------------------------------------------------ report
def _given():
    """The confidences of a file as a fitted "calibrator" of ``[h, cell]``.

    ``betacal report`` audits confidences that are already calibrated: the
    gate certifies a threshold on them as they are (a frozen calibrator).
    """
    from sklearn.base import BaseEstimator, ClassifierMixin

    class Given(ClassifierMixin, BaseEstimator):
        def fit(self, X, y=None):
            self.classes_ = np.array([0, 1])
            return self

        def predict_proba(self, X):
            p = np.asarray(X, dtype=np.float64)[:, 0]
            return np.column_stack([1.0 - p, p])

        def apply(self, X):
            return np.asarray(X)[:, 1].astype(np.int64)

    return Given().fit(None)


def report_gate(p, y, groups, args):
    """The report's "Abstention" section: the certified operating point(s)
    and the risk-coverage curve, as a dict for the JSON and Markdown."""
    import warnings

    from sklearn.frozen import FrozenEstimator

    from .._abstention import AbstentionGate
    from ..metrics import risk_coverage_curve

    per_cell = bool(args.per_cell)
    codes, names = np.zeros(len(p), dtype=np.int64), ["all"]
    if per_cell:
        names, codes = np.unique(np.asarray(groups).astype(str), return_inverse=True)
        names = [str(v) for v in names]
    X = np.column_stack([p, codes])
    gate = AbstentionGate(
        FrozenEstimator(_given()),
        max_error=args.max_error,
        delta=args.delta,
        per_cell=per_cell,
        random_state=0,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            gate.fit(X, np.asarray(y, dtype=np.int64))
        except ValueError as exc:
            raise UsageError(f"--max-error: {one_line(exc)}") from None
    cells = [0] if gate.cells_ is None else gate.cells_.tolist()
    points = []
    for j, c in enumerate(cells):
        certified = bool(gate.certified_[j])
        points.append(
            {
                "cell": names[c] if per_cell else "all",
                "n_certify": int(gate.n_certify_[j]),
                "threshold": float(gate.thresholds_[j]) if certified else None,
                "coverage": float(gate.coverage_[j]),
                "error_bound": float(gate.risk_bounds_[j]) if certified else None,
            }
        )
    coverage, risk, thresholds = risk_coverage_curve(y, p)
    marks = np.linspace(0.1, 1.0, 10)
    at = np.minimum(np.searchsorted(coverage, marks - 1e-12), len(coverage) - 1)
    curve = [
        {
            "coverage": float(coverage[i]),
            "error": float(risk[i]),
            "threshold": float(thresholds[i]),
        }
        for i in dict.fromkeys(at.tolist())
    ]
    naive = np.flatnonzero(risk <= args.max_error)
    return {
        "max_error": float(args.max_error),
        "delta": float(args.delta),
        "per_cell": per_cell,
        "note": (
            "certified on half of the rows (the other half places the "
            "thresholds) with the confidences read as calibrated"
        ),
        "operating_points": points,
        "naive_threshold": (float(thresholds[naive[-1]]) if naive.size else None),
        "risk_coverage": curve,
        "warnings": [one_line(w.message) for w in caught],
    }


def format_gate(section):
    """The "Abstention" section of the Markdown report."""
    if section is None:
        return []
    lines = [
        "",
        f"## Abstention (max error {section['max_error']:g}, delta "
        f"{section['delta']:g})",
        "",
        "| cell | certify rows | threshold | coverage | error bound |",
        "|---|---:|---:|---:|---:|",
    ]
    for pt in section["operating_points"]:
        if pt["threshold"] is None:
            lines.append(
                f"| {pt['cell']} | {pt['n_certify']} | none: always abstains "
                "(uncertifiable) | 0% | n/a |"
            )
        else:
            lines.append(
                f"| {pt['cell']} | {pt['n_certify']} | {pt['threshold']:.4f} | "
                f"{pt['coverage']:.1%} | {pt['error_bound']:.4f} |"
            )
    naive = section["naive_threshold"]
    lines += [
        "",
        "Certified: with probability >= 1 - delta the error rate of the "
        "answered questions is at most the bound; "
        + section["note"]
        + ". A threshold read off the curve below (error <= max error on all "
        "rows: "
        + ("none" if naive is None else f"{naive:.4f}")
        + ") carries no such guarantee.",
        "",
        "| coverage | error of the answers | threshold |",
        "|---:|---:|---:|",
    ]
    for row in section["risk_coverage"]:
        lines.append(
            f"| {row['coverage']:.1%} | {row['error']:.4f} | {row['threshold']:.4f} |"
        )
    return lines


def gate_figure(out_dir, section, p, y, groups):
    """``abstention.png`` (:class:`~sklearn_betacal.AbstentionDisplay`) of
    the report's certified operating points; ``{}`` without ``--max-error``."""
    if section is None:
        return {}
    import matplotlib.pyplot as plt

    from ..metrics._plot.abstention import AbstentionDisplay
    from ._panels import save_png

    thresholds = {
        pt["cell"]: np.inf if pt["threshold"] is None else pt["threshold"]
        for pt in section["operating_points"]
    }
    cells = None
    if section["per_cell"]:
        cells = np.asarray(groups).astype(str)
    else:
        thresholds = thresholds["all"]
    disp = AbstentionDisplay.from_predictions(
        y,
        p,
        cells=cells,
        thresholds=thresholds,
        max_error=section["max_error"],
        delta=section["delta"],
    )
    save_png(disp.figure_, out_dir / "abstention.png")
    plt.close(disp.figure_)
    return {"abstention.png": "abstention: risk-coverage, certified bound, threshold"}
