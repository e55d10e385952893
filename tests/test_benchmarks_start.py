# SPDX-License-Identifier: MIT
"""Every benchmark script starts: ``--help`` answers, even without the peers.

One fresh interpreter runs every script in ``benchmarks/`` and
``benchmarks/studies/`` as ``__main__`` with ``--help`` (a script that breaks
on import, e.g. by importing a removed name, fails here), with the optional
peer packages made unimportable, so a script that needs one must import it
after reading its arguments. Between scripts, ``sys.path`` and the
benchmark-local modules are reset, so a study that forgot to put the harness
on its path is not rescued by the script before it.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(
    p
    for folder in (BENCHMARKS, BENCHMARKS / "studies")
    for p in folder.glob("*.py")
    if not p.name.startswith("_")
)
#: the peers and optional extras a benchmark may use (never needed for --help)
OPTIONAL = [
    "betacal",
    "calibration",
    "dask",
    "distributed",
    "matplotlib",
    "mcgrad",
    "netcal",
    "polars",
    "relplot",
    "sentence_transformers",
    "skops",
    "torch",
    "venn_abers",
]

DRIVER = r"""
import contextlib, importlib.abc, io, json, runpy, sys

root, blocked, scripts = json.loads(sys.argv[1])

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ImportError(f"{name} is blocked: --help must not need it")
        return None

sys.meta_path.insert(0, Blocker())
class Output(io.StringIO):
    def reconfigure(self, **kwargs):  # as sys.stdout's, which a script may call
        pass

base_path = list(sys.path)
results = {}
for script in scripts:
    folder = str(__import__("pathlib").Path(script).parent)
    sys.path[:] = [folder, *base_path]
    for name, module in list(sys.modules.items()):  # the benchmark-local ones
        if (getattr(module, "__file__", None) or "").startswith(root):
            del sys.modules[name]
    sys.argv = [script, "--help"]
    out = Output()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            runpy.run_path(script, run_name="__main__")
        code = "returned without exiting"
    except SystemExit as exc:
        code = exc.code or 0
    except BaseException as exc:
        code = f"{type(exc).__name__}: {exc}"
    results[script] = [code, out.getvalue()]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def started():
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    env.pop("BETACAL_SHARED_DATA", None)  # --help must not need the data
    args = json.dumps([str(BENCHMARKS), OPTIONAL, [str(p) for p in SCRIPTS]])
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, args],
        capture_output=True,
        text=True,
        env=env,
        cwd=BENCHMARKS.parent,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_scripts_are_found():
    names = {p.name for p in SCRIPTS}
    assert {"bench_metrics.py", "bench_peers_quality.py"} <= names
    assert {"paper_experiment.py", "learned_partition.py"} <= names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_answers_help(started, script):
    code, output = started[str(script)]
    assert code == 0, f"{script.name} --help: {code}\n{output}"
    assert "usage:" in output, output
