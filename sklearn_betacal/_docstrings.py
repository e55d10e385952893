# SPDX-License-Identifier: MIT
"""Parameter descriptions that several docstrings share, written once.

A docstring line that holds only ``%(name)s`` is replaced, when the module
is imported, by the block ``DOCS[name]`` indented as the placeholder (the
``docformat`` of ``scipy.stats``, MNE's ``fill_doc``): one wording per shared
parameter, so that the pages cannot drift apart. Nothing else in a docstring
is touched (a ``%`` elsewhere stays as written), and an unknown name fails
at import. Decorate with :func:`fill_doc` above every other decorator, so
that the docstring that ``help`` and Sphinx read is the filled one.
"""

import re
import textwrap

DOCS = {
    # the calibrators of one binary "is this answer correct" label
    "pos_label": """\
pos_label : label, default=None
    The class of ``y`` that the confidence is the probability of (the
    "correct" one). ``None`` means the evident one: ``True``, the greater
    number (``1`` in ``{0, 1}`` and ``{-1, 1}``, ``2`` in ``{1, 2}``), the
    word of a pair ``yes``/``no``, ``true``/``false``, ``correct``/
    ``incorrect``, ``right``/``wrong``, ``pass``/``fail`` (any case); two
    other strings take the later in sorted order with a warning that asks
    for ``pos_label``.""",
    "classes_": """\
classes_ : ndarray of shape (2,)
    The two labels of ``y``, ``[negative, positive]``: the positive class
    (``pos_label``, else the evident "correct" one) second, so that
    ``predict_proba(X)[:, 1]`` is P(correct) (``["incorrect",
    "correct"]``; sorted for numbers and bools; ``{0, 1}`` when ``y`` held
    only 0s or only 1s). :meth:`predict_proba` columns follow this order.""",
    # the binning calibrators whose bins average labels (UMD, BB)
    "label_floor": """\
label_floor : bool, default=True
    No bin predicts a probability of exactly 0 or 1: in a table of ``N``
    points and ``B`` bins, a bin whose labels all agree predicts ``1 / (2
    (N / B + 1))`` (or one minus it), about the Krichevsky-Trofimov
    estimate of its labels, instead of 0 (or 1), whose log loss is infinite
    on the first test row that disagrees. Every other bin keeps its mean
    label, bit for bit, and the distribution-free bound is unchanged (see
    Notes). ``False`` gives Alg. 4's plain means.""",
    # fit of the binning calibrators of one confidence (UMD, S-B)
    "confidence_fit_parameters": """\
X : array-like of shape (n_samples,) or (n_samples, 1)
    Confidences (see ``input``).
y : array-like of shape (n_samples,)
    Two classes of any type (1 / 0, bool, strings, ...), or soft labels
    (a judge's probability of "correct", floats in [0, 1]); the
    confidence is the probability of ``pos_label``.
sample_weight : array-like of shape (n_samples,), default=None
    Non-negative frequency weights (see Notes).""",
    # the question groups of a calibrator that splits its rows
    "groups_fit_parameter": """groups : array-like of shape (n_samples,), default=None
    The question of every row (several answers per question): the
    internal split keeps each question on one side. With metadata
    routing, request it with ``set_fit_request(groups=True)``; see
    :ref:`groups`.""",
    # the Notes of the metrics that bin by equal width
    "equal_width_values": """\
Equal-width bins hold the value passed, not the decimal it was typed
from: a float32 ``0.7`` (``0.699999988``) is below the edge ``0.7`` and
lands in ``[0.6, 0.7)``, as in :func:`sklearn.calibration.calibration_curve`.
Keep decimal confidences in float64, or round them after the cast
(``np.round(p.astype(np.float64), 6)``); see :ref:`the User Guide
<metrics>`.""",
    # the inputs of the metrics of (correctness, confidence) pairs
    "y_true": """\
y_true : array-like of shape (n_samples,)
    Correctness labels: 0/1, bool, two strings of an evident pair
    (``"yes"``/``"no"``, ``"correct"``/``"incorrect"``, ``"right"``/
    ``"wrong"``, ``"pass"``/``"fail"``, ``"true"``/``"false"``, any case),
    or any two labels with ``pos_label``.""",
    "metric_pos_label": """\
pos_label : int, float, bool or str, default=None
    The label of ``y_true`` that means a correct answer. ``None`` reads
    0/1 and bool labels as they are and an evident pair by its word; two
    other labels (``"A"``/``"B"``) need it.""",
    "y_prob": """\
y_prob : array-like of shape (n_samples,)
    Confidence that the answer is correct, in ``[0, 1]``.""",
    "sample_weight": """\
sample_weight : array-like of shape (n_samples,), default=None
    Non-negative frequency weights.""",
    # fit of the scalers (Platt, temperature)
    "scaler_sample_weight": """\
sample_weight : array-like of shape (n_samples,), default=None
    Non-negative weights; zero drops a row, an integer repeats it.""",
}
DOCS["weight_type"] = """\
weight_type : {"frequency", "sampling"}, default="frequency"
    Only changes ``sigma`` (hence the p-values). ``"frequency"``: a row
    of weight ``m`` stands for ``m`` answers with this confidence and
    label (integer weights equal repeated rows, as everywhere in this
    library); the null variance is ``sum_i w_i p_i (1 - p_i) / W**2``.
    ``"sampling"``: a row is one answer that represents ``w_i`` others
    (survey or importance weights); the variance is ``sum_i w_i**2 p_i
    (1 - p_i) / W**2``, which does not change when all weights are scaled
    and is what ``mcgrad`` computes."""


def _up_to_returns(parameters):
    """A method's ``Parameters`` section, then the ``Returns`` heading: the
    method's docstring goes on with its own return value."""
    return f"Parameters\n----------\n{parameters}\n\nReturns\n-------"


# a partitioner's apply and transform, up to their own Returns entry
DOCS["partition_apply"] = _up_to_returns(
    """\
X : array-like of shape (n_samples, n_features)
    Partition features, same columns as in ``fit``."""
)

# the bounds of sklearn_betacal.bounds and their inverses
DOCS["bound_level"] = """\
alpha : float, default=0.1
    Failure probability: the guarantee holds with probability at least
    ``1 - alpha``. See the module notes for the paper's Figure 2 alpha.
nu : float, default=0.0
    Label misspecification (Def. 3.2); 0 for true labels."""
DOCS["bound_target"] = """\
epsilon : float
    Target bound, ``> nu``.
n_samples : int
    ``N``, the number of calibration points."""

# the partitioners' record of their input (Attributes)
DOCS["partition_features_in_"] = """\
n_features_in_ : int
    Number of features seen during fit.
feature_names_in_ : ndarray of shape (`n_features_in_`,)
    Names of features seen during fit, when ``X`` has string column names."""

# predict_proba / predict / apply of the calibrators, up to their Returns entry
DOCS["calibrator_X"] = _up_to_returns(
    """\
X : array-like
    Same columns as in ``fit``."""
)
DOCS["group_X"] = _up_to_returns(
    """\
X : array-like of shape (n_samples, 1 + n_partition_features)
    Same columns as in ``fit``."""
)

# predict_proba / predict / decision_function of CalibratedClassifier
DOCS["classifier_X"] = _up_to_returns(
    """\
X : array-like of shape (n_samples, n_features)
    Input of the classifier."""
)
# predict_proba / predict of TemperatureScaler (binary or multiclass input)
DOCS["temperature_X"] = _up_to_returns(
    """\
X : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, K)
    The same kind of input as in :meth:`fit`."""
)
# fit / fit_transform of TextEmbedder
DOCS["text_fit"] = _up_to_returns(
    """\
X : DataFrame, array-like of str of shape (n,) or (n, k)
    Text, one row per question(-answer pair).
y : None
    Ignored."""
)

# the displays: labels of any type, one of which means "correct"
DOCS["display_y_true"] = """\
y_true : array-like of shape (n_samples,)
    Correctness labels (0/1, bool or an evident pair such as
    ``"correct"``/``"incorrect"``), or any labels with ``pos_label``."""
DOCS["display_pos_label"] = """\
pos_label : int, float, bool or str, default=None
    The label meaning "correct"; ``None`` reads 0/1, bool and the evident
    pairs of the metrics (``"yes"``/``"no"``, ``"correct"``/
    ``"incorrect"``, ...)."""
DOCS["display_name"] = """\
name : str, default=None
    Legend name."""
DOCS["display_estimator"] = """\
estimator : fitted estimator with ``predict_proba``
    Any calibrator of this package, ``CalibratedClassifier``, or any
    scikit-learn classifier (a multiclass one is shown top-label: its
    largest probability against "the predicted class is right").
X : array-like
    Input of ``estimator.predict_proba``.
y : array-like of shape (n_samples,)
    True labels."""
# the reference of the cumulative statistics (ECCE, its test and plot)
DOCS["arrieta_ibarra"] = """\
.. [1] I. Arrieta-Ibarra, P. Gujral, J. Tannen, M. Tygert and C. Xu,
   "Metrics of calibration for probabilistic predictions", JMLR 23
   (2022)."""
DOCS["metric_inputs"] = "\n".join(
    DOCS[name] for name in ("y_true", "y_prob", "sample_weight", "metric_pos_label")
)
# the bins of the binned metrics: over all rows, or within each cell of groups
DOCS["binning"] = """\
n_bins : int, default=10
    Number of bins.
strategy : {"uniform", "quantile"}, default="uniform"
    Equal-width or equal-mass bins (see
    :func:`~sklearn_betacal.metrics.reliability_table`)."""
DOCS["cell_binning"] = """\
n_bins : int, default=10
    Number of bins within each cell.
strategy : {"uniform", "quantile"}, default="uniform"
    Equal-width or equal-mass bins within each cell; quantile edges are
    computed per cell."""

_PLACEHOLDER = re.compile(r"^([ \t]*)%\((\w+)\)s[ \t]*$", re.MULTILINE)


def fill_doc(obj):
    """Fill the ``%(name)s`` lines of ``obj.__doc__`` from :data:`DOCS`.

    ``obj`` is a class, a function or a ``classmethod`` / ``staticmethod``
    (whose function's docstring is the one that is read).
    """
    target = getattr(obj, "__func__", obj)
    doc = target.__doc__
    if doc:  # None under python -OO
        target.__doc__ = _PLACEHOLDER.sub(
            lambda m: textwrap.indent(DOCS[m.group(2)], m.group(1)), doc
        )
    return obj
