# SPDX-License-Identifier: MIT
"""The inner estimators that composite estimators build by default.

A calibrator module never imports another calibrator's module
(``tests/test_package_layout.py``): where one estimator is made of another --
scaling-binning's default Platt scaler, the hierarchical and pooled scalers
of scaling-beta-binning (Alg. 3), ``CalibratedClassifier``'s default
calibrator -- it asks this module, which is the one place that names the
classes and their settings.
"""

from ._hierarchical import HierarchicalLogisticScaler
from ._platt import PlattScaler
from ._umd import UMDBinner


def platt_scaler(input="probability"):
    """Unfitted ``PlattScaler(input=input)``: the scaler of S-B and S-BB."""
    return PlattScaler(input=input)


def hierarchical_scaler(covariate="confidence"):
    """Unfitted HS-BB scaler (Eq. 5) on ``X = [h, cell id]``."""
    return HierarchicalLogisticScaler(partitioner="precomputed", covariate=covariate)


def default_calibrator():
    """Unfitted ``UMDBinner()``: ``CalibratedClassifier``'s calibrator=None."""
    return UMDBinner()
