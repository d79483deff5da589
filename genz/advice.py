"""What would fit past the capacity wall: more devices (at TP degrees the model can be
split over), fewer bits, a smaller batch, or (on a platform with a host memory link)
a share of the weights or KV cache offloaded to host memory (`genz.offload`)."""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import InputError, Platform

from .inputs import scenario_inputs
from .memory import footprint_arrays
from .model import ModelConfig
from .offload import offload_terms
from .scenario import Parallelism, Scenario


def footprint_bytes(model: ModelConfig, scenario: Scenario) -> float:
    """Per-device capacity footprint of ``scenario`` (uniform per-group bits), bytes: the
    device's ``(1 - f_w)`` share of the weights and ``(1 - f_kv)`` of the KV cache (the
    offloaded shares live in host memory) plus the activations."""
    weights, kv, activations = _footprint_parts(model, scenario)
    return (1 - scenario.weight_offload) * weights + (1 - scenario.kv_offload) * kv + activations


def _footprint_parts(model: ModelConfig, scenario: Scenario) -> tuple[float, float, float]:
    """Per-device weights, KV cache (final context) and activation bytes, no offload."""
    parts = footprint_arrays(model, scenario_inputs(scenario))
    return (
        float(parts["weights_bytes"][0]),
        float(parts["kv_cache_bytes"][0]),
        float(parts["activation_bytes"][0]),
    )


def tensor_parallel_degrees(model: ModelConfig) -> tuple[int, ...]:
    """TP degrees that give every device whole attention heads, as vLLM requires.

    ``tp`` must divide the query heads. For GQA/MHA it must also divide the KV heads
    (each device holds ``kv_heads / tp``) or be a multiple of them (each KV head is
    replicated on ``tp / kv_heads`` devices: vLLM's ``QKVParallelLinear``, and the
    ``max(kv_heads / tp, 1)`` of `genz.memory`). MLA's latent KV is not split by tp.
    """
    return _whole_head_degrees(model.num_heads, model.num_kv_heads, model.is_mla)


@functools.lru_cache(maxsize=256)
def _whole_head_degrees(heads: int, kv_heads: int, is_mla: bool) -> tuple[int, ...]:
    candidates = np.arange(1, heads + 1)
    return tuple(
        int(tp) for tp in candidates[splits_whole_heads(candidates, heads, kv_heads, is_mla)]
    )


def splits_whole_heads(
    tp: ArrayLike, heads: ArrayLike, kv_heads: ArrayLike, is_mla: bool = False
) -> NDArray[np.bool_]:
    """Elementwise: does ``tp`` give every device whole heads (the rule of
    `tensor_parallel_degrees`, for grids of designs)?"""
    tp, heads, kv_heads = (np.asarray(a, dtype=np.int64) for a in (tp, heads, kv_heads))
    kv_ok = (kv_heads % tp == 0) | (tp % kv_heads == 0)
    return np.asarray((heads % tp == 0) & (kv_ok | is_mla), dtype=bool)


def capacity_suggestions(
    model: ModelConfig, platform: Platform, scenario: Scenario, reserved_bytes: float = 0.0
) -> tuple[str, ...]:
    """Ways to get under the capacity wall, each checked against the footprint model.

    ``reserved_bytes`` per device are held by something else (a speculative draft
    model) and stay fixed under every suggestion, so each suggestion is sufficient.
    """
    capacity = platform.main_memory.capacity_bytes - reserved_bytes
    mesh = scenario.parallelism
    suggestions = []
    link = platform.interconnect
    current = mesh.tp * mesh.pp
    per_node = link.devices_per_node if link is not None else 1
    degrees = tensor_parallel_degrees(model)
    for devices in (2**k for k in range(1, 10) if link is not None and 2**k > current):
        tp = max(degree for degree in degrees if degree <= min(devices, per_node))
        stages = devices // tp
        if stages > model.num_layers:
            break
        candidate = dataclasses.replace(
            scenario, parallelism=Parallelism(tp=tp, pp=stages, ep=mesh.ep, dp=mesh.dp)
        )
        if footprint_bytes(model, candidate) <= capacity:
            suggestions.append(
                f"use {tp * stages * mesh.ep} devices per replica (tp={tp}, pp={stages})"
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
    suggestions += _offload_suggestions(model, platform, scenario, capacity)
    if not suggestions:
        suggestions.append(
            "no single change checked here fits; combine more devices with fewer bits"
        )
    return tuple(suggestions)


def _offload_suggestions(
    model: ModelConfig, platform: Platform, scenario: Scenario, capacity: float
) -> list[str]:
    """The least share of the weights, and of the KV cache, kept in host memory (in steps
    of 1 %) that brings the device under ``capacity`` with host memory holding the rest,
    each with the decode step's host-link time it costs (`genz.offload`); none without
    a host link."""
    if platform.host is None:
        return []
    weights, kv, activations = _footprint_parts(model, scenario)
    f_w, f_kv = scenario.weight_offload, scenario.kv_offload
    over = (1 - f_w) * weights + (1 - f_kv) * kv + activations - capacity
    found = []
    for field, label, size, current in (
        ("weight_offload", "the weights", weights, f_w),
        ("kv_offload", "the KV cache", kv, f_kv),
    ):
        if size <= 0:
            continue
        share = math.ceil((current + over / size) * 100 - 1e-9) / 100
        if not current < share <= 1:
            continue
        if field == "weight_offload":
            candidate = dataclasses.replace(scenario, weight_offload=share)
        else:
            candidate = dataclasses.replace(scenario, kv_offload=share)
        if footprint_bytes(model, candidate) > capacity:
            continue
        try:  # host memory must hold the offloaded shares
            link = offload_terms(model, platform, candidate, weights, kv)
        except InputError:
            continue
        found.append(
            f"keep {share:.0%} of {label} in host memory (--{field.replace('_', '-')} "
            f"{share:g}; the link streams it every decode step: "
            f"{link.decode_link_s * 1e3:.3g} ms)"
        )
    return found
