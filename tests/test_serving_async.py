"""Overlap (async) scheduling: a step takes the larger of its host time (the runtime
profile's fixed cost per step and per sequence, plus the per-chunk host time) and its
device time, not their sum (`SchedulerConfig.async_scheduling`,
`genz.StepCost.host_overlap`)."""

import json

import numpy as np
import pytest

from app.cli import main
from genz import load_model, load_runtime
from roofline import load_platform
from search.serving import SchedulerConfig, Workload, build_replica, run, synthetic_workload


@pytest.fixture(scope="module")
def setup():
    return load_model("llama-3.1-8b"), load_platform("h100-sxm"), load_runtime("tensorrt-llm")


def _alone(output=33):
    return Workload(
        np.zeros(1), np.full(1, 400, np.int64), np.full(1, output, np.int64),
        np.zeros(1, np.int64), "test",
    )  # fmt: skip


def test_a_step_is_the_larger_of_host_and_device_time(setup):
    model, hw, runtime = setup
    work = _alone()
    plain = build_replica(model, hw, work, runtime=runtime)
    overlapped = build_replica(
        model, hw, work, runtime=runtime, config=SchedulerConfig(async_scheduling=True)
    )
    host = float(plain.cost.fixed_step_s[1] + plain.cost.fixed_sequence_s[1] * 8)
    assert host > 0
    for context in (1000.0, 30000.0):
        summed = plain.cost.decode_time(8, context)
        device = summed - host
        assert overlapped.cost.decode_time(8, context) == max(device, host)
        assert overlapped.cost.decode_times(8, [context])[0] == max(device, host)
        mixed = plain.cost.step_time(300, 300.0, 300 * 300 - 300 * 299 / 2, 8, context, 9, 9)
        w = 300 / 308
        host_mixed = (
            w * plain.cost.fixed_step_s[0] + (1 - w) * plain.cost.fixed_step_s[1]
            + (w * plain.cost.fixed_sequence_s[0] + (1 - w) * plain.cost.fixed_sequence_s[1]) * 9
        )  # fmt: skip
        assert overlapped.cost.step_time(
            300, 300.0, 300 * 300 - 300 * 299 / 2, 8, context, 9, 9
        ) == pytest.approx(max(mixed - host_mixed, host_mixed), rel=1e-15)
    a, b = run(work, plain), run(work, overlapped)
    assert b.e2e_s[0] < a.e2e_s[0]  # the host's share is hidden
    assert b.summary["throughput_tokens_per_s"] > a.summary["throughput_tokens_per_s"]


def test_host_bound_steps_take_the_host_time(setup):
    """A per-chunk host time far above the device's decode step: with overlap every
    decode step of a lone request takes exactly the host time."""
    model, hw, runtime = setup
    work = _alone()
    config = SchedulerConfig(async_scheduling=True, chunk_overhead_s=0.05)
    replica = build_replica(model, hw, work, runtime=runtime, config=config)
    host = float(replica.cost.fixed_step_s[1] + replica.cost.fixed_sequence_s[1])
    result = run(work, replica)
    np.testing.assert_allclose(result.itl_s, host, rtol=1e-12)
    assert result.tpot_s[0] == pytest.approx(host, rel=1e-12)


def test_no_host_time_no_change(setup):
    """Physics alone (ideal: no fixed cost): overlap changes nothing, bit for bit."""
    model, hw, _ = setup
    work = synthetic_workload(10.0, 60.0, seed=3)
    a = run(work, build_replica(model, hw, work))
    b = run(work, build_replica(model, hw, work, config=SchedulerConfig(async_scheduling=True)))
    for key in ("ttft_s", "tpot_s", "e2e_s", "itl_s"):
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key))


def test_cli_async_scheduling(capsys):
    args = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "8"]
    args += ["--duration", "30", "--runtime", "tensorrt-llm", "--no-progress", "--json"]
    assert main(args) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*args, "--async-scheduling"]) == 0
    overlapped = json.loads(capsys.readouterr().out)
    assert overlapped["tpot_s_p50"] < plain["tpot_s_p50"]
