# SPDX-License-Identifier: MIT
"""Which calibrator is the line users copy? One protocol over every set (issue 38).

Issue 38, items 1-3. The candidates for the recommended calibrator, side by
side in one process on the same rows of every real set we have and the
planted simulation, scored on the same held-out rows:

- ``UMD``: :class:`UMDBinner` (b = 50), the reference of every ratio;
- ``BB tree``: the previous release's one-liner
  ``BetaBinningCalibrator(CalibrationTreePartitioner(strategy="tree"))``;
- ``BB merge``: the one-liner with the merge default it was replaced by
  (``CalibrationTreePartitioner()`` while ``strategy="merge"`` is the
  default; the ``strategy`` is passed explicitly here);
- ``S-BB features cv=3 tree`` / ``... merge``:
  ``ScalingBetaBinningCalibrator(CalibrationTreePartitioner(strategy=...),
  scaler="features", cv=3)``; ``... unbinned``: the same fitted model's
  scaler output (``proxy_proba``: the mean of the three members' boosted
  probabilities, not binned), what the binning costs (item 3);
  ``... [lr05]``: its boosting with a slower rate and twice the rounds
  (``learning_rate=0.05, max_iter=600``, early stopping kept), item 3;
- ``MCGrad`` (mcgrad 0.1.5, a benchmark peer) on the same features, its
  early-stopping folds grouped by question where questions repeat;
- diagnostics, not candidates: ``BB ceiling`` (BB on the group a logistic
  regression predicts from the view, trained on the true groups of the
  training rows: what a partition of this view can reach) and ``BB
  oracle`` (BB on the true groups).

Every calibrator gets b = 50 (the package default) and ``random_state =
seed``; nothing is tuned (the line users copy is not tuned either).

Sets (the evaluation beta is hidden from every calibrator unless said):

- ``influences``: the Influences-on-LLM-Calibration study (verb prompt), per
  answering model and confidence kind (24 units), the four QA datasets
  pooled, **the dataset hidden**; the view is a 32-d TF-IDF+SVD of question +
  answer fitted on the training rows; 30 % of the *questions* held out
  (``GroupShuffleSplit``), as in ``peers_mcgrad.py`` (its loader).
- ``triviaqa``: the bundled TriviaQA log (12 models x 1,000 questions), per
  confidence kind; **the answering model hidden** (the view is the same
  TF-IDF+SVD of question + answer); 30 % of the questions held out.
- ``paper``: the paper's pooled rows (Sec. 5, ``paper_experiment.py``'s
  pooled configuration): per QA dataset and kind, all 12 models' answers
  together, the model's identity *visible* (one-hot beside the 32-d text
  view), beta = the answering model; 30 % of the questions held out.
- ``cifar``: CIFAR top-label (the five softmax record sets), features = the
  softmax row, beta = the predicted class, 50/50 split (``peers_mcgrad.py``).
- ``planted``: 16 planted groups of known truth in 32-d
  (``_planted.planted_groups``), beta = the planted group; adds the true CE.
  MCGrad is not run here (about 330 s per fit at this load; it reached 0.55x
  UMD against 0.29-0.32x for ours, ``feature_scaler.md``).

Scores on the test rows (``peers_mcgrad.scores``): plug-in beta-CE (l1, 10
bins per cell), debiased squared beta-CE, ECE, Brier, log loss, AUROC;
fit wall and CPU seconds (one BLAS/OpenMP/LightGBM thread). A unit is one
(set, seed). The protocol's verdict (written before the runs): every
candidate is compared with ``BB tree`` (the default it would replace) and
with ``MCGrad`` by the *paired* difference over units, mean +- standard
error, and the number of units it is better in. A default must not be worse
than ``BB tree`` by more than 2 standard errors on any score on any real set.

Usage::

    OMP_NUM_THREADS=1 nice -n 5 python benchmarks/studies/recommended.py \
        --studies influences --seeds 0 --csv benchmarks/results/recommended_inf.csv
    python benchmarks/studies/recommended.py --report benchmarks/results/recommended_*.csv

"""

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _measure import RESULTS, header, markdown_table  # noqa: E402
from peers_mcgrad import (  # noqa: E402
    Ours,
    Peer,
    _mcgrad,
    cifar_sets,
    influence_frame,
    influences_sets,
    planted_sets,
    scores,
)
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GroupShuffleSplit  # noqa: E402
from studies.feature_scaler import BOOSTINGS, boosting  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from sklearn_betacal import (  # noqa: E402
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    GroupColumnPartitioner,
    ScalingBetaBinningCalibrator,
    TextEmbedder,
    UMDBinner,
)
from sklearn_betacal.cli._protocol import CONFIDENCE_COLUMNS  # noqa: E402
from sklearn_betacal.datasets import load_triviaqa_confidence  # noqa: E402

B = 50
REFERENCE = "BB tree"
RECOMMENDED = "S-BB features cv=3 tree"
KINDS = CONFIDENCE_COLUMNS


class Unbinned(Ours):
    """The scaler output of another method's fitted S-BB (no binning): it
    reuses that fit, so its fit time is the other's."""

    def __init__(self, source):
        self.source = source

    def fit(self, h, Z, g, y, qid):
        self.model = self.source.model
        return self

    def predict(self, h, Z, g):
        return self.model.proxy_proba(self.source._X(h, Z, g))


class Lr05(Ours):
    """An S-BB features method fitted with the boosting of ``[lr05]``."""

    def fit(self, h, Z, g, y, qid):
        with boosting(BOOSTINGS["lr05"]):
            return super().fit(h, Z, g, y, qid)


class Ceiling(Ours):
    """BB on the group a logistic regression on the view predicts, trained
    on the training rows' true groups (what the view can tell)."""

    def fit(self, h, Z, g, y, qid):
        self.clf = LogisticRegression(max_iter=500).fit(Z, g)
        return super().fit(h, Z, self.clf.predict(Z), y, qid)

    def predict(self, h, Z, g):
        return super().predict(h, Z, self.clf.predict(Z))


# ------------------------------------------------ question groups (emulated)
def _group_cut(groups, fraction, rng):
    """Rows of whole groups holding about ``fraction`` of the rows, and the
    others (the groups in one random order)."""
    codes = np.unique(groups, return_inverse=True)[1].reshape(-1)
    order = rng.permutation(int(codes.max()) + 1)
    sizes = np.bincount(codes)[order]
    take = int(np.searchsorted(np.cumsum(sizes), fraction * len(codes))) + 1
    first = np.zeros(len(sizes), dtype=bool)
    first[order[: min(take, len(sizes) - 1)]] = True
    inside = first[codes]
    return np.flatnonzero(inside), np.flatnonzero(~inside)


class _Grouped:
    """Every internal split by question (what issue 38 item 4 routes as
    ``fit(X, y, groups=...)``; emulated here, on this branch, so that the
    protocol can measure it): the learned partition's honest split, the
    ``cv`` folds hold whole questions (the boosting's early-stopping rows
    inside a fold stay row-wise)."""

    def fit(self, X, y, groups=None):
        self._study_groups = None if groups is None else np.asarray(groups)
        self._bin_groups = self._study_groups
        try:
            return super().fit(X, y)
        finally:
            del self._study_groups

    def _fit_plan(self, part, n_rows, sample_weight):
        plan = super()._fit_plan(part, n_rows, sample_weight)
        if self._study_groups is None or plan.bin_rows is None:
            return plan
        frac = part.honest_fraction if hasattr(part, "honest_fraction") else 0.5
        rng = np.random.RandomState(self.random_state)
        grow, rows = _group_cut(self._study_groups, frac, rng)
        self._bin_groups = self._study_groups[rows]
        return plan._replace(grow_rows=grow, bin_rows=rows)


class GroupedSBB(_Grouped, ScalingBetaBinningCalibrator):
    def _fit_folds(self, X, h, y, sample_weight, cells):
        from sklearn.base import clone

        from sklearn_betacal._scaling_beta_binning import _TEMPLATE_STATE

        groups = getattr(self, "_bin_groups", None)
        if groups is None:
            return super()._fit_folds(X, h, y, sample_weight, cells)
        k = int(self.cv)
        rng = np.random.RandomState(self.random_state)
        codes = np.unique(groups, return_inverse=True)[1].reshape(-1)
        fold_of = rng.permutation(int(codes.max()) + 1) % k
        folds = [np.flatnonzero(fold_of[codes] == j) for j in range(k)]
        shared = {key: v for key, v in vars(self).items() if key in _TEMPLATE_STATE}
        view = self._fit_view(X)
        members = []
        for j in range(k):
            member = clone(self).set_params(cv=None)
            member.__dict__.update(shared)
            member._fallback_counts = []
            d1 = np.sort(np.concatenate(folds[:j] + folds[j + 1 :]))
            members.append(
                member._fit_split(
                    X, h, y, sample_weight, cells, d1, folds[j], rng, view
                )
            )
            del member._fallback_counts
        self.estimators_ = members
        self.nu_ = max(m.nu_ for m in members)
        self.points_per_bin_ = max(m.points_per_bin_ for m in members)
        return self


class GroupedBB(_Grouped, BetaBinningCalibrator):
    pass


class OursGrouped(Ours):
    """One of ours fitted with the question groups (``qid``) where given."""

    def fit(self, h, Z, g, y, qid):
        self.model = self.make().fit(self._X(h, Z, g), y, groups=qid)
        return self


def _tree(strategy):
    """``CalibrationTreePartitioner`` with ``strategy`` where the build has
    the parameter (the merge strategy was retired after this protocol ran;
    on later builds the tree is the only one and the merge arms are left out)."""
    if "strategy" in CalibrationTreePartitioner().get_params():
        return CalibrationTreePartitioner(strategy=strategy)
    return CalibrationTreePartitioner()


#: the build still has the merge strategy (the snapshot the protocol ran on)
HAS_MERGE = "strategy" in CalibrationTreePartitioner().get_params()


def candidates(seed, MCGrad, mcgrad=True):
    def bb(strategy):
        return lambda: BetaBinningCalibrator(
            _tree(strategy),
            points_per_bin=B,
            random_state=seed,
        )

    def sbb(strategy):
        return lambda: ScalingBetaBinningCalibrator(
            _tree(strategy),
            scaler="features",
            cv=3,
            points_per_bin=B,
            random_state=seed,
        )

    def grouped(cls, **kw):
        return lambda: cls(
            _tree("tree"),
            points_per_bin=B,
            random_state=seed,
            **kw,
        )

    oracle = lambda: BetaBinningCalibrator(  # noqa: E731
        GroupColumnPartitioner(0), points_per_bin=B, random_state=seed
    )
    out = {
        "UMD": Ours(lambda: UMDBinner(points_per_bin=B, random_state=seed), "h"),
        REFERENCE: Ours(bb("tree"), "hZ"),
        "BB merge": Ours(bb("merge"), "hZ"),
        RECOMMENDED: Ours(sbb("tree"), "hZ"),
        "S-BB features cv=3 merge": Ours(sbb("merge"), "hZ"),
        "S-BB features cv=3 tree [lr05]": Lr05(sbb("tree"), "hZ"),
        REFERENCE + " grouped": OursGrouped(grouped(GroupedBB), "hZ"),
        RECOMMENDED + " grouped": OursGrouped(
            grouped(GroupedSBB, scaler="features", cv=3), "hZ"
        ),
        "BB ceiling": Ceiling(oracle, "hg"),
        "BB oracle": Ours(oracle, "hg"),
    }
    if not HAS_MERGE:
        del out["BB merge"], out["S-BB features cv=3 merge"]
    if MCGrad is not None and mcgrad:
        out["MCGrad"] = Peer(MCGrad, seed)
    return out


# --------------------------------------------------------------------- sets
def _question_split(q, seed):
    split = GroupShuffleSplit(n_splits=1, test_size=0.3, random_state=seed)
    return next(split.split(q, groups=q))


def triviaqa_sets(seeds):
    """The bundled TriviaQA log per kind, the answering model hidden."""
    frame = load_triviaqa_confidence().frame
    frame = frame.assign(
        question=frame["question"].fillna("").astype(str),
        answer=frame["answer"].fillna("").astype(str),
    )
    for kind, col in KINDS.items():
        rows = frame[frame[col].between(0, 1)].reset_index(drop=True)
        h = rows[col].to_numpy(float)
        y = rows["correct_judge"].to_numpy(int)
        g = pd.factorize(rows["model"], sort=True)[0]
        q = rows["question_id"].to_numpy()
        for seed in seeds:
            tr, te = _question_split(q, seed)
            emb = TextEmbedder(
                ["question", "answer"], n_components=32, random_state=seed
            ).fit(rows.iloc[tr])
            Z = np.asarray(emb.transform(rows), dtype=float)
            yield (
                f"triviaqa {kind}",
                seed,
                (
                    (h[tr], Z[tr], g[tr], y[tr], q[tr]),
                    (h[te], Z[te], g[te], y[te], None),
                ),
            )


def paper_sets(data_dir, seeds):
    """The paper's pooled rows: per QA dataset and kind, all models, the
    model visible (one-hot) beside the text view; beta = the model."""
    A = influence_frame(data_dir)
    if A is None:
        return
    for dataset in sorted(A.dataset.unique()):
        for kind, col in KINDS.items():
            rows = A[(A.dataset == dataset) & A[col].between(0, 1)]
            rows = rows.reset_index(drop=True)
            h = rows[col].to_numpy(float)
            y = rows.correct_judge.to_numpy(int)
            g = pd.factorize(rows.model, sort=True)[0]
            onehot = np.eye(g.max() + 1)[g]
            q = rows.question.to_numpy()
            for seed in seeds:
                tr, te = _question_split(q, seed)
                emb = TextEmbedder(
                    ["question", "answer"], n_components=32, random_state=seed
                ).fit(rows.iloc[tr])
                Z = np.column_stack([onehot, emb.transform(rows)]).astype(float)
                yield (
                    f"{dataset} {kind}",
                    seed,
                    (
                        (h[tr], Z[tr], g[tr], y[tr], q[tr]),
                        (h[te], Z[te], g[te], y[te], None),
                    ),
                )


def run_unit(study, name, seed, data, MCGrad, turn, only=None, suffix=""):
    (h, Z, g, y, qid), (ht, Zt, gt, yt, truth) = data
    ms = candidates(seed, MCGrad, mcgrad=study != "planted")
    ms[RECOMMENDED + " unbinned"] = Unbinned(ms[RECOMMENDED])
    if only:
        ms = {k: v for k, v in ms.items() if k in only}
    fitted = [k for k in ms if not k.endswith("unbinned")]
    k = turn % len(fitted)
    order = fitted[k:] + fitted[:k]
    order += [m for m in ms if m.endswith("unbinned")]
    load = os.getloadavg()[0]
    rows = []
    for mname in order:
        m = ms[mname]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c0, t0 = time.process_time(), time.perf_counter()
            m.fit(h, Z, g, y, qid)
            c1, t1 = time.process_time(), time.perf_counter()
            p = m.predict(ht, Zt, gt)
        rows.append(
            {
                "study": study,
                "set": name,
                "seed": seed,
                "method": mname + suffix,
                **scores(yt, p, gt, truth),
                "cells": m.cells() if hasattr(m, "cells") else float("nan"),
                "fit_s": t1 - t0,
                "fit_cpu_s": c1 - c0,
                "load": load,
                "n_train": len(y),
                "n_test": len(yt),
            }
        )
    for r in rows:  # the unbinned rows reuse the fit of their source
        if r["method"] == RECOMMENDED + " unbinned" + suffix:
            src = next(s for s in rows if s["method"] == RECOMMENDED + suffix)
            r["fit_s"], r["fit_cpu_s"] = src["fit_s"], src["fit_cpu_s"]
    return rows


def sets_of(study, data, seeds):
    if study == "influences":
        return influences_sets(data, seeds)
    if study == "triviaqa":
        return triviaqa_sets(seeds)
    if study == "paper":
        return paper_sets(data, seeds)
    if study == "cifar":
        return cifar_sets(data, seeds)
    if study == "planted":
        return planted_sets(seeds)
    raise ValueError(study)


# ------------------------------------------------------------------- report
SCORES = [
    ("beta-CE", "beta_ce", 1, -1),
    ("debiased x100", "beta_ce_debiased", 100, -1),
    ("Brier", "brier", 1, -1),
    ("log loss", "log_loss", 1, -1),
    ("AUROC", "auroc", 1, +1),
]
GROUPS = {
    "influences verbal": lambda R: (
        (R.study == "influences") & R.set.str.endswith("verbal")
    ),
    "influences token": lambda R: (
        (R.study == "influences") & R.set.str.endswith("token")
    ),
    "triviaqa": lambda R: R.study == "triviaqa",
    "paper (pooled, model visible)": lambda R: R.study == "paper",
    "cifar": lambda R: R.study == "cifar",
    "planted": lambda R: R.study == "planted",
}


def _geo(x):
    return float(np.exp(np.mean(np.log(np.asarray(x, float)))))


def _mse(d):
    d = np.asarray(d, float)
    se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
    return float(d.mean()), float(se)


def group_tables(G):
    key = ["set", "seed"]
    umd = G[G.method == "UMD"].set_index(key)
    ref = G[G.method == REFERENCE].set_index(key)
    mc = (
        G[G.method == "MCGrad"].set_index(key) if (G.method == "MCGrad").any() else None
    )
    ceil = G[G.method == "BB ceiling"].set_index(key)
    oracle = G[G.method == "BB oracle"].set_index(key)
    methods = list(G.method.unique())
    means, vs_ref, vs_mc = [], [], []
    for method in methods:
        m = G[G.method == method].set_index(key)
        m = m[m.index.isin(umd.index) & m.index.isin(ref.index)]
        if mc is not None and method != "MCGrad":
            m = m[m.index.isin(mc.index)] if m.index.isin(mc.index).any() else m
        u = umd.loc[m.index]
        gain_ceil = (u.beta_ce - m.beta_ce).sum() / (
            u.beta_ce - ceil.loc[m.index].beta_ce
        ).sum()
        gain_or = (u.beta_ce - m.beta_ce).sum() / (
            u.beta_ce - oracle.loc[m.index].beta_ce
        ).sum()
        row = [
            method,
            f"{_geo(m.beta_ce / u.beta_ce):.3f}",
            f"{float(np.median(m.beta_ce_debiased / u.beta_ce_debiased)):.3f}",
            f"{gain_ceil:.2f}",
            f"{gain_or:.2f}",
        ]
        row += [f"{scale * m[col].mean():.4f}" for _, col, scale, _ in SCORES]
        if "true_ce" in m and m.true_ce.notna().all():
            row.append(f"{m.true_ce.mean():.4f}")
        row += [f"{m.fit_cpu_s.mean():.2f}"]
        row += [
            f"{_geo(m.fit_cpu_s / mc.loc[m.index].fit_cpu_s):.3f}"
            if mc is not None
            else "-"
        ]
        means.append(row)
        for other, table in ((ref, vs_ref), (mc, vs_mc)):
            if (
                other is None
                or method in (REFERENCE, "MCGrad")
                and other is (ref if method == REFERENCE else mc)
            ):
                continue
            o = other.loc[m.index]
            cells = [method]
            for _, col, scale, sign in SCORES:
                d = scale * (m[col] - o[col])
                mean, se = _mse(d)
                better = int((sign * d > 0).sum())
                cells.append(f"{mean:+.4f} ± {se:.4f} ({better}/{len(d)})")
            table.append(cells)
    has_true = "true_ce" in G and G[G.method == "UMD"].true_ce.notna().all()
    head = ["method", "β-CE / UMD (geo.)", "debiased / UMD (median)"]
    head += ["share of ceiling gain", "share of oracle gain"]
    head += [t for t, *_ in SCORES] + (["true CE"] if has_true else [])
    head += ["fit CPU s", "fit CPU / MCGrad"]
    lines = markdown_table(head, means)
    dhead = ["method"] + [f"Δ {t} (better units)" for t, *_ in SCORES]
    lines += ["", f"Paired over units, minus `{REFERENCE}` (mean ± SE):", ""]
    lines += markdown_table(dhead, vs_ref)
    if vs_mc:
        lines += ["", "Paired over units, minus `MCGrad` (mean ± SE):", ""]
        lines += markdown_table(dhead, vs_mc)
    return lines


def report(R, argv, preface=""):
    lines = [
        "# The recommended calibrator: one protocol over every set (issue 38)",
        "",
        *([preface.rstrip(), ""] if preface else []),
        "## The runs",
        "",
        *header("mcgrad", "lightgbm", prefix="").split("\n"),
        "",
        f"Measured at commit(s) {', '.join(sorted(set(R.commit.astype(str))))} "
        "(a snapshot of the branch, so that the candidates retired afterwards "
        "could run); report written later.",
        "",
        f"Script: `benchmarks/studies/recommended.py` (its docstring is the "
        f"protocol); report from {', '.join(f'`{a}`' for a in argv)}. Units: "
        f"{R.groupby(['study']).apply(lambda d: d[['set', 'seed']].drop_duplicates().shape[0]).to_dict()}; "
        f"per-unit 1-min load mean {R.load.mean():.2f} (max {R.load.max():.2f}).",
        "",
        "Columns: β-CE / UMD: geometric mean of the plug-in β-CE ratio to UMD "
        "(b = 50); debiased / UMD: median ratio of the debiased squared β-CE; "
        "share of ceiling / oracle gain: (UMD - method) / (UMD - BB ceiling or "
        "BB oracle) in plug-in β-CE summed over units; fit CPU / MCGrad: "
        "geometric mean of the same-process CPU ratio. Paired tables: the "
        "difference per unit (set, seed), its mean ± standard error over units "
        "and the number of units where the method is better.",
        "",
    ]
    for label, select in GROUPS.items():
        G = R[select(R)]
        if G.empty:
            continue
        ref = G[G.method == REFERENCE]
        n = ref[["set", "seed"]].drop_duplicates().shape[0]
        lines += [f"## {label} ({n} units)", ""]
        lines += group_tables(G)
        lines += [""]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", nargs="+", default=["influences"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--models", nargs="*", default=None)
    parser.add_argument("--csv", type=Path, default=RESULTS / "recommended.csv")
    parser.add_argument("--report", nargs="+", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS / "recommended.md")
    parser.add_argument("--commit", default=None, help="recorded in the CSV")
    parser.add_argument(
        "--preface",
        type=Path,
        default=None,
        help="with --report: a Markdown file (the decision, written from the "
        "tables) put before them",
    )
    parser.add_argument(
        "--methods", nargs="*", default=None, help="only these candidates"
    )
    parser.add_argument(
        "--suffix", default="", help="appended to the method names (a code change)"
    )
    args = parser.parse_args(argv)
    if args.report:
        R = pd.concat([pd.read_csv(p) for p in args.report], ignore_index=True)
        preface = args.preface.read_text() if args.preface else ""
        text = report(R, [p.name for p in args.report], preface)
        args.out.write_text(text)
        print(text)
        return
    from peers_mcgrad import _default_data

    data = args.data or _default_data()
    MCGrad = _mcgrad()
    from _measure import _commit

    commit = args.commit or _commit()
    records, turn = [], 0
    start = time.perf_counter()
    with threadpool_limits(1):
        for study in args.studies:
            for name, seed, sets in sets_of(study, data, args.seeds):
                if args.models and not any(m in name for m in args.models):
                    continue
                rows = run_unit(
                    study, name, seed, sets, MCGrad, turn, args.methods, args.suffix
                )
                records += [{**r, "commit": commit} for r in rows]
                turn += 1
                pd.DataFrame(records).to_csv(args.csv, index=False)
                print(
                    f"{study} {name} seed {seed} done "
                    f"({time.perf_counter() - start:.0f} s, load "
                    f"{os.getloadavg()[0]:.1f}, {platform.node()})",
                    file=sys.stderr,
                    flush=True,
                )


if __name__ == "__main__":
    main()
