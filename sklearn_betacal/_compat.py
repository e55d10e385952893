# SPDX-License-Identifier: MIT
"""The one door to scikit-learn's private names.

scikit-learn keeps helpers we rely on under private names (``_fit_context``,
the parameter-constraint classes of ``sklearn.utils._param_validation``,
``_BaseScorer``, ``_num_samples``, ...). They may move or change
between releases without a deprecation cycle, so every module of the package
imports them from here and nowhere else (``tests/test_package_layout.py``
enforces it): when scikit-learn changes one, this file is the only place to
adapt.
"""

# -- scikit-learn private names ------------------------------------------------
from sklearn.base import _fit_context
from sklearn.metrics._scorer import _BaseScorer
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    StrOptions,
    validate_params,
)
from sklearn.utils.metadata_routing import _routing_enabled
from sklearn.utils.validation import (
    _check_feature_names_in,
    _check_method_params,
    _num_samples,
)

__all__ = [
    "HasMethods",
    "Interval",
    "StrOptions",
    "_BaseScorer",
    "_check_feature_names_in",
    "_check_method_params",
    "_fit_context",
    "_num_samples",
    "_routing_enabled",
    "_safe_indexing",
    "validate_params",
]
