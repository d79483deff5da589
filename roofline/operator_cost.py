"""Roofline costing: ``t = max(FLOP / (peak * eff_c), bytes / (bw * eff_m)) + overhead``.

The formulas live here once, vectorised over broadcastable numpy arrays (scalars in,
numpy scalars out): `compute_time_s` and `memory_time_s` are the two roofline terms,
`operator_time_s` combines them (plus interconnect and a fixed overhead, which do
not overlap with them), `bound_codes` names the largest term as an index into
`BOUND_ORDER`. `roofline_time`, `classify_bound` and `cost` (one `Operator` on one
`Platform`) are built on them, and so is genz's costing of whole passes and grids.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .operator import Operator
from .platform import Platform


class Bound(Enum):
    """The resource that sets an operator's or phase's time."""

    COMPUTE = "compute"
    MEMORY_BANDWIDTH = "memory"
    INTERCONNECT = "interconnect"
    OVERHEAD = "overhead"
    CAPACITY = "capacity"


#: The order integer bound codes index (`bound_codes`, genz's grids): the enum's order.
BOUND_ORDER: tuple[Bound, ...] = tuple(Bound)
#: The bounds a time term can set, in `BOUND_ORDER` positions 0-3 (capacity is a verdict).
TIME_BOUNDS = (Bound.COMPUTE, Bound.MEMORY_BANDWIDTH, Bound.INTERCONNECT, Bound.OVERHEAD)


def compute_time_s(
    flop: ArrayLike, peak_flops_per_s: ArrayLike, compute_efficiency: ArrayLike = 1.0
) -> NDArray[np.float64]:
    """Compute term of the roofline, ``FLOP / (peak * eff_c)``, seconds."""
    return np.divide(flop, np.multiply(peak_flops_per_s, compute_efficiency, dtype=float))


def memory_time_s(
    bytes_moved: ArrayLike, bandwidth_bytes_per_s: ArrayLike, memory_efficiency: ArrayLike = 1.0
) -> NDArray[np.float64]:
    """Memory term of the roofline, ``bytes / (bw * eff_m)``, seconds."""
    return np.divide(
        bytes_moved, np.multiply(bandwidth_bytes_per_s, memory_efficiency, dtype=float)
    )


def operator_time_s(
    compute_s: ArrayLike,
    memory_s: ArrayLike,
    overhead_s: ArrayLike = 0.0,
    interconnect_s: ArrayLike = 0.0,
) -> NDArray[np.float64]:
    """``max(compute, memory) + interconnect + overhead``, seconds: compute and memory
    traffic overlap; collectives and the fixed launch overhead add to them."""
    return np.add(np.add(np.maximum(compute_s, memory_s), interconnect_s), overhead_s)


def bound_codes(
    compute_s: ArrayLike,
    memory_s: ArrayLike,
    overhead_s: ArrayLike = 0.0,
    interconnect_s: ArrayLike = 0.0,
) -> NDArray[np.intp]:
    """Index into `BOUND_ORDER` of the largest time term, elementwise (ties go to the
    earlier of compute, memory, interconnect, overhead)."""
    # A running maximum over the terms in order: a later term wins only when strictly
    # larger (a few elementwise passes; argmax over a stacked axis is several times slower).
    code: NDArray[np.intp] = np.zeros(
        np.broadcast(compute_s, memory_s, overhead_s, interconnect_s).shape, np.intp
    )
    largest = compute_s
    for index, term in enumerate((memory_s, interconnect_s, overhead_s), start=1):
        code = np.where(np.greater(term, largest), index, code)
        largest = np.maximum(largest, term)
    return code


def roofline_time(
    flop: ArrayLike,
    bytes_moved: ArrayLike,
    peak_flops_per_s: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    compute_efficiency: ArrayLike = 1.0,
    memory_efficiency: ArrayLike = 1.0,
    overhead_s: ArrayLike = 0.0,
) -> NDArray[np.float64]:
    """Roofline time in seconds, elementwise over broadcastable arrays."""
    return np.asarray(
        operator_time_s(
            compute_time_s(np.asarray(flop, float), peak_flops_per_s, compute_efficiency),
            memory_time_s(np.asarray(bytes_moved, float), bandwidth_bytes_per_s, memory_efficiency),
            overhead_s,
        ),
        float,
    )


@dataclass(frozen=True)
class OpCost:
    """Time of one operator on one platform and what bounds it (seconds, FLOP/s)."""

    name: str
    flop: float
    bytes_main: float
    compute_time_s: float
    memory_time_s: float
    overhead_s: float
    time_s: float
    bound: Bound

    @property
    def operational_intensity(self) -> float:
        """FLOP per main-memory byte."""
        return self.flop / self.bytes_main if self.bytes_main > 0 else float("inf")

    @property
    def attainable_flops_per_s(self) -> float:
        """FLOP / time: the rate the operator actually reaches, FLOP/s."""
        return self.flop / self.time_s if self.time_s > 0 else 0.0

    def to_dict(self) -> dict[str, object]:
        """Plain values for tables and JSON."""
        return {
            "name": self.name,
            "flop": self.flop,
            "bytes_main": self.bytes_main,
            "operational_intensity_flop_per_byte": self.operational_intensity,
            "compute_time_s": self.compute_time_s,
            "memory_time_s": self.memory_time_s,
            "overhead_s": self.overhead_s,
            "time_s": self.time_s,
            "attainable_flops_per_s": self.attainable_flops_per_s,
            "bound": self.bound.value,
        }


def classify_bound(compute_s: float, memory_s: float, overhead_s: float = 0.0) -> Bound:
    """The largest of the three time terms names the bound (ties go to compute)."""
    return BOUND_ORDER[int(bound_codes(compute_s, memory_s, overhead_s))]


def cost(op: Operator, platform: Platform) -> OpCost:
    """Cost ``op`` on ``platform`` (hierarchical roofline over every memory level touched)."""
    efficiency = platform.efficiency
    compute_s = float(compute_time_s(op.flop, platform.peak(op.dtype), efficiency.compute))
    main = platform.main_memory
    memory_s = float(memory_time_s(op.bytes_main, main.bandwidth_bytes_per_s, efficiency.memory))
    for level_name, moved in op.bytes_other_levels.items():
        level = platform.memory_level(level_name)
        level_s = memory_time_s(moved, level.bandwidth_bytes_per_s, efficiency.memory)
        memory_s = max(memory_s, float(level_s))
    overhead_s = platform.kernel_overhead_s
    return OpCost(
        name=op.name,
        flop=op.flop,
        bytes_main=op.bytes_main,
        compute_time_s=compute_s,
        memory_time_s=memory_s,
        overhead_s=overhead_s,
        time_s=float(operator_time_s(compute_s, memory_s, overhead_s)),
        bound=classify_bound(compute_s, memory_s, overhead_s),
    )


def attainable_flops_per_s(
    operational_intensity: ArrayLike, platform: Platform, dtype: str, efficient: bool = False
) -> NDArray[np.float64]:
    """The roofline itself: ``min(peak, OI * bw)`` in FLOP/s (optionally derated)."""
    peak = platform.peak(dtype)
    bandwidth = platform.main_memory.bandwidth_bytes_per_s
    if efficient:
        peak *= platform.efficiency.compute
        bandwidth *= platform.efficiency.memory
    return np.minimum(peak, np.asarray(operational_intensity, float) * bandwidth)
