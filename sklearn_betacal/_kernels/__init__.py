# SPDX-License-Identifier: MIT
"""Numerical kernels: pure NumPy/SciPy functions on validated arrays.

Nothing here imports scikit-learn or validates input; estimators in the
package validate, call these functions and store the results (the way
``sklearn/isotonic.py`` wraps ``_isotonic``).
"""
