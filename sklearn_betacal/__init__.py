# SPDX-License-Identifier: MIT
"""scikit-learn compatible post-hoc calibrators, with beta-calibration.

Confidence-only calibrators (:class:`TemperatureScaler`, :class:`PlattScaler`,
:class:`UMDBinner`, :class:`ScalingBinningCalibrator`) map one confidence per
row to a calibrated probability. Group-conditional calibrators
(:class:`BetaBinningCalibrator`, :class:`HierarchicalLogisticScaler`,
:class:`ScalingBetaBinningCalibrator`) additionally take the features that a
partitioner (:class:`KDTreePartitioner`, ...) maps to a cell, and calibrate
within each cell (beta-calibration, Def. 2.3 of the paper).

Public names are imported lazily so that ``import sklearn_betacal`` stays
cheap and never pulls an optional extra.
"""

import importlib

__version__ = "0.1.0"

# public name -> private module that defines it
_LAZY = {
    "TemperatureScaler": "._temperature",
    "PlattScaler": "._platt",
    "UMDBinner": "._umd",
    "ScalingBinningCalibrator": "._scaling_binning",
    "KDTreePartitioner": "._partition",
    "GroupColumnPartitioner": "._partition",
    "ClusterPartitioner": "._partition",
    "CrossPartitioner": "._partition",
    "CalibrationTreePartitioner": "._partition",
    "BetaBinningCalibrator": "._beta_binning",
    "CalibratedClassifier": "._calibrated",
    "AbstentionGate": "._abstention",
    "HierarchicalLogisticScaler": "._hierarchical",
    "ScalingBetaBinningCalibrator": "._scaling_beta_binning",
    "estimate_misspecification": "._scaling_beta_binning",
    "TextEmbedder": "._text",
    "parse_verbalized_confidence": "._elicitation",
    "ConfidenceReader": "._elicitation",
    "VERB1S_TOP1_PROMPT": "._elicitation",
    "LING1S_TOP1_PROMPT": "._elicitation",
    "LINGUISTIC_CONFIDENCE_TABLE": "._elicitation",
    "QUALITATIVE_CONFIDENCE_TABLE": "._elicitation",
    "ReliabilityDisplay": ".metrics._plot.reliability",
    "BetaCalibrationDisplay": ".metrics._plot.beta_reliability",
    "AccuracyConfidenceDisplay": ".metrics._plot.accuracy_confidence",
    "CumulativeCalibrationDisplay": ".metrics._plot.cumulative",
    "AbstentionDisplay": ".metrics._plot.abstention",
}
_SUBMODULES = {"metrics", "datasets", "bounds", "io", "dask"}

__all__ = sorted([*_LAZY, *_SUBMODULES, "__version__"])


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        module = importlib.import_module("." + name, __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return __all__
