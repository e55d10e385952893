# SPDX-License-Identifier: MIT
"""One declarative fitted-state schema per estimator, and the one checker.

Every public estimator states its fitted attributes once, next to its
``_parameter_constraints``, as a class attribute ``_state_schema``: a
:class:`Schema` of ``attribute -> spec`` (required or optional, kind, dtype,
shape relation, value range and finiteness, size bound, the parameter
values under which it exists) and a few relation rules between attributes
and parameters. :func:`check_state` enforces it, and :class:`StateChecked`
runs it in ``__setstate__``, i.e. whenever pickle or skops rebuilds an
estimator (as scikit-learn's ``isotonic.py`` rebuilds its derived state
there): nothing of a loaded state is used before it is checked, and a
failure is one ``ValueError`` line (``io.load`` turns it into a
``ModelFileError``). Nested estimators are rebuilt, and so checked, first.

How to add an estimator (or a fitted attribute)
-----------------------------------------------
Add ``StateChecked`` to the class's bases (the calibrator and partitioner
mixins already have it) and declare, after ``_parameter_constraints``::

    _state_schema = Schema(
        n_features_in_=Int(low=1),
        classes_=CLASSES,
        coef_=Array("f", (1, 1)),
        table_=Array("f", ("n_bins_",), low=0, high=1, max_len=MAX_BINS),
        scaler_=Est([PlattScaler], when=lambda s: s["scaler"] == "platt"),
        rules=[my_relation],  # my_relation(owner, state): raise damaged(...)
    )

An attribute fit sets is declared, or the state is refused as holding a
stray key; an attribute fit may skip is ``optional=True``; one that exists
only for some parameter values takes ``when=`` (then it must be absent, or
``None``, otherwise). A shape entry is an int, ``None`` (any size), the name
of an int attribute declared before it, or a function of the state.
"""

from numbers import Integral, Real

import numpy as np

from ._validation import check_array_state, damaged

#: Keys every estimator's state may hold beyond its parameters and schema.
_COMMON_KEYS = frozenset({"_sklearn_version", "_metadata_request"})


def _resolve(bound, state):
    if callable(bound):
        return bound(state)
    if isinstance(bound, str):
        return state[bound]
    return bound


class Spec:
    """One attribute: ``optional`` (fit may skip it), ``none`` (``None``
    stands for it), ``when`` (a function of the state: it exists only where
    true; elsewhere it must be absent or ``None``, and with ``kept`` it is
    kept as ``None``)."""

    def __init__(self, *, optional=False, none=False, when=None, kept=False):
        self.optional, self.none, self.when = optional, none, when
        self.kept = kept

    def check(self, owner, name, value, state):  # pragma: no cover - abstract
        raise NotImplementedError


class Int(Spec):
    """A Python/NumPy integer (not a bool) in ``[low, high]``."""

    def __init__(self, low=0, high=None, **kw):
        super().__init__(**kw)
        self.low, self.high = low, high

    def check(self, owner, name, value, state):
        if isinstance(value, bool | np.bool_) or not isinstance(value, Integral):
            raise damaged(owner, f"{name} is not an integer")
        value, low = int(value), _resolve(self.low, state)
        high = _resolve(self.high, state)
        if value < low or (high is not None and value > high):
            raise damaged(owner, f"{name} = {value} lies outside {low} .. {high}")
        return value


class Float(Spec):
    """A finite real number (not a bool) in ``[low, high]`` (``strict``:
    ``low`` excluded)."""

    def __init__(self, low=None, high=None, *, strict=False, what=None, **kw):
        super().__init__(**kw)
        self.low, self.high, self.strict, self.what = low, high, strict, what

    def check(self, owner, name, value, state):
        if (
            isinstance(value, bool | np.bool_)
            or not isinstance(value, Real)
            or not np.isfinite(value)
            or (self.low is not None and value < self.low)
            or (self.strict and value == self.low)
            or (self.high is not None and value > self.high)
        ):
            what = self.what or f"a finite number in [{self.low}, {self.high}]"
            raise damaged(owner, f"{name} is not {what}")
        return float(value)


class Bool(Spec):
    def check(self, owner, name, value, state):
        if not isinstance(value, bool | np.bool_):
            raise damaged(owner, f"{name} is not a bool")
        return bool(value)


class Str(Spec):
    """One of ``options`` (any string when ``None``)."""

    def __init__(self, options=None, **kw):
        super().__init__(**kw)
        self.options = options

    def check(self, owner, name, value, state):
        if not isinstance(value, str) or (
            self.options is not None and value not in self.options
        ):
            want = "a string" if self.options is None else sorted(self.options)
            raise damaged(owner, f"{name} is not {want}")
        return value


class Array(Spec):
    """An ndarray of dtype kind ``kind`` (``"i"``, ``"f"``, ``"if"``, or
    ``"key"``: numbers, strings or objects of cell keys), shape ``shape``,
    finite floats unless ``finite=False``, values in ``[low, high]``, at
    most ``max_len`` entries along the first axis (checked before anything
    else is read of it)."""

    def __init__(
        self, kind, shape, *, finite=True, low=None, high=None, max_len=None, **kw
    ):
        super().__init__(**kw)
        self.kind, self.shape, self.finite = kind, shape, finite
        self.low, self.high, self.max_len = low, high, max_len

    def check(self, owner, name, value, state):
        shape = tuple(_resolve(s, state) for s in self.shape)
        if self.max_len is not None and isinstance(value, np.ndarray) and value.ndim:
            limit = _resolve(self.max_len, state)
            if value.shape[0] > limit:
                raise damaged(
                    owner,
                    f"{name} has {value.shape[0]} entries, more than the {limit} "
                    "a fit produces",
                )
        if self.kind == "key":
            if not isinstance(value, np.ndarray) or value.dtype.kind not in "biufUO":
                raise damaged(owner, f"{name} is not an array of keys")
            pairs = zip(value.shape, shape, strict=False)
            if value.ndim != len(shape) or any(
                w is not None and g != w for g, w in pairs
            ):
                raise damaged(owner, f"{name} has shape {value.shape}")
            return value
        out = check_array_state(
            owner, name, value, self.kind, shape, finite=self.finite
        )
        if out.size and (
            (self.low is not None and np.nanmin(out) < self.low)
            or (self.high is not None and np.nanmax(out) > self.high)
        ):
            raise damaged(owner, f"{name} lies outside [{self.low}, {self.high}]")
        return out


class Est(Spec):
    """A nested estimator: an instance of ``types`` (classes, or names of
    this package's classes), or any object with all of ``methods``. Its own
    state was checked when it was rebuilt."""

    def __init__(self, types=(), methods=(), **kw):
        super().__init__(**kw)
        self.types, self.methods = tuple(types), tuple(methods)

    def check(self, owner, name, value, state):
        names = {t for t in self.types if isinstance(t, str)}
        classes = tuple(t for t in self.types if not isinstance(t, str))
        ok = (classes and isinstance(value, classes)) or type(value).__name__ in names
        if not self.types:
            ok = all(callable(getattr(value, m, None)) for m in self.methods)
        if not ok:
            want = ", ".join(sorted(names | {c.__name__ for c in classes})) or (
                "an estimator with " + ", ".join(self.methods)
            )
            raise damaged(owner, f"{name} is a {type(value).__name__}, not {want}")
        return value


class ListOf(Spec):
    """A list of ``min_len .. max_len`` items, each checked by ``item``."""

    def __init__(self, item, *, min_len=0, max_len=None, **kw):
        super().__init__(**kw)
        self.item, self.min_len, self.max_len = item, min_len, max_len

    def check(self, owner, name, value, state):
        high = _resolve(self.max_len, state)
        if not isinstance(value, list) or not (
            self.min_len <= len(value) <= (len(value) if high is None else high)
        ):
            raise damaged(
                owner, f"{name} is not a list of {self.min_len} .. {high} items"
            )
        return [
            self.item.check(owner, f"{name}[{k}]", v, state)
            for k, v in enumerate(value)
        ]


class Custom(Spec):
    """Checked by ``func(owner, name, value, state)``, which returns the
    checked value (a deep structure with its own checker: a tree's node
    arrays, a binning table)."""

    def __init__(self, func, **kw):
        super().__init__(**kw)
        self.func = func

    def check(self, owner, name, value, state):
        return self.func(owner, name, value, state)


class Schema:
    """``attribute -> Spec`` in checking order (a shape may name an attribute
    declared before it), and ``rules``: functions ``rule(owner, state)``
    relating attributes and parameters, run after every attribute passed."""

    def __init__(self, rules=(), **attrs):
        self.attrs, self.rules = attrs, tuple(rules)


def _check_params(cls, owner, state):
    names = cls._get_param_names()
    missing = [p for p in names if p not in state]
    if missing:
        raise damaged(owner, f"parameter(s) {missing} missing")
    constraints = getattr(cls, "_parameter_constraints", None)
    if not constraints:
        return names
    from ._compat import InvalidParameterError, validate_parameter_constraints

    try:
        validate_parameter_constraints(
            constraints, {p: state[p] for p in names}, caller_name=owner
        )
    except InvalidParameterError as exc:
        raise damaged(owner, " ".join(str(exc).split())) from None
    return names


def check_state(cls, state):
    """Check ``state`` (a ``__dict__`` being rebuilt) against ``cls``'s
    schema: no stray key, every parameter present and valid, and -- once
    any fitted attribute is present -- every required one, each as its spec
    says, then the relation rules. Checked values replace the stored ones.
    A class without a schema is not checked."""
    schema = getattr(cls, "_state_schema", None)
    if schema is None:
        return state
    owner = cls.__name__
    if not isinstance(state, dict):
        raise damaged(owner, "the state is not a dict")
    params = _check_params(cls, owner, state)
    stray = sorted(set(state) - set(params) - set(schema.attrs) - _COMMON_KEYS)
    if stray:
        raise damaged(owner, f"stray key(s) {stray} that fit never sets")
    if not any(k in state for k in schema.attrs):
        return state  # not fitted
    for name, spec in schema.attrs.items():
        wanted = spec.when is None or spec.when(state)
        value = state.get(name)
        if not wanted:
            if value is not None:
                raise damaged(owner, f"{name} is set, but the parameters use none")
            if spec.kept and name not in state:
                raise damaged(owner, f"{name} is missing")  # fit sets it to None
            continue
        if name not in state:
            if spec.optional:
                continue
            raise damaged(owner, f"{name} is missing")
        if value is None and spec.none:
            continue
        state[name] = spec.check(owner, name, value, state)
    for rule in schema.rules:
        rule(owner, state)
    return state


class StateChecked:
    """``__setstate__`` that runs :func:`check_state` before the state is
    used (pickle, skops, ``copy.deepcopy``)."""

    _state_schema = None

    def __setstate__(self, state):
        check_state(type(self), state)
        super().__setstate__(state)


# -- shared specs --------------------------------------------------------------

#: The two labels of a binary calibrator (sorted and distinct: a rule).
CLASSES = Array("key", (2,))


def _sorted_classes(owner, state):
    classes = state.get("classes_")
    if isinstance(classes, np.ndarray) and classes.ndim == 1:
        try:
            ok = bool(np.all(classes[1:] > classes[:-1]))
        except TypeError:
            ok = False
        if not ok:
            raise damaged(owner, "classes_ are not sorted distinct labels")


def _feature_names(owner, state):
    names = state.get("feature_names_in_")
    if names is not None and names.shape != (state.get("n_features_in_"),):
        raise damaged(owner, "feature_names_in_ is not one name per feature")


#: ``n_features_in_`` / ``feature_names_in_`` as scikit-learn sets them.
FEATURES = {
    "n_features_in_": Int(low=1),
    "feature_names_in_": Array("key", (None,), optional=True),
}
#: The rules that go with :data:`FEATURES` and :data:`CLASSES`.
COMMON_RULES = (_feature_names, _sorted_classes)


def check_composite(obj, _depth=0):
    """Check the scikit-learn composites around and inside a loaded model:
    a ``Pipeline``'s ``steps`` are ``(name, estimator)`` pairs with unique
    names, each step but the last able to ``transform``; a
    ``FrozenEstimator`` wraps an estimator. Recurses into both and into
    this package's partitioners (a reversed or string ``steps`` failed at
    predict as "has no attribute 'predict_proba'")."""
    from sklearn.frozen import FrozenEstimator
    from sklearn.pipeline import Pipeline

    if _depth > 20:
        raise damaged(type(obj).__name__, "estimators nested too deep")
    owner = type(obj).__name__
    if isinstance(obj, Pipeline):
        steps = getattr(obj, "steps", None)
        if (
            not isinstance(steps, list)
            or not steps
            or not all(isinstance(s, tuple) and len(s) == 2 for s in steps)
            or not all(isinstance(name, str) for name, _ in steps)
            or len({name for name, _ in steps}) != len(steps)
        ):
            raise damaged(owner, "steps is not a list of (name, estimator) pairs")
        for k, (name, step) in enumerate(steps):
            last = k == len(steps) - 1
            if step in (None, "passthrough"):
                continue
            if not hasattr(step, "fit") or (
                not last and not callable(getattr(step, "transform", None))
            ):
                raise damaged(owner, f"step {name!r} cannot be a step here")
            check_composite(step, _depth + 1)
    elif isinstance(obj, FrozenEstimator):
        inner = getattr(obj, "estimator", None)
        if not hasattr(inner, "fit"):
            raise damaged(owner, "estimator is not an estimator")
        check_composite(inner, _depth + 1)
    for key in ("partitioner_", "scaler_", "calibrator", "partitioner"):
        inner = vars(obj).get(key) if hasattr(obj, "__dict__") else None
        if isinstance(inner, Pipeline | FrozenEstimator):
            check_composite(inner, _depth + 1)


def only_when(when, specs, exclude=()):
    """Copies of ``specs`` (a dict of them) that exist only where ``when``."""
    import copy

    out = {}
    for name, spec in specs.items():
        if name not in exclude:
            out[name] = copy.copy(spec)
            out[name].when = when
    return out


def check_column(owner, name, col, state):
    """A column parameter names a fitted column: a position below
    ``n_features_in_`` or a name of ``feature_names_in_``."""
    n, names = state["n_features_in_"], state.get("feature_names_in_")
    if isinstance(col, bool | np.bool_) or not isinstance(col, str | Integral):
        raise damaged(owner, f"{name}={col!r} is neither a position nor a name")
    if isinstance(col, str):
        if names is None or col not in list(names):
            raise damaged(owner, f"{name}={col!r} is not a fitted column")
    elif isinstance(col, Integral) and not -n <= col < n:
        raise damaged(owner, f"{name}={col!r} is not one of the {n} fitted columns")


def column_rule(param):
    """A rule: the column parameter ``param`` names a fitted column."""

    def rule(owner, state):
        check_column(owner, param, state[param], state)

    return rule


__all__ = [
    "CLASSES",
    "COMMON_RULES",
    "FEATURES",
    "Array",
    "Bool",
    "Custom",
    "Est",
    "Float",
    "Int",
    "ListOf",
    "Schema",
    "Spec",
    "StateChecked",
    "Str",
    "check_column",
    "check_composite",
    "column_rule",
    "check_state",
    "only_when",
]
