# SPDX-License-Identifier: MIT
"""Generate ``calibration_tests_golden.json``: reference numbers from the peers.

Runs the reference packages on stored inputs and writes inputs and outputs:

- ``mcgrad`` (Meta's MCGrad, ``mcgrad.metrics``): ``ecce``,
  ``_ecce_standard_deviation``, ``ecce_sigma``, ``ecce_pvalue`` on whole
  samples and on each cell's rows, and ``MulticalibrationError(...).mce``
  with ``precision_dtype="float64"`` on feature-defined segments;
- ``relplot`` (Blasiok and Nakkiran's package): ``smECE``.

Neither package takes frequency weights, and mcgrad's ECCE of tied scores
depends on the order ``np.argsort`` leaves them in, so those cases are
stated in the peers' own terms:

- integer frequency weights: the peer runs on the rows repeated;
- sampling weights: mcgrad's ``sample_weight`` (its ``w**2`` variance);
- ties whose rows share the label: the peer's value does not depend on the
  order, used as is;
- ties with mixed labels: mcgrad's ``ecce`` of the tie-collapsed sample
  (one row per distinct score, label = mean label, weight = count), its sigma
  on the raw rows, and ``ecce_pvalue_from_sigma`` of their ratio; the raw
  mcgrad ECCE is stored too (ours must not exceed it).

Run (in a venv with the peers): ``python tests/data/make_calibration_tests_golden.py``.
The tests read the JSON only; they do not need the peers.
"""

import json
import platform
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
import relplot
from mcgrad import metrics as M

HERE = Path(__file__).resolve().parent


def _lst(a):
    return [float(v) for v in np.asarray(a, dtype=np.float64)]


def _mcgrad_test(y, p, w=None):
    return {
        "ecce": float(M.ecce(y, p, w)),
        "sigma": float(M._ecce_standard_deviation(p, y, w)),
        "ecce_sigma": float(M.ecce_sigma(y, p, w)),
        "pvalue": float(M.ecce_pvalue(y, p, w)),
    }


def ecce_cases():
    rng = np.random.default_rng(20261201)
    cases = []

    def add(name, y, p, w=None, weight_type="frequency", expected=None, **extra):
        case = {
            "name": name,
            "y": _lst(y),
            "p": _lst(p),
            "w": None if w is None else _lst(w),
            "weight_type": weight_type,
            "expected": expected,
        }
        case.update(extra)
        cases.append(case)

    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p).astype(float)
    add("calibrated_300", y, p, expected=_mcgrad_test(y, p))

    p = rng.uniform(size=1500)
    y = (rng.uniform(size=1500) < p**1.4).astype(float)
    add("overconfident_1500", y, p, expected=_mcgrad_test(y, p))

    p = rng.beta(0.5, 0.5, size=800)
    y = (rng.uniform(size=800) < np.clip(p + 0.04, 0, 1)).astype(float)
    w = rng.gamma(2.0, 1.0, size=800)
    add("sampling_weights_800", y, p, w, "sampling", _mcgrad_test(y, p, w))

    # integer frequency weights = the rows repeated (ties sharing a label)
    p = rng.uniform(0.05, 0.95, size=250)
    y = (rng.uniform(size=250) < p * 0.9).astype(float)
    m = rng.integers(0, 5, size=250)  # zero weights drop rows
    add(
        "frequency_weights_250",
        y,
        p,
        m.astype(float),
        "frequency",
        _mcgrad_test(np.repeat(y, m), np.repeat(p, m)),
    )

    # ties, every tie run shares its label: the peer's order cannot matter
    base_p = np.round(rng.uniform(size=120), 3)
    base_p = np.unique(base_p)
    base_y = (rng.uniform(size=base_p.shape[0]) < base_p).astype(float)
    k = rng.integers(1, 6, size=base_p.shape[0])
    p, y = np.repeat(base_p, k), np.repeat(base_y, k)
    perm = rng.permutation(p.shape[0])
    add("ties_same_label", y[perm], p[perm], expected=_mcgrad_test(y[perm], p[perm]))

    # ties with mixed labels: the order-free statistic (collapsed sample)
    p = np.round(rng.uniform(size=1000), 1)
    y = (rng.uniform(size=1000) < np.clip(p - 0.05, 0, 1)).astype(float)
    distinct, inverse = np.unique(p, return_inverse=True)
    count = np.bincount(inverse)
    y_mean = np.bincount(inverse, weights=y) / count
    ecce = float(M.ecce(y_mean, distinct, count.astype(float)))
    sigma = float(M._ecce_standard_deviation(p, y, None))
    expected = {
        "ecce": ecce,
        "sigma": sigma,
        "ecce_sigma": ecce / sigma,
        "pvalue": float(M.ecce_pvalue_from_sigma(ecce / sigma)),
    }
    add(
        "ties_mixed_labels",
        y,
        p,
        expected=expected,
        mcgrad_raw_ecce=float(M.ecce(y, p)),
    )

    # confidences at 0 and 1 (zero variance there), small n
    p = np.concatenate([np.zeros(5), np.ones(5), rng.uniform(size=30)])
    y = np.concatenate([np.zeros(5), np.ones(5), rng.uniform(size=30) < 0.5])
    y = y.astype(float)
    add("extremes_40", y, p, expected=_mcgrad_test(y, p))

    # a strongly miscalibrated sample: p-value in the far tail
    p = rng.uniform(size=3000)
    y = (rng.uniform(size=3000) < p**2).astype(float)
    add("far_tail_3000", y, p, expected=_mcgrad_test(y, p))
    return cases


def cell_cases():
    rng = np.random.default_rng(7)
    n = 4000
    groups = rng.integers(0, 12, size=n)
    p = rng.uniform(size=n)
    shift = np.where(groups % 4 == 0, -0.08, 0.0)
    y = (rng.uniform(size=n) < np.clip(p + shift, 0, 1)).astype(float)
    w = rng.uniform(0.2, 3.0, size=n)
    out = []
    for weighted in (False, True):
        cells = {}
        for g in np.unique(groups):
            rows = groups == g
            cells[str(int(g))] = _mcgrad_test(
                y[rows], p[rows], w[rows] if weighted else None
            )
        out.append(
            {
                "name": "twelve_cells" + ("_sampling_weights" if weighted else ""),
                "y": _lst(y),
                "p": _lst(p),
                "groups": [int(g) for g in groups],
                "w": _lst(w) if weighted else None,
                "weight_type": "sampling",
                "cells": cells,
            }
        )
    return out


def smece_cases():
    rng = np.random.default_rng(11)
    cases = []

    def add(name, y, p, w=None, ref_y=None, ref_p=None):
        ref = relplot.smECE(
            np.asarray(p if ref_p is None else ref_p, dtype=np.float64),
            np.asarray(y if ref_y is None else ref_y, dtype=np.float64),
        )
        cases.append(
            {
                "name": name,
                "y": _lst(y),
                "p": _lst(p),
                "w": None if w is None else _lst(w),
                "expected": float(ref),
            }
        )

    for n, power in ((60, 1.0), (600, 1.0), (3000, 1.0), (2000, 2.0), (1500, 0.5)):
        p = rng.uniform(size=n)
        y = (rng.uniform(size=n) < p**power).astype(float)
        add(f"n{n}_power{power}", y, p)
    p = np.round(rng.uniform(size=800), 1)  # ties
    y = (rng.uniform(size=800) < p).astype(float)
    add("ties_800", y, p)
    p = rng.beta(0.2, 0.2, size=1000)  # mass near 0 and 1
    y = (rng.uniform(size=1000) < np.clip(p * 1.1, 0, 1)).astype(float)
    add("extremes_1000", y, p)
    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p * 0.8).astype(float)
    m = rng.integers(0, 4, size=300)
    add(
        "frequency_weights_300",
        y,
        p,
        m.astype(float),
        ref_y=np.repeat(y, m),
        ref_p=np.repeat(p, m),
    )
    return cases


def mce_cases():
    rng = np.random.default_rng(5)
    cases = []
    n = 3000
    df = pd.DataFrame(
        {
            "topic": rng.choice(["art", "math", "news", "sport", "film"], n),
            "length": rng.gamma(2.0, 10.0, size=n),
            "level": rng.integers(0, 3, size=n),
            "score": rng.normal(size=n),
        }
    )
    p = rng.uniform(size=n)
    bad = (df["topic"] == "math") & (df["length"] > 20)
    y = (rng.uniform(size=n) < np.where(bad, p * 0.7, p)).astype(float)
    w = rng.uniform(0.3, 2.0, size=n)
    frame = df.assign(y=y, p=p, w=w)
    settings = [
        ("depth3_default", ["topic", "level"], ["length", "score"], {}, False),
        ("depth1", ["topic"], ["length"], {"max_depth": 1}, False),
        (
            "depth2_bins4",
            ["topic"],
            ["length", "score"],
            {"max_depth": 2, "max_values_per_segment_feature": 4},
            False,
        ),
        ("sampling_weights", ["topic", "level"], ["length"], {}, True),
        (
            "truncated_50",
            ["topic", "level"],
            ["length", "score"],
            {"max_n_segments": 50, "chunk_size": 50},
            False,
        ),
        (
            "min_samples_100",
            ["topic"],
            ["length", "score"],
            {"min_samples_per_segment": 100},
            False,
        ),
    ]
    for name, cat, num, kw, weighted in settings:
        mce = M.MulticalibrationError(
            frame,
            "y",
            "p",
            weight_column="w" if weighted else None,
            categorical_segment_columns=cat,
            numerical_segment_columns=num,
            precision_dtype="float64",
            **kw,
        )
        cases.append(
            {
                "name": name,
                "categorical": cat,
                "numerical": num,
                "kwargs": kw,
                "weighted": weighted,
                "expected": float(mce.mce),
                "n_segments": int(mce.total_number_segments),
            }
        )
    data = {c: frame[c].tolist() for c in frame.columns}
    return {"data": data, "cases": cases}


def main():
    out = {
        "_generated_by": "tests/data/make_calibration_tests_golden.py",
        "_versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "pandas": pd.__version__,
            "mcgrad": version("mcgrad"),
            "relplot": version("relplot"),
            "platform": sys.platform,
        },
        "ecce": ecce_cases(),
        "cells": cell_cases(),
        "smece": smece_cases(),
        "multicalibration": mce_cases(),
    }
    path = HERE / "calibration_tests_golden.json"
    path.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
