"""Capacity Footprint (CF): bytes that must be resident, against memory capacity.

``CF = weights + KV cache + activations + workspace``. CF above capacity is the
capacity wall: the configuration is infeasible without more devices, fewer bits
or offload, however fast the memory is.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import require_non_negative, require_positive


@dataclass(frozen=True)
class CapacityFootprint:
    """Resident bytes per device, by category."""

    weights_bytes: float
    kv_cache_bytes: float = 0.0
    activation_bytes: float = 0.0
    workspace_bytes: float = 0.0

    def __post_init__(self) -> None:
        for label in ("weights_bytes", "kv_cache_bytes", "activation_bytes", "workspace_bytes"):
            require_non_negative(label, getattr(self, label))

    @property
    def total_bytes(self) -> float:
        """Sum of all categories, bytes."""
        return (
            self.weights_bytes + self.kv_cache_bytes + self.activation_bytes + self.workspace_bytes
        )


@dataclass(frozen=True)
class CapacityVerdict:
    """CF versus capacity: headroom (bytes, negative past the wall) and utilisation."""

    footprint_bytes: float
    capacity_bytes: float

    @property
    def headroom_bytes(self) -> float:
        """Capacity minus footprint, bytes (negative means it does not fit)."""
        return self.capacity_bytes - self.footprint_bytes

    @property
    def utilization(self) -> float:
        """Footprint / capacity (above 1 past the capacity wall)."""
        return self.footprint_bytes / self.capacity_bytes

    @property
    def fits(self) -> bool:
        """True when the footprint is within capacity."""
        return self.footprint_bytes <= self.capacity_bytes

    def to_dict(self) -> dict[str, object]:
        """Plain values for tables and JSON."""
        return {
            "footprint_bytes": self.footprint_bytes,
            "capacity_bytes": self.capacity_bytes,
            "headroom_bytes": self.headroom_bytes,
            "utilization": self.utilization,
            "fits": self.fits,
        }


def check_capacity(footprint: CapacityFootprint | float, capacity_bytes: float) -> CapacityVerdict:
    """Compare a footprint (object or total bytes) with a capacity in bytes."""
    total = footprint.total_bytes if isinstance(footprint, CapacityFootprint) else footprint
    require_non_negative("footprint_bytes", total)
    require_positive("capacity_bytes", capacity_bytes)
    return CapacityVerdict(float(total), float(capacity_bytes))
