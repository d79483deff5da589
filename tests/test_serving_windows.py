"""Window-aware KV occupancy in the serving loop (`search.serving.occupancy`): admission
at long context by hand, the reservation's growth stopping at the window, and every
non-windowed run bit for bit as main ran it before the change."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from genz import load_model
from roofline import load_platform
from search.serving import SchedulerConfig, build_replica, simulate_replica, synthetic_workload


@pytest.fixture(scope="module")
def h100():
    return load_platform("h100-sxm")


def _at_once(prompt: int, output: int, requests: int):
    return synthetic_workload(
        math.inf, 1.0, input_tokens=prompt, output_tokens=output, length_cv=0.0, requests=requests
    )


def test_non_windowed_runs_are_bit_identical_to_main(monkeypatch):
    from serving_golden import GOLDEN, records

    monkeypatch.setenv("CODESIGN_SERVING_CORE", "python")
    pinned = json.loads(GOLDEN.read_text())
    assert records() == pinned


def test_mistral_at_32k_admits_what_the_window_implies(h100):
    # Mistral-7B: 32 layers, 8 KV heads of 128, fp16: 32 x 2 x 8 x 128 x 2 B a token, every
    # layer windowed at 4,096. vLLM's sliding-window manager keeps at most
    # ceil((4096 + 16 - 2) / 16) = 257 blocks of 16 tokens a sequence; a 32k prompt's
    # sequence holds exactly that, and past the window it no longer grows.
    per_token = 32 * 2 * 8 * 128 * 2
    blocks = 5240
    capacity_bytes = blocks * 16 * per_token
    per_sequence_bytes = math.ceil((4096 + 16 - 2) / 16) * 16 * per_token
    expected = capacity_bytes // per_sequence_bytes  # 20
    counted_full = capacity_bytes // ((32_768 + 64) // 16 * 16 * per_token + 16 * per_token)
    assert (expected, counted_full) == (20, 2)
    workload = _at_once(32_768, 64, 30)
    replica = build_replica(
        load_model("mistral-7b"), h100, workload, config=SchedulerConfig(kv_blocks=blocks)
    )
    assert replica.cost.kv_bytes_per_token == per_token
    record = simulate_replica(workload, replica)
    assert record.running.max() == expected
    assert record.kv_tokens.max() == expected * per_sequence_bytes / per_token
    assert np.all(np.isfinite(record.finish_s)) and not record.preemptions.any()


def test_gemma2_counts_global_layers_in_full_and_local_ones_to_the_window(h100):
    # Gemma-2-9B: 21 global and 21 local (4,096) layers of equal KV width: a 32k sequence
    # reserves (32,768 + 15) tokens on the global half and 257 blocks on the local half,
    # in full-attention-token equivalents (a + b) / 2. Admission keeps a block of growth
    # per running sequence (the global half grows one token a step: 1/2 an equivalent).
    blocks, prompt = 3000, 32_768
    capacity = blocks * 16 * 2  # half-token units
    need = (prompt + 15) + 257 * 16
    admitted = 0
    while capacity - admitted * need >= need + admitted * 16:
        admitted += 1
    workload = _at_once(prompt, 32, 12)
    replica = build_replica(
        load_model("gemma-2-9b"), h100, workload, config=SchedulerConfig(kv_blocks=blocks)
    )
    record = simulate_replica(workload, replica)
    assert admitted == 2 and record.running.max() == admitted
    assert record.kv_tokens.max() <= record.kv_capacity_tokens


def test_a_windowed_reservation_grows_to_the_window_then_stays(h100):
    # Blocks of 8 decode steps (multi-step scheduling) put a timeline point every 8 steps.
    workload = _at_once(4000, 300, 1)
    config = SchedulerConfig(scheduler_steps=8)
    replica = build_replica(load_model("mistral-7b"), h100, workload, config=config)
    record = simulate_replica(workload, replica)
    held = record.kv_tokens[record.running > 0]
    # 4,000 + 15 at admission; + 1 a step until min(c + 15, 4,112) stops growing.
    assert held[0] == 4015 and held[1] == 4023
    assert held.max() == 4112 and np.count_nonzero(held == 4112) > 20
    assert np.all(np.diff(held) >= 0)


@pytest.mark.parametrize("preemption", ["recompute", "swap"])
@pytest.mark.parametrize("policy", ["continuous", "chunked"])
def test_windowed_accounting_balances_under_preemption(h100, policy, preemption):
    workload = synthetic_workload(
        3.0, 8.0, input_tokens=3000, output_tokens=3000, prefix_share=0.5, prefix_tokens=1000,
        seed=2,
    )  # fmt: skip
    config = SchedulerConfig(
        policy=policy, kv_blocks=3000, preemption=preemption, max_batched_tokens=2048
    )
    record = simulate_replica(workload, build_replica(load_model("gemma-2-9b"), h100, workload,
                                                      config=config))  # fmt: skip
    assert record.preemptions.sum() > 0 and np.all(np.isfinite(record.finish_s))
    assert record.kv_tokens.max() <= record.kv_capacity_tokens
    # every sequence gave back what it reserved: the resident prefix is all that is left
    assert record.kv_tokens[-1] == 1000


def test_static_batches_and_kv_transfers_keep_the_window_only(h100):
    # Static batching pads rows to the longest (32,768 + 64): Mistral's windowed layers
    # keep 4,096 of them, so 83,840 tokens of cache hold floor(83,840 / 4,096) = 20 rows.
    from search.serving import kv_link, kv_transfer

    mistral = load_model("mistral-7b")
    workload = _at_once(32_768, 64, 30)
    config = SchedulerConfig(policy="static", kv_blocks=5240, max_sequences=24)
    replica = build_replica(mistral, h100, workload, config=config)
    record = simulate_replica(workload, replica)
    assert record.running.max() == 83_840 // 4096 == 20
    # A 32k prompt's KV crossing to a decode pool is one window: 4,096 x 131,072 B.
    decode = build_replica(mistral, h100, workload)
    link = kv_link(replica, decode, bandwidth_bytes_per_s=50e9)
    size, seconds = kv_transfer(workload, replica, decode, link)
    assert size[0] == 4096 * 131_072
    assert seconds[0] == pytest.approx(4096 * 131_072 / 50e9 + link.latency_s, rel=1e-12)
