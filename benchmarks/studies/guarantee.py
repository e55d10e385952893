# SPDX-License-Identifier: MIT
"""Coverage of the Thm 3.1 bound: beta-binning's ``points_per_bin="auto"``
(fallback included) and, with ``--part scaling``, scaling-beta-binning per cell.

Issue 10 goal 3 (``--part beta-binning``, the default). A simulation with known truth: partition feature ``z`` with
a skewed density (Beta(2, 5)), confidence ``h`` uniform and independent of it,
true accuracy ``acc(z, h) = clip(h ** (0.4 + 1.6 z) - 0.1 z, 0, 1)`` (the
miscalibration changes with ``z``). A depth-4 kd-tree is fitted on a separate
uniform sample of ``z`` (a frozen beta whose 16 cells get very different
numbers of calibration rows), so some cells are below ``b`` and fall back to
their nearest ancestor region or the root.

Per repeat: draw the calibration rows, fit
``BetaBinningCalibrator(FrozenEstimator(tree), points_per_bin="auto",
epsilon=eps, alpha=alpha)`` and check, for every fitted table (own cells,
ancestor regions, root), that every bin's value is within the table's
``epsilon_`` of the bin's true accuracy, computed on a large independent truth
sample from the same distribution restricted to the table's region and the
bin's confidence interval. Coverage = share of repeats where every bin of
every table holds simultaneously; Thm 3.1 promises ``>= 1 - alpha``.

``--part scaling`` (issue 21 item 4): ``ScalingBetaBinningCalibrator`` with
``nu="auto"`` and a fixed ``b`` -- ``scaler="pooled"`` and ``"hierarchical"``
and ``scaler="features"`` one split, and the members of ``scaler="features",
cv=2`` -- each judged per table against its own ``epsilon_`` with the true
accuracy of its bins (:func:`scaling_study`), on the skewed simulation above
with a depth-2 tree (``--sim skewed``) or on the planted groups of
``benchmarks/_planted.py`` with a 32-d embedding (``--sim planted``). Each
writes its own section of the results file.

Usage::

    nice .venv/bin/python benchmarks/studies/guarantee.py --repeats 100 \
        --out benchmarks/results/guarantee.md
    OMP_NUM_THREADS=1 nice .venv/bin/python benchmarks/studies/guarantee.py \
        --part scaling --sim skewed --repeats 50 --n 8000 --b 200
    OMP_NUM_THREADS=1 nice .venv/bin/python benchmarks/studies/guarantee.py \
        --part scaling --sim planted --repeats 30 --n 24000 --b 200
    # also --sim skewed: --repeats 30 --n 8000 --b 50; --repeats 20 --n 16000 --b 800
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.frozen import FrozenEstimator

from sklearn_betacal import BetaBinningCalibrator, KDTreePartitioner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness
from _measure import RESULTS  # noqa: E402


def accuracy(z, h):
    return np.clip(h ** (0.4 + 1.6 * z) - 0.1 * z, 0, 1)


def draw(rng, n):
    z = rng.beta(2, 5, size=n)
    h = rng.uniform(size=n)
    return z, h


def regions(bb, tree, cells_truth):
    """(table, boolean mask of truth rows in its region, epsilon) per table."""
    tables = bb.tables_
    out = {0: (tables.table(0), np.ones(cells_truth.shape[0], bool), bb.epsilon_root_)}
    eps = dict(zip(bb.cells_.tolist(), bb.epsilon_.tolist(), strict=True))
    to = dict(zip(bb.fallback_cells_.tolist(), bb.fallback_to_.tolist(), strict=True))
    chains = tree.cell_ancestors() if hasattr(tree, "cell_ancestors") else []
    route = zip(bb._route_cells.tolist(), bb._route_table.tolist(), strict=True)
    for cell, j in route:
        if j in out:
            continue
        if cell in to:  # an ancestor region: all leaves below the node
            below = [c for c, ch in enumerate(chains) if to[cell] in ch.tolist()]
            mask = np.isin(cells_truth, below)
        else:
            mask = cells_truth == cell
        out[j] = (tables.table(j), mask, eps[cell])
    return list(out.values())


def table_ratios(bb, tree, s_t, acc_t, cells_t):
    """Worst ``|true accuracy of a bin - its value| / epsilon_`` per table.

    ``s_t``: the binned score of the truth rows (``h``, or ``g(x)`` for
    ``scaler="features"``); a bin's truth is the mean of ``acc_t`` over the
    truth rows of the table's region whose score falls in it.
    """
    out = []
    for table, mask, eps in regions(bb, tree, cells_t):
        edges = np.r_[-np.inf, table.edges, np.inf]
        sm, am = s_t[mask], acc_t[mask]
        idx = np.searchsorted(edges, sm, side="left") - 1  # bins (e_k, e_k+1]
        worst = 0.0
        for k, value in enumerate(table.values):
            sel = idx == k
            if not sel.any() or not np.isfinite(value):
                continue
            worst = max(worst, abs(am[sel].mean() - value) / eps)
        out.append(worst)
    return np.asarray(out)


def covered(bb, tree, z_t, h_t, acc_t, cells_t):
    worst_ratio = float(table_ratios(bb, tree, h_t, acc_t, cells_t).max())
    return worst_ratio <= 1.0, worst_ratio


SCALING_HEADING = (
    "# Thm 3.1 per cell for ScalingBetaBinningCalibrator (one split and cv members)"
)


def write_section(path, text):
    """Replace the section of ``path`` that starts with ``text``'s heading
    (its first line) by ``text``, or append it: one current file, one
    section per study."""
    heading = text.splitlines()[0]
    old = path.read_text() if path.exists() else ""
    sections, cur = [], []
    for line in old.splitlines(keepends=True):
        if line.startswith("# ") and cur:
            sections.append("".join(cur))
            cur = []
        cur.append(line)
    if cur:
        sections.append("".join(cur))
    body = text if text.endswith("\n") else text + "\n"
    for i, sec in enumerate(sections):
        if sec.splitlines()[0] == heading:
            sections[i] = body
            break
    else:
        if sections and not sections[-1].endswith("\n\n"):
            sections[-1] += "\n"
        sections.append(body)
    path.write_text("".join(sections))


def binomial_ci(k, n):
    """Clopper-Pearson 95% interval of a rate ``k / n`` (scipy)."""
    from scipy.stats import binomtest

    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=0.95)
    return ci.low, ci.high


def pooled_nu(model, X, y, features):
    """The pooled estimate of ``nu`` alone (10 equal-mass bins of the binned
    score over all of D2), the rule ``nu="auto"`` used for the hierarchical
    and pooled scalers before it took the per-cell maximum too."""
    from sklearn_betacal import estimate_misspecification

    d2 = model.binning_indices_
    t2 = model.proxy_proba(X[d2])
    return estimate_misspecification(y[d2], t2, t2 if features else X[d2, 0])


def judge(model, tree, X_t, h_t, acc_t, cells_t, features, X, y):
    """Per table of one fitted (one-split) model: worst gap / epsilon_, the
    true misspecification of its proxies (largest |mean acc - mean g| over
    its bins, truth rows), the ``nu_`` it used and the pooled estimate."""
    g_t = model.proxy_proba(X_t)
    s_t = g_t if features else h_t
    ratios = table_ratios(model, tree, s_t, acc_t, cells_t)
    true_nu = 0.0
    for table, mask, _ in regions(model, tree, cells_t):
        edges = np.r_[-np.inf, table.edges, np.inf]
        idx = np.searchsorted(edges, s_t[mask], side="left") - 1
        gap = acc_t[mask] - g_t[mask]
        cnt = np.bincount(idx, minlength=table.values.shape[0])
        tot = np.bincount(idx, weights=gap, minlength=table.values.shape[0])
        used = cnt > 0
        true_nu = max(true_nu, float(np.max(np.abs(tot[used] / cnt[used]))))
    return ratios, true_nu, float(model.nu_), pooled_nu(model, X, y, features)


PLANTED_GROUPS, PLANTED_DIM = 16, 32


def planted_sim(args):
    """The planted groups of ``benchmarks/_planted.py`` with equal sizes:
    ``(sample, partitioner, X_t, h_t, p_t, cells_t)`` for the scaling study."""
    from _planted import planted_groups

    from sklearn_betacal import GroupColumnPartitioner

    k = PLANTED_GROUPS
    *_, truth = planted_groups(k, dim=PLANTED_DIM, sizes=2, random_state=7)
    h_t, E_t, g_t, p_t, _, _ = planted_groups(
        k, dim=PLANTED_DIM, sizes=args.truth // k, truth=truth, random_state=8
    )
    X_t = np.column_stack([h_t, g_t, E_t])
    part = GroupColumnPartitioner(0).fit(X_t[:, 1:])
    cells_t = part.apply(X_t[:, 1:])

    def sample(rng):
        h, E, g, _, y, _ = planted_groups(
            k,
            dim=PLANTED_DIM,
            sizes=args.n // k,
            truth=truth,
            random_state=int(rng.integers(1 << 31)),
        )
        return np.column_stack([h, g, E]), y

    return sample, part, X_t, h_t, p_t, cells_t


def fit_sbb(partitioner, X, y, args, seed, **params):
    from sklearn_betacal import ScalingBetaBinningCalibrator

    return ScalingBetaBinningCalibrator(
        FrozenEstimator(partitioner),
        points_per_bin=args.b,
        alpha=args.alpha,
        random_state=seed,
        **params,
    ).fit(X, y)


def scaling_study(args):
    """Thm 3.1 per cell for S-BB / HS-BB (``ScalingBetaBinningCalibrator``).

    Same truth as the beta-binning study, but the accuracy's dependence on
    ``z`` *within* a cell is what only ``scaler="features"`` sees: a depth-2
    kd-tree fitted on a separate sample of ``z`` (4 cells of about equal
    mass), ``X = [h, z]``, fixed ``b``. Per seed: ``scaler="hierarchical"``
    and ``scaler="features"`` one split, and the two members of
    ``scaler="features", cv=2``; every one is judged as its own Alg. 3
    (every bin of every table within that table's ``epsilon_``; the union
    bound makes them hold together with probability >= 1 - alpha).
    """
    from threadpoolctl import threadpool_limits

    start, load0 = time.perf_counter(), os.getloadavg()
    rng = np.random.default_rng(1)
    if args.sim == "planted":
        sample, tree, X_t, h_t, acc_t, cells_t = planted_sim(args)
    else:
        tree = KDTreePartitioner(max_depth=2).fit(rng.beta(2, 5, size=(4000, 1)))
        z_t, h_t = draw(rng, args.truth)
        acc_t = accuracy(z_t, h_t)
        X_t = np.column_stack([h_t, z_t])
        cells_t = tree.apply(z_t.reshape(-1, 1))

        def sample(rng):
            z, h = draw(rng, args.n)
            y = (rng.uniform(size=args.n) < accuracy(z, h)).astype(int)
            return np.column_stack([h, z]), y

    kinds = ["pooled", "hierarchical", "features", "features, cv=2 member"]
    fits = {k: [] for k in kinds}  # (table ratios, true nu, nu_) per fit
    with threadpool_limits(limits=1):
        for _ in range(args.repeats):
            X, y = sample(rng)
            seed = int(rng.integers(1 << 31))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                models = [
                    (scaler, fit_sbb(tree, X, y, args, seed, scaler=scaler))
                    for scaler in ["pooled", "hierarchical", "features"]
                ]
                cv = fit_sbb(tree, X, y, args, seed, scaler="features", cv=2)
            models += [("features, cv=2 member", m) for m in cv.estimators_]
            for kind, model in models:
                feats = kind.startswith("features")
                fits[kind].append(
                    judge(model, tree, X_t, h_t, acc_t, cells_t, feats, X, y)
                )
    rows = []
    for kind in kinds:
        res = fits[kind]
        n_fit = len(res)
        bad_fit = sum(bool(np.any(r[0] > 1.0)) for r in res)
        n_tab = sum(r[0].shape[0] for r in res)
        bad_tab = sum(int(np.sum(r[0] > 1.0)) for r in res)
        lo, hi = binomial_ci(bad_fit, n_fit)
        tlo, thi = binomial_ci(bad_tab, n_tab)
        under = sum(t > nu for _, t, nu, _ in res)
        under_pooled = sum(t > pool for _, t, _, pool in res)
        rows.append(
            f"| {kind} | {bad_fit}/{n_fit} = **{bad_fit / n_fit:.2f}** "
            f"[{lo:.2f}, {hi:.2f}] | {bad_tab}/{n_tab} = {bad_tab / n_tab:.2f} "
            f"[{tlo:.2f}, {thi:.2f}] "
            f"| {np.median([r[0].max() for r in res]):.2f} "
            f"| {np.median([r[3] for r in res]):.3f} "
            f"| {np.median([r[2] for r in res]):.3f} "
            f"| {np.median([r[1] for r in res]):.3f} | {under_pooled}/{n_fit} "
            f"| {under}/{n_fit} |"
        )
    if args.sim == "planted":
        setting = (
            f"planted groups ({PLANTED_GROUPS} Gaussian blobs in "
            f"{PLANTED_DIM}-d, true p = sigmoid(a_g + s_g logit h)), the group as "
            "the cell (GroupColumnPartitioner), X = [h, group, embedding] (the "
            "boosting sees the 32-d embedding)"
        )
    else:
        setting = (
            "z ~ Beta(2, 5), h ~ U(0, 1), acc(z, h) = clip(h ** (0.4 + 1.6 z) "
            "- 0.1 z, 0, 1) (miscalibration varies with z inside a cell); "
            "depth-2 kd-tree (4 cells of about equal mass) fitted on a separate "
            "sample; X = [h, z]"
        )
    text = "\n".join(
        [
            f"{SCALING_HEADING}: {args.sim}, b = {args.b}",
            "",
            f"{args.repeats} seeds of {args.n} calibration rows (one split: "
            f"D2 = {args.n // 2}; cv=2: each member bins one fold of "
            f"{args.n // 2}); b = {args.b}, alpha {args.alpha}, nu='auto'; "
            f"{setting}. Truth: {args.truth} independent draws. "
            f"{time.perf_counter() - start:.0f} s, load {tuple(round(v, 2) for v in load0)} "
            f"at start, {tuple(round(v, 2) for v in os.getloadavg())} at end "
            "(1 BLAS thread, 2 shared cores).",
            "",
            "A fit *violates* when some bin of some table (cell, ancestor "
            "region or root) is farther than that table's `epsilon_` from the "
            "bin's true accuracy (mean of acc over the truth rows of the "
            "table's region whose binned score - h, or g(x) for "
            "scaler='features' - falls in the bin). Thm 3.1 with the union "
            "bound over all bins promises a violation rate <= alpha per fit, "
            "so also per table. Rates with Clopper-Pearson 95% intervals. "
            "`nu_` is the largest of the pooled estimate (10 equal-mass bins "
            "of the binned score over D2) and the estimate within each cell "
            "of weight >= 100; the pooled estimate alone (the rule of the "
            "hierarchical and pooled scalers before) is shown beside it.",
            "",
            "| model | fits violating | tables violating | worst gap / epsilon_ "
            "(median) | pooled nu (median) | nu_ used (median) | true nu of "
            "the proxies (median) | fits with true nu > pooled nu "
            "| fits with true nu > nu_ |",
            "|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
        ]
    )
    write_section(args.out, text)
    print(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--n", type=int, default=6000)
    parser.add_argument("--epsilon", type=float, default=0.15)
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--out", type=Path, default=RESULTS / "guarantee.md")
    parser.add_argument(
        "--part",
        choices=["beta-binning", "scaling"],
        default="beta-binning",
        help="beta-binning: points_per_bin='auto' with fallback; scaling: "
        "ScalingBetaBinningCalibrator per cell (its own --n, --b, --truth)",
    )
    parser.add_argument("--b", type=int, default=200)
    parser.add_argument("--truth", type=int, default=200_000)
    parser.add_argument("--sim", choices=["skewed", "planted"], default="skewed")
    args = parser.parse_args(argv)
    if args.part == "scaling":
        return scaling_study(args)
    start, load0 = time.perf_counter(), os.getloadavg()
    rng = np.random.default_rng(0)
    tree = KDTreePartitioner(max_depth=4).fit(rng.uniform(size=(4000, 1)))
    z_t, h_t = draw(rng, 1_000_000)
    acc_t = accuracy(z_t, h_t)
    cells_t = tree.apply(z_t.reshape(-1, 1))
    held, ratios, n_fb_anc, n_fb_root, bs = 0, [], [], [], []
    for _ in range(args.repeats):
        z, h = draw(rng, args.n)
        y = (rng.uniform(size=args.n) < accuracy(z, h)).astype(int)
        X = np.column_stack([h, z])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bb = BetaBinningCalibrator(
                FrozenEstimator(tree),
                points_per_bin="auto",
                epsilon=args.epsilon,
                alpha=args.alpha,
                delta=0.0,
                random_state=int(rng.integers(1 << 31)),
            ).fit(X, y)
        ok, ratio = covered(bb, tree, z_t, h_t, acc_t, cells_t)
        held += ok
        ratios.append(ratio)
        n_fb_anc.append(int(np.sum(bb.fallback_to_ >= 0)))
        n_fb_root.append(int(np.sum(bb.fallback_to_ < 0)))
        bs.append(bb.points_per_bin_)
    cov = held / args.repeats
    text = "\n".join(
        [
            "# Thm 3.1 coverage for points_per_bin='auto' with cells, fallback included",
            "",
            f"{args.repeats} repeats of {args.n} calibration rows; epsilon target "
            f"{args.epsilon}, alpha {args.alpha}; depth-4 kd-tree (16 cells) fitted "
            "on a separate uniform sample while z ~ Beta(2, 5), so cells differ "
            f"in size. {time.perf_counter() - start:.0f} s, load {load0} (nice, "
            "2 shared cores).",
            "",
            "| quantity | value |",
            "|---|---|",
            f"| chosen b (median) | {int(np.median(bs))} |",
            f"| cells with own binning (median of 16) | "
            f"{int(np.median([16 - a - r for a, r in zip(n_fb_anc, n_fb_root, strict=True)]))} |",
            f"| cells served by an ancestor region (median) | {int(np.median(n_fb_anc))} |",
            f"| cells served by the root (median) | {int(np.median(n_fb_root))} |",
            f"| coverage: every bin of every table within its epsilon_ | "
            f"**{cov:.2f}** (Thm 3.1: >= {1 - args.alpha:.2f}) |",
            f"| worst gap / epsilon_ (median over repeats) | {np.median(ratios):.2f} |",
            "",
            "Each bin's truth is the mean of acc(z, h) over 10^6 independent draws "
            "in the table's region (its cell, the leaves below its ancestor node, "
            "or everything for the root) and the bin's confidence interval.",
            "",
        ]
    )
    write_section(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
