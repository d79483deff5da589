"""`codesign serve` step costs of windowed, state-space and linear-attention models:
pure steps equal genz.predict, windowed sums by hand, state slots in the KV capacity."""

from __future__ import annotations

import numpy as np
import pytest

from genz import (
    Parallelism,
    Precision,
    Scenario,
    load_model,
    predict,
    step_cost,
    with_sliding_window,
)
from roofline import load_platform
from search.serving import SchedulerConfig, build_replica, run, synthetic_workload


@pytest.fixture(scope="module")
def h100():
    return load_platform("h100-sxm")


def _cost(name, platform, tp=1, max_tokens=70_000):
    return step_cost(
        load_model(name),
        platform,
        Precision(),
        Parallelism(tp=tp),
        max_tokens=max_tokens,
        max_sequences=64,
    )


# State-space / linear-attention prefills count one state write per prompt (the step's
# chunks), as genz.predict's batch of prompts does.
@pytest.mark.parametrize(
    ("name", "tp"),
    [
        ("mistral-7b", 1),  # every layer windowed (4,096)
        ("gemma-2-9b", 1),  # alternating local / global
        ("jamba-v0.1", 4),
        ("qwen3-next-80b-a3b", 4),
        ("nemotron-h-8b", 1),
        ("falcon-h1-7b", 1),
        ("mamba-2.8b", 1),
        ("zamba2-7b", 1),  # Mamba-2 + shared-block invocations with their own KV
    ],
)
def test_pure_steps_reproduce_predict_at_long_context(h100, name, tp):
    model = load_model(name)
    cost = _cost(name, h100, tp, max_tokens=66_000)
    for batch, prompt, out in ((2, 32_768, 256), (8, 8000, 192), (1, 1024, 128)):
        scenario = Scenario(batch, prompt, out, parallelism=Parallelism(tp=tp))
        expected = predict(model, h100, scenario)
        context = prompt + out / 2
        decode = cost.step_time(0, 0.0, 0.0, batch, batch * context, batch, batch)
        assert decode == pytest.approx(expected.tpot_s, rel=1e-9)
        assert cost.decode_time(batch, batch * context) == pytest.approx(decode, rel=1e-12)
        pairs = batch * (prompt * prompt - prompt * (prompt - 1) / 2)
        prefill = cost.step_time(batch * prompt, batch * prompt, pairs, 0, 0.0, batch, batch)
        assert prefill == pytest.approx(expected.ttft_s, rel=1e-9)
        arrays = cost.step_times(
            [batch * prompt], [batch * prompt], [pairs], [0], [0], [batch], [batch]
        )
        assert arrays[0] == pytest.approx(prefill, rel=1e-12)


def test_state_passes_per_chunk_with_a_runtime_profile(h100):
    from genz import load_runtime

    model, profile = load_model("jamba-v0.1"), load_runtime("vllm")
    cost = step_cost(model, h100, max_tokens=20_000, max_sequences=16, runtime=profile)
    for batch in (1, 4, 16):
        scenario = Scenario(batch, 1024, 64)
        expected = predict(model, h100, scenario, runtime=profile)
        pairs = batch * (1024 * 1024 - 1024 * 1023 / 2)
        prefill = cost.step_time(batch * 1024, batch * 1024.0, pairs, 0, 0.0, batch, batch)
        assert prefill == pytest.approx(expected.ttft_s, rel=1e-9)
    # The state passes are outside the token tables: loops cost steps through step_time.
    assert not cost.affine_in_context
    # A continuing chunk reads its state as well as writing it: 2 passes per chunk.
    assert (
        cost.state_passes(512, 1024.0, 0, 1) == 2.0 and cost.state_passes(512, 512.0, 0, 1) == 1.0
    )
    moved = cost.step_work([4096], [4096.0], [pairs], [0], [0.0], [4], [4])[1]
    one = cost.step_work([4096], [4096.0], [pairs], [0], [0.0], [4], [1])[1]
    state = 28 * (8192 * 16 + 3 * 8192) * 2  # 28 Mamba layers' states at 2 B
    assert moved[0] - one[0] == pytest.approx(3 * state, rel=1e-9)


def test_windowed_sums_by_hand(h100):
    cost = _cost("mistral-7b", h100)
    assert cost.window_tokens == 4096 and not cost.affine_in_context
    # One chunk of 100 queries ending at 5,000: every query sees 4,096 keys (409,600
    # pairs of the causal 495,050) and the chunk reads min(5000, 100 + 4095) = 4,195 keys.
    (tokens, keys, pairs), (d, decode) = cost.windowed_sums(100, 5000.0, 495_050.0, 3, 900.0, 4)
    assert (tokens, keys, pairs) == (100, 4195.0, 409_600.0)
    # Decode: min(C, D w'): 3 sequences at 300 tokens keep all; at 10,000 each, 3 x 4,096.
    assert (d, decode) == (3, 900.0)
    assert cost.windowed_sums(0, 0.0, 0.0, 3, 30_000.0, 3)[1] == (3, 12_288.0)


def test_windowed_decode_stops_growing_past_the_window(h100):
    mistral, gemma = _cost("mistral-7b", h100), _cost("gemma-2-9b", h100)
    assert mistral.decode_time(8, 8 * 10_000) == mistral.decode_time(8, 8 * 30_000)
    assert mistral.decode_time(8, 8 * 2000) < mistral.decode_time(8, 8 * 4000)
    # Gemma-2's global layers keep growing, at half the rate of all-global attention.
    grow = gemma.decode_time(8, 8 * 30_000) - gemma.decode_time(8, 8 * 10_000)
    full = step_cost(
        with_sliding_window(load_model("gemma-2-9b"), 0), h100, max_tokens=1000, max_sequences=64
    )
    full_grow = full.decode_time(8, 8 * 30_000) - full.decode_time(8, 8 * 10_000)
    assert grow == pytest.approx(full_grow / 2, rel=1e-6)


def test_windowed_arrays_equal_scalars(h100):
    cost = _cost("gemma-2-9b", h100)
    rows = [(512, 6000.0, 2_000_000.0, 5, 40_000.0, 6, 6), (0, 0.0, 0.0, 9, 90_000.0, 9, 9)]
    arrays = cost.step_times(*(np.array(column, float) for column in zip(*rows, strict=True)))
    for row, value in zip(rows, arrays, strict=True):
        assert cost.step_time(*row) == pytest.approx(value, rel=1e-12)
    flop, moved = cost.step_work(*(np.array(c, float) for c in zip(*rows, strict=True)))
    # decode at 10,000 tokens per sequence: the 21 windowed layers read 4,096 keys each
    far = cost.step_work([0], [0.0], [0.0], [9], [90_000.0], [9], [9])[1]
    farther = cost.step_work([0], [0.0], [0.0], [9], [180_000.0], [9], [9])[1]
    per_token = 21 * 2 * 8 * 256 * 2  # the global layers' K and V at 2 B, per token
    assert farther[0] - far[0] == pytest.approx(90_000 * per_token, rel=1e-9)
    assert np.all(flop > 0) and np.all(moved > 0)


def test_state_slots_are_reserved_in_the_kv_capacity(h100):
    cost = _cost("nemotron-h-8b", h100)
    # 24 Mamba-2 states of 1,079,296 elements at 2 B; 4 attention layers x 2 x 8 x 128 x 2 B.
    assert cost.state_bytes_per_sequence == 24 * 1_079_296 * 2
    assert cost.kv_bytes_per_token == 16_384
    free = 0.9 * cost.capacity_bytes - cost.weights_bytes - 1e9
    expected = int((free - 64 * 24 * 1_079_296 * 2) // 16_384)
    assert cost.kv_capacity_tokens(0.9, 1e9) == expected
    assert cost.kv_bytes_per_sequence(1000.0) == 24 * 1_079_296 * 2 + 16_384_000


def test_windowed_kv_per_sequence_is_capped(h100):
    cost = _cost("mistral-7b", h100)
    per_token = 32 * 2 * 8 * 128 * 2
    assert cost.kv_bytes_per_sequence(2000.0) == 2000 * per_token
    assert cost.kv_bytes_per_sequence(32_768.0) == 4096 * per_token


def test_pure_ssm_has_no_per_token_cache(h100):
    cost = _cost("mamba-2.8b", h100)
    assert cost.kv_bytes_per_token == 0 and cost.state_bytes_per_sequence == 12_451_840
    assert cost.kv_capacity_tokens(0.9, 1e9) > 10**12
    assert cost.decode_time(8, 8 * 1000.0) == cost.decode_time(8, 8 * 100_000.0)


@pytest.mark.parametrize("name", ["mistral-7b", "mamba-2.8b"])
def test_serving_runs_windowed_and_state_models(h100, name):
    model = load_model(name)
    busy = synthetic_workload(2.0, 10.0, input_tokens=6000, output_tokens=64, seed=4)
    replica = build_replica(model, h100, busy, config=SchedulerConfig())
    result = run(busy, replica)
    assert len(result.e2e_s) == len(busy) and result.summary["tpot_s_p50"] > 0
    # A lone request past the window (or on a pure SSM): every decode step costs the
    # same, so its TPOT is one decode step of the cost model at any context past 4,096.
    alone = synthetic_workload(0.01, 10.0, input_tokens=6000, output_tokens=64, length_cv=0.0)
    lone = run(alone, build_replica(model, h100, alone, config=SchedulerConfig()))
    step = replica.cost.decode_time(1, 6001.0)
    assert step == replica.cost.decode_time(1, 6063.0)
    assert lone.summary["tpot_s_p50"] == pytest.approx(step, rel=1e-9)


@pytest.mark.parametrize(
    ("name", "weight_offload", "kv_offload"),
    [("llama-3.1-8b", 0.5, 0.0), ("llama-3.1-8b", 0.2, 0.6), ("mistral-7b", 0.0, 0.8)],
)
def test_offloaded_steps_reproduce_predict(h100, name, weight_offload, kv_offload):
    model = load_model(name)
    cost = step_cost(
        model,
        h100,
        max_tokens=40_000,
        max_sequences=64,
        weight_offload=weight_offload,
        kv_offload=kv_offload,
    )
    assert not cost.affine_in_context
    for batch, prompt, out in ((4, 8000, 256), (16, 1024, 128)):
        scenario = Scenario(
            batch, prompt, out, weight_offload=weight_offload, kv_offload=kv_offload
        )
        expected = predict(model, h100, scenario)
        context = prompt + out / 2
        decode = cost.step_time(0, 0.0, 0.0, batch, batch * context, batch, batch)
        assert decode == pytest.approx(expected.tpot_s, rel=1e-9)
        assert cost.decode_times(batch, [batch * context])[0] == pytest.approx(decode, rel=1e-12)
        pairs = batch * (prompt * prompt - prompt * (prompt - 1) / 2)
        prefill = cost.step_time(batch * prompt, batch * prompt, pairs, 0, 0.0, batch, batch)
        assert prefill == pytest.approx(expected.ttft_s, rel=1e-9)


def test_weight_offload_streams_the_host_share_each_decode_step(h100):
    cost = step_cost(
        load_model("llama-3.1-8b"), h100, max_tokens=64, max_sequences=8, weight_offload=0.5
    )
    # Half of 16,060,522,496 B over the 63 GB/s host link: a link-bound step of 127.5 ms.
    assert cost.offloaded_weights_bytes == pytest.approx(16_060_522_496 / 2)
    assert cost.decode_time(1, 100.0) == pytest.approx(16_060_522_496 / 2 / 63e9, rel=1e-12)
    assert cost.weights_bytes == pytest.approx(16_060_522_496 / 2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weight_offload": 1.5}, r"--weight-offload must be a share in \[0, 1\], got 1.5"),
        ({"kv_offload": -0.1}, r"--kv-offload must be a share in \[0, 1\], got -0.1"),
    ],
)
def test_bad_offload_shares_are_named(h100, kwargs, message):
    from roofline import InputError

    with pytest.raises(InputError, match=message):
        step_cost(load_model("llama-3.1-8b"), h100, max_tokens=8, max_sequences=2, **kwargs)
