# SPDX-License-Identifier: MIT
"""Tampered fitted state: refused with one line, or the same answers.

A generator: every public estimator is fitted small, then every value of
its stored state (parameters, fitted arrays and scalars, nested dicts,
lists and estimators) is mutated -- dropped, NaN, infinite, negative, huge,
of a wrong dtype, of a wrong shape, swapped with another estimator's value
of that name -- and the estimator is rebuilt as pickle and skops rebuild it
(``__setstate__``, where the fitted-state schema runs, then the composite
check ``io.load`` adds). The rebuilt estimator must be refused with a
one-line ``ValueError``, or answer byte-identically:

- a structural change (dropped, NaN, infinite, wrong dtype or shape, a
  stray key, another estimator's value) must never change an answer;
- a changed number that stays valid (negative, huge) may be a model that
  predicts what it holds -- only a file's digest tells it from the fitted
  one (tested through real files below) -- but it must answer probabilities
  in ``[0, 1]`` without an error.
"""

import copy
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

import sklearn_betacal as sb
from sklearn_betacal import io as model_io
from sklearn_betacal._state import check_composite

sio = pytest.importorskip("skops.io")


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    h = rng.uniform(0.02, 0.98, size=n)
    emb = rng.normal(size=(n, 2))
    group = rng.integers(0, 3, size=n)
    y = (rng.uniform(size=n) < h ** np.where(emb[:, 0] > 0, 2.0, 0.7)).astype(int)
    return h, emb, group, y


def _fitted():
    """(name, fitted estimator, X, answer(est, X)) of every public estimator
    and every kind of fitted state (learned tree, cv ensemble, boosted
    scaler, composites)."""
    h, emb, group, y = _data()
    X = np.column_stack([h, emb])
    Xg = np.column_stack([h, group])
    kd = sb.KDTreePartitioner(max_depth=2)
    frame = pd.DataFrame({"conf": np.round(100 * h, 1), "g": group})

    def proba(est, X):
        return est.predict_proba(X)

    def cells(est, X):
        return est.transform(X)

    models = [
        ("temperature", sb.TemperatureScaler(), h, proba),
        ("temperature-matrix", sb.TemperatureScaler(input="logit"), emb, proba),
        ("platt", sb.PlattScaler(), h, proba),
        ("umd", sb.UMDBinner(points_per_bin=40, random_state=0), h, proba),
        ("s-b", sb.ScalingBinningCalibrator(n_bins=5, random_state=0), h, proba),
        ("bb-kd", sb.BetaBinningCalibrator(kd, points_per_bin=30, random_state=0),
         X, proba),
        ("hls", sb.HierarchicalLogisticScaler(sb.GroupColumnPartitioner()), Xg,
         proba),
        ("s-bb", sb.ScalingBetaBinningCalibrator(kd, scaler="pooled",
                                                 points_per_bin=30, random_state=0),
         X, proba),
        ("hs-bb", sb.ScalingBetaBinningCalibrator(kd, points_per_bin=30,
                                                  random_state=0), X, proba),
        ("s-bb-features", sb.ScalingBetaBinningCalibrator(
            kd, scaler="features", points_per_bin=30, random_state=0), X, proba),
        ("s-bb-cv", sb.ScalingBetaBinningCalibrator(
            sb.KDTreePartitioner(max_depth=1), scaler="pooled", cv=2,
            points_per_bin=30, random_state=0), X, proba),
        ("kd-pca", sb.KDTreePartitioner(max_depth=2, split_axis="pca"), emb, cells),
        ("learned-default", sb.CalibrationTreePartitioner(
            min_samples_leaf=20, split_alpha=0.5, random_state=0), emb, cells),
        ("learned-tree", sb.CalibrationTreePartitioner(
            max_depth=2, min_samples_leaf=40, split_alpha=None,
            random_state=0), emb, cells),
        ("cluster", sb.ClusterPartitioner(random_state=0), emb, cells),
        ("cross", sb.CrossPartitioner([
            ("kd", sb.KDTreePartitioner(max_depth=1), [0]),
            ("group", sb.GroupColumnPartitioner(), [2])]),
         np.column_stack([emb, group]), cells),
        ("reader-pipeline", Pipeline([
            ("read", sb.ConfidenceReader("conf", confidence_format="percent")),
            ("calibrate", sb.PlattScaler())]), frame[["conf"]], proba),
        ("calibrated-classifier", sb.CalibratedClassifier(
            LogisticRegression(), sb.PlattScaler(), cv=2), emb, proba),
    ]  # fmt: skip
    out = []
    for name, est, Xf, answer in models:
        if answer is cells and name.startswith("learned"):
            est.fit(Xf, y, confidence=h)
        else:
            est.fit(Xf, y)
        out.append((name, est, Xf, answer))
    return out


MODELS = _fitted()
_OURS = ("sklearn_betacal.", "sklearn.pipeline", "sklearn.frozen")


def _is_node(value):
    return hasattr(value, "__dict__") and type(value).__module__.startswith(_OURS)


def _leaves(value, path=()):
    """``(path, value)`` of every stored value under ``value``: a path step
    is ``("attr", name)``, ``("key", key)`` or ``("item", index)``."""
    if _is_node(value):
        for key, inner in vars(value).items():
            if key != "_sklearn_version":
                yield path + (("attr", key),), inner
                yield from _leaves(inner, path + (("attr", key),))
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield path + (("key", key),), inner
            yield from _leaves(inner, path + (("key", key),))
    elif isinstance(value, list | tuple):
        # the items of a long list (a boosting's trees) share one schema:
        # the first three stand for all
        for k, inner in enumerate(value[:3]):
            yield path + (("item", k),), inner
            yield from _leaves(inner, path + (("item", k),))


def _get(obj, step):
    kind, key = step
    return vars(obj)[key] if kind == "attr" else obj[key]


def _set(obj, path, value, drop=False):
    """``obj`` with the value at ``path`` replaced (tuples rebuilt)."""
    *head, (kind, key) = path
    parent = obj
    chain = []
    for step in head:
        chain.append((parent, step))
        parent = _get(parent, step)
    if isinstance(parent, tuple):
        items = list(parent)
        if drop:
            del items[key]
        else:
            items[key] = value
        new = tuple(items)
        grand, step = chain[-1]
        return _set(obj, head, new)
    target = vars(parent) if kind == "attr" else parent
    if drop:
        del target[key]
    else:
        target[key] = value
    return obj


def _mutations(value):
    """``(kind, new value)``: ``kind`` "structural" or "value"."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and value.size:
        out = []
        for kind, v in (("structural", np.nan), ("structural", np.inf),
                        ("value", -7), ("value", 2**40)):  # fmt: skip
            if value.dtype.kind in "biu" and not np.isfinite(v):
                continue
            a = value.copy()
            try:
                a.flat[0] = v
            except (OverflowError, ValueError):  # not representable: skip
                continue
            out.append((kind, a))
        out.append(("structural", value.astype(str)))
        other = "f" if value.dtype.kind in "biu" else "i"
        out.append(("structural", value.astype(other)))
        out.append(("structural", np.concatenate([value.ravel(), value.ravel()[:1]])))
        out.append(("structural", value[..., None]))
        return out
    if isinstance(value, bool | np.bool_):
        return [("structural", "yes"), ("structural", 2)]
    if isinstance(value, int | np.integer):
        return [("value", -int(value) - 7), ("value", 2**40), ("structural", 0.5),
                ("structural", str(value))]  # fmt: skip
    if isinstance(value, float | np.floating):
        return [("structural", np.nan), ("structural", np.inf), ("value", -abs(value)),
                ("value", 1e300), ("structural", "x")]  # fmt: skip
    if isinstance(value, str):
        return [("structural", value + "_x"), ("structural", 0)]
    if isinstance(value, list):
        return [("structural", []), ("structural", "x")]
    return []


def _rebuilt(est):
    """``est`` rebuilt as a model file rebuilds it (``__setstate__`` of each
    object, then the composite check of ``io.load``)."""
    out = pickle.loads(pickle.dumps(est))
    check_composite(out)
    return out


#: Stored values whose change of dtype is another valid fit (no check can
#: tell it from the fitted one: a file's digest does).
VALID_ALTERNATIVES = {
    # group keys may be of any type: strings are a fit on a text column
    "groups_": "GroupColumnPartitioner's group keys",
    "cluster_labels_": "a clusterer's labels (any sortable type)",
    "classes_": "labels of any type",
}


def _refused_or_same(name, est, X, answer, path, kind, mutate):
    want = answer(est, X)
    broken = mutate(_clone_fitted(est))
    try:
        loaded = _rebuilt(broken)
    except ValueError as exc:
        assert "\n" not in str(exc), str(exc)
        return "refused"
    try:
        got = answer(loaded, X)
    except ValueError as exc:
        # another valid model may refuse this X (a width or range it does not
        # take), in one line; a structural change must be refused at load
        if kind == "value" and "\n" not in str(exc):
            return "refused"
        raise AssertionError(f"{name} {path} {kind}: loaded, then {exc!r}") from None
    except Exception as exc:  # never a traceback later
        raise AssertionError(f"{name} {path} {kind}: loaded, then {exc!r}") from None
    if np.array_equal(got, want):
        return "same"
    valid = kind == "value" or path[-1][1] in VALID_ALTERNATIVES
    assert valid, f"{name} {path}: a {kind} change moved the answers"
    assert np.all(np.isfinite(got)) and got.shape == want.shape, (name, path)
    if got.dtype.kind == "f":
        assert np.all((got >= 0) & (got <= 1)), (name, path)
    return "changed"


def _clone_fitted(est):
    """A deep copy built without ``__setstate__`` (so a broken state can be
    planted in it)."""
    from sklearn_betacal import _state

    saved = _state.StateChecked.__setstate__
    _state.StateChecked.__setstate__ = lambda self, state: self.__dict__.update(state)
    try:
        return copy.deepcopy(est)
    finally:
        _state.StateChecked.__setstate__ = saved


_OTHER = {}  # attribute name -> a value of another estimator, for swaps
for _name, _est, _, _ in MODELS:
    for _path, _value in _leaves(_est):
        if _path[-1][0] == "attr":
            _OTHER.setdefault(_path[-1][1], []).append((_name, _value))


@pytest.mark.parametrize("name,est,X,answer", MODELS, ids=[m[0] for m in MODELS])
def test_every_tampered_value_is_refused_or_answers_the_same(name, est, X, answer):
    seen = {"refused": 0, "same": 0, "changed": 0}
    failures = []
    for path, value in list(_leaves(est)):
        cases = [("structural", None, True)]  # dropped
        cases += [(kind, new, False) for kind, new in _mutations(value)]
        if path[-1][0] == "attr":
            for other, swap in _OTHER.get(path[-1][1], []):
                if other != name:
                    # another fit's value of that name: a valid model
                    cases.append(("value", swap, False))
                    break
        for kind, new, drop in cases:
            if isinstance(value, tuple) and drop:
                continue

            def mutate(clone, path=path, new=new, drop=drop):
                return _set(clone, path, new, drop=drop)

            try:
                seen[_refused_or_same(name, est, X, answer, path, kind, mutate)] += 1
            except AssertionError as exc:
                what = "drop" if drop else repr(new)[:40]
                failures.append(f"{_where(path)} <- {what}: {str(exc)[:160]}")
    assert not failures, "\n".join(failures)
    assert seen["refused"] > 0, seen


def _where(path):
    return "".join(f".{key}" if kind == "attr" else f"[{key!r}]" for kind, key in path)


# -- the findings of the issue, through real files -------------------------------

_BY_NAME = {m[0]: m for m in MODELS}


def _dumped(tmp_path, est, change):
    """``est`` with ``change(clone)`` applied, written by ``io.dump`` (which
    signs what it writes: only the schema can refuse it)."""
    clone = _clone_fitted(est)
    change(clone)
    return model_io.dump(clone, tmp_path / "m.skops")


@pytest.mark.parametrize(
    "name, change, match",
    [
        ("bb-kd", lambda e: e.partitioner_.bound_lower_.__setitem__((0, 0), np.nan),
         "NaN or infinite"),
        ("bb-kd", lambda e: e.partitioner_.bound_upper_.__setitem__((0, 0), -np.inf),
         "NaN or infinite"),
        ("bb-kd", lambda e: e.partitioner_.bound_lower_.__setitem__((0, 0), 1e9),
         "exceeds its upper"),
        ("learned-default", lambda e: e.scale_.__setitem__(slice(None), 1e-308),
         "scale_ holds a spread below"),
        ("s-bb-features", lambda e: setattr(e, "scaler", "hierarchical"),
         "_scaler_seed is set, but the parameters use none"),
        ("s-bb-cv", lambda e: setattr(e.estimators_[1], "points_per_bin", 7),
         r"estimators_\[1\] has other parameters"),
        ("bb-kd", lambda e: vars(e.partitioner_).pop("tree_"), "tree_ is missing"),
        ("bb-kd", lambda e: vars(e).pop("_tables"), "_tables is missing"),
        ("s-bb", lambda e: vars(e).pop("scaler"), r"parameter\(s\) \['scaler'\]"),
        ("s-bb-cv", lambda e: vars(e).pop("cv"), r"parameter\(s\) \['cv'\]"),
        ("s-bb-cv", lambda e: setattr(e, "estimators_", []), "estimators_"),
        ("s-bb-cv", lambda e: setattr(e, "estimators_", ["a", "b"]), "estimators_"),
        ("reader-pipeline",
         lambda e: vars(e.steps[0][1]).pop("confidence_format"),
         "confidence_format"),
        ("reader-pipeline", lambda e: setattr(e.steps[0][1], "confidence_column", 0.5),
         "confidence_column"),
        ("reader-pipeline", lambda e: setattr(e.steps[0][1], "confidence_column", "x"),
         "confidence_column"),
        ("reader-pipeline", lambda e: e.steps.reverse(), "cannot be a step"),
        ("reader-pipeline", lambda e: setattr(e, "steps", "steps"), "steps"),
        ("learned-default", lambda e: setattr(e, "n_cells_", 10**9), "n_cells_"),
        ("bb-kd", lambda e: setattr(e.partitioner_, "n_cells_", 10**9), "n_cells_"),
        ("hls", lambda e: setattr(e, "stray_", 1), "stray key"),
    ],
)  # fmt: skip
def test_the_issue_findings_are_refused_from_a_file(tmp_path, name, change, match):
    """Each loaded and answered differently, failed later with a traceback,
    or allocated gigabytes at load or predict."""
    est = _BY_NAME[name][1]
    path = _dumped(tmp_path, est, change)
    with pytest.raises(model_io.ModelFileError, match=match) as info:
        model_io.load(path)
    assert "\n" not in str(info.value)


def test_an_unsigned_change_of_any_member_is_refused(tmp_path):
    """A file whose arrays were rewritten (a negative bound, say: a valid
    number the schema cannot tell from the fitted one) is refused by the
    digest, after the schema found nothing."""
    import io
    import zipfile

    est = _BY_NAME["bb-kd"][1]
    good = model_io.dump(est, tmp_path / "good.skops")
    bad = tmp_path / "bad.skops"
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(bad, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith(".npy") and b"<f8" in data[:80]:
                a = np.load(io.BytesIO(data))
                if a.ndim == 2 and a.shape[1] == 2:  # a bound table
                    a = a.copy()
                    a[0, 0] -= 0.25
                    out = io.BytesIO()
                    np.save(out, a)
                    data = out.getvalue()
            zout.writestr(info, data)
    with pytest.raises(model_io.ModelFileError, match="altered after it was written"):
        model_io.load(bad)
    same = model_io.load(good)
    X = _BY_NAME["bb-kd"][2]
    assert np.array_equal(same.predict_proba(X), est.predict_proba(X))
