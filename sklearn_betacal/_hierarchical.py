# SPDX-License-Identifier: MIT
"""Hierarchical (mixed-effects) logistic scaling per partition cell, Eq. (5).

:class:`HierarchicalLogisticScaler` fits a logistic regression of the label on
the confidence with a fixed intercept and slope plus a random intercept and a
random slope per partition cell (partial pooling). It is the scaler ``S`` of
scaling-beta-binning (Alg. 3) and a calibrator in its own right. The default
solver is a NumPy/SciPy re-implementation of lme4's Laplace fit (see
:mod:`sklearn_betacal._kernels._mixed`).
"""

import numbers
import warnings

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._base import (
    PARTITIONER,
    _GroupCalibratorMixin,
    binary_predict,
    binary_proba,
    check_cell_range,
    check_group_columns,
    logit_eps_spec,
    positive_index,
)
from ._cells import cell_positions
from ._compat import HasMethods, Interval, StrOptions, fit_bayes_mixed_glm
from ._docstrings import fill_doc
from ._kernels import _mixed, _scaling
from ._kernels._scaling import data_logit_eps, to_logit
from ._state import CLASSES, COMMON_RULES, FEATURES, Array, Bool, Custom, Int, Schema
from ._validation import (
    check_cell_ids,
    damaged,
)

_SOLVERS = ("laplace", "statsmodels-vb", "statsmodels-map")

#: A cell's intercept or slope beyond this (log-odds per unit of the logit
#: covariate) on labels it separates is a fit running off to infinity, not
#: an estimate: no calibration is that steep (the usual slopes are 0.3-3).
_SEPARATED_COEF = 50.0


def _pooled_platt(x, y, w):
    """``[B0, B1]`` of the pooled fit ``expit(B0 + B1 x)`` (Platt scaling on
    the covariate): the fit without cells and the Laplace fit's start."""
    fit = _scaling.fit_platt(x, y, w)
    return np.array([fit.intercept, fit.coef])


def _check_deviance(owner, name, value, state):
    """A finite number, or NaN (a fit that reports none)."""
    if isinstance(value, bool) or not isinstance(value, float) or np.isinf(value):
        raise damaged(owner, "deviance_ is not a float")
    return value


def _check_cells(owner, state):
    """Sorted unique cells (of the fitted partition), and the public
    coefficients the fixed effects' (cells out of order raised IndexError,
    fewer random effects than cells served other cells' effects)."""
    cells = state["cells_"]
    if np.any(np.diff(cells) <= 0):
        raise damaged(owner, "cells_ is not sorted and unique")
    check_cell_range(owner, "cells_", cells, state)
    fixed = state["fixed_effects_"]
    if state["intercept_"][0] != fixed[0] or state["coef_"][0, 0] != fixed[1]:
        raise damaged(owner, "intercept_ / coef_ are not the fixed effects")


@fill_doc
class HierarchicalLogisticScaler(_GroupCalibratorMixin, ClassifierMixin, BaseEstimator):
    """Logistic scaling with a random intercept and slope per partition cell.

    Fits Eq. (5) of the beta-calibration paper,
    ``P(Y=1) = expit(B0 + U_s + (B1 + V_s) x)`` with ``x`` the confidence (or
    its logit), fixed effects ``B0, B1`` and independent Gaussian random
    effects ``U_s ~ N(0, sigma_0^2)``, ``V_s ~ N(0, sigma_1^2)`` for the cell
    ``s`` that the partitioner assigns to the row. The variances are estimated
    from the data, so a cell with few rows is shrunk toward the population
    fit (partial pooling).

    Read more in the :ref:`User Guide <hierarchical_scaler>`.

    Parameters
    ----------
    partitioner : transformer or None, default=None
        Maps the partition features (the columns of ``X`` other than the
        confidence) to one integer cell id per row; ``-1`` means outside every
        bounded leaf. ``None`` uses ``KDTreePartitioner()``. It is cloned and
        fitted on the partition features of all rows passed to ``fit``; wrap an
        already-fitted one in :class:`sklearn.frozen.FrozenEstimator` to keep it.
        ``"precomputed"``: ``X`` has exactly one column besides the confidence,
        holding integer cell ids (``-1``: outside every cell) as they are.
    confidence_column : int or str, default=0
        Position (or DataFrame column name) of the confidence in ``X``.
    input : {"probability", "logit"}, default="probability"
        ``"probability"``: the confidence column must lie in ``[0, 1]``.
        ``"logit"``: it is any finite score (e.g. a log-odds) and is used as
        the covariate as given, whatever ``covariate`` says.
    covariate : {"confidence", "logit"}, default="confidence"
        For probability input: ``"confidence"`` regresses on the raw
        confidence ``h`` as in the paper; ``"logit"`` on ``logit(h)`` (``h``
        clipped at the data-aware level ``logit_eps_``, as in
        :class:`PlattScaler`), which makes the one-cell model Platt scaling of
        the logit.
    solver : {"laplace", "statsmodels-vb", "statsmodels-map"}, default="laplace"
        ``"laplace"``: maximum likelihood under the Laplace approximation of
        the marginal likelihood, random effects as conditional modes -- the
        fit of lme4's ``glmer(y ~ x + (1 + x || cell), family = binomial)``
        with its default ``nAGQ = 1``. ``"statsmodels-vb"`` /
        ``"statsmodels-map"``: statsmodels' ``BinomialBayesMixedGLM`` with
        ``fit_vb`` / ``fit_map`` (Bayesian, with its default priors); they do
        not accept ``sample_weight`` and shrink much more (see Notes).
    tol : float, default=1e-9
        Relative tolerance on the Laplace deviance for the outer optimiser
        (``"laplace"`` only).
    random_state : int, RandomState instance or None, default=None
        Seeds the random starting point of statsmodels' ``fit_vb`` /
        ``fit_map`` (which otherwise draw it from fresh OS entropy, so that
        two fits differ); the default ``"laplace"`` solver draws nothing.
        As in :class:`BetaBinningCalibrator` it also seeds every
        ``random_state`` left at ``None`` in the partitioner.
    %(pos_label)s

    Attributes
    ----------
    %(classes_)s
    fixed_effects_ : ndarray of shape (2,)
        ``(B0, B1)``: population intercept and slope.
    intercept_ : ndarray of shape (1,)
        ``B0``, as ``LogisticRegression.intercept_`` (and ``PlattScaler``).
    coef_ : ndarray of shape (1, 1)
        ``B1``, as ``LogisticRegression.coef_`` (and ``PlattScaler``).
    logit_eps_ : ndarray of shape (2,)
        Only with ``covariate="logit"`` and probability input: the clips
        ``(low, high)`` of the confidence before its logit, the larger of
        ``1 / (W + 2)`` and half the distance from the boundary to the
        closest fitted confidence inside ``(0, 1)`` (see
        :class:`PlattScaler`).
    cells_ : ndarray of shape (n_cells,)
        Cell ids of the rows with positive weight at fit time (``-1``
        excluded).
    random_effects_ : ndarray of shape (n_cells, 2)
        Conditional modes ``(U_s, V_s)`` per cell, aligned with ``cells_``
        (lme4's ``ranef``).
    sigma_ : ndarray of shape (2,)
        Estimated standard deviations of the random intercept and slope.
    deviance_ : float
        Laplace-approximated marginal deviance ``-2 log L`` at the optimum,
        i.e. ``-2 * logLik(fit)`` of lme4 (``"laplace"`` only, else NaN).
    converged_ : bool
        Whether the outer optimiser and the inner Newton solves converged;
        ``False`` (with a ``ConvergenceWarning``) also when the data are
        separable or hold one class, where no finite maximum exists.
    n_iter_ : int
        Outer optimiser iterations.
    partitioner_ : transformer or "precomputed"
        The fitted partitioner (``"precomputed"`` when given so).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined only when ``X`` has string column names.

    See Also
    --------
    ScalingBetaBinningCalibrator : uses this model as the scaler of HS-BB.
    PlattScaler : the same model with a single cell and no random effects.
    BetaBinningCalibrator : per-cell histogram binning.

    Notes
    -----
    The Laplace solver works in lme4's spherical parametrisation
    ``(U_s, V_s) = (theta_0 u_0s, theta_1 u_1s)``, ``u_s ~ N(0, I)``, with
    ``theta >= 0``; ``sigma_ = theta``. For given fixed effects and ``theta``
    the conditional modes of all cells are found at once by vectorised 2x2
    Newton steps; the Laplace deviance ``sum_s dev_s + |u_s|^2 + log det H_s``
    and its exact gradient are minimised with L-BFGS-B jointly over
    ``(B0, B1, theta)``. The deviance is even in each ``theta_k``, so its
    gradient vanishes on the boundary ``theta_k = 0`` whatever the data: a
    ``theta_k`` that ends there is profiled at a few positive values and the
    fit restarts from the best one when it lowers the deviance (lme4's
    ``restart_edge``), so ``sigma_ = 0`` is reported only when it beats its
    neighbours in likelihood. Rows in cell ``-1`` contribute to the fixed effects
    only; at prediction time rows in cell ``-1`` or in a cell not seen at fit
    time get zero random effects (the population fit), as in the paper.
    ``sample_weight`` multiplies each row's log-likelihood (lme4's
    ``weights``), so an integer weight equals repeating the row.

    Agreement with lme4 1.1 is tested on three simulated data sets (files
    under ``tests/data/lme4``). statsmodels' variational-Bayes and MAP fits
    estimate a different (Bayesian, prior-driven) quantity. Measured on the
    60-cell ``many_small`` reference set (true slope SD 1.2, glmer 1.55): VB
    estimates the slope SD as 0.14 and MAP as 0.00, and their probabilities
    differ from glmer's by up to 0.30 and 0.28 (0.18 on the 25-cell ``mid``
    set, 0.02 on ``one_class``). They are also much slower (``fit_vb`` at
    N = 1e5: 23x the CPU time for 16 cells, 69x for 128, no result after 33
    CPU minutes for 1024); see
    ``docs/hierarchical_scaler.rst`` and ``benchmarks/results/hierarchical.md``.

    References
    ----------
    .. [1] Bates, Maechler, Bolker and Walker (2015). Fitting linear
       mixed-effects models using lme4. Journal of Statistical Software 67(1).
    .. [2] Eq. (5) and Alg. 3 of "beta-calibration of Language Model Confidence
       Scores for Generative QA".

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_betacal import HierarchicalLogisticScaler
    >>> rng = np.random.default_rng(0)
    >>> cell = rng.integers(0, 20, 4000)
    >>> h = rng.uniform(size=4000)
    >>> u, v = rng.normal(0, 0.8, 20), rng.normal(0, 1.5, 20)
    >>> p = 1 / (1 + np.exp(-(-1 + u[cell] + (2 + v[cell]) * h)))
    >>> y = rng.uniform(size=4000) < p
    >>> X = np.column_stack([h, cell])  # confidence, precomputed group
    >>> model = HierarchicalLogisticScaler(partitioner="precomputed").fit(X, y)
    >>> model.fixed_effects_.round(2)
    array([-0.9,  2.1])
    >>> model.sigma_.round(2)
    array([0.79, 1.91])
    >>> model.predict_proba([[0.9, 0], [0.9, 1], [0.9, -1]])[:, 1].round(2)
    array([0.69, 0.38, 0.73])
    """

    _smooth_proba = True  # see sklearn_betacal._base.smooth_proba

    _parameter_constraints = {
        "partitioner": [
            HasMethods(["fit", "transform"]),
            StrOptions({"precomputed"}),
            None,
        ],
        "confidence_column": [numbers.Integral, str],
        "input": [StrOptions({"probability", "logit"})],
        "covariate": [StrOptions({"confidence", "logit"})],
        "solver": [StrOptions(set(_SOLVERS))],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
    }

    _state_schema = Schema(
        **FEATURES,
        classes_=CLASSES,
        partitioner_=PARTITIONER,
        logit_eps_=logit_eps_spec(
            when=lambda s: s["covariate"] == "logit" and s["input"] == "probability"
        ),
        cells_=Array("i", (None,)),
        fixed_effects_=Array("f", (2,)),
        sigma_=Array("f", (2,), low=0),
        random_effects_=Array("f", (lambda s: s["cells_"].shape[0], 2)),
        deviance_=Custom(_check_deviance),
        converged_=Bool(),
        n_iter_=Int(low=0),
        intercept_=Array("f", (1,)),
        coef_=Array("f", (1, 1)),
        rules=(*COMMON_RULES, check_group_columns, _check_cells),
    )

    def __init__(
        self,
        partitioner=None,
        *,
        confidence_column=0,
        input="probability",
        covariate="confidence",
        solver="laplace",
        tol=1e-9,
        random_state=None,
        pos_label=None,
    ):
        self.partitioner = partitioner
        self.confidence_column = confidence_column
        self.input = input
        self.covariate = covariate
        self.solver = solver
        self.tol = tol
        self.random_state = random_state
        self.pos_label = pos_label

    def _covariate(self, h, w=None):
        """The covariate ``x``; on fit (``w`` given) sets ``logit_eps_``."""
        if self.covariate == "logit" and self.input == "probability":
            if w is not None:
                self.logit_eps_ = data_logit_eps(h, w)
            return to_logit(h, self.logit_eps_)
        return h

    def _fit_partitioner(self, Z, y=None, h=None, sample_weight=None, groups=None):
        if isinstance(self.partitioner, str):  # "precomputed": Z holds the ids
            self.partitioner_ = self.partitioner
            return None
        return super()._fit_partitioner(Z, y, h, sample_weight, groups)

    def _cells(self, Z):
        if isinstance(self.partitioner_, str):  # "precomputed": Z holds the ids
            if Z.shape[1] != 1:
                raise ValueError(
                    'partitioner="precomputed" needs exactly one column of cell '
                    f"ids besides the confidence; X has {Z.shape[1]}."
                )
            # the ids as given; check_cell_ids rejects non-integers and < -1
            ids = np.asarray(Z)[:, 0]
            return check_cell_ids(ids, Z.shape[0], who="precomputed cell ids")
        return super()._cells(Z)

    def _fit(self, fit_rows, h, y, sample_weight, ids, groups=None):
        """Eq. (5) on the rows the template ``fit`` kept: fixed effects,
        random-effect SDs and conditional modes (no split of its own:
        ``groups`` served the partitioner's)."""
        if sample_weight is not None and self.solver != "laplace":
            raise ValueError(
                f"solver={self.solver!r} (statsmodels BinomialBayesMixedGLM) "
                "does not support sample_weight; use solver='laplace' or drop "
                "the weights."
            )
        if self.solver != "laplace" and np.unique(y).size < 2:
            # BinomialBayesMixedGLM's own error ("endog values must be 0 and
            # 1, and not all identical") named neither the cause nor a fix
            raise ValueError(
                f"solver={self.solver!r} (statsmodels BinomialBayesMixedGLM) "
                "needs both classes among the labels; every one of the "
                f"{y.shape[0]} labels is the same. Use solver='laplace' (which "
                "fits such data, with a ConvergenceWarning) or more rows."
            )
        w = np.ones(h.shape[0]) if sample_weight is None else sample_weight
        x = self._covariate(h, w)

        seen = np.unique(ids if ids.min(initial=0) >= 0 else ids[ids >= 0])
        self.cells_ = seen
        n_cells = seen.shape[0]
        idx = cell_positions(ids, seen)
        idx[idx < 0] = n_cells  # rows in no cell: fixed effects only

        if self.solver == "laplace":
            self._fit_laplace(x, y, w, idx, n_cells)
        else:
            self._fit_statsmodels(x, y, idx, n_cells)
        if n_cells and not _scaling.separable(x, y, w):
            self._check_cell_separation(x, y, w, idx, n_cells)
        # the shapes of LogisticRegression / PlattScaler
        self.intercept_ = self.fixed_effects_[:1].copy()
        self.coef_ = self.fixed_effects_[1:2].reshape(1, 1).copy()
        return self

    def _check_cell_separation(self, x, y, w, idx, n_cells):
        """Warn, and set ``converged_ = False``, for cells that ran off.

        A cell whose labels both occur and are separated by the covariate
        has no finite maximum of its own; the prior on the random effects
        keeps it finite only while ``sigma_`` stays moderate. Where the fit
        instead let the cell's coefficients run off (``|intercept|`` or
        ``|slope|`` above ``_SEPARATED_COEF``), the marginal likelihood has no
        finite maximum either (the pooled data overlap, so the global check
        above does not see it): the reported fit is where the solver stopped.
        """
        live = w > 0
        extremes = []
        for label in (True, False):
            # a soft label 0 < y < 1 counts as both
            rows = live & ((y > 0.0) if label else (y < 1.0))
            lo = np.full(n_cells + 1, np.inf)
            hi = np.full(n_cells + 1, -np.inf)
            np.minimum.at(lo, idx[rows], x[rows])
            np.maximum.at(hi, idx[rows], x[rows])
            extremes.append((lo[:n_cells], hi[:n_cells]))
        (pos_lo, pos_hi), (neg_lo, neg_hi) = extremes
        both = np.isfinite(pos_lo) & np.isfinite(neg_lo)
        apart = (neg_hi <= pos_lo) | (pos_hi <= neg_lo)
        one_value = (pos_lo == pos_hi) & (pos_hi == neg_lo) & (neg_lo == neg_hi)
        coef = self.random_effects_ + self.fixed_effects_[:2]
        size = np.max(np.abs(coef), axis=1)
        off = both & apart & ~one_value & ~(size <= _SEPARATED_COEF)
        n_off = int(np.count_nonzero(off))
        if not n_off:
            return
        self.converged_ = False
        n_rows = int(np.count_nonzero(live & np.r_[off, False][idx]))  # n_cells: none
        warnings.warn(
            f"HierarchicalLogisticScaler: {n_off} of {n_cells} cells ({n_rows} "
            "rows) have labels separated by the confidence, and their "
            "intercept or slope ran off (largest |coefficient| "
            f"{float(np.max(size[off])):.3g} > {_SEPARATED_COEF:g}): the "
            "likelihood has no finite maximum there, so the coefficients are "
            "where the solver stopped and converged_ is False. Use fewer, "
            "larger cells, or BetaBinningCalibrator for a cell-wise "
            "calibration that does not need a finite maximum.",
            ConvergenceWarning,
            stacklevel=3,
        )

    def _fit_laplace(self, x, y, w, idx, n_cells):
        beta0 = _pooled_platt(x, y, w)
        if n_cells == 0:
            self.fixed_effects_ = beta0
            self.sigma_ = np.zeros(2)
            self.random_effects_ = np.zeros((0, 2))
            self.deviance_ = float(
                _mixed._bernoulli_deviance(beta0[0] + beta0[1] * x, y, w)
            )
            self.converged_ = True
            self.n_iter_ = 0
        else:
            res = _mixed.fit_laplace(x, y, w, idx, n_cells, beta0, tol=self.tol)
            self.fixed_effects_ = res["beta"]
            self.sigma_ = res["theta"]
            self.random_effects_ = res["u"] * res["theta"]
            self.deviance_ = res["deviance"]
            self.converged_ = res["converged"]
            self.n_iter_ = res["n_iter"]
        finite = all(
            np.all(np.isfinite(a))
            for a in (self.fixed_effects_, self.sigma_, self.random_effects_)
        )
        if not finite:
            # the inner Newton overflowed (e.g. weights ~1e100 on separable
            # data): report the pooled fit, which is finite, and say so
            self.fixed_effects_ = beta0
            self.sigma_ = np.zeros(2)
            self.random_effects_ = np.zeros((n_cells, 2))
            self.deviance_ = float("nan")
            self.converged_ = False
        if _scaling.separable(x, y, w):
            # no finite maximum likelihood: the pooled slope or intercept runs
            # off to infinity and the variances are not identified
            self.converged_ = False
            warnings.warn(
                "HierarchicalLogisticScaler: the calibration data are separable "
                "(every positive has a covariate at or above every negative, or "
                "there is one class only), so the maximum-likelihood fixed "
                "effects are infinite; the coefficients are where the solver "
                "stopped and sigma_ is not identified. Use more data, or "
                "PlattScaler(target_smoothing=True) for a finite fit.",
                ConvergenceWarning,
                stacklevel=3,
            )
        elif not finite:
            warnings.warn(
                "HierarchicalLogisticScaler: the Laplace fit overflowed (are the "
                "sample weights huge?); the fixed effects are the pooled "
                "logistic fit and sigma_ is set to 0. Rescale sample_weight.",
                ConvergenceWarning,
                stacklevel=3,
            )
        elif n_cells and self.n_iter_ == 0:
            # the random-effect SDs never left their start (1, 1): with a
            # tiny total weight the deviance is flat in them to within the
            # optimiser's absolute tolerance (2**-40 per row did this)
            self.converged_ = False
            warnings.warn(
                "HierarchicalLogisticScaler: the Laplace fit stopped at its "
                f"starting point (sigma_ = {self.sigma_.tolist()}): with a total "
                f"sample weight of {float(np.sum(w)):.3g} the data do not "
                "determine the random-effect SDs. These are frequency weights "
                "(copies of a row): multiply them all by a constant that gives "
                "their real count.",
                ConvergenceWarning,
                stacklevel=3,
            )
        elif not self.converged_:
            warnings.warn(
                "HierarchicalLogisticScaler: the Laplace fit did not converge "
                f"in {self.n_iter_} iterations; check for cells whose labels are "
                "separated by the confidence, or lower tol.",
                ConvergenceWarning,
                stacklevel=3,
            )

    def _fit_statsmodels(self, x, y, idx, n_cells):
        from scipy import sparse
        from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM
        from statsmodels.tools.sm_exceptions import (
            ConvergenceWarning as SMConvergenceWarning,
        )

        n = x.shape[0]
        exog = np.column_stack([np.ones(n), x])
        converged = True
        if n_cells == 0:
            self.fixed_effects_ = _pooled_platt(x, y, np.ones(n))
            self.sigma_ = np.zeros(2)
            self.random_effects_ = np.zeros((0, 2))
        else:
            rows = np.flatnonzero(idx < n_cells)
            cols = idx[rows]
            exog_vc = sparse.csr_matrix(
                (
                    np.concatenate([np.ones(rows.size), x[rows]]),
                    (
                        np.concatenate([rows, rows]),
                        np.concatenate([cols, cols + n_cells]),
                    ),
                ),
                shape=(n, 2 * n_cells),
            )
            ident = np.repeat([0, 1], n_cells)
            model = BinomialBayesMixedGLM(y, exog, exog_vc, ident)
            fit = model.fit_vb if self.solver == "statsmodels-vb" else model.fit_map
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", SMConvergenceWarning)
                seed = check_random_state(self.random_state).randint(2**31 - 1)
                result = fit_bayes_mixed_glm(fit, seed)
            converged = True
            for item in caught:
                if issubclass(item.category, SMConvergenceWarning):
                    converged = False
                warnings.warn_explicit(
                    item.message, item.category, item.filename, item.lineno
                )
            self.fixed_effects_ = np.asarray(result.fe_mean, dtype=np.float64)
            self.sigma_ = np.exp(np.asarray(result.vcp_mean, dtype=np.float64))
            vc = np.asarray(result.vc_mean, dtype=np.float64)
            self.random_effects_ = np.column_stack([vc[:n_cells], vc[n_cells:]])
        self.deviance_ = float("nan")
        self.converged_ = converged
        self.n_iter_ = 0

    @fill_doc
    def decision_function(self, X):
        """Linear predictor ``B0 + U_s + (B1 + V_s) x``: log-odds of ``classes_[1]``.

        %(group_X)s
        eta : ndarray of shape (n_samples,)
            The log-odds of the positive class (``pos_label``), negated when
            that is ``classes_[0]`` (positive values mean ``classes_[1]``, as
            in scikit-learn).
        """
        eta = self._log_odds(X)
        return eta if positive_index(self) == 1 else -eta

    def _log_odds(self, X):
        """``B0 + U_s + (B1 + V_s) x``: log-odds of the positive class."""
        check_is_fitted(self)
        h, Z = self._split_X(X, reset=False)
        ids = self._cells(Z)
        x = self._covariate(h)
        # the last row (position -1) serves cell -1 and unseen cells
        b0, b1 = self.fixed_effects_
        coef = np.vstack([self.random_effects_, np.zeros((1, 2))]) + [b0, b1]
        pos = cell_positions(ids, self.cells_)
        return coef[pos, 0] + coef[pos, 1] * x

    @fill_doc
    def predict_proba(self, X):
        """Calibrated probability of each class.

        %(group_X)s
        proba : ndarray of shape (n_samples, 2)
            Columns in the order of ``classes_``.
        """
        return binary_proba(self, expit(self._log_odds(X)))

    @fill_doc
    def predict(self, X):
        """Predict the positive class where its probability exceeds 0.5.

        %(group_X)s
        y_pred : ndarray of shape (n_samples,)
            Elements of ``classes_``.
        """
        return binary_predict(self, expit(self._log_odds(X)))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # one covariate per row: not meant to separate arbitrary feature blobs
        tags.classifier_tags.poor_score = True
        return tags
