# SPDX-License-Identifier: MIT
"""Write ``sbb_features_old_format.skops``: a
``ScalingBetaBinningCalibrator(scaler="features")`` model file from before the
boosted scaler read the partition's view of the features (a Pipeline's
last-step input); its boosting read the partition columns as they are. The
partitioner is a Pipeline (PCA to 2 components, then a kd-tree), so the two
readings differ: the file's boosting has 4 input features, a fresh fit's 2.
Also writes what the file predicts on probe rows.

Run from a checkout of sklearn_betacal before that change (commit 6b909d7)::

    PYTHONPATH=<old checkout> python tests/data/sbb_features_old_format_make.py
"""

import json
from pathlib import Path

import numpy as np
from sklearn.decomposition import PCA
from sklearn.pipeline import make_pipeline

import sklearn_betacal
from sklearn_betacal import KDTreePartitioner, ScalingBetaBinningCalibrator
from sklearn_betacal.io import dump

HERE = Path(__file__).parent


def model():
    part = make_pipeline(PCA(2, random_state=0), KDTreePartitioner(max_depth=2))
    return ScalingBetaBinningCalibrator(
        part, scaler="features", points_per_bin=20, random_state=0
    )


def data():
    rng = np.random.default_rng(0)
    n = 400
    Z = rng.normal(size=(n, 4))
    logit = 1.5 * rng.normal(size=n)
    h = 1 / (1 + np.exp(-logit))
    # miscalibrated along the first raw feature: over-confident where Z0 > 0
    p = 1 / (1 + np.exp(-(np.where(Z[:, 0] > 0, 0.5, 1.2) * logit + 0.4 * Z[:, 3])))
    y = (rng.random(n) < p).astype(int)
    X = np.column_stack([h, Z])
    probe = np.column_stack([rng.uniform(0.02, 0.98, 80), rng.normal(size=(80, 4))])
    return X, y, probe


if __name__ == "__main__":
    X, y, probe = data()
    sbb = model().fit(X, y)
    assert sbb.scaler_["n_features"] == 4 and "view" not in sbb.scaler_, (
        "run on the old checkout"
    )
    dump(sbb, HERE / "sbb_features_old_format.skops")
    out = {
        "sklearn_betacal": sklearn_betacal.__version__,
        "proba": sbb.predict_proba(probe)[:, 1].tolist(),
        "proxy": sbb.proxy_proba(probe).tolist(),
    }
    (HERE / "sbb_features_old_format.json").write_text(json.dumps(out))
