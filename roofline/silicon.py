"""Die area, yield, device cost and TDP of an `AcceleratorDesign`, and its `Platform`.

Area (mm^2) = layout factor x (compute logic + SRAM + memory and link PHYs and
controllers) + a fixed part per die::

    logic    = (T_tensor x tensor FLOP/cycle + T_vector x vector FLOP/cycle) / density
    sram     = bits x bit-cell area / array efficiency
    phy      = units x PHY mm^2 (analogue: does not shrink with the node)
    control  = units x controller transistors / density

Die cost = wafer price / (gross dies per wafer x yield) per die; gross dies
``pi (d/2)^2 / A - pi d / sqrt(2 A)``; yield negative binomial
``(1 + A D0 / alpha)^-alpha`` (or Murphy's ``((1 - e^-AD0) / AD0)^2``), A in cm^2.
Device cost = dies + memory (GB x $/GB) + package (substrate, assembly, a silicon
interposer when the memory needs one) + board (base + $/W of TDP).
TDP (W) = energy per tensor FLOP(node) x tensor peak + energy per vector FLOP(node) x
vector peak + m x DRAM pJ/bit x bandwidth x 8 + static W/mm^2 x area: the activity power
with every unit at peak at once; m (``dram_traffic_multiplier``) adds the on-die movement
(L2, crossbar, memory controller) of every DRAM bit to the DRAM's own energy.
Constants and their sources: ``data/hardware/design/*.yaml`` (`roofline.design_data`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .design import AcceleratorDesign
from .design_data import (
    DesignConstants,
    design_constants,
    link_technology,
    memory_technology,
    process_node,
)
from .errors import InputError, require_positive
from .platform import Interconnect, MemoryLevel, Platform, PowerModel


def dies_per_wafer(die_area_mm2: float, wafer_diameter_mm: float = 300.0) -> float:
    """Gross dies per wafer: ``pi (d/2)^2 / A - pi d / sqrt(2 A)`` (edge loss term)."""
    area = require_positive("die_area_mm2 (mm^2)", die_area_mm2)
    diameter = require_positive("wafer_diameter_mm (mm)", wafer_diameter_mm)
    gross = math.pi * (diameter / 2) ** 2 / area - math.pi * diameter / math.sqrt(2 * area)
    if gross < 1:
        raise InputError(
            f"die_area_mm2 (mm^2) must leave at least one die on a {diameter:g} mm wafer, got {area:g}"
        )
    return gross


def die_yield(
    die_area_mm2: float,
    defect_density_per_cm2: float,
    model: str = "negative_binomial",
    alpha: float = 3.0,
) -> float:
    """Fraction of good dies: negative binomial ``(1 + A D0 / alpha)^-alpha`` or Murphy's
    ``((1 - exp(-A D0)) / (A D0))^2``; A in cm^2, D0 defects per cm^2."""
    area_cm2 = require_positive("die_area_mm2 (mm^2)", die_area_mm2) / 100
    if defect_density_per_cm2 < 0:
        raise InputError(
            f"defect_density_per_cm2 (defects/cm^2) must be >= 0, got {defect_density_per_cm2!r}"
        )
    faults = area_cm2 * defect_density_per_cm2
    if faults == 0:
        return 1.0
    if model == "negative_binomial":
        require_positive("alpha (cluster parameter)", alpha)
        return (1 + faults / alpha) ** -alpha
    if model == "murphy":
        return ((1 - math.exp(-faults)) / faults) ** 2
    raise InputError(f"yield model must be 'negative_binomial' or 'murphy', got {model!r}")


@dataclass(frozen=True)
class AreaBreakdown:
    """Silicon area of a design by component, mm^2 (all dies together)."""

    tensor_mm2: float
    vector_mm2: float
    graphics_mm2: float
    sram_mm2: float
    memory_phy_mm2: float
    memory_controller_mm2: float
    link_mm2: float
    other_mm2: float

    @property
    def total_mm2(self) -> float:
        """All components, mm^2."""
        return sum(asdict(self).values())

    def to_dict(self) -> dict[str, float]:
        """Components and ``total_mm2``."""
        return {**asdict(self), "total_mm2": self.total_mm2}


@dataclass(frozen=True)
class DesignCost:
    """Area, yield, cost (US$) and TDP (W) of one design, with their parts."""

    area: AreaBreakdown
    dies: int
    die_area_mm2: float
    dies_per_wafer: float
    yield_fraction: float
    die_usd: float
    memory_usd: float
    package_usd: float
    board_usd: float
    tdp_w: float
    tensor_power_w: float
    vector_power_w: float
    memory_power_w: float
    static_power_w: float

    @property
    def area_mm2(self) -> float:
        """Silicon area of all compute dies, mm^2."""
        return self.area.total_mm2

    @property
    def device_cost_usd(self) -> float:
        """Dies + memory + package + board, US$ (manufacturing cost, no margin, no NRE)."""
        return self.die_usd + self.memory_usd + self.package_usd + self.board_usd

    def to_dict(self) -> dict[str, object]:
        """JSON-ready values, with the totals."""
        values: dict[str, object] = asdict(self)
        values["area"] = self.area.to_dict()
        values["area_mm2"] = self.area_mm2
        values["device_cost_usd"] = self.device_cost_usd
        return values


def design_area(
    design: AcceleratorDesign, constants: DesignConstants | None = None
) -> AreaBreakdown:
    """Area of ``design`` by component (module doc), mm^2."""
    c = constants or design_constants()
    node = process_node(design.node)
    density = node.logic_mtr_per_mm2 * 1e6  # transistors per mm^2
    clock_hz = design.clock_ghz * 1e9
    tensor_per_cycle = design.tensor_tflops * 1e12 / clock_hz
    vector_per_cycle = design.vector_tflops * 1e12 / clock_hz
    tech = memory_technology(design.memory.technology)
    sram_bits = design.sram_mb * 1e6 * 8
    link_phy = 0.0
    link_control = 0.0
    for link, count in design.links.items():
        link_tech = link_technology(link)
        link_phy += count * link_tech.phy_mm2
        link_control += count * link_tech.controller_mtr * 1e6 / density
    k = c.layout_factor
    return AreaBreakdown(
        tensor_mm2=k * c.tensor_transistors_per_flop_per_cycle * tensor_per_cycle / density,
        vector_mm2=k * c.vector_transistors_per_flop_per_cycle * vector_per_cycle / density,
        graphics_mm2=(
            k * c.graphics_transistors_per_flop_per_cycle * vector_per_cycle / density
            if design.graphics
            else 0.0
        ),
        sram_mm2=k * sram_bits * node.sram_bitcell_um2 * 1e-6 / c.sram_array_efficiency,
        memory_phy_mm2=k * design.memory.units * tech.phy_mm2,
        memory_controller_mm2=k * design.memory.units * tech.controller_mtr * 1e6 / density,
        link_mm2=k * (link_phy + link_control),
        other_mm2=c.other_mm2_per_die * design.dies,
    )


def design_power(
    design: AcceleratorDesign, area_mm2: float, constants: DesignConstants | None = None
) -> tuple[float, float, float, float]:
    """(tensor, vector, memory, static) power at peak, W (module doc)."""
    c = constants or design_constants()
    node = process_node(design.node)
    tech = memory_technology(design.memory.technology)
    # Dynamic energy per operation ~ V^2, and V rises about linearly with the clock near
    # the top of the DVFS range: energy per FLOP x (clock / reference clock)^exponent.
    scale = (
        node.energy_scale * (design.clock_ghz / c.reference_clock_ghz) ** c.clock_energy_exponent
    )
    tensor = c.pj_per_tensor_flop_n7 * 1e-12 * scale * design.tensor_tflops * 1e12
    vector = c.pj_per_vector_flop_n7 * 1e-12 * scale * design.vector_tflops * 1e12
    memory = (
        c.dram_traffic_multiplier
        * tech.pj_per_bit
        * 1e-12
        * design.memory.bandwidth_bytes_per_s
        * 8
    )
    static = c.static_w_per_mm2 * area_mm2
    return tensor, vector, memory, static


def design_cost(design: AcceleratorDesign, constants: DesignConstants | None = None) -> DesignCost:
    """Area, yield, cost and TDP of ``design``; a die beyond the reticle is an error."""
    c = constants or design_constants()
    node = process_node(design.node)
    area = design_area(design, c)
    per_die = area.total_mm2 / design.dies
    if per_die > c.reticle_mm2:
        raise InputError(
            f"die area {per_die:.0f} mm^2 per die exceeds the {c.reticle_mm2:g} mm^2 reticle "
            f"limit; reduce compute_tflops or sram_mb, or raise dies (now {design.dies})"
        )
    gross = dies_per_wafer(per_die, c.wafer_diameter_mm)
    good = die_yield(per_die, node.defect_density_per_cm2, c.yield_model, c.cluster_alpha)
    die_usd = design.dies * node.wafer_usd / (gross * good)
    tech = memory_technology(design.memory.technology)
    memory_usd = design.memory.capacity_bytes / 1e9 * tech.usd_per_gb
    package_usd = c.substrate_usd + c.assembly_usd
    if tech.interposer:
        interposer_mm2 = c.interposer_margin * (
            area.total_mm2 + design.memory.units * tech.footprint_mm2
        )
        # An interposer larger than the reticle is stitched; priced by area all the same.
        package_usd += (
            c.interposer_wafer_usd * interposer_mm2 / (math.pi * (c.wafer_diameter_mm / 2) ** 2)
        )
    tensor_w, vector_w, memory_w, static_w = design_power(design, area.total_mm2, c)
    tdp = tensor_w + vector_w + memory_w + static_w
    return DesignCost(
        area=area,
        dies=design.dies,
        die_area_mm2=per_die,
        dies_per_wafer=gross,
        yield_fraction=good,
        die_usd=die_usd,
        memory_usd=memory_usd,
        package_usd=package_usd,
        board_usd=c.board_base_usd + c.board_usd_per_w * tdp,
        tdp_w=tdp,
        tensor_power_w=tensor_w,
        vector_power_w=vector_w,
        memory_power_w=memory_w,
        static_power_w=static_w,
    )


def design_platform(design: AcceleratorDesign, cost: DesignCost | None = None) -> Platform:
    """The `Platform` of ``design``: its peaks and memory, links (scale-up: the non-PCIe
    links; scale-out between nodes: the PCIe lanes, the NIC's path), efficiencies, the
    modelled TDP as ``power_w`` with an activity `PowerModel` that reaches it at peak
    (idle = static power), and the modelled device cost as ``price_usd``."""
    cost = cost or design_cost(design)
    peaks = {dtype: float(tflops) * 1e12 for dtype, tflops in design.compute_tflops.items()}
    if "fp32" not in peaks and design.vector_tflops > 0:
        peaks["fp32"] = design.vector_tflops * 1e12
    tech = memory_technology(design.memory.technology)
    memory = (
        MemoryLevel(tech.name, design.memory.bandwidth_bytes_per_s, design.memory.capacity_bytes),
    )
    interconnect = design.interconnect
    link_bw = design.link_bandwidth_bytes_per_s()
    if interconnect is None and link_bw > 0:
        # Off-node traffic leaves through the NIC on the PCIe lanes (none: the links).
        interconnect = Interconnect(
            link_bandwidth_bytes_per_s=link_bw,
            link_latency_s=design.link_latency_s,
            devices_per_node=design.devices_per_node,
            scaleout_bandwidth_bytes_per_s=design.pcie_bandwidth_bytes_per_s() or None,
        )
    tensor_w = cost.tensor_power_w
    node = process_node(design.node)
    multiplier = design_constants().dram_traffic_multiplier
    power_model = PowerModel(
        idle_w=cost.static_power_w,
        j_per_flop=tensor_w / (design.tensor_tflops * 1e12),
        j_per_byte=multiplier * tech.pj_per_bit * 8e-12,
        source=(
            "roofline.design: static W/mm^2 x area; tensor energy at "
            f"{node.name}; {tech.name} {tech.pj_per_bit:g} pJ/bit x {multiplier:.3g} on-die "
            "movement (data/hardware/design)"
        ),
    )
    return Platform(
        name=design.name,
        display_name=f"{design.name} (design: {design.tensor_tflops:g} TFLOP/s 16-bit, "
        f"{design.memory.units} x {tech.name}, {design.sram_mb:g} MB SRAM, {node.name})",
        peak_flops_per_s=peaks,
        memory=memory,
        interconnect=interconnect,
        efficiency=design.efficiency,
        kernel_overhead_s=design.kernel_overhead_s,
        power_w=cost.tdp_w,
        power_model=power_model,
        price_usd=cost.device_cost_usd,
        kind=design.kind,
        vendor=design.vendor,
        source="roofline.design parametric accelerator; constants in data/hardware/design/",
    )
