"""Measuring helpers shared by the benchmark scripts (not part of the package)."""

import statistics
import time
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


def median_times(fns, repeats):
    """Median seconds of every callable, the calls interleaved round-robin.

    Interleaving spreads a change of the machine's load over all of them,
    so that their ratios stay meaningful on a shared machine.
    """
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}
