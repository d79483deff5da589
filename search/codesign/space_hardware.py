"""The ``hardware`` section of a co-design space: platforms (presets, YAML files and
parametric ``design`` accelerators), what-if scale factors, the device counts a mesh may
use and the serving-stack runtime profile."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genz import SCALE_AXES, RuntimeProfile, load_runtime
from roofline import DesignCost, InputError, Platform, load_platform

from .axes import Values, check_keys, declared_axis, ints
from .designs import design_platforms, parse_design_section

HARDWARE_AXES = tuple(SCALE_AXES)


@dataclass(frozen=True)
class HardwareSpace:
    """Platforms and what-if scale factors; ``devices`` None allows any mesh size;
    ``runtime`` a serving-stack profile applied to every design (None: the physics)."""

    platforms: tuple[Platform, ...]
    compute_scale: Values = (1.0,)
    bandwidth_scale: Values = (1.0,)
    capacity_scale: Values = (1.0,)
    link_bandwidth_scale: Values = (1.0,)
    devices: tuple[int, ...] | None = None
    runtime: RuntimeProfile | None = None
    #: Per platform, the modelled area / TDP / cost of a ``design`` entry (None: a preset).
    costs: tuple[DesignCost | None, ...] = ()

    def cost_of(self, index: int) -> DesignCost | None:
        """The design cost of platform ``index`` (None for a preset)."""
        return self.costs[index] if index < len(self.costs) else None


def parse_hardware(section: dict[str, Any], root: Path) -> HardwareSpace:
    """The ``hardware`` section (YAML paths relative to ``root``)."""
    where = "hardware"
    check_keys(section, ("presets", "design", *HARDWARE_AXES, "devices", "runtime"), where)
    presets = section.get("presets")
    if isinstance(presets, str):
        presets = [presets]
    if presets is None and section.get("design") is not None:
        presets = []
    if not isinstance(presets, list) or len(presets) > 64:
        raise InputError(f"{where}.presets must list 1 to 64 hardware presets or YAML files")
    if not presets and section.get("design") is None:
        raise InputError(f"{where}.presets must list 1 to 64 hardware presets or YAML files")
    platforms: list[Platform] = []
    for item in presets:
        if not isinstance(item, str):
            raise InputError(f"{where}.presets must hold names or paths, got {item!r}")
        path = root / item if item.endswith((".yaml", ".yml")) else item
        platforms.append(load_platform(path))
    costs: list[DesignCost | None] = [None] * len(platforms)
    if section.get("design") is not None:
        designed, design_costs = design_platforms(parse_design_section(section["design"]))
        platforms.extend(designed)
        costs.extend(design_costs)
    names = [platform.name for platform in platforms]
    if len(set(names)) != len(names):
        raise InputError(f"{where}.presets: platform names repeat ({', '.join(names)})")
    scales = {key: declared_axis(section, SCALE_AXES[key], where) for key in HARDWARE_AXES}
    devices = None
    if section.get("devices") is not None:
        devices = ints(section, "devices", where, 1, 1, 1_000_000)
    runtime = section.get("runtime")
    if runtime is not None and not isinstance(runtime, str):
        raise InputError(f"{where}.runtime must be a runtime profile name or YAML file")
    profile = None
    if runtime is not None:
        try:
            profile = load_runtime(
                root / runtime if runtime.endswith((".yaml", ".yml")) else runtime
            )
        except InputError as error:
            raise InputError(f"{where}.runtime: {error}") from None
    return HardwareSpace(
        platforms=tuple(platforms), devices=devices, runtime=profile, costs=tuple(costs), **scales
    )
