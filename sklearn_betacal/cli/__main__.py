# SPDX-License-Identifier: MIT
"""``python -m sklearn_betacal.cli``: the ``betacal`` command."""

import sys

from . import main

if __name__ == "__main__":  # importing the module (docs, doctests) runs nothing
    sys.exit(main())
