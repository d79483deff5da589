"""The cheapest accelerator design that meets service-level objectives.

`cheapest_design(model, scenario, slo, designs, objective=...)` evaluates a parametric
design space (`search.sizing.design_space`) at every mesh and returns the design and
mesh that meet every SLO at the least

- ``'device-cost'``: hardware cost of the deployment, US$ = devices (all replicas)
  x modelled device cost; or
- ``'usd-per-mtok'``: US$ per million output tokens, device cost amortised over the
  lifetime plus electricity at TDP (devices x hourly / throughput).

A row is feasible when the footprint fits the design's memory, TTFT and TPOT are
within their ceilings and, for a throughput floor, ``ceil(floor / replica
throughput)`` data-parallel replicas stay within ``max_devices``. The answer names the
constraint that binds (the one the next cheaper candidate fails; counts of every
cheaper candidate's failures beside) and the runner-up (the best feasible row of
another design: different compute, memory or node). When no row is feasible, `InputError` names the best value any design
achieves for the first objective none meets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from genz import ModelConfig, Scenario
from roofline import AcceleratorDesign, DesignCost, InputError

from .design_space import SpaceTable, evaluate_space
from .slo import ServiceLevel, format_bytes, format_seconds

OBJECTIVES = ("device-cost", "usd-per-mtok")
CONSTRAINTS = ("capacity", "ttft", "tpot", "throughput")


@dataclass(frozen=True)
class DesignChoice:
    """One design at one mesh: speed, cost and the SLO margins (SI units, US$).

    ``devices`` counts every replica (``tp x pp x ep x dp``);
    ``throughput_tokens_per_s`` is over all replicas; ``hardware_cost_usd`` = devices x
    ``cost.device_cost_usd``; ``usd_per_million_output_tokens`` amortises and powers
    them (module doc).
    """

    design: AcceleratorDesign
    cost: DesignCost
    tp: int
    pp: int
    ep: int
    dp: int
    ttft_s: float
    tpot_s: float
    throughput_tokens_per_s: float
    footprint_bytes: float
    capacity_bytes: float
    prefill_bound: str
    decode_bound: str
    hourly_usd_per_device: float
    usd_per_million_output_tokens: float

    @property
    def devices(self) -> int:
        """Devices of all replicas."""
        return self.tp * self.pp * self.ep * self.dp

    @property
    def hardware_cost_usd(self) -> float:
        """Devices x modelled device cost, US$."""
        return self.devices * self.cost.device_cost_usd

    @property
    def mesh(self) -> str:
        """``'tp4 pp1 ep1 dp2'``."""
        return f"tp{self.tp} pp{self.pp} ep{self.ep} dp{self.dp}"

    def to_dict(self) -> dict[str, object]:
        """JSON-ready values with the design's cost breakdown."""
        design = self.design
        return {
            "name": design.name,
            "compute_tflops_bf16": design.tensor_tflops,
            "memory_technology": design.memory.technology,
            "memory_units": design.memory.units,
            "memory_bandwidth_bytes_per_s": design.memory.bandwidth_bytes_per_s,
            "memory_capacity_bytes": design.memory.capacity_bytes,
            "sram_mb": design.sram_mb,
            "node": design.node,
            "links": dict(design.links),
            "tp": self.tp,
            "pp": self.pp,
            "ep": self.ep,
            "dp": self.dp,
            "devices": self.devices,
            "ttft_s": self.ttft_s,
            "tpot_s": self.tpot_s,
            "throughput_tokens_per_s": self.throughput_tokens_per_s,
            "footprint_bytes_per_device": self.footprint_bytes,
            "capacity_bytes_per_device": self.capacity_bytes,
            "prefill_bound": self.prefill_bound,
            "decode_bound": self.decode_bound,
            "device_cost_usd": self.cost.device_cost_usd,
            "hardware_cost_usd": self.hardware_cost_usd,
            "hourly_usd_per_device": self.hourly_usd_per_device,
            "usd_per_million_output_tokens": self.usd_per_million_output_tokens,
            "cost": self.cost.to_dict(),
        }


@dataclass(frozen=True)
class CheapestDesign:
    """The answer of `cheapest_design`.

    ``binding`` is the constraint the next cheaper candidate fails (``'none'`` when the
    answer is the cheapest row of the space), ``binding_detail`` its value there and
    ``binding_bound`` the bound of the phase that sets it at the answer; ``rejected``
    counts, per constraint, the cheaper candidates that fail it (one candidate may fail
    several). ``candidates`` is the number of (design, mesh) rows evaluated.
    """

    objective: str
    best: DesignChoice
    runner_up: DesignChoice | None
    binding: str
    binding_detail: str
    binding_bound: str
    rejected: dict[str, int]
    designs: int
    candidates: int

    @property
    def message(self) -> str:
        """One line: the answer and what binds."""
        value = objective_text(self.objective, self.best)
        if self.binding == "none":
            why = "no constraint binds (the cheapest candidate of the space meets every SLO)"
        else:
            why = (
                f"{self.binding} binds ({self.binding_bound}-bound): the next cheaper "
                f"candidate gives {self.binding_detail}"
            )
        return f"{self.best.design.name} ({self.best.mesh}) at {value}; {why}"

    def to_dict(self) -> dict[str, object]:
        """JSON-ready summary."""
        return {
            "objective": self.objective,
            "best": self.best.to_dict(),
            "runner_up": None if self.runner_up is None else self.runner_up.to_dict(),
            "binding": self.binding,
            "binding_detail": self.binding_detail,
            "binding_bound": self.binding_bound,
            "rejected": self.rejected,
            "designs": self.designs,
            "candidates": self.candidates,
            "message": self.message,
        }


def objective_text(objective: str, choice: DesignChoice) -> str:
    """``'US$41,200 hardware'`` or ``'US$0.52 per Mtok'``."""
    if objective == "device-cost":
        return f"US${choice.hardware_cost_usd:,.0f} of hardware"
    return f"US${choice.usd_per_million_output_tokens:.4g} per million output tokens"


def slo_failures(table: SpaceTable, slo: ServiceLevel, max_devices: int) -> dict[str, NDArray]:
    """Per constraint, the rows that fail it, and ``replicas`` (DP for the floor)."""
    throughput = table.throughput_tokens_per_s
    floor = slo.min_throughput_tokens_per_s
    replicas = (
        np.ones(len(table), np.int64)
        if floor is None
        else np.maximum(1, np.ceil(floor / throughput - 1e-12)).astype(np.int64)
    )
    never = np.zeros(len(table), bool)
    return {
        "capacity": ~table.fits,
        "ttft": never if slo.max_ttft_s is None else table.ttft_s > slo.max_ttft_s,
        "tpot": never if slo.max_tpot_s is None else table.tpot_s > slo.max_tpot_s,
        "throughput": replicas * table.devices > max_devices,
        "replicas": replicas,
    }


def objective_values(table: SpaceTable, replicas: NDArray, objective: str) -> NDArray:
    """The objective of every row (module doc)."""
    if objective not in OBJECTIVES:
        raise InputError(f"objective must be one of {', '.join(OBJECTIVES)}; got {objective!r}")
    if objective == "device-cost":
        return (replicas * table.devices * table.device_cost_usd).astype(float)
    return usd_per_mtok(table)


def usd_per_mtok(table: SpaceTable) -> NDArray:
    """US$ per million output tokens of every row: devices x hourly / 3600 / tok/s x 1e6."""
    return table.devices * table.hourly_usd / 3600 / table.throughput_tokens_per_s * 1e6


def choice(table: SpaceTable, row: int, dp: int = 1) -> DesignChoice:
    """Row ``row`` of ``table`` as a `DesignChoice` with ``dp`` replicas."""
    index = int(table.design[row])
    return DesignChoice(
        design=table.designs[index],
        cost=table.costs[index],
        tp=int(table.tp[row]),
        pp=int(table.pp[row]),
        ep=int(table.ep[row]),
        dp=int(dp),
        ttft_s=float(table.ttft_s[row]),
        tpot_s=float(table.tpot_s[row]),
        throughput_tokens_per_s=float(table.throughput_tokens_per_s[row]) * dp,
        footprint_bytes=float(table.footprint_bytes[row]),
        capacity_bytes=float(table.capacity_bytes[row]),
        prefill_bound=str(table.prefill_bound[row]),
        decode_bound=str(table.decode_bound[row]),
        hourly_usd_per_device=float(table.hourly_usd[row]),
        usd_per_million_output_tokens=float(usd_per_mtok(table)[row]),
    )


def cheapest_design(
    model: ModelConfig,
    scenario: Scenario,
    slo: ServiceLevel,
    designs: list[AcceleratorDesign],
    *,
    objective: str = "device-cost",
    max_devices: int = 64,
    lifetime_years: float = 4.0,
    electricity_usd_per_kwh: float = 0.10,
    table: SpaceTable | None = None,
) -> CheapestDesign:
    """The design and mesh of least ``objective`` meeting ``slo`` (module doc).

    ``table`` reuses an evaluated space (`evaluate_space` of the same arguments).
    """
    if objective not in OBJECTIVES:
        raise InputError(f"objective must be one of {', '.join(OBJECTIVES)}; got {objective!r}")
    if table is None:
        table = evaluate_space(
            model,
            scenario,
            designs,
            max_devices=max_devices,
            lifetime_years=lifetime_years,
            electricity_usd_per_kwh=electricity_usd_per_kwh,
        )
    failures = slo_failures(table, slo, max_devices)
    replicas = failures["replicas"]
    failed = np.zeros(len(table), bool)
    for name in CONSTRAINTS:
        failed |= failures[name]
    values = objective_values(table, replicas, objective)
    secondary = objective_values(table, replicas, OBJECTIVES[1 - OBJECTIVES.index(objective)])
    if failed.all():
        raise InputError(infeasible_message(table, slo, failures, max_devices, scenario.batch))
    order = np.lexsort((secondary, values))
    feasible_order = order[~failed[order]]
    best_row = int(feasible_order[0])
    best = choice(table, best_row, int(replicas[best_row]))
    key = design_key(best.design)
    others = [r for r in feasible_order if design_key(table.designs[table.design[r]]) != key]
    runner_up = None if not others else choice(table, int(others[0]), int(replicas[others[0]]))
    cheaper = order[: int(np.nonzero(order == best_row)[0][0])]
    cheaper = cheaper[values[cheaper] < values[best_row]]
    rejected = {name: int(failures[name][cheaper].sum()) for name in CONSTRAINTS}
    binding, detail, bound = "none", "", "none"
    if len(cheaper):
        nearest = int(cheaper[-1])
        binding = next(name for name in CONSTRAINTS if failures[name][nearest])
        detail = _failure_detail(table, nearest, binding, slo, int(replicas[nearest]))
        bound = _phase_bound(best, binding)
    return CheapestDesign(
        objective=objective,
        best=best,
        runner_up=runner_up,
        binding=binding,
        binding_detail=detail,
        binding_bound=bound,
        rejected=rejected,
        designs=len(table.designs),
        candidates=len(table),
    )


def design_key(design: AcceleratorDesign) -> tuple[object, ...]:
    """What makes a different design for the runner-up: compute, memory and node
    (SRAM and links alone leave the same part with a different bill)."""
    memory = design.memory
    return (
        design.tensor_tflops,
        memory.technology,
        memory.units,
        memory.capacity_bytes,
        design.node,
    )


def _phase_bound(best: DesignChoice, constraint: str) -> str:
    if constraint == "capacity":
        return "capacity"
    if constraint == "ttft":
        return best.prefill_bound
    if constraint == "tpot":
        return best.decode_bound
    return best.decode_bound if best.tpot_s * 2 > best.ttft_s else best.prefill_bound


def _failure_detail(
    table: SpaceTable, row: int, constraint: str, slo: ServiceLevel, replicas: int
) -> str:
    name = f"{table.designs[int(table.design[row])].name} (tp{table.tp[row]} pp{table.pp[row]})"
    if constraint == "capacity":
        return (
            f"footprint {format_bytes(table.footprint_bytes[row])} > "
            f"{format_bytes(table.capacity_bytes[row])} per device on {name}"
        )
    if constraint == "ttft":
        return (
            f"TTFT {format_seconds(table.ttft_s[row])} > {format_seconds(slo.max_ttft_s)} on {name}"  # type: ignore[arg-type]
        )
    if constraint == "tpot":
        return (
            f"TPOT {format_seconds(table.tpot_s[row])} > {format_seconds(slo.max_tpot_s)} on {name}"  # type: ignore[arg-type]
        )
    return (
        f"{replicas} replicas x {table.devices[row]} devices for the throughput floor on "
        f"{name}, beyond the device cap"
    )


def infeasible_message(
    table: SpaceTable,
    slo: ServiceLevel,
    failures: dict[str, NDArray],
    max_devices: int,
    batch: int = 1,
) -> str:
    """One line: the first objective no design meets and the best value achieved."""
    fits = table.fits
    if not fits.any():
        row = int(np.argmax(table.capacity_bytes / table.footprint_bytes))
        return (
            "no design of the space holds the model: the closest, "
            f"{table.designs[int(table.design[row])].name}, needs "
            f"{format_bytes(table.footprint_bytes[row])} per device and has "
            f"{format_bytes(table.capacity_bytes[row])}; add memory units or --max-devices"
        )
    for name, limit, values in (
        ("max_ttft_s", slo.max_ttft_s, table.ttft_s),
        ("max_tpot_ms", None if slo.max_tpot_s is None else slo.max_tpot_s, table.tpot_s),
    ):
        if limit is None:
            continue
        best = float(values[fits].min())
        if best > limit:
            shown = f"{limit:.4g} s" if name == "max_ttft_s" else f"{limit * 1e3:.4g} ms"
            note = (
                f" (TTFT prefills the batch's {batch} prompts together)"
                if name == "max_ttft_s" and batch > 1
                else ""
            )
            return (
                f"--{name.replace('_', '-')} {shown} cannot be met by any design of the space: "
                f"the best achievable is {format_seconds(best)}{note}"
            )
    floor = slo.min_throughput_tokens_per_s
    latency_ok = fits & ~failures["ttft"] & ~failures["tpot"]
    if floor is not None and latency_ok.any():
        per_device = table.throughput_tokens_per_s[latency_ok] / table.devices[latency_ok]
        best_rate = float(per_device.max()) * max_devices
        return (
            f"--min-throughput {floor:.4g} tok/s cannot be met within {max_devices} devices: "
            f"the best achievable is {best_rate:.4g} tok/s (raise --max-devices)"
        )
    worst = np.full(len(table), math.inf)
    if slo.max_ttft_s is not None and slo.max_tpot_s is not None:
        worst = np.maximum(table.ttft_s / slo.max_ttft_s, table.tpot_s / slo.max_tpot_s)
    row = int(np.argmin(np.where(fits, worst, math.inf)))
    return (
        "no design of the space meets TTFT and TPOT together: the closest, "
        f"{table.designs[int(table.design[row])].name}, gives TTFT "
        f"{format_seconds(table.ttft_s[row])} and TPOT {format_seconds(table.tpot_s[row])}"
    )
