"""Load platforms from YAML presets in ``data/hardware/`` (or any YAML path).

Files hold human units, converted to SI on load: ``peak_tflops`` (1e12 FLOP/s,
dense), ``bandwidth_gb_per_s`` (decimal GB/s, 1e9 bytes/s), ``capacity_gb``
(decimal GB), ``link_latency_us`` and ``collective_latency_us`` (microseconds), ``power_model.pj_per_flop`` / ``pj_per_byte`` (picojoules). Unknown keys are rejected by
name; every preset must carry a ``source``. Every number lies in its range of
`roofline.bounds.HARDWARE_BOUNDS` (docs/bounds.md). Errors name the file and the key
and echo the value in the file's unit (``h.yaml: memory[0].bandwidth_gb_per_s must be a
number of GB/s in (0, 1e+08], got -3350``), never its SI conversion.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .bounds import HARDWARE_BOUNDS, HARDWARE_KINDS
from .errors import InputError, unknown_name
from .paths import data_dir
from .platform import Efficiency, HostMemory, Interconnect, MemoryLevel, Platform, PowerModel
from .userfiles import is_preset_file, load_user_document, names_a_path

MAX_FILE_BYTES = 1_000_000
TOP_KEYS = {
    "name",
    "display_name",
    "kind",
    "vendor",
    "source",
    "notes",
    "peak_tflops",
    "memory",
    "interconnect",
    "efficiency",
    "kernel_overhead_us",
    "power_w",
    "power_model",
    "price_usd",
    "price_usd_per_hour",
    "host",
}
HOST_KEYS = {"name", "capacity_gb", "link_bandwidth_gb_per_s", "source"}
REQUIRED_KEYS = {"name", "source", "peak_tflops", "memory"}
MEMORY_KEYS = {"name", "bandwidth_gb_per_s", "capacity_gb"}
INTERCONNECT_KEYS = {
    "link_bandwidth_gb_per_s",
    "link_latency_us",
    "devices_per_node",
    "scaleout_bandwidth_gb_per_s",
    "scaleout_latency_us",
    "collective_latency_us",
}
EFFICIENCY_KEYS = {"compute", "memory", "interconnect"}
POWER_MODEL_KEYS = {"idle_w", "pj_per_flop", "pj_per_byte", "source"}


def hardware_dir() -> Path:
    """Folder of the shipped hardware presets."""
    return data_dir() / "hardware"


def list_platforms() -> list[str]:
    """Names of the shipped presets, sorted."""
    return sorted(path.stem for path in hardware_dir().glob("*.yaml"))


def load_platform(name_or_path: str | Path) -> Platform:
    """Load a preset by name (``'h100-sxm'``, any case) or a YAML file by path."""
    path = Path(name_or_path)
    if not names_a_path(name_or_path, (".yaml", ".yml")):
        path = hardware_dir() / f"{str(name_or_path).lower()}.yaml"
        if not is_preset_file(path):
            raise unknown_name("hardware", str(name_or_path), list_platforms())
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
        _check_section(level, MEMORY_KEYS, where)
        memory.append(
            MemoryLevel(
                name=str(level.get("name", f"level{index}")),
                bandwidth_bytes_per_s=_bounded(level, "bandwidth_gb_per_s", where, "memory") * 1e9,
                capacity_bytes=_bounded(level, "capacity_gb", where, "memory") * 1e9,
            )
        )
    fields = {
        "name": str(document["name"]),
        "display_name": str(document.get("display_name", document["name"])),
        "kind": _kind(document.get("kind", "gpu"), origin),
        "vendor": str(document.get("vendor", "")),
        "source": str(document["source"]),
        "peak_flops_per_s": {
            str(dtype): _number(peaks, dtype, f"{origin}: peak_tflops", bound="peak_tflops") * 1e12
            for dtype in peaks
        },
        "memory": tuple(memory),
        "interconnect": _interconnect(document.get("interconnect"), origin),
        "efficiency": _efficiency(document.get("efficiency"), origin),
        "kernel_overhead_s": _non_negative(document, "kernel_overhead_us", origin) * 1e-6,
        "power_w": _optional(document, "power_w", origin),
        "power_model": _power_model(document.get("power_model"), origin),
        "price_usd": _optional(document, "price_usd", origin),
        "price_usd_per_hour": _optional(document, "price_usd_per_hour", origin),
        "host": _host(document.get("host"), origin),
    }
    return _in_file(origin, Platform, fields)


def _host(section: Any, origin: str) -> HostMemory | None:
    if section is None:
        return None
    where = f"{origin}: host"
    _check_section(section, HOST_KEYS, where)
    return HostMemory(
        name=str(section.get("name", "host")),
        capacity_bytes=_bounded(section, "capacity_gb", where, "host") * 1e9,
        link_bandwidth_bytes_per_s=_bounded(section, "link_bandwidth_gb_per_s", where, "host")
        * 1e9,
    )


def _kind(value: Any, origin: str) -> str:
    """``kind`` of a hardware file, one of `HARDWARE_KINDS` (any case)."""
    kind = str(value).strip().lower()
    if kind not in HARDWARE_KINDS:
        raise InputError(
            f"{origin}: kind must be one of {', '.join(HARDWARE_KINDS)}, got {value!r}"
        )
    return kind


def _in_file(where: str, build: Any, fields: dict[str, Any]) -> Any:
    """``build(**fields)``, its `InputError` prefixed with ``where`` (the file)."""
    try:
        return build(**fields)
    except InputError as error:
        raise InputError(f"{where}: {error}") from None


def _interconnect(section: Any, origin: str) -> Interconnect | None:
    if section is None:
        return None
    where = f"{origin}: interconnect"
    _check_section(section, INTERCONNECT_KEYS, where)

    def optional(key: str, unit: float) -> float | None:
        if section.get(key) is None:
            return None
        return _bounded(section, key, where, "interconnect") * unit

    devices = section.get("devices_per_node", 1)
    HARDWARE_BOUNDS["interconnect.devices_per_node"].check(devices, f"{where}.devices_per_node")
    fields = {
        "link_bandwidth_bytes_per_s": _bounded(
            section, "link_bandwidth_gb_per_s", where, "interconnect"
        )
        * 1e9,
        "link_latency_s": _bounded(section, "link_latency_us", where, "interconnect") * 1e-6,
        "devices_per_node": int(devices),
        "scaleout_bandwidth_bytes_per_s": optional("scaleout_bandwidth_gb_per_s", 1e9),
        "scaleout_latency_s": optional("scaleout_latency_us", 1e-6),
    }
    collective = optional("collective_latency_us", 1e-6)
    if collective is not None:
        fields["collective_latency_s"] = collective
    return _in_file(origin, Interconnect, fields)


def _efficiency(section: Any, origin: str) -> Efficiency:
    if section is None:
        return Efficiency()
    where = f"{origin}: efficiency"
    _check_section(section, EFFICIENCY_KEYS, where)
    return _in_file(
        origin, Efficiency, {key: _bounded(section, key, where, "efficiency") for key in section}
    )


def _power_model(section: Any, origin: str) -> PowerModel | None:
    """The ``power_model`` section (``idle_w`` W, ``pj_per_flop``, ``pj_per_byte``
    picojoules, ``source`` required), or None when absent."""
    if section is None:
        return None
    where = f"{origin}: power_model"
    _check_section(section, POWER_MODEL_KEYS, where)
    if not str(section.get("source", "")).strip():
        raise InputError(f"{where}: missing required key 'source'")
    values = {
        key: _bounded(section, key, where, "power_model")
        for key in ("idle_w", "pj_per_flop", "pj_per_byte")
    }
    return PowerModel(
        idle_w=values["idle_w"],
        j_per_flop=values["pj_per_flop"] * 1e-12,
        j_per_byte=values["pj_per_byte"] * 1e-12,
        source=str(section["source"]),
    )


def _check_section(section: Any, allowed: set[str], where: str) -> None:
    """``section`` is a mapping (named ``where``) of only ``allowed`` keys."""
    if not isinstance(section, dict):
        raise InputError(f"{where} must be a mapping")
    _check_keys(section, allowed, where)


def _check_keys(section: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(str(key) for key in set(section) - allowed)
    if unknown:
        raise InputError(
            f"{where}: unknown key {unknown[0]!r}; accepted: {', '.join(sorted(allowed))}"
        )


def _number(
    section: dict[str, Any], key: str, where: str, label: str | None = None, *, bound: str
) -> float:
    """``section[key]`` as a float in its range ``HARDWARE_BOUNDS[bound]``; errors name it
    ``label`` (default ``where.key``) and echo the value as written."""
    if key not in section:
        raise InputError(f"{where}: missing required key {key!r}")
    return float(HARDWARE_BOUNDS[bound].check(section[key], label or f"{where}.{key}"))


def _bounded(section: dict[str, Any], key: str, where: str, part: str) -> float:
    """``section[key]`` of section ``part`` (``'memory'``, ``'interconnect'``, ...)."""
    return _number(section, key, where, bound=f"{part}.{key}")


def _non_negative(section: dict[str, Any], key: str, where: str) -> float:
    """A top-level ``key`` of file ``where`` in its range (0 when absent)."""
    if section.get(key) is None:
        return 0.0
    return _number(section, key, where, f"{where}: {key}", bound=key)


def _optional(section: dict[str, Any], key: str, where: str) -> float | None:
    """A top-level ``key`` of file ``where`` in its range, or None when absent."""
    if section.get(key) is None:
        return None
    return _number(section, key, where, f"{where}: {key}", bound=key)
