# SPDX-License-Identifier: MIT
"""The golden values in ``tests/data/``, each beside the script that made it."""

import json
from pathlib import Path

DATA = Path(__file__).parent / "data"


def load_golden(name):
    """The parsed ``tests/data/<name>`` (a JSON file of reference values)."""
    return json.loads((DATA / name).read_text())
