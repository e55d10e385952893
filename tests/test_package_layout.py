# SPDX-License-Identifier: MIT
"""The package's own layout rules, checked on its source.

- only ``_compat.py`` imports scikit-learn's private names (a name starting
  with ``_``, or anything from a private module such as
  ``sklearn.utils._param_validation``): one place to adapt when scikit-learn
  changes them;
- no library module chooses a matplotlib backend;
- no calibrator module imports another calibrator's module, not even its
  public class: shared glue lives in private bases (``_base.py``,
  ``_group_binning.py``), ``_validation.py`` and ``_kernels/``, and default
  inner estimators come from ``_defaults.py``.
"""

import ast
from pathlib import Path

import sklearn_betacal

PACKAGE = Path(sklearn_betacal.__file__).parent


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def _name(path):
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def _sklearn_private_imports(tree):
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] != "sklearn":
                continue
            private_module = any(p.startswith("_") for p in parts)
            for alias in node.names:
                if private_module or alias.name.startswith("_"):
                    found.append(f"from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "sklearn" and any(p.startswith("_") for p in parts):
                    found.append(f"import {alias.name}")
    return found


def test_only_compat_imports_sklearn_private_names():
    offenders = {}
    for path in _modules():
        if path.name == "_compat.py":
            continue
        found = _sklearn_private_imports(ast.parse(path.read_text(encoding="utf-8")))
        if found:
            offenders[_name(path)] = found
    assert offenders == {}, (
        f"import these through sklearn_betacal._compat instead: {offenders}"
    )


def test_private_import_check_catches_both_forms():
    # the check above must be able to fail
    tree = ast.parse(
        "from sklearn.base import _fit_context, clone\n"
        "from sklearn.utils._param_validation import Interval\n"
        "import sklearn.metrics._scorer\n"
        "from sklearn.base import clone\n"
    )
    assert _sklearn_private_imports(tree) == [
        "from sklearn.base import _fit_context",
        "from sklearn.utils._param_validation import Interval",
        "import sklearn.metrics._scorer",
    ]


def test_library_never_chooses_a_matplotlib_backend():
    offenders = [
        _name(path)
        for path in _modules()
        if any(
            call in path.read_text(encoding="utf-8")
            for call in ("matplotlib.use(", "switch_backend(")
        )
    ]
    assert offenders == []


#: Modules that define a calibrator (the classes users fit on labels) or the
#: meta-estimator that drives them. None of them imports another: shared
#: machinery lives in private bases (``_base``, ``_group_binning``), helpers
#: in ``_validation`` and ``_kernels``, and an estimator built from another
#: (S-B's Platt scaler, S-BB's scalers, CalibratedClassifier's default) comes
#: from the factory ``_defaults``.
CALIBRATOR_MODULES = {
    "sklearn_betacal._temperature",
    "sklearn_betacal._platt",
    "sklearn_betacal._umd",
    "sklearn_betacal._scaling_binning",
    "sklearn_betacal._beta_binning",
    "sklearn_betacal._hierarchical",
    "sklearn_betacal._scaling_beta_binning",
    "sklearn_betacal._calibrated",
}


def _import_targets(tree, module):
    """Absolute dotted names that the code of ``module`` imports.

    Every import statement counts, also the ones inside functions: ``from
    .m import a`` gives ``pkg.m`` and ``pkg.m.a``, ``from . import m`` gives
    ``pkg.m``, ``import pkg.m`` gives ``pkg.m``.
    """
    package = module.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            out.add(mod)
            out.update(f"{mod}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


def _defining_module(target):
    """The module that ``target`` lives in: a module, its parent module for a
    name in one, the defining module of a name re-exported by the package."""
    module, _, attr = target.rpartition(".")
    if module == "sklearn_betacal" and attr in sklearn_betacal.__all__:
        return getattr(getattr(sklearn_betacal, attr), "__module__", target)
    return module if module in CALIBRATOR_MODULES else target


def _calibrator_arrows(tree, module):
    """``"module -> other"`` for every other calibrator module it imports."""
    reached = {_defining_module(t) for t in _import_targets(tree, module)}
    return sorted(f"{module} -> {m}" for m in reached & CALIBRATOR_MODULES - {module})


def test_no_calibrator_module_imports_another():
    offenders = []
    for path in _modules():
        module = _name(path)
        if module in CALIBRATOR_MODULES:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            offenders += _calibrator_arrows(tree, module)
    assert offenders == [], (
        "a calibrator module imports another calibrator's module; move the "
        "shared code into a private base (_base, _group_binning) or build the "
        f"inner estimator in _defaults: {offenders}"
    )


def test_calibrator_arrow_check_catches_every_form():
    # the check above must be able to fail: top-level and lazy imports,
    # relative and absolute, of a module or of a public name
    tree = ast.parse(
        "from ._platt import PlattScaler\n"
        "from . import _umd\n"
        "import sklearn_betacal._temperature\n"
        "from ._base import resolve_n_bins\n"
        "def f():\n"
        "    from sklearn_betacal import BetaBinningCalibrator\n"
        "    from . import HierarchicalLogisticScaler, KDTreePartitioner\n"
    )
    found = _calibrator_arrows(tree, "sklearn_betacal._scaling_binning")
    assert [arrow.split(" -> ")[1] for arrow in found] == [
        "sklearn_betacal._beta_binning",
        "sklearn_betacal._hierarchical",
        "sklearn_betacal._platt",
        "sklearn_betacal._temperature",
        "sklearn_betacal._umd",
    ]


def test_calibrator_module_list_is_complete():
    # a new calibrator (any public classifier) must be added to the list
    from sklearn.base import ClassifierMixin

    classes = [getattr(sklearn_betacal, name) for name in sklearn_betacal.__all__]
    modules = {
        cls.__module__
        for cls in classes
        if isinstance(cls, type) and issubclass(cls, ClassifierMixin)
    }
    assert modules == CALIBRATOR_MODULES
