"""Hybrid patterns beyond Jamba/Bamba: Nemotron-H (one sublayer per layer: Mamba-2,
attention or MLP) and Falcon-H1 (attention and Mamba-2 in parallel in every layer)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from genz import Scenario, load_model, parameter_count, predict, with_layer_mix
from genz.hf_config import model_from_hf_config, models_dir
from genz.memory import kv_cache_bytes_per_device
from roofline import InputError, load_platform

ONE = np.ones(1)


def _kv(model, context):
    ctx = np.array([float(context)])
    return float(kv_cache_bytes_per_device(model, ONE, ctx, 16.0 * ONE, ONE, ONE, ONE)[0])


def _preset(name):
    return json.loads((models_dir() / f"{name}.json").read_text())


# Nemotron-H 8B: d_inner = 128 heads x 64 = 8192, N = 128, 8 groups, conv 4.
NEMOTRON_MIXER = (
    4096 * (2 * 8192 + 2 * 8 * 128 + 128)  # in_proj: x, z, B, C, dt
    + (8192 + 2 * 8 * 128) * 4
    + (8192 + 2 * 8 * 128)  # depthwise conv and its bias
    + 3 * 128  # dt bias, A_log, D
    + 8192  # gated norm
    + 8192 * 4096  # out_proj
)
NEMOTRON_ATTENTION = 4096 * (4096 + 2 * 8 * 128) + 4096 * 4096
NEMOTRON_MLP = 2 * 4096 * 21504  # squared ReLU: up and down only


def test_nemotron_h_layout_from_the_pattern():
    model = load_model("nemotron-h-8b")
    assert (model.num_ssm_layers, model.num_attention_layers, model.num_mlp_layers) == (24, 4, 24)
    assert model.num_dense_layers == 24 and not model.gated_ffn and model.norms_per_layer == 1
    assert [i for i in range(52) if model.layer_kind(i) == "full_attention"] == [7, 18, 29, 40]


def test_nemotron_h_parameter_count_by_hand():
    model = load_model("nemotron-h-8b")
    expected = (
        24 * NEMOTRON_MIXER
        + 4 * NEMOTRON_ATTENTION
        + 24 * NEMOTRON_MLP
        + (52 + 1) * 4096  # one norm per layer + final
        + 2 * 131_072 * 4096
    )
    assert parameter_count(model).total == expected == 8_100_852_736


def test_nemotron_h_cache_is_four_layers_of_kv_plus_24_states():
    model = load_model("nemotron-h-8b")
    # State per Mamba-2 layer: 8192 x 128 + 3 x 10,240 = 1,079,296 elements at 2 B; KV: 4
    # layers x 2 x 8 x 128 elements at 2 B = 16,384 B per token.
    for context in (1000, 8192):
        assert _kv(model, context) == 24 * 1_079_296 * 2 + 16_384 * context


def test_nemotron_h_ffn_runs_only_on_mlp_layers():
    model = load_model("nemotron-h-8b")
    p = predict(
        model, load_platform("h100-sxm"), Scenario(batch=1, input_tokens=100, output_tokens=2)
    )
    cost = p.decode.pass_cost
    flop = dict(zip(cost.names, cost.first_scenario(cost.flop), strict=True))
    assert flop["ffn_up_gate"] == pytest.approx(24 * 2 * 4096 * 21504)
    assert flop["ssm_in_proj"] == pytest.approx(24 * 2 * 4096 * 18_560)
    assert flop["qkv_proj"] == pytest.approx(4 * 2 * 4096 * 6144)


def test_nemotron_h_attention_mix_keeps_the_mlp_layers():
    model = load_model("nemotron-h-8b")
    eight = with_layer_mix(model, attention_layers=8)
    assert (eight.num_attention_layers, eight.num_ssm_layers, eight.num_mlp_layers) == (8, 20, 24)
    assert [eight.layer_kind(i) for i in range(52)].count("mlp") == 24
    assert (
        parameter_count(eight).by_group["ffn_down"] == parameter_count(model).by_group["ffn_down"]
    )
    with pytest.raises(InputError, match=r"must be an integer in \[1, 28\] \(token-mixer layers"):
        with_layer_mix(model, attention_layers=29)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("M-*", r"hybrid_override_pattern must be a string of num_hidden_layers \(52\)"),
        ("E" + "M" * 51, r"hybrid_override_pattern\[0\] = 'E' is not modelled"),
    ],
)
def test_bad_nemotron_pattern_is_named(pattern, message):
    with pytest.raises(InputError, match=message):
        model_from_hf_config({**_preset("nemotron-h-8b"), "hybrid_override_pattern": pattern})


def test_nemotron_h_missing_mamba_field_is_named():
    config = _preset("nemotron-h-8b")
    del config["mamba_head_dim"]
    with pytest.raises(InputError, match="missing or invalid 'mamba_head_dim'"):
        model_from_hf_config(config)


# Falcon-H1 7B: per layer attention (12 Q / 2 KV heads of 128) beside a Mamba-2 mixer
# (d_inner 3072, 24 heads, N = 256, one group, conv 4, no gated-norm weight), then a
# gated MLP of 12288.
FALCON_ATTENTION = 3072 * (1536 + 2 * 256) + 1536 * 3072
FALCON_MIXER = (
    3072 * (2 * 3072 + 2 * 256 + 24)  # in_proj: x, z, B, C, dt
    + (3072 + 2 * 256) * 4
    + (3072 + 2 * 256)  # conv and bias
    + 3 * 24  # dt bias, A_log, D
    + 3072 * 3072  # out_proj
)
FALCON_MLP = 3 * 3072 * 12288


def test_falcon_h1_every_layer_has_attention_and_mamba():
    model = load_model("falcon-h1-7b")
    assert model.num_parallel_layers == model.num_attention_layers == model.num_ssm_layers == 44
    assert model.num_dense_layers == 44 and model.gated_ffn and model.norms_per_layer == 2


def test_falcon_h1_parameter_count_by_hand():
    expected = (
        44 * (FALCON_ATTENTION + FALCON_MIXER + FALCON_MLP + 2 * 3072) + 3072 + 2 * 130_048 * 3072
    )
    assert parameter_count(load_model("falcon-h1-7b")).total == expected == 7_585_513_568


def test_falcon_h1_pays_full_kv_and_a_state_per_sequence():
    model = load_model("falcon-h1-7b")
    # KV: 44 layers x 2 x 2 x 128 x 2 B = 45,056 B per token; state per layer 3072 x 256 +
    # 3 x 3584 = 797,184 elements, x 44 layers x 2 B = 70,152,192 B (66.9 MiB).
    for context in (1000, 100_000):
        assert _kv(model, context) == 45_056 * context + 70_152_192


def test_falcon_h1_parallel_layers_share_one_norm_and_all_reduce():
    model = load_model("falcon-h1-7b")
    p = predict(
        model, load_platform("h100-sxm"), Scenario(batch=1, input_tokens=100, output_tokens=2)
    )
    cost = p.decode.pass_cost
    flop = dict(zip(cost.names, cost.first_scenario(cost.flop), strict=True))
    assert flop["attn_norm"] == pytest.approx(44 * 4 * 3072)
    assert flop["ssm_norm"] == 0.0
    # Mamba-2 scan per token per layer: d_inner (5 N + 6) = 3072 x 1286.
    assert flop["ssm_scan"] == pytest.approx(44 * 3072 * 1286)
    assert flop["qkv_proj"] == pytest.approx(44 * 2 * 3072 * 2048)


def test_falcon_h1_layer_types_spelling_and_no_layer_mix():
    config = {**_preset("falcon-h1-7b"), "model_type": "custom", "layer_types": ["hybrid"] * 44}
    assert model_from_hf_config(config).num_parallel_layers == 44
    with pytest.raises(InputError, match="runs attention and Mamba-2 side by side"):
        with_layer_mix(load_model("falcon-h1-7b"), attention_layers=4)
