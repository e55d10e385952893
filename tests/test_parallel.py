# SPDX-License-Identifier: MIT
"""Thread limits inside the protocol and inside parallel workers."""

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from sklearn_betacal.cli import _protocol
from sklearn_betacal.cli._parallel import limit_threads, parallel_map


def _blas_threads():
    """Largest thread count among the BLAS/OpenMP pools loaded here."""
    np.ones((2, 2)) @ np.ones((2, 2))  # make sure a BLAS is loaded
    return max(info["num_threads"] for info in threadpool_info())


def _task(i):
    return i * i, _blas_threads()


def test_limit_threads_caps_and_none_leaves_alone():
    with threadpool_limits(limits=2):
        before = _blas_threads()
        with limit_threads(1):
            assert _blas_threads() == 1
        with limit_threads(None):
            assert _blas_threads() == before


def test_parallel_map_keeps_order_and_limits_workers():
    for n_jobs in (1, 2):
        with threadpool_limits(limits=2):
            out = list(parallel_map(_task, [(i,) for i in range(5)], n_jobs=n_jobs))
        assert [r[0] for r in out] == [0, 1, 4, 9, 16]
        assert all(r[1] == 1 for r in out)


def test_run_protocol_runs_with_one_blas_thread(monkeypatch):
    seen = []

    def fake(frame, confidence, label, seed, config, on_step):
        seen.append(_blas_threads())
        return "ok"

    monkeypatch.setattr(_protocol, "_run_protocol", fake)
    with threadpool_limits(limits=2):
        assert _protocol.run_protocol(None, "c") == "ok"
        config = _protocol.ProtocolConfig(blas_threads=None)
        outside = _blas_threads()
        _protocol.run_protocol(None, "c", config=config)
    assert seen == [1, outside]
