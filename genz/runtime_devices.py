"""Per-device overrides and the stack key of a runtime profile (part of `genz.runtime`'s
schema).

A fit across devices and stacks (`calibration.transfer`) gives each hardware preset its
own achieved fractions of peak and per-kernel launch cost on a stack; a profile carries
them per preset name, beside the per-device-class overrides::

    devices:
      a100-sxm-40gb:
        prefill: {compute_efficiency: V, memory_efficiency: V, step_overhead_s: V}
        decode: {...}
        kernel_launch_s: V                          # optional (the profile's)
        weight_formats:                             # optional (each format's own)
          Q4_K_M: {memory_efficiency_scale: V,      # either or both
                   compute_efficiency_scale: V}
    stack: {runtime: vllm, harness: offline_generate, version_family: "2024"}

A device's entry wins over its device class's override and over the defaults. Device
names must be hardware presets (``data/hardware``): a misspelt name would otherwise
silently never apply. ``stack`` names what the profile was fitted for; it changes no
number.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from roofline import InputError, list_platforms

from .runtime_phase import PHASES, PhaseProfile, phase_from_dict
from .runtime_values import as_mapping, check_known, checked_value

DEVICE_KEYS = frozenset({*PHASES, "kernel_launch_s", "weight_formats"})
STACK_KEYS = ("runtime", "harness", "version_family")
#: Longest name of a stack key's part, characters.
MAX_STACK_NAME = 80


@dataclass(frozen=True)
class DeviceOverride:
    """One hardware preset's own values on the profile's stack.

    ``phases``: both phases (achieved fractions of peak, step costs); ``kernel_launch_s``:
    seconds per launched kernel (None: the profile's); ``format_scales`` /
    ``compute_format_scales``: weight format name -> the format's memory- / compute-
    efficiency scale on this device (absent: the format's).
    """

    phases: Mapping[str, PhaseProfile]
    kernel_launch_s: float | None = None
    format_scales: Mapping[str, float] = field(default_factory=dict)
    compute_format_scales: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class StackKey:
    """The serving stack a profile was fitted for: runtime, harness, version family."""

    runtime: str
    harness: str
    version_family: str

    def to_dict(self) -> dict[str, str]:
        """The YAML mapping (`stack_from_dict` reads it back)."""
        return {key: getattr(self, key) for key in STACK_KEYS}


def devices_from_dict(
    entry: Any, format_names: Collection[str], label: str
) -> dict[str, DeviceOverride]:
    """The ``devices`` mapping: preset name -> `DeviceOverride` (both phases required;
    weight formats must be the profile's own, ``format_names``)."""
    presets = set(list_platforms())
    devices = {}
    for name, override in as_mapping(entry, label).items():
        where = f"{label}.{name}"
        if str(name) not in presets:
            raise InputError(
                f"{where}: not a hardware preset (data/hardware); "
                f"use device_classes for other platforms"
            )
        check_known(as_mapping(override, where), DEVICE_KEYS, where)
        missing = [phase for phase in PHASES if phase not in override]
        if missing:
            raise InputError(f"{where}: missing {missing[0]!r} (give both prefill and decode)")
        launch = override.get("kernel_launch_s")
        memory_scales, compute_scales = _format_scales(
            override.get("weight_formats", {}), format_names, f"{where}.weight_formats"
        )
        devices[str(name)] = DeviceOverride(
            phases={
                phase: phase_from_dict(override[phase], f"{where}.{phase}") for phase in PHASES
            },
            kernel_launch_s=None
            if launch is None
            else checked_value(launch, "kernel_launch_s", f"{where}.kernel_launch_s"),
            format_scales=memory_scales,
            compute_format_scales=compute_scales,
        )
    return devices


def _format_scales(
    entry: Any, format_names: Collection[str], label: str
) -> tuple[dict[str, float], dict[str, float]]:
    """Weight format name -> ``{memory_efficiency_scale: V, compute_efficiency_scale:
    V}`` of one device (at least one of them): the memory and the compute scales."""
    memory: dict[str, float] = {}
    compute: dict[str, float] = {}
    keys = {"memory_efficiency_scale": memory, "compute_efficiency_scale": compute}
    for name, values in as_mapping(entry, label).items():
        where = f"{label}.{name}"
        if str(name) not in format_names:
            accepted = ", ".join(sorted(format_names)) or "(the profile lists none)"
            raise InputError(f"{where}: not a format of weight_formats; accepted: {accepted}")
        check_known(as_mapping(values, where), frozenset(keys), where)
        if not any(key in values for key in keys):
            raise InputError(f"{where}: missing 'memory_efficiency_scale'")
        for key, scales in keys.items():
            if key in values:
                scales[str(name)] = checked_value(values[key], key, f"{where}.{key}")
    return memory, compute


def stack_from_dict(entry: Any, label: str) -> StackKey:
    """The ``stack`` mapping: runtime, harness and version family, non-empty strings."""
    check_known(as_mapping(entry, label), frozenset(STACK_KEYS), label)
    parts = {}
    for key in STACK_KEYS:
        value = entry.get(key)
        if not isinstance(value, str) or not 0 < len(value) <= MAX_STACK_NAME:
            raise InputError(
                f"{label}.{key}: must be a string of 1 to {MAX_STACK_NAME} characters, "
                f"got {value!r}"
            )
        parts[key] = value
    return StackKey(**parts)
