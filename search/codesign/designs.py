"""The ``hardware.design`` section of a space file: parametric accelerators as platforms.

::

    hardware:
      presets: [h100-sxm]                 # optional beside designs
      design:
        compute_tflops: [125, 250, 500]   # dense bf16, TFLOP/s (an axis)
        memory:                           # one mapping, or a list of them (a union)
          technology: [hbm3e, lpddr5x]
          units: [4, 8]                   # stacks or 32-bit channels (``stacks:`` also)
          capacity_gb_per_unit: 24        # optional (default: the technology's largest)
        sram_mb: [32, 64]
        node: [n5, n3]
        clock_ghz: 1.8
        vector_ratio: 16                  # 16-bit tensor peak / fp32 vector peak
        links: {nvlink4: 18, pcie5: 16}

The product of the axes becomes one `roofline.AcceleratorDesign` per combination and its
`roofline.Platform` (`roofline.design_platform`: modelled TDP as ``power_w``,
manufacturing cost as ``price_usd``); combinations the model refuses (a die beyond the
reticle, more units than a package takes) are left out, and an error is raised only when
none remains. `design_metrics` gives the per-platform columns the objectives
``device_cost_usd``, ``area_mm2``, ``tdp_w``, ``usd_per_mtok`` and ``perf_per_cost`` read.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from roofline import (
    AcceleratorDesign,
    DesignCost,
    InputError,
    MemorySpec,
    Platform,
    design_cost,
    design_platform,
)
from search.economics import design_hourly_usd

from .axes import axis, check_keys, section

DESIGN_KEYS = (
    "compute_tflops",
    "memory",
    "sram_mb",
    "node",
    "clock_ghz",
    "vector_ratio",
    "links",
)
MEMORY_KEYS = ("technology", "units", "stacks", "capacity_gb_per_unit")
MAX_DESIGNS = 4096


def _names(value: Any, where: str) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
        raise InputError(f"{where} must be a name or a list of names, got {value!r}")
    return [item.lower() for item in items]


def _memories(value: Any, where: str) -> list[MemorySpec]:
    entries = value if isinstance(value, list) else [value]
    specs = []
    for index, entry in enumerate(entries):
        label = f"{where}[{index}]" if isinstance(value, list) else where
        entry = section(entry, label, MEMORY_KEYS)
        if "units" in entry and "stacks" in entry:
            raise InputError(f"{label}: give units or stacks, not both")
        key = "stacks" if "stacks" in entry else "units"
        if key not in entry:
            raise InputError(f"{label}: missing key 'units' (stacks or 32-bit channels)")
        units = axis(entry, key, label, None, 1, 1024, True)
        capacity = None
        if entry.get("capacity_gb_per_unit") is not None:
            capacity = axis(entry, "capacity_gb_per_unit", label, None, 1e-3, 1e4, False)
        for tech in _names(entry.get("technology"), f"{label}.technology"):
            for count in units:
                for gb in capacity or (None,):
                    specs.append(MemorySpec(tech, int(count), capacity_gb_per_unit=gb))
    return specs


def parse_design_section(document: Any, where: str = "hardware.design") -> list[AcceleratorDesign]:
    """Every `AcceleratorDesign` of the section (the product of its axes)."""
    document = section(document, where, DESIGN_KEYS)
    if "compute_tflops" not in document or "memory" not in document:
        raise InputError(f"{where}: needs compute_tflops (TFLOP/s) and memory")
    compute = axis(document, "compute_tflops", where, None, 1e-3, 1e6, False)
    sram = axis(document, "sram_mb", where, 50.0, 0.0, 1e5, False)
    clock = axis(document, "clock_ghz", where, 1.8, 0.01, 10.0, False)
    ratio = axis(document, "vector_ratio", where, 16.0, 1.0, 1e4, False)
    nodes = _names(document.get("node", "n5"), f"{where}.node")
    links = document.get("links", {"pcie5": 16})
    if not isinstance(links, dict):
        raise InputError(f"{where}.links must map link names to counts, got {links!r}")
    check_keys(links, tuple(links), f"{where}.links")
    memories = _memories(document["memory"], f"{where}.memory")
    combos = list(itertools.product(compute, memories, sram, nodes, clock, ratio))
    if len(combos) > MAX_DESIGNS:
        raise InputError(f"{where}: {len(combos)} designs; at most {MAX_DESIGNS}")
    designs = []
    for tflops, memory, mb, node, ghz, vector_ratio in combos:
        name = f"design-{tflops:g}tf-{memory.technology}x{memory.units}"
        if memory.capacity_gb_per_unit is not None:
            name += f"x{memory.capacity_gb_per_unit:g}gb"
        name += f"-{mb:g}mb-{node}"
        if len(clock) > 1:
            name += f"-{ghz:g}ghz"
        if len(ratio) > 1:
            name += f"-v{vector_ratio:g}"
        designs.append(
            AcceleratorDesign(
                compute_tflops={"bf16": tflops},
                vector_tflops_fp32=tflops / vector_ratio,
                memory=memory,
                sram_mb=mb,
                node=node,
                clock_ghz=ghz,
                links=dict(links),
                name=name,
            )
        )
    return designs


def design_platforms(
    designs: Sequence[AcceleratorDesign], where: str = "hardware.design"
) -> tuple[tuple[Platform, ...], tuple[DesignCost, ...]]:
    """Platforms and costs of the designs the model accepts (others are left out)."""
    platforms, costs = [], []
    first_error: InputError | None = None
    for design in designs:
        try:
            cost = design_cost(design)
        except InputError as error:
            first_error = first_error or error
            continue
        platforms.append(design_platform(design, cost))
        costs.append(cost)
    if not platforms:
        raise InputError(f"{where}: no design is buildable: {first_error}")
    return tuple(platforms), tuple(costs)


def design_metrics(
    platforms: Sequence[Platform],
    costs: Sequence[DesignCost | None],
    index: NDArray[np.integer],
    devices: NDArray[np.floating],
    throughput_tokens_per_s: NDArray[np.floating],
    throughput_per_device: NDArray[np.floating],
) -> dict[str, NDArray[np.float64]]:
    """Per-point ``device_cost_usd``, ``area_mm2``, ``tdp_w``, ``usd_per_mtok`` and
    ``perf_per_cost`` (NaN where a preset lists no price, power or area).

    A device-hour is the preset's rental price, or the price (a design's modelled cost)
    over `DESIGN_LIFETIME_YEARS` plus electricity at TDP and
    `DESIGN_ELECTRICITY_USD_PER_KWH`; ``usd_per_mtok = devices x hourly / 3600 /
    throughput x 1e6``; ``perf_per_cost`` = output tokens/s per device per US$ of device.
    """
    nan = float("nan")
    price = np.array([nan if p.price_usd is None else p.price_usd for p in platforms])
    power = np.array([nan if p.power_w is None else p.power_w for p in platforms])
    area = np.array([nan if c is None else c.area_mm2 for c in costs])
    hourly = np.array(
        [
            p.price_usd_per_hour
            if p.price_usd_per_hour is not None
            else design_hourly_usd(price[i], power[i])
            for i, p in enumerate(platforms)
        ]
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        usd_per_mtok = devices * hourly[index] / 3600 / throughput_tokens_per_s * 1e6
        perf_per_cost = throughput_per_device / price[index]
    return {
        "device_cost_usd": price[index],
        "area_mm2": area[index],
        "tdp_w": power[index],
        "usd_per_mtok": usd_per_mtok,
        "perf_per_cost": perf_per_cost,
    }
