"""Measuring helpers shared by the benchmark scripts (not part of the package)."""

import tracemalloc


def peak_bytes(fn):
    """``(fn(), peak bytes allocated during the call)`` as traced by tracemalloc.

    Counts NumPy's allocations (they go through the traced allocator), so the
    peak is the call's extra memory, including what it returns.
    """
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    out = fn()
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    return out, peak
