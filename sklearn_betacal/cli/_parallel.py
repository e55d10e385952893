# SPDX-License-Identifier: MIT
"""Thread limits and process parallelism without oversubscription.

NumPy/SciPy call BLAS/OpenMP libraries that start one thread per core by
default. Several such processes (or joblib workers) on the same cores then
fight for them: on a 2-core machine the demo took 52 s with the default
threads and 19 s with one BLAS thread, for the same tables. Everything in
this package that runs work in parallel, or runs long enough to suffer from
it (the protocol, the demo), limits the BLAS/OpenMP threads *inside* each
worker with :mod:`threadpoolctl`.
"""

from contextlib import nullcontext

from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits


def limit_threads(n_threads):
    """Context manager: at most ``n_threads`` BLAS/OpenMP threads inside.

    ``None`` leaves the thread pools as they are.
    """
    if n_threads is None:
        return nullcontext()
    return threadpool_limits(limits=int(n_threads))


def _call_limited(func, args, n_threads):
    with limit_threads(n_threads):
        return func(*args)


def parallel_map(func, tasks, *, n_jobs=1, threads_per_job=1):
    """``func(*task)`` for every task, in order, as a generator.

    With ``n_jobs == 1`` the tasks run one after the other in this process;
    otherwise in ``n_jobs`` joblib workers (``-1``: one per core). Either
    way each call runs with at most ``threads_per_job`` BLAS/OpenMP threads
    (``None``: unchanged), so ``n_jobs`` workers never start more than
    ``n_jobs * threads_per_job`` compute threads. Results are yielded in
    task order as they become available.
    """
    tasks = list(tasks)
    if n_jobs == 1:
        return (_call_limited(func, task, threads_per_job) for task in tasks)
    return Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(_call_limited)(func, task, threads_per_job) for task in tasks
    )


__all__ = ["limit_threads", "parallel_map"]
