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

from genz import ModelConfig, Parallelism, Scenario, predict
from roofline import InputError, Platform, derive_platform
from search.economics import CostModel

from .mesh import search_devices
from .requirement import (
    AXES,
    RESOURCE_OF,
    SCALE_FIELDS,
    STATUS_AXIS_LIMIT,
    STATUS_FOUND,
    STATUS_NO_MESH,
    UNLIMITED_SCALE,
    Requirement,
    make_requirement,
    unlimited_resources,
)
from .scale_search import scale_search, scaled_platform
from .slo import ServiceLevel, format_seconds

__all__ = [
    "AXES",
    "METHODS",
    "OTHERS",
    "RESOURCE_OF",
    "SCALE_FIELDS",
    "STATUS_AXIS_LIMIT",
    "STATUS_FOUND",
    "STATUS_NO_MESH",
    "UNLIMITED_SCALE",
    "Requirement",
    "ServiceLevel",
    "check_attainable",
    "find_requirement",
    "scaled_platform",
    "unlimited_resources",
]

METHODS = ("devices", *AXES)
#: What the resources outside the searched axis are: the preset's, or unlimited.
OTHERS = ("base", "unlimited")


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
        return make_requirement(
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
    return scale_search(model, base, scenario, slo, method, others, cost_model, max_scale, rtol)


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
