# SPDX-License-Identifier: MIT
"""Which logit clip for TemperatureScaler on probabilities? (issue 10, item 4)

``TemperatureScaler(input="probability")`` turns a confidence ``h`` into
``s = logit(h)`` before dividing by ``tau``. A confidence of exactly 1.0 (or
0.0) needs a clip. Three clips are compared, each fitted on the calibration
half and applied to the test half:

- ``1e-12``: ``h`` clipped to ``[1e-12, 1 - 1e-12]`` (a 1.0 becomes a logit
  of 27.6);
- ``platt``: Platt's data-aware clip (``data_logit_eps``: the larger of the
  labels' resolution ``1 / (W + 2)`` and half the distance from the boundary
  to the closest confidence inside ``(0, 1)``);
- ``resolution``: the confidences' half-distance alone (no ``1 / (W + 2)``
  floor): a 1.0 lands just above the largest confidence below 1, and no two
  distinct fitted confidences merge.

Data: every (dataset, model, confidence kind) of the Influences-on-LLM-
Calibration records (verb prompt), each dataset with all models pooled, the
top-label confidences of the six CIFAR
networks, and a simulation with known truth (a verbalized-style scale where
17 % of the answers say exactly 1.0 and the true accuracy is known). Scores on
the test half: NLL, Brier, ECE (15 equal-width bins), the true calibration
error ``E|p - P(y | h)|`` (simulation), and whether the AUC of the calibrated
confidences equals the raw confidences' AUC (temperature scaling should not
change the ranking).

Usage::

    nice .venv/bin/python benchmarks/studies/temperature_clip.py --seeds 5
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.metrics import roc_auc_score

from sklearn_betacal import TemperatureScaler
from sklearn_betacal._kernels._scaling import data_logit_eps, to_logit
from sklearn_betacal.metrics import expected_calibration_error

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness
from _measure import (  # noqa: E402
    RESULTS,
    add_data_argument,
    cifar_records,
    load_influences,
    markdown_table,
    write_result,
)


def resolution_eps(h):
    """The confidences' half-distance to each boundary, without a floor."""
    inner = h[(h > 0) & (h < 1)]
    if inner.size == 0:
        return np.array([0.5, 0.5])
    return np.array([inner.min() / 2.0, (1.0 - inner.max()) / 2.0])


CLIPS = {
    "1e-12": lambda h: 1e-12,
    "platt": data_logit_eps,
    "resolution": resolution_eps,
}


def score(h_cal, y_cal, h_test, y_test, truth=None):
    out = {}
    auc_raw = roc_auc_score(y_test, h_test) if 0 < y_test.mean() < 1 else np.nan
    for name, clip in CLIPS.items():
        eps = clip(h_cal)
        ts = TemperatureScaler(input="logit").fit(to_logit(h_cal, eps), y_cal)
        p = ts.predict_proba(to_logit(h_test, eps))[:, 1]
        q = np.clip(p, 1e-15, 1 - 1e-15)
        row = {
            "nll": float(-np.mean(y_test * np.log(q) + (1 - y_test) * np.log1p(-q))),
            "brier": float(np.mean((p - y_test) ** 2)),
            "ece": expected_calibration_error(y_test, p, n_bins=15),
            "auc_changed": float(
                not np.isnan(auc_raw) and roc_auc_score(y_test, p) != auc_raw
            ),
            "tau": ts.temperature_,
        }
        if truth is not None:
            row["true_ce"] = float(np.mean(np.abs(p - truth)))
        out[name] = row
    return out


def split(n, seed):
    perm = np.random.default_rng(seed).permutation(n)
    return perm[: n // 2], perm[n // 2 :]


def influences_rows(path):
    A = load_influences(path)
    for kind, col in (("verbal", "verbal_confidence"), ("token", "extracted_seq_prob")):
        ok = A[col].between(0, 1)
        for (dataset, model), D in A[ok].groupby(["dataset", "model"]):
            yield (
                f"influences-{kind}",
                f"{dataset}/{model}",
                D[col].to_numpy(float),
                D.correct_judge.to_numpy(float),
                None,
            )
        for dataset, D in A[ok].groupby("dataset"):  # all 12 models together
            yield (
                f"influences-{kind} pooled",
                dataset,
                D[col].to_numpy(float),
                D.correct_judge.to_numpy(float),
                None,
            )


def cifar_rows(path):
    for file in cifar_records(path):
        d = np.load(file)
        P, t = d["predictions"], d["ground_truth"]
        h = P.max(axis=1).astype(float)
        y = (P.argmax(axis=1) == t).astype(float)
        yield "cifar top-label", file.stem, h, y, None


def simulation_rows(seeds):
    """Verbalized-style confidences, 17 % exactly 1.0, known accuracy."""
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        n = 2000
        levels = np.array([0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0])
        weights = np.array([0.05, 0.08, 0.12, 0.2, 0.13, 0.15, 0.1, 0.17])
        h = rng.choice(levels, size=n, p=weights)
        # overconfident: the accuracy is sigma(logit(h') / 2.5) with 1.0 read
        # as 0.99, so the truth of a "1.0" is about 0.86
        truth = expit(to_logit(np.minimum(h, 0.99)) / 2.5)
        y = (rng.uniform(size=n) < truth).astype(float)
        yield "simulation (17 % at 1.0)", f"seed {seed}", h, y, truth


def table(R):
    """The result table of the records ``R``: one row per (data family, clip)."""
    head = ["data", "clip", "rows", "NLL", "Brier", "ECE", "true CE", "NLL wins"]
    head += ["AUC changed", "median tau"]
    rows = []
    for family, F in R.groupby("family", sort=False):
        per_row = F.groupby(["row", "clip"]).nll.mean().unstack()
        best = per_row.eq(per_row.min(axis=1), axis=0)
        wins = best.div(best.sum(axis=1), axis=0).sum()
        for clip, C in F.groupby("clip", sort=False):
            true_ce = (
                f"{C.true_ce.mean():.4f}"
                if "true_ce" in C and C.true_ce.notna().any()
                else "—"
            )
            rows.append(
                [
                    family,
                    clip,
                    C.row.nunique(),
                    f"{C.nll.mean():.4f}",
                    f"{C.brier.mean():.4f}",
                    f"{C.ece.mean():.4f}",
                    true_ce,
                    f"{wins[clip]:.1f}",
                    f"{C.auc_changed.mean():.2f}",
                    f"{C.tau.median():.2f}",
                ]
            )
    return markdown_table(head, rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "temperature_clip.md")
    args = parser.parse_args(argv)
    start, load = time.perf_counter(), os.getloadavg()
    records = []
    sources = [
        *influences_rows(args.data),
        *cifar_rows(args.data),
        *simulation_rows(args.seeds),
    ]
    for family, name, h, y, truth in sources:
        seeds = 1 if truth is not None else args.seeds
        for seed in range(seeds):
            # a simulated row is a fresh data set per seed: one split each
            cal, test = split(len(h), seed)
            t = None if truth is None else truth[test]
            res = score(h[cal], y[cal], h[test], y[test], t)
            for clip, row in res.items():
                records.append(
                    {"family": family, "row": name, "seed": seed, "clip": clip, **row}
                )
    R = pd.DataFrame(records)
    R.to_csv(args.out.with_suffix(".csv"), index=False)
    lines = [
        "# TemperatureScaler: which clip before the logit of a probability",
        "",
        f"{args.seeds} seeds (random 50/50 calibration/test splits per row); "
        f"{time.perf_counter() - start:.0f} s; load average at start "
        f"{tuple(round(v, 1) for v in load)}. Means over (row, seed) of the test "
        "half; 'NLL wins' = rows (averaged over seeds) where this clip has the "
        "lowest mean NLL (ties shared out); 'AUC changed' = share of (row, seed) "
        "where the calibrated AUC differs from the raw confidences' AUC.",
        "",
        *table(R),
        "",
        "Reading: ``TemperatureScaler`` uses the ``resolution`` clip. It removes "
        "the damage of exact 1.0s where they exist (simulation, verbalized "
        "confidences) as Platt's clip does, while on confidences crowding 1 "
        "(CIFAR, token probabilities) it keeps every fitted confidence distinct: "
        "Platt's ``1 / (W + 2)`` floor merges them, changes the AUC in most "
        "splits and costs NLL on CIFAR. On the token rows the mean NLL "
        "improves, but ``1e-12`` is best in more single rows: the gain is "
        "concentrated in rows with exact 1.0s. On the pooled LLM sets (12 "
        "models together) Platt's floor has the lowest NLL, this clip is in "
        "between and ``1e-12`` worst; the floor pays for it by changing the AUC "
        "in every split, which temperature scaling exists not to do (the "
        "invariance theorem), so the choice stays the ranking-preserving clip.",
    ]
    write_result(args.out, lines)


if __name__ == "__main__":
    main()
