"""How a resolved runtime profile (`genz.resolved.ResolvedProfile`) changes a costed pass.

Nothing here reads a `genz.RuntimeProfile`: `genz.resolved.resolve` turned it, once,
into the stored weight bits, the platform operators are costed on (the physics platform:
efficiency 1, no per-operator kernel overhead), per-phase efficiencies, step costs and
routing, the weight format's memory scale, the KV-format memory factor and the
all-reduce latency. `cost_passes` (both passes of `genz.predictor.evaluate`) and
`cost_phase` (one probe pass of `genz.step_probes`) are the cost path over it:

1. every operator is costed on ``resolved.platform`` (`genz.costing.cost_pass`; prefill
   operators once per chunk);
2. with a profile that retimes (it has phases), `apply_phase`: every operator's compute
   time is divided by the phase's compute efficiency and its memory time by the phase's
   memory efficiency times the weight format's scale (capped at 1, `scaled_terms`; its
   compute scale, if any, likewise on the compute efficiency), the
   KV cache's bytes of a KV format the platform has no arithmetic for at that fraction
   times the format's emulated scale (`kv_format_memory_s`); an all-reduce costs its
   ring bandwidth term plus the profile's one small-message latency instead of
   ``2(n-1)`` link latencies; and one operator ``runtime_step`` is appended per pass
   carrying the fixed cost of its steps, ``steps x (step_overhead_s +
   sequence_overhead_s x batch ** sequence_overhead_exponent)`` (``chunks`` steps for
   prefill, one per decode step; the exponent is 1 unless the profile sets one),
   plus, in `cost_passes`' prefill pass, the profile's fixed cost of one request
   (``request_overhead_s``). The profile's per-kernel launch cost is the kernel overhead
   of ``resolved.platform`` (step 1), except in a phase with its own
   (``ResolvedPhase.kernel_launch_s``): that phase's busy operators pay it instead
   (`phase_launch`).
   The step time stays ``sum(max(compute, memory) + interconnect + overhead)``.

`scaled_terms` and `kv_format_memory_s` are the formulas shared with calibration
(`calibration.rows`, through `genz.fitting`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from roofline import OperatorKind, Platform, all_reduce_time

from .costing import PassCost, cost_pass, stack_broadcast
from .op_terms import Array, OpTerms, PassOps
from .resolved import ResolvedProfile

#: Weight group of the routed-expert GEMMs (`genz.graph`).
EXPERT_GROUP = "experts"


def kv_memory_s(ops: PassOps, cost: PassCost) -> Array:
    """Per operator, the part of its memory time (all its runs) that moves KV-cache
    bytes: ``memory_s x kv_bytes / bytes`` (`genz.op_terms.OpTerms.kv_bytes`), seconds."""
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


def scaled_terms(
    compute_s: Array,
    memory_s: Array,
    compute_efficiency: Array | float,
    memory_efficiency: Array | float,
    scale: Array | float = 1.0,
    compute_scale: Array | None = None,
) -> tuple[Array, Array]:
    """Compute and memory time of operators costed at efficiency 1, at the runtime's
    fractions of peak, seconds. The memory fraction is the memory efficiency times the
    weight format's ``scale``, at most 1: no kernel streams faster than the platform's
    peak bandwidth, whatever a format's fitted scale; likewise the compute fraction with
    the format's ``compute_scale`` (None: the compute efficiency as given)."""
    fraction = np.minimum(1.0, memory_efficiency * np.asarray(scale, float))
    if compute_scale is not None:
        compute_efficiency = np.minimum(1.0, compute_efficiency * np.asarray(compute_scale))
    return compute_s / compute_efficiency, memory_s / fraction


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


def apply_phase(
    resolved: ResolvedProfile,
    phase_name: str,
    ops: PassOps,
    cost: PassCost,
    steps: Array | float,
    batch: Array | float,
    request_s: float = 0.0,
) -> PassCost:
    """One pass costed on ``resolved.platform`` at the phase's efficiencies (the KV
    cache's bytes at its format's rate, `kv_format_memory_s`), its all-reduces at the
    profile's latency, plus its step cost and ``request_s`` (seconds, once: a request's
    fixed cost); unchanged for a profile that does not retime."""
    if not resolved.retimes:
        return cost
    phase = resolved.phases[phase_name]
    memory_s = cost.memory_s
    if resolved.kv_memory_factor is not None:
        memory_s = kv_format_memory_s(memory_s, kv_memory_s(ops, cost), resolved.kv_memory_factor)
    compute, memory = scaled_terms(
        cost.compute_s,
        memory_s,
        phase.compute_efficiency,
        phase.memory_efficiency,
        resolved.memory_scale,
        resolved.compute_scale,
    )
    interconnect = cost.interconnect_s
    latency = resolved.all_reduce_latency_s
    reduces = [  # (one scenario on one device: no all-reduce to pay, its time stays 0)
        row
        for row, op in enumerate(ops.ops)
        if op.collective == "all_reduce"
        and not (isinstance(op.group_size, float) and op.group_size <= 1)
    ]
    if latency is not None and reduces:
        interconnect = np.array(interconnect, float)
        for row in reduces:
            op = ops.ops[row]
            paying = np.where(np.asarray(op.group_size) > 1, cost.layers[row], 0.0)
            interconnect[row] = (all_reduce_wire_s(op, resolved.platform) + latency) * paying
    retimed = dataclasses.replace(
        cost,
        compute_s=compute,
        memory_s=memory,
        interconnect_s=interconnect,
        overhead_s=phase_launch(cost, phase.kernel_launch_s),
    )
    fixed = phase.fixed_s(np.asarray(steps, float), np.asarray(batch, float))
    return with_step(retimed, fixed + request_s if request_s else fixed)


def phase_launch(cost: PassCost, launch_s: float | None) -> Array:
    """Per operator, the launch overhead of a pass costed at efficiency 1 when its phase
    has its own seconds per kernel ``launch_s``: ``launch_s x runs`` for every operator
    that takes time, `genz.costing.cost_pass`' rule; None: ``cost.overhead_s`` as is."""
    if launch_s is None:
        return cost.overhead_s
    busy = (cost.compute_s > 0) | (cost.memory_s > 0) | (cost.interconnect_s > 0)
    return np.asarray(np.where(busy, launch_s * cost.layers, 0.0), float)


def cost_phase(
    resolved: ResolvedProfile,
    phase_name: str,
    ops: PassOps,
    steps: Array | float,
    batch: Array | float,
) -> PassCost:
    """One pass of ``phase_name`` (``ops`` built with the resolved bits and routing),
    costed on ``resolved.platform`` and at the phase's terms (`apply_phase`)."""
    return apply_phase(resolved, phase_name, ops, cost_pass(ops, resolved.platform), steps, batch)


def cost_passes(
    resolved: ResolvedProfile,
    prefill: PassOps,
    decode: PassOps,
    chunks: Array | float,
    batch: Array | float,
) -> tuple[PassCost, PassCost]:
    """Both passes of a request: costed together on ``resolved.platform`` (prefill
    operators once per chunk), split, and each at its phase's terms (`apply_phase`:
    ``chunks`` prefill steps and the request's fixed cost, one decode step)."""
    both = cost_pass(prefill + decode, resolved.platform)
    split, count = len(prefill.ops), len(both.names)
    if not (isinstance(chunks, float) and chunks == 1.0):  # (times 1.0 changes nothing)
        both = both.repeated(stack_broadcast([chunks] * split + [1.0] * (count - split))[0])
    return (
        apply_phase(
            resolved,
            "prefill",
            prefill,
            both.rows(0, split),
            chunks,
            batch,
            resolved.request_overhead_s,
        ),
        apply_phase(resolved, "decode", decode, both.rows(split, count), 1.0, batch),
    )
