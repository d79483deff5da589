"""Load platforms from YAML presets in ``data/hardware/`` (or any YAML path).

Files hold human units, converted to SI on load: ``peak_tflops`` (1e12 FLOP/s,
dense), ``bandwidth_gb_per_s`` (decimal GB/s, 1e9 bytes/s), ``capacity_gb``
(decimal GB), ``link_latency_us`` (microseconds). Unknown keys are rejected by
name; every preset must carry a ``source``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import InputError
from .paths import data_dir
from .platform import Efficiency, Interconnect, MemoryLevel, Platform
from .userfiles import load_user_document, names_a_path

MAX_FILE_BYTES = 1_000_000
TOP_KEYS = {
    "name",
    "display_name",
    "kind",
    "source",
    "notes",
    "peak_tflops",
    "memory",
    "interconnect",
    "efficiency",
    "kernel_overhead_us",
    "power_w",
    "price_usd",
    "price_usd_per_hour",
}
REQUIRED_KEYS = {"name", "source", "peak_tflops", "memory"}
MEMORY_KEYS = {"name", "bandwidth_gb_per_s", "capacity_gb"}
INTERCONNECT_KEYS = {
    "link_bandwidth_gb_per_s",
    "link_latency_us",
    "devices_per_node",
    "scaleout_bandwidth_gb_per_s",
    "scaleout_latency_us",
}
EFFICIENCY_KEYS = {"compute", "memory", "interconnect"}


def hardware_dir() -> Path:
    """Folder of the shipped hardware presets."""
    return data_dir() / "hardware"


def list_platforms() -> list[str]:
    """Names of the shipped presets, sorted."""
    return sorted(path.stem for path in hardware_dir().glob("*.yaml"))


def load_platform(name_or_path: str | Path) -> Platform:
    """Load a preset by name (``'h100-sxm'``) or a YAML file by path."""
    path = Path(name_or_path)
    if not names_a_path(name_or_path, (".yaml", ".yml")):
        path = hardware_dir() / f"{name_or_path}.yaml"
        if not path.is_file():
            names = ", ".join(list_platforms())
            raise InputError(f"unknown hardware {str(name_or_path)!r}; accepted: {names}")
    document = load_user_document(
        path, kind="hardware preset", max_bytes=MAX_FILE_BYTES, fmt="yaml"
    )
    return platform_from_dict(document, origin=str(path))


def platform_from_dict(document: Any, origin: str = "<dict>") -> Platform:
    """Build a `Platform` from a preset mapping (human units, see module doc)."""
    if not isinstance(document, dict):
        raise InputError(f"{origin}: expected a mapping at top level")
    _check_keys(document, TOP_KEYS, origin)
    missing = sorted(REQUIRED_KEYS - set(document))
    if missing:
        raise InputError(f"{origin}: missing required key {missing[0]!r}")
    peaks = document["peak_tflops"]
    if not isinstance(peaks, dict) or not peaks:
        raise InputError(f"{origin}: peak_tflops must map dtype names to TFLOP/s")
    levels = document["memory"]
    if not isinstance(levels, list) or not levels:
        raise InputError(f"{origin}: memory must be a non-empty list of levels")
    memory = []
    for index, level in enumerate(levels):
        where = f"{origin}: memory[{index}]"
        if not isinstance(level, dict):
            raise InputError(f"{where} must be a mapping")
        _check_keys(level, MEMORY_KEYS, where)
        memory.append(
            MemoryLevel(
                name=str(level.get("name", f"level{index}")),
                bandwidth_bytes_per_s=_number(level, "bandwidth_gb_per_s", where) * 1e9,
                capacity_bytes=_number(level, "capacity_gb", where) * 1e9,
            )
        )
    return Platform(
        name=str(document["name"]),
        display_name=str(document.get("display_name", document["name"])),
        kind=str(document.get("kind", "gpu")),
        source=str(document["source"]),
        peak_flops_per_s={
            str(dtype): _number(peaks, dtype, f"{origin}: peak_tflops") * 1e12 for dtype in peaks
        },
        memory=tuple(memory),
        interconnect=_interconnect(document.get("interconnect"), origin),
        efficiency=_efficiency(document.get("efficiency"), origin),
        kernel_overhead_s=_optional(document, "kernel_overhead_us", origin, 0.0) * 1e-6,
        power_w=_optional(document, "power_w", origin),
        price_usd=_optional(document, "price_usd", origin),
        price_usd_per_hour=_optional(document, "price_usd_per_hour", origin),
    )


def _interconnect(section: Any, origin: str) -> Interconnect | None:
    if section is None:
        return None
    where = f"{origin}: interconnect"
    if not isinstance(section, dict):
        raise InputError(f"{where} must be a mapping")
    _check_keys(section, INTERCONNECT_KEYS, where)
    scaleout_bw = _optional(section, "scaleout_bandwidth_gb_per_s", where)
    scaleout_latency = _optional(section, "scaleout_latency_us", where)
    devices = section.get("devices_per_node", 1)
    if isinstance(devices, bool) or not isinstance(devices, int):
        raise InputError(f"{where}.devices_per_node must be an integer >= 1, got {devices!r}")
    return Interconnect(
        link_bandwidth_bytes_per_s=_number(section, "link_bandwidth_gb_per_s", where) * 1e9,
        link_latency_s=_number(section, "link_latency_us", where) * 1e-6,
        devices_per_node=devices,
        scaleout_bandwidth_bytes_per_s=None if scaleout_bw is None else scaleout_bw * 1e9,
        scaleout_latency_s=None if scaleout_latency is None else scaleout_latency * 1e-6,
    )


def _efficiency(section: Any, origin: str) -> Efficiency:
    if section is None:
        return Efficiency()
    where = f"{origin}: efficiency"
    if not isinstance(section, dict):
        raise InputError(f"{where} must be a mapping")
    _check_keys(section, EFFICIENCY_KEYS, where)
    return Efficiency(**{key: _number(section, key, where) for key in section})


def _check_keys(section: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(str(key) for key in set(section) - allowed)
    if unknown:
        raise InputError(
            f"{where}: unknown key {unknown[0]!r}; accepted: {', '.join(sorted(allowed))}"
        )


def _number(section: dict[str, Any], key: str, where: str) -> float:
    if key not in section:
        raise InputError(f"{where}: missing required key {key!r}")
    value = section[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{where}.{key} must be a number, got {value!r}")
    return float(value)


def _optional(section: dict[str, Any], key: str, where: str, default: float | None = None):
    return _number(section, key, where) if section.get(key) is not None else default
