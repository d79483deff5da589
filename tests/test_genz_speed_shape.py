"""Shapes of the vectorised paths and their agreement with roofline's operator cost
(no timing: speed is measured in benchmarks/vs_peers.py)."""

import numpy as np
import pytest

from genz import cost_breakdown
from genz.grid import evaluate_grid
from genz.hf_config import load_model
from genz.scenario import Parallelism, Scenario
from roofline import BOUND_ORDER, Bound, InputError, Operator, OperatorKind, cost, load_platform


def test_evaluate_grid_returns_one_value_per_scenario_of_a_10k_grid():
    model, platform = load_model("llama-2-7b"), load_platform("a100-sxm-80gb")
    result = evaluate_grid(
        model,
        platform,
        batch=np.geomspace(1, 512, 10)[:, None, None, None, None],
        input_tokens=np.geomspace(128, 65536, 10)[None, :, None, None, None],
        output_tokens=np.geomspace(16, 8192, 10)[None, None, :, None, None],
        tp=np.array([1, 2, 4, 8, 16])[None, None, None, :, None],
        weight_bits=np.array([16.0, 4.0])[None, None, None, None, :],
    )
    assert result.shape == (10, 10, 10, 5, 2)
    for key, value in result.to_dict().items():
        assert value.shape == (10, 10, 10, 5, 2), key
    for key in ("ttft_s", "tpot_s", "e2e_s", "throughput_tokens_per_s", "footprint_bytes"):
        value = getattr(result, key)
        assert np.all(np.isfinite(value) & (value > 0)), key
    assert result.bound_order == BOUND_ORDER
    names = {bound.value for bound in Bound}
    assert set(np.unique(result.bound_names("prefill"))) <= names
    # Past the capacity wall the bound says so; 512 x 74k tokens of KV do not fit 80 GB.
    assert not result.fits[-1, -1, -1, 0, 0]
    assert result.decode_bound_code[-1, -1, -1, 0, 0] == BOUND_ORDER.index(Bound.CAPACITY)
    assert result.bound_names("decode")[-1, -1, -1, 0, 0] == Bound.CAPACITY.value
    # Halving the weight bits halves the weight bytes of a decode step at batch 1, short
    # context: the step's bytes fall by nearly 4x from 16 to 4 bits.
    ratio = result.decode_bytes[0, 0, 0, 0, 0] / result.decode_bytes[0, 0, 0, 0, 1]
    assert 3.5 < ratio < 4.0


def test_bound_names_reject_an_unknown_phase():
    result = evaluate_grid(load_model("llama-2-7b"), load_platform("h100-sxm"))
    with pytest.raises(ValueError, match="phase must be 'prefill' or 'decode'"):
        result.bound_names("both")


def test_every_operator_costs_as_roofline_cost_says():
    # One costing path: each non-collective operator of a pass takes exactly what
    # roofline.cost gives for one run of it (kernel overhead included), times its runs,
    # and is bound by what roofline.cost says, on operators whose arrays have
    # different shapes (tp and bits vary per scenario, batch does not).
    model, platform = load_model("mixtral-8x7b"), load_platform("h100-sxm")
    scenario = Scenario(batch=4, input_tokens=2048, output_tokens=256, prefill_chunk=512)
    bits = np.array([16.0, 8.0, 4.0])
    breakdown = cost_breakdown(
        model,
        platform,
        scenario,
        group_bits=dict.fromkeys(("attn_qkv", "experts", "lm_head"), bits),
        tp=np.array([1.0, 2.0, 8.0]),
        ep=np.array([1.0, 2.0, 8.0]),
    )
    assert breakdown.ttft_s.shape == breakdown.kv_cache_bytes.shape == (3,)
    checked = 0
    for phase in (breakdown.prefill, breakdown.decode):
        for row, name in enumerate(phase.names):
            for scenario_index in range(3):
                if phase.collective[row]:
                    assert phase.kinds[row] is OperatorKind.COLLECTIVE
                    if phase.time_s[row, scenario_index] > 0:
                        assert BOUND_ORDER[phase.bound_code[row, scenario_index]] is (
                            Bound.INTERCONNECT
                        )
                    continue
                flop = phase.flop_per_run[row, scenario_index]
                moved = phase.bytes_per_run[row, scenario_index]
                if flop == 0 and moved == 0:
                    continue
                # 16-bit activations: every operator computes at max(weight, 16) = 16 bits.
                dtype = platform.compute_dtype_for_bits(16.0)
                reference = cost(Operator(name, flop, moved, dtype), platform)
                runs = phase.layers[row, scenario_index]
                assert phase.time_s[row, scenario_index] == pytest.approx(
                    reference.time_s * runs, rel=1e-12
                ), name
                assert BOUND_ORDER[phase.bound_code[row, scenario_index]] is reference.bound
                checked += 1
    assert checked > 40
    # The grouped sums the bit allocator reads add up to the pass time.
    decode = breakdown.decode
    np.testing.assert_allclose(
        sum(decode.by_group(decode.time_s).values()), breakdown.tpot_s, rtol=1e-12
    )


def test_cost_breakdown_names_a_bad_axis_or_group():
    model, platform = load_model("llama-2-7b"), load_platform("h100-sxm")
    with pytest.raises(InputError, match="unknown scenario axis 'batches'; accepted: batch"):
        cost_breakdown(model, platform, Scenario(), batches=[1, 2])
    with pytest.raises(InputError, match="unknown weight group 'ffn'"):
        cost_breakdown(model, platform, Scenario(), group_bits={"ffn": 4.0})
    with pytest.raises(InputError, match="tp must be in"):
        cost_breakdown(model, platform, Scenario(parallelism=Parallelism(tp=64)))
