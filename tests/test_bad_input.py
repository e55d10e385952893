# SPDX-License-Identifier: MIT
"""Bad input never gives a silent wrong answer or an unhelpful traceback.

Two parts. First, one regression test per root cause found by a systematic
bad-input run (the item numbers of the hardening issue): each failed before
its fix. Second, property-based tests (hypothesis) that feed every public
estimator (the text embedder included) and metric the same families --
non-finite and extreme values, scalar and extreme weights, byte orders and
dtypes, degenerate cells, missing and odd text -- and assert the contract:
either a ``ValueError``/``TypeError`` raised by this library (not from inside
NumPy/SciPy/pandas) whose message names the argument, or finite output in
range. The CLI (``report``, ``fit``, ``apply``) gets malformed, corrupt and
mis-compressed files, bad options and broken model files, and must exit 0
or 2 with one line, never a traceback, leaving nothing behind but its
output. ``BETACAL_BAD_INPUT_EXAMPLES`` sets the examples per property (12).
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_betacal import (
    BetaBinningCalibrator,
    PlattScaler,
    ScalingBinningCalibrator,
    TemperatureScaler,
    UMDBinner,
)
from sklearn_betacal.metrics import (
    area_under_accuracy_confidence,
    beta_calibration_error,
    brier_decomposition,
    expected_calibration_error,
    maximum_calibration_error,
    reliability_table,
)


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    h = rng.uniform(size=n)
    y = (rng.uniform(size=n) < h).astype(int)
    return h, y


# ------------------------------------------------------------ item 4: bytes


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_metrics_read_big_endian_floats_by_value(strategy):
    # the fast range check viewed '>f8' bits as native: [.5, 2, .25, 4] passed
    # as probabilities (ECE 1.8125) and uniform binning crashed in bincount
    bad = np.array([0.5, 2.0, 0.25, 4.0], ">f8")
    for metric in (expected_calibration_error, maximum_calibration_error):
        with pytest.raises(ValueError, match=r"y_prob has 2 value\(s\) outside"):
            metric([1, 0, 1, 0], bad, strategy=strategy)
    with pytest.raises(ValueError, match="outside"):
        beta_calibration_error([1, 0, 1, 0], bad, cells=[0, 0, 1, 1])
    with pytest.raises(ValueError, match="outside"):
        area_under_accuracy_confidence([1, 0, 1, 0], bad)
    with pytest.raises(ValueError, match="outside"):
        reliability_table([1, 0, 1, 0], bad)
    good = np.array([0.5, 0.2, 0.25, 0.4])
    y = np.array([1, 0, 1, 0])
    for dt in (">f8", ">f4", "<f4"):
        for ydt in (">i8", ">f8", "u1"):
            assert expected_calibration_error(
                y.astype(ydt), good.astype(dt), strategy=strategy
            ) == pytest.approx(
                expected_calibration_error(
                    y, good.astype(dt).astype(float), strategy=strategy
                ),
                rel=1e-12,
            )
    w = np.array([1.0, 2.0, 3.0, 4.0])
    assert expected_calibration_error(
        y, good, sample_weight=w.astype(">f8")
    ) == expected_calibration_error(y, good, sample_weight=w)


# --------------------------------------------------- items 5, 6, 13: weights


ESTIMATORS_1D = [
    TemperatureScaler(),
    PlattScaler(),
    UMDBinner(),
    ScalingBinningCalibrator(random_state=0),
]


@pytest.mark.parametrize("estimator", ESTIMATORS_1D, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -1.0])
def test_scalar_non_finite_weight_is_rejected(estimator, bad):
    # a scalar NaN/inf skipped the weight check: temperature returned tau = 1
    # or hard 0/1, UMD all NaN, Platt crashed inside scipy
    h, y = _data()
    with pytest.raises(ValueError, match="sample_weight"):
        estimator.fit(h, y, sample_weight=bad)


def test_bb_non_finite_and_overflowing_weights_are_rejected():
    h, y = _data()
    X = np.column_stack([h, np.random.default_rng(1).normal(size=(h.size, 2))])
    bb = BetaBinningCalibrator(points_per_bin=20, random_state=0)
    with pytest.raises(ValueError, match="sample_weight has 400 NaN or infinite"):
        bb.fit(X, y, sample_weight=np.full(h.size, np.inf))
    with pytest.raises(ValueError, match="sample_weight has 400 NaN or infinite"):
        bb.fit(X, y, sample_weight=1.0 + np.full(h.size, np.nan))


@pytest.mark.parametrize("scale", [1e200, 1e308])
def test_bb_huge_finite_weights_act_as_large_counts(scale):
    # 1e200 per row asked for 2e201 bins ("Maximum allowed size exceeded"),
    # 1e308 "cannot convert float NaN to integer". Beyond 2**53 in total the
    # weights are rescaled by a power of two, so any huge constant weight is
    # the same fit as 1e12 per row.
    h, y = _data()
    X = np.column_stack([h, np.random.default_rng(1).normal(size=(h.size, 2))])
    fits = []
    for c in (1e12, scale):
        bb = BetaBinningCalibrator(points_per_bin=20, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            fits.append(bb.fit(X, y, sample_weight=np.full(h.size, c)).predict_proba(X))
    assert np.all(np.isfinite(fits[1])) and np.all((fits[1] >= 0) & (fits[1] <= 1))
    assert_allclose(fits[1], fits[0], atol=1e-6)


@pytest.mark.parametrize("scale", [2.0**53, 3e16, 1e100, 1e300])
def test_umd_weights_beyond_2_53_act_as_large_counts(scale):
    # total weight beyond 2**53 moved predictions by up to 0.45 (int64
    # overflow in the edge positions), 3e16 per row raised OverflowError. A
    # constant weight c makes every row c copies; the excluded edge copy is
    # 1/c of a row, so the fit must agree with c = 1e6 to ~1e-6.
    h, y = _data()
    ref = UMDBinner(n_bins=15, random_state=0).fit(
        h, y, sample_weight=np.full(h.size, 1e6)
    )
    big = UMDBinner(n_bins=15, random_state=0).fit(
        h, y, sample_weight=np.full(h.size, scale)
    )
    assert_allclose(big.predict_proba(h), ref.predict_proba(h), atol=1e-5)


def test_umd_overflowing_total_weight_is_rescaled():
    # 1e308 per row: the total overflowed and every prediction was NaN
    h, y = _data()
    ref = UMDBinner(random_state=0).fit(h, y, sample_weight=np.full(h.size, 1e12))
    big = UMDBinner(random_state=0).fit(h, y, sample_weight=np.full(h.size, 1e308))
    assert_allclose(big.predict_proba(h), ref.predict_proba(h), atol=1e-6)


@pytest.mark.parametrize(
    "metric",
    [
        expected_calibration_error,
        maximum_calibration_error,
        area_under_accuracy_confidence,
        lambda y, p, **kw: beta_calibration_error(
            y, p, cells=np.arange(len(y)) % 3, **kw
        ),
        lambda y, p, **kw: brier_decomposition(y, p, **kw).calibration,
    ],
)
def test_metrics_are_scale_free_up_to_the_float_maximum(metric):
    # at 1e308 per row the total overflowed and the metrics returned NaN
    h, y = _data()
    ref = metric(y, h)
    for c in (2.0**60, 1e200, 1e308):
        assert metric(y, h, sample_weight=np.full(h.size, c)) == pytest.approx(
            ref, rel=1e-12
        )


def test_platt_and_temperature_weights_up_to_the_float_maximum():
    # 1e308 per row: scipy's "array must not contain infs or NaNs" (Platt)
    h, y = _data()
    big = np.full(h.size, 1e308)
    # on logits both likelihoods are scale-free in the weights: same fit
    for est in (PlattScaler(input="logit"), TemperatureScaler(input="logit")):
        x = h - 0.5
        ref = type(est)(**est.get_params()).fit(x, y).predict_proba(x)
        got = est.fit(x, y, sample_weight=big).predict_proba(x)
        assert_allclose(got, ref, atol=1e-9)
    # on probabilities the logit clip depends on the total weight (as a
    # count): only finiteness is the contract here
    for est in (PlattScaler(), TemperatureScaler()):
        p = est.fit(h, y, sample_weight=big).predict_proba(h)
        assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))


# ------------------------------------------- items 14, 15, 17: bins and sizes


@pytest.mark.parametrize(
    "metric",
    [
        expected_calibration_error,
        maximum_calibration_error,
        reliability_table,
        brier_decomposition,
    ],
)
def test_metrics_reject_bool_and_unallocatable_n_bins(metric):
    h, y = _data()
    with pytest.raises(TypeError, match="n_bins must be an int"):
        metric(y, h, n_bins=True)
    # 1e10 bins allocated 74.5 GiB
    with pytest.raises(ValueError, match="n_bins=10000000000 is out of range"):
        metric(y, h, n_bins=10**10)


def test_auac_rejects_unallocatable_grid():
    h, y = _data()
    with pytest.raises(ValueError, match="grid=10000000000 is out of range"):
        area_under_accuracy_confidence(y, h, grid=10**10)


@pytest.mark.parametrize(
    ("norm", "debiased"),
    [("l1", False), ("l2", False), ("max", False), ("l2_squared", True)],
)
def test_beta_ce_sparse_grid_equals_dense(norm, debiased):
    # 1e5 groups x 1e4 bins built a dense 7.45 GiB grid. Above 4 n + 4096
    # (cell, bin) pairs only the occupied ones are summed; appending rows of
    # zero weight (= dropping them) moves the same data to the dense path.
    rng = np.random.default_rng(3)
    n = 3000
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    groups = rng.integers(0, 300, n)
    w = rng.uniform(0, 2, n)
    pad = 20_000
    kw = {"n_bins": 100, "norm": norm}
    if debiased:
        kw["debiased"] = True
    sparse = beta_calibration_error(y, p, cells=groups, sample_weight=w, **kw)
    dense = beta_calibration_error(
        np.r_[y, np.zeros(pad, int)],
        np.r_[p, np.full(pad, 0.5)],
        cells=np.r_[groups, np.zeros(pad, int)],
        sample_weight=np.r_[w, np.zeros(pad)],
        **kw,
    )
    assert sparse == pytest.approx(dense, rel=1e-10, abs=1e-15)
    big = beta_calibration_error(
        y, p, cells=np.arange(n), **{**kw, "n_bins": 10**6}
    )  # 3e9 dense pairs: must not allocate them
    assert np.isfinite(big)


def test_beta_ce_noise_floor_sparse_grid_equals_dense():
    from sklearn_betacal.metrics import beta_calibration_noise_floor

    rng = np.random.default_rng(4)
    n = 2000
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    groups = rng.integers(0, 200, n)
    sparse = beta_calibration_noise_floor(y, p, cells=groups, n_bins=100)
    pad = 20_000
    dense = beta_calibration_noise_floor(
        np.r_[y, np.zeros(pad, int)],
        np.r_[p, np.full(pad, 0.5)],
        cells=np.r_[groups, np.zeros(pad, int)],
        sample_weight=np.r_[np.ones(n), np.zeros(pad)],
        n_bins=100,
    )
    assert sparse == pytest.approx(dense, rel=1e-10)


def test_points_per_bin_bins_follow_rows_not_weight():
    # 400 rows of weight 1e6 with points_per_bin=20 gave 2e7 bins (12 s,
    # 2.8 GB); 1e7 per row MemoryError
    h, y = _data()
    for c in (1e6, 1e7, 1e12):
        with pytest.warns(UserWarning, match="bins beyond one per row"):
            m = UMDBinner(points_per_bin=20, random_state=0).fit(
                h, y, sample_weight=np.full(h.size, c)
            )
        assert m.n_bins_ <= 2**20
        assert np.all(np.isfinite(m.predict_proba(h)))


# ----------------------------------------------- items 3, 11: extreme scores


def test_multiclass_temperature_on_float_max_logits_is_finite():
    Z = np.array(
        [
            [1.7e308, -1.7e308, 0],
            [0, 1, 2],
            [1, 0, 0],
            [-1.7e308, 1.7e308, 0],
            [0, 0, 1],
            [3, 1, 0],
        ]
    )
    y = [0, 2, 0, 1, 2, 0]
    ts = TemperatureScaler(input="logit").fit(Z, y)
    p = ts.predict_proba(Z)
    assert np.all(np.isfinite(p))
    assert_allclose(p.sum(axis=1), 1.0)
    assert p[0, 0] == 1.0 and p[3, 1] == 1.0


@pytest.mark.parametrize("scale", [1e155, 1e300, 1e308])
def test_platt_logit_input_at_huge_scores_is_the_same_model(scale):
    # scipy's "array must not contain infs or NaNs" at logits ~1e300
    h, y = _data()
    s = h - 0.5
    ref = PlattScaler(input="logit").fit(s, y)
    big = PlattScaler(input="logit").fit(s * scale, y)
    assert_allclose(big.coef_[0, 0] * scale, ref.coef_[0, 0], rtol=1e-6)
    assert_allclose(big.intercept_, ref.intercept_, rtol=1e-6, atol=1e-9)
    assert_allclose(big.predict_proba(s * scale), ref.predict_proba(s), atol=1e-9)


# ------------------------------------------------- item 7: TextEmbedder size


def test_text_embedder_rejects_more_components_than_texts():
    # n_components=2 on one text returned shape (1, 1) while
    # get_feature_names_out listed two names
    from sklearn_betacal import TextEmbedder

    with pytest.raises(ValueError, match="n_components=2 needs at least 2"):
        TextEmbedder(n_components=2, min_df=1).fit_transform(["hello world"])
    emb = TextEmbedder(n_components=2, min_df=1, random_state=0)
    out = emb.fit_transform(["hello world", "good morning sun", "hello sun"])
    assert out.shape == (3, 2) == (3, len(emb.get_feature_names_out()))


# ===================================================== property-based part
#
# The contract for any input: either a ValueError/TypeError raised by this
# library (or by scikit-learn's declared validation, validate_data and
# validate_params) whose message names the argument, or finite output in
# range. Never NaN, never a traceback from inside NumPy, SciPy or pandas.

import inspect  # noqa: E402
import os  # noqa: E402
import traceback  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from sklearn.base import BaseEstimator, is_classifier  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

import sklearn_betacal  # noqa: E402

#: Modules whose frames may raise the error the user sees: ours, and
#: scikit-learn's own input validation (which names the argument).
_OWN = (
    "sklearn_betacal",
    "sklearn/utils/validation.py",
    "sklearn/utils/_param_validation.py",
)
#: Where a raise means an unhelpful traceback.
_FOREIGN = ("numpy", "scipy", "pandas")

_SETTINGS = settings(
    max_examples=int(os.environ.get("BETACAL_BAD_INPUT_EXAMPLES", 12)),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _public_estimators():
    """Every estimator class exported by ``sklearn_betacal.__all__``."""
    out = []
    for name in sklearn_betacal.__all__:
        obj = getattr(sklearn_betacal, name)
        if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
            out.append(obj)
    return out


def _build(cls):
    """A default instance; required arguments get the simplest valid value."""
    params = inspect.signature(cls.__init__).parameters
    kwargs = {}
    for p in params.values():
        if p.name == "self" or p.default is not inspect.Parameter.empty:
            continue
        if p.name == "estimator":
            kwargs["estimator"] = LogisticRegression()
        elif p.name == "partitioners":
            kwargs["partitioners"] = [
                ("a", sklearn_betacal.KDTreePartitioner(max_depth=1), [0])
            ]
        else:  # a new required argument: the builder must learn it
            raise AssertionError(f"{cls.__name__} needs {p.name}; teach _build")
    if "random_state" in params:
        kwargs["random_state"] = 0
    return cls(**kwargs)


def _family(est):
    """How an estimator takes its input."""
    params = est.get_params(deep=False)
    if "estimator" in params:
        return "meta"  # a classifier over features
    if "max_error" in params:
        # the AbstentionGate: not a classifier (predict answers or abstains),
        # it takes what its calibrator (by default one of the confidence) does
        return "confidence"
    if not is_classifier(est):
        return "text" if type(est).__name__ == "TextEmbedder" else "features"
    return "grouped" if "confidence_column" in params else "confidence"


ESTIMATORS = [_build(cls) for cls in _public_estimators()]


def _of(family):
    """The estimators of one family (:func:`_family`)."""
    return [e for e in ESTIMATORS if _family(e) == family]


def _name(est):
    return type(est).__name__


def test_every_public_estimator_is_covered():
    # a new public estimator is discovered from __all__ and must build here
    names = {type(e).__name__ for e in ESTIMATORS}
    assert {"PlattScaler", "BetaBinningCalibrator", "KDTreePartitioner"} <= names
    for est in ESTIMATORS:
        assert _family(est) in {"meta", "text", "features", "grouped", "confidence"}


def _raised_by_us(exc):
    frames = traceback.extract_tb(exc.__traceback__)
    where = frames[-1].filename.replace("\\", "/")
    foreign = any(f"/{m}/" in where for m in _FOREIGN) and not any(
        o in where for o in _OWN
    )
    return not foreign and any(o in where for o in _OWN), where


def _check_contract(call, names, *, lo=0.0, hi=1.0):
    """Run ``call``: a clear error naming one of ``names``, or finite output."""
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", (ConvergenceWarning, UserWarning, RuntimeWarning)
        )
        try:
            out = call()
        except (ValueError, TypeError) as exc:
            ours, where = _raised_by_us(exc)
            assert ours, f"{type(exc).__name__} raised inside {where}: {exc}"
            msg = str(exc)
            assert any(n in msg for n in names), f"message names none of {names}: {msg}"
            return None
        except Exception as exc:  # noqa: BLE001 - any other type breaks the contract
            frames = traceback.extract_tb(exc.__traceback__)
            raise AssertionError(
                f"{type(exc).__name__} instead of ValueError/TypeError at "
                f"{frames[-1].filename}:{frames[-1].lineno}: {exc}"
            ) from exc
    values = np.asarray(out, dtype=np.float64)
    assert np.all(np.isfinite(values)), f"non-finite output {values}"
    assert np.all((values >= lo) & (values <= hi)), f"output outside [{lo}, {hi}]"
    return out


# ------------------------------------------------------------- strategies

_SPECIAL = [
    np.nan,
    np.inf,
    -np.inf,
    0.0,
    -0.0,
    1.0,
    5e-324,
    1e-300,
    0.5,
    1e300,
    -1e300,
    1.7976931348623157e308,
    -1.0,
    2.0,
]
_DTYPES = ["<f8", ">f8", "<f4", ">f4", "<f2", "<i8", ">i4", "u1", "?"]


@st.composite
def _confidences(draw, n):
    """Mostly valid probabilities with a few special values, any dtype."""
    base = draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))
    x = np.array(base)
    n_special = draw(st.integers(0, 2))
    for _ in range(n_special):
        x[draw(st.integers(0, n - 1))] = draw(st.sampled_from(_SPECIAL))
    dtype = draw(st.sampled_from(_DTYPES))
    with np.errstate(all="ignore"):
        if dtype[-2:] in ("i8", "i4", "u1") or dtype == "?":
            x = np.nan_to_num(np.round(x), nan=0, posinf=1, neginf=0).clip(-3, 3)
        return x.astype(dtype)


@st.composite
def _weights(draw, n):
    kind = draw(st.sampled_from(["none", "scalar", "array"]))
    if kind == "none":
        return None
    value = st.sampled_from(_SPECIAL + [3.0, 2.0**53, 1e200])
    if kind == "scalar":
        return draw(value)
    w = np.array(draw(st.lists(st.floats(0, 5), min_size=n, max_size=n)))
    if draw(st.booleans()):
        w[draw(st.integers(0, n - 1))] = draw(value)
    if draw(st.booleans()):
        w = w * draw(st.sampled_from([1e-300, 1e100, 1e306]))
    return w.astype(draw(st.sampled_from(["<f8", ">f8", "<f4"])))


@st.composite
def _labels(draw, n):
    kind = draw(st.sampled_from(["mixed", "one_class", "bool"]))
    if kind == "one_class":
        return np.full(n, draw(st.integers(0, 1)))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    return y.astype(bool) if kind == "bool" else y


# ------------------------------------------------------------- estimators

_N = st.integers(4, 30)


@st.composite
def _sample(draw):
    """Confidences, labels and weights of one size drawn from :data:`_N`."""
    n = draw(_N)
    return draw(_confidences(n)), draw(_labels(n)), draw(_weights(n))


def _fit_predict(est, X, y, w):
    from sklearn.base import clone

    fitted = clone(est).fit(X, y, sample_weight=w)
    return fitted.predict_proba(X)


_ARG_NAMES = (
    "X",
    "y",
    "sample_weight",
    "confidence",
    "label",
    "n_bins",
    "points_per_bin",
    "cell",
    "weight",
    "class",
    "rows",
)


@pytest.mark.parametrize("est", _of("confidence"), ids=_name)
@_SETTINGS
@given(data=st.data())
def test_confidence_calibrators_keep_the_contract(est, data):
    X, y, w = data.draw(_sample())
    _check_contract(lambda: _fit_predict(est, X, y, w), _ARG_NAMES)
    if est.get_params().get("input") == "probability":
        logit = type(est)(**{**est.get_params(), "input": "logit"})
        scores = np.asarray(X, dtype=np.float64) * data.draw(
            st.sampled_from([1.0, 1e150, 1e300, -1e308])
        )
        _check_contract(lambda: _fit_predict(logit, scores, y, w), _ARG_NAMES)


def _with_learned_tree():
    """The grouped calibrators as built, and BB / S-BB on the learned tree
    (its direction fit and whitened scores see the same inputs)."""
    from sklearn_betacal import CalibrationTreePartitioner

    grouped = _of("grouped")
    learned = [
        type(e)(CalibrationTreePartitioner(), random_state=0)
        for e in grouped
        if type(e).__name__ in {"BetaBinningCalibrator", "ScalingBetaBinningCalibrator"}
    ]
    return grouped + learned


@pytest.mark.parametrize(
    "est",
    _with_learned_tree(),
    ids=lambda e: (
        type(e).__name__
        + (
            "-tree"
            if type(e.get_params()["partitioner"]).__name__.startswith("Cal")
            else ""
        )
    ),
)
@_SETTINGS
@given(data=st.data())
def test_grouped_calibrators_keep_the_contract(est, data):
    n = data.draw(_N)
    h = data.draw(_confidences(n)).astype(np.float64, copy=False)
    kinds = ["random", "constant", "one_per_row", "huge", "tiny"]
    kind = data.draw(st.sampled_from(kinds))
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    Z = {
        "random": rng.normal(size=(n, 2)),
        "constant": np.zeros((n, 2)),
        "one_per_row": np.column_stack([np.arange(n), np.arange(n)]) * 1.0,
        "huge": rng.normal(size=(n, 2)) * 1e200,
        "tiny": rng.normal(size=(n, 2)) * 1e-300,
    }[kind]
    X = np.column_stack([h, Z])
    y = data.draw(_labels(n))
    w = data.draw(_weights(n))
    params = {"points_per_bin": 2} if "points_per_bin" in est.get_params() else {}
    est = type(est)(**{**est.get_params(deep=False), **params})
    _check_contract(lambda: _fit_predict(est, X, y, w), _ARG_NAMES)


@pytest.mark.parametrize("est", _of("meta"), ids=_name)
@_SETTINGS
@given(data=st.data())
def test_meta_classifiers_keep_the_contract(est, data):
    n = data.draw(st.integers(12, 30))
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    X = rng.normal(size=(n, 2)) * data.draw(st.sampled_from([1.0, 1e-300, 1e150]))
    y = np.arange(n) % 2
    w = data.draw(_weights(n))
    _check_contract(lambda: _fit_predict(est, X, y, w), _ARG_NAMES)


@pytest.mark.parametrize("est", _of("features"), ids=_name)
@_SETTINGS
@given(data=st.data())
def test_partitioners_keep_the_contract(est, data):
    from sklearn.base import clone

    n = data.draw(_N)
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    Z = rng.normal(size=(n, 2)) * data.draw(
        st.sampled_from([1.0, 1e-300, 1e155, 1e300])
    )
    if data.draw(st.booleans()):
        Z[data.draw(st.integers(0, n - 1)), 0] = data.draw(st.sampled_from(_SPECIAL))
    Z = Z.astype(data.draw(st.sampled_from(["<f8", ">f8"])))

    def cells():
        with np.errstate(all="ignore"):
            ids = clone(est).fit(Z).transform(Z)
        ids = np.asarray(ids)
        assert ids.shape[0] == n and ids.dtype.kind in "iu"
        return (ids >= -1).astype(float)

    _check_contract(cells, _ARG_NAMES)


# ---------------------------------------------------------------- metrics


def _metrics():
    from sklearn_betacal import metrics as m

    def bce(y, p, **kw):
        return m.beta_calibration_error(y, p, cells=np.arange(len(p)) % 3, **kw)

    return [
        m.expected_calibration_error,
        m.maximum_calibration_error,
        m.area_under_accuracy_confidence,
        bce,
        lambda y, p, **kw: m.brier_decomposition(y, p, **kw).brier,
        lambda y, p, **kw: m.reliability_table(y, p, **kw)["count"].to_numpy() * 0.0,
    ]


@pytest.mark.parametrize("metric", _metrics(), ids=range(len(_metrics())))
@_SETTINGS
@given(data=st.data())
def test_metrics_keep_the_contract(metric, data):
    p, y, w = data.draw(_sample())
    names = ("y_true", "y_prob", "sample_weight", "groups", "n_bins")
    _check_contract(lambda: metric(y, p, sample_weight=w), names)
    n_bins = data.draw(st.sampled_from([True, 0, 1, 3, 10**12]))
    if metric is not _metrics()[2]:
        grid = np.linspace(0, 1, len(y))
        _check_contract(lambda: metric(y, grid, n_bins=n_bins), names)


def test_brier_with_weights_near_the_float64_maximum():
    # brier=inf when one weight was 1.8e308: scikit-learn's weighted mean
    # multiplies before it divides (found by the property test above)
    from sklearn_betacal.metrics import brier_decomposition

    p = np.zeros(23)
    p[16] = 1.0
    y = np.zeros(23, dtype=int)
    w = np.zeros(23)
    w[16] = np.finfo(np.float64).max
    assert brier_decomposition(y, p, sample_weight=w).brier == 1.0
    w[3] = w[16]
    assert brier_decomposition(y, p, sample_weight=w).brier == 0.5
    ref = brier_decomposition(y, p, sample_weight=np.arange(23.0))
    assert brier_decomposition(y, p, sample_weight=np.arange(23.0) * 2.0**900) == ref


def test_learned_tree_with_subnormal_weights():
    # numpy's LinAlgError "Singular matrix": with every weight 5e-324 the
    # Fisher information of the tree's whitened scores underflowed to zero
    # (found by the property test above with the learned tree)
    from sklearn_betacal import BetaBinningCalibrator, CalibrationTreePartitioner

    rng = np.random.default_rng(0)
    X = np.column_stack([np.zeros(14), rng.normal(size=(14, 2))])
    bb = BetaBinningCalibrator(CalibrationTreePartitioner(), points_per_bin=2)
    p = bb.fit(X, np.zeros(14, dtype=int), sample_weight=5e-324).predict_proba(X)
    assert np.all(np.isfinite(p))
    h = rng.uniform(size=400)
    y = (rng.uniform(size=400) < h).astype(int)
    X = np.column_stack([h, rng.normal(size=(400, 2))])
    tree = CalibrationTreePartitioner(max_depth=2, random_state=0)
    ref = tree.fit(X[:, 1:], y, confidence=h).apply(X[:, 1:])
    tiny = CalibrationTreePartitioner(max_depth=2, random_state=0)
    tiny.fit(X[:, 1:], y, confidence=h, sample_weight=np.full(400, 5e-324))
    np.testing.assert_array_equal(tiny.apply(X[:, 1:]), ref)  # relative weights


# -------------------------------------- items 8, 10, 12: partitioner inputs


def _cross(cols=(0,)):
    from sklearn_betacal import CrossPartitioner, KDTreePartitioner

    return CrossPartitioner([("a", KDTreePartitioner(max_depth=2), list(cols))])


def test_cross_partitioner_bad_input_gets_clear_errors():
    # 1-D X, sparse X, an out-of-range column and names at fit / arrays at
    # transform were IndexErrors; a malformed entry a TypeError
    import scipy.sparse as sp

    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(ValueError, match="X must be 2-D"):
        _cross().fit(X[:, 0])
    with pytest.raises(TypeError, match="sparse"):
        _cross().fit(sp.csr_matrix(X))
    with pytest.raises(
        ValueError, match=r"selects column\(s\) \[7\], out of range: X has 3 feature"
    ):
        _cross((7,)).fit(X)
    from sklearn_betacal import CrossPartitioner, KDTreePartitioner

    for entry in [("a", KDTreePartitioner()), "a"]:
        with pytest.raises(ValueError, match="list of .name, partitioner, columns"):
            CrossPartitioner([entry]).fit(X)


def test_cross_partitioner_records_and_checks_feature_names():
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(0).normal(size=(50, 3))
    df = pd.DataFrame(X, columns=["x", "y", "z"])
    part = _cross(("x",)).fit(df)
    assert list(part.feature_names_in_) == ["x", "y", "z"]
    with pytest.raises(ValueError, match="feature names"):
        part.transform(df[["z", "y", "x"]])  # reordered columns
    with pytest.raises(ValueError, match="by name"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        part.transform(X)


@pytest.mark.parametrize("scale", [1e155, 1e300, 1e-300])
def test_kdtree_pca_is_scale_free(scale):
    # LinAlgError at feature scales >= ~1e155 (the covariance overflowed)
    from sklearn_betacal import KDTreePartitioner

    Z = np.random.default_rng(0).normal(size=(400, 2))
    ref = KDTreePartitioner(split_axis="pca").fit(Z).apply(Z)
    got = KDTreePartitioner(split_axis="pca").fit(Z * scale).apply(Z * scale)
    np.testing.assert_array_equal(got, ref)


def test_cluster_partitioner_on_fewer_rows_than_clusters():
    from sklearn.cluster import KMeans

    from sklearn_betacal import ClusterPartitioner

    Z = np.random.default_rng(0).normal(size=(4, 2))
    ids = ClusterPartitioner(random_state=0).fit(Z).apply(Z)
    assert ids.shape == (4,) and ids.min() >= 0
    with pytest.raises(ValueError, match="ClusterPartitioner: the clusterer KMeans"):
        ClusterPartitioner(KMeans(n_clusters=9)).fit(Z)


# ------------------------------------------------------ items 9, 16: the CLI


def _csv(tmp_path, name="good.csv", n=40, extra_row=None):
    rng = np.random.default_rng(0)
    lines = ["conf,ok,grp"]
    for i in range(n):
        lines.append(f"{rng.uniform():.4f},{int(rng.integers(0, 2))},{i % 3}")
    if extra_row is not None:
        lines[extra_row] += ",999"
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _cli(args, capsys):
    from sklearn_betacal.cli import main

    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


def test_cli_rejects_rows_with_extra_fields(tmp_path, capsys):
    # a CSV row with an extra field was accepted silently
    path = _csv(tmp_path, extra_row=30)
    status, _, err = _cli(
        ["report", path, "--confidence", "conf", "--label", "ok"], capsys
    )
    assert status == 2
    assert "line 31: 1 row(s) have more fields than the header (3)" in err


@pytest.mark.parametrize(
    ("extra", "line", "count"), [(1, 2, "1 row(s)"), (12, 13, "1 row(s)")]
)
def test_csv_extra_field_check_is_one_pass(tmp_path, monkeypatch, extra, line, count):
    # the check read every good file twice (a sentinel read that pandas
    # refuses when no row has an extra field, then the real one); now a good
    # file is read once, and only a bad one a second time, for the message
    import re

    import pandas as pd

    from sklearn_betacal._io import TableReadError, read_table

    reads = []
    real = pd.read_csv

    def counting(*args, **kwargs):
        if kwargs.get("nrows") != 0:  # the header-only read of the checks
            reads.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(pd, "read_csv", counting)
    good = _csv(tmp_path)
    frame = read_table(good, ["conf", "grp"])
    assert len(reads) == 1
    assert list(frame.columns) == ["conf", "grp"] and len(frame) == 40
    assert frame["grp"].dtype.kind == "i"
    bad = _csv(tmp_path, "bad.csv", extra_row=extra)
    with pytest.raises(TableReadError, match=re.escape(f"line {line}: {count} have")):
        read_table(bad, ["conf", "grp"])
    two = tmp_path / "two.csv"
    two.write_text(good.read_text().replace("\n", ",7,8\n", 5).replace(",7,8", "", 4))
    with pytest.raises(TableReadError, match="more fields than the header"):
        read_table(two, ["conf", "grp"])


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("bad.csv.xz", b"\xfd7zXZ\x00garbage"),
        ("bad.csv.zip", b"PK\x03\x04garbage"),
        ("bad.csv.gz", b"\x1f\x8bgarbage"),
        ("bad.csv.bz2", b"BZh9garbage"),
        ("bad.csv.zst", b"(\xb5/\xfd garbage"),  # also without zstandard
        ("bad.csv", b"\xff\xfe\x00\x01"),
    ],
)
def test_cli_corrupt_compressed_input_is_one_line(tmp_path, capsys, name, content):
    # LZMAError / BadZipFile / ImportError tracebacks
    path = tmp_path / name
    path.write_bytes(content)
    status, _, err = _cli(
        ["report", path, "--confidence", "conf", "--label", "ok"], capsys
    )
    assert status == 2
    assert err.startswith("betacal: error:") and err.count("\n") == 1


def test_cli_n_bins_beyond_rows_is_one_line(tmp_path, capsys):
    # betacal report --n-bins 1000000000000 printed a MemoryError traceback
    path = _csv(tmp_path)
    status, _, err = _cli(
        [
            "report",
            path,
            "--confidence",
            "conf",
            "--label",
            "ok",
            "--n-bins",
            "1000000000000",
        ],
        capsys,
    )
    assert status == 2 and "n_bins=1000000000000 is out of range" in err


def test_cli_unicode_column_names_under_ascii_output(tmp_path):
    # UnicodeEncodeError after the work under PYTHONIOENCODING=ascii
    import os
    import subprocess
    import sys

    path = _csv(tmp_path)
    path.write_text(path.read_text().replace("conf,", "confiança,", 1))
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    code = "import sys; from sklearn_betacal.cli import main; sys.exit(main())"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "report",
            str(path),
            "--confidence",
            "confiança",
            "--label",
            "ok",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "confian\\xe7a" in proc.stdout and "Traceback" not in proc.stderr


def test_cli_demo_checks_out_before_the_work(tmp_path, capsys, monkeypatch):
    # an unwritable --out was found only after the whole demo had run
    from sklearn_betacal.cli import _demo

    def boom(**kwargs):
        raise AssertionError("the demo ran before --out was checked")

    monkeypatch.setattr(_demo, "run_demo", boom)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for out in (blocker, blocker / "report"):
        status, _, err = _cli(["demo", "--out", out, "--seeds", "1"], capsys)
        assert status == 2 and "--out" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_failed_write_leaves_no_temporary_file(tmp_path):
    # a demo that failed while writing left .report.md.<pid>.tmp behind
    from sklearn_betacal._io import atomic_write

    def half_written(fh):
        fh.write(b"partial")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(tmp_path / "report.md", half_written)
    assert list(tmp_path.iterdir()) == []


def test_fetch_influences_data_home_that_is_a_file(tmp_path):
    from sklearn_betacal.datasets import fetch_influences

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match="data_home=.* is a file, not a folder"):
        fetch_influences(data_home=blocker)
    with pytest.raises(ValueError, match="data_home=.* cannot be created"):
        fetch_influences(data_home=blocker / "sub")


_CLI_CONTENT = st.one_of(
    st.binary(max_size=64),
    st.lists(
        st.sampled_from(
            [
                "conf,ok",
                "0.5,1",
                "0.2,0",
                "nan,1",
                "2,0",
                "0.3,1,7",
                '"0.4",1',
                "inf,0",
                "-1,1",
                "0.9,x",
                "",
                ";",
                "0.1;1",
                "\x00",
                "é,1",
            ]
        ),
        max_size=8,
    ).map(lambda rows: "\n".join(rows).encode("utf-8")),
)


@_SETTINGS
@given(
    content=_CLI_CONTENT,
    suffix=st.sampled_from(
        [
            ".csv",
            ".tsv",
            ".csv.gz",
            ".csv.xz",
            ".csv.zip",
            ".csv.bz2",
            ".csv.zst",
            ".parquet",
        ]
    ),
)
def test_cli_report_on_malformed_files_keeps_the_contract(content, suffix):
    # exit 0 or 2, never a traceback, nothing left next to the input
    import contextlib
    import io
    import tempfile
    from pathlib import Path

    from sklearn_betacal.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"in{suffix}"
        path.write_bytes(content)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = main(
                ["report", str(path), "--confidence", "conf", "--label", "ok"]
            )
        assert status in (0, 2), err.getvalue()
        assert "Traceback" not in err.getvalue()
        assert sorted(p.name for p in Path(tmp).iterdir()) == [path.name]


# ------------------------------------------------------ TextEmbedder (item 7)

_TEXT_VALUES = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        ["", " ", "\x00", "the the the", "é ü 中文 🙂", "1 2 3", "a" * 3000, "\n\t"]
    ),
    st.none(),
    st.sampled_from([np.nan, np.inf, 0, 1.5, -(10**20), True]),
    st.binary(max_size=6),
)


@_SETTINGS
@given(data=st.data())
def test_text_embedder_keeps_the_contract(data):
    # text of any kind (empty, missing, numbers, bytes, control characters,
    # very long), in any container, with any n_components: a clear error
    # naming the argument, or an (n, n_components) embedding whose rows are
    # unit vectors -- the same from transform as from fit_transform
    import pandas as pd

    (text_embedder,) = _of("text")
    n = data.draw(st.integers(1, 10))
    values = data.draw(st.lists(_TEXT_VALUES, min_size=n, max_size=n))
    k = data.draw(st.sampled_from([1, 2, 3, 40, 0, -1, 2.5, 10**9, True, None]))
    container = data.draw(st.sampled_from(["list", "array", "series", "frame", "2d"]))
    if container == "list":
        X = values
    elif container == "array":
        X = np.array(values, dtype=object)
    elif container == "series":
        X = pd.Series(values, dtype=object)
    elif container == "frame":
        X = pd.DataFrame({"question": values, "answer": values[::-1]})
    else:
        X = np.array([values, values[::-1]], dtype=object).T
    emb = type(text_embedder)(**{**text_embedder.get_params(), "n_components": k})

    def embed():
        out = emb.fit_transform(X)
        assert out.shape == (n, len(emb.get_feature_names_out()))
        assert np.array_equal(out, emb.transform(X))
        norms = np.linalg.norm(out, axis=1)
        assert np.all(np.isclose(norms, 1.0) | (norms == 0.0))
        return out

    _check_contract(
        embed, (*_ARG_NAMES, "n_components", "text", "words", "string"), lo=-1.0
    )


# ------------------------------------------------ CLI fit / apply (item 16)

_BAD_ROWS = [
    "nan,1,a",
    "2,0,b",
    "0.3,1,a,7",
    '"0.4",1,"b"',
    "inf,0,a",
    "-1,1,b",
    "0.9,x,a",
    "0.6,,b",
    ",1,a",
    "80%,1,a",
    "",
    ";",
    "\x00",
    "é,1,a",
    "1e308,1,b",
    "5e-324,0,a",
    "0.5,1",
    '"0.5,1,a',
]


@st.composite
def _table_bytes(draw):
    """A conf,ok,grp table: mostly valid rows with a few bad ones, or garbage."""
    if draw(st.integers(0, 7)) == 0:
        return draw(st.binary(max_size=64))
    n = draw(st.integers(0, 80))
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    p = rng.uniform(size=n)
    y = rng.uniform(size=n) < p
    rows = [f"{p[i]:.4f},{int(y[i])},{'ab'[i % 2]}" for i in range(n)]
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        at = draw(st.integers(0, len(rows)))
        rows.insert(at, draw(st.sampled_from(_BAD_ROWS)))
    return "\n".join(["conf,ok,grp", *rows]).encode("utf-8")


def _write_table(path, content, encode):
    """``content`` (CSV bytes) at ``path``, in the format its suffix names
    when ``encode`` (else the raw bytes: a corrupt file of that format)."""
    import bz2
    import gzip
    import io
    import lzma

    suffix = path.suffix.lower()
    if encode and suffix == ".parquet":
        pytest.importorskip("pyarrow")
        import pandas as pd

        try:
            frame = pd.read_csv(io.BytesIO(content))
        except Exception:  # noqa: BLE001 - unparsable: write it raw
            frame = None
        if frame is not None:
            frame.to_parquet(path)
            return
    elif encode and suffix in (".gz", ".xz", ".bz2"):
        pack = {".gz": gzip.compress, ".xz": lzma.compress, ".bz2": bz2.compress}
        content = pack[suffix](content)
    elif encode and ".tsv" in path.name:
        content = content.replace(b",", b"\t")
    path.write_bytes(content)


_FIT_CONTENT = _table_bytes()
_CLI_SUFFIXES = [".csv", ".csv", ".csv", ".tsv", ".csv.gz", ".csv.xz", ".csv.bz2"]
_CLI_SUFFIXES += [".parquet", ".parquet", ".csv.zst"]
_METHODS = ["temperature", "platt", "umd", "s-b", "bb", "hls", "hs-bb", "s-bb"]


def _run_cli(argv):
    """``(status, stderr)`` of ``betacal argv``, stdout discarded."""
    import contextlib
    import io

    from sklearn_betacal.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main([str(a) for a in argv])
    return status, err.getvalue()


def _assert_clean_exit(status, err, folder):
    """Exit 0, or 2 with one line that names what is wrong: a flag, a column,
    or one of the files (all live in ``folder``)."""
    from hypothesis import event

    event(f"exit status {status}")
    assert status in (0, 2), err
    assert "Traceback" not in err, err
    *warned, last = err.rstrip("\n").split("\n") if err else [""]
    assert all(w.startswith("betacal: warning: ") for w in warned), err
    if status == 2:  # warnings, then one line naming what is wrong
        assert last.startswith("betacal: error:"), err
        names = ("--", "column", "MODEL", "OUT", "IN", str(folder))
        assert any(n in last for n in names), f"names no argument: {err}"


@_SETTINGS
@given(
    content=_FIT_CONTENT,
    suffix=st.sampled_from(_CLI_SUFFIXES),
    encode=st.sampled_from([True, True, True, False]),
    method=st.sampled_from(_METHODS),
    group=st.sampled_from(["right", "right", "right", "wrong"]),
    extra=st.sampled_from(
        [
            [],
            [],
            [],
            [],
            [],
            ["--dropna"],
            ["--dropna"],
            ["--dropna"],
            ["--percent"],
            ["--verbalized"],
            ["--tune"],
            ["--points-per-bin", "0"],
            ["--points-per-bin", "1000000000000"],
            ["--epsilon", "1e-300"],
            ["--epsilon", "nan"],
            ["--sep", ";"],
            ["--random-state", "-1"],
        ]
    ),
)
def test_cli_fit_on_malformed_files_keeps_the_contract(
    content, suffix, encode, method, group, extra
):
    # exit 0 (a model file) or 2 (one line), never a traceback, nothing left
    # beside the input but the model
    import tempfile
    from pathlib import Path

    pytest.importorskip("skops")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"in{suffix}"
        _write_table(path, content, encode)
        model = Path(tmp) / "m.skops"
        # the group methods need --group, the others refuse it ("wrong": the
        # opposite, or a column that does not exist)
        grouped = method in ("bb", "hls", "hs-bb", "s-bb")
        if group == "right":
            extra = [*extra, *(["--group", "grp"] if grouped else [])]
        else:
            extra = [*extra, "--group", "nope" if grouped else "grp"]
        status, err = _run_cli(
            ["fit", path, "--confidence", "conf", "--label", "ok",
             "--method", method, *extra, "--output", model]
        )  # fmt: skip
        _assert_clean_exit(status, err, tmp)
        expected = [path.name, model.name] if status == 0 else [path.name]
        assert sorted(p.name for p in Path(tmp).iterdir()) == sorted(expected)


@pytest.fixture(scope="module")
def grouped_model(tmp_path_factory):
    """A BB model file on columns conf (confidence) and grp (group)."""
    pytest.importorskip("skops")
    folder = tmp_path_factory.mktemp("model")
    rng = np.random.default_rng(0)
    h = rng.uniform(size=400)
    rows = [f"{p:.4f},{int(u < p)},{'ab'[i % 2]}" for i, (p, u) in
            enumerate(zip(h, rng.uniform(size=400), strict=True))]  # fmt: skip
    src = folder / "train.csv"
    src.write_text("\n".join(["conf,ok,grp", *rows]) + "\n")
    model = folder / "bb.skops"
    status, err = _run_cli(
        ["fit", src, "--confidence", "conf", "--label", "ok", "--group", "grp",
         "--method", "bb", "--points-per-bin", "20", "--output", model]
    )  # fmt: skip
    assert status == 0, err
    return model


@_SETTINGS
@given(
    content=_FIT_CONTENT,
    suffix=st.sampled_from(_CLI_SUFFIXES),
    encode=st.sampled_from([True, True, True, False]),
    out_suffix=st.sampled_from([".csv", ".csv.gz", ".parquet", ".zip", ".txt", ""]),
    extra=st.sampled_from(
        [
            [],
            [],
            ["--cells"],
            ["--chunk-size", "1"],
            ["--chunk-size", "0"],
            ["--chunk-size", "-5"],
            ["--column", "grp"],
            ["--column", ""],
            ["--sep", "|"],
        ]
    ),
    model_kind=st.sampled_from(
        ["good", "good", "good", "garbage", "truncated", "missing"]
    ),
)
def test_cli_apply_on_malformed_files_keeps_the_contract(
    grouped_model, content, suffix, encode, out_suffix, extra, model_kind
):
    # malformed inputs, output names, options and model files: exit 0 (the
    # output) or 2 (one line), never a traceback, never a changed input,
    # nothing left beside it but the output
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"in{suffix}"
        _write_table(path, content, encode)
        content = path.read_bytes()
        model = Path(tmp) / "m.skops"
        good = grouped_model.read_bytes()
        if model_kind == "good":
            model.write_bytes(good)
        elif model_kind == "garbage":
            model.write_bytes(content[:50] or b"x")
        elif model_kind == "truncated":
            model.write_bytes(good[: len(good) // 2])
        out = Path(tmp) / f"out{out_suffix}"
        status, err = _run_cli(["apply", model, path, out, *extra])
        _assert_clean_exit(status, err, tmp)
        assert path.read_bytes() == content
        listed = sorted(p.name for p in Path(tmp).iterdir())
        inputs = [path.name] + ([model.name] if model_kind != "missing" else [])
        assert listed == sorted(inputs + ([out.name] if status == 0 else []))


@_SETTINGS
@given(
    contents=st.lists(_FIT_CONTENT, min_size=1, max_size=3),
    encode=st.lists(st.sampled_from([True, True, True, False]), min_size=3, max_size=3),
    drop=st.sampled_from([None, None, "grp", "conf"]),
    extra=st.sampled_from([[], [], ["--cells"], ["--column", "conf"], ["--force"]]),
)
def test_cli_apply_on_malformed_parquet_sets_keeps_the_contract(
    grouped_model, contents, encode, drop, extra
):
    # a folder of Parquet files, some corrupt, some without a column, some
    # with other types: exit 0 (a folder, one file per partition) or 2 (one
    # line), never a traceback, the inputs unchanged, nothing else left
    import tempfile
    from pathlib import Path

    import pandas as pd

    pytest.importorskip("dask.dataframe")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "in"
        src.mkdir()
        for i, (content, enc) in enumerate(zip(contents, encode, strict=False)):
            _write_table(src / f"part-{i}.parquet", content, enc)
        if drop is not None:
            last = src / f"part-{len(contents) - 1}.parquet"
            try:
                frame = pd.read_parquet(last)
            except Exception:  # noqa: BLE001 - a corrupt file stays as it is
                frame = None
            if frame is not None and drop in frame:
                frame.drop(columns=[drop]).to_parquet(last)
        before = {p.name: p.read_bytes() for p in src.iterdir()}
        out = Path(tmp) / "out"
        status, err = _run_cli(["apply", grouped_model, src, out, *extra])
        _assert_clean_exit(status, err, tmp)
        assert {p.name: p.read_bytes() for p in src.iterdir()} == before
        listed = sorted(p.name for p in Path(tmp).iterdir())
        assert listed == (["in", "out"] if status == 0 else ["in"])


def test_cli_fit_on_one_row_reports_an_undefined_bound(tmp_path, capsys):
    # found by the property test above: UMD fitted one bin on one row, then
    # the summary's Thm 3.1 bound raised umd_epsilon's parameter error (exit
    # 2 naming an internal function) after the model file had been written
    pytest.importorskip("skops")
    src = tmp_path / "one.csv"
    src.write_text("conf,ok\n0.637,1\n")
    model = tmp_path / "m.skops"
    status, out, err = _cli(
        ["fit", src, "--confidence", "conf", "--label", "ok", "--method", "umd",
         "--output", model], capsys
    )  # fmt: skip
    assert status == 0, err
    assert "UMD bound epsilon = undefined (1 row(s) in 1 bin(s))" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.skops", "one.csv"]


# ------------------------------------------- subnormal weights (issue 20, item 7)


def _subnormal_case():
    rng = np.random.default_rng(0)
    h = rng.uniform(0.02, 0.98, size=400)
    y = (rng.uniform(size=400) < h**1.3).astype(int)
    groups = rng.integers(0, 4, 400)
    # 4-bit weights whose largest is 0.5: w * 2**-1070 is exact (subnormal)
    w = rng.integers(1, 9, 400) * 2.0**-4
    return h, y, groups, w


def _subnormal_calibrators():
    from sklearn_betacal import GroupColumnPartitioner, ScalingBetaBinningCalibrator

    logit = {"input": "logit"}
    return {
        "platt": (PlattScaler(), "h"),
        "platt-logit": (PlattScaler(**logit), "s"),
        "temperature": (TemperatureScaler(**logit), "s"),
        "umd": (UMDBinner(n_bins=5, random_state=0), "h"),
        "scaling-binning": (ScalingBinningCalibrator(random_state=0), "h"),
        "bb": (
            BetaBinningCalibrator(
                GroupColumnPartitioner(), points_per_bin=5, random_state=0
            ),
            "hg",
        ),
        "sbb": (
            ScalingBetaBinningCalibrator(
                GroupColumnPartitioner(), points_per_bin=5, random_state=0
            ),
            "hg",
        ),
    }


@pytest.mark.parametrize("name", list(_subnormal_calibrators()))
def test_subnormal_weights_give_the_fit_of_the_rescaled_weights(name):
    # all-subnormal weights made Platt return its starting point (0.5 for
    # every row), and moved temperature, UMD and the binning calibrators
    est, kind = _subnormal_calibrators()[name]
    h, y, groups, w = _subnormal_case()
    X = {"h": h, "s": np.log(h / (1 - h)), "hg": np.column_stack([h, groups])}[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ref = est.fit(X, y, sample_weight=w).predict_proba(X)
        tiny = est.fit(X, y, sample_weight=w * 2.0**-1070).predict_proba(X)
    assert_allclose(tiny, ref, rtol=0, atol=0)


@pytest.mark.parametrize(
    "metric",
    [
        expected_calibration_error,
        maximum_calibration_error,
        lambda y, p, **kw: tuple(brier_decomposition(y, p, **kw)),
        area_under_accuracy_confidence,
        lambda y, p, **kw: beta_calibration_error(
            y, p, cells=np.arange(len(y)) % 4, **kw
        ),
    ],
)
def test_metrics_of_subnormal_weights_equal_the_rescaled_weights(metric):
    # the ECE of w * 2**-1070 differed from that of w by 2e-3 (sums of
    # subnormal numbers keep a few bits)
    h, y, _, w = _subnormal_case()
    assert_allclose(
        metric(y, h, sample_weight=w * 2.0**-1070),
        metric(y, h, sample_weight=w),
        rtol=1e-14,
    )


# -------------- booleans, timestamps, durations as confidences (issue 20, item 7)


def _not_confidence_column(lib, kind, n):
    ns = np.arange(n, dtype=np.int64) * 10**9
    values = {
        "bool": np.arange(n) % 3 == 0,
        "timestamp": ns.astype("datetime64[ns]"),
        "duration": ns.astype("timedelta64[ns]"),
    }[kind]
    if lib == "numpy":
        return values
    if lib == "pandas":
        return pytest.importorskip("pandas").Series(values, name="conf")
    if lib == "polars":
        return pytest.importorskip("polars").Series("conf", values)
    return pytest.importorskip("pyarrow").array(values)


def _frame(lib, columns):
    if lib == "pandas":
        return pytest.importorskip("pandas").DataFrame(columns)
    if lib == "polars":
        return pytest.importorskip("polars").DataFrame(columns)
    return pytest.importorskip("pyarrow").table(columns)


_WHAT = {"bool": "booleans", "timestamp": "timestamps", "duration": "durations"}


@pytest.mark.parametrize("kind", list(_WHAT))
@pytest.mark.parametrize("lib", ["numpy", "pandas", "polars", "pyarrow"])
def test_booleans_and_times_are_refused_as_confidences(lib, kind):
    # True was read as the confidence 1.0 (and a bool or timestamp column
    # beside a float one became numbers): refused, naming the column and dtype
    n = 60
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, n)
    col = _not_confidence_column(lib, kind, n)
    match = rf"holds {_WHAT[kind]} .*\(dtype .*\), not confidences"
    with pytest.raises(ValueError, match=match):
        expected_calibration_error(y, col)
    if lib == "numpy":
        X = col
    else:
        X = _frame(lib, {"conf": col})
        match = "X column 'conf' " + match
    input_ = "probability" if kind == "bool" else "logit"
    with pytest.raises(ValueError, match=match):
        PlattScaler(input=input_).fit(X, y)
    with pytest.raises(ValueError, match=match):
        UMDBinner().fit(X, y)
    if lib != "numpy":
        # a group calibrator: the confidence column beside a numeric feature
        X = _frame(lib, {"conf": col, "topic": np.arange(n) % 2})
        bb = BetaBinningCalibrator(confidence_column="conf")
        with pytest.raises(ValueError, match=match):
            bb.fit(X, y)


@pytest.mark.parametrize("kind", ["timestamp", "duration"])
@pytest.mark.parametrize("lib", ["pandas", "polars"])
def test_times_are_refused_as_partition_features(lib, kind):
    # pandas raised numpy's DTypePromotionError, polars compared the
    # timestamps as nanosecond counts; booleans remain fine features
    n = 60
    rng = np.random.default_rng(0)
    h, y = rng.uniform(size=n), rng.integers(0, 2, n)
    when = _not_confidence_column(lib, kind, n)
    bb = BetaBinningCalibrator(confidence_column="conf", points_per_bin=10)
    with pytest.raises(ValueError, match=r"X column 'when' holds .*Convert it first"):
        bb.fit(_frame(lib, {"conf": h, "when": when}), y)
    flag = _not_confidence_column(lib, "bool", n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        bb.fit(_frame(lib, {"conf": h, "flag": flag}), y)
    assert bb.predict_proba(_frame(lib, {"conf": h, "flag": flag})).shape == (n, 2)


# ---- object columns of booleans, timestamps or text as confidences (issue 24)


def _object_confidences(kind, n, rng):
    """Confidences of ``kind`` as Python objects (an object column)."""
    import datetime

    if kind == "bool":
        return [bool(v) for v in rng.integers(0, 2, n)]
    if kind == "mixed":  # one True among numbers
        return [True] + rng.uniform(size=n - 1).tolist()
    if kind == "datetime":
        start = datetime.datetime(2024, 1, 1)
        return [start + datetime.timedelta(hours=int(i)) for i in range(n)]
    if kind == "text":
        return ["0.5", "80%"] + [f"{v:.3f}" for v in rng.uniform(size=n - 2)]
    return [f"{v:.3f}" for v in rng.uniform(size=n)]  # "numbers": read as such


def _object_frame(lib, columns):
    """A DataFrame whose ``conf`` column keeps Python objects."""
    if lib == "numpy":
        return np.array(list(zip(*columns.values(), strict=True)), dtype=object)
    if lib == "pandas":
        pd = pytest.importorskip("pandas")
        return pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in columns.items()})
    pl = pytest.importorskip("polars")
    return pl.DataFrame(
        [
            pl.Series(k, v, dtype=pl.Object if k == "conf" else None)
            for k, v in columns.items()
        ]
    )


_OBJECT_MATCH = {
    "bool": r"holds booleans \(dtype object\), not confidences: True would be read",
    "mixed": r"holds booleans \(dtype object\), not confidences: True would be read",
    "datetime": r"holds timestamps .*\(dtype object\), not confidences",
    "text": r"holds 1 text value\(s\) that are not numbers, such as '80%'.*"
    "parse_verbalized_confidence",
}


def _object_estimators():
    from sklearn_betacal import (
        GroupColumnPartitioner,
        HierarchicalLogisticScaler,
        ScalingBetaBinningCalibrator,
    )

    def part(lib):
        return GroupColumnPartitioner(-1 if lib == "numpy" else "topic")

    return [
        ("platt", lambda lib: PlattScaler()),
        ("temperature", lambda lib: TemperatureScaler()),
        ("umd", lambda lib: UMDBinner(random_state=0)),
        ("scaling-binning", lambda lib: ScalingBinningCalibrator(random_state=0)),
        (
            "bb",
            lambda lib: BetaBinningCalibrator(
                part(lib), points_per_bin=10, random_state=0
            ),
        ),
        ("hls", lambda lib: HierarchicalLogisticScaler(part(lib), random_state=0)),
        (
            "sbb",
            lambda lib: ScalingBetaBinningCalibrator(
                part(lib), points_per_bin=10, random_state=0
            ),
        ),
    ]


def _object_X(name, lib, values, topic):
    grouped = name in ("bb", "hls", "sbb")
    if grouped:
        return _object_frame(lib, {"conf": values, "topic": topic.tolist()})
    if lib == "numpy":
        return np.array(values, dtype=object)
    return _object_frame(lib, {"conf": values})


@pytest.mark.parametrize("kind", list(_OBJECT_MATCH))
@pytest.mark.parametrize("lib", ["numpy", "pandas", "polars"])
@pytest.mark.parametrize(("name", "make"), _object_estimators(), ids=lambda v: v)
def test_object_booleans_times_and_text_are_refused_as_confidences(
    name, make, lib, kind
):
    # an object column of True/False was read as the confidences 1.0/0.0 by
    # every estimator (numpy's conversion); the dtype says only "object",
    # so the one reader looks at the values, for arrays and DataFrames
    n = 60
    rng = np.random.default_rng(0)
    y, topic = rng.integers(0, 2, n), np.arange(n) % 2
    X = _object_X(name, lib, _object_confidences(kind, n, rng), topic)
    where = "X column 'conf' " if lib != "numpy" else ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(ValueError, match=where + _OBJECT_MATCH[kind]):
            make(lib).fit(X, y)
        # predicting on such a column is refused too
        good = _object_X(name, lib, rng.uniform(size=n).tolist(), topic)
        model = make(lib).fit(good, y)
        with pytest.raises(ValueError, match=_OBJECT_MATCH[kind]):
            model.predict_proba(X)


@pytest.mark.parametrize("lib", ["numpy", "pandas", "polars"])
@pytest.mark.parametrize(("name", "make"), _object_estimators(), ids=lambda v: v)
def test_numbers_as_objects_or_text_are_read_as_numbers(name, make, lib):
    # numbers held as Python objects or written as plain text ("0.417") are
    # the numbers themselves, as scikit-learn reads them: the same model
    n = 60
    rng = np.random.default_rng(0)
    y, topic = rng.integers(0, 2, n), np.arange(n) % 2
    text = _object_confidences("numbers", n, rng)
    h = np.array([float(v) for v in text])
    X_float = _object_X(name, lib, h.tolist(), topic)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ref = make(lib).fit(X_float, y)
        for X in (X_float, _object_X(name, lib, text, topic)):
            got = make(lib).fit(X, y)
            assert_allclose(got.predict_proba(X), ref.predict_proba(X_float), rtol=0)


@pytest.mark.parametrize("kind", list(_OBJECT_MATCH))
def test_object_confidences_are_refused_by_metrics_scorers_and_the_cli(kind):
    from sklearn_betacal import GroupColumnPartitioner
    from sklearn_betacal.cli._common import UsageError, check_confidence_kind
    from sklearn_betacal.metrics import neg_beta_calibration_error_scorer

    pd = pytest.importorskip("pandas")
    n = 60
    rng = np.random.default_rng(0)
    y, topic = rng.integers(0, 2, n), np.arange(n) % 2
    values = _object_confidences(kind, n, rng)
    with pytest.raises(ValueError, match="y_prob " + _OBJECT_MATCH[kind]):
        expected_calibration_error(y, np.array(values, dtype=object))
    bb = BetaBinningCalibrator(GroupColumnPartitioner("topic"), points_per_bin=10)
    bb.fit(pd.DataFrame({"conf": rng.uniform(size=n), "topic": topic}), y)
    X = _object_frame("pandas", {"conf": values, "topic": topic.tolist()})
    with pytest.raises(ValueError, match="X column 'conf' " + _OBJECT_MATCH[kind]):
        neg_beta_calibration_error_scorer(bb, X, y)
    # the command line uses the same check, as one line; text is its
    # --percent / --verbalized readers' to read
    column = pd.Series(values, dtype=object)
    if kind == "text":
        check_confidence_kind(column, "conf")
        return
    with pytest.raises(UsageError) as info:
        check_confidence_kind(column, "conf")
    message = str(info.value)
    assert message.startswith("confidence column 'conf' holds ")
    assert "(or 0-100 with --percent)" in message and "\n" not in message


class _ScoresAs(BaseEstimator):
    """A fitted binary classifier whose decision_function returns ``kind``."""

    _estimator_type = "classifier"

    def __init__(self, kind="bool"):
        self.kind = kind

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        s = np.asarray(X, dtype=np.float64)[:, 0]
        if self.kind == "bool":
            return s > 0.5
        if self.kind == "object bool":
            return np.array([bool(v) for v in s > 0.5], dtype=object)
        return (s * 1e9).astype("timedelta64[ns]")


@pytest.mark.parametrize("kind", ["bool", "object bool", "duration"])
def test_calibrated_classifier_refuses_booleans_and_times_as_scores(kind):
    from sklearn.frozen import FrozenEstimator

    from sklearn_betacal import CalibratedClassifier

    n = 60
    rng = np.random.default_rng(0)
    X, y = rng.uniform(size=(n, 2)), rng.integers(0, 2, n)
    clf = FrozenEstimator(_ScoresAs(kind).fit(X, y))
    what = "durations" if kind == "duration" else "booleans"
    match = rf"_ScoresAs.decision_function's output holds {what} .*not confidences"
    with pytest.raises(ValueError, match=match):
        CalibratedClassifier(clf, PlattScaler(input="logit")).fit(X, y)


def test_numpy_string_array_of_confidence_and_groups_is_read_as_numbers():
    # np.column_stack([h, groups]) of float confidences and string groups is a
    # '<U' array (numpy writes each float in its shortest round-trip form):
    # refused as "not numeric" before; now the same model as the object array
    from sklearn_betacal import GroupColumnPartitioner

    rng = np.random.default_rng(0)
    h = rng.uniform(size=200)
    y = (rng.uniform(size=200) < h).astype(int)
    groups = np.where(rng.uniform(size=200) < 0.5, "a", "b")
    X_text = np.column_stack([h, groups])
    X_obj = np.empty((200, 2), dtype=object)
    X_obj[:, 0], X_obj[:, 1] = h, groups
    assert X_text.dtype.kind == "U"

    def fit(X):
        bb = BetaBinningCalibrator(
            GroupColumnPartitioner(0), points_per_bin=20, random_state=0
        )
        return bb.fit(X, y).predict_proba(X)

    assert_allclose(fit(X_text), fit(X_obj), rtol=0)
    bad = X_text.copy()
    bad[3, 0] = "high"
    with pytest.raises(ValueError, match=r"1 text value\(s\) that are not numbers"):
        fit(bad)


def test_missing_partition_features_are_named_with_a_fix():
    """A missing group (None/NaN) came through as scikit-learn's bare 'Input
    contains NaN' (no column, no estimator, no fix)."""
    import pandas as pd

    from sklearn_betacal import BetaBinningCalibrator, GroupColumnPartitioner

    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {"grp": rng.choice(["a", "b", None], 200), "conf": rng.uniform(size=200)}
    )
    n_missing = int(df.grp.isna().sum())
    est = BetaBinningCalibrator(GroupColumnPartitioner("grp"), confidence_column="conf")
    with pytest.raises(
        ValueError, match=rf"{n_missing} row\(s\) \(column 'grp': {n_missing}\).*fill"
    ):
        est.fit(df, rng.integers(0, 2, 200))


@pytest.mark.parametrize("strategy", ["kdtree", "learned"])
def test_text_feature_for_a_numeric_partitioner_is_named(strategy):
    """A text column under a numeric partitioner failed inside pandas
    ('could not convert string to float: ...')."""
    import pandas as pd

    from sklearn_betacal import (
        BetaBinningCalibrator,
        CalibrationTreePartitioner,
        KDTreePartitioner,
    )

    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "conf": rng.uniform(size=100),
            "z": rng.normal(size=100),
            "t": rng.choice(["x", "y"], 100),
        }
    )
    part = (
        KDTreePartitioner(1) if strategy == "kdtree" else CalibrationTreePartitioner()
    )
    est = BetaBinningCalibrator(part, confidence_column="conf")
    with pytest.raises(
        ValueError, match=r"column\(s\) \['t'\] hold\(s\) text.*GroupColumnPartitioner"
    ):
        est.fit(df, rng.integers(0, 2, 100))
