# SPDX-License-Identifier: MIT
"""``python -m sklearn_betacal.cli``: the ``betacal`` command."""

import sys

from . import main

sys.exit(main())
