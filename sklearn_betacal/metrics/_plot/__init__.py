# SPDX-License-Identifier: MIT
"""Displays (scikit-learn's Display API) for the calibration metrics.

Each display is computed by a metric function of :mod:`sklearn_betacal.metrics`
and drawn with matplotlib, which is imported only when something is drawn
(the ``plot`` extra). The public names are exported from
:mod:`sklearn_betacal`.
"""
