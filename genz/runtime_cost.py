"""Apply a `RuntimeProfile` to the costed operators of a pass (the hook in `evaluate`).

The profile transforms inputs, it does not fork the cost model:

1. `prepare`: weights take the bits the runtime really stores (per format), and
   operators are costed on the *physics platform* (compute and memory efficiency 1,
   no per-operator kernel overhead; everything else the platform's own).
2. `retime`: every operator's compute time is divided by the phase's compute
   efficiency and its memory time by the phase's memory efficiency (times the
   weight format's scale); an all-reduce costs its ring bandwidth term plus the
   profile's one small-message latency instead of ``2(n-1)`` link latencies; and one
   operator ``runtime_step`` is appended per pass carrying the fixed cost of its
   steps, ``steps x (step_overhead_s + sequence_overhead_s x batch)`` (``chunks``
   steps for prefill, one per decode step). The step time stays
   ``sum(max(compute, memory) + interconnect + overhead)``.

`scaled_terms` is the one formula, shared with calibration (`genz.calibration`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from roofline import Efficiency, OperatorKind, Platform, all_reduce_time

from .costing import OpTimes
from .graph import Array, OpTerms
from .inputs import GridInputs
from .runtime import PhaseProfile, RuntimeProfile

#: Weight groups stored once per model (embedding and LM head).
MODEL_GROUPS = ("embedding", "lm_head")


def physics_platform(platform: Platform) -> Platform:
    """``platform`` with compute and memory efficiency 1 and no kernel overhead."""
    efficiency = Efficiency(compute=1.0, memory=1.0, interconnect=platform.efficiency.interconnect)
    return dataclasses.replace(platform, efficiency=efficiency, kernel_overhead_s=0.0)


def stored_bits(profile: RuntimeProfile, inputs: GridInputs) -> GridInputs:
    """``inputs`` with each weight group at the bits the runtime stores for its format.

    A scenario's format is the profile's format whose ``nominal_bits`` equal the
    scenario's layer-weight bits; bits matching no format are stored as given.
    """
    if not profile.weight_formats:
        return inputs
    bits = dict(inputs.weight_bits)
    nominal = np.asarray(inputs.weight_bits["attn_qkv"], float)
    for fmt in profile.weight_formats:
        hit = np.isclose(nominal, fmt.nominal_bits)
        for group in inputs.weight_bits:
            target = {"embedding": fmt.embedding_bits, "lm_head": fmt.lm_head_bits}.get(
                group, fmt.stored_bits
            )
            bits[group] = np.where(hit, target, np.asarray(bits[group], float))
    return dataclasses.replace(inputs, weight_bits=bits)


def memory_scale(profile: RuntimeProfile, nominal_bits: Array) -> Array:
    """Per scenario, the weight format's multiplier on memory efficiency (1 if unlisted)."""
    scale = np.ones(np.shape(nominal_bits))
    for fmt in profile.weight_formats:
        scale = np.where(
            np.isclose(nominal_bits, fmt.nominal_bits), fmt.memory_efficiency_scale, scale
        )
    return scale


def scaled_terms(
    compute_s: Array,
    memory_s: Array,
    phase: PhaseProfile,
    scale: Array | float = 1.0,
) -> tuple[Array, Array]:
    """Compute and memory time of operators costed at efficiency 1, at the runtime's
    fractions of peak, seconds."""
    return compute_s / phase.compute_efficiency, memory_s / (phase.memory_efficiency * scale)


def all_reduce_instances(op: OpTerms) -> Array:
    """How many all-reduces that pay a latency the operator runs (0 on one device)."""
    if op.collective != "all_reduce" or op.group_size is None:
        return np.zeros(())
    return np.where(np.asarray(op.group_size) > 1, 1.0, 0.0) * op.layers


def all_reduce_bandwidth_s(op: OpTerms, platform: Platform) -> Array:
    """Ring all-reduce time of the operator without link latency, seconds."""
    assert op.message_bytes is not None and op.group_size is not None
    if platform.interconnect is None or not np.any(np.asarray(op.group_size) > 1):
        return np.zeros(np.shape(op.message_bytes))
    link = dataclasses.replace(
        platform.interconnect,
        link_latency_s=0.0,
        scaleout_latency_s=None if platform.interconnect.scaleout_latency_s is None else 0.0,
    )
    quiet = dataclasses.replace(platform, interconnect=link)
    return np.asarray(all_reduce_time(quiet, op.message_bytes, op.group_size)) * op.layers


def step_operator(overhead_s: Array) -> OpTimes:
    """The per-step fixed cost of a pass as one operator (no FLOP, no bytes)."""
    zero = np.zeros(np.shape(overhead_s))
    terms = OpTerms(
        "runtime_step", OperatorKind.OTHER, "runtime", 1.0, zero, zero, zero + 16.0, block="model"
    )
    return OpTimes(terms, zero, zero, zero, np.asarray(overhead_s, float))


def retime_pass(
    profile: RuntimeProfile,
    phase_name: str,
    platform: Platform,
    timed: list[OpTimes],
    nominal_bits: Array,
    steps: Array,
    batch: Array,
) -> list[OpTimes]:
    """The operators of one pass at the runtime's efficiencies, plus its step cost."""
    phase = profile.phase(phase_name, platform)
    scale = memory_scale(profile, nominal_bits)
    reduce_latency = profile.all_reduce_latency(platform.device_class)
    out = []
    for item in timed:
        if item.op.collective is None:
            compute, memory = scaled_terms(item.compute_s, item.memory_s, phase, scale)
            out.append(OpTimes(item.op, compute, memory, item.interconnect_s, item.overhead_s))
        elif item.op.collective == "all_reduce" and reduce_latency is not None:
            wire = all_reduce_bandwidth_s(item.op, platform)
            latency = reduce_latency * all_reduce_instances(item.op)
            out.append(dataclasses.replace(item, interconnect_s=wire + latency))
        else:
            out.append(item)
    out.append(step_operator(phase.fixed_s(np.asarray(steps, float), batch)))
    return out


def retime(
    profile: RuntimeProfile,
    platform: Platform,
    inputs: GridInputs,
    chunks: Array,
    prefill_ops: list[OpTimes],
    decode_ops: list[OpTimes],
) -> tuple[list[OpTimes], list[OpTimes]]:
    """Both passes at the runtime's efficiencies (``inputs`` with the nominal bits)."""
    if not profile.phases:
        return prefill_ops, decode_ops
    nominal = np.asarray(inputs.weight_bits["attn_qkv"], float)
    return (
        retime_pass(profile, "prefill", platform, prefill_ops, nominal, chunks, inputs.batch),
        retime_pass(
            profile, "decode", platform, decode_ops, nominal, np.ones_like(chunks), inputs.batch
        ),
    )
