"""Latency and memory predictions: closed forms, physics checks, grid vs scalar."""

import dataclasses

import numpy as np
import pytest

from genz.grid import evaluate_grid
from genz.hf_config import model_from_hf_config
from genz.params import parameter_count
from genz.predictor import predict
from genz.scenario import Parallelism, Precision, Scenario
from roofline import Bound, InputError, derive_platform, load_platform

DENSE = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "intermediate_size": 8192,
    "vocab_size": 32000,
}


def dense(**changes):
    return model_from_hf_config({**DENSE, **changes}, default_name="dense")


def test_batch1_decode_of_7b_fp16_reads_14_gb():
    llama = model_from_hf_config(
        {
            **DENSE,
            "hidden_size": 4096,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 32,
            "intermediate_size": 11008,
        }
    )
    result = predict(
        llama, load_platform("a100-sxm-80gb"), Scenario(input_tokens=16, output_tokens=2)
    )
    # Every weight but the embedding table (one row read) crosses memory once: ~13.5 GB.
    assert result.decode.bytes == pytest.approx(13.5e9, rel=0.02)


def test_hand_computed_decode_time(simple_platform):
    model = dense()
    count = parameter_count(model)
    scenario = Scenario(batch=1, input_tokens=1000, output_tokens=2)
    result = predict(model, simple_platform, scenario)
    weights = (count.total - count.by_group["embedding"]) * 2.0
    # KV read at context 1001 and written for one token: 2 * 16 layers * 2048 elems * 2 bytes per token.
    kv = (1001 + 1) * 16 * 2 * 2048 * 2.0
    # Memory-bound at 1 TB/s with efficiency 1 and no overhead; activations add < 0.1%.
    assert result.tpot_s == pytest.approx((weights + kv) / 1e12, rel=2e-3)
    assert result.decode.bound is Bound.MEMORY_BANDWIDTH


def test_gqa_halves_kv_cache_versus_mha():
    scenario = Scenario(batch=4, input_tokens=4096, output_tokens=128)
    platform = load_platform("h100-sxm")
    mha = predict(dense(), platform, scenario)
    gqa = predict(dense(num_key_value_heads=8), platform, scenario)
    assert gqa.footprint.kv_cache_bytes == pytest.approx(mha.footprint.kv_cache_bytes / 2)


def test_moe_batch1_decode_reads_fewer_weight_bytes_than_dense_equivalent():
    moe = dense(num_local_experts=8, num_experts_per_tok=2)
    dense_same_total = dense(intermediate_size=8192 * 8)
    platform = load_platform("h100-sxm")
    scenario = Scenario(batch=1, input_tokens=128, output_tokens=16)
    moe_bytes = predict(moe, platform, scenario).decode.bytes
    dense_bytes = predict(dense_same_total, platform, scenario).decode.bytes
    assert moe_bytes < 0.4 * dense_bytes


def test_moe_expected_experts_touched_grows_with_batch():
    moe = dense(num_local_experts=8, num_experts_per_tok=2)
    platform = load_platform("h100-sxm")
    small = predict(moe, platform, Scenario(batch=1, input_tokens=128, output_tokens=16))
    large = predict(moe, platform, Scenario(batch=64, input_tokens=128, output_tokens=16))
    expert = {op.name: op for op in small.decode.operators}["routed_experts"]
    expert_large = {op.name: op for op in large.decode.operators}["routed_experts"]
    # batch 1: 2 of 8 experts; batch 64: 8 * (1 - (6/8)^64) ~ all 8.
    assert expert_large.bytes / expert.bytes == pytest.approx(4.0, rel=0.02)


def test_doubling_bandwidth_halves_memory_bound_decode_not_compute_bound_prefill():
    model = dense()
    base = load_platform("h100-sxm")
    fast = derive_platform(base, memory_bandwidth_scale=2.0, kernel_overhead_s=0.0)
    base = derive_platform(base, kernel_overhead_s=0.0)
    scenario = Scenario(batch=1, input_tokens=8192, output_tokens=64)
    slow_result, fast_result = predict(model, base, scenario), predict(model, fast, scenario)
    assert slow_result.prefill.bound is Bound.COMPUTE
    assert fast_result.tpot_s == pytest.approx(slow_result.tpot_s / 2, rel=0.02)
    assert fast_result.ttft_s == pytest.approx(slow_result.ttft_s, rel=0.05)


def test_mean_context_decode_equals_explicit_sum_over_output(simple_platform):
    model = dense()
    scenario = Scenario(batch=2, input_tokens=512, output_tokens=65)
    result = predict(model, simple_platform, scenario)
    steps = [
        predict(
            model,
            simple_platform,
            dataclasses.replace(scenario, input_tokens=512 + j - 1, output_tokens=2),
        ).tpot_s
        for j in range(1, 65)
    ]
    # A 2-token request decodes once at context input + 1; step j runs at context 512 + j.
    assert result.tpot_s == pytest.approx(float(np.mean(steps)), rel=1e-9)


def test_int4_weights_take_half_the_bytes_of_int8():
    model = dense()
    platform = load_platform("h100-sxm")
    int8 = predict(model, platform, Scenario(precision=Precision(weight_bits=8)))
    int4 = predict(model, platform, Scenario(precision=Precision(weight_bits=4)))
    assert int4.footprint.weights_bytes == pytest.approx(int8.footprint.weights_bytes / 2)


def test_uniform_layer_bits_equal_group_bits():
    model = dense()
    platform = load_platform("h100-sxm")
    by_group = Precision(group_bits={"ffn_down": 4})
    by_layer = Precision(layer_bits={layer: {"ffn_down": 4} for layer in range(16)})
    a = predict(model, platform, Scenario(precision=by_group))
    b = predict(model, platform, Scenario(precision=by_layer))
    assert b.tpot_s == pytest.approx(a.tpot_s)
    assert b.footprint.weights_bytes == pytest.approx(a.footprint.weights_bytes)


def test_half_the_layers_at_4_bits_is_between():
    model = dense()
    platform = load_platform("h100-sxm")
    mixed = Precision(layer_bits={layer: {"ffn_down": 4} for layer in range(8)})
    full = predict(model, platform, Scenario()).tpot_s
    four = predict(
        model, platform, Scenario(precision=Precision(group_bits={"ffn_down": 4}))
    ).tpot_s
    half = predict(model, platform, Scenario(precision=mixed)).tpot_s
    assert half == pytest.approx((full + four) / 2)


def test_tensor_parallel_adds_interconnect_and_splits_weights():
    model = dense()
    platform = load_platform("h100-sxm")
    one = predict(model, platform, Scenario(batch=8))
    four = predict(model, platform, Scenario(batch=8, parallelism=Parallelism(tp=4)))
    names = {op.name: op for op in four.decode.operators}
    assert names["tp_all_reduce_attn"].bound is Bound.INTERCONNECT
    assert four.footprint.weights_bytes == pytest.approx(one.footprint.weights_bytes / 4, rel=0.01)
    assert four.tpot_s < one.tpot_s


def test_grid_matches_scalar_predictions():
    model = dense(num_key_value_heads=4)
    platform = load_platform("a100-sxm-80gb")
    batches = np.array([1, 4, 16])
    grid = evaluate_grid(model, platform, batch=batches, input_tokens=1024, output_tokens=128, tp=2)
    for index, batch in enumerate(batches):
        scalar = predict(model, platform, Scenario(batch=int(batch), parallelism=Parallelism(tp=2)))
        assert grid.ttft_s[index] == pytest.approx(scalar.ttft_s)
        assert grid.tpot_s[index] == pytest.approx(scalar.tpot_s)
        assert grid.e2e_s[index] == pytest.approx(scalar.e2e_s)
        assert grid.footprint_bytes[index] == pytest.approx(scalar.footprint.total_bytes)
        assert grid.prefill_flop[index] == pytest.approx(scalar.prefill.flop)
        assert grid.prefill_bytes[index] == pytest.approx(scalar.prefill.bytes)
        assert grid.decode_flop[index] == pytest.approx(scalar.decode.flop)
        assert grid.decode_bytes[index] == pytest.approx(scalar.decode.bytes)
        assert grid.bound_order[grid.decode_bound_code[index]] is scalar.decode.bound
        assert grid.bound_names("decode")[index] == scalar.decode.bound.value
        assert grid.to_dict()["prefill_bound"][index] == scalar.prefill.bound.value


def test_capacity_wall_gives_verdict_and_checked_suggestions():
    model = dense(
        hidden_size=8192,
        num_hidden_layers=80,
        num_attention_heads=64,
        num_key_value_heads=8,
        intermediate_size=28672,
    )
    platform = load_platform("l4")
    result = predict(model, platform, Scenario())
    assert not result.fits
    assert result.decode.bound is Bound.CAPACITY
    assert any("devices" in s for s in result.suggestions)


def test_chunked_prefill_rereads_weights():
    model = dense()
    platform = load_platform("h100-sxm")
    whole = predict(model, platform, Scenario(batch=1, input_tokens=4096))
    chunked = predict(model, platform, Scenario(batch=1, input_tokens=4096, prefill_chunk=512))
    ops = {op.name: op for op in chunked.prefill.operators}
    whole_ops = {op.name: op for op in whole.prefill.operators}
    assert ops["ffn_down"].flop == pytest.approx(whole_ops["ffn_down"].flop)
    assert ops["ffn_down"].bytes > whole_ops["ffn_down"].bytes
    assert ops["attention"].flop == pytest.approx(whole_ops["attention"].flop, rel=1e-9)


@pytest.mark.parametrize(
    ("mesh", "message"),
    [
        (Parallelism(tp=32), "tp must be in [1, 16]"),
        (Parallelism(ep=2), "ep must be in [1, 1]"),
    ],
)
def test_impossible_mesh_is_rejected(mesh, message):
    with pytest.raises(InputError) as info:
        predict(dense(), load_platform("h100-sxm"), Scenario(parallelism=mesh))
    assert message in str(info.value)


def test_grid_rejects_out_of_range_values():
    with pytest.raises(InputError, match="batch must be in"):
        evaluate_grid(dense(), load_platform("h100-sxm"), batch=np.array([1, -3]))


def test_bad_scenario_values():
    with pytest.raises(InputError, match="batch must be an integer"):
        Scenario(batch=0)
    with pytest.raises(InputError, match="weight_bits must be a number of bits"):
        Precision(weight_bits=0.5)
    with pytest.raises(InputError, match="unknown weight group 'mlp'"):
        Precision(group_bits={"mlp": 4})


def test_layer_bits_on_mixed_dense_and_moe_layers_weight_each_block_by_its_own_layers():
    # 2 leading dense layers, 6 MoE layers: per-layer bits for the MoE experts must be
    # averaged over the 6 MoE layers only, and dense-FFN bits over the 2 dense ones.
    mixed = dense(
        num_hidden_layers=8, n_routed_experts=8, num_experts_per_tok=2, first_k_dense_replace=2
    )
    platform = load_platform("h100-sxm")
    all_moe_layers = {layer: {"experts": 4} for layer in range(2, 8)}
    all_dense_layers = {layer: {"ffn_down": 4} for layer in range(2)}
    by_layer = Precision(layer_bits={**all_moe_layers, **all_dense_layers})
    by_group = Precision(group_bits={"experts": 4, "ffn_down": 4})
    a = predict(mixed, platform, Scenario(precision=by_group))
    b = predict(mixed, platform, Scenario(precision=by_layer))
    assert b.footprint.weights_bytes == pytest.approx(a.footprint.weights_bytes)
    assert b.tpot_s == pytest.approx(a.tpot_s)
    assert b.ttft_s == pytest.approx(a.ttft_s)
