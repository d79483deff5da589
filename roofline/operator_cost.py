"""Roofline costing: ``t = max(FLOP / (peak * eff_c), bytes / (bw * eff_m)) + overhead``.

`roofline_time` is the vectorised numpy core used by the search; `cost` wraps it
for one `Operator` on one `Platform` and says what bounds it.
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
    compute_s = np.asarray(flop, float) / (
        np.asarray(peak_flops_per_s, float) * np.asarray(compute_efficiency, float)
    )
    memory_s = np.asarray(bytes_moved, float) / (
        np.asarray(bandwidth_bytes_per_s, float) * np.asarray(memory_efficiency, float)
    )
    return np.asarray(np.maximum(compute_s, memory_s) + np.asarray(overhead_s, float), float)


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
    if overhead_s > max(compute_s, memory_s):
        return Bound.OVERHEAD
    return Bound.COMPUTE if compute_s >= memory_s else Bound.MEMORY_BANDWIDTH


def cost(op: Operator, platform: Platform) -> OpCost:
    """Cost ``op`` on ``platform`` (hierarchical roofline over every memory level touched)."""
    efficiency = platform.efficiency
    compute_s = op.flop / (platform.peak(op.dtype) * efficiency.compute)
    main = platform.main_memory
    memory_s = op.bytes_main / (main.bandwidth_bytes_per_s * efficiency.memory)
    for level_name, moved in op.bytes_other_levels.items():
        level = platform.memory_level(level_name)
        memory_s = max(memory_s, moved / (level.bandwidth_bytes_per_s * efficiency.memory))
    overhead_s = platform.kernel_overhead_s
    return OpCost(
        name=op.name,
        flop=op.flop,
        bytes_main=op.bytes_main,
        compute_time_s=compute_s,
        memory_time_s=memory_s,
        overhead_s=overhead_s,
        time_s=max(compute_s, memory_s) + overhead_s,
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
