"""Evaluate design points: genz latency and memory, law loss, constraints.

A design point is a vector of indices, one per axis of the space (`AXIS_NAMES`
order). Points are evaluated architecture by architecture: for each distinct
architecture one genz `evaluate_grid` call per timing variant of the hardware
(preset x compute, bandwidth and link scale) covers every precision, mesh, batch
and token count at once as numpy arrays. The capacity scale does not change any
time, so it is folded in as a comparison of the footprint with the scaled capacity
(genz is called on a platform with unlimited capacity and the capacity wall is
applied here). Loss, constraints and feasibility are then vectorised over all the
points of a block.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from genz import evaluate_grid
from roofline import BOUND_ORDER, Bound, Platform, derive_platform
from scaling_law import ScalingLaw

from .designs import design_metrics
from .model import (
    LAYER_MIX_DIMENSION,
    architecture_fields,
    design_extrapolation,
    design_loss,
    design_training_seconds,
    design_unpriced,
    layer_mix_ratio,
    mesh_valid,
    model_config,
    training_cost_usd,
)
from .objectives import (
    WITHIN_DATA,
    WITHIN_PRICED,
    BoundSummary,
    Constraints,
    Objective,
    known_value_bounds,
    merge_summaries,
    summarise,
)
from .objectives import Bound as Limit
from .pareto import pareto_mask
from .space import (
    AXIS_NAMES,
    MESH_AXES,
    MODEL_AXES,
    PRECISION_AXES,
    SPACE_WORKLOAD_AXES,
    VARIANT_AXES,
    DesignSpace,
)

Array = NDArray[np.float64]
Points = NDArray[np.int32]
AXIS = {name: column for column, name in enumerate(AXIS_NAMES)}
MODEL_COLUMNS = [AXIS[name] for name in MODEL_AXES]
TIMING_COLUMNS = [
    AXIS[name] for name in ("preset", "compute_scale", "bandwidth_scale", "link_bandwidth_scale")
]
SCENARIO_AXES = (*PRECISION_AXES, *MESH_AXES, *SPACE_WORKLOAD_AXES, *VARIANT_AXES)
#: Axes whose combinations may be invalid points (dropped, not errors).
_DROPPING_AXES = ("tp", "pp", "ep", "parallel_samples", "beam_width")
SCENARIO_COLUMNS = [AXIS[name] for name in SCENARIO_AXES]
REST_AXES = tuple(name for name in AXIS_NAMES if name not in MODEL_AXES)
GENZ_METRICS = (
    "ttft_s",
    "tpot_s",
    "e2e_s",
    "throughput_tokens_per_s",
    "throughput_tokens_per_s_per_device",
    "weights_bytes",
    "kv_cache_bytes",
    "activation_bytes",
    "footprint_bytes",
)
#: Rows gathered before loss and constraints are applied and the infeasible dropped.
BLOCK_ROWS = 1 << 18
#: Capacity scale of the platform genz sees (the capacity wall is applied here).
UNLIMITED_CAPACITY = 1e9


@dataclass(frozen=True)
class Plan:
    """What every evaluation needs (picklable: Ray tasks receive it). ``forms``: the
    other validated laws whose spread the frontier reports."""

    space: DesignSpace
    law: ScalingLaw
    objectives: tuple[Objective, ...]
    constraints: Constraints
    keep: str = "feasible"
    forms: tuple[ScalingLaw, ...] = ()

    def bounds(self) -> tuple[Limit, ...]:
        """The constraints' bounds, plus the law's domain and its unpriced dimensions when
        ``law.within_data``."""
        extra = (WITHIN_DATA, WITHIN_PRICED) if self.space.law.within_data else ()
        return (*self.constraints.bounds(), *extra, *known_value_bounds(self.objectives))


@dataclass(frozen=True)
class Outcome:
    """Points kept (feasible, or only the chunk's frontier), their metrics, counts and
    the per-constraint summary that explains an infeasible space."""

    points: Points
    metrics: Mapping[str, NDArray]
    evaluated: int
    feasible: int
    summary: Mapping[str, BoundSummary]


def axis_values(space: DesignSpace) -> list[Array]:
    """Values of each axis as arrays, in `AXIS_NAMES` order."""
    return [np.asarray(values, float) for values in space.axes.values()]


def rest_points(space: DesignSpace) -> Points:
    """Product of the non-model axes (hardware, precision, mesh, workload) as index rows
    in `AXIS_NAMES` columns (model columns 0), meshes outside ``devices`` dropped."""
    sizes = [len(space.axes[name]) for name in REST_AXES]
    grids = np.indices(sizes, dtype=np.int32).reshape(len(sizes), -1).T
    points = np.zeros((len(grids), len(AXIS_NAMES)), np.int32)
    points[:, [AXIS[name] for name in REST_AXES]] = grids
    if space.hardware.devices is not None:
        values = axis_values(space)
        devices = np.prod([values[AXIS[n]][points[:, AXIS[n]]] for n in MESH_AXES], axis=0)
        points = points[np.isin(devices, space.hardware.devices)]
    return points


def architecture_index(space: DesignSpace) -> tuple[NDArray[np.int32], int]:
    """Model-axis index rows of every valid architecture of the grid, and how many
    combinations were dropped as invalid."""
    sizes = [len(space.axes[name]) for name in MODEL_AXES]
    index = np.indices(sizes, dtype=np.int32).reshape(len(sizes), -1).T
    _, valid = architecture_fields(space.model, index)
    return index[valid], int((~valid).sum())


def evaluate_grid_chunk(
    plan: Plan,
    architectures: NDArray[np.int32],
    rest: Points,
    on_architecture: Callable[[int], None] | None = None,
) -> Outcome:
    """Every point of the product ``architectures x rest`` (invalid meshes dropped)."""

    def blocks() -> Iterator[Points]:
        for row in architectures:
            points = rest.copy()
            points[:, MODEL_COLUMNS] = row
            yield points

    return _evaluate(plan, blocks(), on_architecture)


def evaluate_points(plan: Plan, points: Points) -> Outcome:
    """Arbitrary points (sampling): grouped by architecture, invalid ones dropped."""
    _, valid = architecture_fields(plan.space.model, points[:, MODEL_COLUMNS])
    points = points[valid]
    if len(points) == 0:
        return _evaluate(plan, iter(()), None)
    _, inverse = np.unique(points[:, MODEL_COLUMNS], axis=0, return_inverse=True)
    order = np.argsort(inverse.ravel(), kind="stable")
    groups = np.split(points[order], np.flatnonzero(np.diff(inverse.ravel()[order])) + 1)
    return _evaluate(plan, iter(groups), None)


def _evaluate(
    plan: Plan, groups: Iterator[Points], on_architecture: Callable[[int], None] | None
) -> Outcome:
    """Evaluate groups of points (one architecture each) block by block."""
    values = axis_values(plan.space)
    platforms: dict[tuple[int, ...], Platform] = {}
    kept: list[tuple[Points, dict[str, NDArray]]] = []
    summaries = []
    evaluated = feasible = 0
    pending: list[tuple[Points, dict[str, NDArray]]] = []
    pending_rows = 0
    for group in itertools.chain(groups, [None]):
        if group is not None:
            result = _evaluate_architecture(plan, values, platforms, group)
            if on_architecture is not None:
                on_architecture(len(result[0]))
            if len(result[0]):
                pending.append(result)
                pending_rows += len(result[0])
        if pending and (group is None or pending_rows >= BLOCK_ROWS):
            points = np.concatenate([p for p, _ in pending])
            raw = {k: np.concatenate([m[k] for _, m in pending]) for k in pending[0][1]}
            pending, pending_rows = [], 0
            mask, metrics, summary = _finish(plan, values, points, raw)
            evaluated += len(points)
            feasible += int(mask.sum())
            summaries.append(summary)
            kept.append((points[mask], {k: v[mask] for k, v in metrics.items()}))
    return _outcome(plan, kept, evaluated, feasible, merge_summaries(summaries))


def _outcome(
    plan: Plan,
    kept: list[tuple[Points, dict[str, NDArray]]],
    evaluated: int,
    feasible: int,
    summary: Mapping[str, BoundSummary],
) -> Outcome:
    if kept:
        points = np.concatenate([p for p, _ in kept])
        metrics = {k: np.concatenate([m[k] for _, m in kept]) for k in kept[0][1]}
    else:
        points = np.zeros((0, len(AXIS_NAMES)), np.int32)
        metrics = {}
    if plan.keep == "frontier" and len(points):
        mask = frontier_mask(plan.objectives, metrics)
        points, metrics = points[mask], {k: v[mask] for k, v in metrics.items()}
    return Outcome(points, metrics, evaluated, feasible, summary)


def frontier_mask(
    objectives: tuple[Objective, ...], metrics: Mapping[str, Any]
) -> NDArray[np.bool_]:
    """Non-dominated points of ``metrics`` over ``objectives``."""
    table = np.column_stack([np.asarray(metrics[o.column], float) for o in objectives])
    return pareto_mask(table, [o.sense for o in objectives])


def merge(plan: Plan, outcomes: list[Outcome]) -> Outcome:
    """Concatenate chunk outcomes (in order) into one."""
    kept = [(o.points, dict(o.metrics)) for o in outcomes if len(o.points)]
    return _outcome(
        plan,
        kept,
        sum(o.evaluated for o in outcomes),
        sum(o.feasible for o in outcomes),
        merge_summaries(o.summary for o in outcomes),
    )


def _evaluate_architecture(
    plan: Plan,
    values: list[Array],
    platforms: dict[tuple[int, ...], Platform],
    points: Points,
) -> tuple[Points, dict[str, NDArray]]:
    """genz metrics of the points of one architecture (points with meshes the model
    cannot be split over, or with both parallel samples and beams, are dropped)."""
    space = plan.space
    fields, _ = architecture_fields(space.model, points[:1, MODEL_COLUMNS])
    row = {name: float(array[0]) for name, array in fields.items()}
    axis = {name: values[AXIS[name]][points[:, AXIS[name]]] for name in _DROPPING_AXES}
    one_mode = (axis["parallel_samples"] <= 1) | (axis["beam_width"] <= 1)  # `genz.Scenario`
    points = points[mesh_valid(fields, axis["tp"], axis["pp"], axis["ep"]) & one_mode]
    if len(points) == 0:
        return points, {}
    model = model_config(space.model, row)
    sizes = [len(values[c]) for c in TIMING_COLUMNS + SCENARIO_COLUMNS]
    keys = np.ravel_multi_index(tuple(points[:, TIMING_COLUMNS + SCENARIO_COLUMNS].T), sizes)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    reps = points[first]
    out = {name: np.empty(len(reps)) for name in GENZ_METRICS}
    # Bound codes index roofline.BOUND_ORDER, as genz's grids give them.
    out["prefill_bound"] = np.empty(len(reps), np.int8)
    out["decode_bound"] = np.empty(len(reps), np.int8)
    timing = reps[:, TIMING_COLUMNS]
    for variant in np.unique(timing, axis=0):
        select = np.all(timing == variant, axis=1)
        platform = _platform(space, values, platforms, tuple(int(i) for i in variant))
        axes = {name: values[AXIS[name]][reps[select, AXIS[name]]] for name in SCENARIO_AXES}
        for name in VARIANT_AXES:  # unset (NaN): the architecture's own
            if np.isnan(axes[name]).all():
                del axes[name]
        grid = evaluate_grid(model, platform, runtime=space.hardware.runtime, **axes)
        for name in GENZ_METRICS:
            out[name][select] = getattr(grid, name)
        out["prefill_bound"][select] = grid.prefill_bound_code
        out["decode_bound"][select] = grid.decode_bound_code
    return points, {name: column[inverse.ravel()] for name, column in out.items()}


def _platform(
    space: DesignSpace,
    values: list[Array],
    cache: dict[tuple[int, ...], Platform],
    variant: tuple[int, ...],
) -> Platform:
    """The timing variant ``(preset, compute, bandwidth, link)`` with unlimited capacity."""
    if variant not in cache:
        preset, compute, bandwidth, link = variant
        cache[variant] = derive_platform(
            space.hardware.platforms[preset],
            compute_scale=float(values[AXIS["compute_scale"]][compute]),
            memory_bandwidth_scale=float(values[AXIS["bandwidth_scale"]][bandwidth]),
            memory_capacity_scale=UNLIMITED_CAPACITY,
            link_bandwidth_scale=float(values[AXIS["link_bandwidth_scale"]][link]),
        )
    return cache[variant]


def _finish(
    plan: Plan, values: list[Array], points: Points, raw: dict[str, NDArray]
) -> tuple[NDArray[np.bool_], dict[str, NDArray], dict[str, BoundSummary]]:
    """Capacity wall, devices, loss and constraints for a block of evaluated points."""
    space = plan.space
    capacities = np.array([p.main_memory.capacity_bytes for p in space.hardware.platforms])
    capacity = (
        capacities[points[:, AXIS["preset"]]]
        * values[AXIS["capacity_scale"]][points[:, AXIS["capacity_scale"]]]
    )
    metrics = dict(raw)
    metrics["capacity_bytes"] = capacity
    metrics["capacity_ratio"] = raw["footprint_bytes"] / capacity
    metrics["fits"] = metrics["capacity_ratio"] <= 1.0
    capacity_code = BOUND_ORDER.index(Bound.CAPACITY)
    for name in ("prefill_bound", "decode_bound"):
        metrics[name] = np.where(metrics["fits"], raw[name], capacity_code).astype(np.int8)
    metrics["devices"] = np.prod(
        [values[AXIS[name]][points[:, AXIS[name]]] for name in MESH_AXES], axis=0
    )
    fields, _ = architecture_fields(space.model, points[:, MODEL_COLUMNS])
    bits = values[AXIS["weight_bits"]][points[:, AXIS["weight_bits"]]]
    metrics["loss"] = design_loss(plan.law, space.law, space.model, fields, bits)
    metrics["perplexity"] = np.exp(metrics["loss"])
    outside = design_extrapolation(plan.law, space.law, space.model, fields)
    extrapolated = np.logical_or.reduce([*outside.values(), np.zeros(len(points), bool)])
    metrics["extrapolated"] = extrapolated.astype(float)
    metrics.update({f"outside_{name}": mask for name, mask in outside.items()})
    distance, moved = design_unpriced(plan.law, space.model, fields)
    if LAYER_MIX_DIMENSION in space.variants:
        counts = values[AXIS[LAYER_MIX_DIMENSION]][points[:, AXIS[LAYER_MIX_DIMENSION]]]
        distance[LAYER_MIX_DIMENSION] = layer_mix_ratio(space.model, counts)
        moved = moved | (distance[LAYER_MIX_DIMENSION] != 1.0)
    metrics["unpriced"] = moved.astype(float)
    metrics.update({f"unpriced_{name}": ratio for name, ratio in distance.items()})
    seconds = design_training_seconds(plan.law, space.law, space.training, space.model, fields)
    metrics["training_time_s"] = seconds
    metrics["training_cost_usd"] = training_cost_usd(space.training, seconds)
    hardware = space.hardware
    metrics.update(
        design_metrics(
            hardware.platforms,
            [hardware.cost_of(i) for i in range(len(hardware.platforms))],
            points[:, AXIS["preset"]],
            metrics["devices"],
            metrics["throughput_tokens_per_s"],
            metrics["throughput_tokens_per_s_per_device"],
        )
    )
    feasible, summary = summarise(plan.bounds(), metrics)
    return feasible, metrics, summary
