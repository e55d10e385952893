# SPDX-License-Identifier: MIT
"""Mergeable sufficient statistics of the calibration report.

:class:`CalibrationStatistics` holds, for every (group, equal-width bin),
the sums that every number of ``betacal report`` is a function of, plus
two *ordered* summaries for the numbers that need the rows sorted by
confidence (the per-group ECCE of :func:`calibration_test` and the AUC).
Statistics of disjoint chunks of rows are combined with :meth:`merge`,
exactly: the binned sums are sums, the counts are integers, and the
ordered summaries form a monoid (see :func:`_merge_paths`). So a data set
of any size is reported on by computing the statistics of each partition
and merging them -- :func:`sklearn_betacal.dask.calibration_statistics`
does that with dask, the partitions sorted by confidence -- and the memory
is a function of groups x bins, not of rows.

The numbers are computed from the statistics by the very kernels the
in-memory metrics use (``calibration_error_from_sums``,
``cell_calibration_errors``, ``_clopper_pearson``, ``_squared_gaps``,
``_binomial_mad``, ``kuiper_sf``, ``holm`` ...): one implementation of each
formula. Only the order of floating-point additions differs from the
in-memory path (agreement to about 1e-12 relative; counts are exact).

Ordered summaries. For the rows of one group sorted by confidence, with
``c_k`` the running sum of ``y - p`` and tied confidences one point of the
path, a segment of consecutive rows is summarized by ``(S, hi, lo, first,
last)``: its total ``S``, the largest and smallest running sum at the tie
ends strictly inside it (relative to its start), and its first and last
confidence. Two adjacent segments ``A`` then ``B`` give ``S = S_A + S_B``,
``hi = max(hi_A, S_A + hi_B, S_A if last_A != first_B)``; the Kuiper range
of the whole is ``max(0, hi, S) - min(0, lo, S)``, exactly the
:func:`~sklearn_betacal._kernels._cumulative.kuiper_range` of the rows. The
AUC's Mann-Whitney count ``2U`` (a tie counts one half) merges the same
way, with the counts of the boundary runs of equal confidences.
"""

import numpy as np

from .._kernels import _calibration as _k
from .._kernels import _cumulative as _kc

#: keys of the per-(group, bin) sums
_BIN_SUMS = ("count", "n_pos", "sum_p", "sum_r2")


def _empty_paths(n):
    return {
        "S": np.zeros(n),
        "hi": np.full(n, -np.inf),
        "lo": np.full(n, np.inf),
        "first": np.full(n, np.nan),
        "last": np.full(n, np.nan),
    }


def _merge_paths(a, b):
    """Ordered summaries of segment ``a`` followed by segment ``b`` (per group)."""
    a_occ = ~np.isnan(a["first"])
    b_occ = ~np.isnan(b["first"])
    both = a_occ & b_occ
    with np.errstate(invalid="ignore"):
        end = np.where(a["last"] != b["first"], a["S"], np.nan)
    hi = np.fmax(np.fmax(a["hi"], a["S"] + b["hi"]), end)
    lo = np.fmin(np.fmin(a["lo"], a["S"] + b["lo"]), end)
    return {
        "S": a["S"] + b["S"],
        "hi": np.where(both, hi, np.where(a_occ, a["hi"], b["hi"])),
        "lo": np.where(both, lo, np.where(a_occ, a["lo"], b["lo"])),
        "first": np.where(a_occ, a["first"], b["first"]),
        "last": np.where(b_occ, b["last"], a["last"]),
    }


def _chunk_paths(p, r, codes, n_groups):
    """Ordered summaries of one chunk sorted by confidence, per group."""
    # groups contiguous, p kept sorted (a radix sort for up to 65,536 groups)
    small = codes.astype(np.uint16) if n_groups <= 1 << 16 else codes
    order = np.argsort(small, kind="stable")
    ps, c = p[order], codes[order]
    cum = np.cumsum(r[order])
    rows = np.bincount(codes, minlength=n_groups)
    stop = np.cumsum(rows)
    start = stop - rows
    occ = rows > 0
    base = np.zeros(n_groups)
    inner = start > 0
    base[inner] = cum[start[inner] - 1]
    out = _empty_paths(n_groups)
    out["S"][occ] = cum[stop[occ] - 1] - base[occ]
    out["first"][occ] = ps[start[occ]]
    out["last"][occ] = ps[stop[occ] - 1]
    ends = np.zeros(ps.shape[0], dtype=bool)
    np.not_equal(ps[1:], ps[:-1], out=ends[:-1])
    ends[stop[occ] - 1] = False  # a group's last row: decided by the merge
    np.maximum.at(out["hi"], c[ends], cum[ends])
    np.minimum.at(out["lo"], c[ends], cum[ends])
    out["hi"] -= base
    out["lo"] -= base
    return out


def _chunk_auc(p, y, n=None):
    """Mann-Whitney summary of one chunk sorted by confidence (all rows).

    ``y`` holds each row's label, or with ``n`` the correct answers of
    ``n[i]`` rows at confidence ``p[i]`` (a value table).
    """
    starts = np.flatnonzero(np.concatenate([[True], p[1:] != p[:-1]]))
    run_pos = np.add.reduceat(y.astype(np.int64), starts)
    if n is None:
        run_n = np.diff(np.append(starts, p.shape[0]))
    else:
        run_n = np.add.reduceat(n.astype(np.int64), starts)
    run_neg = run_n - run_pos
    neg_before = np.cumsum(run_neg) - run_neg
    u2 = int(np.sum(run_pos * (2 * neg_before + run_neg)))
    return {
        "pos": int(run_pos.sum()),
        "neg": int(run_neg.sum()),
        "u2": u2,
        "first": float(p[starts[0]]),
        "last": float(p[starts[-1]]),
        "first_run": (int(run_pos[0]), int(run_neg[0])),
        "last_run": (int(run_pos[-1]), int(run_neg[-1])),
    }


def _merge_auc(a, b):
    if a is None:
        return b
    if b is None:
        return a
    tie = a["last"] == b["first"]
    u2 = a["u2"] + b["u2"] + 2 * a["neg"] * b["pos"]
    first_run, last_run = a["first_run"], b["last_run"]
    if tie:
        (a_pos, a_neg), (b_pos, b_neg) = a["last_run"], b["first_run"]
        u2 += a_pos * b_neg - a_neg * b_pos
        if a["first"] == a["last"]:  # a is one run, continued in b
            first_run = tuple(
                i + j for i, j in zip(a["first_run"], b["first_run"], strict=True)
            )
        if b["first"] == b["last"]:
            last_run = tuple(
                i + j for i, j in zip(a["last_run"], b["last_run"], strict=True)
            )
    return {
        "pos": a["pos"] + b["pos"],
        "neg": a["neg"] + b["neg"],
        "u2": u2,
        "first": a["first"],
        "last": b["last"],
        "first_run": first_run,
        "last_run": last_run,
    }


_VALUE_KEYS = ("code", "p", "pos", "n")


def _aggregate_values(code, p, pos, n, max_values):
    """Rows (or partial sums) summed per distinct (confidence, cell), sorted
    by confidence; ``None`` when there are more than ``max_values``."""
    order = np.lexsort((code, p))
    code, p = code[order], p[order]
    new = np.ones(p.shape[0], dtype=bool)
    new[1:] = (p[1:] != p[:-1]) | (code[1:] != code[:-1])
    starts = np.flatnonzero(new)
    if starts.shape[0] > max_values:
        return None
    return {
        "code": code[starts],
        "p": p[starts],
        "pos": np.add.reduceat(pos[order], starts),
        "n": np.add.reduceat(n[order], starts),
    }


def _count_at_or_below(grid, p):
    """``np.searchsorted(grid, p, side="right")`` for an equally spaced
    ``grid`` from 0 to 1, in O(n) without the binary search: the guess
    ``floor(p (m - 1)) + 1`` is off by at most one and corrected against
    the grid's own values, so the result is exactly searchsorted's."""
    m = grid.shape[0]
    padded = np.append(grid, np.inf)
    j = (p * (m - 1)).astype(np.intp)
    np.clip(j, 0, m - 1, out=j)
    j += 1
    j -= padded[j - 1] > p  # the guess counted one too many
    j += padded[j] <= p  # ... or one too few
    return j


def _sums(n_bins, grid, codes, n_groups, p, yb, n=None, pos=None, bins=None):
    """Every sum of the statistics: of rows (``yb`` their labels), or of a
    value table (``n[i]`` rows, ``pos[i]`` of them correct, at ``p[i]``).

    One implementation for both: a value table is rows with weights.
    ``bins``: the bin of each entry (default: equal-width).
    """
    if bins is None:
        bins = _k.uniform_bin_index(p, n_bins)
    idx = codes * n_bins + bins
    size = n_groups * n_bins
    shape = (n_groups, n_bins)
    eps = np.finfo(np.float64).eps
    # thresholds t_k <= p keep the row (p >= t_k)
    above = _count_at_or_below(grid, p)
    if n is None:
        r = yb - p
        count = np.bincount(idx, minlength=size)
        n_pos = np.bincount(idx[yb], minlength=size)
        sum_p = np.bincount(idx, weights=p, minlength=size)
        sum_r2 = np.bincount(idx, weights=r * r, minlength=size)
        # log loss as scikit-learn's log_loss: both columns clipped to eps
        log_loss = -np.sum(np.log(np.clip(np.where(yb, p, 1.0 - p), eps, 1.0 - eps)))
        kept = np.bincount(above, minlength=grid.shape[0] + 1)
        kept_pos = np.bincount(above[yb], minlength=grid.shape[0] + 1)
        null_var = np.bincount(
            codes,
            weights=_kc.null_variance_terms(p, None, "frequency"),
            minlength=n_groups,
        )
    else:
        nf, posf = n.astype(np.float64), pos.astype(np.float64)
        neg = nf - posf
        count = np.bincount(idx, weights=nf, minlength=size)
        n_pos = np.bincount(idx, weights=posf, minlength=size)
        sum_p = np.bincount(idx, weights=nf * p, minlength=size)
        r2 = posf * (1.0 - p) ** 2 + neg * p**2
        sum_r2 = np.bincount(idx, weights=r2, minlength=size)
        log_loss = -(
            posf @ np.log(np.clip(p, eps, 1.0 - eps))
            + neg @ np.log(np.clip(1.0 - p, eps, 1.0 - eps))
        )
        kept = np.bincount(above, weights=nf, minlength=grid.shape[0] + 1)
        kept_pos = np.bincount(above, weights=posf, minlength=grid.shape[0] + 1)
        null_var = np.bincount(codes, weights=nf * p * (1.0 - p), minlength=n_groups)
    return {
        "sums": {
            "count": count.astype(np.int64).reshape(shape),
            "n_pos": n_pos.astype(np.int64).reshape(shape),
            "sum_p": sum_p.reshape(shape),
            "sum_r2": sum_r2.reshape(shape),
        },
        "sum_log_loss": float(log_loss),
        "kept_count": np.cumsum(kept[::-1])[::-1][1:].astype(np.int64),
        "kept_pos": np.cumsum(kept_pos[::-1])[::-1][1:].astype(np.int64),
        "null_var": null_var,
    }


#: the attributes :func:`_sums` fills (settled from the value table on use)
_SUM_FIELDS = ("sums", "sum_log_loss", "kept_count", "kept_pos", "null_var")


def _row_values(codes, p, yb, n_groups, max_values):
    """:func:`_aggregate_values` of single rows in O(n): the confidences are
    factorized by hashing (no sort of the rows), and the sums per (value,
    cell) are bincounts of ``rank(value) * n_groups + cell``."""
    import pandas as pd

    inv, uniques = pd.factorize(p, sort=False)
    if uniques.shape[0] > max_values:
        return None
    size = uniques.shape[0] * n_groups
    if size > 4 * p.shape[0] + 4096:  # sparse pairs: the general path
        return _aggregate_values(
            codes, p, yb.astype(np.int64), np.ones(p.shape[0], np.int64), max_values
        )
    # one bincount of 2 * (rank(value) * n_groups + cell) + label counts the
    # wrong and the correct rows of every pair (int32 keys: half the traffic)
    kind = np.int32 if 2 * size < 2**31 else np.int64
    rank = np.empty(uniques.shape[0], dtype=kind)
    rank[np.argsort(uniques)] = np.arange(uniques.shape[0], dtype=kind)
    key = rank[inv]
    key *= 2 * n_groups
    key += 2 * codes.astype(kind, copy=False)
    key += yb
    both = np.bincount(key, minlength=2 * size).reshape(size, 2)
    pos = both[:, 1]
    n = both[:, 0] + pos
    used = np.flatnonzero(n)
    if used.shape[0] > max_values:
        return None
    return {
        "code": (used % n_groups).astype(np.intp),
        "p": np.sort(uniques)[used // n_groups],
        "pos": pos[used].astype(np.int64),
        "n": n[used].astype(np.int64),
    }


def _sum_field(name):
    """An attribute filled by :func:`_sums`, computed from the value table
    the first time it is read after rows went into the table."""

    def get(self):
        if self._pending:
            self._settle()
        return self._store[name]

    def put(self, value):
        self._store[name] = value

    return property(get, put)


class CalibrationStatistics:
    """Sufficient statistics of a calibration report, mergeable and exact.

    Parameters
    ----------
    n_bins : int, default=10
        Equal-width bins of the binned numbers (bin ``min(floor(p M), M-1)``).
    grid : int, default=101
        Thresholds of the accuracy-confidence curve (AUAC).
    cells : bool, default=False
        Whether rows carry a group (cell) label: a topic, a partitioner's
        cell id ...

    Attributes
    ----------
    labels : ndarray
        The sorted distinct group labels seen (``[0]`` when not grouped).
    sums : dict of ndarray of shape (n_groups, n_bins)
        ``count`` (rows, int64), ``n_pos`` (correct rows, int64), ``sum_p``
        and ``sum_r2`` (sums of ``p`` and ``(y - p)**2``).
    ordered : bool
        Whether the chunks were given in order of confidence (each sorted,
        and each one's confidences at or above the previous one's), so that
        the ECCE and the AUC are available.

    max_values : int, default=None
        Also keep a *value table*: the residual sum and the counts of every
        distinct (confidence, cell), as long as there are at most this many
        (then it is dropped). It gives the ECCE and the AUC exactly without
        any order of the chunks: LLM confidences (verbalized, or a
        calibrator's outputs) take few distinct values, so a data set is
        reported on in one pass over its partitions, in any order.

    Notes
    -----
    Memory: ``O(n_groups * n_bins + grid)`` (plus ``O(max_values)``),
    independent of the rows. Unweighted rows only (the report has none).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal.metrics import CalibrationStatistics
    >>> rng = np.random.default_rng(0)
    >>> p = np.sort(rng.uniform(size=1000))
    >>> y = rng.uniform(size=1000) < p
    >>> a = CalibrationStatistics().update(y[:600], p[:600])
    >>> b = CalibrationStatistics().update(y[600:], p[600:])
    >>> whole = CalibrationStatistics().update(y, p)
    >>> bool(np.isclose(a.merge(b).ece(), whole.ece(), rtol=1e-12, atol=0))
    True
    """

    sums = _sum_field("sums")
    sum_log_loss = _sum_field("sum_log_loss")
    kept_count = _sum_field("kept_count")
    kept_pos = _sum_field("kept_pos")
    null_var = _sum_field("null_var")

    def __init__(self, n_bins=10, *, grid=101, cells=False, max_values=None):
        self._store = {}
        self._pending = False
        self.n_bins = int(n_bins)
        self.max_values = max_values
        self.grid = int(grid)
        self.grouped = bool(cells)
        self.labels = np.array([0]) if not cells else np.array([])
        self.sums = {
            k: np.zeros((self.labels.shape[0], self.n_bins), dtype=dt)
            for k, dt in zip(_BIN_SUMS, (np.int64, np.int64, float, float), strict=True)
        }
        self.sum_log_loss = 0.0
        self.kept_count = np.zeros(self.grid, dtype=np.int64)
        self.kept_pos = np.zeros(self.grid, dtype=np.int64)
        self.null_var = np.zeros(self.labels.shape[0])
        self.paths = _empty_paths(self.labels.shape[0])
        self.auc_run = None
        self.ordered = True
        self.values = (
            None
            if max_values is None
            else _aggregate_values(
                *(np.empty(0, dtype=d) for d in (np.intp, float, np.int64, np.int64)),
                max_values,
            )
        )

    # ------------------------------------------------------------ building
    @property
    def n_rows(self):
        if self._pending:
            return int(self.values["n"].sum())
        return int(self.sums["count"].sum())

    def _settle(self):
        """The sums from the value table (rows summed per distinct value)."""
        self._pending = False
        v = self.values
        self._store.update(
            _sums(
                self.n_bins,
                self._thresholds(),
                v["code"],
                self.labels.shape[0],
                v["p"],
                None,
                v["n"],
                v["pos"],
            )
        )

    def _thresholds(self):
        return np.linspace(0.0, 1.0, self.grid)

    def update(self, y_true, y_prob, cells=None):
        """Add a chunk of validated rows: ``y_true`` 0/1, ``y_prob`` in [0, 1].

        Returns ``self``. The ordered summaries stay valid while chunks come
        in order of confidence (the rows of each chunk sorted); otherwise
        :attr:`ordered` turns ``False`` and only the ECCE and AUC are lost.
        """
        chunk = self._chunk(
            np.asarray(y_true), np.asarray(y_prob, dtype=np.float64), cells
        )
        merged = self.merge(chunk)
        self.__dict__.update(merged.__dict__)
        return self

    def _chunk(self, y, p, cells):
        from ._calibration_tests import _factorize_cells

        out = CalibrationStatistics(
            self.n_bins, grid=self.grid, max_values=self.max_values
        )
        out.grouped = self.grouped
        n = p.shape[0]
        if self.grouped:
            if cells is None:
                raise ValueError("these statistics have cells: pass cells")
            labels, codes = _factorize_cells(cells, n)
            codes = np.asarray(codes, dtype=np.intp)
        else:
            labels, codes = np.array([0]), np.zeros(n, dtype=np.intp)
        n_groups = labels.shape[0]
        out.labels = labels
        if n == 0:
            out.__init__(
                self.n_bins,
                grid=self.grid,
                cells=self.grouped,
                max_values=self.max_values,
            )
            return out
        if y.dtype.kind != "b" and not np.all((y == 0) | (y == 1)):
            raise ValueError(
                "the mergeable statistics count correct answers: y_true must "
                "be 0/1 (soft labels, a judge's probability, need the rows in "
                "memory: the metrics themselves)"
            )
        yb = y > 0
        values = None
        if self.max_values is not None:
            values = _row_values(codes, p, yb, n_groups, self.max_values)
        out.values = values
        if values is not None:  # the sums follow from the table when used
            out._pending = True
        else:
            computed = _sums(self.n_bins, self._thresholds(), codes, n_groups, p, yb)
            for name, value in computed.items():
                setattr(out, name, value)
        out.ordered = bool(np.all(p[1:] >= p[:-1]))
        if out.ordered:
            out.paths = _chunk_paths(p, yb - p, codes, n_groups)
            out.auc_run = _chunk_auc(p, yb)
        else:
            out.paths = _empty_paths(n_groups)
        return out

    def _merged_values(self, other, labels):
        if self.values is None or other.values is None:
            return None
        parts = []
        for v, own in ((self.values, self.labels), (other.values, other.labels)):
            code = (
                np.searchsorted(labels, own)[v["code"]] if self.grouped else v["code"]
            )
            parts.append({**v, "code": code})
        a, b = parts
        # sorted by confidence: each table's distinct values are its changes
        distinct = [t["p"][np.r_[True, t["p"][1:] != t["p"][:-1]]] for t in parts]
        union = np.union1d(*distinct)
        n_groups = labels.shape[0]
        size = union.shape[0] * n_groups
        if size <= 4 * (a["p"].shape[0] + b["p"].shape[0]) + 4096:
            # dense (value, cell) grid: two bincounts, no sort of the pairs
            key = np.concatenate(
                [np.searchsorted(union, t["p"]) * n_groups + t["code"] for t in parts]
            )
            n = np.bincount(key, np.concatenate([a["n"], b["n"]]), size)
            pos = np.bincount(key, np.concatenate([a["pos"], b["pos"]]), size)
            used = np.flatnonzero(n)
            if used.shape[0] > self.max_values:
                return None
            return {
                "code": (used % n_groups).astype(np.intp),
                "p": union[used // n_groups],
                "pos": pos[used].astype(np.int64),
                "n": n[used].astype(np.int64),
            }
        return _aggregate_values(
            *(np.concatenate([a[k], b[k]]) for k in _VALUE_KEYS for a, b in [parts]),
            self.max_values,
        )

    def _ordered_summaries(self, what):
        """``(paths, auc_run)``: from the ordered chunks, else the value table."""
        if self.ordered:
            return self.paths, self.auc_run
        if self.values is not None:
            v = self.values
            n_groups = self.labels.shape[0]
            paths = _chunk_paths(
                v["p"], v["pos"] - v["n"] * v["p"], v["code"], n_groups
            )
            auc = _chunk_auc(v["p"], v["pos"], v["n"]) if v["p"].shape[0] else None
            return paths, auc
        raise ValueError(
            f"{what} needs the rows in order of confidence: give the chunks "
            "sorted by confidence, each at or above the previous one (or keep "
            "a value table: max_values)"
        )

    def _aligned(self, labels, *, sums=True):
        """The per-group arrays re-indexed to ``labels`` (a superset);
        ``sums=False``: the ordered summaries only (``None`` for the rest)."""
        if not sums:
            if np.array_equal(labels, self.labels):
                return None, None, self.paths
            pos = np.searchsorted(labels, self.labels)
            paths = _empty_paths(labels.shape[0])
            for k, v in self.paths.items():
                paths[k][pos] = v
            return None, None, paths
        if np.array_equal(labels, self.labels):
            return self.sums, self.null_var, self.paths
        pos = np.searchsorted(labels, self.labels)
        sums = {}
        for k, v in self.sums.items():
            sums[k] = np.zeros((labels.shape[0], self.n_bins), dtype=v.dtype)
            sums[k][pos] = v
        null_var = np.zeros(labels.shape[0])
        null_var[pos] = self.null_var
        paths = _empty_paths(labels.shape[0])
        for k, v in self.paths.items():
            paths[k][pos] = v
        return sums, null_var, paths

    def merge(self, other):
        """Statistics of these rows followed by ``other``'s (a new object).

        Exact for every sum and count; the ordered summaries stay valid when
        ``other``'s confidences are all at or above these.
        """
        if (self.n_bins, self.grid, self.grouped, self.max_values) != (
            other.n_bins,
            other.grid,
            other.grouped,
            other.max_values,
        ):
            raise ValueError(
                "cannot merge statistics of different binning, grid, grouping "
                "or max_values"
            )
        if other.n_rows == 0:
            return self._copy()
        if self.n_rows == 0:
            return other._copy()
        labels = np.union1d(self.labels, other.labels) if self.grouped else self.labels
        values = self._merged_values(other, labels)
        sums_a, var_a, paths_a = self._aligned(labels, sums=values is None)
        sums_b, var_b, paths_b = other._aligned(labels, sums=values is None)
        out = CalibrationStatistics(
            self.n_bins, grid=self.grid, cells=self.grouped, max_values=self.max_values
        )
        out.labels = labels
        out.values = values
        if out.values is not None:  # the sums follow from the table
            out._pending = True
        else:
            out.sums = {k: sums_a[k] + sums_b[k] for k in _BIN_SUMS}
            out.sum_log_loss = self.sum_log_loss + other.sum_log_loss
            out.kept_count = self.kept_count + other.kept_count
            out.kept_pos = self.kept_pos + other.kept_pos
            out.null_var = var_a + var_b
        in_order = (
            self.ordered
            and other.ordered
            and self.auc_run["last"] <= other.auc_run["first"]
        )
        out.ordered = bool(in_order)
        if out.ordered:
            out.paths = _merge_paths(paths_a, paths_b)
            out.auc_run = _merge_auc(self.auc_run, other.auc_run)
        else:
            out.paths = _empty_paths(labels.shape[0])
        return out

    def _copy(self):
        out = CalibrationStatistics(
            self.n_bins, grid=self.grid, cells=self.grouped, max_values=self.max_values
        )
        out.__dict__.update(
            {
                k: (v.copy() if isinstance(v, np.ndarray) else v)
                for k, v in self.__dict__.items()
            }
        )
        out._store = {
            k: (v.copy() if isinstance(v, np.ndarray) else v)
            for k, v in self._store.items()
        }
        if "sums" in out._store:
            out._store["sums"] = {k: v.copy() for k, v in self._store["sums"].items()}
        out.paths = {k: v.copy() for k, v in self.paths.items()}
        if self.values is not None:
            out.values = {k: v.copy() for k, v in self.values.items()}
        return out

    # ------------------------------------------------------------ numbers
    def bin_totals(self):
        """Per bin (all groups): ``count, n_pos, sum_p, sum_r2``."""
        if getattr(self, "quantile_edges", None) is not None:
            return self._global_sums  # equal-mass bins: their own edges
        return {k: v.sum(axis=0) for k, v in self.sums.items()}

    def equal_mass(self):
        """These statistics with equal-mass bins (``strategy="quantile"``).

        Needs the value table: it holds every confidence with its count, so
        the weighted inverted-CDF quantiles of all rows (the reliability
        table, ECE, MCE, Brier split) and of each group's rows (beta-CE, its
        floor, the groups' CE) are the in-memory edges exactly, and the
        bins' sums follow from the table.
        """
        if self.values is None:
            raise ValueError(
                "equal-mass bins out of core need the value table (confidences "
                "of few distinct values, max_values); continuous scores are "
                "binned equal-width"
            )
        v = self.values
        n_groups = self.labels.shape[0]
        weight = v["n"].astype(np.float64)
        order = np.argsort(v["p"], kind="stable")
        edges = _k.quantile_edges(v["p"][order], weight[order], self.n_bins)
        bins_all = _k.quantile_bin_index(v["p"], edges)
        bins = np.empty(v["p"].shape[0], dtype=np.intp)
        for g in range(n_groups):  # each group's own edges, as in memory
            rows = np.flatnonzero(v["code"] == g)
            rows = rows[np.argsort(v["p"][rows], kind="stable")]
            cell_edges = _k.quantile_edges(v["p"][rows], weight[rows], self.n_bins)
            bins[rows] = _k.quantile_bin_index(v["p"][rows], cell_edges)
        args = (self.n_bins, self._thresholds())
        table = (v["p"], None, v["n"], v["pos"])
        out = self._copy()
        out._pending = False
        out._store.update(_sums(*args, v["code"], n_groups, *table, bins=bins))
        zeros = np.zeros(v["p"].shape[0], dtype=np.intp)
        out._global_sums = {
            k: a[0]
            for k, a in _sums(*args, zeros, 1, *table, bins=bins_all)["sums"].items()
        }
        out.quantile_edges = edges
        return out

    def reliability_table(self, alpha=0.05, *, group=None):
        """:func:`~sklearn_betacal.metrics.reliability_table` of all rows (or
        of the rows of one ``group``)."""
        from ._calibration_error import _reliability_frame

        if group is None:
            t = self.bin_totals()
        else:
            pos = np.flatnonzero(self.labels == group)
            if pos.shape[0] != 1:
                raise ValueError(f"no group {group!r} in these statistics")
            t = {k: v[pos[0]] for k, v in self.sums.items()}
        weight = t["count"].astype(np.float64)
        sum_y = t["n_pos"].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            conf = t["sum_p"] / weight
            acc = sum_y / weight
        if group is None and getattr(self, "quantile_edges", None) is not None:
            inner = self.quantile_edges
            lower, upper = np.r_[0.0, inner], np.r_[inner, 1.0]
        else:
            edges = np.linspace(0.0, 1.0, self.n_bins + 1)
            lower, upper = edges[:-1], edges[1:]
        return _reliability_frame(
            lower, upper, t["count"], weight, conf, acc, sum_y, alpha
        )

    def _gaps(self):
        """Per (group, bin): signed gap ``sum (y - p)`` and weight."""
        weight = self.sums["count"].astype(np.float64)
        return self.sums["n_pos"] - self.sums["sum_p"], weight

    def calibration_error(self, norm="l1"):
        """The ECE of all rows (``norm="max"``: the MCE)."""
        t = self.bin_totals()
        gap = t["n_pos"] - t["sum_p"]
        weight = t["count"].astype(np.float64)
        return _k.calibration_error_from_sums(gap, weight, float(self.n_rows), norm)

    ece = calibration_error

    def brier_decomposition(self):
        """:func:`~sklearn_betacal.metrics.brier_decomposition` of all rows."""
        from ._calibration_error import BrierDecomposition, _brier_terms

        t = self.bin_totals()
        weight = t["count"].astype(np.float64)
        total = float(self.n_rows)
        calibration, refinement = _brier_terms(weight, t["sum_p"], t["n_pos"], total)
        brier = float(np.sum(t["sum_r2"]) / total)
        return BrierDecomposition(brier, calibration, refinement)

    def log_loss(self):
        """:func:`sklearn.metrics.log_loss` (confidences clipped to eps)."""
        return self.sum_log_loss / self.n_rows

    def roc_auc(self):
        """:func:`sklearn.metrics.roc_auc_score`; ``None`` with one class."""
        _, run = self._ordered_summaries("the AUC")
        if run is None or run["pos"] == 0 or run["neg"] == 0:
            return None
        return run["u2"] / (2.0 * run["pos"] * run["neg"])

    def accuracy_confidence_curve(self):
        """``(thresholds, accuracy, coverage)`` of the default grid."""
        kept = self.kept_count.astype(np.float64)
        heights = np.zeros(self.grid)
        np.divide(self.kept_pos.astype(np.float64), kept, out=heights, where=kept > 0)
        return self._thresholds(), heights, kept / self.n_rows

    def auac(self):
        """:func:`~sklearn_betacal.metrics.area_under_accuracy_confidence`."""
        from ._selective import _area

        thresholds, heights, _ = self.accuracy_confidence_curve()
        return _area(thresholds, heights)

    def beta_calibration_error(self, norm="l1", debiased=False):
        """:func:`~sklearn_betacal.metrics.beta_calibration_error` of the groups."""
        from ._beta_calibration import _squared_gaps

        gap, weight = self._gaps()
        total = float(self.n_rows)
        if norm == "l2_squared":
            gap2, noise = _squared_gaps(weight, self.sums["n_pos"], self.sums["sum_p"])
            return float(np.sum(gap2 - noise if debiased else gap2) / total)
        if weight.shape[0] == 1:
            return self.calibration_error(norm)
        errors = _k.cell_calibration_errors(gap, weight, norm)
        share = weight.sum(axis=1) / total
        keep = share > 0
        return float(np.sum(share[keep] * errors[keep]))

    def noise_floor(self, norm="l1"):
        """:func:`~sklearn_betacal.metrics.beta_calibration_noise_floor`."""
        from ._beta_calibration import _binomial_mad

        weight = self.sums["count"].astype(np.float64).reshape(-1)
        ok = weight > 0
        sum_p = self.sums["sum_p"].reshape(-1)
        conf = np.divide(sum_p, weight, out=np.zeros_like(weight), where=ok)
        total = float(self.n_rows)
        if norm == "l1":
            return float(np.sum(_binomial_mad(weight, conf)) / total)
        floor = float(np.sum(conf * (1 - conf)) / total)
        return floor if norm == "l2_squared" else float(np.sqrt(floor))

    def group_table(self, alpha=0.05):
        """:func:`~sklearn_betacal.metrics.cell_calibration_table` without
        resampling (``n_resamples=0``): count, accuracy, CE ... per group."""
        import pandas as pd

        from ._calibration_error import _clopper_pearson

        gap, weight = self._gaps()
        count = self.sums["count"].sum(axis=1)
        w = count.astype(np.float64)
        sum_y = self.sums["n_pos"].sum(axis=1).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            conf = self.sums["sum_p"].sum(axis=1) / w
            acc = sum_y / w
        errors = _k.cell_calibration_errors(gap, weight, "l1")
        ci_lower, ci_upper = _clopper_pearson(sum_y, w, alpha)
        nan = np.full(w.shape[0], np.nan)
        return pd.DataFrame(
            {
                "count": count,
                "weight": w,
                "share": w / self.n_rows,
                "mean_confidence": conf,
                "accuracy": acc,
                "gap": acc - conf,
                "ci_lower": ci_lower,
                "ci_upper": ci_upper,
                "calibration_error": errors,
                "ce_lower": nan,
                "ce_upper": nan,
                "noise_level": nan,
            },
            index=pd.Index(self.labels, name="cell"),
        )

    def calibration_test(self, method="holm", alpha=0.05):
        """The per-group table of :func:`~sklearn_betacal.metrics.calibration_test`."""
        from ._calibration_tests import _group_test_table

        p, _ = self._ordered_summaries("the ECCE")
        hi = np.fmax(np.fmax(p["hi"], p["S"]), 0.0)
        lo = np.fmin(np.fmin(p["lo"], p["S"]), 0.0)
        count = self.sums["count"].sum(axis=1)
        return _group_test_table(
            self.labels,
            hi - lo,
            count,
            count.astype(np.float64),
            self.null_var,
            method,
            alpha,
            _kc.kuiper_isf(alpha),
        )[0]


def calibration_drift_test(new, old, *, alpha=0.05, method="holm", min_count=30):
    """Per group, whether calibration changed between two sets of rows.

    The calibration of a group in a bin is its mean residual ``y - p``
    (accuracy minus confidence). For each group and each bin holding at
    least ``min_count`` rows in both periods, the two periods' mean
    residuals are compared by a two-sample z statistic with the residual
    variance pooled over both periods (from the sums of ``y - p`` and
    ``(y - p)**2``), ``z_b = (m_new - m_old) / sqrt(s2 (1 / n_new + 1 /
    n_old))``; the
    group's statistic ``T = sum_b z_b**2`` is referred to chi-squared with
    one degree of freedom per compared bin (the bins are independent). The
    groups' p-values are adjusted by ``method`` (Holm: the probability of
    naming any group that did not drift is at most ``alpha``).

    The null is "the same mean residual in every compared bin": a change of
    the confidences within a bin moves the mean residual only where the
    calibration curve is not flat inside it (finer bins make that smaller).
    The statistic is asymptotic; ``min_count`` keeps each z close to normal
    (the size at ``min_count=30`` is checked by simulation: the pooled
    variance keeps it at or below ``alpha`` where each period's own
    variance made the test slightly liberal).

    Parameters
    ----------
    new, old : CalibrationStatistics
        The two periods, with the same ``n_bins`` and grouping.
    alpha : float, default=0.05
        Level of the ``drifted`` column.
    method : {"holm", "fdr_bh"}, default="holm"
        Adjustment over the groups.
    min_count : int, default=30
        Rows a bin needs in each period to be compared.

    Returns
    -------
    table : pandas.DataFrame
        Indexed by group (the union of both periods'), with ``count_new``,
        ``count_old``, ``gap_new``, ``gap_old`` (accuracy minus mean
        confidence), ``ce_new``, ``ce_old`` (the group's binned CE),
        ``bins_compared``, ``statistic``, ``pvalue``, ``pvalue_adjusted`` and
        ``drifted``.
    """
    import pandas as pd
    from scipy.stats import chi2

    from ._calibration_tests import _adjust

    if (new.n_bins, new.grouped) != (old.n_bins, old.grouped):
        raise ValueError(
            "the two periods' statistics differ in bins or grouping; compute "
            "both with the same n_bins and both with (or without) groups"
        )
    labels = np.union1d(new.labels, old.labels) if new.grouped else new.labels
    (sums_new, _, _), (sums_old, _, _) = new._aligned(labels), old._aligned(labels)

    def moments(sums):
        n = sums["count"].astype(np.float64)
        return n, sums["n_pos"] - sums["sum_p"], sums["sum_r2"]

    n1, s1, q1 = moments(sums_new)
    n0, s0, q0 = moments(sums_old)
    used = (n1 >= min_count) & (n0 >= min_count)
    with np.errstate(invalid="ignore", divide="ignore"):
        # the residual variance pooled over both periods (the null's)
        total = n1 + n0
        var = (q1 + q0 - (s1 + s0) ** 2 / total) / (total - 1.0)
        se2 = np.maximum(var, 0.0) * (1.0 / n1 + 1.0 / n0)
        diff = s1 / n1 - s0 / n0
        z2 = np.where(used & (se2 > 0), diff**2 / se2, 0.0)
    # no spread in a bin over both periods (one outcome at one confidence):
    # a change of its mean residual is certain
    certain = used & (se2 <= 0) & (diff != 0)
    df = used.sum(axis=1)
    stat = z2.sum(axis=1)
    pvalue = np.full(labels.shape[0], np.nan)
    tested = df > 0
    pvalue[tested] = chi2.sf(stat[tested], df[tested])
    pvalue[certain.any(axis=1)] = 0.0
    adjusted = _adjust(pvalue, method)

    def per_group(stats):
        g, _ = stats._gaps()
        count = stats.sums["count"].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            gap = g.sum(axis=1) / count
        return (
            count,
            gap,
            _k.cell_calibration_errors(g, stats.sums["count"].astype(np.float64), "l1"),
        )

    aligned_new = new._copy()
    aligned_new.sums, aligned_new.labels = sums_new, labels
    aligned_old = old._copy()
    aligned_old.sums, aligned_old.labels = sums_old, labels
    c1, gap1, ce1 = per_group(aligned_new)
    c0, gap0, ce0 = per_group(aligned_old)
    return pd.DataFrame(
        {
            "count_new": c1,
            "count_old": c0,
            "gap_new": gap1,
            "gap_old": gap0,
            "ce_new": ce1,
            "ce_old": ce0,
            "bins_compared": df,
            "statistic": np.where(tested, stat, np.nan),
            "pvalue": pvalue,
            "pvalue_adjusted": adjusted,
            "drifted": adjusted < alpha,
        },
        index=pd.Index(labels, name="group"),
    )
