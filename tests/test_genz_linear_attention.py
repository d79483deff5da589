"""Gated DeltaNet linear attention (Qwen3-Next): counts, state and delta-rule cost by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from genz import Scenario, load_model, parameter_count, predict
from genz.hf_config import model_from_hf_config, models_dir
from genz.memory import kv_cache_bytes_per_device
from roofline import InputError, load_platform

# Qwen3-Next-80B-A3B shapes: hidden 2048; Gated DeltaNet K = 16 x 128 = 2048, V = 32 x 128
# = 4096; gated attention 16 Q heads (+16 gate heads) and 2 KV heads of 256.
LINEAR_MIXER = (
    2048 * (2 * 2048 + 2 * 4096)  # in_proj_qkvz
    + 2048 * 2 * 32  # in_proj_ba
    + (2 * 2048 + 4096) * 4  # conv, no bias
    + 2 * 32  # dt_bias, A_log
    + 128  # gated RMSNorm weight (one head's width)
    + 4096 * 2048  # out_proj
)
GATED_ATTENTION = 2048 * (2 * 16 * 256 + 2 * 2 * 256) + 16 * 256 * 2048
EXPERT = 3 * 2048 * 512
EMBEDDINGS = 2 * 151_936 * 2048


def test_qwen3_next_layout_follows_full_attention_interval():
    model = load_model("qwen3-next-80b-a3b")
    full = [i for i in range(48) if model.layer_kind(i) == "full_attention"]
    assert full == list(range(3, 48, 4))
    assert (model.num_linear_layers, model.num_attention_layers, model.num_moe_layers) == (
        36,
        12,
        48,
    )
    assert model.num_shared_experts == 1 and model.attention_output_gate
    assert model.attention_type == "GQA+LA"


def test_qwen3_next_parameter_count_by_hand():
    model = load_model("qwen3-next-80b-a3b")
    per_moe_layer = 512 * EXPERT + EXPERT + 2048 * 512  # routed, shared, router
    expected = (
        36 * LINEAR_MIXER
        + 12 * GATED_ATTENTION
        + 48 * per_moe_layer
        + (2 * 48 + 1) * 2048
        + EMBEDDINGS
    )
    count = parameter_count(model)
    assert count.total == expected == 79_674_286_848
    assert count.active == expected - 48 * 502 * EXPERT  # 11 of 512 experts + shared run


def test_qwen3_next_matches_its_published_headlines():
    # Model card / Qwen blog: 80B total (79B non-embedding), 3B active, all rounded to 1B.
    count = parameter_count(load_model("qwen3-next-80b-a3b"))
    assert abs(count.total - 80e9) <= 0.5e9
    assert count.non_embedding == pytest.approx(79e9, rel=0.01)
    # The active headline matches the non-embedding active count (3.25B); with the
    # embedding and LM head it is 3.87B, above the "3B" rounding: said in the preset.
    assert abs((count.active - count.embedding) - 3e9) <= 0.5e9


def test_state_per_sequence_is_fixed_and_attention_kv_grows():
    model = load_model("qwen3-next-80b-a3b")
    one = np.ones(1)
    # 36 states of 32 x 128 x 128 + 3 x (2 x 2048 + 4096) = 548,864 elements at 2 B, plus
    # 12 attention layers x 2 x 2 x 256 elements per token at 2 B = 24,576 B per token.
    for context in (1000.0, 100_000.0):
        kv = kv_cache_bytes_per_device(model, one, np.array([context]), 16.0 * one, one, one, one)
        assert float(kv[0]) == 36 * 548_864 * 2 + 24_576 * context


def _decode_costs(model, context):
    p = predict(
        model,
        load_platform("h100-sxm"),
        Scenario(batch=1, input_tokens=context, output_tokens=2),
    )
    cost = p.decode.pass_cost
    flop = dict(zip(cost.names, cost.first_scenario(cost.flop), strict=True))
    moved = dict(zip(cost.names, cost.first_scenario(cost.bytes), strict=True))
    return flop, moved, p


def test_delta_rule_decode_flop_and_bytes_by_hand():
    flop, moved, _ = _decode_costs(load_model("qwen3-next-80b-a3b"), 1000)
    # Per token per layer: 32 heads x 7 x 128 x 128 (decay, S^T k, update, S^T q) + 10 x
    # 4096 (delta, gated norm) + 6 x 2048 (q, k L2 norms) = 3,723,264; x 36 layers.
    assert flop["linear_attn_delta_rule"] == pytest.approx(36 * 3_723_264)
    # q, k (2 x 2048), v, z, o (3 x 4096), b, a (64) at 2 B, plus the state read and
    # written (2 x 548,864 x 2 B).
    per_layer = (2 * 2048 + 3 * 4096 + 64) * 2 + 2 * 548_864 * 2
    assert moved["linear_attn_delta_rule"] == pytest.approx(36 * per_layer)
    assert flop["linear_attn_in_proj"] == pytest.approx(36 * 2 * 2048 * 12_352)
    # Gated attention: q_proj doubles (query and gate), 12 layers.
    assert flop["qkv_proj"] == pytest.approx(12 * 2 * 2048 * (2 * 4096 + 1024))


def test_linear_layers_cost_the_same_at_any_context():
    model = load_model("qwen3-next-80b-a3b")
    short, short_bytes, p_short = _decode_costs(model, 1000)
    long, long_bytes, p_long = _decode_costs(model, 100_000)
    for name in ("linear_attn_delta_rule", "linear_attn_conv", "linear_attn_in_proj"):
        assert long[name] == short[name] and long_bytes[name] == short_bytes[name]
    assert long["attention"] > 50 * short["attention"]  # the 12 softmax layers do grow
    assert p_long.tpot_s > p_short.tpot_s


def test_prefill_delta_rule_uses_the_chunked_form():
    model = load_model("qwen3-next-80b-a3b")
    p = predict(
        model, load_platform("h100-sxm"), Scenario(batch=1, input_tokens=4096, output_tokens=1)
    )
    cost = p.prefill.pass_cost
    flop = dict(zip(cost.names, cost.first_scenario(cost.flop), strict=True))
    # c = 64: 32 heads x (6 x 16384 + 64 x (3 x 128 + 2 x 128) + 64^2 / 3) + 10 x 4096
    # + 6 x 2048 per token, x 4096 tokens x 36 layers.
    per_token = 32 * (6 * 16384 + 64 * 640 + 64**2 / 3) + 10 * 4096 + 6 * 2048
    assert flop["linear_attn_delta_rule"] == pytest.approx(36 * 4096 * per_token)


def _qwen3_next_config() -> dict:
    return json.loads((models_dir() / "qwen3-next-80b-a3b.json").read_text())


@pytest.mark.parametrize("key", ["linear_key_head_dim", "linear_num_value_heads"])
def test_missing_linear_head_dims_are_named(key):
    config = _qwen3_next_config()
    del config[key]
    with pytest.raises(InputError, match=f"linear-attention layers need '{key}'"):
        model_from_hf_config(config)


def test_unknown_layer_type_names_the_field():
    config = _qwen3_next_config()
    config["layer_types"] = ["linear_attention"] * 47 + ["retention"]
    with pytest.raises(InputError, match=r"layer_types\[47\] = 'retention' is not modelled"):
        model_from_hf_config(config)


def test_explicit_layer_types_match_the_interval():
    config = _qwen3_next_config()
    config["layer_types"] = [
        "full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(48)
    ]
    assert model_from_hf_config(config).layer_types == load_model("qwen3-next-80b-a3b").layer_types


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"linear_num_key_heads": 12}, "must be a multiple of linear_num_key_heads"),
        ({"linear_conv_kernel_dim": 0}, "linear_conv_kernel_dim .* must be an integer >= 1"),
        ({"full_attention_interval": 0}, "full_attention_interval must be an integer >= 1"),
        ({"mlp_only_layers": [0]}, "mlp_only_layers .* is not modelled"),
        ({"shared_expert_intermediate_size": 700}, "shared_expert_intermediate_size"),
    ],
)
def test_bad_linear_attention_fields_are_named(change, message):
    with pytest.raises(InputError, match=message):
        model_from_hf_config({**_qwen3_next_config(), **change})


def test_attention_layer_mix_axis_swaps_linear_layers():
    from genz import with_layer_mix

    model = load_model("qwen3-next-80b-a3b")
    one = np.ones(1)

    def kv(m):
        ctx = np.array([10_000.0])
        return float(kv_cache_bytes_per_device(m, one, ctx, 16.0 * one, one, one, one)[0])

    six = with_layer_mix(model, attention_layers=6)
    assert (six.num_attention_layers, six.num_linear_layers) == (6, 42)
    # 6 softmax layers x 10,000 tokens x 2,048 B + 42 states x 1,097,728 B
    assert kv(six) == 6 * 10_000 * 2048 + 42 * 548_864 * 2
    every = with_layer_mix(model, attention_layers=48)
    assert every.linear_attention is None and kv(every) == 48 * 10_000 * 2048
    with pytest.raises(InputError, match="not an attention / state-space hybrid"):
        with_layer_mix(load_model("llama-3.1-8b"), attention_layers=4)
