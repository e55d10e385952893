# SPDX-License-Identifier: MIT
"""MCGrad beside our calibrators, on every score (issue 21, item 1 and its goals).

MCGrad (Tax et al., KDD 2026, package ``mcgrad``; a benchmark peer, never a
dependency of the package) is multicalibration by gradient boosting: it finds
miscalibrated regions of the feature space itself. Our beta-calibrators need
a partition. Both see the same features, on three studies:

- ``influences``: the Influences-on-LLM-Calibration study (verb prompt), per
  answering model and confidence kind (verbalized, token), the four QA
  datasets pooled; the **dataset is the evaluation beta, hidden** from every
  calibrator (as in ``learned_partition.py``): they see the confidence and a
  32-d TF-IDF+SVD embedding of question + answer (:class:`TextEmbedder`,
  fitted on the calibration rows; ``--embedding minilm``: MiniLM of the
  question, PCA to 32-d on the calibration rows). Test rows are a
  question-level holdout (``GroupShuffleSplit`` on the question text, 30 %).
- ``planted``: planted groups of known truth (``_planted.planted_groups``:
  16 Gaussian blobs in 32-d, each with its own intercept/slope
  miscalibration on the logit, 1,000-5,000 calibration rows per group, 2,000
  test rows per group). Adds the true CE against the planted probabilities.
- ``cifar``: CIFAR top-label (the six softmax record sets): confidence = the
  top softmax probability, features = the softmax row, evaluation beta = the
  predicted class; 50/50 calibration/test split per seed.

Methods: ``UMD`` (:class:`UMDBinner`, ``b = 50`` as the beta-calibrators'
default, the reference of every ratio) and ``UMD 15 bins`` (its default);
:class:`BetaBinningCalibrator` with :class:`KDTreePartitioner`, with
``CalibrationTreePartitioner()`` (the one-liner), with KMeans(32) cells
(:class:`ClusterPartitioner`), with the true groups (oracle,
:class:`GroupColumnPartitioner` on the hidden beta); ``HS-BB``
(:class:`ScalingBetaBinningCalibrator`, kd-tree cells, its default) and
``HS-BB tree`` (over ``CalibrationTreePartitioner()``); ``S-BB features
tree()`` (``scaler="features"``) and the same cross-fitted with ``cv=3``;
``MCGrad`` given the
same features, and ``MCGrad + groups`` (also the true groups as a categorical
feature: MCGrad's oracle). ``--boosting NAME ...`` (names of
``studies/feature_scaler.py``'s ``BOOSTINGS``) adds the ``S-BB features``
methods again, each fitted with the library's ``BOOSTING`` updated by that
entry (suffix ``[NAME]``), beside today's on the same rows; the report then
adds their goal tables and a side-by-side table.

MCGrad's needs. Its logit uses an epsilon of 1e-304, so a confidence of
exactly 0 or 1 becomes a logit of about +-700: confidences are clipped at our
data-aware level (``data_logit_eps`` of the calibration confidences, what
our scalers use) before MCGrad sees them. Its early stopping is 5-fold
cross-validation over rows (below 2.5 M rows); where a question occurs more
than once (influences) the folds are grouped by question
(``GroupKFold``), so that a question's copies never sit on both sides.

Scores on the test rows: beta-CE plug-in (l1, 10 bins per cell) and
debiased (squared l2, Kumar et al.), ECE (15 bins), Brier, log loss, AUROC,
fit and predict seconds. All methods of one (set, seed) run in one process
on the same rows, one after another, their order rotated from one (set,
seed) to the next; the load average is recorded with every (set, seed).

Usage::

    python benchmarks/peers_mcgrad.py --quick          # smoke test, ~1 min
    python benchmarks/peers_mcgrad.py --studies influences planted cifar \
        --out benchmarks/results/peers_mcgrad.md
    python benchmarks/peers_mcgrad.py --studies influences \
        --embedding minilm tfidf   # both views, same rows, one process

Without ``mcgrad`` installed the MCGrad rows are skipped (with a message).
"""

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
from sklearn.cluster import KMeans
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score
from sklearn.model_selection import GroupKFold, GroupShuffleSplit
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(__file__))
from _measure import memo_minilm  # noqa: E402
from _planted import planted_groups, true_calibration_error  # noqa: E402
from studies.feature_scaler import BOOSTINGS, boosting  # noqa: E402

import sklearn_betacal  # noqa: E402
from sklearn_betacal import (  # noqa: E402
    BetaBinningCalibrator,
    CalibrationTreePartitioner,
    ClusterPartitioner,
    GroupColumnPartitioner,
    KDTreePartitioner,
    ScalingBetaBinningCalibrator,
    TextEmbedder,
    UMDBinner,
)
from sklearn_betacal._kernels._scaling import data_logit_eps  # noqa: E402
from sklearn_betacal.cli._protocol import CONFIDENCE_COLUMNS  # noqa: E402
from sklearn_betacal.metrics import (  # noqa: E402
    beta_calibration_error,
    expected_calibration_error,
)

HERE = Path(__file__).resolve().parent
B = 50
ONE_LINER = "BB tree()"
SBB_CV = "S-BB features tree() cv=3"


def _default_data():
    env = os.environ.get("BETACAL_SHARED_DATA")
    return Path(env) if env else HERE.parent.parent / "shared" / "data"


def _mcgrad():
    """``mcgrad.methods.MCGrad`` or None (with the reason printed)."""
    try:
        from mcgrad.methods import MCGrad
    except ImportError as exc:
        print(f"mcgrad is not importable ({exc}): the MCGrad rows are skipped")
        return None
    return MCGrad


# ------------------------------------------------------------------ methods
class Ours:
    """One of our calibrators on ``[h]``, ``[h, Z]`` or ``[h, g]``."""

    def __init__(self, make, view):
        self.make, self.view = make, view

    def _X(self, h, Z, g):
        if self.view == "h":
            return h.reshape(-1, 1)
        if self.view == "hg":
            return np.column_stack([h, g])
        return np.column_stack([h, Z])

    def fit(self, h, Z, g, y, qid):
        self.model = self.make().fit(self._X(h, Z, g), y)
        return self

    def predict(self, h, Z, g):
        return self.model.predict_proba(self._X(h, Z, g))[:, 1]

    def cells(self):
        return len(getattr(self.model, "cells_", ())) or float("nan")


class Boosted(Ours):
    """One of our feature-aware methods fitted with the library's
    ``BOOSTING`` updated by ``update`` (``studies/feature_scaler.py``'s
    :func:`boosting`; the setting is read at fit only)."""

    def __init__(self, inner, update):
        super().__init__(inner.make, inner.view)
        self.update = update

    def fit(self, h, Z, g, y, qid):
        with boosting(self.update):
            return super().fit(h, Z, g, y, qid)


class Peer:
    """MCGrad on the same features (and, for its oracle, the true groups).

    The confidences are clipped at the data-aware level of the calibration
    confidences (MCGrad's own logit would map 1.0 to about 700). With
    question ids that repeat, early stopping's folds are grouped by question.
    """

    def __init__(self, MCGrad, seed, with_groups=False, clip=True, grouped=True):
        self.MCGrad, self.seed, self.with_groups = MCGrad, seed, with_groups
        self.clip, self.grouped = clip, grouped

    def _frame(self, h, Z, g):
        cols = [f"z{j}" for j in range(Z.shape[1])]
        df = pd.DataFrame(Z, columns=cols)
        df["h"] = np.clip(h, self.low, 1 - self.high)
        cat = None
        if self.with_groups:
            df["group"] = np.asarray(g).astype(str)
            cat = ["group"]
        return df, cols, cat

    def fit(self, h, Z, g, y, qid):
        # clip=False: MCGrad's own handling (no clip; its logit's epsilon is
        # 1e-304, so an exact 1.0 enters as a logit of about 700)
        self.low, self.high = data_logit_eps(h) if self.clip else (0.0, 0.0)
        df, cols, cat = self._frame(h, Z, g)
        df["y"] = y
        params = {"lightgbm_params": {"num_threads": 1}, "random_state": self.seed}
        cls = self.MCGrad
        if self.grouped and qid is not None and len(np.unique(qid)) < len(qid):
            cls = _grouped_mcgrad(self.MCGrad, qid)
            params["early_stopping_use_crossvalidation"] = True
        self.model = cls(**params)
        self.model.fit(
            df,
            "h",
            "y",
            categorical_feature_column_names=cat,
            numerical_feature_column_names=cols,
        )
        return self

    def predict(self, h, Z, g):
        df, cols, cat = self._frame(h, Z, g)
        return np.asarray(
            self.model.predict(
                df,
                "h",
                categorical_feature_column_names=cat,
                numerical_feature_column_names=cols,
            ),
            dtype=float,
        )

    def cells(self):
        return float("nan")


def _grouped_mcgrad(MCGrad, qid):
    """MCGrad whose early-stopping folds never split a question's copies.

    MCGrad's public API takes no groups; its cross-validation splitter is the
    ``_cv_splitter`` property (a ``StratifiedKFold`` called as
    ``split(features, labels)`` on the training rows in their order), so a
    subclass swaps in ``GroupKFold`` over the question ids.
    """
    groups = pd.factorize(np.asarray(qid))[0]

    class _Split:
        def __init__(self, n_splits):
            self.n_splits = n_splits

        def split(self, X, y=None):
            return GroupKFold(self.n_splits).split(X, y, groups)

        def get_n_splits(self, *args, **kwargs):
            return self.n_splits

    class GroupedMCGrad(MCGrad):
        @property
        def _cv_splitter(self):
            return _Split(self.n_folds)

    return GroupedMCGrad


#: MCGrad's needs (``--mcgrad-needs``): without the clip of exact 0/1, and
#: with its default row-level early-stopping folds where questions repeat
NEEDS = {
    "MCGrad unclipped": {"clip": False},
    "MCGrad row folds": {"grouped": False},
}


def methods(seed, MCGrad, needs=False, boostings=()):
    """The contenders of one (set, seed); ``boostings``: names of
    ``BOOSTINGS`` (each but ``current`` adds the ``S-BB features`` methods
    again, suffixed ``[NAME]``)."""

    def bb(part):
        return lambda: BetaBinningCalibrator(
            part(), points_per_bin=B, random_state=seed
        )

    out = {
        "UMD": Ours(lambda: UMDBinner(points_per_bin=B, random_state=seed), "h"),
        "UMD 15 bins": Ours(lambda: UMDBinner(random_state=seed), "h"),
        "BB kd-tree": Ours(bb(KDTreePartitioner), "hZ"),
        ONE_LINER: Ours(bb(CalibrationTreePartitioner), "hZ"),
        "BB KMeans(32)": Ours(
            bb(lambda: ClusterPartitioner(KMeans(32, n_init=1, random_state=seed))),
            "hZ",
        ),
        "BB oracle": Ours(bb(lambda: GroupColumnPartitioner(0)), "hg"),
        "HS-BB kd-tree": Ours(
            lambda: ScalingBetaBinningCalibrator(points_per_bin=B, random_state=seed),
            "hZ",
        ),
        "HS-BB tree()": Ours(
            lambda: ScalingBetaBinningCalibrator(
                CalibrationTreePartitioner(), points_per_bin=B, random_state=seed
            ),
            "hZ",
        ),
        # the feature-aware scaler (boosted recalibration on [logit h,
        # features], issue 21 item 4), binned over the one-liner's cells
        "S-BB features tree()": Ours(
            lambda: ScalingBetaBinningCalibrator(
                CalibrationTreePartitioner(),
                scaler="features",
                points_per_bin=B,
                random_state=seed,
            ),
            "hZ",
        ),
        # the same cross-fitted (cv=3: each fold binned on its own rows, its
        # scaler on the other two), the strongest shipped calibrator here
        SBB_CV: Ours(
            lambda: ScalingBetaBinningCalibrator(
                CalibrationTreePartitioner(),
                scaler="features",
                cv=3,
                points_per_bin=B,
                random_state=seed,
            ),
            "hZ",
        ),
    }
    # more folds: each fold's scaler sees more rows (4/5, 9/10), each fold's
    # tables fewer (issue 21: the boosted scaler on 2/3 of the rows trails
    # MCGrad, fitted on all of them, on the MiniLM view)
    for k in (5, 10):
        out[f"S-BB features tree() cv={k}"] = Ours(
            lambda k=k: ScalingBetaBinningCalibrator(
                CalibrationTreePartitioner(),
                scaler="features",
                cv=k,
                points_per_bin=B,
                random_state=seed,
            ),
            "hZ",
        )
    featured = [k for k in out if k.startswith("S-BB features")]
    for name in boostings:
        if name != "current":
            for key in featured:
                out[f"{key} [{name}]"] = Boosted(out[key], BOOSTINGS[name])
    if MCGrad is not None:
        out["MCGrad"] = Peer(MCGrad, seed)
        out["MCGrad + groups"] = Peer(MCGrad, seed, with_groups=True)
        if needs:
            out.update({k: Peer(MCGrad, seed, **kw) for k, kw in NEEDS.items()})
    return out


def scores(y, p, g, truth=None):
    pc = np.clip(p, 0.0, 1.0)
    out = {
        "beta_ce": beta_calibration_error(y, pc, cells=g),
        "beta_ce_debiased": beta_calibration_error(
            y, pc, cells=g, norm="l2_squared", debiased=True
        ),
        "ece": expected_calibration_error(y, pc),
        "brier": brier_score_loss(y, pc),
        "log_loss": log_loss(y, pc, labels=[0, 1]),
        "auroc": roc_auc_score(y, pc),
    }
    if truth is not None:
        out["true_ce"] = true_calibration_error(pc, truth, g)
    return out


def run_set(
    study,
    name,
    seed,
    data,
    MCGrad,
    turn,
    only=None,
    needs=False,
    make=methods,
    score=None,
):
    """All methods on one (set, seed); ``data`` = (train, test) tuples.

    ``make(seed, MCGrad, needs)`` builds the methods and ``score(y, p, g,
    truth)`` scores them (default :func:`methods` and :func:`scores`; a study
    passes its own, e.g. ``studies/feature_scaler.py``).
    """
    score = scores if score is None else score
    (h, Z, g, y, qid), (ht, Zt, gt, yt, truth) = data
    ms = make(seed, MCGrad, needs)
    if only:
        ms = {k: v for k, v in ms.items() if k in only}
    names = list(ms)
    k = turn % len(names)  # rotate the order from one (set, seed) to the next
    load = os.getloadavg()[0]
    rows = []
    for mname in names[k:] + names[:k]:
        m = ms[mname]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            m.fit(h, Z, g, y, qid)
            t1 = time.perf_counter()
            p = m.predict(ht, Zt, gt)
            t2 = time.perf_counter()
        rows.append(
            {
                "study": study,
                "set": name,
                "seed": seed,
                "method": mname,
                **score(yt, p, gt, truth),
                "cells": m.cells(),
                "fit_s": t1 - t0,
                "predict_s": t2 - t1,
                "load": load,
                "n_train": len(y),
                "n_test": len(yt),
            }
        )
    return rows


# -------------------------------------------------------------------- data
#: ``--embedding``: the text view every method of the influences study sees
EMBEDDINGS = {
    # TextEmbedder's default, question + answer (the benchmark's since session 4)
    "tfidf": {"text_columns": ["question", "answer"]},
    # the same on the question alone (what the minilm view sees)
    "tfidf-question": {"text_columns": ["question"]},
    # all-MiniLM-L6-v2 of the question, PCA to 32-d on the calibration rows
    # (the ``embeddings`` extra; encodings memoized by text, see _measure.memo_minilm)
    "minilm": {"text_columns": ["question"], "method": "minilm"},
    # character 2-4-grams within words, case kept, question + answer
    "char": {"text_columns": ["question", "answer"], "method": "tfidf-char-svd"},
}


#: ``--minilm-cache``: the ``.npz`` that keeps the MiniLM encodings between runs
MINILM_CACHE = None


def influence_frame(data_dir):
    """The influences verb-prompt rows with a judged label, ``answer`` and
    ``question`` as text (None, with a message, when the data is absent)."""
    path = data_dir / "influences" / "influences_llm_calibration_all.parquet"
    if not path.is_file():
        print(f"no influences data at {path}: skipped")
        return None
    A = pd.read_parquet(path)
    A = A[(A.prompt_style == "verb") & A.correct_judge.isin([0, 1])].copy()
    A["answer"] = A["extracted_answer"].fillna("").astype(str)
    A["question"] = A["question"].fillna("").astype(str)
    return A


def influence_rows(data_dir, models=None, kinds=("verbal", "token")):
    """Each (model, kind) of the influences verb-prompt rows with a valid
    confidence: ``(model, kind, rows, h, y, g, q)`` with the hidden dataset as
    ``g`` and the question texts as ``q`` (nothing when the data is absent)."""
    A = influence_frame(data_dir)
    if A is None:
        return
    for model in models or sorted(A.model.unique()):
        for kind in kinds:
            col = CONFIDENCE_COLUMNS[kind]
            rows = A[(A.model == model) & A[col].between(0, 1)].reset_index(drop=True)
            h = rows[col].to_numpy(float)
            y = rows.correct_judge.to_numpy(int)
            g = pd.factorize(rows.dataset, sort=True)[0]  # hidden beta
            yield model, kind, rows, h, y, g, rows.question.to_numpy()


def influences_sets(
    data_dir, seeds, models=None, kinds=("verbal", "token"), embedding="tfidf"
):
    for model, kind, rows, h_all, y_all, g_all, q_all in influence_rows(
        data_dir, models, kinds
    ):
        for seed in seeds:
            split = GroupShuffleSplit(n_splits=1, test_size=0.3, random_state=seed)
            tr, te = next(split.split(rows, groups=q_all))
            if embedding == "minilm":
                memo_minilm(MINILM_CACHE)
            emb = TextEmbedder(
                **EMBEDDINGS[embedding], n_components=32, random_state=seed
            ).fit(rows.iloc[tr])
            Z = np.asarray(emb.transform(rows), dtype=float)
            yield (
                f"{model} {kind}",
                seed,
                (
                    (h_all[tr], Z[tr], g_all[tr], y_all[tr], q_all[tr]),
                    (h_all[te], Z[te], g_all[te], y_all[te], None),
                ),
            )


def planted_sets(seeds, n_groups=16):
    for seed in seeds:
        h, E, g, p, y, truth = planted_groups(
            n_groups, size_range=(20 * B, 5000), random_state=seed
        )
        ht, Et, gt, pt, yt, _ = planted_groups(
            truth=truth, sizes=2000, random_state=1000 + seed
        )
        yield (
            f"{n_groups} groups",
            seed,
            ((h, E, g, y, None), (ht, Et, gt, yt, pt)),
        )


def cifar_sets(data_dir, seeds, limit=None):
    files = sorted((data_dir / "cifar").glob("*.npz"))
    if not files:
        print(f"no CIFAR data under {data_dir / 'cifar'}: skipped")
    for path in files[:limit]:
        with np.load(path) as npz:
            probs = np.asarray(npz["predictions"], dtype=np.float64)
            label = np.asarray(npz["ground_truth"]).ravel().astype(np.int64)
        pred = probs.argmax(axis=1)
        h = np.clip(probs.max(axis=1), 0.0, 1.0)  # float32 softmax may hit 1+ulp
        y = (pred == label).astype(int)
        for seed in seeds:
            perm = np.random.default_rng(seed).permutation(len(y))
            tr, te = perm[: len(y) // 2], perm[len(y) // 2 :]
            yield (
                path.stem,
                seed,
                (
                    (h[tr], probs[tr], pred[tr], y[tr], None),
                    (h[te], probs[te], pred[te], y[te], None),
                ),
            )


# ------------------------------------------------------------------ report
SCORE_COLS = ["beta_ce", "beta_ce_debiased", "ece", "brier", "log_loss", "auroc"]


def _geo(x):
    x = np.asarray(x, dtype=float)
    return float(np.exp(np.mean(np.log(x)))) if len(x) else float("nan")


def summary(R, group):
    """Per method over the (set, seed) rows of one group (e.g. a kind)."""
    key = ["set", "seed"]
    umd = R[R.method == "UMD"].set_index(key)
    mc = (
        R[R.method == "MCGrad"].set_index(key) if (R.method == "MCGrad").any() else None
    )
    lines = []
    for method in sorted(R.method.unique(), key=_method_order):
        m = R[R.method == method].set_index(key)
        u = umd.loc[m.index]
        ratio = _geo(m.beta_ce / u.beta_ce)
        dratio = float(np.median(m.beta_ce_debiased / u.beta_ce_debiased))
        if mc is not None:
            fit_r = _geo(m.fit_s / mc.loc[m.index].fit_s)
            pred_r = _geo(m.predict_s / mc.loc[m.index].predict_s)
        else:
            fit_r = pred_r = float("nan")
        true_ce = (
            f"{m.true_ce.mean():.4f} | "
            if "true_ce" in m and m.true_ce.notna().all()
            else ""
        )
        lines.append(
            f"| {group} | {method} | {ratio:.3f} | {dratio:.3f} | "
            f"{m.beta_ce.mean():.4f} | {100 * m.beta_ce_debiased.mean():.3f} | "
            f"{true_ce}{m.ece.mean():.4f} | {m.brier.mean():.4f} | "
            f"{m.log_loss.mean():.4f} | {m.auroc.mean():.4f} | "
            f"{m.cells.mean():.1f} | {m.fit_s.mean():.2f} | {fit_r:.3f} | "
            f"{pred_r:.3f} |"
        )
    return lines


def _method_order(method):
    """Sort key: the order of :func:`methods`, a ``[NAME]`` copy right after
    its method (in the order of ``BOOSTINGS``)."""
    order = list(methods(0, object, needs=True))
    base, _, name = method.partition(" [")
    return order.index(base), list(BOOSTINGS).index(name[:-1]) if name else -1


def _settings(R):
    """The boosting names of a run's ``[NAME]`` copies of ``SBB_CV``."""
    prefix = SBB_CV + " ["
    names = {m[len(prefix) : -1] for m in R.method.unique() if m.startswith(prefix)}
    return sorted(names, key=list(BOOSTINGS).index)


def side_by_side(R, group, names):
    """``SBB_CV`` with today's ``BOOSTING``, with each ``[NAME]`` and MCGrad,
    on one group: the scores of the goal table, and per (set, seed) how often
    the ``[NAME]`` copy beats today's."""
    key = ["set", "seed"]
    umd = R[R.method == "UMD"].set_index(key)
    cur = R[R.method == SBB_CV].set_index(key)
    mc = (
        R[R.method == "MCGrad"].set_index(key) if (R.method == "MCGrad").any() else None
    )
    lines = []
    for label, method in [
        ("current", SBB_CV),
        *((n, f"{SBB_CV} [{n}]") for n in names),
        ("MCGrad", "MCGrad"),
    ]:
        m = R[R.method == method].set_index(key)
        if m.empty:
            continue
        u = umd.loc[m.index]
        fit = _geo(m.fit_s / mc.loc[m.index].fit_s) if mc is not None else np.nan
        wins = ""
        if label not in ("current", "MCGrad"):
            c = cur.loc[m.index]
            wins = " | " + " | ".join(
                f"{int((m[col] > c[col]).sum() if col == 'auroc' else (m[col] < c[col]).sum())}"
                f"/{len(m)}"
                for col in ("beta_ce_debiased", "brier", "log_loss", "auroc")
            )
        else:
            wins = " | " + " | ".join(["–"] * 4)
        lines.append(
            f"| {group} | {label} | {_geo(m.beta_ce / u.beta_ce):.3f} | "
            f"{float(np.median(m.beta_ce_debiased / u.beta_ce_debiased)):.3f} | "
            f"{m.brier.mean():.4f} | {m.log_loss.mean():.4f} | {m.ece.mean():.4f} | "
            f"{m.auroc.mean():.4f} | {fit:.3f}{wins} |"
        )
    return lines


def goal_rows(R, group, method=ONE_LINER):
    """``method`` (default the one-liner) against MCGrad on one group: the
    issue's goal table."""
    if not (R.method == "MCGrad").any() or not (R.method == method).any():
        return []
    key = ["set", "seed"]
    umd = R[R.method == "UMD"].set_index(key)
    one = R[R.method == method].set_index(key)
    mc = R[R.method == "MCGrad"].set_index(key).loc[one.index]
    u = umd.loc[one.index]
    r1, rm = _geo(one.beta_ce / u.beta_ce), _geo(mc.beta_ce / u.beta_ce)
    d1 = float(np.median(one.beta_ce_debiased / u.beta_ce_debiased))
    dm = float(np.median(mc.beta_ce_debiased / u.beta_ce_debiased))
    fit = _geo(one.fit_s / mc.fit_s)

    def pair(a, b, fmt, lower=True, tol=0.0):
        ok = a <= b + tol if lower else a >= b - tol
        return f"{a:{fmt}} vs {b:{fmt}} {'✓' if ok else '✗'}"

    return [
        f"| {group} | {pair(r1, rm, '.3f')} (goal ≤ 0.65: "
        f"{'✓' if r1 <= 0.65 else '✗'}) | {pair(d1, dm, '.3f')} (goal ≤ 0.55: "
        f"{'✓' if d1 <= 0.55 else '✗'}) | "
        f"{pair(one.brier.mean(), mc.brier.mean(), '.4f')} | "
        f"{pair(one.log_loss.mean(), mc.log_loss.mean(), '.4f')} | "
        f"{pair(one.ece.mean(), mc.ece.mean(), '.4f')} | "
        f"{pair(one.auroc.mean(), mc.auroc.mean(), '.4f', lower=False, tol=0.005)} | "
        f"{fit:.3f} ({'✓' if fit <= 1 / 3 else '✗'}) |"
    ]


def _groups(R):
    """(label, rows) per reported group: influences by kind, else by study."""
    for study, S in R.groupby("study", sort=False):
        if study.startswith("influences"):  # "influences minilm" with views
            for kind in ("verbal", "token"):
                K = S[S.set.str.endswith(" " + kind)]
                if len(K):
                    yield f"{study} {kind}", K
        else:
            yield study, S


GOAL_HEAD = [
    "| data | CE / UMD | debiased / UMD | Brier | log loss | ECE | AUROC | fit / MCGrad |",
    "|---|---|---|---|---|---|---|---|",
]


def _views(args):
    """The influences views of a run, each with its TextEmbedder options."""
    views = getattr(args, "embedding", "tfidf")
    views = [views] if isinstance(views, str) else views
    return ", ".join(f"{v!r} ({EMBEDDINGS[v]})" for v in views)


def report(R, args, elapsed, load0, load1, versions, note=""):
    has_true = "true_ce" in R and R.true_ce.notna().any()
    lines = [
        "# MCGrad beside our calibrators (issue 21, item 1)",
        "",
        f"Run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"{elapsed:.0f} s{note}; load average (1, 5, 15 min) at start "
        f"{tuple(round(v, 2) for v in load0)}, at end "
        f"{tuple(round(v, 2) for v in load1)} (2 shared cores); per-(set, seed) 1-min load in the CSV (mean "
        f"{R.load.mean():.2f}, max {R.load.max():.2f}). {versions}. "
        f"Studies {', '.join(R.study.unique())}; seeds "
        f"{sorted(int(v) for v in R.seed.unique())}"
        f"{'; --quick' if args.quick else ''}; influences embedding "
        f"{_views(args)}"
        ". BLAS/OpenMP threads limited to 1 "
        "(threadpoolctl; LightGBM num_threads=1).",
        "",
        "Ratios: CE / UMD = geometric mean over (set, seed) of the method's "
        "plug-in beta-CE over UMD's (b = 50); debiased / UMD = median of the "
        "same ratio for the debiased squared beta-CE; fit and predict / MCGrad "
        "= geometric mean of the time ratio to MCGrad measured on the same rows "
        "in the same process. Scores are means over (set, seed); debiased "
        "beta-CE x100. Cells: the calibrator's number of cells with their own "
        "table (BB) or nan.",
        "",
        "## Goal table: the one-liner BB(CalibrationTreePartitioner()) vs MCGrad",
        "",
        "Each cell: one-liner vs MCGrad (✓ where the one-liner is at least as "
        "good; AUROC within 0.005 counts). The issue's goals (influences): "
        "CE ≤ 0.65× UMD, debiased ≤ 0.55×, Brier and log loss ≤ MCGrad's, "
        "AUROC ≥ MCGrad's − 0.005, fit ≤ ⅓ of MCGrad's time.",
        "",
        *GOAL_HEAD,
    ]
    for label, G in _groups(R):
        lines += goal_rows(G, label)
    if (R.method == SBB_CV).any():
        lines += [
            "",
            f"## Goal table: {SBB_CV} vs MCGrad",
            "",
            "The same cells for ScalingBetaBinningCalibrator("
            "CalibrationTreePartitioner(), scaler='features', cv=3) in place "
            "of the one-liner.",
            "",
            *GOAL_HEAD,
        ]
        for label, G in _groups(R):
            lines += goal_rows(G, label, SBB_CV)
    names = _settings(R)
    for name in names:
        lines += [
            "",
            f"## Goal table: {SBB_CV} [{name}] vs MCGrad",
            "",
            f"The same cells with the library's BOOSTING updated by "
            f"{name} = {BOOSTINGS[name]} (studies/feature_scaler.py).",
            "",
            *GOAL_HEAD,
        ]
        for label, G in _groups(R):
            lines += goal_rows(G, label, f"{SBB_CV} [{name}]")
    if names:
        lines += [
            "",
            f"## {SBB_CV}: today's BOOSTING beside "
            + ", ".join(f"[{n}]" for n in names),
            "",
            "Scores as in the goal tables; `wins`: in how many (set, seed) the "
            "copy beats today's (lower debiased beta-CE, Brier, log loss; "
            "higher AUROC).",
            "",
            "| data | boosting | CE / UMD | debiased / UMD | Brier | log loss | "
            "ECE | AUROC | fit / MCGrad | wins debiased | wins Brier | "
            "wins log loss | wins AUROC |",
            "|" + "---|" * 13,
        ]
        for label, G in _groups(R):
            lines += side_by_side(G, label, names)
    head = (
        "| data | method | CE / UMD | debiased / UMD | beta-CE | debiased ×100 | "
        + ("true CE | " if has_true else "")
        + "ECE | Brier | log loss | AUROC | cells | fit s | fit / MCGrad | "
        "predict / MCGrad |"
    )
    lines += ["", "## All methods", ""]
    for label, G in _groups(R):
        lines += [
            f"### {label} ({G.set.nunique()} sets × {G.seed.nunique()} seeds)",
            "",
        ]
        h = (
            head
            if "true_ce" in G and G.true_ce.notna().all()
            else head.replace("true CE | ", "")
        )
        lines += [h, "|" + "---|" * (h.count("|") - 1)]
        lines += summary(G, label)
        lines.append("")
    return "\n".join(lines) + "\n"


def _versions(MCGrad):
    import subprocess

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=HERE,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    tree = CalibrationTreePartitioner().get_params()
    v = [
        f"commit {commit or '?'}",
        f"CalibrationTreePartitioner() defaults {tree}",
        f"Python {platform.python_version()}",
        f"numpy {np.__version__}",
        f"scikit-learn {sklearn.__version__}",
        f"sklearn_betacal {getattr(sklearn_betacal, '__version__', '?')}",
    ]
    if MCGrad is not None:
        from importlib import metadata

        v.append(f"mcgrad {metadata.version('mcgrad')}")
        v.append(f"lightgbm {metadata.version('lightgbm')}")
    return ", ".join(v)


def add_set_arguments(parser):
    """``--studies``, ``--seeds``, ``--models``, ``--combine``, ``--kinds``,
    ``--embedding`` and ``--minilm-cache``: the sets of this script, also run
    by ``studies/feature_scaler.py``."""
    parser.add_argument(
        "--studies",
        nargs="+",
        choices=["influences", "planted", "cifar"],
        default=["influences", "planted", "cifar"],
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument(
        "--models", nargs="*", default=None, help="influences: answering models"
    )
    parser.add_argument(
        "--combine",
        nargs="+",
        type=Path,
        default=None,
        help="only write the report from the CSVs of earlier runs",
    )
    parser.add_argument(
        "--kinds", nargs="+", default=["verbal", "token"], help="influences"
    )
    parser.add_argument(
        "--embedding",
        choices=sorted(EMBEDDINGS),
        nargs="+",
        default=["tfidf"],
        help="influences: the text view (tfidf = TextEmbedder's default on "
        "question + answer; char = its character n-gram variant; minilm = "
        "MiniLM of the question, needs the "
        "embeddings extra); several: each view a study of its own "
        "('influences minilm', ...) in the same process, on the same rows",
    )
    parser.add_argument(
        "--minilm-cache",
        type=Path,
        default=None,
        help="an .npz keeping the MiniLM encodings between runs (--embedding minilm)",
    )


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[1:]),
    )
    add_set_arguments(parser)
    parser.add_argument(
        "--methods", nargs="*", default=None, help="only these methods (UMD is kept)"
    )
    parser.add_argument("--data", type=Path, default=_default_data())
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: one model x one kind, one CIFAR set, one planted seed",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="report (.md; a .csv beside it)"
    )
    parser.add_argument(
        "--mcgrad-needs",
        action="store_true",
        help="add MCGrad without the clip of exact 0/1 confidences and with "
        "row-level (ungrouped) early-stopping folds",
    )
    parser.add_argument(
        "--boosting",
        nargs="+",
        choices=list(BOOSTINGS),
        default=[],
        help="add the S-BB features methods fitted with these boosting "
        "settings (studies/feature_scaler.py's BOOSTINGS), suffixed [NAME], "
        "beside today's; --methods keeps their copies",
    )
    parser.add_argument("--elapsed", type=float, default=float("nan"))
    parser.add_argument(
        "--note", default="", help="with --combine: how the runs were made"
    )
    parser.add_argument(
        "--loads", nargs=6, type=float, default=None, help="with --combine"
    )
    args = parser.parse_args(argv)
    global MINILM_CACHE
    MINILM_CACHE = args.minilm_cache
    MCGrad = _mcgrad()
    only = None
    if args.methods:
        only = {"UMD", *args.methods}
        only |= {f"{m} [{n}]" for m in args.methods for n in args.boosting}
    if args.combine:
        R = pd.concat([pd.read_csv(f) for f in args.combine], ignore_index=True)
        loads = args.loads or [float("nan")] * 6
        note = f" ({args.note})" if args.note else ""
        text = report(
            R, args, args.elapsed, loads[:3], loads[3:], _versions(MCGrad), note
        )
        _write(text, R, args.out)
        return
    load0, start = os.getloadavg(), time.perf_counter()
    sets = []
    if args.quick:
        args.seeds = args.seeds[:1]
    if "influences" in args.studies:
        models = args.models or (["phi4"] if args.quick else None)
        kinds = args.kinds[:1] if args.quick else args.kinds
        for emb in args.embedding:
            sets.append(
                (
                    "influences" if len(args.embedding) == 1 else f"influences {emb}",
                    influences_sets(args.data, args.seeds, models, kinds, emb),
                )
            )
    if "planted" in args.studies:
        sets.append(("planted", planted_sets(args.seeds)))
    if "cifar" in args.studies:
        sets.append(
            ("cifar", cifar_sets(args.data, args.seeds, 1 if args.quick else None))
        )
    records, turn = [], 0
    with threadpool_limits(limits=1):
        for study, gen in sets:
            for name, seed, data in gen:
                records += run_set(
                    study,
                    name,
                    seed,
                    data,
                    MCGrad,
                    turn,
                    only,
                    args.mcgrad_needs,
                    make=lambda s, M, n: methods(s, M, n, args.boosting),
                )
                turn += 1
                print(
                    f"{study} {name} seed {seed} done "
                    f"({time.perf_counter() - start:.0f} s, load {os.getloadavg()[0]:.2f})",
                    file=sys.stderr,
                    flush=True,
                )
    R = pd.DataFrame(records)
    text = report(
        R, args, time.perf_counter() - start, load0, os.getloadavg(), _versions(MCGrad)
    )
    _write(text, R, args.out)


def _write(text, R, out):
    print(text)
    if out is not None:
        out.write_text(text)
        R.to_csv(out.with_suffix(".csv"), index=False, float_format="%.6g")


if __name__ == "__main__":
    main()
