# SPDX-License-Identifier: MIT
"""Every estimator the common tests run on, and why some checks must fail.

One list (:data:`INSTANCES`) and one expected-failure table
(:func:`expected_failed_checks`) for ``tests/test_common.py``, in the manner
of scikit-learn's ``_test_common/instance_generator.py``. Each cause of an
expected failure is worded once below; a table maps check names to causes.

To add an estimator: append an instance to :data:`INSTANCES` (and, if some of
scikit-learn's checks must fail for it, an entry to :data:`XFAIL` keyed by its
class, with one of the causes below or a new, worded one). To remove an
expected failure that a fix made pass: delete its check name here;
``xfail_strict`` makes a check that starts passing fail the suite until then.
"""

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import FunctionTransformer
from sklearn.tree import DecisionTreeClassifier

from sklearn_betacal import (
    AbstentionGate,
    BetaBinningCalibrator,
    CalibratedClassifier,
    CalibrationTreePartitioner,
    ClusterPartitioner,
    ConfidenceReader,
    CrossPartitioner,
    GroupColumnPartitioner,
    HierarchicalLogisticScaler,
    KDTreePartitioner,
    PlattScaler,
    ScalingBetaBinningCalibrator,
    ScalingBinningCalibrator,
    TemperatureScaler,
    TextEmbedder,
    UMDBinner,
)
from sklearn_betacal._validation import check_confidence

# -- causes, each worded once -------------------------------------------------
ONE_CONFIDENCE_COLUMN = (
    "a confidence-only calibrator takes exactly one confidence per row and "
    "rejects X with several columns with a ValueError; the check passes several"
)
ONE_D_INDEXING = (
    "sklearn check limitation: with the one_d_array tag the check makes X 1-D "
    "and then indexes it as 2-D itself (X[:, 0] / X.shape[1])"
)
ONE_D_SPARSE = (
    "sklearn check limitation: after making X 1-D the check cannot build a "
    "1-D sparse array in lil format"
)
ONE_D_X = "1-D X (one confidence per row) is accepted on purpose"
FIRST_FEATURE_ONLY = (
    "the check needs 83% accuracy on a multi-feature toy problem; a "
    "confidence-only calibrator sees only its first feature, and a monotone "
    "map of that one feature cannot reach it"
)
PROBABILITY_COLUMN = (
    "the check feeds confidences outside [0, 1] (make_blobs, iris, ...); the "
    "confidence column must be a probability by design (data conventions). The check "
    "passes for _AnyScoreBB, which only lifts that range check"
)
LOGIT_MATRIX_LABELS = (
    "by design: an (n, K) matrix holds one logit per class, so y must index "
    "its K columns; the check passes 3 labels with only 2 columns"
)
KEEPS_ARGMAX = (
    "by design: temperature scaling keeps the argmax/sign of the input "
    "(invariance theorem), so it cannot learn blobs whose features are not "
    "per-class logits"
)
OWN_ARGMAX = (
    "by design: the predictions are the model's own argmax (invariance "
    "theorem), not the single class seen in y"
)
SPLIT_DRAWS_ROWS = (
    "the D1/D2 split draws rows, not weight units, so an integer weight is "
    "not a repeated row (documented in Notes); zero weight = dropping the row "
    "holds (test_common.py::test_weight_invariants)"
)


# -- instances ------------------------------------------------------------------
def _first_feature_cells(Z):
    """Cell id = integer part of |first partition feature| modulo 4."""
    return (np.floor(np.abs(np.asarray(Z, dtype=float)[:, 0])) % 4).astype(np.int64)


class _AnyScoreBB(BetaBinningCalibrator):
    """BB that bins any finite score, for sklearn's checks on random X.

    Binning only uses the order of the confidences, so nothing but the
    range check in ``_check_confidence`` depends on them being in [0, 1].
    """

    def _check_confidence(self, h, **kwargs):
        h = np.asarray(h, dtype=np.float64)
        return check_confidence(h, input="logit", name="confidence column")


INSTANCES = [
    TemperatureScaler(input="logit"),
    PlattScaler(input="logit"),
    UMDBinner(n_bins=3, input="logit", random_state=0),
    ScalingBinningCalibrator(n_bins=3, input="logit", random_state=0),
    BetaBinningCalibrator(points_per_bin=2, random_state=0),
    _AnyScoreBB(points_per_bin=2, random_state=0),
    HierarchicalLogisticScaler(
        partitioner=FunctionTransformer(_first_feature_cells), input="logit"
    ),
    # the default partitioner, KDTreePartitioner()
    HierarchicalLogisticScaler(input="logit"),
    ScalingBetaBinningCalibrator(
        KDTreePartitioner(max_depth=1), points_per_bin=5, random_state=0
    ),
    # the boosted feature-aware scaler, its output binned
    ScalingBetaBinningCalibrator(
        KDTreePartitioner(max_depth=1),
        points_per_bin=5,
        scaler="features",
        random_state=0,
    ),
    # cross-fitted: one such calibrator per fold, their predictions averaged
    ScalingBetaBinningCalibrator(
        KDTreePartitioner(max_depth=1),
        points_per_bin=5,
        scaler="features",
        cv=2,
        random_state=0,
    ),
    KDTreePartitioner(),
    KDTreePartitioner(3, split_axis="max_spread", min_samples_leaf=2),
    KDTreePartitioner(split_axis="pca", random_state=0),
    # the tree mechanics without the significance stop (which keeps the
    # checks' small random data in one cell)
    # with its default learned directions (the checks fit without
    # confidences: the ridge direction of y on X) and on the raw features
    CalibrationTreePartitioner(
        max_depth=2,
        min_samples_leaf=1,
        split_alpha=None,
        random_state=0,
    ),
    CalibrationTreePartitioner(
        max_depth=2,
        min_samples_leaf=1,
        split_alpha=None,
        directions=None,
        random_state=0,
    ),
    GroupColumnPartitioner(),
    ClusterPartitioner(random_state=0),
    CrossPartitioner(
        [
            ("a", KDTreePartitioner(max_depth=1), [0]),
            ("b", GroupColumnPartitioner(), [1]),
        ]
    ),
    # a text transformer declares two_d_array=False / string=True (as
    # TfidfVectorizer does): sklearn skips the numeric-data checks for it and
    # test_text.py runs the API checks that need no numeric data
    TextEmbedder(),
    TextEmbedder(method="tfidf-char-svd"),
    ConfidenceReader(),
    # The inner classifier of these two is a tree: its predict_proba of a row
    # is exact whatever the batch. LogisticRegression's decision_function is
    # not (OpenBLAS picks other kernels by batch size on AVX2-only CPUs: one
    # ulp between a row alone and in a batch), and a binning calibrator's
    # output near a bin edge moves by (v2 - v1) * ulp / delta, which fails
    # scikit-learn's 1e-7 subset and sparse-weight checks on such machines.
    CalibratedClassifier(
        DecisionTreeClassifier(max_depth=3, random_state=0),
        UMDBinner(n_bins=2, random_state=0),
        cv=3,
    ),
    CalibratedClassifier(LogisticRegression(), TemperatureScaler(), cv=3),
    CalibratedClassifier(
        LogisticRegression(), PlattScaler(input="logit"), multiclass="one-vs-rest"
    ),
    CalibratedClassifier(
        DecisionTreeClassifier(max_depth=3, random_state=0),
        BetaBinningCalibrator(
            KDTreePartitioner(max_depth=1), points_per_bin=2, random_state=0
        ),
        cv=3,
    ),
    CalibratedClassifier(
        LogisticRegression(),
        BetaBinningCalibrator(
            KDTreePartitioner(max_depth=1), points_per_bin=2, random_state=0
        ),
        cv=3,
        multiclass="top-label-by-class",
    ),
    CalibratedClassifier(
        LogisticRegression(),
        HierarchicalLogisticScaler(KDTreePartitioner(max_depth=1)),
        cv=3,
    ),
    # the gate around a calibrator that passes every check: one threshold,
    # and one per cell of its partition
    AbstentionGate(
        HierarchicalLogisticScaler(
            partitioner=FunctionTransformer(_first_feature_cells), input="logit"
        ),
        random_state=0,
    ),
    AbstentionGate(
        HierarchicalLogisticScaler(
            partitioner=FunctionTransformer(_first_feature_cells), input="logit"
        ),
        per_cell=True,
        random_state=0,
    ),
]


# -- expected failures, by class ----------------------------------------------
_CONFIDENCE_ONLY = {
    **dict.fromkeys(
        [
            "check_dict_unchanged",
            "check_dont_overwrite_parameters",
            "check_dtype_object",
            "check_f_contiguous_array_estimator",
            "check_fit2d_1feature",
            "check_fit2d_1sample",
            "check_fit2d_predict1d",
            "check_methods_sample_order_invariance",
            "check_methods_subset_invariance",
            "check_n_features_in",
            "check_n_features_in_after_fitting",
        ],
        ONE_D_INDEXING,
    ),
    "check_estimator_sparse_array": ONE_D_SPARSE,
    "check_fit1d": ONE_D_X,
    "check_classifiers_train": FIRST_FEATURE_ONLY,
}
_ONE_CONFIDENCE = {  # PlattScaler, UMDBinner and ScalingBinningCalibrator
    **_CONFIDENCE_ONLY,
    **dict.fromkeys(
        [
            "check_classifiers_one_label_sample_weights",
            "check_estimators_nan_inf",
            "check_sample_weight_equivalence_on_dense_data",
            "check_sample_weights_not_overwritten",
            "check_sample_weights_shape",
        ],
        ONE_CONFIDENCE_COLUMN,
    ),
    # a multiclass y is refused with scikit-learn's "Only binary
    # classification is supported." (tests/test_labels.py), but the check
    # fits multi-column X, which is refused first
    "check_classifier_not_supporting_multiclass": ONE_CONFIDENCE_COLUMN,
}
_TEMPERATURE = {
    **dict.fromkeys(
        [
            "check_classifiers_classes",
            "check_estimators_fit_returns_self",
            "check_estimators_overwrite_params",
            "check_readonly_memmap_input",
        ],
        LOGIT_MATRIX_LABELS,
    ),
    "check_classifiers_train": KEEPS_ARGMAX,
    "check_classifiers_one_label": OWN_ARGMAX,
}
_PROBABILITY_CHECKS = [
    "check_classifier_data_not_an_array",
    "check_classifiers_classes",
    "check_classifiers_train",
    "check_dict_unchanged",
    "check_dont_overwrite_parameters",
    "check_estimators_dtypes",
    "check_estimators_fit_returns_self",
    "check_estimators_overwrite_params",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_fit2d_1sample",
    "check_fit2d_predict1d",
    "check_fit_check_is_fitted",
    "check_fit_idempotent",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_n_features_in",
    "check_n_features_in_after_fitting",
    "check_pipeline_consistency",
    "check_positive_only_tag_during_fit",
    "check_readonly_memmap_input",
    "check_sample_weights_not_an_array",
    "check_sample_weights_not_overwritten",
    "check_sample_weights_pandas_series",
    "check_sample_weights_shape",
]
# check_sample_weight_equivalence_on_dense_data passes for BB: on the check's
# data every cell has its own table or falls back (< b rows) to the same
# ancestor regions with weights as with repeated rows. Not a general property
# (the default kd-tree is fitted without weights); the exact tests are
# test_beta_binning_zero_weight_equals_drop and
# test_beta_binning_integer_weight_equals_repeat*.
_ANY_SCORE_BB = {}
_BB = {**_ANY_SCORE_BB, **dict.fromkeys(_PROBABILITY_CHECKS, PROBABILITY_COLUMN)}
_SBB = {
    # check_all_zero_sample_weights_error passes since the group base checks
    # the weights before the confidences
    **dict.fromkeys(_PROBABILITY_CHECKS, PROBABILITY_COLUMN),
    "check_sample_weight_equivalence_on_dense_data": SPLIT_DRAWS_ROWS,
}
# HierarchicalLogisticScaler passes every check: labels of any two classes are
# accepted and the group base names the one-feature error

TREE_TIES = (
    "scikit-learn's tree breaks exact ties between equally good splits by "
    "floating-point summation order, which differs between a weight of 2 and "
    "a repeated row; the check's labels produce such ties. A "
    "DecisionTreeRegressor passes the check on its predictions, which "
    "coincide across the tied splits, but not on the leaf ids that are this "
    "partitioner's output. Zero weight = drop is tested in "
    "test_calibration_tree_zero_weight_is_drop"
)

CROSS_WEIGHTS = (
    "CrossPartitioner passes sample_weight only to its supervised components "
    "(a learned tree); the unsupervised ones (here a kd-tree, whose medians are "
    "unweighted) are fitted unweighted, as when used alone, so a weight of 2 "
    "and a repeated row give different kd cells. Weights reaching a crossed "
    "learned tree are tested in test_learned_tree_crossed_with_a_group_column"
)

READER_RANGE = (
    "the check feeds numbers outside [0, 1] (make_blobs, ...) to "
    "ConfidenceReader(confidence_format='number'), which refuses them by "
    "design: it reads probabilities (tests/test_cli_day.py reads each format)"
)
READER_1D = (
    "1-D X (one confidence per row) is accepted on purpose, as the "
    "confidence-only calibrators accept it"
)
READER_MISSING = (
    "fit only records the columns; a missing or non-finite confidence is "
    "refused where it is read (read/transform: NaN means 'no confidence "
    "stated', counted by betacal)"
)
_READER = {
    **dict.fromkeys(
        [
            "check_dict_unchanged",
            "check_estimators_dtypes",
            "check_estimators_pickle",
            "check_f_contiguous_array_estimator",
            "check_fit_idempotent",
            "check_methods_sample_order_invariance",
            "check_methods_subset_invariance",
            "check_pipeline_consistency",
            "check_transformer_data_not_an_array",
            "check_transformer_general",
            "check_transformer_preserve_dtypes",
        ],
        READER_RANGE,
    ),
    "check_fit1d": READER_1D,
    "check_fit2d_predict1d": READER_1D,
    "check_estimators_nan_inf": READER_MISSING,
}

#: class -> {check name: reason}; classes not listed must pass every check.
XFAIL = {
    TemperatureScaler: _TEMPERATURE,
    PlattScaler: _ONE_CONFIDENCE,
    UMDBinner: _ONE_CONFIDENCE,
    ScalingBinningCalibrator: _ONE_CONFIDENCE,
    BetaBinningCalibrator: _BB,
    _AnyScoreBB: _ANY_SCORE_BB,
    ScalingBetaBinningCalibrator: _SBB,
    CalibrationTreePartitioner: {
        "check_sample_weight_equivalence_on_dense_data": TREE_TIES
    },
    CrossPartitioner: {"check_sample_weight_equivalence_on_dense_data": CROSS_WEIGHTS},
    ConfidenceReader: _READER,
    AbstentionGate: {
        "check_sample_weight_equivalence_on_dense_data": (
            "the gate splits rows into fitting and certifying ones, and the "
            "split draws rows, not weight units, so a row of weight 2 and its "
            "two copies can land on different sides (documented in Notes); "
            "zero weight = dropping the row is exact "
            "(test_abstention.py::test_abstention_gate_zero_weight_is_drop)"
        )
    },
}


DIRECTION_CV = (
    TREE_TIES + ". With directions='recalibration' in addition: the direction "
    "fit chooses its penalty by 5-fold cross-validation and the tree is grown "
    "on cross-fitted positions; folds are drawn over rows, so a row of weight "
    "2 sits in one fold while its two copies can sit in two, and the "
    "penalty, the directions and the positions differ. Zero weight = drop is "
    "tested in "
    "test_calibration_tree_directions_are_reproducible_and_zero_weight_is_drop"
)


KD_CELLS_FLOOR = (
    "The calibrator's kd-tree is fitted without the weights (a median takes "
    "none), so a row of weight 2 and its two copies can fall in different "
    "cells. The check's decision tree gives pure probabilities, so every bin "
    "holds labels that agree; with label_floor such a bin predicts 1 / (2 "
    "(N_s / B_s + 1)) of its own cell's table, which then differs between "
    "the two fits (before label_floor every such bin predicted exactly 0 or "
    "1 whatever its cell, and the check passed by that accident). "
    "test_beta_binning_integer_weight_equals_repeat* test the equivalence "
    "with partitions that do not depend on the multiplicity."
)


def expected_failed_checks(estimator):
    """The ``expected_failed_checks`` callable for ``parametrize_with_checks``."""
    if isinstance(estimator, CalibratedClassifier) and isinstance(
        estimator.calibrator, BetaBinningCalibrator
    ):
        if isinstance(estimator.estimator, DecisionTreeClassifier):
            return {
                **XFAIL.get(CalibratedClassifier, {}),
                "check_sample_weight_equivalence_on_dense_data": KD_CELLS_FLOOR,
            }
    if getattr(estimator, "directions", None) is not None:
        return {"check_sample_weight_equivalence_on_dense_data": DIRECTION_CV}
    return XFAIL.get(type(estimator), {})
