"""Pools on the compiled loop (`search.serving.compiled`) give the Python loop's run bit
for bit: every array of the `RunRecord` equal (np.array_equal) for 1, 2 and 3
replicas under least-loaded and round-robin routing, both policies, recompute and
swap preemption, Poisson and all-at-once arrivals, front-end time, disaggregated
prefill -> decode pools 1:1 and 2:3, and closed-loop clients over such pools (every
record of the run)."""

import dataclasses
import math

import numpy as np
import pytest
from helpers import assert_same_records

from genz import load_model, step_cost
from roofline import InputError, load_platform
from search.serving import (
    SchedulerConfig,
    build_replica,
    compiled,
    kv_link,
    simulate_disaggregated,
    simulate_pool,
    synthetic_workload,
)

pytestmark = pytest.mark.skipif(compiled.njit is None, reason="numba is not installed")

MODEL, PLATFORM = load_model("llama-3.1-8b"), load_platform("h100-sxm")
#: KV tokens per replica small enough that the matrix's runs preempt.
TIGHT_KV = 20000
POLICIES = {
    "continuous": dict(policy="continuous"),
    "chunked": dict(policy="chunked", max_batched_tokens=512),
}


def arrivals(kind: str, requests: int, seed: int):
    """``requests`` chat requests: Poisson at 40/s, or all sent at 0."""
    rate = 40.0 if kind == "poisson" else math.inf
    return synthetic_workload(rate, 1.0, seed=seed, requests=requests)


def compiled_loop(monkeypatch, run):
    """``run()``, checking that every pool in it took the compiled loop."""
    taken = []

    def spy(simulate):
        def run_it(*args, **kwargs):
            done = simulate(*args, **kwargs)
            taken.append(done is not None)
            return done

        return run_it

    for name in ("simulate", "simulate_closed"):
        monkeypatch.setattr(compiled, name, spy(getattr(compiled, name)))
    record = run()
    monkeypatch.undo()
    assert taken and all(taken)
    return record


def python_loop(monkeypatch, run):
    """``run()`` with the Python loop forced."""
    monkeypatch.setenv(compiled.CORE_VARIABLE, "python")
    try:
        return run()
    finally:
        monkeypatch.delenv(compiled.CORE_VARIABLE)


def disaggregated_both_ways(monkeypatch, workload, prefill, decode, pools):
    """The disaggregated run on the compiled and on the Python loop, with every record of
    both pools and the combined one equal; (compiled, Python) results."""
    link = kv_link(prefill, decode, *pools)

    def run():
        return simulate_disaggregated(
            workload,
            prefill,
            decode,
            link=link,
            prefill_replicas=pools[0],
            decode_replicas=pools[1],
        )

    fast, slow = compiled_loop(monkeypatch, run), python_loop(monkeypatch, run)
    for part in ("prefill", "decode", "combined"):
        assert_same_records(getattr(fast, part), getattr(slow, part))
    return fast, slow


@pytest.mark.parametrize("kind", ["poisson", "all at once"])
@pytest.mark.parametrize("preemption", ["recompute", "swap"])
@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("replicas", [1, 2, 3])
def test_compiled_pool_equals_python_pool(monkeypatch, replicas, policy, preemption, kind):
    workload = arrivals(kind, 150 * replicas, seed=replicas)
    config = SchedulerConfig(**POLICIES[policy], preemption=preemption)
    replica = build_replica(MODEL, PLATFORM, workload, config=config)
    assert compiled.eligible(workload, config, replicas)

    def run():
        return simulate_pool(workload, replica.cost, config, TIGHT_KV, replicas=replicas)

    fast, slow = compiled_loop(monkeypatch, run), python_loop(monkeypatch, run)
    assert_same_records(fast, slow)
    assert slow.preemptions.sum() > 0
    assert slow.kv_capacity_tokens == TIGHT_KV * replicas


@pytest.mark.parametrize("routing", ["least-loaded", "round-robin"])
def test_compiled_routing_and_front_end_equal_python(monkeypatch, routing):
    """Front-end time delays the engine arrivals routing goes by; ample KV (no preemption)."""
    workload = arrivals("poisson", 400, seed=9)
    config = SchedulerConfig(policy="chunked", max_batched_tokens=1024, request_overhead_s=0.01)
    replica = build_replica(MODEL, PLATFORM, workload, config=config)

    def run():
        return simulate_pool(
            workload,
            replica.cost,
            config,
            replica.kv_capacity_tokens,
            replicas=2,
            routing=routing,
        )

    fast, slow = compiled_loop(monkeypatch, run), python_loop(monkeypatch, run)
    assert_same_records(fast, slow)
    assert slow.engine_arrival_s is not None


@pytest.mark.parametrize("kind", ["poisson", "all at once"])
@pytest.mark.parametrize("pools", [(1, 1), (2, 3)])
def test_compiled_disaggregated_pools_equal_python(monkeypatch, pools, kind):
    """Prefill pool, KV transfer over the link, decode pool's prefilled admission (with
    preemption there), routing in both pools; front-end time in the prefill pool only
    (the decode pool's requests arrive with their KV, whatever its scheduler says)."""
    workload = arrivals(kind, 300, seed=4)
    prefill = build_replica(
        MODEL,
        PLATFORM,
        workload,
        config=SchedulerConfig(policy="chunked", max_batched_tokens=2048, request_overhead_s=0.005),
    )
    decode = dataclasses.replace(
        build_replica(
            MODEL,
            PLATFORM,
            workload,
            config=SchedulerConfig(preemption="swap", request_overhead_s=0.005),
        ),
        kv_capacity_tokens=TIGHT_KV,
    )
    fast, slow = disaggregated_both_ways(monkeypatch, workload, prefill, decode, pools)
    assert np.array_equal(fast.finish_s, slow.finish_s, equal_nan=True)
    assert slow.decode.preemptions.sum() > 0


CLOSED = {
    # pools, clients, requests, arrivals, prefill policy, decode KV tokens
    "1:1, all at once": ((1, 1), 16, 300, math.inf, "continuous", None),
    "2:3 at a rate, tight decode KV": ((2, 3), 24, 300, 40.0, "chunked", 6000),
    "2:3, one client": ((2, 3), 1, 90, math.inf, "chunked", None),
}


@pytest.mark.parametrize("name", list(CLOSED))
def test_compiled_closed_loop_pools_equal_python(monkeypatch, name):
    """Closed-loop clients over pools (`closed_pools`): sends wait for leaves in the
    decode pool (or the prefill pool for one-token requests and refusals), the KV
    link's transfer, routing in both pools: every record of both pools."""
    pools, clients, requests, rate, policy, decode_kv = CLOSED[name]
    drawn = synthetic_workload(rate, 1.0, seed=8, requests=requests, max_concurrency=clients)
    # a few one-token requests leave at the prefill pool; a few prompts too long to fit
    output = np.where(np.arange(requests) % 17 == 0, 1, drawn.output_tokens)
    prompt = np.where(np.arange(requests) % 41 == 5, 30000, drawn.input_tokens)
    workload = dataclasses.replace(drawn, input_tokens=prompt, output_tokens=output)
    prefill = build_replica(
        MODEL,
        PLATFORM,
        workload,
        config=SchedulerConfig(**POLICIES[policy], request_overhead_s=0.003),
    )
    decode = build_replica(MODEL, PLATFORM, workload, config=SchedulerConfig(preemption="swap"))
    if decode_kv:
        decode = dataclasses.replace(decode, kv_capacity_tokens=decode_kv)
    prefill = dataclasses.replace(prefill, kv_capacity_tokens=28000)
    _, slow = disaggregated_both_ways(monkeypatch, workload, prefill, decode, pools)
    assert slow.combined.arrival_s is not None and np.ptp(slow.combined.arrival_s) > 0
    assert slow.prefill.rejected.sum() > 0
    if decode_kv:
        assert slow.decode.preemptions.sum() > 0


def test_pools_it_does_not_cover_take_the_python_loop():
    """Shared prefixes and multi-step scheduling stay in the Python loop, pools or not."""
    workload = synthetic_workload(5.0, 10.0, seed=1)
    assert compiled.eligible(workload, SchedulerConfig(), 3)
    assert not compiled.eligible(workload, SchedulerConfig(scheduler_steps=4), 2)
    shared = synthetic_workload(5.0, 10.0, seed=1, prefix_share=0.5, prefix_tokens=100)
    assert not compiled.eligible(shared, SchedulerConfig(), 2)


@pytest.mark.parametrize("closed", [False, True])
def test_a_step_beyond_the_tables_gives_the_python_loops_error(monkeypatch, closed):
    """A pool whose step exceeds the step-cost tables falls back to the Python loop,
    which names the step (the compiled loop stops and declines the run)."""
    workload = synthetic_workload(
        math.inf, 1.0, input_tokens=3000, seed=2, requests=40, max_concurrency=8 if closed else None
    )
    config = SchedulerConfig(max_batched_tokens=8192)
    small = dataclasses.replace(
        build_replica(MODEL, PLATFORM, workload, config=config),
        cost=step_cost(MODEL, PLATFORM, max_tokens=2048, max_sequences=256),
    )
    declined = []
    simulate, simulate_closed = compiled.simulate, compiled.simulate_closed
    monkeypatch.setattr(compiled, "simulate", lambda *a: declined.append(simulate(*a)))
    monkeypatch.setattr(
        compiled, "simulate_closed", lambda *a: declined.append(simulate_closed(*a))
    )
    with pytest.raises(InputError, match="exceeds the 2048 tokens"):
        if closed:
            simulate_disaggregated(
                workload, small, small, link=kv_link(small, small, 2, 2), prefill_replicas=2,
                decode_replicas=2,
            )  # fmt: skip
        else:
            simulate_pool(workload, small.cost, config, small.kv_capacity_tokens, replicas=2)
    assert declined == [None]
