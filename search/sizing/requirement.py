"""The result of a platform-requirement search (`Requirement`) and the scale axes it is
searched along: which resource each method multiplies and which it holds unlimited."""

from __future__ import annotations

from dataclasses import dataclass

from genz import Parallelism, Prediction, Scenario
from roofline import Bound, Platform
from search.economics import CostModel, Economics

from .slo import ServiceLevel, SloCheck, check_slo

AXES: dict[str, tuple[str, ...]] = {
    "bandwidth": ("memory_bandwidth_scale",),
    "compute": ("compute_scale",),
    "capacity": ("memory_capacity_scale",),
    "link": ("link_bandwidth_scale",),
    "joint": ("memory_bandwidth_scale", "compute_scale", "memory_capacity_scale"),
}
SCALE_FIELDS = (
    "memory_bandwidth_scale",
    "compute_scale",
    "memory_capacity_scale",
    "link_bandwidth_scale",
)
#: Scale used to stand in for "unlimited" when finding the best achievable latency.
UNLIMITED_SCALE = 1e6
#: The resource each scale field multiplies, as rows and messages name it.
RESOURCE_OF = {
    "compute_scale": "compute",
    "memory_bandwidth_scale": "bandwidth",
    "memory_capacity_scale": "capacity",
    "link_bandwidth_scale": "link",
}

STATUS_FOUND = 0
STATUS_AXIS_LIMIT = 1
STATUS_NO_MESH = 2


@dataclass(frozen=True)
class Requirement:
    """The least platform found by one method, or the closest one when none meets the SLO.

    ``scale`` multiplies the base resource(s) of the method (None for
    ``'devices'``); ``platform`` is the scaled device and ``scenario`` carries the
    mesh; ``prediction`` and ``checks`` are at that platform and mesh.
    ``binding_slo`` is one of ``'ttft'``, ``'tpot'``, ``'throughput'``,
    ``'capacity'``; ``binding_bound`` the resource that sets it. ``economics``
    prices a scaled device like the base one (same power and price); with
    ``others='unlimited'`` it is not meaningful. ``at_search_floor`` is True when
    even ``1 / max_scale`` meets the SLO: ``scale`` is then the search's floor, an
    upper bound on the requirement, not the requirement (the resource does not bind).
    """

    method: str
    others: str
    success: bool
    status: int
    message: str
    scale: float | None
    platform: Platform
    scenario: Scenario
    prediction: Prediction
    checks: tuple[SloCheck, ...]
    binding_slo: str
    binding_bound: Bound
    economics: Economics
    evaluations: int
    at_search_floor: bool = False

    @property
    def devices(self) -> int:
        """Devices of the mesh (all replicas)."""
        return self.scenario.parallelism.devices

    @property
    def unlimited_resources(self) -> tuple[str, ...]:
        """Resources held unlimited while this one was searched (``others='unlimited'``)."""
        if self.others != "unlimited" or self.method == "devices":
            return ()
        return unlimited_resources(self.method)

    def to_dict(self) -> dict[str, object]:
        """Summary in SI units (JSON-ready)."""
        mesh = self.scenario.parallelism
        memory = self.platform.main_memory
        return {
            "method": self.method,
            "others": self.others,
            "success": self.success,
            "status": self.status,
            "message": self.message,
            "scale": self.scale,
            "platform": self.platform.name,
            "devices": self.devices,
            "tp": mesh.tp,
            "pp": mesh.pp,
            "ep": mesh.ep,
            "dp": mesh.dp,
            "memory_bandwidth_bytes_per_s": memory.bandwidth_bytes_per_s,
            "memory_capacity_bytes": memory.capacity_bytes,
            "peak_flops_per_s": dict(self.platform.peak_flops_per_s),
            "at_search_floor": self.at_search_floor,
            "unlimited_resources": list(self.unlimited_resources),
            "binding_slo": self.binding_slo,
            "binding_bound": self.binding_bound.value,
            "checks": [check.to_dict() for check in self.checks],
            "prediction": self.prediction.to_dict(),
            "economics": self.economics.to_dict(),
            "evaluations": self.evaluations,
        }


def unlimited_resources(method: str) -> tuple[str, ...]:
    """Resources outside the axes of scale ``method``: unlimited with ``others='unlimited'``."""
    return tuple(RESOURCE_OF[key] for key in SCALE_FIELDS if key not in AXES[method])


def make_requirement(
    method: str,
    others: str,
    status: int,
    message: str,
    scale: float | None,
    platform: Platform,
    prediction: Prediction,
    slo: ServiceLevel,
    binding: tuple[str, Bound],
    cost_model: CostModel,
    evaluations: int,
    *,
    at_search_floor: bool = False,
) -> Requirement:
    """The `Requirement` of one search outcome (checks and economics at ``platform``)."""
    return Requirement(
        method=method,
        others=others,
        success=status == STATUS_FOUND,
        status=status,
        message=message,
        scale=scale,
        platform=platform,
        scenario=prediction.scenario,
        prediction=prediction,
        checks=check_slo(prediction, slo),
        binding_slo=binding[0],
        binding_bound=binding[1],
        economics=cost_model.evaluate(prediction, platform),
        evaluations=evaluations,
        at_search_floor=at_search_floor,
    )


def mesh_text(mesh: Parallelism) -> str:
    """``'8 device(s) (tp8 pp1 ep1 dp1)'`` for messages."""
    return f"{mesh.devices} device(s) (tp{mesh.tp} pp{mesh.pp} ep{mesh.ep} dp{mesh.dp})"
