"""Mamba / Mamba-2 layers and hybrids: parameter counts, state and scan cost by hand."""

from __future__ import annotations

import numpy as np
import pytest

from genz import Scenario, load_model, parameter_count, predict
from genz.hf_config import model_from_hf_config
from genz.memory import kv_cache_bytes_per_device
from roofline import InputError, load_platform


def test_mamba_2_8b_parameter_count_by_hand():
    # Per layer: in_proj 2560 x 10240 = 26,214,400; conv 5120 x 4 + 5120 = 25,600; x_proj
    # 5120 x (160 + 32) = 983,040; dt_proj 160 x 5120 + 5120 = 824,320; A_log 5120 x 16 =
    # 81,920; D 5120; out_proj 5120 x 2560 = 13,107,200; norm 2560: 41,244,160. x 64 layers
    # + tied embedding 50280 x 2560 = 128,716,800 + final norm 2560.
    model = load_model("mamba-2.8b")
    assert parameter_count(model).total == 41_244_160 * 64 + 128_716_800 + 2560
    assert model.attention_type == "SSM" and not model.has_ffn


def test_jamba_counts_by_hand():
    # 28 Mamba mixers of 105,308,448 (in_proj 4096 x 16384, conv 8192 x 4 + 8192, x_proj
    # 8192 x 288, dt_proj 256 x 8192 + 8192, A_log 8192 x 16, D 8192, out_proj 8192 x 4096,
    # dt/B/C norms 288), 4 attention blocks of 41,943,040, 16 dense MLPs of 176,160,768, 16
    # MoE layers of 16 such experts + a 4096 x 16 router, 2 norms per layer + final,
    # untied 65536 x 4096 embedding and head.
    model = load_model("jamba-v0.1")
    assert (model.num_ssm_layers, model.num_attention_layers, model.num_moe_layers) == (28, 4, 16)
    assert [i for i in range(32) if model.layer_kind(i) == "full_attention"] == [4, 12, 20, 28]
    assert model.is_moe_layer(1) and not model.is_moe_layer(0)
    expected = (
        28 * 105_308_448
        + 4 * 41_943_040
        + 16 * 176_160_768
        + 16 * (16 * 176_160_768 + 65_536)
        + 65 * 4096
        + 2 * 65536 * 4096
    )
    count = parameter_count(model)
    assert count.total == expected == 51_570_323_328
    # 14 of 16 experts idle per MoE layer: 16 x 14 x 176,160,768 inactive.
    assert count.active == expected - 16 * 14 * 176_160_768


def test_bamba_mamba2_counts_by_hand():
    # Mamba-2 mixer: in_proj 4096 x (2 x 8192 + 2 x 128 + 128) = 68,681,728; conv (8192 + 256)
    # x 4 + 8448 = 42,240; dt bias, A_log, D 3 x 128; gated norm 8192; out_proj 33,554,432.
    model = load_model("bamba-9b")
    mixer = 68_681_728 + 42_240 + 384 + 8192 + 33_554_432
    mlp, attention, norms = 176_160_768, 41_943_040, 2 * 4096
    expected = 29 * (mixer + mlp + norms) + 3 * (attention + mlp + norms)
    expected += 2 * 128256 * 4096 + 4096
    assert parameter_count(model).total == expected == 9_780_235_392


def test_state_per_sequence_does_not_grow_with_context():
    model = load_model("mamba-2.8b")
    one = np.ones(1)
    # d_inner x N + (d_conv - 1) x d_inner = 5120 x 16 + 3 x 5120 = 97,280 elements per layer,
    # x 64 layers x 2 bytes = 12,451,840 B per sequence, at any context.
    for context in (10.0, 100_000.0):
        kv = kv_cache_bytes_per_device(model, one, np.array([context]), 16.0 * one, one, one, one)
        assert float(kv[0]) == 12_451_840


def test_hybrid_cache_is_attention_kv_plus_states():
    model = load_model("jamba-v0.1")
    one = np.ones(1)
    kv = kv_cache_bytes_per_device(model, one, np.array([1000.0]), 16.0 * one, one, one, one)
    # 4 attention layers x 1000 tokens x 2 x 8 x 128 x 2 B = 16,384,000; 28 states of
    # (8192 x 16 + 3 x 8192) x 2 B = 311,296 B.
    assert float(kv[0]) == 16_384_000 + 28 * 311_296


def test_mamba_decode_scan_flop_by_hand():
    model = load_model("mamba-2.8b")
    p = predict(
        model, load_platform("h100-sxm"), Scenario(batch=1, input_tokens=100, output_tokens=2)
    )
    cost = p.decode.pass_cost
    flop = dict(zip(cost.names, cost.first_scenario(cost.flop), strict=True))
    # Per token per layer d_inner (9 N + 6) = 5120 x 150 = 768,000, x 64 layers.
    assert flop["ssm_scan"] == pytest.approx(64 * 768_000)
    # in_proj GEMM 2 x 2560 x 10240 per token per layer.
    assert flop["ssm_in_proj"] == pytest.approx(64 * 2 * 2560 * 10240)
    assert "attention" not in flop and "ffn_up_gate" not in flop
    moved = dict(zip(cost.names, cost.first_scenario(cost.bytes), strict=True))
    # Scan bytes: x, z, dt, y (4 x 5120) and B, C (2 x 16) at 2 B, plus the state read and
    # written (2 x 97,280 x 2 B), per layer.
    assert moved["ssm_scan"] == pytest.approx(64 * ((4 * 5120 + 32) * 2 + 2 * 97_280 * 2))


def test_mamba_decode_time_is_flat_in_context():
    model = load_model("mamba-2.8b")
    h100 = load_platform("h100-sxm")
    short = predict(model, h100, Scenario(batch=8, input_tokens=1000, output_tokens=64))
    long = predict(model, h100, Scenario(batch=8, input_tokens=100_000, output_tokens=64))
    assert long.tpot_s == pytest.approx(short.tpot_s, rel=1e-12)


def test_missing_ssm_fields_are_named():
    base = {"model_type": "mamba", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 10}
    with pytest.raises(InputError, match="missing or invalid 'state_size'"):
        model_from_hf_config({**base, "conv_kernel": 4})
    with pytest.raises(
        InputError,
        match="missing required keys 'num_hidden_layers', 'num_attention_heads', 'intermediate_size', 'vocab_size'",
    ):
        model_from_hf_config({"architectures": ["FooForCausalLM"], "hidden_size": 8})
    with pytest.raises(InputError, match="missing or invalid 'mamba_d_conv'"):
        model_from_hf_config(
            {
                "hidden_size": 64,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "intermediate_size": 8,
                "vocab_size": 10,
                "layer_types": ["mamba", "attention"],
                "mamba_d_state": 16,
            }
        )


def test_codesign_space_refuses_a_pure_ssm_base_by_name():
    from search.codesign import space_from_dict

    document = {
        "hardware": {"presets": ["h100-sxm"]},
        "model": {"base": "mamba-2.8b"},
    }
    with pytest.raises(InputError, match=r"'Mamba 2.8B' uses only state-space layers"):
        space_from_dict(document)
    hybrid = space_from_dict({**document, "model": {"base": "bamba-9b", "attention_layers": 8}})
    assert hybrid.variants["attention_layers"] == (8,)
