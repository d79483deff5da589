"""Requests that outgrow the whole KV cache end the compiled loop's run as they end the
Python loop's (`engine._Engine.first_growth`): one whose preemption is a swap is refused
at re-admission once it could not take a decode step even alone (before, the compiled
loop swapped it in and out forever), one recomputed is refused once its longer prompt
cannot fit; with one-token blocks a swapped victim comes back only with room for one
step of every sequence, itself included (before, both loops swapped it in and out
forever). Every compiled path that can swap is covered (one replica, open-loop pools,
a decode pool's prefilled requests, closed-loop clients on one replica and over pools),
each run in a thread with a deadline so that a loop that never ends fails the test
instead of hanging the suite (numba's ``nogil`` code runs without the GIL)."""

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import assert_same_records

from genz import load_model
from roofline import load_platform
from search.serving import (
    SchedulerConfig,
    Workload,
    build_replica,
    compiled,
    simulate_pool,
    synthetic_workload,
)
from search.serving.closed_pools import simulate_closed_pools

pytestmark = pytest.mark.skipif(compiled.njit is None, reason="numba is not installed")

MODEL, PLATFORM = load_model("llama-3.1-8b"), load_platform("h100-sxm")
#: Seconds a compiled run (machine code already loaded) may take before it counts as
#: never ending; the runs here take milliseconds.
DEADLINE_S = 60.0
SLACK = 15  # KV tokens a sequence reserves beyond its context (block_tokens 16 - 1)


def workload(prompt, output, arrival=None, clients=None) -> Workload:
    """Requests of the given prompt and output tokens (all sent at 0 unless
    ``arrival``; ``clients``: closed-loop concurrency)."""
    prompt, output = np.asarray(prompt, np.int64), np.asarray(output, np.int64)
    at = np.zeros(len(prompt)) if arrival is None else np.asarray(arrival, float)
    zero = np.zeros(len(prompt), np.int64)
    return Workload(at, prompt, output, zero, "test", max_concurrency=clients)


def cost_of(requests: Workload, config: SchedulerConfig):
    return build_replica(MODEL, PLATFORM, requests, config=config).cost


def ended(run: Callable[[], Any]) -> Any:
    """``run()``'s result; the test fails if it has not returned within `DEADLINE_S`."""
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(run()), daemon=True)
    worker.start()
    worker.join(DEADLINE_S)
    assert out, f"the run did not end within {DEADLINE_S:.0f} s"
    return out[0]


@pytest.fixture(scope="module", autouse=True)
def loaded():
    """Each compiled entry point (`compiled_loop.pool`, ``closed_pools``) compiled or
    loaded from numba's cache before any run is timed, on a run that ends (the types
    of every later call are the same)."""
    small = workload([100, 100], [5, 5], clients=1)
    config = SchedulerConfig(kv_capacity_tokens=2000)
    cost = cost_of(small, config)
    simulate_pool(dataclasses.replace(small, max_concurrency=None), cost, config, 2000)
    pool = (cost, config, 2000)
    simulate_closed_pools(small, pool, pool, np.zeros(2))


def compiled_and_python(monkeypatch, run: Callable[[], Any]) -> tuple[Any, Any]:
    """``run()`` on the compiled loop (checking that every pool took it) and with
    ``CODESIGN_SERVING_CORE=python``."""
    taken: list[bool] = []

    def spy(simulate):
        def run_it(*args):
            done = simulate(*args)
            taken.append(done is not None)
            return done

        return run_it

    for name in ("simulate", "simulate_closed"):
        monkeypatch.setattr(compiled, name, spy(getattr(compiled, name)))
    fast = ended(run)
    monkeypatch.undo()
    assert taken and all(taken)
    monkeypatch.setenv(compiled.CORE_VARIABLE, "python")
    slow = run()
    monkeypatch.delenv(compiled.CORE_VARIABLE)
    return fast, slow


@pytest.mark.parametrize("preemption", ["swap", "recompute"])
@pytest.mark.parametrize("policy", ["continuous", "chunked"])
def test_one_replica_refuses_what_outgrows_the_cache(monkeypatch, policy, preemption):
    """Issue #24's run: 1,000-token prompts, 500 output tokens, 1,100 KV tokens. Each
    request is admitted (1,015 with its slack), outgrows the cache alone after 85
    decode steps, is preempted once and refused at re-admission."""
    requests = synthetic_workload(0.01, 150, input_tokens=1000, output_tokens=500, length_cv=0)
    config = SchedulerConfig(kv_capacity_tokens=1100, preemption=preemption, policy=policy)
    cost = cost_of(requests, config)
    fast, slow = compiled_and_python(
        monkeypatch, lambda: simulate_pool(requests, cost, config, 1100)
    )
    assert_same_records(fast, slow)
    assert len(requests) > 1 and slow.rejected.all() and (slow.preemptions == 1).all()


@pytest.mark.parametrize(
    ("extra", "preemption", "preempted", "refused"),
    [
        # need = capacity: swapped, it could never grow, refused before it starts;
        (0, "swap", [0, 0], [True, False]),
        # recomputed, admitted, preempted at its first decode step, refused then
        (0, "recompute", [1, 0], [True, False]),
        # one token of room: one decode step, swapped, refused at re-admission
        (1, "swap", [1, 0], [True, False]),
    ],
)
def test_the_growth_a_swap_needs_is_one_token(monkeypatch, extra, preemption, preempted, refused):
    """A 1,000-token prompt in ``1,000 + 15 + extra`` KV tokens, 50 output tokens, then
    one of the same prompt and one output token (no decode step: admitted whatever the
    preemption, it fills the cache exactly)."""
    capacity = 1000 + SLACK + extra
    requests = workload([1000, 1000], [50, 1], arrival=[0.0, 1.0])
    config = SchedulerConfig(kv_capacity_tokens=capacity, preemption=preemption)
    cost = cost_of(requests, config)
    fast, slow = compiled_and_python(
        monkeypatch, lambda: simulate_pool(requests, cost, config, capacity)
    )
    assert_same_records(fast, slow)
    assert slow.preemptions.tolist() == preempted and slow.rejected.tolist() == refused


@pytest.mark.parametrize("prefilled", [False, True])
@pytest.mark.parametrize("routing", ["least-loaded", "round-robin"])
def test_pools_refuse_what_outgrows_a_replica(monkeypatch, routing, prefilled):
    """Three replicas of 1,100 KV tokens under swap preemption, long requests among
    short ones; ``prefilled``: a decode pool (requests arrive with their KV)."""
    prompt = [1000, 200, 1000, 300, 900, 100, 1000, 50]
    output = [500, 60, 400, 40, 300, 20, 500, 200]
    requests = workload(prompt, output, arrival=0.05 * np.arange(len(prompt)))
    config = SchedulerConfig(kv_capacity_tokens=1100, preemption="swap", policy="chunked")
    cost = cost_of(requests, config)

    def run():
        return simulate_pool(
            requests, cost, config, 1100, replicas=3, prefilled=prefilled, routing=routing
        )

    fast, slow = compiled_and_python(monkeypatch, run)
    assert_same_records(fast, slow)
    assert slow.rejected[[0, 2, 4, 6]].all() and not slow.rejected[[1, 3, 5, 7]].any()
    assert (slow.preemptions[[0, 2, 4, 6]] >= 1).all()


def test_closed_loop_clients_move_on_after_a_refusal(monkeypatch):
    """Two closed-loop clients on one replica under swap: a refused request frees its
    client, which sends the next one (`clients`)."""
    prompt, output = [1000, 200, 1000, 300, 100, 1000], [500, 60, 400, 40, 20, 30]
    requests = workload(prompt, output, clients=2)
    config = SchedulerConfig(kv_capacity_tokens=1100, preemption="swap")
    cost = cost_of(requests, config)
    fast, slow = compiled_and_python(
        monkeypatch, lambda: simulate_pool(requests, cost, config, 1100)
    )
    assert_same_records(fast, slow)
    assert slow.rejected.tolist() == [True, False, True, False, False, False]
    assert np.isfinite(slow.finish_s[[1, 3, 4, 5]]).all() and np.ptp(slow.arrival_s) > 0


@pytest.mark.parametrize("pools", [(1, 1), (2, 2)])
def test_closed_loop_pools_refuse_what_outgrows_the_decode_pool(monkeypatch, pools):
    """Closed-loop clients over a prefill pool and a decode pool of 1,100 KV tokens a
    replica under swap: the long requests are prefilled, outgrow a decode replica, are
    swapped once and refused there."""
    prompt, output = [1000, 200, 1000, 300, 100, 900], [500, 60, 400, 40, 20, 300]
    requests = workload(prompt, output, clients=3)
    prefill = SchedulerConfig(kv_capacity_tokens=20000)
    decode = SchedulerConfig(kv_capacity_tokens=1100, preemption="swap")
    costs = cost_of(requests, prefill), cost_of(requests, decode)
    transfer = np.full(len(prompt), 0.002)

    def run():
        return simulate_closed_pools(
            requests,
            (costs[0], prefill, 20000),
            (costs[1], decode, 1100),
            transfer,
            prefill_replicas=pools[0],
            decode_replicas=pools[1],
        )

    fast, slow = compiled_and_python(monkeypatch, run)
    for a, b in zip(fast, slow, strict=True):
        assert_same_records(a, b)
    first, second = slow
    assert not first.rejected.any()
    assert second.rejected.tolist() == [True, False, True, False, False, True]
    assert (second.preemptions[[0, 2, 5]] == 1).all() and np.isfinite(first.finish_s).all()


@pytest.mark.parametrize("policy", ["continuous", "chunked"])
def test_one_token_blocks_readmit_a_victim_only_with_room_for_a_step(monkeypatch, policy):
    """Blocks of one token (no slack; the watermark one token a sequence): two
    requests of 100 + 400 tokens in 701 KV tokens fill it to 700 at 350 each; the
    later one is swapped and comes back only once both can take a step (before, it was
    swapped in and out forever on both loops); both finish."""
    requests = workload([100, 100], [400, 400])
    config = SchedulerConfig(
        kv_capacity_tokens=701, preemption="swap", block_tokens=1, policy=policy
    )
    cost = cost_of(requests, config)
    fast, slow = compiled_and_python(
        monkeypatch, lambda: ended(lambda: simulate_pool(requests, cost, config, 701))
    )
    assert_same_records(fast, slow)
    assert not slow.rejected.any() and slow.preemptions.tolist() == [0, 1]
