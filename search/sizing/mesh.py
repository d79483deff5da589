"""Fewest devices of one platform that meet the SLO: TP, then PP, EP for MoE, DP for throughput.

Candidate meshes: TP in powers of two up to ``devices_per_node`` (tensor parallelism
stays inside a node) that split the heads evenly (`genz.tensor_parallel_degrees`);
PP in powers of two (up to the layer count) only once TP is at that cap; EP in powers of two up to ``min(experts,
batch)`` for MoE models (EP also splits the batch, so each device keeps at least
one sequence). A platform without an interconnect is a single device. Each
mesh that meets the latency SLOs gets the fewest data-parallel replicas that
reach the throughput floor within ``max_devices``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from genz import ModelConfig, Parallelism, Prediction, Scenario, predict, tensor_parallel_degrees
from roofline import Bound, InputError, Platform
from search.economics import CostModel

from .slo import (
    ServiceLevel,
    SloCheck,
    binding_of,
    check_slo,
    describe_checks,
    phase_bound,
    worst,
)

OBJECTIVES = ("devices", "cost", "energy")


@dataclass(frozen=True)
class MeshSearch:
    """Outcome of `search_devices`: the chosen (or closest) prediction and why."""

    status: int
    message: str
    prediction: Prediction
    binding: tuple[str, Bound]
    evaluations: int


def mesh_candidates(
    model: ModelConfig, platform: Platform, batch: int, max_devices: int
) -> list[Parallelism]:
    """Meshes of one replica to try, fewest devices first (see module doc)."""
    link = platform.interconnect
    if link is None:
        return [Parallelism()]
    degrees = tensor_parallel_degrees(model)
    tps = [2**k for k in range(13) if 2**k <= link.devices_per_node and 2**k in degrees]
    pps = [2**k for k in range(13) if 2**k <= model.num_layers]
    eps = [2**k for k in range(13) if 2**k <= min(model.num_experts, batch)] or [1]
    meshes = [
        Parallelism(tp=tp, pp=pp, ep=ep)
        for tp in tps
        for pp in (pps if tp == tps[-1] else [1])
        for ep in eps
        if tp * pp * ep <= max_devices
    ]
    return sorted(meshes, key=lambda mesh: (mesh.devices, mesh.pp, mesh.ep))


def search_devices(
    model: ModelConfig,
    base: Platform,
    scenario: Scenario,
    slo: ServiceLevel,
    *,
    objective: str = "devices",
    max_devices: int = 256,
    cost_model: CostModel | None = None,
) -> MeshSearch:
    """The mesh of ``base`` devices meeting ``slo`` that is best for ``objective``.

    ``objective``: ``'devices'`` (fewest, then shortest request), ``'cost'`` (least
    US$ per million output tokens), ``'energy'`` (least J per output token).
    """
    if objective not in OBJECTIVES:
        raise InputError(f"objective must be one of {', '.join(OBJECTIVES)}; got {objective!r}")
    if isinstance(max_devices, bool) or not isinstance(max_devices, int) or max_devices < 1:
        raise InputError(f"max_devices must be an integer >= 1, got {max_devices!r}")
    if objective == "cost" and base.price_usd is None and base.price_usd_per_hour is None:
        raise InputError(f"objective 'cost' needs a price: {base.name} lists none")
    if objective == "energy" and base.power_w is None:
        raise InputError(f"objective 'energy' needs power_w: {base.name} lists none")
    cost_model = cost_model or CostModel()
    evaluated: list[tuple[Prediction, tuple[SloCheck, ...]]] = []
    for mesh in mesh_candidates(model, base, scenario.batch, max_devices):
        prediction = predict(model, base, dataclasses.replace(scenario, parallelism=mesh))
        checks = check_slo(prediction, slo)
        replicas = _replicas(prediction, checks, slo, max_devices // mesh.devices)
        if replicas > 1:
            replicated = dataclasses.replace(mesh, dp=replicas)
            prediction = predict(model, base, dataclasses.replace(scenario, parallelism=replicated))
            checks = check_slo(prediction, slo)
        evaluated.append((prediction, checks))
    feasible = [item for item in evaluated if all(check.ok for check in item[1])]
    if not feasible:
        prediction, checks = min(evaluated, key=lambda item: worst(item[1]).ratio)
        mesh = prediction.scenario.parallelism
        message = (
            f"devices: no mesh of up to {max_devices} x {base.name} meets {slo.describe()}; "
            f"closest {_mesh_label(mesh)}: {describe_checks(checks)}"
        )
        return MeshSearch(2, message, prediction, binding_of(checks, prediction), len(evaluated))
    chosen, chosen_checks = min(
        feasible, key=lambda item: _key(item[0], base, objective, cost_model)
    )
    mesh = chosen.scenario.parallelism
    devices = mesh.devices
    smaller = [item for item in evaluated if item[0].scenario.parallelism.devices < devices]
    smaller = [item for item in smaller if not all(check.ok for check in item[1])]
    if mesh.dp > 1:
        binding = ("throughput", phase_bound(chosen, "throughput"))
        fewer = chosen.throughput_tokens_per_s * (mesh.dp - 1) / mesh.dp
        because = f"; dp{mesh.dp - 1} gives throughput {fewer:.4g} tok/s"
    elif smaller:
        near, near_checks = min(smaller, key=lambda item: worst(item[1]).ratio)
        binding = binding_of(near_checks, chosen)
        because = (
            f"; {_mesh_label(near.scenario.parallelism)} gives {worst(near_checks).describe()}"
        )
    else:
        binding = binding_of(chosen_checks, chosen)
        because = ""
    message = (
        f"devices: {devices} x {base.name} ({_mesh_label(chosen.scenario.parallelism)}); "
        f"{binding[0]} binds ({binding[1].value}-bound){because}"
    )
    return MeshSearch(0, message, chosen, binding, len(evaluated))


def _replicas(
    prediction: Prediction, checks: tuple[SloCheck, ...], slo: ServiceLevel, most: int
) -> int:
    """Data-parallel replicas for the throughput floor (1 if latency already fails)."""
    floor = slo.min_throughput_tokens_per_s
    latency_ok = all(check.ok for check in checks if check.name != "throughput")
    if floor is None or not latency_ok:
        return 1
    needed = math.ceil(floor / prediction.throughput_tokens_per_s - 1e-12)
    return max(1, min(needed, most))


def _key(
    prediction: Prediction, platform: Platform, objective: str, cost_model: CostModel
) -> tuple[float, ...]:
    devices = float(prediction.scenario.parallelism.devices)
    if objective == "devices":
        return (devices, prediction.e2e_s)
    figures = cost_model.evaluate(prediction, platform)
    value = (
        figures.usd_per_million_output_tokens if objective == "cost" else figures.j_per_output_token
    )
    return (float("inf") if value is None else value, devices)


def _mesh_label(mesh: Parallelism) -> str:
    return f"tp{mesh.tp} pp{mesh.pp} ep{mesh.ep} dp{mesh.dp}"
