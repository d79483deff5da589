"""What would fit past the capacity wall: more devices, or fewer bits."""

from __future__ import annotations

import dataclasses

from roofline import Platform

from .inputs import scenario_inputs
from .memory import footprint_arrays
from .model import ModelConfig
from .scenario import Parallelism, Scenario


def footprint_bytes(model: ModelConfig, scenario: Scenario) -> float:
    """Per-device capacity footprint of ``scenario`` (uniform per-group bits), bytes."""
    parts = footprint_arrays(model, scenario_inputs(scenario))
    return float(sum(part[0] for part in parts.values()))


def capacity_suggestions(
    model: ModelConfig, platform: Platform, scenario: Scenario
) -> tuple[str, ...]:
    """Ways to get under the capacity wall, each checked against the footprint model."""
    capacity = platform.main_memory.capacity_bytes
    mesh = scenario.parallelism
    suggestions = []
    link = platform.interconnect
    current = mesh.tp * mesh.pp
    per_node = link.devices_per_node if link is not None else 1
    for devices in (2**k for k in range(1, 10) if link is not None and 2**k > current):
        tp = min(devices, model.num_heads, per_node)
        stages = devices // tp
        if stages > model.num_layers:
            break
        candidate = dataclasses.replace(
            scenario, parallelism=Parallelism(tp=tp, pp=stages, ep=mesh.ep, dp=mesh.dp)
        )
        if footprint_bytes(model, candidate) <= capacity:
            suggestions.append(
                f"use {devices * mesh.ep} devices per replica (tp={tp}, pp={stages})"
            )
            break
    for bits in (8.0, 4.0, 3.0, 2.0):
        if bits >= scenario.precision.weight_bits:
            continue
        precision = dataclasses.replace(
            scenario.precision, weight_bits=bits, group_bits={}, layer_bits={}
        )
        if footprint_bytes(model, dataclasses.replace(scenario, precision=precision)) <= capacity:
            suggestions.append(f"quantise weights to {bits:g} bits")
            break
    if scenario.precision.kv_bits > 8:
        precision = dataclasses.replace(scenario.precision, kv_bits=8.0)
        if footprint_bytes(model, dataclasses.replace(scenario, precision=precision)) <= capacity:
            suggestions.append("store the KV cache in 8 bits")
    if (
        scenario.batch > 1
        and footprint_bytes(model, dataclasses.replace(scenario, batch=1)) <= capacity
    ):
        low, high = 1, scenario.batch
        while high - low > 1:
            middle = (low + high) // 2
            if footprint_bytes(model, dataclasses.replace(scenario, batch=middle)) <= capacity:
                low = middle
            else:
                high = middle
        suggestions.append(f"reduce batch to {low}")
    if not suggestions:
        suggestions.append(
            "no single change checked here fits; combine more devices with fewer bits"
        )
    return tuple(suggestions)
