"""Memory follows the request count at the documented bytes per request: the Python
loop's logs and per-request state (traced by tracemalloc; the compiled loop allocates
outside its view) grow by less than `workload.BYTES_PER_REQUEST` per request, and
the logs are held as float64 arrays, not Python objects."""

import tracemalloc

import numpy as np

from genz import load_model
from roofline import load_platform
from search.serving import build_replica, simulate_replica, synthetic_workload
from search.serving.records import Spool
from search.serving.workload import BYTES_PER_REQUEST


def peak_bytes(requests: int, monkeypatch) -> tuple[int, float]:
    monkeypatch.setenv("CODESIGN_SERVING_CORE", "python")
    workload = synthetic_workload(15.0, requests / 15.0, seed=0)
    replica = build_replica(load_model("llama-3.1-8b"), load_platform("h100-sxm"), workload)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        simulate_replica(workload, replica)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return len(workload), peak - before


def test_peak_memory_per_request_is_below_the_cap_constant(monkeypatch):
    small, small_peak = peak_bytes(1500, monkeypatch)
    large, large_peak = peak_bytes(6000, monkeypatch)
    slope = (large_peak - small_peak) / (large - small)
    assert 100 < slope < BYTES_PER_REQUEST


def test_spool_keeps_values_in_order_as_float64_chunks():
    spool = Spool()
    for k in range(10):
        spool.buffer.extend((k, k + 0.5))
        if k % 3 == 0:
            spool.spill()
    assert not spool.buffer and spool.nbytes == 20 * 8
    expected = np.array([v for k in range(10) for v in (k, k + 0.5)])
    assert np.array_equal(spool.array(), expected) and spool.array().dtype == np.float64
