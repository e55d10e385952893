# SPDX-License-Identifier: MIT
"""The package's own layout rules, checked on its source.

- only ``_compat.py`` imports scikit-learn's private names (a name starting
  with ``_``, or anything from a private module such as
  ``sklearn.utils._param_validation``): one place to adapt when scikit-learn
  changes them;
- no library module chooses a matplotlib backend;
- no calibrator module imports another calibrator's module: shared glue lives
  in ``_base.py``, ``_validation.py`` and ``_kernels/``.
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


#: Modules that define a calibrator (the classes users fit on labels).
CALIBRATOR_MODULES = {
    "sklearn_betacal._temperature",
    "sklearn_betacal._platt",
    "sklearn_betacal._umd",
    "sklearn_betacal._scaling_binning",
    "sklearn_betacal._beta_binning",
    "sklearn_betacal._hierarchical",
    "sklearn_betacal._scaling_beta_binning",
}


def _imported_modules(path):
    """Absolute names of the package modules that ``path`` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _name(path).rsplit(".", 1)[0]
    if path.name == "__init__.py":
        package = _name(path).removesuffix(".__init__")
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            mod = ".".join(base + ([node.module] if node.module else []))
            out.add(mod)
            for alias in node.names:
                out.add(f"{mod}.{alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_calibrators_share_glue_not_each_others_modules():
    """A calibrator module reaches another calibrator only by its public class.

    Shared helpers live in ``_base``, ``_validation`` and ``_kernels``; what a
    calibrator module may take from another calibrator's module is that
    module's public estimator (S-BB extends BB and composes the hierarchical
    scaler, as Alg. 3 does), never a private helper.
    """
    public = set(sklearn_betacal.__all__)
    offenders = []
    for path in _modules():
        name = _name(path)
        if name not in CALIBRATOR_MODULES:
            continue
        for target in _imported_modules(path):
            module, _, attr = target.rpartition(".")
            if module in CALIBRATOR_MODULES - {name} and attr not in public:
                offenders.append(f"{name} -> {target}")
    assert offenders == []
