# SPDX-License-Identifier: MIT
"""AbstentionGate: validity, power and cost on real logs; MAPIE beside it.

For each real set (the bundled TriviaQA log, and the Influences study's
``0_shot`` rows when the shared data is present) and each repetition, the
questions are split in two (all answers of a question on one side): the
*calibration* questions fit the gate (which splits them again: half fit the
calibrator, half certify), the *test* questions judge it. The confidence is
the token probability of the answer (``extracted_seq_prob``); the cells are
the models (TriviaQA) or the QA datasets (Influences).

Reported per set, over the repetitions (rate +- its standard error):

* validity: the mean realised error of the answered test rows, and the
  share of repetitions in which it exceeds ``max_error`` -- globally, and in any cell for the
  per-cell gates -- beside a naive threshold (the lowest one whose error on
  the calibration rows is at most ``max_error``, read off the risk-coverage
  curve of the gate's own calibrator) and MAPIE's
  ``BinaryClassificationController`` (precision >= 1 - max_error, LTT with
  Hoeffding-Bentkus p-values and Bonferroni-Holm over its 100 thresholds,
  the coverage-maximising choice), when MAPIE is installed. The global gate
  is run twice: with the question groups (the test is made on questions)
  and with the answers taken as independent rows. The test rows
  are finite, so even a valid gate's realised error scatters around its
  population error: the rates include that noise.
* power: the coverage of the answered test rows, and the coverage of the
  oracle threshold (the lowest threshold whose error on the *test* rows
  themselves is at most ``max_error``), per cell with n >= 2,000
  certification rows.
* cost (``--cost``): the gate's fit / the wrapped calibrator's fit on the
  same rows, and the gate's predict / the calibrator's predict_proba,
  interleaved in one process (medians), the load average stated.

Usage::

    python benchmarks/bench_abstention.py [--reps 50] [--data DIR] [--cost]
"""

import argparse
import warnings

import numpy as np
from _measure import (
    RESULTS,
    add_data_argument,
    data_dir,
    header,
    load_average,
    load_influences,
    markdown_table,
    median_times,
    write_result,
)
from sklearn.model_selection import GroupShuffleSplit

from sklearn_betacal import (
    AbstentionGate,
    BetaBinningCalibrator,
    GroupColumnPartitioner,
    UMDBinner,
)
from sklearn_betacal.metrics import risk_coverage_curve

CONF = "extracted_seq_prob"


def _mapie():
    try:
        from mapie.risk_control import BinaryClassificationController
    except ImportError:
        return None
    return BinaryClassificationController


def naive_threshold(p, y, alpha):
    """The lowest threshold whose error on ``(p, y)`` is at most ``alpha``."""
    coverage, risk, t = risk_coverage_curve(y, p)
    ok = np.flatnonzero(risk <= alpha)
    return t[ok[-1]] if ok.size else np.inf


def oracle_coverage(p, y, alpha):
    """Coverage of the threshold chosen on the judged rows themselves."""
    coverage, risk, _ = risk_coverage_curve(y, p)
    ok = np.flatnonzero(risk <= alpha)
    return float(coverage[ok[-1]]) if ok.size else 0.0


def _errors(answer, wrong, cells):
    """Realised error of the answered rows, overall and per cell (0: none)."""
    overall = float(wrong[answer].mean()) if answer.any() else 0.0
    per = {}
    for c in np.unique(cells):
        a = answer & (cells == c)
        per[c] = float(wrong[a].mean()) if a.any() else 0.0
    return overall, per


def one_split(frame, cell_col, group_col, alpha, delta, seed, points_per_bin):
    X = frame[[CONF, cell_col]]
    y = frame["correct_judge"].to_numpy()
    q = frame[group_col].to_numpy()
    cal_rows, test = next(
        GroupShuffleSplit(1, test_size=0.5, random_state=seed).split(X, y, q)
    )
    Xc, yc, Xt, yt = X.iloc[cal_rows], y[cal_rows], X.iloc[test], y[test]
    cells_t = Xt[cell_col].to_numpy()
    wrong = 1 - yt
    bb = BetaBinningCalibrator(GroupColumnPartitioner(), points_per_bin=points_per_bin)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        gates = {
            "global": AbstentionGate(
                bb, max_error=alpha, delta=delta, random_state=seed
            ),
            "global, answers taken as independent": AbstentionGate(
                bb, max_error=alpha, delta=delta, random_state=seed
            ),
            "per-cell (all cells at once)": AbstentionGate(
                bb, max_error=alpha, delta=delta, per_cell=True, random_state=seed
            ),
            "per-cell (each cell)": AbstentionGate(
                bb,
                max_error=alpha,
                delta=delta,
                per_cell=True,
                simultaneous=False,
                random_state=seed,
            ),
        }
        for name, gate in gates.items():
            # the question groups keep a question on one side and (where a
            # cell holds several answers to one question) make the test one
            # of questions; "taken as independent" counts rows instead
            independent = name.endswith("as independent")
            gate.fit(Xc, yc, groups=None if independent else q[cal_rows])
    p_t = gates["global"].predict_proba(Xt)[:, 1]
    for name, gate in gates.items():
        answer = gate.predict(Xt)
        overall, per = _errors(answer, wrong, cells_t)
        out[name] = {
            "coverage": float(answer.mean()),
            "error": overall,
            "viol_global": overall > alpha,
            "viol_any_cell": max(per.values()) > alpha,
            "n_certify_min": float(gate.n_certify_.min()),
        }
    # naive: the global gate's calibrator, its curve on the calibration rows
    cal = gates["global"].calibrator_
    p_c = cal.predict_proba(Xc)[:, 1]
    t = naive_threshold(p_c, yc, alpha)
    answer = p_t >= t
    overall, per = _errors(answer, wrong, cells_t)
    out["naive (global)"] = {
        "coverage": float(answer.mean()),
        "error": overall,
        "viol_global": overall > alpha,
        "viol_any_cell": max(per.values()) > alpha,
    }
    # naive per cell: each cell's own curve
    cells_c = Xc[cell_col].to_numpy()
    answer = np.zeros(len(yt), dtype=bool)
    for c in np.unique(cells_t):
        tc = naive_threshold(p_c[cells_c == c], yc[cells_c == c], alpha)
        answer |= (cells_t == c) & (p_t >= tc)
    overall, per = _errors(answer, wrong, cells_t)
    out["naive (per cell)"] = {
        "coverage": float(answer.mean()),
        "error": overall,
        "viol_global": overall > alpha,
        "viol_any_cell": max(per.values()) > alpha,
    }
    # oracle per cell (the power reference), for the per-cell gates
    pc = gates["per-cell (each cell)"]
    ans_pc = pc.predict(Xt)
    power = []
    for j, c in enumerate(pc.cells_):
        rows = cells_t == str(c) if cells_t.dtype.kind in "OU" else cells_t == c
        if not rows.any():
            rows = pc.calibrator_.apply(Xt) == c
        power.append(
            (
                float(pc.n_certify_[j]),
                float(ans_pc[rows].mean()),
                oracle_coverage(p_t[rows], yt[rows], alpha),
            )
        )
    out["power"] = power
    out["oracle (global)"] = {"coverage": oracle_coverage(p_t, yt, alpha)}
    Controller = _mapie()
    if Controller is not None:
        # MAPIE with the same roles: a calibrator on half of the calibration
        # questions, its certification on the other half
        a, b = next(
            GroupShuffleSplit(1, test_size=0.5, random_state=seed).split(
                Xc, yc, q[cal_rows]
            )
        )
        cal_m = BetaBinningCalibrator(
            GroupColumnPartitioner(), points_per_bin=points_per_bin
        ).fit(Xc.iloc[a], yc[a])
        ctrl = Controller(
            cal_m.predict_proba,
            "precision",
            1 - alpha,
            confidence_level=1 - delta,
            best_predict_param_choice="predicted_positive_fraction",
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                ctrl.calibrate(Xc.iloc[b], yc[b])
                answer = np.asarray(ctrl.predict(Xt)).astype(bool)
            except ValueError:  # no threshold controls the risk
                answer = np.zeros(len(yt), dtype=bool)
        overall, per = _errors(answer, wrong, cells_t)
        out["MAPIE BinaryClassificationController"] = {
            "coverage": float(answer.mean()),
            "error": overall,
            "viol_global": overall > alpha,
            "viol_any_cell": max(per.values()) > alpha,
        }
    return out


def _rate(flags):
    r = float(np.mean(flags))
    return f"{r:.3f} +- {np.sqrt(r * (1 - r) / len(flags)):.3f}"


def summarise(name, runs, alpha, delta):
    methods = [m for m in runs[0] if m not in ("power", "oracle (global)")]
    rows = []
    for m in methods:
        cov = [r[m]["coverage"] for r in runs]
        err = [r[m]["error"] for r in runs if "error" in r[m] and r[m]["coverage"] > 0]
        rows.append(
            [
                m,
                f"{np.mean(cov):.3f}",
                f"{np.mean(err):.3f}" if err else "",
                _rate([r[m]["viol_global"] for r in runs]),
                _rate([r[m]["viol_any_cell"] for r in runs]),
            ]
        )
    rows.append(
        [
            "oracle (global, on the test rows)",
            f"{np.mean([r['oracle (global)']['coverage'] for r in runs]):.3f}",
            "",
            "",
            "",
        ]
    )
    lines = [
        f"### {name}: max_error {alpha}, delta {delta}, {len(runs)} splits",
        "",
        *markdown_table(
            [
                "method",
                "mean coverage (test)",
                "mean test error of the answers",
                "P(test error > max_error)",
                "P(some cell's test error > max_error)",
            ],
            rows,
            align="lrrrr",
        ),
        "",
    ]
    big = [pt for r in runs for pt in r["power"] if pt[0] >= 2000]
    if big:
        gap = np.array([o - g for _, g, o in big])
        lines += [
            f"Power, per-cell gate (each cell) in cells with >= 2,000 "
            f"certification rows ({len(big)} cell-splits): coverage "
            f"{np.mean([g for _, g, _ in big]):.3f} vs the oracle's "
            f"{np.mean([o for _, _, o in big]):.3f}; gap {100 * gap.mean():.1f} "
            f"pp (median {100 * np.median(gap):.1f}, max {100 * gap.max():.1f}).",
            "",
        ]
    return lines


def cost(repeats):
    """Gate fit / calibrator fit, gate predict / calibrator predict_proba."""
    rng = np.random.default_rng(0)
    n = 200_000
    h = rng.beta(4, 1, size=n)
    g = rng.integers(0, 8, size=n)
    y = (rng.uniform(size=n) < h).astype(int)
    X = np.column_stack([h, g]).astype(np.float64)
    rows = []
    cases = {
        "UMDBinner(n_bins=50), global": (UMDBinner(n_bins=50), h, False),
        "BB(group column, b=200), per cell": (
            BetaBinningCalibrator(GroupColumnPartitioner(), points_per_bin=200),
            X,
            True,
        ),
    }
    for name, (cal, Xn, per_cell) in cases.items():
        gate = AbstentionGate(cal, per_cell=per_cell, random_state=0)
        fitted_cal = cal.fit(Xn, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            gate.fit(Xn, y)
            t = median_times(
                {
                    "cal_fit": lambda c=cal, Xn=Xn: c.fit(Xn, y),
                    "gate_fit": lambda gt=gate, Xn=Xn: gt.fit(Xn, y),
                },
                repeats,
                warmup=1,
                cpu=True,
            )
        tp = median_times(
            {
                "cal_predict": lambda c=fitted_cal, Xn=Xn: c.predict_proba(Xn),
                "gate_predict": lambda gt=gate, Xn=Xn: gt.predict(Xn),
            },
            repeats,
            warmup=1,
            cpu=True,
        )
        # CPU seconds of this process: on a loaded machine the wall clock
        # also counts the other processes' time slices
        t = {k: v[1] for k, v in t.items()}
        tp = {k: v[1] for k, v in tp.items()}
        rows.append(
            [
                name,
                f"{t['cal_fit']:.3f}",
                f"{t['gate_fit']:.3f}",
                f"{t['gate_fit'] / t['cal_fit']:.2f}",
                f"{tp['cal_predict']:.3f}",
                f"{tp['gate_predict']:.3f}",
                f"{tp['gate_predict'] / tp['cal_predict']:.2f}",
            ]
        )
    return [
        f"### Cost ({n:,} rows, 8 groups; median CPU seconds of {repeats} "
        f"interleaved rounds; load average {load_average()})",
        "",
        *markdown_table(
            [
                "calibrator",
                "calibrator fit s",
                "gate fit s",
                "ratio (goal <= 2)",
                "calibrator predict_proba s",
                "gate predict s",
                "ratio (goal <= 1.2)",
            ],
            rows,
            align="lrrrrrr",
        ),
        "",
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--influences-reps", type=int, default=20)
    parser.add_argument("--cost", action="store_true", help="also time fit/predict")
    parser.add_argument("--cost-repeats", type=int, default=5)
    parser.add_argument("--output", default=str(RESULTS / "abstention.md"))
    add_data_argument(parser)
    args = parser.parse_args(argv)

    from sklearn_betacal.datasets import load_triviaqa_confidence

    lines = ["# AbstentionGate: validity, power, cost", ""]
    lines += header("MAPIE", prefix="").splitlines()
    lines += [f"load average at start: {load_average()}", ""]
    tqa = load_triviaqa_confidence().frame.dropna(subset=[CONF])
    runs = [
        one_split(tqa, "model", "question_id", 0.3, 0.1, seed, 50)
        for seed in range(args.reps)
    ]
    lines += summarise("Bundled TriviaQA (12 models as cells)", runs, 0.3, 0.1)
    root = data_dir(args.data, required=False)
    if root is not None and args.influences_reps > 0:
        inf = load_influences(root, prompt_style="0_shot").dropna(subset=[CONF])
        inf = inf.reset_index(drop=True)
        runs = [
            one_split(inf, "dataset", "question", 0.2, 0.1, seed, 200)
            for seed in range(args.influences_reps)
        ]
        lines += summarise(
            "Influences study, 0_shot rows (4 QA datasets as cells)", runs, 0.2, 0.1
        )
    else:
        lines += ["Influences study: not found (pass --data), skipped.", ""]
    if args.cost:
        lines += cost(args.cost_repeats)
    lines += [f"load average at the end: {load_average()}"]
    write_result(args.output, lines)


if __name__ == "__main__":
    main()
