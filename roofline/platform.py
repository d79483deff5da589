"""Parameterised hardware platforms (one device) and derived what-if variants.

All fields are SI: FLOP/s, bytes/s, bytes, seconds, watts, US dollars.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .dtypes import DTYPE_BITS, dtype_bits
from .errors import InputError, require_fraction, require_non_negative, require_positive

#: Dtypes never chosen automatically for an operand width (TF32 is not FP32 arithmetic).
EXPLICIT_ONLY_DTYPES = frozenset({"tf32"})


@dataclass(frozen=True)
class MemoryLevel:
    """One level of the memory hierarchy (HBM, LPDDR, unified DRAM, on-chip SRAM)."""

    name: str
    bandwidth_bytes_per_s: float
    capacity_bytes: float

    def __post_init__(self) -> None:
        require_positive(f"memory[{self.name}].bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)
        require_positive(f"memory[{self.name}].capacity_bytes", self.capacity_bytes)


@dataclass(frozen=True)
class HostMemory:
    """Host (CPU) memory reachable from the device over a link (PCIe, NVLink-C2C): where
    offloaded weights and KV cache live, streamed to the device every pass."""

    name: str
    capacity_bytes: float
    link_bandwidth_bytes_per_s: float

    def __post_init__(self) -> None:
        require_positive(f"host[{self.name}].capacity_bytes", self.capacity_bytes)
        require_positive(
            f"host[{self.name}].link_bandwidth_bytes_per_s", self.link_bandwidth_bytes_per_s
        )


@dataclass(frozen=True)
class Interconnect:
    """Device-to-device links.

    ``link_bandwidth_bytes_per_s`` is the per-device, per-direction bandwidth of the
    scale-up fabric (NVLink, Infinity Fabric, PCIe); ``scaleout_*`` describe the
    network between nodes of ``devices_per_node`` devices. ``link_latency_s`` is paid
    once per ring hop; ``collective_latency_s`` once per collective call on two or more
    devices, whatever the group size (launch and synchronisation: the base latency of
    NCCL's own cost model, ``baseLat`` in its ``src/graph/tuning.cc``). Default 0.
    """

    link_bandwidth_bytes_per_s: float
    link_latency_s: float
    devices_per_node: int = 1
    scaleout_bandwidth_bytes_per_s: float | None = None
    scaleout_latency_s: float | None = None
    collective_latency_s: float = 0.0

    def __post_init__(self) -> None:
        require_positive("interconnect.link_bandwidth_bytes_per_s", self.link_bandwidth_bytes_per_s)
        require_non_negative("interconnect.link_latency_s", self.link_latency_s)
        require_non_negative("interconnect.collective_latency_s", self.collective_latency_s)
        if not isinstance(self.devices_per_node, int) or self.devices_per_node < 1:
            raise InputError(
                f"interconnect.devices_per_node must be an integer >= 1, got {self.devices_per_node!r}"
            )
        if self.scaleout_bandwidth_bytes_per_s is not None:
            require_positive(
                "interconnect.scaleout_bandwidth_bytes_per_s", self.scaleout_bandwidth_bytes_per_s
            )
        if self.scaleout_latency_s is not None:
            require_non_negative("interconnect.scaleout_latency_s", self.scaleout_latency_s)


@dataclass(frozen=True)
class Efficiency:
    """Achievable fraction of peak, one set per platform (never fitted per workload)."""

    compute: float = 0.7
    memory: float = 0.8
    interconnect: float = 0.8

    def __post_init__(self) -> None:
        require_fraction("efficiency.compute", self.compute)
        require_fraction("efficiency.memory", self.memory)
        require_fraction("efficiency.interconnect", self.interconnect)


@dataclass(frozen=True)
class PowerModel:
    """Activity power of one device: ``P = idle_w + j_per_flop x FLOP/s + j_per_byte x
    main-memory bytes/s``, capped at the board power (TDP) by `activity_power_w`.

    ``idle_w`` (W) is the draw of a powered, clocked device doing no work;
    ``j_per_flop`` (J/FLOP) and ``j_per_byte`` (J per main-memory byte) the marginal
    energy of arithmetic and of DRAM traffic (each including the on-chip movement
    that goes with it). ``source`` says where the three numbers come from.
    """

    idle_w: float
    j_per_flop: float
    j_per_byte: float
    source: str = ""

    def __post_init__(self) -> None:
        require_non_negative("power_model.idle_w", self.idle_w)
        require_non_negative("power_model.j_per_flop", self.j_per_flop)
        require_non_negative("power_model.j_per_byte", self.j_per_byte)


def activity_power_w(
    power: PowerModel, flop_per_s: float, bytes_per_s: float, tdp_w: float | None = None
) -> float:
    """Mean draw of one device achieving ``flop_per_s`` and ``bytes_per_s``, watts:
    ``min(tdp_w, idle_w + j_per_flop * flop_per_s + j_per_byte * bytes_per_s)``
    (no cap when ``tdp_w`` is None). Never below ``idle_w`` (rates are >= 0)."""
    require_non_negative("flop_per_s", flop_per_s)
    require_non_negative("bytes_per_s", bytes_per_s)
    watts = power.idle_w + power.j_per_flop * flop_per_s + power.j_per_byte * bytes_per_s
    return watts if tdp_w is None else min(tdp_w, watts)


@dataclass(frozen=True)
class Platform:
    """One device: compute peaks per dtype, memory levels, links, efficiencies, cost.

    Parameters
    ----------
    peak_flops_per_s
        Dense peak rate per dtype name (``'bf16'``, ``'int8'``...), FLOP/s (or OP/s).
    memory
        Memory levels; the one with the largest capacity is the main memory that
        holds weights and the KV cache.
    kernel_overhead_s
        Fixed time added to every operator (launch / dispatch), seconds.
    power_w, power_model
        Board power (TDP), watts, and optionally the `PowerModel` that says how much of
        it a workload draws; without one, energy is ``power_fraction x power_w``.
    host
        Host memory and the link to it (offload of weights or KV cache), if known.
    vendor
        Maker whose software stack drives the device (``nvidia``, ``amd``, ``intel``...);
        with ``kind`` it names the `device_class` runtime profiles key their overrides on.
    """

    name: str
    display_name: str
    peak_flops_per_s: Mapping[str, float]
    memory: tuple[MemoryLevel, ...]
    interconnect: Interconnect | None = None
    efficiency: Efficiency = field(default_factory=Efficiency)
    kernel_overhead_s: float = 0.0
    power_w: float | None = None
    power_model: PowerModel | None = None
    price_usd: float | None = None
    price_usd_per_hour: float | None = None
    kind: str = "gpu"
    vendor: str = ""
    source: str = ""
    host: HostMemory | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise InputError("name must be a non-empty string")
        if not self.peak_flops_per_s:
            raise InputError(f"{self.name}: peak_flops_per_s needs at least one dtype")
        for dtype, peak in self.peak_flops_per_s.items():
            dtype_bits(dtype)
            require_positive(f"{self.name}: peak_flops_per_s[{dtype}]", peak)
        if not self.memory:
            raise InputError(f"{self.name}: memory needs at least one level")
        require_non_negative("kernel_overhead_s", self.kernel_overhead_s)
        for label in ("power_w", "price_usd", "price_usd_per_hour"):
            value = getattr(self, label)
            if value is not None:
                require_positive(label, value)
        if (
            self.power_model is not None
            and self.power_w is not None
            and self.power_model.idle_w > self.power_w
        ):
            raise InputError(
                f"{self.name}: power_model.idle_w must be <= power_w ({self.power_w:g} W), "
                f"got {self.power_model.idle_w:g}"
            )

    @property
    def device_class(self) -> str:
        """``vendor-kind`` (``nvidia-gpu``, ``apple-soc``), or ``kind`` without a vendor."""
        return f"{self.vendor}-{self.kind}" if self.vendor else self.kind

    @property
    def main_memory(self) -> MemoryLevel:
        """The largest-capacity level: where weights and KV cache are resident."""
        return max(self.memory, key=lambda level: level.capacity_bytes)

    def memory_level(self, name: str) -> MemoryLevel:
        """Look a memory level up by name."""
        for level in self.memory:
            if level.name == name:
                return level
        names = ", ".join(level.name for level in self.memory)
        raise InputError(f"{self.name} has no memory level {name!r}; accepted: {names}")

    def peak(self, dtype: str) -> float:
        """Dense peak FLOP/s for ``dtype``; bf16 and fp16 stand in for each other."""
        if dtype in self.peak_flops_per_s:
            return float(self.peak_flops_per_s[dtype])
        twin = {"bf16": "fp16", "fp16": "bf16"}.get(dtype)
        if twin is not None and twin in self.peak_flops_per_s:
            return float(self.peak_flops_per_s[twin])
        dtype_bits(dtype)
        names = ", ".join(self.peak_flops_per_s)
        raise InputError(f"{self.name} lists no peak for dtype {dtype!r}; accepted: {names}")

    def compute_dtype_for_bits(self, bits: float) -> str:
        """The dtype that executes operands of ``bits`` bits fastest.

        Among listed dtypes at least ``bits`` wide, the narrowest; ties go to the
        higher peak. Operands wider than every listed dtype use the widest one.
        TF32 is used only when asked for by name (fp32 operands run at the fp32 rate).
        """
        candidates = [d for d in self.peak_flops_per_s if d not in EXPLICIT_ONLY_DTYPES]
        wide_enough = [d for d in candidates if DTYPE_BITS[d] >= bits]
        if not wide_enough:
            return max(candidates, key=lambda d: DTYPE_BITS[d])
        return min(wide_enough, key=lambda d: (DTYPE_BITS[d], -self.peak_flops_per_s[d]))

    def ridge_point(self, dtype: str, memory_level: str | None = None) -> float:
        """Operational intensity (FLOP/byte) where the roofline turns flat: peak / bw."""
        level = self.main_memory if memory_level is None else self.memory_level(memory_level)
        return self.peak(dtype) / level.bandwidth_bytes_per_s


def derive_platform(
    base: Platform,
    *,
    name: str | None = None,
    compute_scale: float = 1.0,
    memory_bandwidth_scale: float = 1.0,
    memory_capacity_scale: float = 1.0,
    link_bandwidth_scale: float = 1.0,
    **overrides: object,
) -> Platform:
    """A what-if variant of ``base``: scale resources, then replace any field.

    ``derive_platform(h100, memory_bandwidth_scale=2)`` is "H100 with 2x bandwidth".
    Scales multiply every compute peak, every memory level's bandwidth or capacity,
    and the link bandwidths. ``overrides`` are `Platform` fields set verbatim.
    The variant's ``name`` (unless given) and ``display_name`` (unless overridden)
    say what changed: ``'h100-sxm (bandwidth x1.5)'``, ``'... (efficiency set)'``.
    """
    for label, scale in (
        ("compute_scale", compute_scale),
        ("memory_bandwidth_scale", memory_bandwidth_scale),
        ("memory_capacity_scale", memory_capacity_scale),
        ("link_bandwidth_scale", link_bandwidth_scale),
    ):
        require_positive(label, scale)
    known = {f.name for f in dataclasses.fields(Platform)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise InputError(
            f"unknown platform field {unknown[0]!r}; accepted: {', '.join(sorted(known))}"
        )
    memory = tuple(
        MemoryLevel(
            level.name,
            level.bandwidth_bytes_per_s * memory_bandwidth_scale,
            level.capacity_bytes * memory_capacity_scale,
        )
        for level in base.memory
    )
    interconnect = base.interconnect
    if interconnect is not None and link_bandwidth_scale != 1.0:
        scaleout = interconnect.scaleout_bandwidth_bytes_per_s
        interconnect = dataclasses.replace(
            interconnect,
            link_bandwidth_bytes_per_s=interconnect.link_bandwidth_bytes_per_s
            * link_bandwidth_scale,
            scaleout_bandwidth_bytes_per_s=None
            if scaleout is None
            else scaleout * link_bandwidth_scale,
        )
    scaled = {dtype: peak * compute_scale for dtype, peak in base.peak_flops_per_s.items()}
    marks = [
        f"{label} x{scale:g}"
        for label, scale in (
            ("compute", compute_scale),
            ("bandwidth", memory_bandwidth_scale),
            ("capacity", memory_capacity_scale),
            ("link bandwidth", link_bandwidth_scale),
        )
        if scale != 1.0
    ] + [
        text
        for field_name in sorted(overrides)
        if field_name != "display_name"
        for text in _override_marks(base, field_name, overrides[field_name])
    ]
    mark = f" ({', '.join(marks)})" if marks else ""
    changes: dict[str, object] = {
        "name": name or f"{base.name}{mark}",
        "display_name": f"{base.display_name}{mark}",
        "peak_flops_per_s": scaled,
        "memory": memory,
        "interconnect": interconnect,
    }
    changes.update(overrides)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def _override_marks(base: Platform, field_name: str, value: object) -> list[str]:
    """How an overridden field differs from ``base``, for the variant's name."""
    if isinstance(value, Efficiency):
        return [
            f"{kind} efficiency {getattr(value, kind):g}"
            for kind in ("compute", "memory", "interconnect")
            if getattr(value, kind) != getattr(base.efficiency, kind)
        ]
    return [] if value == getattr(base, field_name) else [f"{field_name} set"]


def peak_for_bits(platform: Platform, bits: object) -> np.ndarray:
    """Vectorised `Platform.compute_dtype_for_bits` followed by `Platform.peak`, FLOP/s."""
    widths, table = _peak_table(tuple(platform.peak_flops_per_s.items()))
    # The narrowest width >= the operand's (one binary search per element), its fastest dtype.
    return np.asarray(table[np.searchsorted(widths, np.asarray(bits, float), side="left")], float)


@functools.lru_cache(maxsize=256)
def _peak_table(peaks: tuple[tuple[str, float], ...]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted dtype widths and, per width, the fastest dtype's peak, then the peak used
    for operands wider than every dtype (`peak_for_bits`), FLOP/s."""
    by_width = sorted(
        (item for item in peaks if item[0] not in EXPLICIT_ONLY_DTYPES),
        key=lambda item: (-DTYPE_BITS[item[0]], item[1]),
    )
    widest_peak = float(by_width[0][1])  # operands wider than every dtype
    widths = sorted({DTYPE_BITS[dtype] for dtype, _ in by_width})
    fastest = [
        max(float(peak) for dtype, peak in by_width if DTYPE_BITS[dtype] == width)
        for width in widths
    ]
    return np.array(widths, float), np.array([*fastest, widest_peak])
