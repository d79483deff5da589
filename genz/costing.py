"""Cost the operators of a pass on a platform: roofline for compute and memory,
alpha-beta for collectives, a fixed overhead per launched operator."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from roofline import (
    Bound,
    Platform,
    all_reduce_time,
    all_to_all_time,
    link_parameters,
    peak_for_bits,
)

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


@dataclass(frozen=True)
class PassTimes:
    """The `OpTimes` of a pass stacked along a leading operator axis, seconds.

    Built by `stack_times`; every array has shape ``(operators, *scenarios)``. Its
    ``time_s`` and ``bound_index`` are those of `OpTimes`, for all operators at once.
    """

    compute_s: Array
    memory_s: Array
    interconnect_s: Array
    overhead_s: Array
    collective: NDArray[np.bool_]

    @cached_property
    def time_s(self) -> Array:
        """max(compute, memory) + interconnect + overhead, per operator (all its layers)."""
        return np.maximum(self.compute_s, self.memory_s) + self.interconnect_s + self.overhead_s

    @cached_property
    def bound_index(self) -> Array:
        """Index into `BOUND_ORDER` of each operator's largest term (collectives: interconnect)."""
        largest = np.argmax(
            np.stack((self.compute_s, self.memory_s, self.interconnect_s, self.overhead_s)), axis=0
        )
        collective = self.collective.reshape((-1,) + (1,) * (largest.ndim - 1))
        return np.where(collective, BOUND_ORDER.index(Bound.INTERCONNECT), largest)

    def total_s(self) -> Array:
        """Sum of operator times per scenario, seconds."""
        return np.sum(self.time_s, axis=0)

    def phase_bound(self) -> Array:
        """Index into `BOUND_ORDER` of the resource whose bound operators take the most time."""
        shares = [
            np.sum(np.where(self.bound_index == index, self.time_s, 0.0), axis=0)
            for index in range(len(BOUND_ORDER))
        ]
        return np.argmax(np.stack(shares), axis=0)


def stack_times(timed: list[OpTimes]) -> PassTimes:
    """Broadcast the operators' time terms to one shape and stack them."""
    compute, memory, interconnect, overhead = stack_broadcast(
        [t.compute_s for t in timed]
        + [t.memory_s for t in timed]
        + [t.interconnect_s for t in timed]
        + [t.overhead_s for t in timed],
        fields=4,
    )
    collective = np.array([t.op.collective is not None for t in timed], dtype=bool)
    return PassTimes(compute, memory, interconnect, overhead, collective)


def stack_broadcast(arrays: Sequence[Array | float], fields: int = 1) -> Array:
    """Broadcast ``arrays`` to their common shape and stack them, shape
    ``(fields, len(arrays) / fields, *common)`` (``arrays`` lists field by field)."""
    shape = np.broadcast_shapes(*{getattr(array, "shape", ()) for array in arrays})
    stacked = np.empty((len(arrays), *shape))
    for row, array in enumerate(arrays):
        stacked[row] = array
    return stacked.reshape(fields, len(arrays) // fields, *shape)


def collective_time(op: OpTerms, platform: Platform) -> Array:
    """Time of one instance of a collective operator, seconds."""
    assert op.message_bytes is not None and op.group_size is not None
    if not np.any(np.asarray(op.group_size) > 1):
        # One device: every collective below is exactly zero (no steps, no wire bytes).
        return np.zeros(np.broadcast(op.message_bytes, op.group_size).shape)
    if op.collective == "all_reduce":
        return all_reduce_time(platform, op.message_bytes, op.group_size)
    if op.collective == "all_to_all":
        return all_to_all_time(platform, op.message_bytes, op.group_size)
    hops = np.asarray(op.group_size, float) - 1
    bandwidth, latency = link_parameters(platform, 2)
    return hops * (op.message_bytes / bandwidth + latency)


def cost_ops(ops: list[OpTerms], platform: Platform) -> list[OpTimes]:
    """Time every operator of a pass (each times its layer count).

    Compute and memory operators are costed together on arrays stacked along a
    leading operator axis (one numpy call per step, not one per operator).
    """
    efficiency = platform.efficiency
    bandwidth = platform.main_memory.bandwidth_bytes_per_s * efficiency.memory
    overhead = platform.kernel_overhead_s
    timed: dict[int, OpTimes] = {}
    roofline = [index for index, op in enumerate(ops) if op.collective is None]
    if roofline:
        flop, moved, bits, layers = stack_broadcast(
            [ops[index].flop for index in roofline]
            + [ops[index].bytes for index in roofline]
            + [ops[index].compute_bits for index in roofline]
            + [ops[index].layers for index in roofline],
            fields=4,
        )
        compute = flop / (peak_for_bits(platform, bits) * efficiency.compute) * layers
        memory = moved / bandwidth * layers
        launched = np.where((compute > 0) | (memory > 0), overhead * layers, 0.0)
        zero = np.zeros(flop.shape[1:])
        for row, index in enumerate(roofline):
            timed[index] = OpTimes(ops[index], compute[row], memory[row], zero, launched[row])
    for index, op in enumerate(ops):
        if op.collective is None:
            continue
        zero = np.zeros(np.broadcast(op.flop, op.bytes).shape)
        comm = np.asarray(collective_time(op, platform), float) * op.layers
        timed[index] = OpTimes(op, zero, zero, comm, np.where(comm > 0, overhead * op.layers, 0.0))
    return [timed[index] for index in range(len(ops))]


def total_time(timed: list[OpTimes]) -> Array:
    """Sum of operator times, seconds."""
    return stack_times(timed).total_s()


def phase_bound(timed: list[OpTimes]) -> Array:
    """Index into `BOUND_ORDER` of the resource whose bound operators take the most time."""
    return stack_times(timed).phase_bound()
