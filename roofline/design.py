"""Parametric accelerators: describe a device that need not exist.

An `AcceleratorDesign` names compute (dense peak per dtype, or units x clock x FLOP per
unit per cycle), on-chip SRAM, a memory system by technology and unit count (HBM stacks,
GDDR / LPDDR / DDR 32-bit channels), scale-up and host links and a process node.
`roofline.design_platform` turns it into the `Platform` the rest of the project uses,
with the die area, TDP and device cost of `roofline.design_cost`.

Units: TFLOP/s (1e12), GHz, decimal MB / GB / GB/s in the fields, as a user writes
them; the `Platform` is SI. Bad values raise `InputError` naming the field and its unit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .design_data import link_technology, memory_technology, process_node
from .dtypes import dtype_bits
from .errors import InputError, require_non_negative, require_positive
from .platform import Efficiency, Interconnect

#: Dtypes whose peak sizes the tensor units (one of them must be given).
TENSOR_16BIT = ("bf16", "fp16")


@dataclass(frozen=True)
class MemorySpec:
    """Main memory: ``units`` of ``technology`` (HBM stacks or 32-bit channels).

    ``capacity_gb_per_unit`` defaults to the largest the technology is sold in;
    ``gbps_per_pin`` to its top data rate; ``bandwidth_gb_per_s`` (total, decimal) may
    set a lower achieved interface rate, never more than the units can carry.
    """

    technology: str
    units: int
    capacity_gb_per_unit: float | None = None
    gbps_per_pin: float | None = None
    bandwidth_gb_per_s: float | None = None

    def __post_init__(self) -> None:
        tech = memory_technology(self.technology)
        if isinstance(self.units, bool) or not isinstance(self.units, int) or self.units < 1:
            raise InputError(
                f"memory.units ({tech.name} stacks or channels) must be an integer >= 1, "
                f"got {self.units!r}"
            )
        if self.units > tech.max_units:
            raise InputError(
                f"memory.units must be <= {tech.max_units} for {tech.name} (units per "
                f"package), got {self.units}"
            )
        if self.capacity_gb_per_unit is not None:
            require_positive("memory.capacity_gb_per_unit (GB)", self.capacity_gb_per_unit)
        if self.gbps_per_pin is not None:
            rate = require_positive("memory.gbps_per_pin (Gb/s)", self.gbps_per_pin)
            if rate > tech.max_gbps_per_pin:
                raise InputError(
                    f"memory.gbps_per_pin (Gb/s) must be <= {tech.max_gbps_per_pin:g} for "
                    f"{tech.name}, got {rate:g}"
                )
        if self.bandwidth_gb_per_s is not None:
            bandwidth = require_positive(
                "memory.bandwidth_gb_per_s (GB/s)", self.bandwidth_gb_per_s
            )
            ceiling = self.units * tech.unit_bits * self.pin_rate_gbps / 8
            if bandwidth > ceiling * (1 + 1e-9):
                raise InputError(
                    f"memory.bandwidth_gb_per_s (GB/s) must be <= {ceiling:g} for {self.units} "
                    f"{tech.name} unit(s) at {self.pin_rate_gbps:g} Gb/s per pin, got {bandwidth:g}"
                )

    @property
    def pin_rate_gbps(self) -> float:
        """Per-pin data rate, Gb/s."""
        tech = memory_technology(self.technology)
        return tech.max_gbps_per_pin if self.gbps_per_pin is None else float(self.gbps_per_pin)

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Total interface bandwidth, bytes/s."""
        if self.bandwidth_gb_per_s is not None:
            return float(self.bandwidth_gb_per_s) * 1e9
        tech = memory_technology(self.technology)
        return self.units * tech.unit_bits * self.pin_rate_gbps / 8 * 1e9

    @property
    def capacity_bytes(self) -> float:
        """Total capacity, bytes (decimal GB x 1e9)."""
        tech = memory_technology(self.technology)
        per_unit = (
            max(tech.capacity_gb)
            if self.capacity_gb_per_unit is None
            else self.capacity_gb_per_unit
        )
        return self.units * float(per_unit) * 1e9


def parse_memory(text: str) -> MemorySpec:
    """``'hbm3e:6'`` (technology:units) or ``'ddr5:16:64'`` (with GB per unit)."""
    parts = str(text).split(":")
    if len(parts) not in (2, 3) or not all(parts):
        raise InputError(
            f"--memory must be technology:units[:gb_per_unit] (e.g. hbm3e:6), got {text!r}"
        )
    try:
        units = int(parts[1])
        capacity = float(parts[2]) if len(parts) == 3 else None
    except ValueError:
        raise InputError(
            f"--memory units must be an integer and GB per unit a number, got {text!r}"
        ) from None
    return MemorySpec(parts[0], units, capacity_gb_per_unit=capacity)


@dataclass(frozen=True)
class AcceleratorDesign:
    """One hypothetical device.

    Parameters
    ----------
    compute_tflops
        Dense peak per dtype, TFLOP/s (1e12); must include ``bf16`` or ``fp16``, whose
        rate sizes the tensor units. `from_units` builds it from units x clock x FLOP per
        unit per cycle.
    memory
        The main memory (`MemorySpec`).
    sram_mb
        All on-die SRAM (last-level cache, L1 / shared memory, register files), MB
        (decimal, 1e6 bytes).
    node
        Process node name or alias (``n7``, ``n5``, ``n4``, ``n3``...; `roofline.design_data`).
    clock_ghz
        Clock of the tensor units, GHz: area follows FLOP per cycle (peak / clock).
    vector_tflops_fp32
        FP32 vector (non-tensor) peak, TFLOP/s; default the 16-bit tensor peak / 16.
    links
        Link technology -> units (``{'nvlink4': 18, 'pcie5': 16}``); the sum of the
        non-PCIe links is the scale-up bandwidth (PCIe when there is no other link).
    dies
        Compute dies in the package (area is split evenly; each must fit the reticle).
    graphics
        True for a GPU with a graphics pipeline (rasteriser, texture units, ray tracing):
        adds the area and power that scale with its vector lanes. False for an
        accelerator (the default).
    """

    compute_tflops: Mapping[str, float]
    memory: MemorySpec
    sram_mb: float = 50.0
    node: str = "n5"
    clock_ghz: float = 1.8
    vector_tflops_fp32: float | None = None
    links: Mapping[str, int] = field(default_factory=lambda: {"pcie5": 16})
    dies: int = 1
    graphics: bool = False
    devices_per_node: int = 8
    link_latency_s: float = 2e-6
    interconnect: Interconnect | None = None
    efficiency: Efficiency = field(default_factory=Efficiency)
    kernel_overhead_s: float = 2e-6
    name: str = "design"
    kind: str = "accelerator"
    vendor: str = ""

    def __post_init__(self) -> None:
        if not self.compute_tflops:
            raise InputError("compute_tflops (TFLOP/s) needs at least one dtype, e.g. bf16")
        for dtype, peak in self.compute_tflops.items():
            dtype_bits(dtype)
            require_positive(f"compute_tflops[{dtype}] (TFLOP/s)", peak)
        if not any(dtype in self.compute_tflops for dtype in TENSOR_16BIT):
            raise InputError(
                "compute_tflops (TFLOP/s) must include bf16 or fp16 (it sizes the tensor units)"
            )
        if not isinstance(self.memory, MemorySpec):
            raise InputError("memory must be a MemorySpec (technology and units)")
        require_non_negative("sram_mb (MB)", self.sram_mb)
        process_node(self.node)
        require_positive("clock_ghz (GHz)", self.clock_ghz)
        if self.vector_tflops_fp32 is not None:
            require_non_negative("vector_tflops_fp32 (TFLOP/s)", self.vector_tflops_fp32)
        for link, count in self.links.items():
            link_technology(link)
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise InputError(
                    f"links[{link}] (links or lanes) must be an integer >= 0, got {count!r}"
                )
        if isinstance(self.dies, bool) or not isinstance(self.dies, int) or self.dies < 1:
            raise InputError(
                f"dies (compute dies per package) must be an integer >= 1, got {self.dies!r}"
            )
        if not isinstance(self.graphics, bool):
            raise InputError(f"graphics must be true or false, got {self.graphics!r}")
        require_non_negative("link_latency_s (s)", self.link_latency_s)
        require_non_negative("kernel_overhead_s (s)", self.kernel_overhead_s)
        if not self.name:
            raise InputError("name must be a non-empty string")

    @classmethod
    def from_units(
        cls,
        units: int,
        clock_ghz: float,
        flop_per_cycle_per_unit: Mapping[str, float],
        memory: MemorySpec,
        **fields: object,
    ) -> AcceleratorDesign:
        """Compute as ``units x clock x FLOP per unit per cycle`` for each dtype
        (``from_units(132, 1.98, {'bf16': 3786}, ...)`` is about an H100's 989 TFLOP/s)."""
        if isinstance(units, bool) or not isinstance(units, int) or units < 1:
            raise InputError(f"units (compute units) must be an integer >= 1, got {units!r}")
        require_positive("clock_ghz (GHz)", clock_ghz)
        peaks = {
            dtype: units
            * clock_ghz
            * 1e9
            * require_positive(f"flop_per_cycle_per_unit[{dtype}] (FLOP/cycle)", per_cycle)
            / 1e12
            for dtype, per_cycle in flop_per_cycle_per_unit.items()
        }
        return cls(compute_tflops=peaks, memory=memory, clock_ghz=clock_ghz, **fields)  # type: ignore[arg-type]

    @property
    def tensor_tflops(self) -> float:
        """The 16-bit dense tensor peak, TFLOP/s (bf16, else fp16)."""
        for dtype in TENSOR_16BIT:
            if dtype in self.compute_tflops:
                return float(self.compute_tflops[dtype])
        raise AssertionError("checked in __post_init__")

    @property
    def vector_tflops(self) -> float:
        """FP32 vector peak, TFLOP/s."""
        if self.vector_tflops_fp32 is not None:
            return float(self.vector_tflops_fp32)
        return self.tensor_tflops / 16

    def link_bandwidth_bytes_per_s(self) -> float:
        """Scale-up bandwidth per direction, bytes/s: non-PCIe links, else PCIe."""
        scale_up = sum(
            link_technology(link).gb_per_s_per_unit * count * 1e9
            for link, count in self.links.items()
            if not link_technology(link).name.startswith("pcie")
        )
        return scale_up or self.pcie_bandwidth_bytes_per_s()

    def pcie_bandwidth_bytes_per_s(self) -> float:
        """PCIe bandwidth per direction, bytes/s: the host and network (NIC) path, so the
        scale-out bandwidth of the design's `Platform` (0 without PCIe lanes)."""
        return sum(
            link_technology(link).gb_per_s_per_unit * count * 1e9
            for link, count in self.links.items()
            if link_technology(link).name.startswith("pcie")
        )
