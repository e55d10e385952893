# SPDX-License-Identifier: MIT
"""The API conventions of docs/api_conventions.rst, checked on every estimator."""

import inspect

import numpy as np
import pytest

import sklearn_betacal as sb

ESTIMATORS = [
    getattr(sb, name)
    for name in sb.__all__
    if inspect.isclass(getattr(sb, name)) and hasattr(getattr(sb, name), "fit")
]

#: One word for one idea: the parameters below mean the same thing wherever
#: they appear. A synonym listed here must not be used by any estimator.
SYNONYMS = {
    "scaler_fraction": {"split", "split_fraction", "calibration_fraction"},
    "points_per_bin": {"min_bin_size", "bin_size", "n_per_bin"},
    "group_column": {"column", "group", "groups_column"},
    "text_columns": {"columns"},
    "confidence_column": {"confidence_col", "score_column"},
    "input": {"input_kind", "score_type", "kind"},
}


def _params(cls):
    return list(inspect.signature(cls.__init__).parameters.values())[1:]


def test_api_every_estimator_is_listed():
    names = {cls.__name__ for cls in ESTIMATORS}
    assert {"BetaBinningCalibrator", "GroupColumnPartitioner", "TextEmbedder"} <= names
    assert len(ESTIMATORS) >= 13


#: DESIGN.md fixes CalibratedClassifier(estimator, calibrator=None, *, ...):
#: the classifier and the calibrator it wraps, as two positional parameters.
N_POSITIONAL = {"CalibratedClassifier": 2}


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_api_keyword_only_after_the_first_parameter(cls):
    params = _params(cls)
    positional = [
        p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    allowed = N_POSITIONAL.get(cls.__name__, 1)
    assert len(positional) <= allowed, f"{cls.__name__}: {positional} are positional"


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_api_no_synonym_of_a_shared_name(cls):
    names = {p.name for p in _params(cls)}
    for word, synonyms in SYNONYMS.items():
        assert not names & synonyms, (
            f"{cls.__name__} uses {sorted(names & synonyms)}; the shared name "
            f"is {word!r} (docs/api_conventions.rst)"
        )


def test_api_shared_names_where_they_apply():
    def has(cls, name):
        return name in {p.name for p in _params(cls)}

    for cls in (sb.ScalingBinningCalibrator, sb.ScalingBetaBinningCalibrator):
        assert has(cls, "scaler_fraction") and has(cls, "scaler")
    for cls in (
        sb.BetaBinningCalibrator,
        sb.HierarchicalLogisticScaler,
        sb.ScalingBetaBinningCalibrator,
    ):
        assert has(cls, "confidence_column") and has(cls, "partitioner")
    for cls in (
        sb.TemperatureScaler,
        sb.PlattScaler,
        sb.UMDBinner,
        sb.ScalingBinningCalibrator,
        sb.HierarchicalLogisticScaler,
    ):
        assert has(cls, "input")
    for cls in (sb.UMDBinner, sb.ScalingBinningCalibrator):
        assert has(cls, "n_bins") and has(cls, "points_per_bin")
    for cls in (sb.BetaBinningCalibrator, sb.ScalingBetaBinningCalibrator):
        assert has(cls, "points_per_bin")
    assert has(sb.GroupColumnPartitioner, "group_column")
    assert has(sb.TextEmbedder, "text_columns")


def test_api_logistic_coefficients_have_sklearn_shapes():
    rng = np.random.default_rng(0)
    h = rng.uniform(0.05, 0.95, 400)
    g = rng.integers(0, 4, 400)
    y = (rng.uniform(size=400) < h).astype(int)
    platt = sb.PlattScaler().fit(h, y)
    hls = sb.HierarchicalLogisticScaler(sb.GroupColumnPartitioner()).fit(
        np.column_stack([h, g]), y
    )
    for est in (platt, hls):
        assert est.coef_.shape == (1, 1), type(est).__name__
        assert est.intercept_.shape == (1,), type(est).__name__
    assert hls.coef_[0, 0] == hls.fixed_effects_[1]
    assert hls.intercept_[0] == hls.fixed_effects_[0]
