"""The efficiency-1, zero-overhead bound and the rows it flags as impossible."""

import pytest

from calibration import (
    Measurement,
    batch_latency_bound,
    check_measurements,
    fewest_experts_model,
    ideal_platform,
)
from genz import load_model
from roofline import load_platform


def _bound(model: str, hw: str, **scenario) -> float:
    return float(batch_latency_bound(load_model(model), load_platform(hw), **scenario)["bound_s"])


def test_ideal_platform_has_no_losses():
    ideal = ideal_platform(load_platform("a100-sxm-40gb"))
    assert (ideal.efficiency.compute, ideal.efficiency.memory, ideal.efficiency.interconnect) == (
        1,
        1,
        1,
    )
    assert ideal.kernel_overhead_s == 0.0
    assert ideal.interconnect.link_latency_s == 0.0
    assert ideal.interconnect.scaleout_latency_s == 0.0
    assert ideal.main_memory.bandwidth_bytes_per_s == 1555e9


def test_batch1_decode_of_a_7b_fp16_model_reads_its_weights_once_per_token():
    # Closed form: each decode step streams every weight but the embedding table
    # (only looked up): 2 B x (6.74e9 - 32000 x 4096) = 13.2 GB, at 3.35 TB/s = 3.94 ms.
    # Over 100 steps from a 1-token prompt the KV cache read stays below 0.2% of that.
    model = load_model("llama-2-7b")
    per_step_bytes = 2 * (6_738_415_616 - 32_000 * 4_096)
    steps = 100
    one = _bound("llama-2-7b", "h100-sxm", batch=1, input_tokens=1, output_tokens=2)
    many = _bound("llama-2-7b", "h100-sxm", batch=1, input_tokens=1, output_tokens=steps + 2)
    per_step_s = (many - one) / steps
    assert per_step_s == pytest.approx(per_step_bytes / 3.35e12, rel=0.02)
    assert 13e9 < per_step_s * 3.35e12 < 14e9
    assert model.hidden_size == 4096  # the embedding size used above


def test_half_the_bound_is_impossible_and_twice_it_is_not():
    scenario = dict(batch=16, input_tokens=1024, output_tokens=1024)
    bound = _bound("llama-3-8b", "h100-sxm", **scenario)
    rows = [
        Measurement("llama-3-8b", "h100-sxm", "vllm", **scenario, batch_latency_s=factor * bound)
        for factor in (0.5, 2.0)
    ]
    result = check_measurements(rows)
    assert [row.impossible for row in result.rows] == [True, False]
    assert result.rows[0].ratio == pytest.approx(0.5)
    assert len(result.impossible) == 1


def test_tolerance_spares_rows_just_below_the_bound():
    bound = _bound("llama-3-8b", "h100-sxm", batch=1, input_tokens=128, output_tokens=128)
    row = Measurement("llama-3-8b", "h100-sxm", "vllm", 1, 128, 128, batch_latency_s=0.95 * bound)
    assert check_measurements([row]).rows[0].impossible
    assert not check_measurements([row], tolerance=0.1).rows[0].impossible


def test_more_devices_lower_the_bound():
    one = _bound("llama-2-70b", "h100-sxm", batch=1, input_tokens=128, output_tokens=128, tp=2)
    four = _bound("llama-2-70b", "h100-sxm", batch=1, input_tokens=128, output_tokens=128, tp=4)
    assert four < 0.6 * one


def test_moe_bound_reads_the_fewest_experts_a_batch_can_touch():
    mixtral = load_model("mixtral-8x7b")
    assert fewest_experts_model(mixtral).num_experts == 2
    assert fewest_experts_model(mixtral, ep=4).num_experts == 4
    assert fewest_experts_model(load_model("llama-3-8b")) == load_model("llama-3-8b")
    scenario = dict(batch=16, input_tokens=128, output_tokens=128, tp=4)
    uniform = _bound("mixtral-8x7b", "h100-sxm", **scenario)
    row = Measurement(
        "mixtral-8x7b", "h100-sxm", "tensorrt-llm", **scenario, batch_latency_s=0.9 * uniform
    )
    (verdict,) = check_measurements([row]).rows
    assert verdict.uniform_bound_s == pytest.approx(uniform)
    assert verdict.bound_s < 0.9 * uniform  # 2 of 8 experts per layer instead of ~8
    assert not verdict.impossible and verdict.beats_uniform_routing


def test_a_batch_too_big_for_memory_is_over_capacity_not_impossible():
    # Llama-2-7B, 64 x 4096 tokens of KV cache = 137 GB: no single 40 GB A100 holds it.
    row = Measurement("llama-2-7b", "a100-sxm-40gb", "vllm", 64, 2048, 2048, batch_latency_s=500.0)
    result = check_measurements([row])
    assert result.over_capacity == result.rows
    assert not result.rows[0].impossible


def test_rows_without_a_preset_or_latency_are_reported_not_raised():
    rows = [
        Measurement("gpt-9", "h100-sxm", "vllm", 1, 1, 1, batch_latency_s=1.0),
        Measurement("llama-3-8b", "h100-sxm", "vllm", 1, 1, 1, ttft_s=0.01),
        Measurement("qwen2-7b", "h100-sxm", "vllm", 1, 8, 8, tp=32, batch_latency_s=1.0),
    ]
    reasons = [row.reason for row in check_measurements(rows).rows]
    assert reasons[0].startswith("unknown model 'gpt-9'")
    assert reasons[1] == "no batch_latency_s"
    assert reasons[2].startswith("tp 32 does not give every device whole heads of Qwen2-7B")


def test_a_mesh_with_fractional_heads_is_reported_not_raised():
    # Qwen2-7B: 28 heads, 4 KV heads; tp 8 gives 3.5 heads per device (17 published
    # DeepSpeed Gaudi 2 rows ran it, presumably padding heads, which genz does not model).
    row = Measurement("qwen2-7b", "gaudi2", "deepspeed", 1, 128, 128, tp=8, batch_latency_s=1.0)
    (verdict,) = check_measurements([row]).rows
    assert verdict.bound_s is None
    assert "whole heads" in verdict.reason
