# SPDX-License-Identifier: MIT
"""Before/after tables of issue 10 from the recorded experiment CSVs.

Reads the CSVs of ``paper_experiment.py`` in ``results/``: verbalized
confidences before issue 10 (``paper_experiment_verbal_before.csv``: AUAC
tuning, 1e-12 logit clip, cells needing 2b, no learned partition), after
(``paper_experiment_verbal.csv``, tuned by the debiased CE(h;beta); its first
3-seed record ``paper_experiment_verbal_3seeds.csv``; tuned by AUAC
``paper_experiment_verbal_auac.csv``; with depth 0 in the grid
``paper_experiment_verbal_depth0.csv``), the same for token probabilities
(``paper_experiment_token_before.csv``, ``paper_experiment_token.csv``,
``paper_experiment_token_depth0.csv``) and the demo's reports before and
after (``demo_before_issue10.md``, ``demo_after_issue10.md``), and writes
``results/issue10_before_after.md``: per (dataset, model) row how often a
beta-method (BB, BB-T, HS-BB, S-BB) has the best CE(h;beta) -- plug-in and
debiased -- with ties apart, how the best beta-method compares with UMD
binning (B), and whether each row's verdict is larger than its noise over
seeds (:func:`row_verdicts`).

Usage::

    .venv/bin/python benchmarks/studies/before_after_issue10.py
"""

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness
from _measure import RESULTS as HERE  # noqa: E402

BETA = {"BB", "BB-T", "HS-BB", "S-BB"}
KEYS = ["dataset", "model", "kind"]


def read(spec):
    """A recorded CSV, or ``(base, variant[, rename])``: base with the
    calibrators of the variant's CSV replaced by the variant's rows (same
    seeds and splits: the variant run repeats a calibrator with other
    settings; ``rename`` maps a variant's name onto the one it replaces)."""
    if isinstance(spec, str | Path):
        spec = (spec, None)
    base, variant, rename = (*spec, {})[:3]
    R = pd.read_csv(HERE / base, keep_default_na=False, na_values=[""])
    if variant is not None:
        V = pd.read_csv(HERE / variant, keep_default_na=False, na_values=[""])
        V["calibrator"] = V.calibrator.replace(rename)
        redo = set(V.calibrator) - {"B"}  # B is run alongside as a check
        R = pd.concat([R[~R.calibrator.isin(redo)], V[V.calibrator.isin(redo)]])
    return R


def exists(spec):
    files = [spec] if isinstance(spec, str | Path) else spec[:2]
    return all((HERE / f).exists() for f in files)


def stats(path):
    R = read(path)  # "None" is a calibrator's name, not a missing value
    R = R[R.model != "pooled"]
    M = R.groupby([*KEYS, "calibrator"]).mean(numeric_only=True).reset_index()
    out = {"rows": M.groupby(KEYS).ngroups, "seeds": R.seed.nunique()}
    for col in ("beta_ce", "beta_ce_debiased"):
        if col not in M:
            out[col] = "not recorded"
            continue
        T = M.pivot_table(index=KEYS, columns="calibrator", values=col)
        beta = T[[c for c in T.columns if c in BETA]].min(axis=1)
        base = T[[c for c in T.columns if c not in BETA]].min(axis=1)
        n, ties = int((beta < base).sum()), int((beta == base).sum())
        best = T.eq(T.min(axis=1), axis=0)
        alone = best[best.sum(axis=1) == 1].idxmax(axis=1).value_counts()
        out[col] = (
            f"{n} of {len(T)} ({100 * n / len(T):.0f} %)"
            + (f" + {ties} tied" if ties else "")
            + "; "
            + ", ".join(f"{k} {v}" for k, v in alone.items())
        )
    umd = M[M.calibrator == "B"].set_index(KEYS)
    beta = M[M.calibrator.isin(BETA)]
    best = beta.loc[beta.groupby(KEYS).beta_ce.idxmin()].set_index(KEYS)
    ratio = (best.beta_ce / umd.beta_ce).dropna()
    out["best_over_umd"] = float(np.exp(np.log(ratio).mean()))
    bb = (M[M.calibrator == "BB"].set_index(KEYS).beta_ce / umd.beta_ce).dropna()
    out["bb_over_umd"] = float(np.exp(np.log(bb).mean()))
    if "brier" in M:
        brier = best.brier - umd.brier
        out["brier"] = f"{int((brier <= 0).sum())} of {len(brier)}"
    else:
        out["brier"] = "not recorded"
    return out


def stats_lines(runs):
    lines = [
        "| run | seeds | β-method best by CE(h;β) | β-method best by debiased "
        "CE²(h;β) | best β-method / UMD CE (geo. mean) | BB / UMD CE (geo. mean) | "
        "best β-method's Brier ≤ UMD's |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, file in runs:
        if not exists(file):
            lines.append(f"| {name} | — | not run | | | | |")
            continue
        s = stats(file)
        lines.append(
            f"| {name} | {s['seeds']} | {s['beta_ce']} | {s['beta_ce_debiased']} | "
            f"{s['best_over_umd']:.3f} | {s['bb_over_umd']:.3f} | {s['brier']} |"
        )
    return lines


def recorded_section(heading):
    """The lines under ``### heading`` in the current record (this script's output)."""
    path = HERE / "issue10_before_after.md"
    lines = path.read_text().splitlines() if path.exists() else []
    if f"### {heading}" not in lines:
        return [f"({heading}: not recorded)"]
    out = []
    for line in lines[lines.index(f"### {heading}") + 1 :]:
        if line.startswith("### ") or line.startswith("## "):
            break
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return out


def demo_tables(file, heading):
    """The per-confidence-kind tables of a recorded demo report.

    The two demo reports were folded into this record and deleted (git keeps
    them): without the file, the tables already in the record are kept.
    """
    path = HERE / file
    if not path.exists():
        return recorded_section(heading)
    out, keep = [], False
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            keep = "confidence" in line
            if keep:
                out += ["", "##" + line, ""]
        elif keep and line.startswith("|"):
            out.append(line)
    return out


BASELINES = {"S-B", "S", "B", "TS", "None"}


def row_verdicts(path, col="beta_ce_debiased", pooled=False, n_boot=2000, seed=0):
    """Per row: best beta-method vs best baseline, with the noise over seeds.

    For every (dataset, model, kind) row the best beta-method and the best
    baseline are the ones with the lowest mean of ``col`` over seeds; ``d_s``
    is their paired difference on seed ``s`` and ``se`` its standard error
    (``sd / sqrt(n_seeds)``). A row is a *tie* when both give identical
    numbers on every seed (a one-cell learned tree is plain UMD). The count's
    uncertainty is a bootstrap over seeds (the same resampled seeds for every
    calibrator of a row, rows resampled independently). Note the selection
    favours the family with more members (four beta-methods against three
    baselines that can win); the margin counts (``> 2 se``) are the robust
    ones.
    """
    R = read(path)
    R = R[(R.model == "pooled") == pooled]
    out = []
    for key, block in R.groupby(KEYS, sort=True):
        P = block.pivot(index="seed", columns="calibrator", values=col)
        beta = [c for c in P.columns if c in BETA]
        base = [c for c in P.columns if c in BASELINES]
        mean = P.mean()
        b, a = mean[beta].idxmin(), mean[base].idxmin()
        d = (P[b] - P[a]).to_numpy()
        n = d.shape[0]
        se = float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan
        out.append(
            {
                "row": "/".join(key[:2]),
                "beta": b,
                "baseline": a,
                "diff": float(d.mean()),
                "se": se,
                "tie": bool(np.all(d == 0)),
                "P": P[beta + base].to_numpy(),
                "n_beta": len(beta),
            }
        )
    rng = np.random.default_rng(seed)
    boot = np.zeros(n_boot, dtype=int)
    for r in out:
        P, k = r.pop("P"), r.pop("n_beta")
        idx = rng.integers(0, P.shape[0], size=(n_boot, P.shape[0]))
        m = P[idx].mean(axis=1)  # (n_boot, n_methods)
        boot += m[:, :k].min(axis=1) < m[:, k:].min(axis=1)
    V = pd.DataFrame(out)
    V["z"] = V["diff"] / V.se.where(V.se > 0)
    summary = {
        "rows": len(V),
        "seeds": R.seed.nunique(),
        "beta_best": int(((V["diff"] < 0) & ~V.tie).sum()),
        "ties": int(V.tie.sum()),
        "base_best": int((V["diff"] > 0).sum()),
        "beta_clear": int((V["diff"] < -2 * V.se).sum()),
        "base_clear": int((V["diff"] > 2 * V.se).sum()),
        "inside": int(((V["diff"].abs() <= 2 * V.se) & ~V.tie).sum()),
        "boot": np.percentile(boot, [5, 50, 95]).astype(int).tolist(),
    }
    return V, summary


def noise_lines(runs):
    """Markdown table of :func:`row_verdicts` summaries, one line per run."""
    lines = [
        "| run | seeds | rows | β-method best (mean) | tied (identical) | baseline "
        "best | β best by > 2 se | baseline best by > 2 se | inside ± 2 se | "
        "β best, bootstrap over seeds (5 / 50 / 95 %) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, file, pooled in runs:
        if not exists(file):
            lines.append(f"| {name} | — | not run | | | | | | | |")
            continue
        _, s = row_verdicts(file, pooled=pooled)
        lo, mid, hi = s["boot"]
        lines.append(
            f"| {name} | {s['seeds']} | {s['rows']} | {s['beta_best']} | "
            f"{s['ties']} | {s['base_best']} | {s['beta_clear']} | "
            f"{s['base_clear']} | {s['inside']} | {lo} / {mid} / {hi} |"
        )
    return lines


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    verbal = [
        (
            "before (AUAC tuning, 1e-12 clip, cells need 2b)",
            "paper_experiment_verbal_before.csv",
        ),
        (
            "after, tuned by debiased CE(h;β), first record (19:30)",
            "paper_experiment_verbal_3seeds.csv",
        ),
        ("after, tuned by debiased CE(h;β) (default)", "paper_experiment_verbal.csv"),
        (
            "after, tuned by AUAC (the paper's option)",
            "paper_experiment_verbal_auac.csv",
        ),
        (
            "after, debiased CE, grid with depth 0",
            "paper_experiment_verbal_depth0.csv",
        ),
        (
            "after, debiased CE, BB-T's tree on 8 principal directions, no stop",
            ("paper_experiment_verbal.csv", "paper_experiment_verbal_bbt_pca.csv"),
        ),
        (
            "after, debiased CE, BB's grid also holds the learned trees (BB-KT)",
            (
                "paper_experiment_verbal.csv",
                "paper_experiment_verbal_bbkt.csv",
                {"BB-KT": "BB"},
            ),
        ),
    ]
    token = [
        (
            "before (AUAC tuning, 1e-12 clip, cells need 2b)",
            "paper_experiment_token_before.csv",
        ),
        ("after, tuned by debiased CE(h;β) (default)", "paper_experiment_token.csv"),
        ("after, debiased CE, grid with depth 0", "paper_experiment_token_depth0.csv"),
        (
            "after, debiased CE, BB-T's tree on 8 principal directions, no stop",
            ("paper_experiment_token.csv", "paper_experiment_token_bbt_pca.csv"),
        ),
        (
            "after, debiased CE, BB's grid also holds the learned trees (BB-KT)",
            (
                "paper_experiment_token.csv",
                "paper_experiment_token_bbkt.csv",
                {"BB-KT": "BB"},
            ),
        ),
    ]
    noise = [
        ("verbal, first record", "paper_experiment_verbal_3seeds.csv", False),
        ("verbal", "paper_experiment_verbal.csv", False),
        ("verbal, tuned by AUAC", "paper_experiment_verbal_auac.csv", False),
        ("verbal, grid with depth 0", "paper_experiment_verbal_depth0.csv", False),
        ("token", "paper_experiment_token.csv", False),
        ("token, grid with depth 0", "paper_experiment_token_depth0.csv", False),
        (
            "verbal, BB-T on principal directions",
            ("paper_experiment_verbal.csv", "paper_experiment_verbal_bbt_pca.csv"),
            False,
        ),
        (
            "token, BB-T on principal directions",
            ("paper_experiment_token.csv", "paper_experiment_token_bbt_pca.csv"),
            False,
        ),
        (
            "verbal, BB's grid with the learned trees",
            (
                "paper_experiment_verbal.csv",
                "paper_experiment_verbal_bbkt.csv",
                {"BB-KT": "BB"},
            ),
            False,
        ),
        (
            "token, BB's grid with the learned trees",
            (
                "paper_experiment_token.csv",
                "paper_experiment_token_bbkt.csv",
                {"BB-KT": "BB"},
            ),
            False,
        ),
        ("verbal, pooled rows", "paper_experiment_verbal.csv", True),
        ("token, pooled rows", "paper_experiment_token.csv", True),
    ]
    lines = [
        "# Issue 10: per-model rows, before and after",
        "",
        "Written by `benchmarks/studies/before_after_issue10.py` from the recorded CSVs of "
        "`paper_experiment.py` (48 (dataset, model) rows per confidence kind; "
        "the pooled rows are left out of the first two tables). β-methods: BB, "
        "BB-T (BB on the learned partition; after only), HS-BB, S-BB; baselines "
        "S-B, S, B, TS, None. Goal: a β-method best in ≥ 75 % of the verbalized "
        "rows (36 of 48) by the debiased CE(h;β). A row counts for the β-methods "
        "when the best β-method's mean over seeds is *strictly* below every "
        "baseline's; rows where both are identical (a one-cell learned tree is "
        "plain UMD) are counted apart as tied, and the per-calibrator counts "
        "after the semicolon list unique winners only.",
        "",
        "## Verbalized confidences",
        "",
        *stats_lines(verbal),
        "",
        "## Token-probability confidences",
        "",
        *stats_lines(token),
        "",
        "## Is the count inside the noise?",
        "",
        "Per row, the paired difference (over seeds) of the debiased CE² between "
        "the best β-method and the best baseline, and its standard error "
        "`se = sd / sqrt(seeds)`. 'by > 2 se': rows where that difference is "
        "larger than twice its standard error; 'inside ± 2 se': the rest "
        "(ties apart). Last column: the count of rows where a β-method is best, "
        "recomputed on 2,000 bootstrap resamples of the seeds (the same "
        "resample for every calibrator of a row).",
        "",
        *noise_lines(noise),
        "",
        "## The demo (`betacal demo --seeds 4`), before and after",
        "",
        "Before: the code at 62f9703 (2026-11-29, before issue 10: tuned by AUAC, "
        "1e-12 logit clip, cells needing 2b, no floor or debiased CE in the "
        "report). After: the code of this record (tuned by the debiased CE(h;β)). "
        "Same data (bundled TriviaQA, 12 LLMs pooled), same seeds.",
        "",
        "### Before",
        *demo_tables("demo_before_issue10.md", "Before"),
        "",
        "### After",
        *demo_tables("demo_after_issue10.md", "After"),
    ]
    (HERE / "issue10_before_after.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
