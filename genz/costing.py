"""Cost the operators of a pass on a platform: roofline for compute and memory,
alpha-beta for collectives, a fixed overhead per launched operator."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline import Bound, Platform, all_reduce_time, all_to_all_time, peak_for_bits
from roofline.collectives import link_parameters

from .graph import Array, OpTerms

BOUND_ORDER = (Bound.COMPUTE, Bound.MEMORY_BANDWIDTH, Bound.INTERCONNECT, Bound.OVERHEAD)


@dataclass(frozen=True)
class OpTimes:
    """Per-pass time of one operator (all its layers), seconds, split by resource."""

    op: OpTerms
    compute_s: Array
    memory_s: Array
    interconnect_s: Array
    overhead_s: Array

    @property
    def time_s(self) -> Array:
        """max(compute, memory) + interconnect + overhead, times the layer count."""
        return np.maximum(self.compute_s, self.memory_s) + self.interconnect_s + self.overhead_s

    @property
    def bound_index(self) -> Array:
        """Index into `BOUND_ORDER` of the largest term (collectives: interconnect)."""
        if self.op.collective is not None:
            return np.full(np.shape(self.interconnect_s), BOUND_ORDER.index(Bound.INTERCONNECT))
        stacked = np.stack(
            np.broadcast_arrays(self.compute_s, self.memory_s, self.interconnect_s, self.overhead_s)
        )
        return np.argmax(stacked, axis=0)


def collective_time(op: OpTerms, platform: Platform) -> Array:
    """Time of one instance of a collective operator, seconds."""
    assert op.message_bytes is not None and op.group_size is not None
    if op.collective == "all_reduce":
        return all_reduce_time(platform, op.message_bytes, op.group_size)
    if op.collective == "all_to_all":
        return all_to_all_time(platform, op.message_bytes, op.group_size)
    hops = np.asarray(op.group_size, float) - 1
    if not np.any(hops > 0):
        return np.zeros_like(np.asarray(op.message_bytes, float))
    bandwidth, latency = link_parameters(platform, 2)
    return hops * (op.message_bytes / bandwidth + latency)


def cost_ops(ops: list[OpTerms], platform: Platform) -> list[OpTimes]:
    """Time every operator of a pass (each times its layer count)."""
    efficiency = platform.efficiency
    bandwidth = platform.main_memory.bandwidth_bytes_per_s * efficiency.memory
    overhead = platform.kernel_overhead_s
    timed = []
    for op in ops:
        zero = np.zeros(np.broadcast(op.flop, op.bytes).shape)
        if op.collective is not None:
            comm = np.asarray(collective_time(op, platform), float) * op.layers
            timed.append(
                OpTimes(op, zero, zero, comm, np.where(comm > 0, overhead * op.layers, 0.0))
            )
            continue
        peak = peak_for_bits(platform, op.compute_bits) * efficiency.compute
        compute = np.asarray(op.flop, float) / peak * op.layers
        memory = np.asarray(op.bytes, float) / bandwidth * op.layers
        launched = np.where(
            (compute > 0) | (memory > 0), overhead * np.asarray(op.layers, float), 0.0
        )
        timed.append(OpTimes(op, compute, memory, zero, launched))
    return timed


def total_time(timed: list[OpTimes]) -> Array:
    """Sum of operator times, seconds."""
    return np.sum(np.broadcast_arrays(*(t.time_s for t in timed)), axis=0)


def phase_bound(timed: list[OpTimes]) -> Array:
    """Index into `BOUND_ORDER` of the resource whose bound operators take the most time."""
    shares = []
    for index in range(len(BOUND_ORDER)):
        shares.append(
            np.sum(
                np.broadcast_arrays(
                    *(np.where(t.bound_index == index, t.time_s, 0.0) for t in timed)
                ),
                axis=0,
            )
        )
    return np.argmax(np.stack(shares), axis=0)
