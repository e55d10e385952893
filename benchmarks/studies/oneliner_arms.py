# SPDX-License-Identifier: MIT
"""Variants of the one-liner side by side on every set (``merge_stop.py``'s harness).

Each arm is a JSON object: upper-case keys set module constants of
``sklearn_betacal._partition._tree`` (``FINE_LEAVES``, ``MIN_FINE_CELLS``,
``DIRECTION_SHARE``, ``SCORE_MERGE``, ...) while that arm's partition is
fitted, lower-case keys are ``CalibrationTreePartitioner`` parameters. Every
arm runs on the same rows and seeds in one process, with UMD and the oracle
beside it, on the planted groups (with the calibrated null), influences with
the dataset hidden, TriviaQA and CIFAR top-label (see ``merge_stop.py``).

Run (one thread)::

    OMP_NUM_THREADS=1 python benchmarks/studies/oneliner_arms.py \\
        '{"today": {}, "fine2": {"FINE_LEAVES": 2}}' --n-null 40 \\
        --out benchmarks/results/oneliner_arms_fine.md

The arguments after the arms are ``merge_stop.py``'s (``--sets``, ``--seeds``,
``--other-seeds``, ``--n-null``, ``--out``).
"""

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE.parent))
import merge_stop  # noqa: E402

import sklearn_betacal._partition._tree as _tree  # noqa: E402
from sklearn_betacal import CalibrationTreePartitioner  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Other arguments go to merge_stop.py (--sets, --seeds, "
        "--other-seeds, --n-null).",
    )
    parser.add_argument("arms", help='JSON object {"name": {settings}, ...}')
    parser.add_argument("--out", type=Path, required=True)
    args, rest = parser.parse_known_args(argv)
    arms = json.loads(args.arms)
    defaults = {k: getattr(_tree, k) for a in arms.values() for k in a if k.isupper()}

    def one_liner(arm, seed):
        for key, value in defaults.items():
            setattr(_tree, key, value)
        params = {}
        for key, value in arms[arm].items():
            if key.isupper():
                setattr(_tree, key, value)
            else:
                params[key] = value
        return CalibrationTreePartitioner(random_state=seed, **params)

    merge_stop.one_liner = one_liner
    merge_stop.STOPS.clear()
    merge_stop.STOPS.update(dict.fromkeys(arms))
    try:
        merge_stop.main([*rest, "--out", str(args.out)])
    finally:
        for key, value in defaults.items():
            setattr(_tree, key, value)
    lines = args.out.read_text().splitlines()
    lines[0] = "# Variants of the one-liner side by side (oneliner_arms.py)"
    lines[1:1] = ["", f"Arms: `{json.dumps(arms)}`; other arguments: `{rest}`."]
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
