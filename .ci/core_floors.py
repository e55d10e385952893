# SPDX-License-Identifier: MIT
"""Print the pins of .ci/floors.txt for setup.cfg's install_requires only.

The mixed leg of .ci/run installs with these as constraints: the core
dependencies at their floors, every extra at the newest release pip resolves.
"""

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

cfg = configparser.ConfigParser()
cfg.read(ROOT / "setup.cfg")
requires = cfg["options"]["install_requires"].splitlines()
core = {re.split(r"[<>=!~ ;\[]", r.strip())[0].lower() for r in requires if r.strip()}
for line in (ROOT / ".ci" / "floors.txt").read_text().splitlines():
    name = line.split("==")[0].strip().lower()
    if "==" in line and not line.startswith("#") and name in core:
        print(line.strip())
