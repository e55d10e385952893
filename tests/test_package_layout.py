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
  inner estimators come from ``_defaults.py``;
- no import cycle among the package's modules, counting the imports inside
  functions (hoisting one must never break ``import sklearn_betacal``);
- nothing under ``_partition/`` or ``_kernels/`` imports a calibrator or
  their glue (no upward arrow); the kernels import only kernels and the
  ground floor ``_cells.py`` nothing of the package;
- importing a calibrator of one confidence (PlattScaler, ...) loads no
  partitioner and not ``sklearn.tree``.
"""

import ast
import os
import subprocess
import sys
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


# ------------------------------------------------------------ import graph
#: The modules of the package by dotted name (a package by its own name).
def _module_names():
    out = {}
    for path in _modules():
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _import_edges(tree, module, modules, *, is_package=False):
    """The package modules that importing ``module`` runs, from its code.

    Every import statement counts, also the ones inside functions. A name
    imported from a module (``from .m import a``) is an edge to ``m``, or to
    ``m.a`` when that is a module; a public name of the top-level package
    (resolved lazily there) is an edge to the module that defines it.
    Importing ``a.b.c`` runs ``a.b`` first: an edge to every parent package
    of a target, except the importer's own packages (already running).
    """
    own = module if is_package else module.rsplit(".", 1)[0]
    # _import_targets resolves relative imports from the importer's package
    targets = _import_targets(tree, module + ".__init__" if is_package else module)
    parts = own.split(".")
    ancestors = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    edges = set()
    for target in targets:
        hit = target if target in modules else _defining_module(target)
        if hit not in modules:
            hit = target.rpartition(".")[0]  # a name defined in a module
            if hit not in modules:
                continue  # not the package's (numpy, sklearn, ...)
        hit_parts = hit.split(".")
        chain = [".".join(hit_parts[:i]) for i in range(2, len(hit_parts) + 1)]
        edges.update(m for m in chain if m in modules and m not in ancestors)
    edges.discard(module)
    return edges


def _import_graph():
    modules = _module_names()
    return {
        name: _import_edges(
            ast.parse(path.read_text(encoding="utf-8")),
            name,
            modules,
            is_package=path.name == "__init__.py",
        )
        for name, path in modules.items()
    }


def _cycles(graph):
    """The strongly connected components of more than one module (or a
    module importing itself), each as a sorted list: empty when acyclic."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = iter(range(len(graph) + 1))

    def visit(v):  # Tarjan; the package is small enough for recursion
        index[v] = low[v] = next(counter)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_import_cycle_counting_function_level_imports():
    cycles = _cycles(_import_graph())
    assert cycles == [], (
        "these modules import each other (a function-level import counts: "
        "hoisting it would break `import sklearn_betacal`); move what they "
        f"share down into a module both import: {cycles}"
    )


def test_cycle_check_catches_a_lazy_cycle():
    # the check above must be able to fail: the cycle that issue 24 found,
    # held together by one import inside a function
    sources = {
        "sklearn_betacal._base": "from ._partition import KDTreePartitioner\n",
        "sklearn_betacal._partition": "from ._tree import CalibrationTreePartitioner\n",
        "sklearn_betacal._partition._tree": (
            "from .._kernels._scaling import to_logit\n"
            "def f():\n"
            "    from .._platt import PlattScaler\n"
        ),
        "sklearn_betacal._platt": "from ._base import _BinaryCalibratorMixin\n",
        "sklearn_betacal._kernels._scaling": "import math\n",
    }
    modules = {**dict.fromkeys(sources), "sklearn_betacal._kernels": None}
    graph = {
        name: _import_edges(
            ast.parse(code),
            name,
            modules,
            is_package=name == "sklearn_betacal._partition",
        )
        for name, code in sources.items()
    }
    assert graph["sklearn_betacal._partition._tree"] == {
        "sklearn_betacal._kernels",
        "sklearn_betacal._kernels._scaling",
        "sklearn_betacal._platt",
    }
    assert _cycles(graph) == [
        [
            "sklearn_betacal._base",
            "sklearn_betacal._partition",
            "sklearn_betacal._partition._tree",
            "sklearn_betacal._platt",
        ]
    ]
    del graph["sklearn_betacal._partition._tree"]
    assert _cycles(graph) == []


#: The calibrators and the estimator glue above the partitions: partitioners
#: and kernels are below them and never import them.
UPPER_MODULES = CALIBRATOR_MODULES | {
    "sklearn_betacal._base",
    "sklearn_betacal._group_binning",
    "sklearn_betacal._defaults",
}


def test_partitioners_and_kernels_import_no_calibrator():
    graph = _import_graph()
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.startswith(("sklearn_betacal._partition", "sklearn_betacal._kernels"))
        for target in targets & UPPER_MODULES
    )
    assert upward == [], (
        "a partitioner or a kernel imports a calibrator (or the calibrators' "
        "glue); what both need belongs in a ground-floor module "
        f"(_cells, _validation, _kernels): {upward}"
    )


KERNELS = "sklearn_betacal._kernels"


def test_kernels_and_the_ground_floor_import_only_below_themselves():
    graph = _import_graph()
    kernels = {
        module: sorted(
            t for t in targets if not t.startswith("sklearn_betacal._kernels")
        )
        for module, targets in graph.items()
        if module.startswith(KERNELS)
    }
    assert {m: t for m, t in kernels.items() if t} == {}
    assert graph["sklearn_betacal._cells"] == set()


def _loaded_after(imports):
    """Partitioner and ``sklearn.tree`` modules loaded by ``imports`` (a
    line of Python) in a fresh interpreter."""
    code = (
        f"import sys\n{imports}\n"
        "print(' '.join(m for m in sys.modules if m.startswith("
        "('sklearn.tree', 'sklearn_betacal._partition'))))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    run = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return set(run.stdout.split())


def test_importing_a_confidence_calibrator_loads_no_partitioner():
    # PlattScaler (and the other calibrators of one confidence) must not pull
    # the partitioners or scikit-learn's tree
    assert (
        _loaded_after(
            "from sklearn_betacal import PlattScaler, TemperatureScaler, UMDBinner, "
            "ScalingBinningCalibrator"
        )
        == set()
    )
    # and the check sees a partitioner when one is imported
    assert "sklearn_betacal._partition" in _loaded_after(
        "from sklearn_betacal import KDTreePartitioner"
    )
