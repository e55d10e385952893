# SPDX-License-Identifier: MIT
"""Reliability diagrams with counts (needs the optional ``plot`` extra).

The diagram is the chapter-000 reliability table drawn: one point per
non-empty bin at (mean confidence, accuracy) with its exact Clopper-Pearson
interval, the diagonal, and the bin counts as bars underneath, so that a
one-point bin never looks like a measurement.
"""

import numpy as np

PLOT_EXTRA_HINT = (
    "plots need matplotlib: pip install 'sklearn-betacal[plot]' "
    "(tables are printed without it)"
)


def have_matplotlib():
    """True when matplotlib can be imported (the ``plot`` extra)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def reliability_figure(curves, *, title, n_bins=10):
    """Draw one reliability panel per ``(label, y_true, y_prob)`` in ``curves``.

    Returns a matplotlib Figure that is not registered with pyplot, so no
    backend is chosen or changed here; the caller saves it.
    """
    from matplotlib.figure import Figure

    from sklearn_betacal.metrics import expected_calibration_error, reliability_table

    fig = Figure(figsize=(3.2 * len(curves), 4.6))
    axes = fig.subplots(
        2,
        len(curves),
        gridspec_kw={"height_ratios": [3, 1]},
        sharex=True,
        squeeze=False,
    )
    for j, (label, y_true, y_prob) in enumerate(curves):
        table = reliability_table(y_true, y_prob, n_bins=n_bins)
        occupied = table[table["count"] > 0]
        ax, bar = axes[0, j], axes[1, j]
        ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--")
        err = np.vstack(
            [
                occupied["accuracy"] - occupied["ci_lower"],
                occupied["ci_upper"] - occupied["accuracy"],
            ]
        )
        ax.errorbar(
            occupied["mean_confidence"],
            occupied["accuracy"],
            yerr=err,
            fmt="o",
            ms=4,
            capsize=2,
        )
        ece = expected_calibration_error(y_true, y_prob, n_bins=n_bins)
        ax.set_title(f"{label}\nECE={ece:.3f}, n={len(y_true)}", fontsize=9)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        if j == 0:
            ax.set_ylabel("accuracy")
            bar.set_ylabel("count")
        width = (table["bin_upper"] - table["bin_lower"]).to_numpy()
        bar.bar(
            table["bin_lower"], table["count"], width=width, align="edge", color="0.5"
        )
        bar.set_xlabel("confidence")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def save_figure(fig, path):
    """Save ``fig`` as PNG atomically (no temp file is left on failure)."""
    from ._io import atomic_write

    atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=110))
