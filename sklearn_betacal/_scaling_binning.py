# SPDX-License-Identifier: MIT
"""ScalingBinningCalibrator: Kumar et al.'s scaling-binning (baseline S-B).

Fits a scaler (Platt by default) on one part of the calibration data, then
uniform-mass bins of the *scaled* values on the other part, and outputs the
mean scaled value of a bin. The binning is the UMD engine of
:mod:`sklearn_betacal._kernels._cell_binning` (one table) with the scaled
values as targets,
which is how Alg. 3 of the paper feeds fitted values to binning.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.utils import check_random_state

from ._base import (
    BINNER_RULES,
    BINNER_STATE,
    _BinaryCalibratorMixin,
    confidence_fit_rows,
    damaged,
    resolve_n_bins,
    table_spec,
)
from ._cells import fit_takes
from ._compat import HasMethods, Interval, StrOptions, _fit_context
from ._defaults import platt_scaler
from ._docstrings import fill_doc
from ._groups import group_split
from ._kernels._cell_binning import tie_break, umd_fit_segments, umd_predict_table
from ._random import seed_inner
from ._state import CLASSES, COMMON_RULES, FEATURES, Custom, Int, Schema
from ._validation import (
    validate_confidence_data,
)


def _positive_column(estimator, who):
    """Index of class 1 in ``estimator.classes_`` (its predict_proba column)."""
    classes = np.asarray(getattr(estimator, "classes_", [0, 1]))
    col = np.flatnonzero(classes == 1)
    if classes.shape[0] != 2 or col.size != 1:
        raise ValueError(
            f"{who}: the scaler must be a binary classifier with classes [0, 1]; "
            f"its classes_ are {classes.tolist()}. Fit it on 0/1 correctness "
            "labels (both classes must occur in the scaler's part of the data)."
        )
    return int(col[0])


def _check_scaler(owner, name, scaler, state):
    """``scaler_`` is fitted from the ``scaler`` parameter: of its class (a
    ``PlattScaler`` of the calibrator's ``input`` by default)."""
    param = state["scaler"]
    want = platt_scaler(state["input"]) if param is None else param
    if type(scaler) is not type(want) or not callable(
        getattr(scaler, "predict_proba", None)
    ):
        raise damaged(owner, f"scaler_ is a {type(scaler).__name__}, not the "
                      f"{type(want).__name__} the scaler parameter fits")  # fmt: skip
    if getattr(scaler, "n_features_in_", 1) != 1:
        raise damaged(owner, "scaler_ does not read one confidence")
    if param is None and scaler.input != state["input"]:
        raise damaged(owner, "scaler_ reads another input than the calibrator")
    return scaler


def _check_positive_col(owner, state):
    classes = getattr(state["scaler_"], "classes_", None)
    if classes is not None and not (
        len(classes) == 2 and classes[state["_positive_col"]] == 1
    ):
        raise damaged(owner, "_positive_col is not the scaler's class 1")


@fill_doc
class ScalingBinningCalibrator(_BinaryCalibratorMixin, ClassifierMixin, BaseEstimator):
    """Scaling-binning calibrator of Kumar et al. (2019), baseline S-B.

    The calibration rows are split at random into ``D1`` (a fraction
    ``scaler_fraction``) and ``D2`` (whole questions on each side when
    ``fit`` is given ``groups``). A scaler ``g`` (Platt scaling by
    default) is fitted on ``D1``; the scaled values ``g(x)`` of ``D2`` are
    cut into ``B`` uniform-mass bins, and a new confidence gets the mean of
    ``g(x)`` over ``D2``'s points in its bin -- the mean of the *scaled
    values*, not of the labels. The output takes at most ``B`` distinct
    values, so its calibration error can be estimated by binning without the
    underestimation that continuous scalers suffer (Kumar et al., Prop. 3.3),
    while the scaler makes it far more sample-efficient than histogram
    binning of the labels.

    Parameters
    ----------
    scaler : estimator, default=None
        Classifier with ``fit`` and ``predict_proba`` that takes the same
        ``X`` (one confidence per row); ``None`` means
        ``PlattScaler(input=input)``. Any calibrator of this package works
        (e.g. ``TemperatureScaler``). An already-fitted scaler wrapped in
        :class:`~sklearn.frozen.FrozenEstimator` is not refit, and then all
        calibration rows form ``D2``.
    n_bins : int, default=None
        Number of bins ``B`` on ``D2``. Mutually exclusive with
        ``points_per_bin``; when both are None, 15 bins are used.
    points_per_bin : int, default=None
        Points per bin ``b``; then ``B = floor(N2 / b)`` with ``N2`` the
        (weighted) size of ``D2``.
    scaler_fraction : float, default=0.5
        Fraction of the calibration rows used to fit the scaler (``D1``); the
        paper splits equally. Ignored for a frozen scaler.
    delta : float, default=1e-10
        Tie-breaking noise for the scaled values before binning, as in
        :class:`UMDBinner` (a monotone scaler keeps the ties of tied
        confidences).
    input : {"probability", "logit"}, default="probability"
        Scale of ``X``: confidences in ``[0, 1]`` or finite scores. Passed to
        the default ``PlattScaler``.
    random_state : int, RandomState instance or None, default=None
        Controls the ``D1``/``D2`` split and the tie-breaking noise, and
        seeds the scaler's clone where its ``random_state`` is ``None``.
    %(pos_label)s

    Attributes
    ----------
    %(classes_)s
    scaler_ : estimator
        The fitted scaler (the frozen one as given, if frozen).
    n_bins_ : int
        Number of bins used (reduced with a warning when ``N2 < 2B``).
    bin_edges_ : ndarray of shape (`n_bins_` - 1,)
        Interior bin thresholds on the (nudged) scaled values.
    bin_values_ : ndarray of shape (`n_bins_`,)
        Mean scaled value of ``D2`` strictly inside each bin.
    bin_counts_ : ndarray of shape (`n_bins_`,)
        Weight behind each bin value.
    n_features_in_ : int
        Always 1.
    feature_names_in_ : ndarray of shape (1,)
        Set when ``X`` is a one-column DataFrame.

    See Also
    --------
    UMDBinner : histogram binning of the labels (baseline B).
    PlattScaler : the default scaler (baseline S).
    ScalingBetaBinningCalibrator : scaler, then binning per partition cell.

    Notes
    -----
    Differences from ``PlattBinnerCalibrator`` of the ``uncertainty-calibration``
    package (Kumar et al.'s code): (1) that code fits Platt scaling and the
    bins on the *same* data, while this class splits (the paper's
    procedure; pass a ``FrozenEstimator`` scaler to bin on all rows); (2)
    its bins are ``np.array_split`` chunks of the sorted scaled values with
    boundaries at midpoints between chunks, and each bin mean includes every
    point of its chunk; here the bins are those of Alg. 4 (UMD), whose edges
    are the order statistics ``g_(A_k)`` and whose means leave the edge
    points out. With ``N2 = B m - 1`` points the chunks and the UMD bins
    hold the same points except that each of the first ``B - 1`` chunks
    also holds its edge point.

    The output takes at most ``B`` distinct values, except at a confidence
    whose scaled value equals an edge point's: with ``delta > 0`` it gets the
    expected output over the tie-breaking nudge, a mix of the neighbouring
    bins (see :class:`UMDBinner`, Notes, "Ties").

    Sample weights go to the scaler's ``fit`` (an error names a scaler that
    cannot take them) and weigh the bin means. Zero-weight rows are dropped
    before the split, so a zero weight is the same as leaving the row out.
    An integer weight ``k`` keeps ``k`` copies of a row together in one part
    of the split, whereas ``k`` repeated rows are split independently: the
    two agree in distribution, and exactly with a frozen scaler and
    ``delta=0``.

    References
    ----------
    .. [1] A. Kumar, P. Liang and T. Ma. Verified uncertainty calibration.
       NeurIPS 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn_betacal import ScalingBinningCalibrator
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=4000)
    >>> y = rng.uniform(size=4000) < 1 / (1 + np.exp(-2 * z))
    >>> sb = ScalingBinningCalibrator(
    ...     LogisticRegression(), n_bins=10, input="logit", random_state=0
    ... ).fit(z.reshape(-1, 1), y)
    >>> sb.n_bins_
    10
    >>> np.round(sb.predict_proba([[-2.0], [0.0], [2.0]])[:, 1], 2)
    array([0.04, 0.56, 0.96])
    """

    _parameter_constraints: dict = {
        "pos_label": "no_validation",  # checked against y in fit
        "scaler": [HasMethods(["fit", "predict_proba"]), None],
        "n_bins": [Interval(Integral, 1, None, closed="left"), None],
        "points_per_bin": [Interval(Integral, 1, None, closed="left"), None],
        "scaler_fraction": [Interval(Real, 0, 1, closed="neither")],
        "delta": [Interval(Real, 0, None, closed="left")],
        "input": [StrOptions({"probability", "logit"})],
        "random_state": ["random_state"],
    }

    _state_schema = Schema(
        **{**FEATURES, "n_features_in_": Int(low=1, high=1)},  # one confidence
        classes_=CLASSES,
        scaler_=Custom(_check_scaler),
        **BINNER_STATE,
        _positive_col=Int(low=0, high=1),
        _table=table_spec(stacked=True),
        rules=(*COMMON_RULES, *BINNER_RULES, lambda o, s: _check_positive_col(o, s)),
    )

    def __init__(
        self,
        scaler=None,
        *,
        n_bins=None,
        points_per_bin=None,
        scaler_fraction=0.5,
        delta=1e-10,
        input="probability",
        random_state=None,
        pos_label=None,
    ):
        self.scaler = scaler
        self.n_bins = n_bins
        self.points_per_bin = points_per_bin
        self.scaler_fraction = scaler_fraction
        self.delta = delta
        self.input = input
        self.random_state = random_state
        self.pos_label = pos_label

    @fill_doc
    @_fit_context(
        # the scaler is validated by its own fit
        prefer_skip_nested_validation=False
    )
    def fit(self, X, y, sample_weight=None, groups=None):
        """Fit the scaler on ``D1`` and the bins on ``D2``.

        Parameters
        ----------
        %(confidence_fit_parameters)s
        %(groups_fit_parameter)s

        Returns
        -------
        self : ScalingBinningCalibrator
        """
        who = type(self).__name__
        rows = confidence_fit_rows(self, X, y, sample_weight, groups)
        h, y, sw = rows[:3]
        codes = rows[3] if groups is not None else None
        rng = check_random_state(self.random_state)

        if self.scaler is None:
            scaler = platt_scaler(self.input)
        else:
            scaler = clone(self.scaler)
        seed_inner(scaler, self.random_state, name="scaler")
        frozen = isinstance(scaler, FrozenEstimator)
        n = h.shape[0]
        if frozen:
            part2 = np.arange(n)
        else:
            if n < 2:
                raise ValueError(
                    f"{who} needs at least 2 calibration rows (one to fit the "
                    f"scaler, one to bin); got {n}."
                )
            if codes is None:
                n1 = min(max(int(round(self.scaler_fraction * n)), 1), n - 1)
                perm = rng.permutation(n)
                part1, part2 = np.sort(perm[:n1]), np.sort(perm[n1:])
            else:  # whole questions on each side
                part1, part2 = group_split(
                    codes,
                    self.scaler_fraction,
                    rng,
                    who=who,
                    what="the D1/D2 split (scaler on some questions, bins on "
                    "the others)",
                    fix="Give rows of more questions.",
                )
            fit_params = {}
            if sw is not None:
                if not fit_takes(scaler, "sample_weight"):
                    raise ValueError(
                        f"{who}: sample_weight was given but the scaler "
                        f"{type(scaler).__name__} does not accept sample_weight "
                        "in fit; use a scaler that does (e.g. PlattScaler) or "
                        "drop the weights."
                    )
                fit_params["sample_weight"] = sw[part1]
            scaler.fit(h[part1].reshape(-1, 1), y[part1], **fit_params)
        col = _positive_column(scaler, who)

        g2 = scaler.predict_proba(h[part2].reshape(-1, 1))[:, col]
        g2 = np.asarray(g2, dtype=np.float64)
        sw2 = None if sw is None else sw[part2]
        total = float(g2.shape[0]) if sw2 is None else float(np.sum(sw2))
        n_rows = g2.shape[0] if sw2 is None else int(np.count_nonzero(sw2))
        B = resolve_n_bins(
            self.n_bins, self.points_per_bin, total, who=who, n_rows=n_rows
        )
        delta = float(self.delta)
        # Kumar et al.: bins on the scaled values, and the bin output is the
        # mean of the scaled values themselves (targets t = g, as in Alg. 3).
        if sw2 is not None and np.all(sw2 == 1.0):
            sw2 = None  # unit weights: the unweighted sort
        table = umd_fit_segments(
            tie_break(g2, delta, rng), g2, sw2, None, [B], delta=delta, raw=g2
        )

        self.scaler_ = scaler
        self.n_bins_ = B
        self.bin_edges_ = table.edges
        self.bin_values_ = table.values
        self.bin_counts_ = table.counts
        self._positive_col = col
        self._table = table._asdict()  # plain dict: a safe model file
        return self

    def _calibrated(self, X):
        h = validate_confidence_data(self, X, reset=False, input=self.input)
        g = self.scaler_.predict_proba(h.reshape(-1, 1))[:, self._positive_col]
        return umd_predict_table(self._table, np.asarray(g, dtype=np.float64))


__all__ = ["ScalingBinningCalibrator"]
