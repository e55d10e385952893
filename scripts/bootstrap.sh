#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Create .venv (if missing) and install sklearn_betacal with its test extra from
# this checkout. Idempotent: re-runs only reinstall when setup.cfg changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.betacal-installed
want=$(cat setup.cfg pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip >&2
  .venv/bin/python -m pip install --quiet -e ".[tests]" >&2
  echo "$want" > "$stamp"
fi
