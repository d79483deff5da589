"""Zamba2 (Mamba-2 backbone + shared transformer blocks): parsing, parameters, FLOP and
bytes of a decode step and a prefill by hand, KV only at the shared invocations, and the
model through predict, the grid, the scenario batch, requirements and OI/CF."""

from __future__ import annotations

import json

import numpy as np
import pytest

from genz import Scenario, evaluate_grid, load_model, parameter_count, predict
from genz.hf_config import model_from_hf_config, models_dir
from genz.memory import kv_cache_bytes_per_device
from roofline import InputError, load_platform

ONE = np.ones(1)
# Zamba2-7B (data/models/zamba2-7b.json): h 3584, 81 Mamba-2 layers (d_inner 7168, N 64,
# 2 groups, 112 heads of 64, conv 4), 13 invocations of 2 shared blocks (32 heads of
# 2h / 32 = 224 over a 2h = 7168 input, gated MLP 14336, MLP adapters of rank 128).
H, D, N, G, HEADS_M, K = 3584, 7168, 64, 2, 112, 4
CONV = D + 2 * G * N  # 7424 channels: x, B, C
IN_PROJ = 2 * D + 2 * G * N + HEADS_M  # 14704: x, z, B, C, dt
STATE = D * N + (K - 1) * CONV  # recurrent state + convolution window, elements
L, S, BLOCKS = 81, 13, 2
W, HEADS, HEAD_DIM, FFN, R, V = 2 * H, 32, 224, 14336, 128, 32000
KV_ELEMENTS = 2 * 32 * HEAD_DIM  # K and V per token per invocation


def _preset(name="zamba2-7b"):
    return json.loads((models_dir() / f"{name}.json").read_text())


def test_layout_from_layers_block_type():
    model = load_model("zamba2-7b")
    shared = [i for i in range(81) if model.layer_kind(i) == "shared_attention"]
    assert shared == [6, 11, 17, 23, 29, 35, 41, 47, 53, 59, 65, 71, 77]
    assert (model.num_ssm_layers, model.num_attention_layers, model.num_dense_layers) == (
        81,
        13,
        13,
    )
    assert model.head_dim == HEAD_DIM and model.attention_input_size == W
    assert model.ssm.num_heads == HEADS_M and model.ssm.groups == G
    assert model.shared_block.num_blocks == BLOCKS and model.tie_word_embeddings


def test_parameter_count_by_hand_and_published():
    mamba = H * IN_PROJ + CONV * K + CONV + 3 * HEADS_M + D + D * H + H
    block = 3 * W * W + W * H + H * 2 * FFN + FFN * H + W + H  # stored once per block
    invocation = H * H + R * (H + 2 * FFN)  # linear + MLP adapter
    expected = L * mamba + BLOCKS * block + S * invocation + V * H + H
    count = parameter_count(load_model("zamba2-7b"))
    assert count.total == expected == 7_356_749_648 == count.active
    # Published 7.4B (Zamba2 report, rounded to 0.1B): within half the rounding step.
    assert abs(count.total - 7.4e9) <= 0.05e9


def _gemm(k, n, tokens):
    """FLOP and bytes of a [tokens, k] x [k, n] GEMM, 16-bit weights and activations."""
    return 2 * tokens * k * n, 2 * k * n + 2 * tokens * (k + n)


def _by_hand(batch, query, context, prefill):
    """FLOP and bytes of one pass of ``batch`` sequences of ``query`` new tokens at
    ``context`` (16-bit everywhere, tp 1), from genz.graph's documented conventions."""
    t = batch * query
    flop = bytes_ = 0.0

    def add(pair, times=1):
        nonlocal flop, bytes_
        flop += times * pair[0]
        bytes_ += times * pair[1]

    def elementwise(width, per, times):  # elements read and written once, 2 B each
        add((per * t * width, 4 * t * width), times)

    # 81 Mamba-2 layers: norm, in_proj, conv, scan (with the chunked-scan term in
    # prefill), out_proj; the state written (and read when decoding).
    elementwise(H, 4, L)
    add(_gemm(H, IN_PROJ, t), L)
    elementwise(CONV, 2 * K + 4, L)
    scan_flop = t * D * (5 * N + 6)
    if prefill:
        scan_flop += t * HEADS_M * min(query, 256) * (N + D // HEADS_M)
    state_rw = 1 if prefill else 2
    scan_bytes = 2 * t * (3 * D + HEADS_M + 2 * G * N) + 2 * state_rw * batch * STATE
    add((scan_flop, scan_bytes), L)
    add(_gemm(D, H, t), L)
    # 13 shared-block invocations: 2h norm, q/k/v from 2h, attention, o_proj, linear,
    # pre-FFN norm, gated MLP and its adapter.
    elementwise(W, 4, S)
    add(_gemm(W, 3 * W, t), S)
    pairs = query * context - query * (query - 1) / 2
    attention_flop = 4 * batch * HEADS * HEAD_DIM * pairs + 5 * batch * HEADS * pairs
    kv = 2 * batch * context * KV_ELEMENTS + 2 * t * KV_ELEMENTS
    add((attention_flop, 2 * 2 * t * HEADS * HEAD_DIM + kv), S)
    add(_gemm(W, H, t), S)
    add(_gemm(H, H, t), S)
    elementwise(H, 4, S)
    add(_gemm(H, 2 * FFN, t), S)
    elementwise(FFN, 5, S)
    add(_gemm(FFN, H, t), S)
    add(_gemm(H, R, t), S)
    add(_gemm(R, 2 * FFN, t), S)
    # embedding lookup (weights and activations 2 B per element), final norm, LM head
    # (prefill: the last position of each sequence only).
    head = batch if prefill else t
    bytes_ += t * H * (2 + 2)
    add((4 * head * H, 4 * head * H))
    add(_gemm(H, V, head))
    return flop, bytes_


@pytest.mark.parametrize("batch", [1, 4])
def test_decode_and_prefill_flop_and_bytes_by_hand(batch):
    result = predict(
        load_model("zamba2-7b"),
        load_platform("h100-sxm"),
        Scenario(batch=batch, input_tokens=2048, output_tokens=256),
    )
    decode = _by_hand(batch, 1, 2048 + 128, prefill=False)  # mean decode context
    prefill = _by_hand(batch, 2048, 2048, prefill=True)
    assert result.decode.flop == pytest.approx(decode[0], rel=1e-12)
    assert result.decode.bytes == pytest.approx(decode[1], rel=1e-12)
    assert result.prefill.flop == pytest.approx(prefill[0], rel=1e-12)
    assert result.prefill.bytes == pytest.approx(prefill[1], rel=1e-12)


def test_kv_only_at_the_shared_invocations_and_a_state_per_layer():
    model = load_model("zamba2-7b")
    for context in (1000, 8192):
        ctx = np.array([float(context)])
        cache = float(kv_cache_bytes_per_device(model, ONE, ctx, 16 * ONE, ONE, ONE, ONE)[0])
        # each of the 13 invocations keeps its own K and V (2 B); 81 Mamba-2 states (2 B)
        assert cache == S * KV_ELEMENTS * 2 * context + L * STATE * 2


def _small(**overrides):
    """A small Zamba2 config in transformers' names (Zamba2Config's keys)."""
    config = {
        "model_type": "zamba2",
        "hidden_size": 64,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "intermediate_size": 256,
        "vocab_size": 1000,
        "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid"],
        "hybrid_layer_ids": [1, 3],
        "num_mem_blocks": 1,
        "mamba_d_state": 16,
        "n_mamba_heads": 8,
        "adapter_rank": 8,
        "use_shared_attention_adapter": True,
        "use_shared_mlp_adapter": True,
    }
    config.update(overrides)
    return {key: value for key, value in config.items() if value is not None}


def test_transformers_names_and_attention_adapters():
    model = model_from_hf_config(_small())
    h, d, w = 64, 128, 128  # d_inner = 2h; the shared attention's input is 2h
    mamba = h * (2 * d + 2 * 16 + 8) + (d + 32) * 5 + 3 * 8 + d + d * h + h
    block = 3 * w * w + w * h + h * 512 + 256 * h + w + h
    invocation = h * h + 8 * (h + 512) + 3 * 8 * (w + w)  # linear, MLP and q/k/v adapters
    assert parameter_count(model).total == 4 * mamba + block + 2 * invocation + 1000 * h + h
    without = model_from_hf_config(_small(use_shared_attention_adapter=False))
    assert parameter_count(model).total - parameter_count(without).total == 2 * 3 * 8 * 2 * w
    # the adapters run at every invocation: 3 down and 3 up projections of rank 8
    cost = predict(model, load_platform("h100-sxm"), Scenario(1, 16, 2)).decode.pass_cost
    flop = dict(zip(cost.names, cost.first_scenario(cost.flop), strict=True))
    assert flop["qkv_adapter_down"] == flop["qkv_adapter_up"] == 2 * 3 * 2 * w * 8


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"layers_block_type": None}, r"needs 'layers_block_type', a list of num_hidden_layers"),
        ({"layers_block_type": ["mamba", "attn", "mamba", "hybrid"]}, r"\[1\] = 'attn'"),
        ({"layers_block_type": ["mamba"] * 4, "hybrid_layer_ids": None}, "no 'hybrid' layer"),
        ({"hybrid_layer_ids": [1, 2]}, "disagrees with the 'hybrid' entries"),
        ({"mamba_d_state": None}, r"needs 'mamba_d_state' \(or 'state_size'\)"),
        ({"num_mem_blocks": None}, r"needs 'num_mem_blocks' \(shared transformer blocks\)"),
        ({"n_mamba_heads": None}, r"needs 'mamba_headdim' \(Mamba-2 head width\)"),
        ({"intermediate_size": None}, r"needs 'intermediate_size' \(or 'ffn_hidden_size'\)"),
        ({"num_key_value_heads": 2}, "use_shared_attention_adapter needs num_key_value_heads"),
        ({"num_attention_heads": 3}, r"must divide the shared attention's width"),
        ({"add_bias_linear": True}, "add_bias_linear true"),
    ],
)
def test_bad_zamba2_configs_are_refused_in_one_line(overrides, message):
    with pytest.raises(InputError, match=message) as info:
        model_from_hf_config(_small(**overrides), origin="zamba.json")
    assert "\n" not in str(info.value) and str(info.value).startswith("zamba.json:")


def test_variants_that_do_not_apply_are_refused():
    from genz import with_layer_mix, with_lora, with_sliding_window

    model = load_model("zamba2-7b")
    with pytest.raises(InputError, match="shared transformer blocks"):
        with_layer_mix(model, attention_layers=20)
    with pytest.raises(InputError, match="shared transformer blocks"):
        with_sliding_window(model, 1024)
    with pytest.raises(InputError, match="LoRA on shared transformer blocks"):
        with_lora(model, 16)


def test_grid_and_scenario_batch_equal_predict():
    from calibration import parse_scenarios, predict_scenarios

    model, h100 = load_model("zamba2-7b"), load_platform("h100-sxm")
    want = predict(model, h100, Scenario(batch=8, input_tokens=4096, output_tokens=128))
    grid = evaluate_grid(model, h100, batch=[8], input_tokens=[4096], output_tokens=[128])
    assert float(np.ravel(grid.tpot_s)[0]) == pytest.approx(want.tpot_s, rel=1e-12)
    assert float(np.ravel(grid.ttft_s)[0]) == pytest.approx(want.ttft_s, rel=1e-12)
    rows, errors = parse_scenarios(
        "model,hw,batch,input_tokens,output_tokens\nzamba2-7b,h100-sxm,8,4096,128\n"
    )
    assert not errors
    (result,) = predict_scenarios(rows)
    assert result["tpot_s"] == pytest.approx(want.tpot_s, rel=1e-12)


def test_requirements_and_oicf_rows():
    from genz import load_use_cases, use_case
    from search.sizing import oicf_report
    from search.sizing.requirements import ServiceLevel, find_requirement

    model, h100 = load_model("zamba2-7b"), load_platform("h100-sxm")
    chat = Scenario(batch=1, input_tokens=1024, output_tokens=256)
    found = find_requirement(model, h100, chat, ServiceLevel(max_tpot_s=0.004), method="bandwidth")
    assert found.success and found.scale > 1
    load_use_cases()
    case = use_case("long-context-rag")
    (row,) = oicf_report([model], [case], h100, bits=((16.0, 16.0),)).rows
    context = case.input_tokens + case.output_tokens
    assert row.attention == "MHA+SSM"
    assert row.kv_bytes_per_request == pytest.approx(
        S * KV_ELEMENTS * 2 * context + L * STATE * 2, rel=1e-9
    )


def test_serve_runs_and_a_lone_request_decodes_at_the_step_cost():
    from search.serving import SchedulerConfig, build_replica, run, synthetic_workload

    model, h100 = load_model("zamba2-7b"), load_platform("h100-sxm")
    alone = synthetic_workload(0.01, 10.0, input_tokens=2000, output_tokens=64, length_cv=0.0)
    replica = build_replica(model, h100, alone, config=SchedulerConfig())
    lone = run(alone, replica)
    # its decode steps run at contexts 2,001 ... 2,063: the TPOT lies between those steps
    first, last = replica.cost.decode_time(1, 2001.0), replica.cost.decode_time(1, 2063.0)
    assert first < last  # the shared invocations' KV grows with the context
    assert first <= lone.summary["tpot_s_p50"] <= last


def test_scaled_twin_keeps_the_shared_attention_width():
    from genz.scaled_models import scale_model

    model = load_model("zamba2-7b")
    half = scale_model(model, 0.5)
    assert half.num_heads * half.head_dim == 2 * half.hidden_size and half.head_dim == HEAD_DIM
    assert half.shared_block == model.shared_block and half.num_shared_layers > 0
    assert 0.4 < parameter_count(half).total / parameter_count(model).total < 0.6


def test_zamba2_2_7b_parameter_count_by_hand():
    model = load_model("zamba2-2.7b")
    h, d, heads_m, n = 2560, 5120, 80, 64  # 80 Mamba-2 heads of 64, one group
    conv = d + 2 * n
    mamba = h * (2 * d + 2 * n + heads_m) + conv * 4 + conv + 3 * heads_m + d + d * h + h
    block = 3 * (2 * h) ** 2 + 2 * h * h + h * 2 * 10240 + 10240 * h + 2 * h + h
    invocation = h * h + 128 * (h + 2 * 10240)
    expected = 54 * mamba + 2 * block + 9 * invocation + 32000 * h + h
    assert parameter_count(model).total == expected == 2_662_214_560
    assert [i for i in range(54) if model.layer_kind(i) == "shared_attention"] == [
        6, 12, 18, 24, 30, 36, 42, 47, 51
    ]  # fmt: skip
