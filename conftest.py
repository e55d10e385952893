# SPDX-License-Identifier: MIT
"""Doctests of modules that need an optional extra skip without it.

``pytest --doctest-modules`` imports every module of the package; the
examples in a few docstrings use an optional extra. With only the default
``tests`` extra installed (README's test command on a fresh clone) they skip
with a reason instead of failing.
"""

import importlib.util

import pytest

# module (prefix) whose docstring examples need it -> importable name, extra
OPTIONAL_DOCTESTS = {
    "sklearn_betacal.io": ("skops", "skops"),
    "sklearn_betacal.metrics._plot": ("matplotlib", "plot"),
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if type(item).__name__ != "DoctestItem":
            continue
        for prefix, (module, extra) in OPTIONAL_DOCTESTS.items():
            if item.name.startswith(prefix + ".") and not importlib.util.find_spec(
                module
            ):
                item.add_marker(
                    pytest.mark.skip(reason=f"example needs the {extra} extra")
                )
