# SPDX-License-Identifier: MIT
"""Shared docstring blocks (``sklearn_betacal._docstrings``) are filled in."""

import importlib
import inspect
import pkgutil
import re

import pytest

import sklearn_betacal
from sklearn_betacal._docstrings import DOCS, fill_doc

_PLACEHOLDER = re.compile(r"^[ \t]*%\(\w+\)s[ \t]*$", re.MULTILINE)


def _documented_objects():
    """Every class, function and method defined in the package's modules."""
    for info in pkgutil.walk_packages(sklearn_betacal.__path__, "sklearn_betacal."):
        if info.name.rsplit(".", 1)[-1].startswith("test"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            yield f"{module.__name__}.{name}", obj
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    member = getattr(member, "__func__", member)
                    member = getattr(member, "fget", member)
                    yield f"{module.__name__}.{name}.{attr}", member


def test_no_docstring_keeps_a_placeholder():
    # a %(name)s line whose object lacks @fill_doc would reach the docs as is
    unfilled = [
        name
        for name, obj in _documented_objects()
        if isinstance(getattr(obj, "__doc__", None), str)
        and _PLACEHOLDER.search(obj.__doc__)
    ]
    assert unfilled == []


def test_fill_doc_indents_the_block_and_touches_nothing_else():
    def f():
        """Summary at 100% of its width.

        Parameters
        ----------
        %(pos_label)s
        """

    fill_doc(f)
    lines = DOCS["pos_label"].split("\n")
    assert "100% of its width" in f.__doc__
    assert "\n        " + lines[0] + "\n            " + lines[1].strip() in f.__doc__
    assert "%(" not in f.__doc__


def test_fill_doc_fills_a_classmethod():
    class C:
        @fill_doc
        @classmethod
        def m(cls):
            """Doc.

            %(y_true)s
            """

    assert "%(" not in C.m.__doc__
    assert DOCS["y_true"].split("\n")[0] in C.m.__doc__


def test_fill_doc_rejects_an_unknown_name():
    def g():
        """Doc.

        %(no_such_block)s
        """

    with pytest.raises(KeyError, match="no_such_block"):
        fill_doc(g)
