"""The tables behind parametric accelerators: memory technologies, links, process nodes
and the area / power / cost constants (``data/hardware/design/*.yaml``).

Files hold human units (GB, GB/s, mm^2, pJ, US$); the dataclasses keep them, and
`roofline.design` converts to SI where a `Platform` needs it. Every technology and node
carries the source of each constant; ``assumption`` marks values with no public source.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from .errors import InputError, require_non_negative, unknown_name
from .paths import data_dir
from .userfiles import load_user_document

MAX_TABLE_BYTES = 200_000


@dataclass(frozen=True)
class MemoryTechnology:
    """One off-chip memory technology; one *unit* is an HBM stack or a 32-bit channel."""

    name: str
    unit_bits: int
    max_gbps_per_pin: float
    capacity_gb: tuple[float, ...]
    max_units: int
    pj_per_bit: float
    usd_per_gb: float
    phy_mm2: float
    controller_mtr: float
    interposer: bool
    footprint_mm2: float
    sources: dict[str, str]

    @property
    def max_gb_per_s_per_unit(self) -> float:
        """Peak bandwidth of one unit at the technology's top data rate, GB/s (decimal)."""
        return self.unit_bits * self.max_gbps_per_pin / 8


@dataclass(frozen=True)
class LinkTechnology:
    """A scale-up or host link; one unit is a link (NVLink) or a lane (PCIe)."""

    name: str
    gb_per_s_per_unit: float
    phy_mm2: float
    controller_mtr: float
    sources: str


@dataclass(frozen=True)
class ProcessNode:
    """Densities, wafer price, defect density and energy scale of one process node."""

    name: str
    logic_mtr_per_mm2: float
    sram_bitcell_um2: float
    wafer_usd: float
    defect_density_per_cm2: float
    energy_scale: float
    sources: dict[str, str]


@dataclass(frozen=True)
class DesignConstants:
    """Area, power, yield, package and board constants (``model.yaml``)."""

    tensor_transistors_per_flop_per_cycle: float
    vector_transistors_per_flop_per_cycle: float
    graphics_transistors_per_flop_per_cycle: float
    other_mm2_per_die: float
    layout_factor: float
    sram_array_efficiency: float
    pj_per_tensor_flop_n7: float
    pj_per_vector_flop_n7: float
    static_w_per_mm2: float
    dram_traffic_multiplier: float
    reference_clock_ghz: float
    clock_energy_exponent: float
    yield_model: str
    cluster_alpha: float
    wafer_diameter_mm: float
    reticle_mm2: float
    substrate_usd: float
    assembly_usd: float
    interposer_wafer_usd: float
    interposer_margin: float
    board_base_usd: float
    board_usd_per_w: float
    sources: dict[str, str]


def _document(name: str) -> dict[str, Any]:
    path = data_dir() / "hardware" / "design" / name
    document = load_user_document(path, kind="design table", max_bytes=MAX_TABLE_BYTES)
    if not isinstance(document, dict):
        raise InputError(f"{path}: expected a mapping at top level")
    return document


def _build(cls: Any, name: str, entry: Any, origin: str, extra: dict[str, Any]) -> Any:
    fields = set(cls.__dataclass_fields__) - {"name"} - set(extra)
    if not isinstance(entry, dict):
        raise InputError(f"{origin}: {name} must be a mapping")
    allowed = fields | {"aliases"}
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise InputError(f"{origin}: {name}: unknown key {unknown[0]!r}")
    missing = sorted(fields - set(entry))
    if missing:
        raise InputError(f"{origin}: {name}: missing key {missing[0]!r}")
    values = {
        key: _checked(entry[key], cls.__dataclass_fields__[key].type, f"{origin}: {name}.{key}")
        for key in fields
    }
    if "name" in cls.__dataclass_fields__:
        values["name"] = name
    return cls(**values, **extra)


def _checked(value: Any, annotation: Any, where: str) -> Any:
    """``value`` as the field's type: numbers finite and >= 0 (one-line error otherwise)."""
    if annotation in ("float", "int"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(f"{where} must be a number, got {value!r}")
        require_non_negative(where, value)
        return float(value) if annotation == "float" else int(value)
    if annotation == "bool" and not isinstance(value, bool):
        raise InputError(f"{where} must be true or false, got {value!r}")
    return value


@functools.lru_cache(maxsize=1)
def memory_technologies() -> dict[str, MemoryTechnology]:
    """Memory technologies by name (``hbm3e``, ``lpddr5x``, ``ddr5``...)."""
    document = _document("memory.yaml")
    table = {}
    for name, entry in document["technologies"].items():
        capacity = tuple(float(value) for value in entry.get("capacity_gb", ()))
        table[name] = _build(
            MemoryTechnology,
            name,
            {**entry, "capacity_gb": capacity},
            "memory.yaml",
            {},
        )
    return table


@functools.lru_cache(maxsize=1)
def link_technologies() -> dict[str, LinkTechnology]:
    """Link technologies by name (``nvlink4``, ``pcie5``...)."""
    document = _document("memory.yaml")
    return {
        name: _build(LinkTechnology, name, entry, "memory.yaml", {})
        for name, entry in document["links"].items()
    }


@functools.lru_cache(maxsize=1)
def process_nodes() -> dict[str, ProcessNode]:
    """Process nodes by name and alias (``n5`` also answers to ``n4``, ``4n``)."""
    document = _document("nodes.yaml")
    table: dict[str, ProcessNode] = {}
    for name, entry in document["nodes"].items():
        node = _build(ProcessNode, name, entry, "nodes.yaml", {})
        table[name] = node
        for alias in entry.get("aliases", ()):
            table[str(alias).lower()] = node
    return table


@functools.lru_cache(maxsize=1)
def design_constants() -> DesignConstants:
    """The area, power, yield, package and board constants."""
    document = _document("model.yaml")
    values = {key: entry["value"] for key, entry in document["constants"].items()}
    sources = {key: str(entry["source"]) for key, entry in document["constants"].items()}
    return _build(DesignConstants, "constants", values, "model.yaml", {"sources": sources})


def memory_technology(name: str) -> MemoryTechnology:
    """Look a memory technology up by name (case-insensitive); one-line error if unknown."""
    table = memory_technologies()
    key = str(name).lower()
    if key not in table:
        raise unknown_name("memory technology", str(name), sorted(table))
    return table[key]


def link_technology(name: str) -> LinkTechnology:
    """Look a link technology up by name (case-insensitive)."""
    table = link_technologies()
    key = str(name).lower()
    if key not in table:
        raise unknown_name("link technology", str(name), sorted(table))
    return table[key]


def process_node(name: str) -> ProcessNode:
    """Look a process node up by name or alias (case-insensitive)."""
    table = process_nodes()
    key = str(name).lower()
    if key not in table:
        raise unknown_name("process node", str(name), sorted(table))
    return table[key]
