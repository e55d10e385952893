# SPDX-License-Identifier: MIT
"""Loading a model file imports only what the file needs (issue 39, item 5).

skops computes its trust list of scikit-learn estimators when it is imported,
with ``all_estimators()``, which imports every scikit-learn module (and torch,
where installed). :mod:`sklearn_betacal.io` imports skops without it and
decides the scikit-learn types a file names one at a time; skops' own
default trust stays as it was for direct callers.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import sklearn_betacal as sb
from sklearn_betacal import io as model_io

pytest.importorskip("skops.io")

#: modules that only scikit-learn's all_estimators() walk imports here
_WALK_ONLY = ["sklearn.gaussian_process", "sklearn.semi_supervised", "torch"]


def _fresh(code, tmp_path):
    """Run ``code`` in a fresh interpreter; its stdout parsed as JSON."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(sb.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _models(tmp_path):
    rng = np.random.default_rng(0)
    h = rng.uniform(size=400)
    y = (rng.uniform(size=400) < h**2).astype(int)
    temp = sb.TemperatureScaler().fit(h, y)
    X = np.column_stack([h, rng.normal(size=400)])
    lr = LogisticRegression().fit(X, y)
    pipe = make_pipeline(FrozenEstimator(lr))
    model_io.dump(temp, tmp_path / "temp.skops")
    model_io.dump(pipe, tmp_path / "pipe.skops")
    return h, X, temp, lr


def test_load_imports_neither_every_sklearn_module_nor_torch(tmp_path):
    h, X, temp, lr = _models(tmp_path)
    got = _fresh(
        f"""
        import json, sys
        import numpy as np
        from sklearn_betacal import io
        temp = io.load("temp.skops")
        pipe = io.load("pipe.skops")
        h = np.linspace(0.01, 0.99, 5)
        X = np.column_stack([h, h])
        print(json.dumps({{
            "imported": [m for m in {_WALK_ONLY!r} if m in sys.modules],
            "temp": temp.predict_proba(h)[:, 1].tolist(),
            "pipe": pipe.predict_proba(X)[:, 1].tolist(),
        }}))
        """,
        tmp_path,
    )
    assert got["imported"] == []
    grid = np.linspace(0.01, 0.99, 5)
    np.testing.assert_array_equal(got["temp"], temp.predict_proba(grid)[:, 1])
    np.testing.assert_array_equal(
        got["pipe"], lr.predict_proba(np.column_stack([grid, grid]))[:, 1]
    )


def test_skops_keeps_its_default_trust_after_a_fast_load(tmp_path):
    # after io.load, skops called directly trusts scikit-learn's estimators
    # as it always does (its list is computed when first needed)
    _models(tmp_path)
    got = _fresh(
        """
        import json
        from sklearn_betacal import io
        io.load("temp.skops")
        import skops.io as sio
        from skops.io import _trusted_types
        print(json.dumps({
            "untrusted": sio.get_untrusted_types(file="pipe.skops"),
            "n_default": len(_trusted_types.SKLEARN_ESTIMATOR_TYPE_NAMES),
            "pipe": type(sio.load("pipe.skops")).__name__,
        }))
        """,
        tmp_path,
    )
    assert got["untrusted"] == []
    assert got["n_default"] > 100  # scikit-learn has ~200 public estimators
    assert got["pipe"] == "Pipeline"


def test_one_type_check_agrees_with_skops_default_list():
    # every type the one-at-a-time check accepts is in skops' own list (the
    # check never trusts more), and it places nearly all of them without it
    from sklearn.utils import all_estimators

    names = model_io._sklearn_estimator_names(all_estimators())
    placed = [n for n in names if model_io._is_default_estimator(n)]
    assert len(placed) >= 0.9 * len(names)
    not_estimators = [
        "sklearn.tree._tree.Tree",
        "sklearn.base.BaseEstimator",
        "sklearn.utils._bunch.Bunch",
        "sklearn.utils.Bunch",
        "sklearn.linear_model._base.LinearModel",  # abstract
        "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
        "sklearn.utils._testing.MinimalClassifier",  # a private module only
        "sklearn.tests.test_base.T",
        "os.system",
        "sklearn.no_such_module.Thing",
        "sklearn.pipeline.__class__",
    ]
    for name in not_estimators:
        assert not model_io._is_default_estimator(name), name
        assert name not in names


def test_untrusted_sklearn_type_still_refused(tmp_path):
    # a scikit-learn type outside skops' defaults is refused as before
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] > 0).astype(int)
    hgb = HistGradientBoostingClassifier(max_iter=3).fit(X, y)
    with pytest.warns(UserWarning, match="TreePredictor"):
        model_io.dump(hgb, tmp_path / "hgb.skops")
    with pytest.raises(model_io.ModelFileError, match="TreePredictor"):
        model_io.load(tmp_path / "hgb.skops")
