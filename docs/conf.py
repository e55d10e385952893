# SPDX-License-Identifier: MIT
"""Sphinx configuration for the sklearn_betacal documentation.

Build with ``python -m sphinx -W docs docs/_build`` after
``pip install -e .[docs]`` (CI does exactly this). Built HTML stays out of git.

The build is offline: intersphinx reads only inventories found on disk
(``docs/_inventories/<name>.inv``, e.g. saved from a previous online build), so
links to Python, NumPy and scikit-learn are plain text without them and the
build never waits for the network. ``BETACAL_DOCS_ONLINE=1`` fetches the
published inventories instead (for a release build with working links).
"""

import os
import re
from pathlib import Path

import sklearn_betacal

project = "sklearn_betacal"
author = "The sklearn_betacal developers"
release = sklearn_betacal.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

autosummary_generate = True
numpydoc_show_class_members = False
exclude_patterns = ["_build", "_templates", "_inventories", "auto_examples/*.ipynb"]

templates_path = ["_templates"]

_INVENTORIES = {
    "python": "https://docs.python.org/3",
    "numpy": "https://numpy.org/doc/stable",
    "sklearn": "https://scikit-learn.org/stable",
}
_ONLINE = os.environ.get("BETACAL_DOCS_ONLINE", "") == "1"
_LOCAL = Path(__file__).resolve().parent / "_inventories"
intersphinx_mapping = {
    name: (url, None if _ONLINE else str(_LOCAL / f"{name}.inv"))
    for name, url in _INVENTORIES.items()
    if _ONLINE or (_LOCAL / f"{name}.inv").is_file()
}

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"plot_",
    "download_all_examples": False,
}

html_theme = "alabaster"
# alabaster's default 940 px page leaves ~700 px for the text: 88-character
# doctest lines were cut and field-list headers wrapped; the page is
# 1,240 px (alabaster narrows it on smaller windows; docs/_static/betacal.css
# does the rest)
html_theme_options = {
    "page_width": "1240px",
    "sidebar_width": "250px",
    "body_max_width": "none",
}
html_static_path = ["_static"]
html_css_files = ["betacal.css"]


def _skip_members_documented_elsewhere(app, what, name, obj, skip, options):
    # scikit-learn generates set_<method>_request on every estimator that takes
    # sample_weight; they are documented (with their cross-references) in
    # scikit-learn's metadata-routing guide, not repeated on each class page.
    if re.fullmatch(r"set_\w+_request", name):
        return True
    # class pages list inherited members (docs/_templates/autosummary): keep
    # those defined in this package (its private bases), not scikit-learn's
    # (get_params, score, fit_transform, ...)
    if what == "class":
        target = obj.fget if isinstance(obj, property) else obj
        # a method of a builtin base (tuple.count of a NamedTuple) has no
        # __module__ but the class that defines it
        module = getattr(target, "__module__", None) or getattr(
            getattr(target, "__objclass__", None), "__module__", None
        )
        if isinstance(module, str) and not module.startswith("sklearn_betacal"):
            return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_members_documented_elsewhere)
