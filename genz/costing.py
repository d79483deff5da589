"""Cost the operators of a pass on a platform: roofline's compute and memory terms,
alpha-beta for collectives, a fixed overhead per launched operator.

The roofline formulas themselves (`roofline.compute_time_s`, `roofline.memory_time_s`,
`roofline.operator_time_s`, `roofline.bound_codes`) are applied here to every operator
of a pass at once, on arrays stacked along a leading operator axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from roofline import (
    BOUND_ORDER,
    TIME_BOUNDS,
    Bound,
    OperatorKind,
    Platform,
    all_reduce_time,
    all_to_all_time,
    bound_codes,
    compute_time_s,
    link_parameters,
    memory_time_s,
    operator_time_s,
    peak_for_bits,
)

from .op_terms import Array, OpTerms, PassOps

INTERCONNECT_CODE = BOUND_ORDER.index(Bound.INTERCONNECT)
TIME_BOUND_CODES = np.array([BOUND_ORDER.index(bound) for bound in TIME_BOUNDS])


@dataclass(frozen=True)
class PassCost:
    """Every operator of one forward pass, per device, stacked along a leading operator axis.

    Arrays have shape ``(operators, *scenarios)``. ``layers`` is how many times the
    pass runs each operator (its layers; prefill: times the chunks); ``flop_per_run``
    and ``bytes_per_run`` are the FLOP and main-memory bytes of one run; the four time
    terms (seconds) cover every run. The names, kinds, weight groups and blocks
    (`genz.op_terms.BLOCKS`) describe the operators in row order.
    """

    names: tuple[str, ...]
    kinds: tuple[OperatorKind, ...]
    groups: tuple[str, ...]
    blocks: tuple[str, ...]
    collective: NDArray[np.bool_]
    layers: Array
    flop_per_run: Array
    bytes_per_run: Array
    compute_s: Array
    memory_s: Array
    interconnect_s: Array
    overhead_s: Array

    @cached_property
    def time_s(self) -> Array:
        """`roofline.operator_time_s` of every operator (all its runs), seconds."""
        return operator_time_s(self.compute_s, self.memory_s, self.overhead_s, self.interconnect_s)

    @cached_property
    def bound_code(self) -> NDArray[np.intp]:
        """Index into `roofline.BOUND_ORDER` of each operator's largest time term
        (collectives: interconnect, whatever their launch overhead)."""
        largest = bound_codes(self.compute_s, self.memory_s, self.overhead_s, self.interconnect_s)
        collective = self.collective.reshape((-1,) + (1,) * (largest.ndim - 1))
        return np.where(collective, INTERCONNECT_CODE, largest)

    @property
    def flop(self) -> Array:
        """FLOP of every operator over all its runs."""
        return self.flop_per_run * self.layers

    @property
    def bytes(self) -> Array:
        """Main-memory bytes of every operator over all its runs."""
        return self.bytes_per_run * self.layers

    def first_scenario(self, values: NDArray[Any]) -> list[float]:
        """The operator rows of ``values`` (shape ``(operators, ...)``) at the first
        scenario, as Python numbers."""
        column = values if values.ndim == 1 else values.reshape(len(values), -1)[:, 0]
        return column.tolist()  # type: ignore[no-any-return]

    def total_s(self) -> Array:
        """Time of the pass per scenario (sum over operators), seconds."""
        return np.sum(self.time_s, axis=0)

    def total_flop(self) -> Array:
        """FLOP of the pass per scenario."""
        return np.sum(self.flop, axis=0)

    def total_bytes(self) -> Array:
        """Main-memory bytes of the pass per scenario."""
        return np.sum(self.bytes, axis=0)

    def phase_bound(self) -> Array:
        """Index into `roofline.BOUND_ORDER` of the resource whose bound operators take
        the most time, per scenario (ties go to the earlier of `roofline.TIME_BOUNDS`)."""
        codes = TIME_BOUND_CODES.reshape((-1,) + (1,) * self.bound_code.ndim)
        shares = np.sum(np.where(self.bound_code == codes, self.time_s, 0.0), axis=1)
        return np.argmax(shares, axis=0)

    def by_group(self, values: Array, kind: OperatorKind | None = None) -> dict[str, Array]:
        """Rows of ``values`` (shape ``(operators, ...)``, e.g. ``time_s``) summed per weight
        group in operator order, optionally over operators of one ``kind`` only."""
        totals: dict[str, Array] = {}
        for row, group in enumerate(self.groups):
            if kind is not None and self.kinds[row] is not kind:
                continue
            totals[group] = totals[group] + values[row] if group in totals else values[row]
        return totals

    def repeated(self, count: Array | float) -> PassCost:
        """The same operators, each run ``count`` times as often (broadcast against the
        rows: prefill operators once per chunk)."""
        return PassCost(
            self.names,
            self.kinds,
            self.groups,
            self.blocks,
            self.collective,
            self.layers * count,
            self.flop_per_run,
            self.bytes_per_run,
            self.compute_s * count,
            self.memory_s * count,
            self.interconnect_s * count,
            self.overhead_s * count,
        )

    def rows(self, start: int, stop: int) -> PassCost:
        """Operators ``start`` to ``stop - 1`` (two passes costed together, split); every
        operator's time and bound are derived once, on all rows, and sliced."""
        part = slice(start, stop)
        sliced = PassCost(
            self.names[part],
            self.kinds[part],
            self.groups[part],
            self.blocks[part],
            self.collective[part],
            self.layers[part],
            self.flop_per_run[part],
            self.bytes_per_run[part],
            self.compute_s[part],
            self.memory_s[part],
            self.interconnect_s[part],
            self.overhead_s[part],
        )
        sliced.__dict__["time_s"] = self.time_s[part]  # seeds the cached properties
        sliced.__dict__["bound_code"] = self.bound_code[part]
        return sliced


def stack_broadcast(arrays: Sequence[Array | float], fields: int = 1) -> Array:
    """Broadcast ``arrays`` to their common shape and stack them, shape
    ``(fields, len(arrays) / fields, *common)`` (``arrays`` lists field by field)."""
    try:  # all of one shape (one scenario's floats, or full grids): one conversion
        same = np.array(arrays, float)
        return same.reshape(fields, len(arrays) // fields, *same.shape[1:])
    except ValueError:  # shapes differ: broadcast row by row
        shape = np.broadcast_shapes(*{np.shape(array) for array in arrays})
    stacked = np.empty((len(arrays), *shape))
    for row, array in enumerate(arrays):
        stacked[row] = array
    return stacked.reshape(fields, len(arrays) // fields, *shape)


def _point_to_point(platform: Platform, message_bytes: Array, group_size: Array) -> Array:
    """Pipeline hand-offs: ``group_size - 1`` sends of ``message_bytes`` each, seconds."""
    bandwidth, latency = link_parameters(platform, 2)
    return (np.asarray(group_size, float) - 1) * (message_bytes / bandwidth + latency)


#: Time of one instance of each kind of collective (`OpTerms.collective`), seconds.
COLLECTIVE_TIMES = {
    "all_reduce": all_reduce_time,
    "all_to_all": all_to_all_time,
    "p2p": _point_to_point,
}


def collective_times(ops: Sequence[OpTerms], platform: Platform) -> list[Array | float]:
    """Interconnect time of every operator over all its layers, seconds (0 for
    non-collectives); the collectives of one kind are timed in one call."""
    times: list[Array | float] = [0.0] * len(ops)
    by_kind: dict[str, list[int]] = {}
    for row, op in enumerate(ops):
        if op.collective is not None:
            by_kind.setdefault(op.collective, []).append(row)
    for kind, rows in by_kind.items():
        chosen = [ops[row] for row in rows]
        groups = [op.group_size for op in chosen if op.group_size is not None]
        messages = [op.message_bytes for op in chosen if op.message_bytes is not None]
        assert len(messages) == len(groups) == len(chosen), "a collective without its message"
        if all(isinstance(size, float) and size <= 1 for size in groups):
            continue  # one scenario on one device: no steps, no wire bytes
        group = stack_broadcast(groups)[0]
        if not np.any(group > 1):
            continue  # one device in every scenario
        message, layers = stack_broadcast(messages + [op.layers for op in chosen], fields=2)
        for row, time in zip(
            rows, COLLECTIVE_TIMES[kind](platform, message, group) * layers, strict=True
        ):
            times[row] = time
    return times


def cost_pass(graph: PassOps, platform: Platform) -> PassCost:
    """Time every operator of a pass (each times its layer count), all at once.

    Compute and memory terms are the roofline's; collectives take the interconnect
    model's time; every operator that takes any time pays the platform's kernel
    overhead once per run.
    """
    ops, efficiency = graph.ops, platform.efficiency
    layers, flop, moved, bits, interconnect_s = stack_broadcast(
        [op.layers for op in ops]
        + [op.flop for op in ops]
        + [op.bytes for op in ops]
        + [op.compute_bits for op in ops]
        + collective_times(ops, platform),
        fields=5,
    )
    peak = peak_for_bits(platform, bits)
    compute = compute_time_s(flop, peak, efficiency.compute) * layers
    bandwidth = platform.main_memory.bandwidth_bytes_per_s
    memory = memory_time_s(moved, bandwidth, efficiency.memory) * layers
    busy = (compute > 0) | (memory > 0) | (interconnect_s > 0)
    overhead = np.where(busy, platform.kernel_overhead_s * layers, 0.0)
    return PassCost(
        names=tuple(op.name for op in ops),
        kinds=tuple(op.kind for op in ops),
        groups=tuple(op.group for op in ops),
        blocks=graph.blocks,
        collective=np.array([op.collective is not None for op in ops], dtype=bool),
        layers=layers,
        flop_per_run=flop,
        bytes_per_run=moved,
        compute_s=compute,
        memory_s=memory,
        interconnect_s=interconnect_s,
        overhead_s=overhead,
    )
