"""Apply a `RuntimeProfile` to the costed operators of a pass (the hook in `evaluate`).

The profile transforms inputs, it does not fork the cost model:

1. `prepare`: weights take the bits the runtime really stores (per format), the
   graph counts the experts a step touches with the phase's routing independence
   (`routing_independence`), and operators are costed on the *physics platform*
   (compute and memory efficiency 1, no per-operator kernel overhead; everything
   else the platform's own).
2. `retime`: every operator's compute time is divided by the phase's compute
   efficiency and its memory time by the phase's memory efficiency (times the
   weight format's scale), the KV cache's bytes of a KV format the platform has no
   arithmetic for at that fraction times the format's emulated scale
   (`kv_format_memory_s`); an all-reduce costs its ring bandwidth term plus the
   profile's one small-message latency instead of ``2(n-1)`` link latencies; and one
   operator ``runtime_step`` is appended per pass carrying the fixed cost of its
   steps, ``steps x (step_overhead_s + sequence_overhead_s x batch)`` (``chunks``
   steps for prefill, one per decode step). The step time stays
   ``sum(max(compute, memory) + interconnect + overhead)``.

`scaled_terms` is the one formula, shared with calibration (`calibration.fit`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from roofline import Efficiency, OperatorKind, Platform, all_reduce_time

from .costing import PassCost, stack_broadcast
from .graph import Array, OpTerms, PassOps
from .inputs import GridInputs
from .runtime import PHASES, PhaseProfile, RuntimeProfile

#: Weight groups stored once per model (embedding and LM head).
MODEL_GROUPS = ("embedding", "lm_head")
#: Weight group of the routed-expert GEMMs (`genz.graph`).
EXPERT_GROUP = "experts"


def physics_platform(platform: Platform) -> Platform:
    """``platform`` with compute and memory efficiency 1 and no kernel overhead."""
    efficiency = Efficiency(compute=1.0, memory=1.0, interconnect=platform.efficiency.interconnect)
    return dataclasses.replace(platform, efficiency=efficiency, kernel_overhead_s=0.0)


def stored_bits(profile: RuntimeProfile, inputs: GridInputs) -> GridInputs:
    """``inputs`` with each weight group at the bits the runtime stores for its format
    (`stored_weight_bits`)."""
    if not profile.weight_formats:
        return inputs
    return dataclasses.replace(inputs, weight_bits=stored_weight_bits(profile, inputs.weight_bits))


def stored_weight_bits(
    profile: RuntimeProfile, weight_bits: Mapping[str, Array]
) -> dict[str, Array]:
    """Weight group -> the bits the runtime stores, per scenario.

    A scenario's format is the profile's format whose ``nominal_bits`` equal the
    scenario's layer-weight bits (``attn_qkv``); every group then takes that format's
    stored bits (embedding and LM head: its ``embedding_bits`` and ``lm_head_bits``);
    bits matching no format are stored as given.
    """
    if not profile.weight_formats:
        return dict(weight_bits)
    layer_bits = weight_bits["attn_qkv"]
    if isinstance(layer_bits, float):  # one scenario as floats (predict's fast path)
        fmt = profile.format_for_bits(layer_bits)
        if fmt is None:
            return dict(weight_bits)
        model_level = {"embedding": fmt.embedding_bits, "lm_head": fmt.lm_head_bits}
        floats: dict[str, Any] = {g: model_level.get(g, fmt.stored_bits) for g in weight_bits}
        return floats
    bits = dict(weight_bits)
    nominal = np.asarray(layer_bits, float)
    for fmt in profile.weight_formats:
        hit = np.isclose(nominal, fmt.nominal_bits)
        for group in weight_bits:
            target = {"embedding": fmt.embedding_bits, "lm_head": fmt.lm_head_bits}.get(
                group, fmt.stored_bits
            )
            bits[group] = np.where(hit, target, np.asarray(bits[group], float))
    return bits


def memory_scale(profile: RuntimeProfile, nominal_bits: Array | float) -> Array:
    """Per scenario, the weight format's multiplier on memory efficiency (1 if unlisted)."""
    scale = np.ones(np.shape(nominal_bits))
    for fmt in profile.weight_formats:
        scale = np.where(
            np.isclose(nominal_bits, fmt.nominal_bits), fmt.memory_efficiency_scale, scale
        )
    return scale


def kv_slowdown(
    profile: RuntimeProfile, platform: Platform, kv_bits: Array | float
) -> Array | None:
    """Per scenario, the factor on the KV cache's memory time at a given efficiency:
    ``1 / emulated_memory_efficiency_scale`` (the device class's, `RuntimeProfile.
    kv_scale`) where the scenario's ``kv_bits`` select a KV format
    (`genz.runtime.KVFormat`) whose native dtype ``platform`` lists no peak for, else
    1. None when no scenario has such a format (nothing changes)."""
    emulated = [fmt for fmt in profile.kv_formats if fmt.emulated_on(platform.peak_flops_per_s)]
    if not emulated:
        return None
    factor = np.ones(np.shape(kv_bits))
    for fmt in emulated:
        scale = profile.kv_scale(fmt, platform.device_class)
        factor = np.where(np.isclose(kv_bits, fmt.nominal_bits), 1.0 / scale, factor)
    return None if np.all(factor == 1.0) else factor


def kv_memory_s(ops: PassOps, cost: PassCost) -> Array:
    """Per operator, the part of its memory time (all its runs) that moves KV-cache
    bytes: ``memory_s x kv_bytes / bytes`` (`genz.graph.OpTerms.kv_bytes`), seconds."""
    kv_bytes, moved = stack_broadcast(
        [op.kv_bytes for op in ops.ops] + [op.bytes for op in ops.ops], fields=2
    )
    share = np.divide(kv_bytes, moved, out=np.zeros(moved.shape), where=moved > 0)
    return np.asarray(cost.memory_s * share, float)


def kv_format_memory_s(memory_s: Array, kv_s: Array, slowdown: Array | None) -> Array:
    """Memory time (efficiency 1) with the KV cache's part ``kv_s`` times ``slowdown``
    (`kv_slowdown`; None: ``memory_s`` unchanged), seconds. After `scaled_terms` the KV
    bytes then stream at the phase's memory fraction times the emulated scale."""
    if slowdown is None:
        return memory_s
    return memory_s + kv_s * (slowdown - 1.0)


def routing_independence(profile: RuntimeProfile, platform: Platform) -> dict[str, float]:
    """Per phase, the profile's expert-routing independence on ``platform`` (1: uniform
    independent routing, the physics; also for a profile without phases)."""
    if not profile.phases:
        return {"prefill": 1.0, "decode": 1.0}
    return {name: profile.phase(name, platform).routing_independence for name in PHASES}


def scaled_terms(
    compute_s: Array,
    memory_s: Array,
    compute_efficiency: Array | float,
    memory_efficiency: Array | float,
    scale: Array | float = 1.0,
) -> tuple[Array, Array]:
    """Compute and memory time of operators costed at efficiency 1, at the runtime's
    fractions of peak, seconds. The memory fraction is the memory efficiency times the
    weight format's ``scale``, at most 1: no kernel streams faster than the platform's
    peak bandwidth, whatever a format's fitted scale."""
    fraction = np.minimum(1.0, memory_efficiency * np.asarray(scale, float))
    return compute_s / compute_efficiency, memory_s / fraction


def efficiencies(phase: PhaseProfile) -> tuple[float, float]:
    """The phase's compute and memory efficiency; an inherited one (None) must have been
    set from the platform first (`genz.RuntimeProfile.on_platform`)."""
    if phase.compute_efficiency is None or phase.memory_efficiency is None:
        raise ValueError("an inherited efficiency reached the costing: apply on_platform first")
    return phase.compute_efficiency, phase.memory_efficiency


def all_reduce_wire_s(op: OpTerms, platform: Platform) -> Array:
    """One ring all-reduce of the operator without any latency term, seconds (0 on one
    device): the profile's fitted ``all_reduce_latency_s`` replaces the per-hop link
    latencies and the platform's per-collective base latency (``collective_latency_s``)."""
    assert op.message_bytes is not None and op.group_size is not None
    if platform.interconnect is None or not np.any(np.asarray(op.group_size) > 1):
        return np.zeros(np.shape(op.message_bytes))
    link = dataclasses.replace(
        platform.interconnect,
        link_latency_s=0.0,
        collective_latency_s=0.0,
        scaleout_latency_s=None if platform.interconnect.scaleout_latency_s is None else 0.0,
    )
    quiet = dataclasses.replace(platform, interconnect=link)
    return np.asarray(all_reduce_time(quiet, op.message_bytes, op.group_size))


def with_step(cost: PassCost, overhead_s: Array | float) -> PassCost:
    """``cost`` with one more operator, ``runtime_step``: no FLOP, no bytes, the pass's
    fixed step cost as overhead."""
    shape = cost.compute_s.shape[1:]
    zero = np.zeros((1, *shape))

    def grow(column: Array, row: Array) -> Array:
        return np.concatenate([column, row])

    return PassCost(
        names=(*cost.names, "runtime_step"),
        kinds=(*cost.kinds, OperatorKind.OTHER),
        groups=(*cost.groups, "runtime"),
        blocks=(*cost.blocks, "model"),
        collective=np.append(cost.collective, False),
        layers=grow(cost.layers, zero + 1.0),
        flop_per_run=grow(cost.flop_per_run, zero),
        bytes_per_run=grow(cost.bytes_per_run, zero),
        compute_s=grow(cost.compute_s, zero),
        memory_s=grow(cost.memory_s, zero),
        interconnect_s=grow(cost.interconnect_s, zero),
        overhead_s=grow(cost.overhead_s, zero + np.asarray(overhead_s, float)),
    )


def retime_pass(
    profile: RuntimeProfile,
    phase_name: str,
    platform: Platform,
    ops: PassOps,
    cost: PassCost,
    nominal_bits: Array | float,
    steps: Array | float,
    batch: Array | float,
    kv_bits: Array | float = 16.0,
) -> PassCost:
    """One pass (costed on the physics platform) at the runtime's efficiencies (the KV
    cache's bytes at its format's rate, `kv_format_memory_s`), its all-reduces at the
    profile's latency, plus its step cost."""
    phase = profile.phase(phase_name, platform)
    slowdown = kv_slowdown(profile, platform, kv_bits)
    memory_s = cost.memory_s
    if slowdown is not None:
        memory_s = kv_format_memory_s(memory_s, kv_memory_s(ops, cost), slowdown)
    compute, memory = scaled_terms(
        cost.compute_s, memory_s, *efficiencies(phase), memory_scale(profile, nominal_bits)
    )
    interconnect = cost.interconnect_s
    latency = profile.all_reduce_latency(platform.device_class)
    reduces = [row for row, op in enumerate(ops.ops) if op.collective == "all_reduce"]
    if latency is not None and reduces:
        interconnect = np.array(interconnect, float)
        for row in reduces:
            op = ops.ops[row]
            paying = np.where(np.asarray(op.group_size) > 1, cost.layers[row], 0.0)
            interconnect[row] = (all_reduce_wire_s(op, platform) + latency) * paying
    retimed = dataclasses.replace(
        cost, compute_s=compute, memory_s=memory, interconnect_s=interconnect
    )
    return with_step(retimed, phase.fixed_s(np.asarray(steps, float), np.asarray(batch, float)))


def retime(
    profile: RuntimeProfile,
    platform: Platform,
    inputs: GridInputs,
    chunks: Array | float,
    prefill: tuple[PassOps, PassCost],
    decode: tuple[PassOps, PassCost],
) -> tuple[PassCost, PassCost]:
    """Both passes at the runtime's efficiencies (``inputs`` with the nominal bits)."""
    if not profile.phases:
        return prefill[1], decode[1]
    nominal, kv = inputs.weight_bits["attn_qkv"], inputs.kv_bits
    return (
        retime_pass(profile, "prefill", platform, *prefill, nominal, chunks, inputs.batch, kv),
        retime_pass(profile, "decode", platform, *decode, nominal, 1.0, inputs.batch, kv),
    )
