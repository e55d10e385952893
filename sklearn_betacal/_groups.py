# SPDX-License-Identifier: MIT
"""Question groups: every internal split keeps a group on one side.

An LLM answer log holds several answers per question (several models, several
samples); rows of one question share its difficulty, so a split that puts
some of them on each side is not a split of independent data. The library's
internal splits -- the honest split of a learned partitioner, the D1/D2
split and the ``cv=k`` folds of the scaling calibrators, a learned tree's
recalibration folds -- accept the rows' question ids as scikit-learn's
``groups`` (``fit(X, y, groups=g)``, or routed with metadata routing) and
then draw *groups*, never rows:

- :func:`check_groups`: one group id per row, as codes ``0 .. G - 1``;
- :func:`group_split`: two sides, the first holding about a ``fraction`` of
  the rows (the groups in one random order, cut where the rows reach it);
- :func:`group_folds`: ``k`` folds of about equal rows (the groups in one
  random order, each given to the lightest fold, as ``GroupKFold`` does).

Both draw one permutation of the groups from the caller's generator, so a
calibrator's ``random_state`` fixes them (byte-identical refits) and the
generator then goes on to draw what it drew after the row permutation.
"""

import heapq

import numpy as np


def check_groups(groups, n_rows, *, who):
    """The group of every row as int64 codes ``0 .. G - 1`` (``None`` stays).

    ``groups``: one hashable label per row (question ids of any type: ints,
    strings). Codes follow the sorted labels, so they do not depend on the
    order of the rows. A missing label (``None``, NaN) is an error: a row
    whose question is unknown cannot be kept with its question.
    """
    if groups is None:
        return None
    arr = np.asarray(groups)
    if arr.ndim != 1:
        arr = arr.reshape(-1) if arr.ndim == 2 and arr.shape[1] == 1 else arr
    if arr.ndim != 1 or arr.shape[0] != n_rows:
        raise ValueError(
            f"{who}: groups must hold one question id per row of X ({n_rows}); "
            f"got shape {np.shape(groups)}."
        )
    import pandas as pd

    missing = pd.isna(arr)
    if np.any(missing):
        raise ValueError(
            f"{who}: groups has {int(np.count_nonzero(missing))} missing "
            "value(s); every row needs its question id (fill them, or drop "
            "those rows)."
        )
    try:
        _, codes = np.unique(arr, return_inverse=True)
    except TypeError:  # labels of mixed types: compared as text
        _, codes = np.unique(arr.astype(str), return_inverse=True)
    return codes.reshape(-1).astype(np.int64, copy=False)


def n_groups(codes):
    """Number of distinct groups among ``codes`` (any subset of the codes)."""
    return int(np.unique(codes).shape[0])


def _compact(codes):
    """``codes`` renumbered ``0 .. G - 1`` (a subset of rows may miss some)."""
    _, codes = np.unique(codes, return_inverse=True)
    return codes.reshape(-1)


def _too_few(who, need, have, what, fix):
    return ValueError(
        f"{who}: {what} needs at least {need} question groups (every group on "
        f"one side); got {have}. {fix}"
    )


def group_split(codes, fraction, rng, *, who, what="the split", fix=""):
    """Rows of two sides, no group on both: ``(first, second)``, sorted.

    The groups are drawn in one random order (``rng.permutation``); the
    first side takes them in that order up to the cut whose row count is
    nearest ``round(fraction * n_rows)`` (the row split's size), at least
    one group on each side.
    """
    codes = _compact(codes)
    G = int(codes.max()) + 1 if codes.shape[0] else 0
    if G < 2:
        raise _too_few(who, 2, G, what, fix)
    sizes = np.bincount(codes, minlength=G)
    order = rng.permutation(G)
    cum = np.cumsum(sizes[order])[:-1]  # rows of the first side, 1 .. G-1 groups
    target = round(fraction * codes.shape[0])
    m = int(np.argmin(np.abs(cum - target))) + 1
    first = np.zeros(G, dtype=bool)
    first[order[:m]] = True
    on_first = first[codes]
    return np.flatnonzero(on_first), np.flatnonzero(~on_first)


def group_folds(codes, k, rng, *, who, what=None, fix=""):
    """``k`` folds of rows (sorted positions), no group in two folds.

    The groups are put in one random order (``rng.permutation``), then, the
    largest first (a stable sort, so equal sizes keep the random order),
    each goes to the fold with the fewest rows so far (the lowest index on
    ties): folds of about ``n_rows / k`` rows, as ``GroupKFold``'s.
    """
    codes = _compact(codes)
    G = int(codes.max()) + 1 if codes.shape[0] else 0
    if G < k:
        raise _too_few(who, k, G, what or f"{k} folds", fix)
    sizes = np.bincount(codes, minlength=G)
    order = rng.permutation(G)
    order = order[np.argsort(-sizes[order], kind="stable")]
    fold_of = np.empty(G, dtype=np.int64)
    heap = [(0, j) for j in range(k)]
    for g in order:
        rows, j = heapq.heappop(heap)
        fold_of[g] = j
        heapq.heappush(heap, (rows + int(sizes[g]), j))
    row_fold = fold_of[codes]
    return [np.flatnonzero(row_fold == j) for j in range(k)]


__all__ = ["check_groups", "group_folds", "group_split", "n_groups"]
