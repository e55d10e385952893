# SPDX-License-Identifier: MIT
"""The documentation keeps its promises: the API page lists every public name,
no page or example imports a private module, and the quick start runs.

The API rule binds everyone who adds a public name: add it to
``docs/api.rst`` (an ``autosummary`` entry under the right
``currentmodule``, or a ``.. data::`` entry for a constant) in the same
change.
"""

import doctest
import re
import types
from pathlib import Path

import pytest

import sklearn_betacal

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _public_names():
    """Fully qualified public names: the package's ``__all__`` and the
    ``__all__`` of each public submodule it lists."""
    names = set()
    for name in sklearn_betacal.__all__:
        if name == "__version__":
            continue
        obj = getattr(sklearn_betacal, name)
        if isinstance(obj, types.ModuleType):
            sub = getattr(obj, "__all__", None)
            assert sub is not None, f"public module {obj.__name__} has no __all__"
            names.update(f"{obj.__name__}.{n}" for n in sub)
        else:
            names.add(f"sklearn_betacal.{name}")
    return names


def _documented_names(text):
    """Names that ``api.rst`` documents: autosummary entries and ``.. data::``,
    ``.. autoclass::``/``.. autofunction::`` targets, qualified by the
    ``currentmodule`` in force."""
    names, module, in_summary = set(), "sklearn_betacal", False
    for line in text.splitlines():
        if m := re.match(r"\.\. (?:py:)?currentmodule:: (\S+)", line):
            module = m.group(1)
        if m := re.match(r"\.\. (?:py:)?(?:data|auto\w+|class|function):: (\S+)", line):
            target = m.group(1)
            names.add(target if "." in target else f"{module}.{target}")
        if line.startswith(".. autosummary::"):
            in_summary = True
            continue
        if in_summary:
            entry = line.strip()
            if line and not line.startswith(" "):
                in_summary = False
            elif entry and not entry.startswith(":"):
                names.add(f"{module}.{entry.lstrip('~')}")
    return names


def test_docs_api_page_lists_every_public_name():
    missing = _public_names() - _documented_names((DOCS / "api.rst").read_text())
    assert not missing, (
        f"public names missing from docs/api.rst: {sorted(missing)}; add each "
        "under the currentmodule it is imported from"
    )


def test_docs_api_page_parser_sees_entries():
    # the parser above must not pass by seeing nothing
    text = (
        ".. currentmodule:: sklearn_betacal.metrics\n\n.. autosummary::\n"
        "   :toctree: generated/\n\n   reliability_table\n\nText\n\n"
        ".. data:: neg_beta_calibration_error_scorer\n"
    )
    assert _documented_names(text) == {
        "sklearn_betacal.metrics.reliability_table",
        "sklearn_betacal.metrics.neg_beta_calibration_error_scorer",
    }


PRIVATE = re.compile(r"sklearn_betacal(?:\.\w+)*\._(?!_)\w+")


@pytest.mark.parametrize(
    "path",
    sorted(DOCS.glob("*.rst")) + sorted((ROOT / "examples").glob("*.py")),
    ids=lambda p: p.name,
)
def test_docs_pages_do_not_use_private_modules(path):
    hits = PRIVATE.findall(path.read_text(encoding="utf-8"))
    assert not hits, f"{path.name} refers to private modules {hits}"


@pytest.mark.parametrize(
    "page",
    ["quickstart.rst", "scaling_beta_binning.rst", "groups.rst", "abstention.rst"],
)
def test_docs_page_runs_as_written(page):
    result = doctest.testfile(
        str(DOCS / page),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    assert result.attempted > 10
    assert result.failed == 0


def test_docs_umd_page_runs_as_written():
    """umd.rst's label_floor example on the bundled TriviaQA set."""
    result = doctest.testfile(
        str(DOCS / "umd.rst"),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    assert result.attempted >= 10
    assert result.failed == 0
