"""The runtime profile resolved once (`genz.resolved`): what the description holds, and that
the cost path reads the profile through it only (`tests/test_resolved_golden.py` checks
that the numbers did not move)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest

import genz.predictor
import genz.step_probes
from genz import Precision, Scenario, load_model, load_runtime, predict, step_cost
from genz.inputs import scenario_inputs
from genz.resolved import ResolvedProfile, physics_platform, resolve
from genz.runtime import PhaseProfile, RuntimeProfile
from roofline import load_platform


def test_no_profile_resolves_to_the_preset_itself():
    platform = load_platform("h100-sxm")
    inputs = scenario_inputs(Scenario())
    resolved = resolve(platform, None, inputs)
    assert not resolved.retimes and resolved.platform is platform
    assert resolved.weight_bits is inputs.weight_bits and resolved.stored(inputs) is inputs
    assert resolved.kernel_overhead_s == platform.kernel_overhead_s
    assert resolved.all_reduce_latency_s is None and resolved.kv_memory_factor is None
    for phase in resolved.phases.values():
        assert (phase.compute_efficiency, phase.memory_efficiency) == (
            platform.efficiency.compute,
            platform.efficiency.memory,
        )
        assert (phase.step_overhead_s, phase.routing_independence) == (0.0, 1.0)
    assert resolve(platform, load_runtime("ideal"), inputs).retimes is False


def test_a_profile_resolves_to_the_physics_platform_and_its_phase_values():
    platform, runtime = load_platform("h100-sxm"), load_runtime("vllm")
    resolved = resolve(platform, runtime, scenario_inputs(Scenario()))
    assert resolved.retimes and resolved.platform == physics_platform(platform)
    assert resolved.kernel_overhead_s == 0.0  # the profile's step cost replaces it
    assert resolved.platform.efficiency.compute == resolved.platform.efficiency.memory == 1.0
    decode = runtime.phase("decode", platform)  # its device class's override
    got = resolved.phases["decode"]
    assert (got.compute_efficiency, got.memory_efficiency, got.step_overhead_s) == (
        decode.compute_efficiency,
        decode.memory_efficiency,
        decode.step_overhead_s,
    )
    assert resolved.all_reduce_latency_s == runtime.all_reduce_latency(platform.device_class)
    with pytest.raises(dataclasses.FrozenInstanceError):
        resolved.retimes = False  # type: ignore[misc]


def test_device_class_override_inherited_efficiency_and_stored_bits_are_settled():
    platform = load_platform("apple-m2-max-30c")
    runtime = load_runtime("llama.cpp")
    fmt = next(fmt for fmt in runtime.weight_formats if fmt.name == "Q4_K_M")
    inputs = scenario_inputs(Scenario(precision=Precision(weight_bits=fmt.nominal_bits)))
    resolved = resolve(platform, runtime, inputs)
    override = runtime.device_classes[platform.device_class]["decode"]
    assert resolved.phases["decode"].memory_efficiency == override.memory_efficiency
    assert float(resolved.weight_bits["attn_qkv"][0]) == fmt.stored_bits
    assert float(resolved.weight_bits["lm_head"][0]) == fmt.lm_head_bits
    assert float(np.asarray(resolved.memory_scale)[0]) == fmt.memory_efficiency_scale
    inherit = RuntimeProfile(
        "inherit",
        phases={name: PhaseProfile(None, 0.5, 1e-3) for name in ("prefill", "decode")},
    )
    phase = resolve(platform, inherit, inputs).phases["prefill"]
    assert phase.compute_efficiency == platform.efficiency.compute
    assert phase.memory_efficiency == 0.5


def test_kv_memory_factor_only_where_the_platform_lacks_the_formats_dtype():
    runtime = load_runtime("vllm")
    fmt = runtime.kv_formats[0]
    inputs = scenario_inputs(Scenario(precision=Precision(kv_bits=fmt.nominal_bits)))
    a100, h100 = load_platform("a100-sxm-80gb"), load_platform("h100-sxm")
    factor = resolve(a100, runtime, inputs).kv_memory_factor
    assert factor is not None
    assert float(factor[0]) == 1.0 / runtime.kv_scale(fmt, a100.device_class)
    assert resolve(h100, runtime, inputs).kv_memory_factor is None  # FP8 arithmetic
    assert resolve(a100, runtime, scenario_inputs(Scenario())).kv_memory_factor is None


def test_the_cost_path_resolves_once_per_evaluation(monkeypatch):
    """predict resolves once per bit pattern and step_cost once for its ~40 probes."""
    calls: list[ResolvedProfile] = []

    def counted(*args):
        calls.append(resolve(*args))
        return calls[-1]

    monkeypatch.setattr(genz.predictor, "resolve", counted)
    monkeypatch.setattr(genz.step_probes, "resolve", counted)
    model, platform, runtime = load_model("llama-3.2-1b"), load_platform("h100-sxm"), None
    for runtime in (None, load_runtime("vllm")):
        calls.clear()
        predict(model, platform, Scenario(), runtime=runtime)
        assert len(calls) == 1
        calls.clear()
        step_cost(model, platform, max_tokens=16, max_sequences=4, runtime=runtime)
        assert len(calls) == 1


def test_the_application_module_never_reads_a_runtime_profile():
    """genz/runtime_cost.py works on the resolved description only."""
    source = Path(genz.predictor.__file__).with_name("runtime_cost.py").read_text()
    imported = {
        alias.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert "RuntimeProfile" not in imported and "PhaseProfile" not in imported
    assert "ResolvedProfile" in imported
