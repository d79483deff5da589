"""A compiled pool holds rows per replica sized by the run's requests
(`compiled.pool_bytes`); a run whose rows would take more than `POOL_MEMORY_SHARE` of the
memory available takes the Python loop instead (its memory grows with the requests
only), with the same records."""

import numpy as np
import pytest
from helpers import assert_same_records

from genz import load_model
from roofline import load_platform
from search.serving import SchedulerConfig, Workload, build_replica, compiled, simulate_pool

pytestmark = pytest.mark.skipif(compiled.njit is None, reason="numba is not installed")


def test_pool_bytes_counts_three_request_rows_and_one_slot_row_per_replica() -> None:
    assert compiled.pool_bytes(1_000, 4, 256) == 4 * (24 * 1_000 + 16 * 256)


def test_a_pool_too_large_for_memory_runs_in_python_with_the_same_records(monkeypatch) -> None:
    n = 12
    requests = Workload(
        0.01 * np.arange(n),
        np.full(n, 300, np.int64),
        np.full(n, 20, np.int64),
        np.zeros(n, np.int64),
        "test",
    )
    config = SchedulerConfig(kv_capacity_tokens=4000)
    model, platform = load_model("llama-3.1-8b"), load_platform("h100-sxm")
    cost = build_replica(model, platform, requests, config=config).cost
    assert compiled.eligible(requests, config, 3)
    need = compiled.pool_bytes(n, 3, config.max_sequences)
    available = need / compiled.POOL_MEMORY_SHARE * 0.99  # just too little
    monkeypatch.setattr(compiled, "max_requests", lambda: (10**6, available))
    assert not compiled.eligible(requests, config, 3)
    assert compiled.eligible(requests, config, 2)  # fewer replicas fit
    asked: list[int] = []
    monkeypatch.setattr(compiled, "simulate", lambda *args: asked.append(1))
    python = simulate_pool(requests, cost, config, 4000, replicas=3)
    assert asked == []  # the compiled loop was not asked
    monkeypatch.undo()
    assert_same_records(python, simulate_pool(requests, cost, config, 4000, replicas=3))
