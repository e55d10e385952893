# SPDX-License-Identifier: MIT
"""Tests for :class:`TemperatureScaler` and the temperature kernels."""

import math
import pickle
import warnings

import numpy as np
import pytest
from _golden import load_golden
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import cross_val_score

from sklearn_betacal import TemperatureScaler
from sklearn_betacal._kernels import _scaling
from sklearn_betacal._kernels._scaling import LOGIT_EPS, to_logit

GOLDEN = load_golden("temperature_golden.json")
CIFAR_RECORDS = [
    "densenet-bc-100-cifar-100",
    "wideresnet-16-4-cifar-10",
    "lenet-5-cifar-10",
    "vgg-cifar-10",
]


# --------------------------------------------------------------------------
# helpers written independently of the package (chapter 000's method)
# --------------------------------------------------------------------------
def golden_section_tau(nll, lo=0.05, hi=20.0, n_iter=80):
    """Chapter 000's fit_tau: golden-section search on tau over [lo, hi]."""
    phi = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, d = b - phi * (b - a), a + phi * (b - a)
    fc, fd = nll(c), nll(d)
    for _ in range(n_iter):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - phi * (b - a)
            fc = nll(c)
        else:
            a, c, fc = c, d, fd
            d = a + phi * (b - a)
            fd = nll(d)
    return 0.5 * (a + b)


def nll_binary(s, y, tau):
    """Chapter 000: mean softplus(-y^pm s / tau)."""
    return float(np.mean(np.logaddexp(0.0, -(2.0 * y - 1.0) * s / tau)))


def nll_multiclass(z, y, tau):
    u = z / tau
    m = u.max(axis=1, keepdims=True)
    lse = np.log(np.exp(u - m).sum(axis=1)) + m[:, 0]
    return float(np.mean(lse - u[np.arange(len(y)), y]))


class _StoredScores(ClassifierMixin, BaseEstimator):
    """A 'model' whose decision_function returns the stored scores (X itself)."""

    def fit(self, X, y):
        self.classes_ = np.unique(y) if X.ndim == 1 else np.arange(X.shape[1])
        return self

    def decision_function(self, X):
        return X

    def predict(self, X):
        return (X > 0).astype(int) if X.ndim == 1 else X.argmax(axis=1)


def _sklearn_temperature(scores, y):
    """scikit-learn's ``CalibratedClassifierCV(method="temperature")`` fitted
    on the stored ``scores`` (behind FrozenEstimator), and its fitted beta."""
    clf = FrozenEstimator(_StoredScores().fit(scores, y))
    sk = CalibratedClassifierCV(clf, method="temperature").fit(scores, y)
    return sk, sk.calibrated_classifiers_[0].calibrators[0].beta_


def load_cifar(cifar_dir, name):
    d = np.load(cifar_dir / f"{name}.npz")
    P = d["predictions"].astype(np.float64)
    y = d["ground_truth"].astype(np.int64).ravel()
    idx = np.random.default_rng(0).permutation(y.shape[0])
    half = y.shape[0] // 2
    return P, y, idx[:half], idx[half:]


def quiet_fit(est, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(*args, **kwargs)


# --------------------------------------------------------------------------
# scikit-learn API
# --------------------------------------------------------------------------


def test_temperature_binary_api_shapes_and_classes():
    rng = np.random.default_rng(0)
    h = rng.uniform(size=200)
    y = (rng.uniform(size=200) < h).astype(int)
    ts = TemperatureScaler().fit(h, y)
    assert_array_equal(ts.classes_, [0, 1])
    assert ts.n_features_in_ == 1
    proba = ts.predict_proba(h.reshape(-1, 1))
    assert proba.shape == (200, 2)
    assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    assert_array_equal(ts.predict(h), (h > 0.5).astype(int))
    assert isinstance(ts.temperature_, float)


def test_temperature_dataframe_feature_names():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"conf": rng.uniform(size=50)})
    y = (rng.uniform(size=50) < X.conf).astype(int)
    ts = TemperatureScaler().fit(X, y)
    assert_array_equal(ts.feature_names_in_, ["conf"])


def test_temperature_cross_val_score_log_loss():
    rng = np.random.default_rng(2)
    s = rng.normal(scale=3, size=400)
    y = (rng.uniform(size=400) < 1 / (1 + np.exp(-s / 2))).astype(int)
    scores = cross_val_score(
        TemperatureScaler(input="logit"), s.reshape(-1, 1), y, scoring="neg_log_loss"
    )
    assert np.all(np.isfinite(scores)) and np.all(scores < 0)


def test_temperature_pickle_and_clone_roundtrip():
    rng = np.random.default_rng(3)
    s = rng.normal(size=100)
    y = (rng.uniform(size=100) < 0.5).astype(int)
    ts = TemperatureScaler(input="logit").fit(s, y)
    again = pickle.loads(pickle.dumps(ts))
    assert_array_equal(again.predict_proba(s), ts.predict_proba(s))
    assert not hasattr(clone(ts), "temperature_")


def test_temperature_unfitted_raises():
    with pytest.raises(NotFittedError):
        TemperatureScaler().predict_proba([0.5])


# --------------------------------------------------------------------------
# input validation
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "X, match",
    [
        ([0.2, 1.5, 0.3], "outside \\[0, 1\\]"),
        ([0.2, np.nan, 0.3], "NaN"),
        ([0.2, np.inf, 0.3], "infinite"),
    ],
)
def test_temperature_bad_probability_input_raises(X, match):
    with pytest.raises(ValueError, match=match):
        TemperatureScaler().fit(X, [0, 1, 0])


def test_temperature_matrix_validation_messages():
    P = np.array([[0.2, 0.8], [0.6, 0.4], [1.2, -0.2]])
    with pytest.raises(ValueError, match="1 row\\(s\\) with probabilities outside"):
        TemperatureScaler().fit(P, [0, 1, 0])
    Z = np.array([[0.0, 1.0], [np.nan, 0.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match="NaN or infinite values in 1 row"):
        TemperatureScaler(input="logit").fit(Z, [0, 1, 0])
    with pytest.raises(ValueError, match="Encode the labels as column indices"):
        TemperatureScaler(input="logit").fit(np.zeros((3, 2)), [0, 1, 5])
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        TemperatureScaler(input="logit").fit(np.zeros((3, 2)), [0.5, 1.2, 0.1])


def test_temperature_binary_rejects_multiclass_labels():
    with pytest.raises(ValueError, match="binary"):
        TemperatureScaler().fit([0.1, 0.5, 0.9], [0, 1, 2])


@pytest.mark.parametrize("bounds", [(0.0, 20.0), (5.0, 1.0), (1.0, np.inf), (1.0,)])
def test_temperature_bad_bounds_raise(bounds):
    with pytest.raises(ValueError, match="temperature_bounds"):
        TemperatureScaler(temperature_bounds=bounds).fit([0.2, 0.8], [0, 1])


def test_temperature_zero_total_weight_raises():
    with pytest.raises(ValueError, match="non-zero"):
        TemperatureScaler().fit([0.2, 0.8], [0, 1], sample_weight=[0, 0])


def test_temperature_predict_checks_mode_and_features():
    ts = TemperatureScaler(input="logit").fit(np.eye(3) * 2, [0, 1, 2])
    with pytest.raises(ValueError, match="features"):
        ts.predict_proba(np.zeros((2, 4)))


def test_temperature_probability_clip_endpoints_finite():
    h = np.array([0.0, 1e-300, 0.3, 0.7, 1.0 - 1e-16, 1.0])
    y = np.array([0, 0, 1, 0, 1, 1])
    ts = TemperatureScaler().fit(h, y)
    p = ts.predict_proba(h)[:, 1]
    assert np.all(np.isfinite(p))
    assert np.all(np.diff(p) >= 0)  # the order of h is kept
    # the documented clip: half-way to the closest inner confidence, but at
    # least an ulp below 1 so that 1.0 keeps a finite logit
    assert_allclose(ts.logit_eps_, [5e-301, np.finfo(np.float64).epsneg])


def test_temperature_clip_beside_closest_confidence():
    # a verbalized scale: 1.0 is one step above 0.95, not a logit of 27.6
    h = np.repeat([0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0], 20)
    y = (np.arange(h.size) % 3 > 0).astype(int)
    ts = TemperatureScaler().fit(h, y)
    assert_allclose(ts.logit_eps_, [0.25, 0.025])
    p_one = ts.predict_proba([1.0])[0, 1]
    expected = 1 / (1 + np.exp(-to_logit(0.975) / ts.temperature_))
    assert_allclose(p_one, expected, rtol=1e-12)


def test_temperature_clip_keeps_fitted_ranking():
    # token-style confidences crowding 1 (and some exactly 1.0): Platt's
    # 1 / (W + 2) floor would merge every h above 1 - 1/502; this clip
    # keeps every distinct fitted confidence distinct
    rng = np.random.default_rng(0)
    h = np.r_[1 - 10 ** -rng.uniform(1, 8, size=400), rng.uniform(size=90), [1.0] * 10]
    y = (rng.uniform(size=h.size) < 0.7).astype(int)
    ts = TemperatureScaler().fit(h, y)
    p = ts.predict_proba(h)[:, 1]
    assert len(np.unique(p)) == len(np.unique(h))
    assert_array_equal(np.argsort(p, kind="stable"), np.argsort(h, kind="stable"))


def test_temperature_clip_fixes_overconfident_ones():
    # 17 % of the answers say exactly 1.0 (truth about 0.86): with a 1e-12
    # clip those rows have logit 27.6 and force a huge temperature that
    # flattens everything else; the data-aware clip recovers the truth
    rng = np.random.default_rng(1)
    levels = np.array([0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0])
    weights = np.array([0.05, 0.08, 0.12, 0.2, 0.13, 0.15, 0.1, 0.17])
    h = rng.choice(levels, size=4000, p=weights)
    truth = 1 / (1 + np.exp(-to_logit(np.minimum(h, 0.99)) / 2.5))
    y = (rng.uniform(size=h.size) < truth).astype(int)
    new = TemperatureScaler().fit(h, y).predict_proba(h)[:, 1]
    old_logits = to_logit(h, 1e-12)
    old = TemperatureScaler(input="logit").fit(old_logits, y)
    old = old.predict_proba(old_logits)[:, 1]
    assert np.mean(np.abs(new - truth)) < 0.03
    assert np.mean(np.abs(old - truth)) > 0.06


# --------------------------------------------------------------------------
# golden values from independent code (tests/data/temperature_make_golden.py)
# --------------------------------------------------------------------------
@pytest.mark.parametrize("case", range(len(GOLDEN["binary"])))
def test_temperature_binary_matches_statsmodels_golden(case):
    g = GOLDEN["binary"][case]
    s, y, w = np.array(g["s"]), np.array(g["y"]), np.array(g["w"], dtype=float)
    ts = TemperatureScaler(input="logit").fit(s, y)
    assert_allclose(ts.temperature_, g["temperature"], rtol=1e-10)
    tw = TemperatureScaler(input="logit").fit(s, y, sample_weight=w)
    assert_allclose(tw.temperature_, g["temperature_weighted"], rtol=1e-10)


def test_temperature_multiclass_matches_mpmath_golden():
    g = GOLDEN["multiclass"][0]
    ts = TemperatureScaler(input="logit").fit(np.array(g["z"]), np.array(g["y"]))
    assert_allclose(ts.temperature_, g["temperature"], rtol=1e-11)


def test_temperature_chapter_bracket_width_after_80_iterations():
    # chapter 000: 19.95 * phi**80 ~ 4e-16; sanity check of the test helper
    phi = (math.sqrt(5.0) - 1.0) / 2.0
    assert 19.95 * phi**10 == pytest.approx(0.1622, abs=1e-4)
    assert golden_section_tau(lambda t: (t - 1.4172) ** 2) == pytest.approx(
        1.4172, abs=1e-9
    )


# --------------------------------------------------------------------------
# real data: CIFAR softmax records
# --------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", CIFAR_RECORDS)
def test_temperature_cifar_multiclass_matches_golden_section_and_sklearn(
    cifar_dir, name, request
):
    P, y, cal, test = load_cifar(cifar_dir, name)
    if P.shape[1] > 10:
        cal = cal[:2500]  # keeps the 80 golden-section probes fast for K = 100
    Z = np.log(np.clip(P, LOGIT_EPS, 1.0))  # the documented clip
    ts = TemperatureScaler().fit(P[cal], y[cal])
    tau_gs = golden_section_tau(lambda t: nll_multiclass(Z[cal], y[cal], t))
    # golden-section is limited by the flat minimum (~sqrt(eps)), not by 80 steps
    assert_allclose(ts.temperature_, tau_gs, rtol=1e-6)
    assert ts.n_iter_ <= 12
    # held-out NLL improves, and the fitted tau minimises it on the cal split
    assert nll_multiclass(Z[test], y[test], ts.temperature_) < nll_multiclass(
        Z[test], y[test], 1.0
    )
    request.getfixturevalue("sklearn_temperature")  # skips on scikit-learn < 1.8
    # scikit-learn's CalibratedClassifierCV(method="temperature") on the same
    # logits (stored scores behind FrozenEstimator): beta_sk = 1 / tau.
    # Brent on log(beta) is accurate to ~1e-8 here; we state rtol=1e-6.
    sk, beta_sk = _sklearn_temperature(Z[cal], y[cal])
    assert_allclose(1.0 / ts.temperature_, beta_sk, rtol=1e-6)
    # the calibrated probabilities agree as well
    assert_allclose(
        ts.predict_proba(P[test]), sk.predict_proba(Z[test]), rtol=0, atol=1e-6
    )


@pytest.mark.parametrize("name", CIFAR_RECORDS)
def test_temperature_cifar_top_label_binary_matches_golden_section_and_sklearn(
    cifar_dir, name, request
):
    P, y, cal, test = load_cifar(cifar_dir, name)
    conf = P.max(axis=1)
    correct = (P.argmax(axis=1) == y).astype(int)
    ts = TemperatureScaler().fit(conf[cal], correct[cal])
    s = to_logit(conf, ts.logit_eps_)  # the fitted clip (some conf are 1.0)
    tau_gs = golden_section_tau(lambda t: nll_binary(s[cal], correct[cal], t))
    assert_allclose(ts.temperature_, tau_gs, rtol=1e-6)
    assert ts.temperature_ > 1.0  # these networks are overconfident
    assert nll_binary(s[test], correct[test], ts.temperature_) < nll_binary(
        s[test], correct[test], 1.0
    )
    request.getfixturevalue("sklearn_temperature")  # skips on scikit-learn < 1.8
    # sklearn turns a 1-D decision_function s into logits (-s, s): sigma(2 beta s)
    _, beta_sk = _sklearn_temperature(s[cal], correct[cal])
    assert_allclose(1.0 / ts.temperature_, 2.0 * beta_sk, rtol=1e-6)


# --------------------------------------------------------------------------
# the invariance theorem (chapter 000), asserted exactly
# --------------------------------------------------------------------------
def assert_binary_invariance(before, p_after, y, thr=0.5):
    """Chapter 000, calibration.py lines 296-304, plus the strict decision."""
    assert_array_equal(
        np.argsort(before, kind="stable"), np.argsort(p_after, kind="stable")
    )
    assert_array_equal(before >= thr, p_after >= 0.5)
    assert_array_equal(before > thr, p_after > 0.5)
    assert accuracy_score(y, before > thr) == accuracy_score(y, p_after > 0.5)
    assert roc_auc_score(y, before) == roc_auc_score(y, p_after)


def new_ties(before, p_after):
    """Adjacent (in input order) pairs that rounding merged; asserts no inversion."""
    order = np.argsort(before, kind="stable")
    b, a = before[order], p_after[order]
    assert np.all(np.diff(a) >= 0), "an order was inverted"
    merged = (np.diff(a) == 0) & (np.diff(b) != 0)
    return b[:-1][merged], b[1:][merged]


@pytest.mark.parametrize("name", CIFAR_RECORDS)
def test_temperature_invariance_exact_on_cifar(cifar_dir, name):
    P, y, cal, test = load_cifar(cifar_dir, name)
    conf = P.max(axis=1)
    correct = (P.argmax(axis=1) == y).astype(int)
    ts = TemperatureScaler().fit(conf[cal], correct[cal])
    assert_binary_invariance(conf, ts.predict_proba(conf)[:, 1], correct)
    assert_array_equal(ts.predict(conf), (conf > 0.5).astype(int))
    # multiclass: every argmax, hence accuracy, is bit-identical
    tm = TemperatureScaler().fit(P[cal], y[cal])
    Q = tm.predict_proba(P)
    assert_array_equal(Q.argmax(axis=1), P.argmax(axis=1))
    assert_array_equal(tm.predict(P), P.argmax(axis=1))
    assert accuracy_score(y, Q.argmax(axis=1)) == accuracy_score(y, P.argmax(axis=1))


@pytest.mark.parametrize("tau", [0.05, 0.3, 1.0, 20.0])
def test_temperature_invariance_on_cifar_any_tau(cifar_dir, tau):
    # the theorem is for *any* tau > 0, not only the fitted one
    P, y, _, _ = load_cifar(cifar_dir, "densenet-bc-100-cifar-100")
    conf = P.max(axis=1)
    correct = (P.argmax(axis=1) == y).astype(int)
    ts = TemperatureScaler().fit(conf, correct)
    ts.temperature_ = tau
    p = ts.predict_proba(conf)[:, 1]
    saturated = p == 1.0
    if tau >= 1.0:  # softening never saturates: everything bit-identical
        assert not saturated.any()
        assert_binary_invariance(conf, p, correct)
    else:
        # documented exception (b): in sigma's upper tail the double spacing
        # near 1 (1.1e-16) exceeds the gaps between probabilities, and from
        # s / tau ~ 37 on everything rounds to 1.0; rows below the tail keep
        # their exact order
        assert saturated.any()
        keep = p < 1.0 - 1e-6
        assert_binary_invariance(conf[keep], p[keep], correct[keep])
        assert conf[saturated].min() >= conf[keep].max()
        assert_array_equal(conf > 0.5, p > 0.5)
    tm = TemperatureScaler().fit(P, y)
    tm.temperature_ = tau
    assert_array_equal(tm.predict_proba(P).argmax(axis=1), P.argmax(axis=1))


def test_temperature_invariance_exact_on_influences_verb(influences_verb):
    h = influences_verb.verbal_confidence.to_numpy(dtype=np.float64)
    y = influences_verb.correct_judge.to_numpy(dtype=np.float64)
    # 85 % mean confidence, 43 % accuracy, nearly all confidences above 0.5:
    # the NLL wants tau -> infinity, so the fit stops at the bound, and
    # temperature scaling cannot fix this bias (Platt can), which the warning
    # says; the confidences still rank the labels (AUC > 0.5), so it does not
    # blame their signal
    with pytest.warns(ConvergenceWarning, match="no temperature can lower") as w:
        ts = TemperatureScaler().fit(h, y)
    assert "AUC" not in str(w[0].message)
    assert ts.temperature_ == 20.0
    assert_binary_invariance(h, ts.predict_proba(h)[:, 1], y)
    # the token-probability confidences: 1e5 distinct values, many within
    # 1e-6 of 1; bit-identical at the bound and inside the bracket
    seq = influences_verb.dropna(subset=["extracted_seq_prob"])
    q = seq.extracted_seq_prob.to_numpy(dtype=np.float64)
    yq = seq.correct_judge.to_numpy(dtype=np.float64)
    tq = quiet_fit(TemperatureScaler(), q, yq)
    for tau in (tq.temperature_, 3.0, 1.0):
        tq.temperature_ = tau
        p = tq.predict_proba(q)[:, 1]
        lo, hi = new_ties(q, p)
        if lo.size == 0:
            assert_binary_invariance(q, p, yq)
            continue
        # documented exception (c): two answers whose confidences are one ulp
        # apart (0.4999843828746414 and ...415) merge once tau > 1 compresses
        # them; decisions stay exact and the AUC moves by ~2e-10
        assert tau > 1.0 and lo.size == 1
        assert np.all(hi - lo <= 4 * np.spacing(lo))
        assert_array_equal(q > 0.5, p > 0.5)
        assert_array_equal(q >= 0.5, p >= 0.5)
        assert_allclose(roc_auc_score(yq, p), roc_auc_score(yq, q), rtol=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    s=hnp.arrays(
        np.float64,
        st.integers(2, 40),
        elements=st.floats(-30, 30, allow_nan=False),
        unique=True,
    ),
    tau=st.floats(0.05, 20.0),
)
def test_temperature_invariance_exact_on_separated_scores(s, tau):
    # distinct scores at least 1e-9 apart and no saturation (|s/tau| < 36):
    # no float64 rounding can merge two of them, so the order is exact
    ss = np.sort(s)
    if np.any(np.diff(ss) < 1e-9 * np.maximum(1.0, np.abs(ss[1:]))):
        return
    if np.max(np.abs(s)) / tau >= 36.0:
        return
    ts = TemperatureScaler(input="logit").fit([-1.0, 1.0], [0, 1])
    ts.temperature_ = tau
    p = ts.predict_proba(s)[:, 1]
    y = (np.arange(s.shape[0]) % 2).astype(int)
    assert_array_equal(np.argsort(s, kind="stable"), np.argsort(p, kind="stable"))
    assert_array_equal(s > 0, p > 0.5)
    assert_array_equal(s >= 0, p >= 0.5)
    if 0 < y.sum() < y.shape[0]:
        assert roc_auc_score(y, s) == roc_auc_score(y, p)


_adversarial = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1e-300, -1e-300, 1e-17, -1e-17]),
)


@settings(max_examples=100, deadline=None)
@given(
    s=hnp.arrays(np.float64, st.integers(1, 30), elements=_adversarial),
    tau=st.floats(0.05, 20.0),
)
def test_temperature_adversarial_decisions_exact_and_order_never_inverted(s, tau):
    ts = TemperatureScaler(input="logit").fit([-1.0, 1.0], [0, 1])
    ts.temperature_ = tau
    p = ts.predict_proba(s)[:, 1]
    # every 0.5-decision is exact, for every finite double and every tau
    assert_array_equal(s > 0, p > 0.5)
    assert_array_equal(s >= 0, p >= 0.5)
    assert_array_equal(ts.predict(s), (s > 0).astype(int))
    # the map is monotone: sorted by score, probabilities never decrease
    assert np.all(np.diff(p[np.argsort(s, kind="stable")]) >= 0)
    assert np.all((p >= 0) & (p <= 1))


def test_temperature_adversarial_ties_only_where_documented():
    # (b) saturation: tau < 1 pushes s / tau past ~37, sigma rounds to 1.0
    ts = TemperatureScaler(input="logit").fit([-1.0, 1.0], [0, 1])
    ts.temperature_ = 0.5
    p = ts.predict_proba(np.array([20.0, 25.0]))[:, 1]
    assert p[0] == p[1] == 1.0
    # (c) adjacent doubles near 0.5 merge under tau = 20, but never invert
    h = np.array([0.5 + k * 2.0**-53 for k in range(1, 40)])
    ts2 = TemperatureScaler().fit([0.2, 0.8], [0, 1])
    ts2.temperature_ = 20.0
    q = ts2.predict_proba(h)[:, 1]
    assert np.all(np.diff(q) >= 0) and np.all(q > 0.5)
    assert np.unique(q).size < h.size  # merges happen, as documented


@settings(max_examples=40, deadline=None)
@given(
    base=st.floats(-50, 50, allow_nan=False),
    k=st.integers(2, 6),
    gap=st.integers(1, 4),
    top=st.integers(0, 5),
    tau=st.floats(0.05, 20.0),
)
def test_temperature_multiclass_argmax_exact_on_near_ties(base, k, gap, top, tau):
    # a row whose maximum beats the runner-up by only `gap` ulps: rounding may
    # merge them, the kept argmax must still be the input's
    top %= k
    z = np.full((1, k), base - 1.0)
    runner = (top + 1) % k
    z[0, runner] = base
    hi = base
    for _ in range(gap):
        hi = np.nextafter(hi, np.inf)
    z[0, top] = hi
    ts = TemperatureScaler(input="logit").fit(np.eye(k) * 3, np.arange(k))
    ts.temperature_ = tau
    q = ts.predict_proba(z)
    assert q.argmax(axis=1)[0] == top
    assert ts.predict(z)[0] == top
    assert_allclose(q.sum(axis=1), 1.0, rtol=0, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(
    z=hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 8), st.integers(2, 6)),
        elements=st.floats(-1e3, 1e3, allow_nan=False),
    ),
    tau=st.floats(0.05, 20.0),
)
def test_temperature_multiclass_rows_sum_to_one_and_keep_argmax(z, tau):
    k = z.shape[1]
    ts = TemperatureScaler(input="logit").fit(np.eye(k) * 3, np.arange(k))
    ts.temperature_ = tau
    q = ts.predict_proba(z)
    assert np.all((q >= 0) & (q <= 1))
    assert_allclose(q.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    assert_array_equal(q.argmax(axis=1), z.argmax(axis=1))


# --------------------------------------------------------------------------
# separable / degenerate data and the bounds
# --------------------------------------------------------------------------
def test_temperature_separable_data_warns_and_hits_lower_bound():
    s = np.array([-3.0, -1.0, -0.5, 0.5, 2.0, 800.0])
    y = (s > 0).astype(int)
    with pytest.warns(ConvergenceWarning, match="separable"):
        ts = TemperatureScaler(input="logit").fit(s, y)
    assert ts.temperature_ == 0.05
    with pytest.warns(ConvergenceWarning, match="separable"):
        ts = TemperatureScaler(input="logit", temperature_bounds=(0.01, 5)).fit(s, y)
    assert ts.temperature_ == 0.01


def test_temperature_separable_multiclass_warns():
    z = np.array([[3.0, 0.0, 1.0], [0.0, 2.0, 1.0], [0.0, 1.0, 5.0]])
    with pytest.warns(ConvergenceWarning, match="separable"):
        ts = TemperatureScaler(input="logit").fit(z, [0, 1, 2])
    assert ts.temperature_ == 0.05


def test_temperature_inverted_scores_hit_upper_bound():
    s = np.array([-3.0, -1.0, 1.0, 2.0])
    y = (s < 0).astype(int)  # every score points the wrong way
    with pytest.warns(ConvergenceWarning, match="upper bound 20"):
        ts = TemperatureScaler(input="logit").fit(s, y)
    assert ts.temperature_ == 20.0


@pytest.mark.parametrize("model", ["gemma2", "llama31-8", "llama7", "llama8", "phi4"])
def test_temperature_bound_on_verbalized_data_says_no_temperature_lowers_them(
    model,
):
    # these models' verbalized confidences are mostly above 0.5 at accuracy
    # 32-46 %: the fit stops at the upper bound, where the confidences are
    # still far above the accuracy. They rank the labels (AUC 0.60-0.75), so
    # the warning does not blame the signal: it says what a temperature
    # cannot do and what can
    from sklearn_betacal.datasets import load_triviaqa_confidence

    frame = load_triviaqa_confidence().frame
    rows = frame[frame.model == model]
    h = rows.verbal_confidence.to_numpy()
    y = rows.correct_judge.to_numpy()
    with pytest.warns(ConvergenceWarning) as caught:
        ts = TemperatureScaler().fit(h, y)
    (message,) = [str(w.message) for w in caught]
    assert "no temperature can lower them to the accuracy" in message
    assert "PlattScaler" in message and "UMDBinner" in message
    assert f"({y.mean():.2f})" in message
    assert "AUC" not in message
    assert ts.temperature_ == 20.0
    # the same confidences with labels drawn against them do warn
    rng = np.random.default_rng(0)
    y_inv = (rng.uniform(size=h.shape[0]) < 1.0 - h).astype(int)
    with pytest.warns(ConvergenceWarning, match="inverted signal"):
        ts = TemperatureScaler().fit(h, y_inv)
    assert ts.temperature_ == 20.0


def test_temperature_inverted_sample_warns():
    rng = np.random.default_rng(0)
    h = rng.uniform(0.05, 0.95, size=2000)
    y = (rng.uniform(size=2000) < 1.0 - h).astype(int)  # labels against h
    with pytest.warns(ConvergenceWarning, match="AUC not significantly above"):
        ts = TemperatureScaler().fit(h, y)
    assert ts.temperature_ == 20.0


def test_temperature_uninformative_scores_hit_upper_bound():
    # average margin negative: the optimum beta is <= 0, beyond the bracket
    s = np.array([-2.0, 1.0, 1.0, 2.0])
    y = np.array([1, 0, 1, 0])
    with pytest.warns(ConvergenceWarning, match="upper bound"):
        ts = TemperatureScaler(input="logit").fit(s, y)
    assert ts.temperature_ == 20.0


def test_temperature_all_zero_scores_flat():
    with pytest.warns(ConvergenceWarning, match="does not depend"):
        ts = TemperatureScaler().fit([0.5, 0.5, 0.5], [0, 1, 1])
    assert ts.temperature_ == 1.0


def test_temperature_interior_optimum_does_not_warn():
    rng = np.random.default_rng(5)
    s = rng.normal(scale=2.0, size=500)
    y = (rng.uniform(size=500) < 1 / (1 + np.exp(-s))).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ts = TemperatureScaler(input="logit").fit(s, y)
    assert 0.5 < ts.temperature_ < 2.0


# --------------------------------------------------------------------------
# the 1-D solver
# --------------------------------------------------------------------------
def test_newton_convex_1d_quadratic_one_step():
    x, n_iter, status = _scaling.newton_convex_1d(
        lambda x: (2 * (x - 3.0), 2.0), 0.05, 20.0
    )
    assert status == "converged" and n_iter <= 3
    assert_allclose(x, 3.0, rtol=1e-14)


@pytest.mark.parametrize(
    "optimum, expected, status", [(50.0, 20.0, "upper"), (0.001, 0.05, "lower")]
)
def test_newton_convex_1d_bounds(optimum, expected, status):
    x, _, st_ = _scaling.newton_convex_1d(
        lambda x: (math.log(x / optimum), 1.0 / x), 0.05, 20.0
    )
    assert st_ == status and x == expected


def test_newton_convex_1d_bad_curvature_still_terminates():
    # f'' reported as 0 (or nonsense) everywhere: bisection must take over
    x, n_iter, status = _scaling.newton_convex_1d(
        lambda x: (x - 7.0, 0.0), 0.05, 20.0, max_iter=200
    )
    assert status == "converged" and n_iter < 200
    assert_allclose(x, 7.0, rtol=1e-10)


def test_newton_convex_1d_never_exceeds_max_iter():
    x, n_iter, status = _scaling.newton_convex_1d(
        lambda x: (x - 7.0, 0.0), 0.05, 20.0, max_iter=5
    )
    assert n_iter == 5 and status == "max_iter"


def test_temperature_converges_to_1e10_relative():
    g = GOLDEN["binary"][0]
    s, y = np.array(g["s"]), np.array(g["y"])
    ts = TemperatureScaler(input="logit").fit(s, y)
    t = _scaling.binary_margins(s, y.astype(float))
    # the NLL derivative at the fitted beta is at rounding level
    beta = 1.0 / ts.temperature_
    grad = -np.sum(t / (1.0 + np.exp(beta * t)))
    assert abs(grad) < 1e-10 * np.sum(np.abs(t))


# --------------------------------------------------------------------------
# weights and determinism
# --------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(8, 60),
    multiclass=st.booleans(),
)
def test_temperature_weights_zero_drops_integer_repeats(seed, n, multiclass):
    rng = np.random.default_rng(seed)
    if multiclass:
        X = rng.normal(scale=2.0, size=(n, 3))
        y = rng.integers(0, 3, size=n)
    else:
        X = rng.normal(scale=2.0, size=n)
        y = rng.integers(0, 2, size=n)
    w = rng.integers(0, 4, size=n)
    if w.sum() == 0:
        w[0] = 1
    fit = TemperatureScaler(input="logit")
    a = quiet_fit(clone(fit), X, y, sample_weight=w.astype(float))
    b = quiet_fit(clone(fit), np.repeat(X, w, axis=0), np.repeat(y, w))
    assert_allclose(a.temperature_, b.temperature_, rtol=1e-9)
    keep = w > 0
    c = quiet_fit(clone(fit), X[keep], y[keep], sample_weight=w[keep].astype(float))
    assert_allclose(a.temperature_, c.temperature_, rtol=1e-12)


def test_temperature_deterministic_bitwise(cifar_dir):
    P, y, cal, _ = load_cifar(cifar_dir, "wideresnet-16-4-cifar-10")
    fits = [TemperatureScaler().fit(P[cal], y[cal]) for _ in range(2)]
    assert fits[0].temperature_ == fits[1].temperature_
    assert fits[0].predict_proba(P).tobytes() == fits[1].predict_proba(P).tobytes()
    conf = P.max(axis=1)
    correct = (P.argmax(axis=1) == y).astype(int)
    b = [TemperatureScaler().fit(conf, correct) for _ in range(2)]
    assert b[0].temperature_ == b[1].temperature_
    assert b[0].predict_proba(conf).tobytes() == b[1].predict_proba(conf).tobytes()


def test_temperature_multiclass_string_labels_sorted():
    z = np.array([[2.0, 0.0], [0.0, 1.0], [1.5, 0.2], [0.1, 0.3]])
    y = np.array(["cat", "dog", "dog", "cat"])
    ts = TemperatureScaler(input="logit").fit(z, y)
    assert_array_equal(ts.classes_, ["cat", "dog"])
    assert_array_equal(ts.predict(z), ["cat", "dog", "cat", "dog"])


def test_temperature_multiclass_absent_class_uses_column_index():
    rng = np.random.default_rng(4)
    z = rng.normal(size=(30, 4))
    y = rng.integers(0, 3, size=30)  # class 3 never seen
    ts = TemperatureScaler(input="logit").fit(z, y)
    assert_array_equal(ts.classes_, np.arange(4))
    assert ts.predict_proba(z).shape == (30, 4)


def test_probability_matrix_rows_must_sum_to_one():
    """A [confidence, group] matrix (a group calibrator's layout passed by
    mistake) was read as two classes' probabilities, with only a 'no signal'
    warning; rows that do not sum to 1 are refused."""
    rng = np.random.default_rng(0)
    h = rng.uniform(size=500)
    X = np.column_stack([h, rng.integers(0, 2, 500)])
    y = (rng.uniform(size=500) < h).astype(int)
    with pytest.raises(ValueError, match=r"row\(s\) whose 2 probabilities do not sum"):
        TemperatureScaler().fit(X, y)
    with pytest.raises(ValueError, match="do not sum to 1"):
        TemperatureScaler().fit(rng.uniform(size=(500, 3)), rng.integers(0, 3, 500))
    # softmax rows rounded to 4 decimals still read
    P = rng.dirichlet(np.ones(10), size=500)
    TemperatureScaler().fit(np.round(P, 4), rng.integers(0, 10, 500))
