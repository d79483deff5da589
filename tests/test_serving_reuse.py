"""The simulator's fast paths change no number: decode-only step costs equal the general
ones bit for bit, and a reused step-cost table (the Serving page's cache) gives the same
replica and the same run as one built afresh."""

import dataclasses

import numpy as np
import pytest

from app.dashboard import serving_page
from app.dashboard.state import Selection
from genz import load_model, load_runtime, step_cost
from roofline import InputError, load_platform
from search.serving import (
    SLO,
    SchedulerConfig,
    build_replica,
    kv_link,
    run,
    run_disaggregated,
    step_table_tokens,
    synthetic_workload,
)

SEQUENCES = [1, 2, 3, 7, 31, 64]


@pytest.fixture(scope="module")
def costs():
    """Ideal and vLLM-profile tables (the profile adds fixed costs per step and
    sequence), and one with a second context operator (different coefficients)."""
    model, platform = load_model("llama-3.1-8b"), load_platform("h100-sxm")
    ideal = step_cost(model, platform, max_tokens=512, max_sequences=64)
    vllm = step_cost(
        model, platform, max_tokens=512, max_sequences=64, runtime=load_runtime("vllm")
    )
    two = dataclasses.replace(
        ideal,
        context_compute=np.concatenate([ideal.context_compute, ideal.context_compute * 3.1], 1),
        context_memory=np.concatenate([ideal.context_memory, ideal.context_memory * 0.4], 1),
        context_overhead_s=np.concatenate(
            [ideal.context_overhead_s, ideal.context_overhead_s + 1e-6], 1
        ),
    )
    return [ideal, vllm, two]


@pytest.mark.parametrize("which", [0, 1, 2])
def test_decode_times_equal_step_times_bit_for_bit(costs, which):
    cost = costs[which]
    for d in SEQUENCES:
        contexts = d * 37.0 + d * np.arange(1, 300, dtype=float)
        zero = np.zeros(len(contexts))
        general = cost.step_times(zero, zero, zero, d + zero, contexts, d + zero, d + zero)
        fast = cost.decode_times(d, contexts)
        assert fast.dtype == general.dtype and fast.shape == general.shape
        assert np.array_equal(fast, general)
        for context in (d + 1, d * 4096, int(contexts[-1])):
            assert cost.decode_time(d, context) == cost.step_time(0, 0.0, 0.0, d, context, d, d)
    assert cost.decode_time(0, 100) == 0.0
    assert not cost.decode_times(0, [1.0, 2.0]).any()


def test_decode_times_refuse_steps_beyond_the_tables(costs):
    with pytest.raises(InputError, match="65 emitting sequences exceeds"):
        costs[0].decode_time(65, 1000)
    with pytest.raises(InputError, match="exceeds the 512 tokens and 64 sequences"):
        costs[0].decode_times(600, [1000.0])


def _same_run(a, b):
    for name in ("ttft_s", "tpot_s", "e2e_s", "timeline_s", "kv_occupancy", "waiting"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert a.summary == pytest.approx(b.summary, rel=0, abs=0, nan_ok=True)


@pytest.mark.parametrize("policy", ["continuous", "chunked", "static"])
def test_a_reused_table_gives_the_same_replica_and_run(policy):
    model, platform = load_model("llama-3.1-8b"), load_platform("h100-sxm")
    config = SchedulerConfig(policy=policy, max_sequences=32 if policy == "static" else 256)
    shared = None
    for rate in (6.0, 14.0):
        workload = synthetic_workload(rate, 30.0, prefix_share=0.5, prefix_tokens=800, seed=1)
        fresh = build_replica(model, platform, workload, config=config)
        if shared is None or shared.max_tokens != step_table_tokens(workload, config):
            shared = fresh.cost
        reused = build_replica(model, platform, workload, config=config, cost=shared)
        assert reused == dataclasses.replace(fresh, cost=shared)
        assert reused.cost.max_tokens == fresh.cost.max_tokens
        _same_run(run(workload, reused), run(workload, fresh))


def test_a_table_of_another_size_or_replica_is_refused():
    model, platform = load_model("llama-3.1-8b"), load_platform("h100-sxm")
    workload = synthetic_workload(5.0, 10.0, seed=0)
    small = step_cost(model, platform, max_tokens=512, max_sequences=256)
    with pytest.raises(InputError, match="covers 512 tokens and 256 sequences"):
        build_replica(model, platform, workload, cost=small)
    other = step_cost(load_model("llama-3.2-1b"), platform, max_tokens=8192, max_sequences=256)
    with pytest.raises(InputError, match=r"is of Llama 3\.2 1B on h100-sxm"):
        build_replica(model, platform, workload, cost=other)


def test_the_pages_cached_tables_reproduce_uncached_runs():
    """The Serving page's replicas (tables from its cache) run exactly as the CLI's
    (tables built per workload), a plain replica and disaggregated pools with prefixes."""
    selection = Selection()
    slo = SLO(ttft_s=2.0, tpot_s=0.05)
    for rate in (8.0, 16.0):
        workload = synthetic_workload(
            rate, 30.0, prefix_share=0.8, prefix_tokens=2000, prefix_count=20, seed=0
        )
        page = serving_page._replica(selection, None, "continuous", workload)
        fresh = build_replica(
            page.model,
            page.platform,
            workload,
            precision=page.precision,
            parallelism=page.parallelism,
            config=page.config,
        )
        assert fresh == dataclasses.replace(page, cost=fresh.cost)
        _same_run(run(workload, page, slo), run(workload, fresh, slo))
        pools = [
            run_disaggregated(w, p, d, kv_link(p, d, 1, 2), slo, decode_replicas=2)
            for w, p, d in ((workload, page, page), (workload, fresh, fresh))
        ]
        _same_run(*pools)
