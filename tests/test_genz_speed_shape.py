"""Shapes of the vectorised paths (no timing: speed is measured in benchmarks/vs_genz.py)."""

import numpy as np

from genz.costing import BOUND_ORDER, stack_times
from genz.inputs import GridInputs
from genz.model import load_model
from genz.params import WEIGHT_GROUPS
from genz.predictor import evaluate, evaluate_grid
from roofline import Bound, load_platform


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
    names = {bound.value for bound in Bound}
    for key, value in result.items():
        assert value.shape == (10, 10, 10, 5, 2), key
    for key in ("ttft_s", "tpot_s", "e2e_s", "throughput_tokens_per_s", "footprint_bytes"):
        assert np.all(np.isfinite(result[key]) & (result[key] > 0)), key
    assert set(np.unique(result["prefill_bound"])) <= names
    # Past the capacity wall the bound says so; 512 x 74k tokens of KV do not fit 80 GB.
    assert not result["fits"][-1, -1, -1, 0, 0]
    assert result["decode_bound"][-1, -1, -1, 0, 0] == Bound.CAPACITY.value


def test_stacked_times_equal_each_operators_own_times():
    # The stacked (all operators at once) time and bound must be the per-operator ones,
    # here on operators whose arrays have different shapes (tp varies, batch does not).
    model, platform = load_model("mixtral-8x7b"), load_platform("h100-sxm")
    ones = np.ones(3)
    inputs = GridInputs(
        batch=np.array([4.0]),
        input_tokens=np.array([2048.0]),
        output_tokens=np.array([256.0]),
        weight_bits={group: np.array([16.0, 8.0, 4.0]) for group in WEIGHT_GROUPS},
        activation_bits=np.array([16.0]),
        kv_bits=np.array([16.0]),
        tp=np.array([1.0, 2.0, 8.0]),
        pp=ones,
        ep=np.array([1.0, 2.0, 8.0]),
        dp=ones,
        chunk=np.array([512.0]),
    )
    evaluation = evaluate(model, platform, inputs)
    for timed in (evaluation.prefill_ops, evaluation.decode_ops):
        stacked = stack_times(timed)
        for row, op in enumerate(timed):
            np.testing.assert_array_equal(stacked.time_s[row], np.broadcast_to(op.time_s, (3,)))
            np.testing.assert_array_equal(
                stacked.bound_index[row], np.broadcast_to(op.bound_index, (3,))
            )
        kinds = {BOUND_ORDER[i] for i in np.unique(stacked.bound_index)}
        assert Bound.INTERCONNECT in kinds  # the tp/ep collectives are present and typed
