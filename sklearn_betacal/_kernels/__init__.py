# SPDX-License-Identifier: MIT
"""Numerical kernels: pure NumPy/SciPy functions on validated arrays.

Nothing here imports scikit-learn or validates input; estimators in the
package validate, call these functions and store the results (the way
``sklearn/isotonic.py`` wraps ``_isotonic``).
"""

import importlib


def compiled_twin(setting, size, floor, module):
    """The compiled twin ``module`` of a NumPy kernel, or ``None`` for NumPy.

    ``setting`` is the kernel module's ``USE_NUMBA`` switch: ``False`` never
    (the NumPy path, the reference the tests compare with bit for bit),
    ``True`` whenever numba is installed, ``None`` when it is installed and
    the work ``size`` is at least ``floor`` (below it a compiled call's
    first-use compilation is not worth it). ``module`` is a name relative to
    this package (``"._boosting_numba"``), imported here on first use so that
    importing the package never imports numba (the optional extra ``fast``).
    """
    if setting is False or (setting is None and size < floor):
        return None
    try:
        return importlib.import_module(module, __name__)
    except ImportError:
        return None
