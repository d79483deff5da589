"""Energy of simulated serving runs through genz's power model: a hand-derived single
step on a made-up platform, the idle and TDP bounds, and the fraction x TDP rule of
presets without a power model."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from helpers import MADE_UP_POWER, TINY_CONFIG

from app.cli import main
from genz import Parallelism, Precision, Scenario, load_model, load_runtime, predict, step_cost
from genz.hf_config import model_from_hf_config
from roofline import derive_platform, load_platform
from search.economics import serving_energy_j
from search.serving import (
    SchedulerConfig,
    Workload,
    build_replica,
    kv_link,
    run,
    run_disaggregated,
    synthetic_workload,
)


def _one_prompt(tokens: int) -> Workload:
    """One request at t = 0 with a ``tokens`` prompt and a single output token."""
    return Workload(
        np.zeros(1), np.array([tokens]), np.array([1]), np.zeros(1, np.int64), "one prompt"
    )


@pytest.mark.parametrize("tdp", [10_000.0, 60.0])
def test_single_step_energy_is_hand_derived(simple_platform, tdp):
    """One prefill step of 512 tokens: its time, FLOP and bytes are genz.predict's
    TTFT and prefill FLOP and bytes, so the run draws min(TDP, idle + J/FLOP x FLOP/s
    + J/byte x bytes/s) over the TTFT."""
    platform = derive_platform(simple_platform, power_w=tdp, power_model=MADE_UP_POWER)
    model = model_from_hf_config(TINY_CONFIG)
    workload = _one_prompt(512)
    replica = build_replica(model, platform, workload, config=SchedulerConfig(max_sequences=4))
    result = run(workload, replica)
    found = predict(model, platform, Scenario(batch=1, input_tokens=512, output_tokens=1))
    seconds = found.ttft_s
    assert result.summary["span_s"] == pytest.approx(seconds)
    watts = min(
        tdp, 50 + 1e-12 * found.prefill.flop / seconds + 1e-10 * found.prefill.bytes / seconds
    )
    money = result.economics
    assert money.energy_j == pytest.approx(watts * seconds, rel=1e-9)
    assert money.mean_power_w == pytest.approx(watts, rel=1e-9)
    assert money.j_per_output_token == pytest.approx(watts * seconds)  # one output token
    assert money.output_tokens_per_j == pytest.approx(1 / (watts * seconds))
    assert money.power_basis == (
        f"{platform.name}: activity model: idle + energy per FLOP + energy per byte, capped at TDP"
    )
    if tdp < 100:  # the cap binds: the step draws the whole board power
        assert money.mean_power_w == pytest.approx(tdp)


def test_serving_energy_j_by_hand():
    """Two devices, 3 replicas, 10 s: idle 50 W each all along, plus two steps of which
    the second is capped at (TDP - idle) x its time."""
    platform = derive_platform(
        load_platform("a100-sxm-40gb"), power_w=250.0, power_model=MADE_UP_POWER
    )
    joules = serving_energy_j(platform, 2, 3, 10.0, [0.1, 0.01], [1e14, 1e14], [1e9, 1e11])
    # step 1: 1e-12 x 1e14 + 1e-10 x 1e9 = 100.1 J (cap 200 W x 0.1 s = 20 J -> 20 J)
    # step 2: 100 + 10 = 110 J, cap 200 x 0.01 = 2 J -> 2 J
    assert joules == pytest.approx(2 * (3 * 50 * 10.0 + 20.0 + 2.0))
    uncapped = serving_energy_j(platform, 2, 3, 10.0, [10.0, 10.0], [1e14, 1e14], [1e9, 1e11])
    assert uncapped == pytest.approx(2 * (3 * 50 * 10.0 + 100.1 + 110.0))
    bare = derive_platform(load_platform("a100-sxm-80gb"), power_w=400.0)
    assert bare.power_model is None
    assert serving_energy_j(bare, 2, 3, 10.0, [1.0], [1e20], [1e20], 0.5) == pytest.approx(
        0.5 * 400 * 2 * 3 * 10
    )


@pytest.mark.parametrize("hw", ["h100-sxm", "a100-sxm-40gb"])
@pytest.mark.parametrize("policy", ["continuous", "chunked", "static"])
def test_energy_between_idle_and_tdp(llama8b, hw, policy):
    platform = load_platform(hw)
    assert platform.power_model is not None
    workload = synthetic_workload(4.0, 20.0, seed=1)
    replica = build_replica(
        llama8b, platform, workload, config=SchedulerConfig(policy=policy, max_sequences=32)
    )
    result = run(workload, replica, replicas=2)
    money = result.economics
    span, devices = result.summary["span_s"], 2 * replica.devices
    assert money.devices == devices
    assert platform.power_model.idle_w * span * devices < money.energy_j
    assert money.energy_j < platform.power_w * span * devices
    tokens = result.summary["throughput_tokens_per_s"] * span
    assert money.j_per_output_token == pytest.approx(money.energy_j / tokens)
    assert money.mean_power_w == pytest.approx(money.energy_j / span)


def test_pool_energy_sums_both_pools(llama8b):
    """Disaggregated: each pool by its own platform's rule (H100: power model; A100
    80 GB: TDP), all within idle/TDP bounds of the two pools together."""
    h100, a100 = load_platform("h100-sxm"), load_platform("a100-sxm-80gb")
    workload = synthetic_workload(4.0, 20.0, seed=2)
    prefill = build_replica(llama8b, h100, workload)
    decode = build_replica(llama8b, a100, workload)
    result = run_disaggregated(
        workload, prefill, decode, kv_link(prefill, decode, 1, 2), decode_replicas=2
    )
    money = result.economics
    span = result.summary["span_s"]
    low = (h100.power_model.idle_w + 2 * a100.power_w) * span
    high = (h100.power_w + 2 * a100.power_w) * span
    assert low < money.energy_j < high
    assert money.devices == 3
    assert "h100-sxm: activity model" in money.power_basis
    assert "a100-sxm-80gb: 1 x TDP" in money.power_basis


def test_preset_without_power_model_keeps_tdp_figure(llama8b):
    """a100-sxm-80gb has no power model: every device at TDP for the span, as before."""
    platform = load_platform("a100-sxm-80gb")
    assert platform.power_model is None
    workload = synthetic_workload(2.0, 20.0, seed=1)
    replica = build_replica(llama8b, platform, workload, parallelism=Parallelism(tp=2))
    result = run(workload, replica, replicas=2)
    money = result.economics
    assert money.mean_power_w == pytest.approx(platform.power_w * 4)
    assert money.j_per_output_token == pytest.approx(
        platform.power_w * 4 / result.summary["throughput_tokens_per_s"]
    )
    assert money.power_basis == "a100-sxm-80gb: 1 x TDP"


def test_cli_reports_energy_and_power_model(capsys):
    args = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "2"]
    assert main([*args, "--duration", "20", "--no-progress", "--json"]) == 0
    money = json.loads(capsys.readouterr().out)["economics"]
    assert money["power_basis"].startswith("h100-sxm: activity model")
    assert money["output_tokens_per_j"] == pytest.approx(1 / money["j_per_output_token"])
    assert 0 < money["mean_power_w"] < 700
    assert main([*args, "--duration", "20", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "tokens per joule; mean power" in text and "power model" in text


@pytest.mark.parametrize(
    ("name", "tp", "runtime"),
    [("llama-3.1-8b", 1, None), ("llama-3.1-8b", 2, "vllm"), ("mixtral-8x7b", 4, None)],
)
def test_step_work_of_pure_steps_is_genz_predict(name, tp, runtime):
    """A prefill step of one prompt and a decode step of a batch carry the FLOP and
    bytes genz.predict gives those phases (same graph, same per-device counting)."""
    model, platform = load_model(name), load_platform("h100-sxm")
    profile = None if runtime is None else load_runtime(runtime)
    parallelism = Parallelism(tp=tp)
    precision = Precision(weight_bits=model.default_weight_bits)
    cost = step_cost(
        model, platform, precision, parallelism, max_tokens=1024, max_sequences=16,
        runtime=profile,
    )  # fmt: skip
    scenario = Scenario(
        batch=8, input_tokens=300, output_tokens=2, precision=precision, parallelism=parallelism
    )
    found = predict(model, platform, scenario, runtime=profile)
    flop, moved = cost.step_work([0], [0], [0], [8], [8 * 301], [8])
    assert flop[0] == pytest.approx(found.decode.flop, rel=1e-9)
    assert moved[0] == pytest.approx(found.decode.bytes, rel=1e-9)
    one = dataclasses.replace(scenario, batch=1, output_tokens=1)
    found = predict(model, platform, one, runtime=profile)
    pairs = 300 * 300 - 300 * 299 / 2
    flop, moved = cost.step_work([300], [300], [pairs], [0], [0], [1])
    assert flop[0] == pytest.approx(found.prefill.flop, rel=1e-9)
    assert moved[0] == pytest.approx(found.prefill.bytes, rel=1e-9)
