# SPDX-License-Identifier: MIT
"""Partitioners: the map beta from partition features to an integer cell id.

beta-calibration (Def. 2.3 of the paper) conditions on a partition of the
question-answer space. A *partitioner* is any scikit-learn transformer whose
``transform`` returns one integer cell id per row, ``-1`` meaning "outside
every cell" (the group-conditional calibrators then use their root, whole-data
calibrator, Alg. 2). This module provides four:

- :class:`KDTreePartitioner`, the paper's kd-tree with bounded leaves
  (Sec. 2.3, App. C), plus split rules that suit high-dimensional embeddings;
- :class:`GroupColumnPartitioner`, a partition read from a precomputed column
  (topics, datasets, the predicted class in the top-label case);
- :class:`ClusterPartitioner`, any clusterer with ``predict`` (e.g. KMeans);
- :class:`CrossPartitioner`, the cross of several partitions (e.g. the model
  that answered x a kd-tree cell of the question embedding);
- :class:`CalibrationTreePartitioner`, cells learned from labels and
  confidences where the miscalibration differs (``_tree.py``).

One module per family: ``_kdtree.py`` (the kd-tree; its numerical work is in
``_kernels/_kdtree.py``), ``_columns.py`` (group column, clusterer, cross) and
``_base.py`` (the shared output side and cell-id helpers).
"""

from ._columns import ClusterPartitioner, CrossPartitioner, GroupColumnPartitioner
from ._kdtree import KDTreePartitioner
from ._tree import CalibrationTreePartitioner

__all__ = [
    "CalibrationTreePartitioner",
    "ClusterPartitioner",
    "CrossPartitioner",
    "GroupColumnPartitioner",
    "KDTreePartitioner",
]
