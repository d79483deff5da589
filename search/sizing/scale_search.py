"""Scale searches of a platform requirement: the least scale of one resource (or of
bandwidth, compute and capacity together) of a base platform meeting every SLO, by
bracketing and bisection on ``log(scale)`` (feasibility is monotone in every scale)."""

from __future__ import annotations

from collections.abc import Callable

from genz import ModelConfig, Prediction, Scenario, predict
from roofline import Platform, derive_platform
from search.economics import CostModel

from .requirement import (
    AXES,
    STATUS_AXIS_LIMIT,
    STATUS_FOUND,
    Requirement,
    make_requirement,
    mesh_text,
)
from .slo import ServiceLevel, SloCheck, binding_of, check_slo, describe_checks


def scaled_platform(base: Platform, method: str, scale: float) -> Platform:
    """``base`` with the resource(s) of ``method`` multiplied by ``scale``."""
    if scale == 1.0:
        return base
    name = f"{base.name} ({method} x{scale:.4g})"
    return derive_platform(base, name=name, **{key: scale for key in AXES[method]})


def scale_search(
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
    """The least ``scale`` of ``method`` meeting ``slo`` (bracketed by doubling, then
    bisected on ``log(scale)`` to ``rtol``), or the best at ``max_scale``."""
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
            f"{mesh_text(scenario.parallelism)}; best at {max_scale:g}x: "
            f"{describe_checks(checks)}"
        )
        return make_requirement(
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
        f"{method}: {high:.4g}x {base.name}{note} with {mesh_text(scenario.parallelism)}; "
        f"{binding[0]} binds ({binding[1].value}-bound)"
    )
    return make_requirement(
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
