# SPDX-License-Identifier: MIT
"""AbstentionGate: answer only where a calibrated confidence certifies the risk.

A calibrator of this package turns a model's confidence into a probability
that the answer is right; the gate spends it. On labelled certification
rows it chooses the lowest confidence threshold (the largest coverage) such
that, with probability at least ``1 - delta`` over those rows, the error
rate of the answered questions is at most ``max_error`` -- over all
questions, or in every cell of the calibrator's partition with
``per_cell=True``. The numerical part (exact binomial p-values, the
fixed-sequence search) is ``_kernels/_selective.py``.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import GroupShuffleSplit, ShuffleSplit
from sklearn.utils import ClassifierTags, check_random_state, get_tags, indexable
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ._base import positive_index
from ._cells import cell_positions, fit_takes
from ._compat import HasMethods, Interval, _fit_context, _num_samples
from ._defaults import default_calibrator
from ._kernels._selective import (
    binomial_upper_bound,
    fixed_sequence_threshold,
    grouped_risk_bound,
    grouped_sequence_threshold,
    quantile_grid,
    sequence_start,
)
from ._random import derived_seed, seed_inner
from ._validation import (
    MAX_COUNT_TOTAL,
    check_array_state,
    check_real,
    check_weights,
    damaged,
    take_rows,
)

#: ``abstain_reason`` values: answered, below the cell's threshold, or in a
#: cell where no threshold was certified (or that certification never saw).
ANSWERED, BELOW_THRESHOLD, UNCERTIFIED = "", "below threshold", "uncertifiable cell"
#: ``test_``: the exact binomial test of rows, or the betting test of
#: question groups (several answers per question).
BINOMIAL_TEST, GROUPED_TEST = "binomial", "grouped betting"


def _check_gate_state(owner, state):
    """The fitted state of a rebuilt gate: one entry per cell in every
    array, thresholds in ``[0, 1]`` or ``inf`` exactly where not certified,
    bounds within ``[0, 1]``, counts ordered ``errors <= answered <=
    certify`` and cell ids sorted and unique."""
    t = check_array_state(
        owner, "thresholds_", state["thresholds_"], "f", (None,), finite=False
    )
    K = t.shape[0]
    arrays = {}
    for name in ("risk_bounds_", "coverage_", "n_certify_", "n_answered_", "n_errors_"):
        arrays[name] = check_array_state(
            owner, name, state.get(name), "f", (K,), finite=name != "risk_bounds_"
        )
    certified = state.get("certified_")
    if not isinstance(certified, np.ndarray) or certified.dtype != bool:
        raise damaged(owner, "certified_ is not a boolean array")
    if certified.shape != (K,) or np.any(certified != np.isfinite(t)):
        raise damaged(owner, "certified_ does not mark the finite thresholds_")
    if np.any(np.isnan(t)) or np.any((t[certified] < 0) | (t[certified] > 1)):
        raise damaged(owner, "thresholds_ lie outside [0, 1] (or inf)")
    b = arrays["risk_bounds_"]
    if np.any(np.isnan(b[certified])) or np.any(
        (b[certified] < 0) | (b[certified] > 1)
    ):
        raise damaged(owner, "risk_bounds_ of certified cells lie outside [0, 1]")
    if np.any((arrays["coverage_"] < 0) | (arrays["coverage_"] > 1)):
        raise damaged(owner, "coverage_ lies outside [0, 1]")
    n_c, n_a, n_e = (arrays[k] for k in ("n_certify_", "n_answered_", "n_errors_"))
    if np.any(n_e < 0) or np.any(n_e > n_a) or np.any(n_a > n_c):
        raise damaged(
            owner, "counts are not 0 <= n_errors_ <= n_answered_ <= n_certify_"
        )
    cells = state.get("cells_")
    if cells is not None:
        cells = check_array_state(owner, "cells_", cells, "i", (K,))
        if np.any(np.diff(cells) <= 0):
            raise damaged(owner, "cells_ are not sorted and unique")
        state["cells_"] = cells.astype(np.int64)
    elif K != 1:
        raise damaged(owner, f"one global threshold expected, found {K}")
    if state.get("test_") not in (BINOMIAL_TEST, GROUPED_TEST):
        raise damaged(owner, "test_ names no test of this version")
    d = check_real(
        owner, "delta_per_cell_", state.get("delta_per_cell_"), low=0, strict=True
    )
    if d >= 1:
        raise damaged(owner, "delta_per_cell_ is not below 1")
    state["thresholds_"] = t
    state.update(arrays)


class AbstentionGate(MetaEstimatorMixin, BaseEstimator):
    """Answer or abstain, with a certified error rate of the answers.

    Wraps a calibrator of this package and chooses, on labelled
    certification rows, a confidence threshold (one per cell of the
    calibrator's partition with ``per_cell=True``) such that **with
    probability at least 1 - delta over the certification rows, the error
    rate of the answered questions is at most max_error**, and the coverage
    is as large as the test allows. Learn-Then-Test with fixed-sequence
    testing and exact binomial p-values (see Notes).

    Read more in the :ref:`User Guide <abstention>`.

    Parameters
    ----------
    calibrator : estimator, default=None
        A calibrator of this package (``None``: ``UMDBinner()``). Unfitted:
        a clone is fitted on ``1 - certify_size`` of the rows and the others
        certify the threshold (question ``groups`` stay on one side). Fitted:
        pass ``FrozenEstimator(calibrator)``; it is used as it is.
    max_error : float, default=0.1
        Target error rate ``alpha`` of the answered questions, in (0, 1).
    delta : float, default=0.05
        Probability, over the certification rows, that the guarantee may
        fail, in (0, 1). With ``per_cell=True`` and ``simultaneous=True`` it
        is shared among the cells (Bonferroni): the guarantee holds in all
        cells at once.
    per_cell : bool, default=False
        One threshold per cell of the calibrator's partition
        (``calibrator.apply(X)``: a group calibrator), each certified in its
        cell, instead of one threshold for all rows.
    simultaneous : bool, default=True
        With ``per_cell=True``: True tests each cell at ``delta / n_cells``,
        so that with probability ``>= 1 - delta`` *every* cell meets
        ``max_error``; False tests each at ``delta``, so that *each* cell
        meets it with probability ``>= 1 - delta`` on its own (the expected
        number of cells above ``max_error`` is at most ``delta * n_cells``):
        more coverage, a weaker statement (see Notes).
    certify_size : float, default=0.5
        Share of the rows (of the question groups, when ``groups`` is given)
        that certify; the others fit the calibrator and place the grid of
        thresholds. With a frozen calibrator and an explicit ``thresholds``
        array every row certifies.
    thresholds : int or array-like of shape (n_thresholds,), default=100
        An int ``m``: per cell, ``m`` thresholds at the quantiles of the
        calibrated confidences of the rows that do not certify (coverages
        from the smallest at which a certificate is possible, see Notes,
        to 1). An array: these thresholds, for every cell.
    random_state : int, RandomState instance or None, default=None
        Seeds the split and every unset ``random_state`` in the calibrator.

    Attributes
    ----------
    calibrator_ : estimator
        The fitted calibrator (or the frozen one).
    classes_ : ndarray of shape (2,)
        The calibrator's classes (the column order of :meth:`predict_proba`).
    cells_ : ndarray of shape (n_cells,) or None
        Cell ids with certification rows (``per_cell=True``), sorted; ``None``
        with one global threshold. The arrays below have one entry per cell
        (one entry in all when global).
    thresholds_ : ndarray of shape (n_cells,)
        Certified threshold: rows with calibrated confidence ``>= t`` are
        answered. ``inf`` where nothing could be certified.
    risk_bounds_ : ndarray of shape (n_cells,)
        Clopper-Pearson (grouped: betting, see ``test_``) upper
        bound (level ``1 - delta_per_cell_``) of the
        error rate of the answers at the threshold, ``<= max_error`` where
        certified (NaN elsewhere).
    coverage_ : ndarray of shape (n_cells,)
        Share of the cell's certification weight answered at the threshold.
    n_certify_ : ndarray of shape (n_cells,)
        Certification weight (rows) of the cell.
    n_answered_, n_errors_ : ndarray of shape (n_cells,)
        Certification weight answered at the threshold, and of wrong answers.
    certified_ : ndarray of shape (n_cells,), dtype bool
        Whether a threshold was certified.
    test_ : str
        ``"binomial"`` (exact binomial tail: rows independent, or one row
        per group), or ``"grouped betting"`` when ``groups``
        put several certification rows in one group (see Notes).
    delta_per_cell_ : float
        Level of each cell's test (``delta / n_cells`` when simultaneous,
        else ``delta``).
    n_features_in_ : int
        As the calibrator's.
    feature_names_in_ : ndarray of str
        As the calibrator's, when it has them.

    See Also
    --------
    sklearn_betacal.metrics.risk_coverage_curve : The trade the gate certifies.
    AbstentionDisplay : The risk-coverage curve per cell with the thresholds.

    Notes
    -----
    **The guarantee.** Given the fitted calibrator (and its partition) and
    the number of certification rows in each cell -- both independent of the
    certification labels -- let ``R_c(t)`` be the probability that a fresh
    question of cell ``c`` is answered wrong, given it is answered
    (calibrated confidence ``>= t``). With certification rows drawn i.i.d.
    (question groups i.i.d., rows of a group on one side of the split),
    ``P(R_c(thresholds_[c]) <= max_error for every certified c) >= 1 - delta``
    (``simultaneous=True``: each cell tested at ``delta / n_cells``, a union
    bound over the cells' independent tests); with ``simultaneous=False``,
    ``P(R_c(thresholds_[c]) <= max_error) >= 1 - delta`` for each cell ``c``
    separately (each cell's test reads only its own rows, so no correction
    is needed for a statement about one cell). Globally the same with one
    cell. Uncertified cells answer nothing, so
    their answers err at rate 0; the overall error of all answers, a mixture
    of the cells', is then ``<= max_error`` too.

    **The test.** Given ``n`` answered rows at a threshold fixed in advance,
    their errors are ``Binomial(n, R(t))``; ``P(Binomial(n, alpha) <= k)`` is
    a valid p-value of ``R(t) > alpha``. The thresholds are tested from the
    highest (fewest answers) down, each at the full level, and the last one
    before the first failure is kept (fixed-sequence testing, Learn-Then-Test;
    valid because the order is fixed before the certification labels are
    read). A Clopper-Pearson bound rather than Hoeffding or Bentkus: for a
    0/1 loss the binomial tail is exact, so it is the most powerful of them.
    A sequence that starts where few rows are answered stops at once (with
    ``alpha = 0.1, delta = 0.05``, 29 answers all right are needed for any
    certificate), so the quantile grid starts at the coverage where the cell
    is expected to answer four times that many; the grid reads only the
    rows that do not certify, and the cell sizes.

    **Several answers per question.** Answers to one question are not
    independent (a hard question is hard for every model), and a test that
    counts rows as independent overstates the evidence (the binomial
    variance assumes independent rows). With ``groups``,
    the test is made on the groups, which are i.i.d.: per group, ``d_g =
    errors_g - max_error * answered_g`` has mean ``<= 0`` exactly when a
    fresh answer errs with probability ``<= max_error``, and a betting test
    of that mean (Waudby-Smith and Ramdas, 2024) certifies it; its range is
    the largest group's size (no question is assumed to have more answers
    than the largest one seen). It is conservative: it pays for the worst
    case of a question whose answers are all wrong. Without ``groups`` the
    rows are taken as i.i.d.; pass the question ids whenever a question has
    several answers.
    Within a cell holding one answer per group (cells = models) the exact
    binomial test is used.

    **Weights** are frequency weights and must be integers (a binomial test
    counts rows): zero weight is dropping the row, an integer weight is
    repeating it in the test; the split draws rows, not weight units.

    References
    ----------
    .. [1] A. N. Angelopoulos, S. Bates, E. J. Candes, M. I. Jordan and
       L. Lei, "Learn then Test: calibrating predictive algorithms to
       achieve risk control", 2021.
    .. [2] Y. Geifman and R. El-Yaniv, "Selective classification for deep
       neural networks", NeurIPS 2017.
    .. [3] I. Waudby-Smith and A. Ramdas, "Estimating means of bounded
       random variables by betting", JRSS B, 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import AbstentionGate, UMDBinner
    >>> rng = np.random.default_rng(0)
    >>> h = rng.uniform(size=4000)
    >>> y = rng.uniform(size=4000) < h
    >>> gate = AbstentionGate(UMDBinner(n_bins=20), max_error=0.1,
    ...                       random_state=0).fit(h, y)
    >>> bool(gate.risk_bounds_[0] <= 0.1)
    True
    >>> gate.predict(np.array([0.2, 0.97])).tolist()
    [False, True]
    """

    _parameter_constraints = {
        "calibrator": [HasMethods(["fit", "predict_proba"]), None],
        "max_error": [Interval(Real, 0, 1, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "per_cell": ["boolean"],
        "simultaneous": ["boolean"],
        "certify_size": [Interval(Real, 0, 1, closed="neither")],
        "thresholds": [Interval(Integral, 1, None, closed="left"), "array-like"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        calibrator=None,
        *,
        max_error=0.1,
        delta=0.05,
        per_cell=False,
        simultaneous=True,
        certify_size=0.5,
        thresholds=100,
        random_state=None,
    ):
        self.calibrator = calibrator
        self.max_error = max_error
        self.delta = delta
        self.per_cell = per_cell
        self.simultaneous = simultaneous
        self.certify_size = certify_size
        self.thresholds = thresholds
        self.random_state = random_state

    # ---------------------------------------------------------------- fitting
    def _fixed_grid(self):
        """The ``thresholds`` array, decreasing, or ``None`` for a quantile grid."""
        if isinstance(self.thresholds, Integral):
            return None
        grid = np.asarray(self.thresholds, dtype=np.float64).ravel()
        if grid.size == 0 or not np.all(np.isfinite(grid)):
            raise ValueError(
                "thresholds must be an int (grid size) or a non-empty array of "
                f"finite thresholds; got {self.thresholds!r}."
            )
        return np.unique(grid)[::-1]

    def _split(self, n, groups, seed):
        """``(other, certify)`` row positions: a shuffle split, by group."""
        if groups is None:
            splitter = ShuffleSplit(1, test_size=self.certify_size, random_state=seed)
        else:
            splitter = GroupShuffleSplit(
                1, test_size=self.certify_size, random_state=seed
            )
        _, certify = next(splitter.split(np.zeros((n, 1)), groups=groups))
        # in the data's order (the calibrator sees its rows as given); a mask
        # orders them in one pass instead of sorting
        mask = np.zeros(n, dtype=bool)
        mask[certify] = True
        return np.flatnonzero(~mask), np.flatnonzero(mask)

    @_fit_context(
        # the calibrator is validated by its own fit
        prefer_skip_nested_validation=False
    )
    def fit(self, X, y, sample_weight=None, groups=None):
        """Fit (or take) the calibrator and certify the threshold(s).

        Parameters
        ----------
        X : array-like
            The calibrator's input (a confidence per row, or the confidence
            column plus the partition features).
        y : array-like of shape (n_samples,)
            Whether each answer was right, as the calibrator reads labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative integer frequency weights.
        groups : array-like of shape (n_samples,), default=None
            Question groups: the split keeps each group on one side.

        Returns
        -------
        self : AbstentionGate
        """
        X, y = indexable(X, y)
        y = column_or_1d(y, warn=True)
        n = _num_samples(X)
        if y.shape[0] != n:
            raise ValueError(f"X has {n} rows but y has {y.shape[0]}.")
        sw = None
        if sample_weight is not None:
            sw = check_weights(sample_weight, n, max_total=MAX_COUNT_TOTAL)
            if np.any(sw != np.round(sw)):
                raise ValueError(
                    "AbstentionGate takes integer frequency weights only (its "
                    "binomial test counts rows); got non-integer sample_weight. "
                    "Repeat rows instead of weighting them fractionally."
                )
        if groups is not None:
            groups = column_or_1d(groups)
            if groups.shape[0] != n:
                raise ValueError(f"X has {n} rows but groups has {groups.shape[0]}.")
        kept = np.arange(n) if sw is None else np.flatnonzero(sw > 0)
        frozen = isinstance(self.calibrator, FrozenEstimator)
        fixed = self._fixed_grid()
        seed = derived_seed(
            check_random_state(self.random_state).randint(np.iinfo(np.int32).max),
            "split",
        )
        if frozen and fixed is not None:
            other, certify = kept[:0], kept
        else:
            g = None if groups is None else groups[kept]
            other, certify = self._split(kept.shape[0], g, seed)
            other, certify = kept[other], kept[certify]

        self.calibrator_ = self._fitted_calibrator(X, y, sw, groups, other)
        cal = self.calibrator_
        if self.per_cell and not hasattr(cal, "apply"):
            raise ValueError(
                f"per_cell=True needs a calibrator with a partition (apply(X) -> "
                f"cell ids: BetaBinningCalibrator, ScalingBetaBinningCalibrator, "
                f"HierarchicalLogisticScaler); {type(cal).__name__} has none. "
                "Use per_cell=False for one global threshold."
            )
        self.classes_ = np.asarray(cal.classes_)
        for attr in ("n_features_in_", "feature_names_in_"):
            if hasattr(cal, attr):
                setattr(self, attr, getattr(cal, attr))
        self._certify(X, y, sw, groups, other, certify, fixed)
        return self

    def _fitted_calibrator(self, X, y, sw, groups, rows):
        if isinstance(self.calibrator, FrozenEstimator):
            check_is_fitted(self.calibrator.estimator)
            return self.calibrator
        cal = default_calibrator() if self.calibrator is None else self.calibrator
        cal = seed_inner(clone(cal), self.random_state, name="calibrator")
        params = {}
        if sw is not None:
            params["sample_weight"] = sw[rows]
        if groups is not None and fit_takes(cal, "groups"):
            params["groups"] = groups[rows]
        return cal.fit(take_rows(X, rows), y[rows], **params)

    def _scores(self, X):
        """Calibrated confidence of "correct", one per row."""
        cal = self.calibrator_
        inner = cal.estimator if isinstance(cal, FrozenEstimator) else cal
        if callable(getattr(type(inner), "_calibrated", None)):
            # a calibrator of this package: P(correct) itself, without the
            # (n, 2) array of predict_proba
            return np.asarray(inner._calibrated(X), dtype=np.float64)
        p = cal.predict_proba(X)[:, positive_index(cal)]
        return np.asarray(p, dtype=np.float64)

    def _cell_grid(self, o, cell, n_certify, alpha):
        """A cell's thresholds from the rows that do not certify (``o``).

        Quantiles of their calibrated confidences in the cell (of all of
        them when the cell has none), from the start that
        :func:`~sklearn_betacal._kernels._selective.sequence_start` picks on
        their labels down to full coverage.
        """
        sel = slice(None)
        if cell is not None and np.any(o["cells"] == cell):
            sel = o["cells"] == cell
        q, e = o["p"][sel], o["err"][sel]
        w = None if o["w"] is None else o["w"][sel]
        if q.shape[0] == 0:  # nothing apart from the certification rows
            return np.array([0.0])
        grid = quantile_grid(q, int(self.thresholds))
        return grid[sequence_start(q, e, w, grid, n_certify, alpha) :]

    def _scores_and_cells(self, X):
        """``(P(correct), cell id)`` per row, the cells computed once.

        A binning calibrator of the package predicts block by block from the
        cells it computes (``_row_inputs``); reading both from that one pass
        spares ``apply`` computing the cells a second time. Any other
        calibrator: ``predict_proba``, then ``apply``.
        """
        cal = self.calibrator_
        inner = cal.estimator if isinstance(cal, FrozenEstimator) else cal
        hooks = ("_blocks", "_row_inputs", "_row_predictor")
        if not all(callable(getattr(type(inner), h, None)) for h in hooks):
            return self._scores(X), np.asarray(cal.apply(X), dtype=np.int64)
        predict = inner._row_predictor()
        p = cells = None
        for lo, hi, n, h, Z in inner._blocks(X):
            if p is None:
                p, cells = np.empty(n), np.empty(n, dtype=np.int64)
            inputs = inner._row_inputs(Z)
            p[lo:hi] = predict(h, *inputs)
            cells[lo:hi] = inputs[-1]
        if p is None:  # no rows
            return np.empty(0), np.empty(0, dtype=np.int64)
        return p, cells

    def _certify(self, X, y, sw, groups, other, certify, fixed):
        cal = self.calibrator_
        positive = self.classes_[positive_index(cal)]
        y_c = y[certify]
        known = np.isin(y_c, self.classes_)
        if not known.all():
            raise ValueError(
                f"y has {int((~known).sum())} certification row(s) with labels the "
                f"calibrator does not know (e.g. {y_c[~known][:3].tolist()}); its "
                f"classes_ are {self.classes_.tolist()}."
            )
        err = (y_c != positive).astype(np.float64)
        # one pass over all rows (the certifying ones and the others)
        cells_all = None
        if self.per_cell:
            p_all, cells_all = self._scores_and_cells(X)
        else:
            p_all = self._scores(X)
        p = p_all[certify]
        w = None if sw is None else sw[certify]
        # the rows that do not certify place the grid and the start
        o = None
        if fixed is None:
            o = {
                "p": p_all[other],
                "err": (y[other] != positive).astype(np.float64),
                "w": None if sw is None else sw[other],
                "cells": None if cells_all is None else cells_all[other],
            }
        if self.per_cell:
            cells_c = cells_all[certify]
            self.cells_ = np.unique(cells_c)
            at = cell_positions(cells_c, self.cells_)
        else:
            self.cells_ = None
            at = np.zeros(p.shape[0], dtype=np.int64)
        K = 1 if self.cells_ is None else self.cells_.shape[0]
        self.delta_per_cell_ = float(self.delta) / (K if self.simultaneous else 1)
        alpha = float(self.max_error)
        self.test_ = BINOMIAL_TEST
        names = ("thresholds_", "risk_bounds_", "coverage_", "n_certify_")
        out = {k: np.zeros(K) for k in (*names, "n_answered_", "n_errors_")}
        for c in range(K):
            rows = at == c
            pc, ec = p[rows], err[rows]
            wc = None if w is None else w[rows]
            total = float(rows.sum() if wc is None else wc.sum())
            grid = fixed
            if o is not None:
                grid = self._cell_grid(
                    o, None if self.cells_ is None else self.cells_[c], total, alpha
                )
            out["n_certify_"][c] = total
            level = self.delta_per_cell_
            codes = None
            if groups is not None:
                _, codes = np.unique(groups[certify][rows], return_inverse=True)
                if np.bincount(codes).max() == 1:
                    codes = None  # one row per group: the rows are i.i.d.
            if codes is None:
                j, n_ans, n_err, _ = fixed_sequence_threshold(
                    pc, ec, wc, grid, alpha, level
                )
                if j >= 0:
                    n_ans, n_err = n_ans[j], n_err[j]
                    bound = binomial_upper_bound(n_err, n_ans, level)
            else:
                self.test_ = GROUPED_TEST
                j, n_ans, n_err = grouped_sequence_threshold(
                    pc, ec, wc, codes, grid, alpha, level
                )
                if j >= 0:
                    bound = grouped_risk_bound(pc, ec, wc, codes, grid[j], level)
            if j < 0:
                out["thresholds_"][c] = np.inf
                out["risk_bounds_"][c] = np.nan
                continue
            out["thresholds_"][c] = grid[j]
            out["n_answered_"][c], out["n_errors_"][c] = n_ans, n_err
            out["coverage_"][c] = n_ans / total if total > 0 else 0.0
            out["risk_bounds_"][c] = bound
        for name, value in out.items():
            setattr(self, name, value)
        self.certified_ = np.isfinite(self.thresholds_)
        if not self.certified_.all():
            where = (
                "overall"
                if self.cells_ is None
                else f"in cell(s) {self.cells_[~self.certified_].tolist()[:10]}"
            )
            warnings.warn(
                f"AbstentionGate: no threshold could be certified {where} "
                f"({self.n_certify_[~self.certified_].sum():g} certification "
                f"row(s)) at max_error={self.max_error:g}, delta={self.delta:g}: "
                "those rows always abstain. More certification rows, a larger "
                "max_error or delta, or per_cell=False can help.",
                UserWarning,
                stacklevel=3,
            )

    def __setstate__(self, state):
        # a loaded model: a NaN threshold answered nothing silently, a cell
        # list out of step with the thresholds gave rows another cell's
        if "thresholds_" in state:
            _check_gate_state(type(self).__name__, state)
        super().__setstate__(state)

    # ------------------------------------------------------------- prediction
    def _row_thresholds(self, X):
        """``(p, threshold)`` per row; ``inf`` for a cell never certified."""
        check_is_fitted(self)
        if self.cells_ is None:
            p = self._scores(X)
            return p, np.full(p.shape[0], self.thresholds_[0])
        p, cells = self._scores_and_cells(X)
        at = cell_positions(cells, self.cells_)
        t = np.where(at >= 0, self.thresholds_[np.maximum(at, 0)], np.inf)
        return p, t

    def predict(self, X):
        """Whether to answer each question.

        Parameters
        ----------
        X : array-like
            The calibrator's input.

        Returns
        -------
        answer : ndarray of shape (n_samples,), dtype bool
            True where the calibrated confidence reaches the threshold of
            the row's cell (False: abstain).
        """
        p, t = self._row_thresholds(X)
        return p >= t

    def predict_proba(self, X):
        """The calibrator's probabilities, passed through.

        Parameters
        ----------
        X : array-like
            The calibrator's input.

        Returns
        -------
        proba : ndarray of shape (n_samples, 2)
            Columns in the order of ``classes_``.
        """
        check_is_fitted(self)
        return self.calibrator_.predict_proba(X)

    def decision_function(self, X):
        """Calibrated confidence minus the row's threshold.

        Parameters
        ----------
        X : array-like
            The calibrator's input.

        Returns
        -------
        margin : ndarray of shape (n_samples,)
            ``>= 0`` where the question is answered; ``-inf`` in a cell
            without a certified threshold.
        """
        p, t = self._row_thresholds(X)
        return p - t

    def abstain_reason(self, X):
        """Why each question is not answered.

        Parameters
        ----------
        X : array-like
            The calibrator's input.

        Returns
        -------
        reason : ndarray of shape (n_samples,), dtype object
            ``""`` (answered), ``"below threshold"`` or ``"uncertifiable
            cell"`` (no threshold certified in the row's cell, or a cell
            the certification rows never reached).
        """
        p, t = self._row_thresholds(X)
        reason = np.full(p.shape[0], BELOW_THRESHOLD, dtype=object)
        reason[p >= t] = ANSWERED
        reason[np.isinf(t)] = UNCERTIFIED
        return reason

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = default_calibrator() if self.calibrator is None else self.calibrator
        inner_tags = get_tags(inner)
        tags.input_tags.one_d_array = inner_tags.input_tags.one_d_array
        tags.input_tags.two_d_array = inner_tags.input_tags.two_d_array
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        tags.target_tags.required = True
        # not a classifier (predict says answer/abstain, not a label), but
        # its y is a binary label: scikit-learn's checks read this tag to
        # pass one
        tags.classifier_tags = ClassifierTags(multi_class=False)
        return tags


__all__ = ["AbstentionGate"]
