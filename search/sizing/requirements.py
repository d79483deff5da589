"""Platform requirements for service-level objectives: the least platform that meets them.

One entry point, `find_requirement(model, base, scenario, slo, method=...)`:

- ``'bandwidth'``, ``'compute'``, ``'capacity'``, ``'link'``: the least scale of one
  resource of ``base`` meeting every SLO at the mesh of ``scenario``, the other
  resources as the preset (``others='base'``) or unlimited (``others='unlimited'``:
  a lower bound on that resource), by bisection on ``log(scale)`` with
  ``roofline.derive_platform``. Latency falls and capacity grows monotonically
  with every scale, so feasibility is monotone and the answer is tight to
  ``rtol`` (the platform ``1 + rtol`` weaker fails).
- ``'joint'``: the least common scale of bandwidth, compute and capacity (a ray).
- ``'devices'``: the fewest devices of ``base`` (TP up to a node, then PP; EP for
  MoE; DP replicas for a throughput floor) meeting every SLO; see
  `search.sizing.mesh`.

The result names the binding SLO (the one that fails just below the answer) and
the binding resource: the bound of the phase that sets that SLO (prefill for
TTFT, decode for TPOT, the longer of the two for throughput; capacity for the
capacity wall). SLOs below what unlimited compute, bandwidth and capacity give
(kernel overheads remain) raise `InputError` with the best achievable figure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from genz import ModelConfig, Parallelism, Prediction, Scenario, predict
from roofline import Bound, InputError, Platform, derive_platform
from search.economics import CostModel, Economics

from .mesh import search_devices
from .slo import (
    ServiceLevel,
    SloCheck,
    binding_of,
    check_slo,
    describe_checks,
    format_seconds,
)

AXES: dict[str, tuple[str, ...]] = {
    "bandwidth": ("memory_bandwidth_scale",),
    "compute": ("compute_scale",),
    "capacity": ("memory_capacity_scale",),
    "link": ("link_bandwidth_scale",),
    "joint": ("memory_bandwidth_scale", "compute_scale", "memory_capacity_scale"),
}
METHODS = ("devices", *AXES)
#: What the resources outside the searched axis are: the preset's, or unlimited.
OTHERS = ("base", "unlimited")
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


def find_requirement(
    model: ModelConfig,
    base: Platform,
    scenario: Scenario,
    slo: ServiceLevel,
    method: str = "devices",
    *,
    others: str = "base",
    objective: str = "devices",
    cost_model: CostModel | None = None,
    max_scale: float = 1024.0,
    rtol: float = 0.005,
    max_devices: int = 256,
) -> Requirement:
    """The least platform of ``method`` meeting ``slo`` for ``model`` serving ``scenario``.

    Parameters
    ----------
    scenario
        Tokens, precision and ``batch`` (concurrent requests per replica); its
        mesh is used by the scale methods and replaced by ``'devices'``.
    method
        One of `METHODS`.
    others
        Resources outside the searched axis: ``'base'`` (as the preset: the
        least platform of that shape) or ``'unlimited'`` (the lower bound on the
        searched resource whatever the others are). Scale methods only.
    objective
        ``'devices'`` (fewest), ``'cost'`` (least US$ per million output tokens) or
        ``'energy'`` (least J per output token): the choice among meshes that meet
        the SLO (``'devices'`` method only).
    max_scale
        Scales are searched in ``[1 / max_scale, max_scale]``.
    rtol
        Relative tightness of the bisection: the answer ``s`` meets the SLO and
        ``s / (1 + rtol)`` does not.
    """
    if method not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    if others not in OTHERS:
        raise InputError(f"others must be one of {', '.join(OTHERS)}; got {others!r}")
    if not 1.0 < max_scale <= 1e5:
        raise InputError(f"max_scale must be in (1, 1e5], got {max_scale!r}")
    if not 0.0 < rtol <= 0.1:
        raise InputError(f"rtol must be in (0, 0.1], got {rtol!r}")
    if method == "link" and base.interconnect is None:
        raise InputError(f"method 'link' needs an interconnect; {base.name} has none")
    cost_model = cost_model or CostModel()
    devices = max_devices if method == "devices" else scenario.parallelism.devices
    check_attainable(model, base, scenario, slo, devices=devices)
    if method == "devices":
        found = search_devices(
            model,
            base,
            scenario,
            slo,
            objective=objective,
            max_devices=max_devices,
            cost_model=cost_model,
        )
        return _requirement(
            "devices",
            "base",
            found.status,
            found.message,
            None,
            base,
            found.prediction,
            slo,
            found.binding,
            cost_model,
            found.evaluations,
        )
    if others == "unlimited":
        base = derive_platform(
            base,
            name=f"{base.name} (unlimited {', '.join(unlimited_resources(method))})",
            **{key: UNLIMITED_SCALE for key in SCALE_FIELDS if key not in AXES[method]},
        )
    return _scale_search(model, base, scenario, slo, method, others, cost_model, max_scale, rtol)


def unlimited_resources(method: str) -> tuple[str, ...]:
    """Resources outside the axes of scale ``method``: unlimited with ``others='unlimited'``."""
    return tuple(RESOURCE_OF[key] for key in SCALE_FIELDS if key not in AXES[method])


def scaled_platform(base: Platform, method: str, scale: float) -> Platform:
    """``base`` with the resource(s) of ``method`` multiplied by ``scale``."""
    if scale == 1.0:
        return base
    name = f"{base.name} ({method} x{scale:.4g})"
    return derive_platform(base, name=name, **{key: scale for key in AXES[method]})


def _scale_search(
    model: ModelConfig,
    base: Platform,
    scenario: Scenario,
    slo: ServiceLevel,
    method: str,
    others: str,
    cost_model: CostModel,
    max_scale: float,
    rtol: float,
) -> Requirement:
    cache: dict[float, tuple[Prediction, tuple[SloCheck, ...]]] = {}

    def evaluate(scale: float) -> tuple[Prediction, tuple[SloCheck, ...]]:
        if scale not in cache:
            prediction = predict(model, scaled_platform(base, method, scale), scenario)
            cache[scale] = (prediction, check_slo(prediction, slo))
        return cache[scale]

    def feasible(scale: float) -> bool:
        return all(check.ok for check in evaluate(scale)[1])

    low, high = _bracket(feasible, max_scale)
    if high is None:
        prediction, checks = evaluate(max_scale)
        what = "bandwidth, compute and capacity" if method == "joint" else method
        message = (
            f"{method}: not met at {max_scale:g}x {what} of {base.name} with "
            f"{_mesh_text(scenario.parallelism)}; best at {max_scale:g}x: "
            f"{describe_checks(checks)}"
        )
        return _requirement(
            method,
            others,
            STATUS_AXIS_LIMIT,
            message,
            max_scale,
            scaled_platform(base, method, max_scale),
            prediction,
            slo,
            binding_of(checks, prediction),
            cost_model,
            len(cache),
        )
    if low is not None:
        while high / low > 1.0 + rtol:
            middle = (low * high) ** 0.5
            if feasible(middle):
                high = middle
            else:
                low = middle
    prediction, checks = evaluate(high)
    if low is None:
        binding = binding_of(checks, prediction)
        note = f" (met even at the search floor 1/{max_scale:g}x)"
    else:
        binding = binding_of(evaluate(low)[1], prediction)
        note = ""
    message = (
        f"{method}: {high:.4g}x {base.name}{note} with {_mesh_text(scenario.parallelism)}; "
        f"{binding[0]} binds ({binding[1].value}-bound)"
    )
    return _requirement(
        method,
        others,
        STATUS_FOUND,
        message,
        high,
        scaled_platform(base, method, high),
        prediction,
        slo,
        binding,
        cost_model,
        len(cache),
        at_search_floor=low is None,
    )


def _bracket(
    feasible: Callable[[float], bool], max_scale: float
) -> tuple[float | None, float | None]:
    """(infeasible low, feasible high) scales by doubling / halving from 1.

    ``high`` is None when even ``max_scale`` fails; ``low`` is None when even
    ``1 / max_scale`` meets the SLO.
    """
    if feasible(1.0):
        high = 1.0
        while high > 1.0 / max_scale:
            low = max(high / 2.0, 1.0 / max_scale)
            if not feasible(low):
                return low, high
            high = low
        return None, high
    low = 1.0
    while low < max_scale:
        high = min(low * 2.0, max_scale)
        if feasible(high):
            return low, high
        low = high
    return low, None


def _requirement(
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


def _mesh_text(mesh: Parallelism) -> str:
    return f"{mesh.devices} device(s) (tp{mesh.tp} pp{mesh.pp} ep{mesh.ep} dp{mesh.dp})"


def check_attainable(
    model: ModelConfig, base: Platform, scenario: Scenario, slo: ServiceLevel, devices: int = 1
) -> None:
    """Raise `InputError` when an SLO is beyond what unlimited resources give.

    Unlimited compute, bandwidth, capacity and links on one device leave the
    per-kernel overheads: no mesh or scale can beat that floor on TTFT or TPOT.
    Throughput is bounded by ``devices`` such devices each serving its own replica
    (splitting a replica over devices only adds collectives and per-device overheads).
    """
    if (
        slo.max_ttft_s is None
        and slo.max_tpot_s is None
        and slo.min_throughput_tokens_per_s is None
    ):
        return
    unlimited = derive_platform(
        base,
        name=f"{base.name}-unlimited",
        compute_scale=UNLIMITED_SCALE,
        memory_bandwidth_scale=UNLIMITED_SCALE,
        memory_capacity_scale=UNLIMITED_SCALE,
        link_bandwidth_scale=UNLIMITED_SCALE,
    )
    single = dataclasses.replace(scenario, parallelism=Parallelism())
    floor = predict(model, unlimited, single)
    for label, limit, best in (
        ("max_ttft_s", slo.max_ttft_s, floor.ttft_s),
        ("max_tpot_s", slo.max_tpot_s, floor.tpot_s),
    ):
        if limit is not None and limit < best:
            raise InputError(
                f"{label} = {limit:.4g} s cannot be met by any number or scaling of "
                f"{base.name}: the best achievable is {format_seconds(best)} (kernel "
                "overheads remain with unlimited compute, bandwidth and capacity)"
            )
    floor_rate = slo.min_throughput_tokens_per_s
    best_rate = floor.throughput_tokens_per_s * devices
    if floor_rate is not None and floor_rate > best_rate:
        raise InputError(
            f"min_throughput_tokens_per_s = {floor_rate:.4g} tok/s cannot be met by {devices} x "
            f"{base.name} at any scaling: the best achievable is {best_rate:.4g} tok/s "
            f"({devices} replica(s) of one device with unlimited compute, bandwidth and "
            "capacity; kernel overheads remain)"
        )
