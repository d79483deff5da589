"""The compiled event loop (`search.serving.compiled`) gives the Python loop's run bit
for bit: every array of the `RunRecord` equal, on each configuration it covers (long
and short decode runs, both policies, recompute and swap preemption, rejections, a
decode pool's prefilled requests, a profile with fixed costs, two context operators,
closed-loop clients and front-end time), and numpy's pairwise sum reproduced exactly."""

import dataclasses
import math

import numpy as np
import pytest
from helpers import assert_same_records

from genz import load_model, load_runtime, step_cost
from roofline import load_platform
from search.serving import (
    SchedulerConfig,
    Workload,
    build_replica,
    compiled,
    compiled_loop,
    simulate_pool,
    synthetic_workload,
)

pytestmark = pytest.mark.skipif(compiled.njit is None, reason="numba is not installed")

MODEL, PLATFORM = load_model("llama-3.1-8b"), load_platform("h100-sxm")


def both(monkeypatch, workload, cost, config, capacity, prefilled=False):
    """The run of the compiled loop and of the Python loop."""
    assert compiled.eligible(workload, config, 1)
    fast = simulate_pool(workload, cost, config, capacity, prefilled=prefilled)
    monkeypatch.setenv(compiled.CORE_VARIABLE, "python")
    assert not compiled.eligible(workload, config, 1)
    slow = simulate_pool(workload, cost, config, capacity, prefilled=prefilled)
    monkeypatch.delenv(compiled.CORE_VARIABLE)
    return fast, slow


CASES = {
    "continuous": (dict(rate=15.0), dict(policy="continuous"), None, None),
    "chunked": (dict(rate=15.0), dict(policy="chunked", max_batched_tokens=512), None, None),
    # one request every few seconds: decode runs of hundreds of steps (pairwise sums)
    "long runs": (dict(rate=0.4, duration=400.0), dict(policy="continuous"), None, None),
    "vllm profile": (dict(rate=15.0), dict(policy="continuous"), "vllm", None),
    "recompute": (dict(rate=25.0), dict(policy="chunked", max_batched_tokens=768), None, 30000),
    "swap": (dict(rate=25.0), dict(policy="continuous", preemption="swap"), None, 30000),
    "rejections": (dict(rate=5.0, input_tokens=3000), dict(policy="continuous"), None, 5000),
}


CLOSED = {
    "closed, all at once": (dict(requests=1500, max_concurrency=32), dict(policy="continuous")),
    "closed at a rate, front end": (
        dict(requests=1000, max_concurrency=8, rate=20.0),
        dict(policy="chunked", max_batched_tokens=2048, request_overhead_s=0.01),
    ),
    "open, front end": (dict(requests=2000, rate=40.0), dict(request_overhead_s=0.02)),
    "closed, rejections": (
        dict(requests=600, max_concurrency=4, input_tokens=3000),
        dict(policy="continuous", kv_capacity_tokens=5000),
    ),
}


@pytest.mark.parametrize("name", list(CLOSED))
def test_compiled_clients_equal_python_clients(monkeypatch, name):
    """Closed-loop clients and front-end time: sends, engine arrivals, every record."""
    shape, scheduler = CLOSED[name]
    shape = dict(shape)
    workload = synthetic_workload(shape.pop("rate", math.inf), 1.0, seed=7, **shape)
    config = SchedulerConfig(**scheduler)
    replica = build_replica(MODEL, PLATFORM, workload, config=config)
    fast, slow = both(monkeypatch, workload, replica.cost, config, replica.kv_capacity_tokens)
    assert_same_records(fast, slow)
    if workload.max_concurrency is not None:
        assert slow.arrival_s is not None and np.ptp(slow.arrival_s) > 0
    if config.request_overhead_s:
        assert slow.engine_arrival_s is not None


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_loop_equals_python_loop(monkeypatch, name):
    shape, scheduler, runtime, kv_tokens = CASES[name]
    shape = dict(shape)
    workload = synthetic_workload(shape.pop("rate"), shape.pop("duration", 120.0), seed=5, **shape)
    config = SchedulerConfig(**scheduler, kv_capacity_tokens=kv_tokens)
    replica = build_replica(
        MODEL, PLATFORM, workload, config=config, runtime=load_runtime(runtime) if runtime else None
    )
    fast, slow = both(monkeypatch, workload, replica.cost, config, replica.kv_capacity_tokens)
    assert_same_records(fast, slow)
    if name in ("recompute", "swap"):
        assert slow.preemptions.sum() > 0
    if name == "rejections":
        assert slow.rejected.sum() > 0


def test_compiled_work_in_slices_across_runs(monkeypatch):
    """`compiled._work` costs the decode runs in slices that cut runs (7 steps here):
    FLOP and bytes equal the Python loop's, costed in its own slices."""
    monkeypatch.setattr(compiled, "WORK_SLICE", 7)
    workload = synthetic_workload(0.4, 200.0, seed=5)
    replica = build_replica(MODEL, PLATFORM, workload)
    config = replica.config
    fast, slow = both(monkeypatch, workload, replica.cost, config, replica.kv_capacity_tokens)
    assert_same_records(fast, slow)
    assert len(fast.step_s) > 100


def test_compiled_decode_pool_and_two_context_operators(monkeypatch):
    """Prefilled requests (a decode pool) on a cost with a second context operator."""
    cost = step_cost(MODEL, PLATFORM, max_tokens=4096, max_sequences=256)
    cost = dataclasses.replace(
        cost,
        context_compute=np.concatenate([cost.context_compute, cost.context_compute * 3.1], 1),
        context_memory=np.concatenate([cost.context_memory, cost.context_memory * 0.4], 1),
        context_overhead_s=np.concatenate(
            [cost.context_overhead_s, cost.context_overhead_s + 1e-6], 1
        ),
    )
    drawn = synthetic_workload(20.0, 120.0, seed=6)
    workload = Workload(
        drawn.arrival_s, drawn.input_tokens, drawn.output_tokens, drawn.prefix_tokens * 0, "test"
    )
    config = SchedulerConfig(policy="chunked", max_batched_tokens=1024)
    fast, slow = both(monkeypatch, workload, cost, config, 60000, prefilled=True)
    assert_same_records(fast, slow)


def test_runs_it_does_not_cover_take_the_python_loop():
    workload = synthetic_workload(5.0, 10.0, seed=1)
    assert compiled.eligible(workload, SchedulerConfig(), 1)
    assert not compiled.eligible(workload, SchedulerConfig(scheduler_steps=4), 1)
    assert not compiled.eligible(workload, SchedulerConfig(policy="static"), 1)
    shared = synthetic_workload(5.0, 10.0, seed=1, prefix_share=0.5, prefix_tokens=100)
    assert not compiled.eligible(shared, SchedulerConfig(), 1)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 15, 16, 17, 127, 128, 129, 200, 1000, 8193, 20000])
def test_pairwise_sum_is_numpys(n):
    rng = np.random.default_rng(n)
    values = rng.random(n) * 10 ** rng.uniform(-6, 6, n)
    assert compiled_loop.pairwise_sum(values, 0, n) == values.sum()
    if n > 3:  # a slice starting inside the array, as the loop sums a run's steps
        assert compiled_loop.pairwise_sum(values, 3, n - 3) == values[3:].sum()
