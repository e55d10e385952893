# SPDX-License-Identifier: MIT
"""How an estimator's ``random_state`` reaches the estimators inside it.

A calibrator fits clones of inner estimators: its partitioner (a learned
tree's cross-validation folds and tie-breaking, KMeans' initialisation, a
text embedder's randomized SVD), its scaler. Each has a ``random_state`` of
its own, left at ``None`` by default, which draws from NumPy's global
generator: the same calibrator seed then gave different fits.
:func:`seed_inner` gives every such ``random_state`` that is ``None`` a seed
derived from the outer one, on the clone that is about to be fitted -- a
seed set by the user is kept, the user's objects are never changed.
"""

import zlib
from numbers import Integral

import numpy as np
from sklearn.frozen import FrozenEstimator
from sklearn.utils import check_random_state


def seed_inner(estimator, random_state, *, name):
    """Set every unset ``random_state`` inside ``estimator`` from ``random_state``.

    Parameters
    ----------
    estimator : estimator
        A fresh clone (it is changed in place): the object itself and,
        recursively, every estimator among its parameters -- a Pipeline's
        steps, a CrossPartitioner's components, a ClusterPartitioner's
        clusterer. A :class:`~sklearn.frozen.FrozenEstimator` is left alone
        (it is the user's fitted object, never refitted).
    random_state : int, RandomState instance or None
        The outer estimator's. ``None``: nothing is set (nothing is
        promised). An int gives every slot a seed derived from it and the
        slot's place (``name`` and the parameter path), without drawing from
        the outer estimator's own stream. A ``RandomState`` gives one draw
        from it, only when there is a slot to seed.
    name : str
        The inner estimator's role (e.g. ``"partitioner"``), so that two
        inner estimators of one calibrator get different seeds.

    Returns
    -------
    estimator : estimator
        The same object.
    """
    if random_state is None:
        return estimator
    slots = list(_unset_random_states(estimator, name))
    if not slots:
        return estimator
    if isinstance(random_state, Integral):
        base = int(random_state)
    else:
        base = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    for obj, path in slots:
        obj.set_params(random_state=derived_seed(base, path))
    return estimator


def derived_seed(base, path):
    """An int seed in ``[0, 2**32)`` from ``base`` and a path string.

    :class:`numpy.random.SeedSequence` of ``(base, crc32(path))``: the same
    in every process (no ``hash``, which ``PYTHONHASHSEED`` salts) and
    independent of the stream that ``base`` itself seeds.
    """
    key = zlib.crc32(path.encode("utf-8"))
    return int(np.random.SeedSequence([int(base), key]).generate_state(1)[0])


def _unset_random_states(obj, path):
    """``(owner, path)`` of every ``random_state=None`` reachable in ``obj``."""
    if isinstance(obj, FrozenEstimator | type):
        return
    if isinstance(obj, list | tuple):
        for i, item in enumerate(obj):
            yield from _unset_random_states(item, f"{path}.{i}")
        return
    get_params = getattr(obj, "get_params", None)
    if not callable(get_params):
        return
    params = get_params(deep=False)
    if "random_state" in params and params["random_state"] is None:
        yield obj, path
    for key, value in params.items():
        if key != "random_state":
            yield from _unset_random_states(value, f"{path}.{key}")
