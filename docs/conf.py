# SPDX-License-Identifier: MIT
"""Sphinx configuration for the sklearn_betacal documentation.

Build with ``python -m sphinx -b html docs docs/_build/html`` after
``pip install -e .[docs]``. Built HTML stays out of git.
"""

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
exclude_patterns = ["_build", "auto_examples/*.ipynb"]

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "sklearn": ("https://scikit-learn.org/stable", None),
}

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"plot_",
    "download_all_examples": False,
}

html_theme = "alabaster"
